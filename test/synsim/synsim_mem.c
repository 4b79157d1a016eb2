/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Emulated libSynapse: host buffer mapping (synHostMap/Unmap).
 */

#include "synsim_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int synsim_unmap(const synsim_dev_t *d, uint64_t va)
{
    union hl_mem_args args;

    memset(&args, 0, sizeof(args));
    args.in.op                     = HL_MEM_OP_UNMAP;
    args.in.unmap.device_virt_addr = va;
    return synsim_hl_mem(d, &args);
}

static synsim_hostmap_t *synsim_hostmap_find(synsim_dev_t *d, uintptr_t addr)
{
    synsim_hostmap_t *m;

    for (m = d->hostmaps; (m != NULL) && (m->addr != addr); m = m->next) {
    }
    return m;
}

synStatus synHostMap(const synDeviceId deviceId, const uint64_t size,
                     const void *buffer)
{
    synsim_hostmap_t *m;
    union hl_mem_args args;
    synsim_dev_t     *d;
    synStatus         status = synSuccess;
    int               err;

    if ((buffer == NULL) || (size == 0)) {
        return synInvalidArgument;
    }

    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(deviceId);
    if (d == NULL) {
        status = synInvalidArgument;
        goto out;
    }

    /* mapping the same buffer again succeeds and needs another unmap */
    m = synsim_hostmap_find(d, (uintptr_t)buffer);
    if (m != NULL) {
        ++m->refcnt;
        goto out;
    }

    memset(&args, 0, sizeof(args));
    args.in.op                      = HL_MEM_OP_MAP;
    args.in.flags                   = HL_MEM_USERPTR;
    args.in.map_host.host_virt_addr = (uintptr_t)buffer;
    args.in.map_host.mem_size       = size;
    err = synsim_hl_mem(d, &args);
    if (err) {
        status = synsim_errno_status(err);
        goto out;
    }

    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        synsim_unmap(d, args.out.device_virt_addr);
        status = synOutOfHostMemory;
        goto out;
    }
    m->addr     = (uintptr_t)buffer;
    m->size     = size;
    m->va       = args.out.device_virt_addr;
    m->refcnt   = 1;
    m->next     = d->hostmaps;
    d->hostmaps = m;
out:
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

synStatus synHostUnmap(const synDeviceId deviceId, const void *buffer)
{
    synsim_hostmap_t **mp, *m;
    synsim_dev_t      *d;
    synStatus          status = synSuccess;

    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(deviceId);
    if (d == NULL) {
        status = synInvalidArgument;
        goto out;
    }

    /* unmapping what is not mapped succeeds, as in SynapseAI */
    for (mp = &d->hostmaps; (*mp != NULL) &&
         ((*mp)->addr != (uintptr_t)buffer); mp = &(*mp)->next) {
    }
    m = *mp;
    if ((m == NULL) || (--m->refcnt > 0)) {
        goto out;
    }
    *mp = m->next;
    synsim_unmap(d, m->va);
    free(m);
out:
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

synStatus synsim_host_translate(synsim_dev_t *d, uint64_t addr,
                                uint64_t size, uint64_t *va)
{
    synsim_hostmap_t *m;

    for (m = d->hostmaps; m != NULL; m = m->next) {
        if ((addr >= m->addr) && (size <= m->size) &&
            (addr - m->addr <= m->size - size)) {
            *va = m->va + (addr - m->addr);
            return synSuccess;
        }
    }
    return synMappingNotFound;
}

void synsim_mem_release(synsim_dev_t *d)
{
    synsim_hostmap_t *m;

    while ((m = d->hostmaps) != NULL) {
        d->hostmaps = m->next;
        synsim_unmap(d, m->va);
        free(m);
    }
}

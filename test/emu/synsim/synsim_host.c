/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Emulated libSynapse: host memory for the device (synHostMap/Unmap,
 * synHostMalloc/Free) and the translation of host addresses in copies.
 * One table per device, shared by every caller in the process, with the
 * rules of SynapseAI's "User" address mapper (docs/synapse.md, "Host
 * maps"): no reference count, entries keyed by start address, and every
 * lookup looks only at the entry with the greatest start <= the address.
 */

#include "synsim_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SYNSIM_HOST_PAGE  4096ULL
#define SYNSIM_HUGE_PAGE  (2ULL << 20)

typedef enum {
    SYNSIM_HOST_FOUND,
    SYNSIM_HOST_NOT_FOUND,
    SYNSIM_HOST_INVALID_SIZE   /* starts inside the entry, runs past it */
} synsim_host_lookup_t;

/* The entry with the greatest start <= @addr, and whether it holds
 * [addr, addr + size) */
static synsim_host_lookup_t synsim_host_find(synsim_dev_t *d, uintptr_t addr,
                                             uint64_t size,
                                             synsim_hostmap_t **m_p)
{
    synsim_hostmap_t *m, *prev = NULL;

    for (m = d->hostmaps; (m != NULL) && (m->addr <= addr); m = m->next) {
        prev = m;
    }
    *m_p = prev;
    if (prev == NULL) {
        return SYNSIM_HOST_NOT_FOUND;
    }
    if (prev->addr == addr) {
        return (size > prev->size) ? SYNSIM_HOST_INVALID_SIZE :
               SYNSIM_HOST_FOUND;
    }
    if (addr > prev->addr + prev->size - 1) {
        return SYNSIM_HOST_NOT_FOUND;
    }
    return (addr + size - 1 <= prev->addr + prev->size - 1) ?
           SYNSIM_HOST_FOUND : SYNSIM_HOST_INVALID_SIZE;
}

static int synsim_host_map_va(const synsim_dev_t *d, uintptr_t addr,
                              uint64_t size, uint64_t *va_p)
{
    union hl_mem_args args;
    int               err;

    memset(&args, 0, sizeof(args));
    args.in.op                      = HL_MEM_OP_MAP;
    args.in.flags                   = HL_MEM_USERPTR;
    args.in.map_host.host_virt_addr = addr;
    args.in.map_host.mem_size       = size;
    err = synsim_hl_mem(d, &args);
    if (!err) {
        *va_p = args.out.device_virt_addr;
    }
    return err;
}

static void synsim_host_unmap_va(const synsim_dev_t *d, uint64_t va)
{
    union hl_mem_args args;

    memset(&args, 0, sizeof(args));
    args.in.op                     = HL_MEM_OP_UNMAP;
    args.in.unmap.device_virt_addr = va;
    (void)synsim_hl_mem(d, &args);
}

/* Add an entry in start order; the caller made sure none starts there */
static synStatus synsim_host_insert(synsim_dev_t *d, uintptr_t addr,
                                    uint64_t size, uint64_t va,
                                    uint64_t alloc)
{
    synsim_hostmap_t **mp, *m = calloc(1, sizeof(*m));

    if (m == NULL) {
        return synOutOfHostMemory;
    }
    m->addr  = addr;
    m->size  = size;
    m->va    = va;
    m->alloc = alloc;
    for (mp = &d->hostmaps; (*mp != NULL) && ((*mp)->addr < addr);
         mp = &(*mp)->next) {
    }
    m->next = *mp;
    *mp     = m;
    return synSuccess;
}

/* Unmap the device side, free a synHostMalloc buffer if @free_buf, drop
 * the entry */
static void synsim_host_drop(synsim_dev_t *d, synsim_hostmap_t *m,
                             int free_buf)
{
    synsim_hostmap_t **mp;

    for (mp = &d->hostmaps; *mp != m; mp = &(*mp)->next) {
    }
    *mp = m->next;
    synsim_host_unmap_va(d, m->va);
    if (free_buf && (m->alloc != 0)) {
        munmap((void*)m->addr, m->alloc);
    }
    free(m);
}

static void synsim_host_remove(synsim_dev_t *d, synsim_hostmap_t *m)
{
    synsim_host_drop(d, m, 1);
}

synStatus synHostMap(const synDeviceId deviceId, const uint64_t size,
                     const void *buffer)
{
    synsim_hostmap_t *m;
    synsim_dev_t     *d;
    synStatus         status = synSuccess;
    uint64_t          va;
    int               err;

    /* (the real library hands these to the driver, which refuses them) */
    if ((buffer == NULL) || (size == 0)) {
        return synInvalidArgument;
    }

    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(deviceId);
    if (d == NULL) {
        status = synInvalidArgument;
        goto out;
    }

    switch (synsim_host_find(d, (uintptr_t)buffer, size, &m)) {
    case SYNSIM_HOST_FOUND:
        goto out;                   /* inside a live entry: nothing made */
    case SYNSIM_HOST_INVALID_SIZE:
        status = synInvalidArgument;
        goto out;
    case SYNSIM_HOST_NOT_FOUND:
        break;
    }

    err = synsim_host_map_va(d, (uintptr_t)buffer, size, &va);
    if (err) {
        status = synsim_errno_status(err);
        goto out;
    }
    status = synsim_host_insert(d, (uintptr_t)buffer, size, va, 0);
    if (status != synSuccess) {
        synsim_host_unmap_va(d, va);
    }
out:
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

/* The entry that starts exactly at @buffer, or NULL */
static synsim_hostmap_t *synsim_host_exact(synsim_dev_t *d,
                                           const void *buffer)
{
    synsim_hostmap_t *m;

    if ((synsim_host_find(d, (uintptr_t)buffer, 1, &m) !=
         SYNSIM_HOST_FOUND) || (m->addr != (uintptr_t)buffer)) {
        return NULL;
    }
    return m;
}

synStatus synHostUnmap(const synDeviceId deviceId, const void *buffer)
{
    synsim_hostmap_t *m;
    synsim_dev_t     *d;
    synStatus         status = synSuccess;

    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(deviceId);
    if (d == NULL) {
        status = synInvalidArgument;
        goto out;
    }

    /* not the start of an entry: "already unmapped", success */
    m = synsim_host_exact(d, buffer);
    if (m != NULL) {
        synsim_host_remove(d, m);
    }
out:
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

/* Fresh shared anonymous pages, huge ones above half a huge page when
 * the system has them, kept out of fork children; *alloc_p the length */
static void *synsim_host_pages(uint64_t size, uint64_t *alloc_p)
{
    int   flags = MAP_SHARED | MAP_ANONYMOUS;
    int   prot  = PROT_READ | PROT_WRITE;
    void *p     = MAP_FAILED;

    *alloc_p = (size + SYNSIM_HOST_PAGE - 1) & ~(SYNSIM_HOST_PAGE - 1);
    if (size > SYNSIM_HUGE_PAGE / 2) {
        p = mmap(NULL, size, prot, flags | MAP_HUGETLB | (21 << MAP_HUGE_SHIFT),
                 -1, 0);
        if (p != MAP_FAILED) {
            *alloc_p = (size + SYNSIM_HUGE_PAGE - 1) &
                       ~(SYNSIM_HUGE_PAGE - 1);
        }
    }
    if (p == MAP_FAILED) {
        p = mmap(NULL, size, prot, flags, -1, 0);
    }
    if (p == MAP_FAILED) {
        return NULL;
    }
    if (madvise(p, *alloc_p, MADV_DONTFORK) != 0) {
        munmap(p, *alloc_p);
        return NULL;
    }
    return p;
}

synStatus synHostMalloc(const synDeviceId deviceId, const uint64_t size,
                        const uint32_t flags, void **buffer)
{
    synsim_hostmap_t *m;
    synsim_dev_t     *d;
    synStatus         status = synSuccess;
    uint64_t          alloc, va;
    void             *p;
    int               err;

    if (flags != 0) {
        return synFail;
    }
    if (buffer == NULL) {
        return synInvalidArgument;
    }

    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(deviceId);
    if (d == NULL) {
        status = synFail;           /* no device interface */
        goto out;
    }
    if (size == 0) {
        *buffer = NULL;
        goto out;
    }

    p = synsim_host_pages(size, &alloc);
    if (p == NULL) {
        status = synOutOfHostMemory;
        goto out;
    }
    err = synsim_host_map_va(d, (uintptr_t)p, alloc, &va);
    if (err) {
        munmap(p, alloc);
        status = synsim_errno_status(err);
        goto out;
    }

    /* the entry covers the size asked for, not the whole pages; an entry
     * that already holds the start (a stale map of memory freed without
     * synHostUnmap) keeps it, and the new buffer gets none */
    if (synsim_host_find(d, (uintptr_t)p, size, &m) ==
        SYNSIM_HOST_NOT_FOUND) {
        status = synsim_host_insert(d, (uintptr_t)p, size, va, alloc);
        if (status != synSuccess) {
            synsim_host_unmap_va(d, va);
            munmap(p, alloc);
            goto out;
        }
    }
    *buffer = p;
out:
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

synStatus synHostFree(const synDeviceId deviceId, const void *buffer,
                      const uint32_t flags)
{
    synsim_hostmap_t *m;
    synsim_dev_t     *d;
    synStatus         status = synSuccess;

    if (flags != 0) {
        return synFail;
    }
    if (buffer == NULL) {
        return synSuccess;
    }

    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(deviceId);
    if (d == NULL) {
        goto out;                   /* no device: nothing to free */
    }

    /* only an entry's exact start; a synHostMap'ed buffer is unmapped
     * (and stays allocated) */
    m = synsim_host_exact(d, buffer);
    if (m == NULL) {
        status = synInvalidArgument;
        goto out;
    }
    synsim_host_remove(d, m);
out:
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

synStatus synsim_host_translate(synsim_dev_t *d, uint64_t addr,
                                uint64_t size, uint64_t *va)
{
    synsim_hostmap_t *m;

    if (synsim_host_find(d, addr, size, &m) != SYNSIM_HOST_FOUND) {
        return synMappingNotFound;
    }
    *va = m->va + (addr - m->addr);
    return synSuccess;
}

/* Only Gaudi1's device release frees the table's synHostMalloc buffers;
 * on Gaudi2/3 they stay allocated */
void synsim_host_release(synsim_dev_t *d)
{
    while (d->hostmaps != NULL) {
        synsim_host_drop(d, d->hostmaps, d->gaudi1);
    }
}

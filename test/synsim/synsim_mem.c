/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Emulated libSynapse: device memory (synDeviceMalloc/Free; host memory
 * is synsim_host.c). Device memory comes from the driver
 * like SynapseAI's: on Gaudi2/3 whole DRAM pages are ALLOCated and MAPped
 * into the device's MMU and handed out in pieces, so the device's DRAM
 * accounting is shared with every other user of the same context (the
 * UCX module borrowing the fd); on Gaudi1, which has no DRAM MMU, pieces
 * of the user DRAM range, each ALLOCated for the accounting only.
 */

#include "synsim_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SYNSIM_ALIGN_UP(_x, _a) ((((_x) + (_a) - 1) / (_a)) * (_a))

static uint64_t synsim_align(const synsim_dev_t *d)
{
    return d->gaudi1 ? SYNSIM_G1_PAGE : SYNSIM_ALIGN;
}

static uint64_t synsim_page(const synsim_dev_t *d)
{
    uint64_t page = d->hw_ip.u61.dram_page_size;

    return (page != 0) ? page :
           d->hw_ip.u61.device_mem_alloc_default_page_size;
}

static int synsim_alloc(const synsim_dev_t *d, uint64_t size,
                        uint64_t *handle)
{
    union hl_mem_args args;
    int               err;

    memset(&args, 0, sizeof(args));
    args.in.op             = HL_MEM_OP_ALLOC;
    args.in.alloc.mem_size = size;
    err = synsim_hl_mem(d, &args);
    if (!err) {
        *handle = args.out.handle;
    }
    return err;
}

/* Gaudi2/3: the handle; Gaudi1: the accounted size (the driver reads
 * alloc.mem_size, which shares the union slot of the handle) */
static int synsim_free(const synsim_dev_t *d, uint64_t handle)
{
    union hl_mem_args args;

    memset(&args, 0, sizeof(args));
    args.in.op          = HL_MEM_OP_FREE;
    args.in.free.handle = handle;
    return synsim_hl_mem(d, &args);
}

int synsim_unmap(const synsim_dev_t *d, uint64_t va)
{
    union hl_mem_args args;

    memset(&args, 0, sizeof(args));
    args.in.op                     = HL_MEM_OP_UNMAP;
    args.in.unmap.device_virt_addr = va;
    return synsim_hl_mem(d, &args);
}

static synsim_region_t *synsim_region_new(uint64_t base, uint64_t size,
                                          uint64_t handle)
{
    synsim_region_t *r = calloc(1, sizeof(*r));
    synsim_block_t  *b = calloc(1, sizeof(*b));

    if ((r == NULL) || (b == NULL)) {
        free(r);
        free(b);
        return NULL;
    }
    r->base   = base;
    r->size   = size;
    r->handle = handle;
    b->addr   = base;
    b->size   = size;
    r->blocks = b;
    return r;
}

/* Gaudi2/3: whole pages from the driver, mapped in the device MMU */
static synStatus synsim_region_alloc(synsim_dev_t *d, uint64_t size,
                                     synsim_region_t **r_p)
{
    uint64_t          rsize = SYNSIM_ALIGN_UP(size, synsim_page(d));
    union hl_mem_args args;
    uint64_t          handle;
    int               err;

    err = synsim_alloc(d, rsize, &handle);
    if (err) {
        return (err == ENOMEM) ? synOutOfDeviceMemory :
               synsim_errno_status(err);
    }

    memset(&args, 0, sizeof(args));
    args.in.op                = HL_MEM_OP_MAP;
    args.in.map_device.handle = handle;
    err = synsim_hl_mem(d, &args);
    if (err) {
        synsim_free(d, handle);
        return synsim_errno_status(err);
    }

    *r_p = synsim_region_new(args.out.device_virt_addr, rsize, handle);
    if (*r_p == NULL) {
        synsim_unmap(d, args.out.device_virt_addr);
        synsim_free(d, handle);
        return synOutOfHostMemory;
    }
    return synSuccess;
}

/* Gaudi1: the whole user DRAM range, its pages accounted per malloc */
static synStatus synsim_region_g1(synsim_dev_t *d, synsim_region_t **r_p)
{
    uint64_t base = SYNSIM_ALIGN_UP(d->hw_ip.u61.dram_base_address,
                                    SYNSIM_G1_PAGE);
    uint64_t end  = d->hw_ip.u61.dram_base_address +
                    d->hw_ip.u61.dram_size;

    *r_p = synsim_region_new(base, (end - base) & ~(SYNSIM_G1_PAGE - 1), 0);
    return (*r_p != NULL) ? synSuccess : synOutOfHostMemory;
}

/* First fit in @r: the block's address, 0 if none fits */
static uint64_t synsim_block_take(synsim_region_t *r, uint64_t size)
{
    synsim_block_t *b, *rest;

    for (b = r->blocks; b != NULL; b = b->next) {
        if (b->used || (b->size < size)) {
            continue;
        }
        if (b->size > size) {
            rest = calloc(1, sizeof(*rest));
            if (rest == NULL) {
                return 0;
            }
            rest->addr = b->addr + size;
            rest->size = b->size - size;
            rest->next = b->next;
            b->next    = rest;
            b->size    = size;
        }
        b->used = 1;
        return b->addr;
    }
    return 0;
}

static void synsim_region_destroy(synsim_dev_t *d, synsim_region_t *r)
{
    synsim_block_t *b;

    if (!d->gaudi1) {
        synsim_unmap(d, r->base);
        synsim_free(d, r->handle);
    } else {
        for (b = r->blocks; b != NULL; b = b->next) {
            if (b->used) {
                synsim_free(d, b->size);
            }
        }
    }
    while ((b = r->blocks) != NULL) {
        r->blocks = b->next;
        free(b);
    }
    free(r);
}

synStatus synDeviceMalloc(const synDeviceId deviceId, const uint64_t size,
                          uint64_t reqAddr, const uint32_t flags,
                          uint64_t *buffer)
{
    synsim_region_t *r;
    synsim_dev_t    *d;
    synStatus        status = synSuccess;
    uint64_t         need, addr = 0, handle;
    int              err;

    /* reqAddr is only a hint in SynapseAI; this emulator ignores it */
    if ((buffer == NULL) || (size == 0)) {
        return synInvalidArgument;
    }

    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(deviceId);
    if (d == NULL) {
        status = synInvalidArgument;
        goto out;
    }

    need = SYNSIM_ALIGN_UP(size, synsim_align(d));
    if (d->gaudi1) {
        err = synsim_alloc(d, need, &handle);
        if (err) {
            status = (err == ENOMEM) ? synOutOfDeviceMemory :
                     synsim_errno_status(err);
            goto out;
        }
        if ((d->regions == NULL) &&
            ((status = synsim_region_g1(d, &d->regions)) != synSuccess)) {
            synsim_free(d, need);
            goto out;
        }
    }

    for (r = d->regions; (r != NULL) && (addr == 0); r = r->next) {
        addr = synsim_block_take(r, need);
    }
    if ((addr == 0) && !d->gaudi1) {
        status = synsim_region_alloc(d, need, &r);
        if (status == synSuccess) {
            r->next    = d->regions;
            d->regions = r;
            addr       = synsim_block_take(r, need);
        }
    }
    if (addr == 0) {
        if (status == synSuccess) {
            status = synOutOfDeviceMemory;
        }
        if (d->gaudi1) {
            synsim_free(d, need);
        }
        goto out;
    }
    *buffer = addr;
out:
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

/* Mark the block at @addr free, merging it with free neighbours */
static int synsim_block_put(synsim_region_t *r, uint64_t addr,
                            uint64_t *size_p)
{
    synsim_block_t *b, *prev = NULL, *next;

    for (b = r->blocks; (b != NULL) && (b->addr != addr); b = b->next) {
        prev = b;
    }
    if ((b == NULL) || !b->used) {
        return 0;
    }
    *size_p = b->size;
    b->used = 0;
    next    = b->next;
    if ((next != NULL) && !next->used) {
        b->size += next->size;
        b->next  = next->next;
        free(next);
    }
    if ((prev != NULL) && !prev->used) {
        prev->size += b->size;
        prev->next  = b->next;
        free(b);
    }
    return 1;
}

synStatus synDeviceFree(const synDeviceId deviceId, const uint64_t buffer,
                        const uint32_t flags)
{
    synsim_region_t **rp, *r;
    synsim_dev_t     *d;
    synStatus         status = synInvalidArgument;
    uint64_t          size;

    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(deviceId);
    for (rp = (d != NULL) ? &d->regions : NULL; (rp != NULL) && *rp;
         rp = &(*rp)->next) {
        r = *rp;
        if ((buffer < r->base) || (buffer >= r->base + r->size) ||
            !synsim_block_put(r, buffer, &size)) {
            continue;
        }
        status = synSuccess;
        if (d->gaudi1) {
            synsim_free(d, size);
        } else if (!r->blocks->used && (r->blocks->next == NULL)) {
            /* the whole region is free: back to the driver */
            *rp = r->next;
            synsim_region_destroy(d, r);
        }
        break;
    }
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

void synsim_mem_release(synsim_dev_t *d)
{
    synsim_region_t *r;

    synsim_host_release(d);
    while ((r = d->regions) != NULL) {
        d->regions = r->next;
        synsim_region_destroy(d, r);
    }
}

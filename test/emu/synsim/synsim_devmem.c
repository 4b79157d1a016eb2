/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Emulated libSynapse: device memory (synDeviceMalloc/Free), as SynapseAI
 * serves it (docs/synapse.md). Gaudi2/3: the device's SCAL instance,
 * created at acquire, has mapped all DRAM into its pools; a piece is a
 * 128-byte aligned SCAL buffer of "global_hbm". Gaudi1 (no SCAL, no DRAM
 * MMU): a best-fit heap over the user DRAM range, each piece also
 * ALLOCated from the driver for its accounting.
 */

#include "synsim_int.h"

#include <stdlib.h>
#include <string.h>

static int synsim_g1_account(const synsim_dev_t *d, int op, uint64_t size)
{
    union hl_mem_args args;

    memset(&args, 0, sizeof(args));
    args.in.op = op;
    if (op == HL_MEM_OP_ALLOC) {
        args.in.alloc.mem_size = size;
    } else {
        args.in.free.handle = size; /* Gaudi1 FREE reads the size here */
    }
    return synsim_hl_mem(d, &args);
}

synStatus synsim_devmem_init(synsim_dev_t *d)
{
    const struct gaudi_hl_hw_ip_info *hw = &d->hw_ip;
    scal_memory_pool_info             info;
    int                               rc;

    if (d->gaudi1) {
        return synsim_heap_init(&d->g1_heap, hw->u61.dram_base_address,
                                hw->u61.dram_size) ? synOutOfHostMemory :
               synSuccess;
    }
    rc = scal_init(d->fd, "", &d->scal, NULL);
    if (rc != SCAL_SUCCESS) {
        synsim_log("device %s: SCAL cannot map its memory pools (rc %d)",
                   d->pci_bus, rc);
        d->scal = NULL;
        return synFail;
    }
    rc = scal_get_pool_handle_by_name(d->scal, "global_hbm", &d->pool);
    if ((rc != SCAL_SUCCESS) ||
        (scal_pool_get_info(d->pool, &info) != SCAL_SUCCESS)) {
        scal_destroy(d->scal);
        d->scal = NULL;
        return synFail;
    }
    /* what is in use now is SynapseAI's own (scal_memory_pool.cpp:37) */
    d->pool_reserved = info.totalSize - info.freeSize;
    return synSuccess;
}

void synsim_devmem_release(synsim_dev_t *d)
{
    synsim_devbuf_t *b;

    while ((b = d->bufs) != NULL) {
        d->bufs = b->next;
        if (d->gaudi1) {
            synsim_g1_account(d, HL_MEM_OP_FREE,
                              synsim_heap_free(&d->g1_heap, b->addr));
        } else {
            scal_free_buffer(b->scal_buf);
        }
        free(b);
    }
    if (d->gaudi1) {
        synsim_heap_fini(&d->g1_heap);
    } else if (d->scal != NULL) {
        scal_destroy(d->scal);     /* UNMAP + FREE of the pools */
        d->scal = NULL;
    }
}

/* VA the driver's MAP returned for the mapping of global_hbm (Gaudi1:
 * the DRAM base) */
uint64_t synsim_devmem_map_base(const synsim_dev_t *d)
{
    scal_memory_pool_infoV2 info;

    if (d->gaudi1 || (scal_pool_get_infoV2(d->pool, &info) != SCAL_SUCCESS)) {
        return d->hw_ip.u61.dram_base_address;
    }
    return info.device_base_allocated_address;
}

/* A piece of @size: Gaudi2/3 from the pool, Gaudi1 from the heap */
static synStatus synsim_devmem_take(synsim_dev_t *d, uint64_t size,
                                    synsim_devbuf_t *b)
{
    scal_buffer_info_t info;

    if (d->gaudi1) {
        b->addr = synsim_heap_alloc(&d->g1_heap, size, SYNSIM_ALIGN);
        if (b->addr == 0) {
            return synFail;     /* buffer_allocator.cpp:545-557 */
        }
        /* the source ignores the driver's answer (buffer_allocator.cpp:
         * 496-503) */
        synsim_g1_account(d, HL_MEM_OP_ALLOC, size);
        return synSuccess;
    }
    if (scal_allocate_buffer(d->pool, size, &b->scal_buf) != SCAL_SUCCESS) {
        return synFail;         /* scal_memory_pool.cpp:54-67 */
    }
    scal_buffer_get_info(b->scal_buf, &info);
    b->addr = info.device_address;
    return synSuccess;
}

synStatus synDeviceMalloc(const synDeviceId deviceId, const uint64_t size,
                          uint64_t reqAddr, const uint32_t flags,
                          uint64_t *buffer)
{
    synsim_devbuf_t *b;
    synsim_dev_t    *d;
    synStatus        status;

    /* reqAddr is only a hint in SynapseAI; this emulator ignores it */
    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    if (flags != 0) {
        return synFail;         /* synapse_api_impl.cpp:988-992 */
    }
    if ((buffer == NULL) || (size == 0)) {
        return synInvalidArgument;
    }
    b = calloc(1, sizeof(*b));
    if (b == NULL) {
        return synOutOfHostMemory;
    }

    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(deviceId);
    status = (d == NULL) ? synFail : synsim_devmem_take(d, size, b);
    if (status == synSuccess) {
        b->next = d->bufs;
        d->bufs = b;
        *buffer = b->addr;
    }
    pthread_mutex_unlock(&synsim_lock);
    if (status != synSuccess) {
        free(b);
    }
    return status;
}

synStatus synDeviceFree(const synDeviceId deviceId, const uint64_t buffer,
                        const uint32_t flags)
{
    synsim_devbuf_t **bp, *b = NULL;
    synsim_dev_t     *d;
    synStatus         status;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(deviceId);
    if (d == NULL) {
        /* no device: nothing to free (device_manager.cpp:294-304) */
        pthread_mutex_unlock(&synsim_lock);
        return synSuccess;
    }
    for (bp = &d->bufs; (*bp != NULL) && ((*bp)->addr != buffer);
         bp = &(*bp)->next) {
    }
    b = *bp;
    if (b != NULL) {
        *bp = b->next;
        if (d->gaudi1) {
            synsim_g1_account(d, HL_MEM_OP_FREE,
                              synsim_heap_free(&d->g1_heap, b->addr));
        } else {
            scal_free_buffer(b->scal_buf);
        }
    }
    pthread_mutex_unlock(&synsim_lock);
    free(b);
    return (b != NULL) ? synSuccess : synInvalidArgument;
}

/*
 * free/total of the acquired device's user memory: Gaudi2/3 the
 * global_hbm pool, free as SCAL counts it, total less what SynapseAI took
 * at acquire (synapse_api_impl.cpp:1030-1040, syn_singleton.cpp:735-740,
 * device_scal.cpp:553-567, scal_memory_pool.cpp:133-163); Gaudi1 the DRAM
 * heap (device_mem_alloc.cpp:356-368). No device acquired: synFail
 * (syn_singleton.cpp:59-64).
 */
synStatus synDeviceGetMemoryInfo(const synDeviceId deviceId, uint64_t *free,
                                 uint64_t *total)
{
    scal_memory_pool_info info;
    synsim_dev_t         *d;
    synStatus             status;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    if ((free == NULL) || (total == NULL)) {
        return synInvalidArgument;  /* synapse_api_impl.cpp:1035-1036 */
    }
    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(deviceId);
    if (d == NULL) {
        status = synFail;
    } else if (d->gaudi1) {
        *total = d->g1_heap.size;
        *free  = d->g1_heap.free;
    } else if (scal_pool_get_info(d->pool, &info) != SCAL_SUCCESS) {
        status = synFail;           /* scal_memory_pool.cpp:138-148 */
    } else {
        *free  = info.freeSize;
        *total = info.totalSize - d->pool_reserved;
    }
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

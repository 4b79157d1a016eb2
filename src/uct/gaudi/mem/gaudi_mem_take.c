/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Taking the device for the heap: borrowing the application's device or
 * opening one, and what the taken device decides (where device memory
 * comes from). Design: docs/md.md, docs/base.md ("Ownership").
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/mem/gaudi_mem_int.h>
#include <uct/gaudi/syn/gaudi_syn.h>
#include <uct/gaudi/dev/gaudi_device.h>

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>


/*
 * SynapseAI's allocator for a kernel-backend context on SynapseAI's fd (a
 * framework process): the library the application loaded, its device the
 * one whose fd we borrowed. SCAL mapped all of the device's DRAM into its
 * pools at acquire (docs/synapse.md, "Device memory"), so the driver's
 * ALLOC finds none; SynapseAI's allocator is the only source there.
 * UCS_OK with heap->syn set, else heap->syn stays NULL.
 */
static ucs_status_t uct_gaudi_heap_borrow_syn(uct_gaudi_heap_t *heap,
                                              const uct_gaudi_ctx_t *ctx)
{
    const char *libname = uct_gaudi_global_config()->synapse_lib;
    uct_gaudi_syn_device_t device;
    uct_gaudi_syn_t *syn;
    ucs_status_t status;
    int fd;

    if (ctx->hl.owns_fd || strcmp(ctx->source, "SynapseAI") ||
        !uct_gaudi_syn_is_loaded(libname, &heap->syn_absent_at)) {
        return UCS_ERR_NO_DEVICE;
    }

    syn = ucs_calloc(1, sizeof(*syn), "gaudi heap syn");
    if (syn == NULL) {
        return UCS_ERR_NO_MEMORY;
    }
    status = uct_gaudi_syn_load(libname, uct_gaudi_device_minor_known, syn);
    if (status == UCS_OK) {
        status = uct_gaudi_syn_held_fd(syn, &fd, &device);
        if ((status == UCS_OK) && (fd != ctx->hl.fd)) {
            status = UCS_ERR_NO_DEVICE;
        }
        if (status != UCS_OK) {
            uct_gaudi_syn_unload(syn);
        }
    }
    if (status != UCS_OK) {
        ucs_free(syn);
        ucs_diag("gaudi %s: SynapseAI's allocator is not usable on its fd "
                 "(%s): device memory from the driver, which finds no DRAM "
                 "SCAL has not mapped", ctx->info->name,
                 ucs_status_string(status));
        return status;
    }

    heap->syn        = syn;
    heap->syn_device = device;
    heap->syn_own    = 1;
    return UCS_OK;
}

/* Drop the heap's own SynapseAI reference (after its chunks) */
void uct_gaudi_heap_unborrow_syn(uct_gaudi_heap_t *heap)
{
    if (heap->syn_own) {
        uct_gaudi_syn_unload(heap->syn);
        ucs_free(heap->syn);
        heap->syn_own = 0;
    }
    heap->syn = NULL;
}

/*
 * Resolve UCX_GAUDI_DEVICE_MEM for the heap's device and backend. "auto":
 * SynapseAI's allocator whenever SynapseAI drives the device, or holds
 * the fd the kernel backend borrowed. On Gaudi2/3 SCAL mapped all free
 * DRAM at acquire (docs/synapse.md, "Device memory"), so the driver has
 * none left to ALLOC; on Gaudi1 the driver's ALLOC only counts bytes of
 * the DRAM SynapseAI places its buffers in (facts 3.2).
 */
static ucs_status_t uct_gaudi_heap_device_mem(uct_gaudi_heap_t *heap,
                                              const uct_gaudi_ctx_t *ctx)
{
    const uct_gaudi_dev_info_t *info = ctx->info;
    int value = uct_gaudi_global_config()->device_mem;

    heap->syn        = ctx->syn;
    heap->syn_device = ctx->syn_device;
    if ((ctx->syn == NULL) && (value != UCT_GAUDI_DEVICE_MEM_DRIVER) &&
        (uct_gaudi_heap_borrow_syn(heap, ctx) == UCS_OK) &&
        (value == UCT_GAUDI_DEVICE_MEM_AUTO)) {
        value = UCT_GAUDI_DEVICE_MEM_SYNAPSE;
    }

    if (heap->syn == NULL) {
        if (value == UCT_GAUDI_DEVICE_MEM_SYNAPSE) {
            ucs_error("gaudi %s (%s): UCX_GAUDI_DEVICE_MEM=synapse needs "
                      "SynapseAI's device (the synapse copy backend, or its "
                      "fd borrowed); this device has %s (%s)",
                      info->name, info->node_name,
                      uct_gaudi_backend_names[ctx->backend],
                      ctx->backend_why);
            return UCS_ERR_UNSUPPORTED;
        }
        value = UCT_GAUDI_DEVICE_MEM_DRIVER;
    } else if (value == UCT_GAUDI_DEVICE_MEM_AUTO) {
        value = UCT_GAUDI_DEVICE_MEM_SYNAPSE;
    }

    heap->device_mem = value;
    ucs_debug("gaudi %s: device memory from %s", info->name,
              (value == UCT_GAUDI_DEVICE_MEM_DRIVER) ? "the driver" :
              "synDeviceMalloc");
    return UCS_OK;
}

/*
 * Make @a ctx (a reference the heap keeps) the heap's device; heap->lock
 * held or the heap not shared yet. The device is the one the application
 * or the selection gave, so it may differ from the expected one, though
 * never in ASIC (one kind per node): the window stays.
 */
ucs_status_t uct_gaudi_heap_attach(uct_gaudi_heap_t *heap,
                                   uct_gaudi_ctx_t *ctx)
{
    const uct_gaudi_dev_info_t *expected = heap->info;
    ucs_status_t status;

    if (ctx->info->asic != expected->asic) {
        ucs_error("gaudi %s: the device taken is a %s, the memory layer "
                  "was set up for %s, a %s", ctx->info->name,
                  uct_gaudi_asic_name(ctx->info->asic), expected->name,
                  uct_gaudi_asic_name(expected->asic));
        return UCS_ERR_UNSUPPORTED;
    }

    heap->info = ctx->info;
    status     = uct_gaudi_heap_device_mem(heap, ctx);
    if (status == UCS_OK) {
        status = uct_gaudi_heap_layout(heap);   /* Gaudi1's driver range */
    }
    if (status != UCS_OK) {
        uct_gaudi_heap_unborrow_syn(heap);
        heap->info = expected;
        return status;
    }

    /* readers that find it (uct_gaudi_heap_ctx) see it complete */
    __atomic_store_n(&heap->ctx, ctx, __ATOMIC_RELEASE);

    if (ctx->info != expected) {
        ucs_diag("gaudi: the device in use is %s (%s), not %s expected "
                 "when UCX started", ctx->info->name, ctx->source,
                 expected->name);
    }
    ucs_debug("gaudi %s: device taken for memory (%s)", ctx->info->name,
              ctx->source);
    if (!uct_gaudi_heap_can_alloc(heap)) {
        ucs_diag("gaudi %s (%s): device memory allocation disabled: Gaudi1 "
                 "with the fd from %s, whose owner uses the same DRAM (the "
                 "driver's ALLOC only counts bytes; SynapseAI's allocator "
                 "is used on the synapse copy backend)", ctx->info->name,
                 ctx->info->node_name, ctx->source);
    }
    return UCS_OK;
}

/*
 * Whether our own open may take the device (UCX_GAUDI_ALLOC_ACQUIRE): not
 * in a framework process before the framework acquired it, as SynapseAI
 * gives a process one device and its second acquire fails with
 * synDeviceAlreadyAcquired (osal_linux.cpp:146-150); the refusal is
 * logged once, with the fix, and is not sticky: once the framework holds
 * the device, allocations borrow it.
 */
static ucs_status_t uct_gaudi_heap_may_open(uct_gaudi_heap_t *heap)
{
    int mode = uct_gaudi_global_config()->alloc_acquire;
    int log;

    if ((mode == UCS_YES) ||
        ((mode == UCS_TRY) && !uct_gaudi_ctx_app_synapse())) {
        return UCS_OK;
    }

    pthread_mutex_lock(&heap->lock);
    log               = !heap->take_logged;
    heap->take_logged = 1;
    pthread_mutex_unlock(&heap->lock);
    if (log) {
        ucs_error("gaudi %s (%s): device memory allocation refused: no "
                  "device is in use yet and %s; acquire the device first "
                  "(e.g. move a tensor to 'hpu' before UCX allocates) or "
                  "set UCX_GAUDI_ALLOC_ACQUIRE=yes", heap->info->name,
                  heap->info->node_name, (mode == UCS_NO) ?
                  "UCX_GAUDI_ALLOC_ACQUIRE=no" :
                  "the application loaded SynapseAI, which acquires the "
                  "process's only device at its own init (an acquire by "
                  "UCX now would make it fail)");
    }
    return UCS_ERR_NO_DEVICE;
}

/* A reference on the process's device: the application's, else with
 * @a may_open our own open, tried once per process */
static ucs_status_t uct_gaudi_heap_take_ctx(uct_gaudi_heap_t *heap,
                                            int may_open,
                                            uct_gaudi_ctx_t **ctx_p)
{
    ucs_status_t status;

    status = uct_gaudi_ctx_borrow(ctx_p);
    if ((status != UCS_ERR_NO_DEVICE) || !may_open) {
        return status;
    }

    status = uct_gaudi_heap_may_open(heap);
    if (status != UCS_OK) {
        return status;
    }

    pthread_mutex_lock(&heap->lock);
    status = heap->open_status;
    pthread_mutex_unlock(&heap->lock);
    if (status != UCS_OK) {
        return status;   /* our open failed before: not waited out again */
    }

    status = uct_gaudi_ctx_get(-1, ctx_p);
    if (status != UCS_OK) {
        pthread_mutex_lock(&heap->lock);
        heap->open_status = status;
        pthread_mutex_unlock(&heap->lock);
    }
    return status;
}

ucs_status_t uct_gaudi_heap_take(uct_gaudi_heap_t *heap, int may_open,
                                 int quiet, const char *op)
{
    uct_gaudi_ctx_t *ctx;
    ucs_status_t status;
    int log;

    if (ucs_likely(uct_gaudi_heap_ctx(heap) != NULL)) {
        return UCS_OK;
    }

    /* without heap->lock: an open waits out a device in reset */
    status = uct_gaudi_heap_take_ctx(heap, may_open, &ctx);

    pthread_mutex_lock(&heap->lock);
    if (heap->ctx != NULL) {
        /* another thread took it meanwhile: the same context */
        if (status == UCS_OK) {
            uct_gaudi_ctx_put(ctx);
        }
        status = UCS_OK;
    } else if (status == UCS_OK) {
        status = uct_gaudi_heap_attach(heap, ctx);
        if (status != UCS_OK) {
            uct_gaudi_ctx_put(ctx);
        }
    }

    log = (status != UCS_OK) && !quiet && !heap->take_logged;
    if (log) {
        heap->take_logged = 1;
    }
    pthread_mutex_unlock(&heap->lock);

    if (log) {
        ucs_error("gaudi %s (%s): %s: %s", heap->info->name,
                  heap->info->node_name, op,
                  (status == UCS_ERR_NO_DEVICE) ?
                  "no Gaudi device is in use in this process: the "
                  "application holds none (SynapseAI has not acquired "
                  "one) and UCX opens one only to allocate device memory" :
                  ucs_status_string(status));
    } else if (status != UCS_OK) {
        ucs_debug("gaudi %s: %s: device not taken: %s", heap->info->name,
                  op, ucs_status_string(status));
    }
    return status;
}

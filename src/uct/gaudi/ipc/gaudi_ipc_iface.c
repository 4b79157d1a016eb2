/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_ipc_iface.h"
#include "gaudi_ipc_ep.h"
#include "gaudi_ipc_md.h"

#include <uct/gaudi/base/gaudi_uct_compat.h>
#include <uct/gaudi/dev/gaudi_device.h>
#include <uct/gaudi/base/gaudi_resource.h>
#include <ucs/debug/log.h>
#include <inttypes.h>
#include <ucs/sys/sys.h>
#include <ucs/sys/uid.h>
#include <ucs/time/time.h>
#include <ucs/type/class.h>
#include <unistd.h>


static ucs_config_field_t uct_gaudi_ipc_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gaudi_ipc_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    /* local host buffers of zcopy are mapped into the device MMU, cached
     * for the life of the interface */
    {"", "", NULL,
     ucs_offsetof(uct_gaudi_ipc_iface_config_t, reg),
     UCS_CONFIG_TYPE_TABLE(uct_gaudi_reg_config_table)},

    {"CACHE_MAX_REGIONS", "256",
     "Most peer buffers kept imported (op 99 mappings) per interface; the\n"
     "least recently used idle ones are unmapped first.",
     ucs_offsetof(uct_gaudi_ipc_iface_config_t, cache_max_regions),
     UCS_CONFIG_TYPE_UINT},

    {"CACHE_MAX_SIZE", "inf",
     "Most bytes of peer buffers kept imported per interface.",
     ucs_offsetof(uct_gaudi_ipc_iface_config_t, cache_max_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"FD_METHOD", "auto",
     "How a peer's dma-buf fd is obtained:\n"
     " auto   - pidfd_getfd(2); the peer's unix socket (SCM_RIGHTS) only\n"
     "          where pidfd_getfd does not exist (a refusal is final)\n"
     " pidfd  - pidfd_getfd(2) only\n"
     " socket - the peer's unix socket only",
     ucs_offsetof(uct_gaudi_ipc_iface_config_t, fd_method),
     UCS_CONFIG_TYPE_ENUM(uct_gaudi_ipc_fd_method_names)},

    {"FD_TIMEOUT", "1s",
     "How long to wait for a peer's fd server.",
     ucs_offsetof(uct_gaudi_ipc_iface_config_t, fd_timeout),
     UCS_CONFIG_TYPE_TIME},

    {"BW", "24000MBs",
     "Bandwidth reported to UCP (peer-to-peer DMA through the local engine).",
     ucs_offsetof(uct_gaudi_ipc_iface_config_t, bw),
     UCS_CONFIG_TYPE_BW},

    {"LAT", "5us",
     "Latency reported to UCP (one CS submit and its completion).",
     ucs_offsetof(uct_gaudi_ipc_iface_config_t, latency),
     UCS_CONFIG_TYPE_TIME},

    {"MAX_POLL", "16",
     "Most submissions whose copies one progress call delivers.",
     ucs_offsetof(uct_gaudi_ipc_iface_config_t, max_poll),
     UCS_CONFIG_TYPE_UINT},

    /* MAX_BATCH, BATCH_BYTES, DMA_QUEUES, POLL_INTERVAL, as gaudi_cpy's */
    {"", "", NULL,
     ucs_offsetof(uct_gaudi_ipc_iface_config_t, dma),
     UCS_CONFIG_TYPE_TABLE(uct_gaudi_iface_dma_config_table)},

    {"PEER_CHECK_INTERVAL", "100ms",
     "How often progress (busy or idle) looks for exited peers and\n"
     "deregistered buffers to unmap them (imports keep the exporter's\n"
     "device context alive).",
     ucs_offsetof(uct_gaudi_ipc_iface_config_t, peer_check),
     UCS_CONFIG_TYPE_TIME},

    {"SYNAPSE_IMPORT", "n",
     "On the SynapseAI copy backend, copy to and from peers' buffers\n"
     "imported with op 99 (zero copy). Whether SynapseAI's engines reach\n"
     "such an address is not published; if they do not, a copy from it can\n"
     "end in SynapseAI's device failure analysis, which by default kills\n"
     "the process. With n, other processes are unreachable on that backend\n"
     "and UCP stages through host memory; set y only where a zero-copy\n"
     "transfer was verified on the platform (docs/ipc.md).",
     ucs_offsetof(uct_gaudi_ipc_iface_config_t, syn_import),
     UCS_CONFIG_TYPE_BOOL},

    {NULL}
};


static void UCS_CLASS_DELETE_FUNC_NAME(uct_gaudi_ipc_iface_t)(uct_iface_t*);

/* Why SynapseAI does not copy imported buffers unless told it may */
static const char uct_gaudi_ipc_syn_import_reason[] =
        "the SynapseAI copy backend is not known to reach buffers imported "
        "with op 99 (a failed copy may kill the process through SynapseAI's "
        "device failure analysis; UCX_GAUDI_IPC_SYNAPSE_IMPORT=y enables "
        "it); UCP uses host-staged rendezvous instead";

/* Our side's copies of imported buffers on @a backend: allowed? */
static int uct_gaudi_ipc_iface_backend_ok(uct_gaudi_ipc_iface_t *iface,
                                          uct_gaudi_backend_t backend)
{
    if ((backend != UCT_GAUDI_BACKEND_SYNAPSE) || iface->syn_import) {
        return 1;
    }
    iface->import_ok = 0;
    iface->reason    = uct_gaudi_ipc_syn_import_reason;
    return 0;
}


/* Addresses and reachability */

static ucs_status_t
uct_gaudi_ipc_iface_get_device_address(uct_iface_t *tl_iface,
                                       uct_device_addr_t *addr)
{
    uct_gaudi_ipc_device_addr_t *dev_addr = (uct_gaudi_ipc_device_addr_t*)
                                            addr;

    dev_addr->system_id = ucs_get_system_id();
    return UCS_OK;
}

/* op 99 is a flavour of the driver: the import is or is not possible */
static void uct_gaudi_ipc_iface_set_import(uct_gaudi_ipc_iface_t *iface,
                                           int supported)
{
    iface->import_ok = supported;
    iface->reason    = supported ? NULL :
                       "the driver cannot import DMA-BUF (op 99 "
                       "HL_MEM_OP_REG_DMABUF_FD exists only in Habana's "
                       "out-of-tree driver); UCP uses host-staged "
                       "rendezvous instead";
}

/* Import before the device is taken: op 99 exists only in Habana's
 * driver (facts 4.3), which the control node does not tell apart from the
 * upstream accel one, but sysfs does (an out-of-tree module); without it,
 * the misc-era 6.1/6.2 driver is known to have none. The probe decides
 * once the device is taken. */
static void uct_gaudi_ipc_iface_expect(uct_gaudi_ipc_iface_t *iface)
{
    const uct_gaudi_dev_info_t *info = iface->super.heap->info;
    const char *reason;

    iface->probed    = 0;
    iface->import_ok = 0;
    if (uct_gaudi_dma_check_expected(
                info->asic, uct_gaudi_ctx_expected_backend(info->asic),
                &reason) != UCS_OK) {
        iface->reason = reason;
    } else if (info->out_of_tree >= 0) {
        /* only Habana's driver has op 99 (facts 4.3) */
        uct_gaudi_ipc_iface_set_import(iface, info->out_of_tree);
    } else {
        uct_gaudi_ipc_iface_set_import(iface,
                                       info->abi != GAUDI_HL_ABI_LEGACY);
    }
    if (iface->import_ok) {
        (void)uct_gaudi_ipc_iface_backend_ok(
                iface, uct_gaudi_ctx_expected_backend(info->asic));
    }
}

/* Whether our device can import peer buffers: a DMA queue (not Gaudi3,
 * facts 6) and op 99 (Habana's driver only, facts 4.3). Never fatal. */
static void uct_gaudi_ipc_iface_probe(uct_gaudi_ipc_iface_t *iface,
                                      uct_gaudi_ctx_t *ctx)
{
    static int logged    = 0;
    const char *reason;
    ucs_status_t status;
    int supported = 0;

    iface->probed    = 1;
    iface->import_ok = 0;
    if (uct_gaudi_dma_check(ctx, &reason) != UCS_OK) {
        iface->reason = reason;
        goto out;
    }
    if (!uct_gaudi_ipc_iface_backend_ok(iface, ctx->backend)) {
        goto out;
    }

    /* the driver serializes its ioctls itself */
    status = uct_gaudi_hl_probe_reg_dmabuf(&ctx->hl, &supported);
    if (status != UCS_OK) {
        iface->reason = "the DMA-BUF import probe (op 99) failed";
        goto out;
    }

    uct_gaudi_driver_log_probe(&ctx->driver, ctx->info->name,
                               "DMA-BUF import (op 99)",
                               uct_gaudi_driver_expects_reg_dmabuf(
                                       &ctx->driver), supported);
    uct_gaudi_ipc_iface_set_import(iface, supported);

out:
    if (!iface->import_ok) {
        iface->super.no_dma = iface->reason;
        if (!logged) {
            logged = 1;
            ucs_diag("gaudi_ipc: %s (%s): other processes are unreachable: "
                     "%s", ctx->info->name, ctx->info->node_name,
                     iface->reason);
        }
    }
}

/* Probe what was expected once the device is taken (cheap afterwards) */
static void uct_gaudi_ipc_iface_refresh(uct_gaudi_ipc_iface_t *iface)
{
    uct_gaudi_ctx_t *ctx;

    if (ucs_likely(iface->probed)) {
        return;
    }

    ctx = uct_gaudi_heap_ctx(iface->super.heap);
    if (ctx != NULL) {
        uct_gaudi_ipc_iface_probe(iface, ctx);
    }
}

ucs_status_t uct_gaudi_ipc_iface_ready(uct_gaudi_ipc_iface_t *iface,
                                       const char *op)
{
    ucs_status_t status;

    if (ucs_likely(iface->super.dma != NULL)) {
        return UCS_OK;
    }

    /* the device, if the application holds one; then what it can do */
    status = uct_gaudi_heap_take(iface->super.heap, 0, 0, op);
    if (status != UCS_OK) {
        return status;
    }

    uct_gaudi_ipc_iface_refresh(iface);
    if (!iface->import_ok) {
        /* a peer reached us on what the device was expected to do */
        ucs_log(iface->refused ? UCS_LOG_LEVEL_DEBUG : UCS_LOG_LEVEL_ERROR,
                "gaudi_ipc: %s: %s", op, iface->reason);
        iface->refused = 1;
        return UCS_ERR_UNSUPPORTED;
    }

    return uct_gaudi_iface_dma_get(&iface->super, op);
}

static ucs_status_t
uct_gaudi_ipc_iface_get_address(uct_iface_h tl_iface,
                                uct_iface_addr_t *iface_addr)
{
    uct_gaudi_ipc_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_gaudi_ipc_iface_t);
    uct_gaudi_ipc_iface_addr_t *addr = (uct_gaudi_ipc_iface_addr_t*)
                                       iface_addr;

    uct_gaudi_ipc_iface_refresh(iface);
    addr->pidns     = iface->pidns;
    addr->pid       = getpid();
    addr->caps      = (iface->import_ok ? UCT_GAUDI_IPC_ADDR_IMPORT : 0) |
                      (iface->export_ok ? UCT_GAUDI_IPC_ADDR_EXPORT : 0);
    return UCS_OK;
}

/* Another process of this boot and pid namespace, and both of us can
 * import and export: a rendezvous lane is used both ways */
static int uct_gaudi_ipc_iface_is_reachable(const uct_iface_h tl_iface,
                                            const uct_device_addr_t *dev_addr,
                                            const uct_iface_addr_t *iface_addr)
{
    uct_gaudi_ipc_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_gaudi_ipc_iface_t);
    const uct_gaudi_ipc_device_addr_t *dev = (const void*)dev_addr;
    const uct_gaudi_ipc_iface_addr_t *addr = (const void*)iface_addr;

    if ((dev == NULL) || (addr == NULL) ||
        (dev->system_id != ucs_get_system_id()) ||
        (addr->pidns != iface->pidns) || (addr->pid == getpid())) {
        return 0;
    }

    uct_gaudi_ipc_iface_refresh(iface);
    if (!iface->import_ok) {
        ucs_debug("gaudi_ipc: pid %d unreachable: %s", addr->pid,
                  iface->reason);
        return 0;
    }

    if (!iface->export_ok) {
        ucs_debug("gaudi_ipc: pid %d unreachable: we cannot export",
                  addr->pid);
        return 0;
    }

    if (!(addr->caps & UCT_GAUDI_IPC_ADDR_IMPORT) ||
        !(addr->caps & UCT_GAUDI_IPC_ADDR_EXPORT)) {
        ucs_debug("gaudi_ipc: pid %d unreachable: it cannot %s", addr->pid,
                  (addr->caps & UCT_GAUDI_IPC_ADDR_IMPORT) ? "export" :
                                                             "import");
        return 0;
    }

    return 1;
}

static ucs_status_t uct_gaudi_ipc_iface_query(uct_iface_h tl_iface,
                                              uct_iface_attr_t *iface_attr)
{
    uct_gaudi_ipc_iface_t *iface = ucs_derived_of(tl_iface,
                                                  uct_gaudi_ipc_iface_t);

    uct_gaudi_iface_query(&iface->super, 1, iface_attr);

    iface_attr->iface_addr_len      = sizeof(uct_gaudi_ipc_iface_addr_t);
    iface_attr->device_addr_len     = sizeof(uct_gaudi_ipc_device_addr_t);
    iface_attr->latency             = ucs_linear_func_make(
                                          iface->config.latency, 0);
    iface_attr->bandwidth.shared    = iface->config.bw;
    iface_attr->overhead            = 1e-6;
    return UCS_OK;
}


/*
 * Every progress call, busy or idle: now and then unmap the buffers of
 * exited exporters and deregistered exports. Each import keeps its
 * exporter's device context, so a restarted exporter cannot open its
 * device meanwhile (facts 4.1).
 */
static void uct_gaudi_ipc_iface_periodic(uct_gaudi_iface_t *super)
{
    uct_gaudi_ipc_iface_t *iface = ucs_derived_of(super,
                                                  uct_gaudi_ipc_iface_t);
    ucs_time_t now               = ucs_get_time();

    if (now >= iface->next_check) {
        uct_gaudi_ipc_cache_sweep(&iface->cache);
        iface->next_check = now + iface->config.peer_check;
    }
}


static uct_iface_ops_t uct_gaudi_ipc_iface_ops = {
    .ep_put_short             = uct_gaudi_ipc_ep_put_short,
    .ep_get_short             = uct_gaudi_ipc_ep_get_short,
    .ep_put_bcopy             = uct_gaudi_ipc_ep_put_bcopy,
    .ep_get_bcopy             = uct_gaudi_ipc_ep_get_bcopy,
    .ep_put_zcopy             = uct_gaudi_ipc_ep_put_zcopy,
    .ep_get_zcopy             = uct_gaudi_ipc_ep_get_zcopy,
    UCT_GAUDI_IFACE_BASE_OPS,
    /* our endpoint class (knows its peer) in place of the base one */
    .ep_create                = UCS_CLASS_NEW_FUNC_NAME(uct_gaudi_ipc_ep_t),
    .ep_destroy               = UCS_CLASS_DELETE_FUNC_NAME(
                                    uct_gaudi_ipc_ep_t),
    .ep_check                 = uct_gaudi_ipc_ep_check,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(
                                    uct_gaudi_ipc_iface_t),
    .iface_query              = uct_gaudi_ipc_iface_query,
    .iface_get_device_address = uct_gaudi_ipc_iface_get_device_address,
    .iface_get_address        = uct_gaudi_ipc_iface_get_address,
    .iface_is_reachable       = uct_gaudi_ipc_iface_is_reachable
};

UCT_GAUDI_IS_REACHABLE_ADAPTER(uct_gaudi_compat_ipc_iface_is_reachable_v2,
                               uct_gaudi_ipc_iface_is_reachable)

static uct_iface_internal_ops_t uct_gaudi_ipc_iface_internal_ops = {
    .iface_estimate_perf = uct_base_iface_estimate_perf,
    UCT_GAUDI_IFACE_BASE_INTERNAL_OPS,
    UCT_GAUDI_IFACE_INTERNAL_OPS(uct_gaudi_compat_ipc_iface_is_reachable_v2)
};

static const uct_gaudi_iface_ops_t uct_gaudi_ipc_iface_gaudi_ops = {
    .desc_done = uct_gaudi_ipc_ep_zcopy_done,
    .periodic  = uct_gaudi_ipc_iface_periodic
};


static UCS_CLASS_INIT_FUNC(uct_gaudi_ipc_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    const uct_gaudi_ipc_iface_config_t *config =
            ucs_derived_of(tl_config, uct_gaudi_ipc_iface_config_t);
    uct_gaudi_ipc_md_t *ipc_md = ucs_derived_of(md, uct_gaudi_ipc_md_t);
    uct_gaudi_dma_params_t dma_params;
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_gaudi_iface_t, &uct_gaudi_ipc_iface_ops,
                              &uct_gaudi_ipc_iface_internal_ops,
                              &uct_gaudi_ipc_iface_gaudi_ops, md, worker,
                              params, tl_config, ipc_md->heap, &self->reg,
                              sizeof(uct_gaudi_ipc_desc_t),
                              config->max_poll, UCT_GAUDI_IPC_TL_NAME);

    /* UCS classes are not zeroed */
    self->pidns      = uct_gaudi_ipc_pidns();
    self->next_check = 0;
    self->export_ok  = uct_gaudi_ipc_md_export_ok(ipc_md);
    self->refused    = 0;
    self->syn_import = config->syn_import;

    self->config.bw         = config->bw;
    self->config.latency    = config->latency;
    self->config.peer_check = ucs_time_from_sec(config->peer_check);

    uct_gaudi_ipc_cache_init(&self->cache, ipc_md->heap,
                             config->cache_max_regions,
                             config->cache_max_size, config->fd_method,
                             config->fd_timeout);

    /* the device may not be taken yet: then what it is expected to do,
     * probed at the first copy or address exchange after it is */
    uct_gaudi_ipc_iface_expect(self);
    uct_gaudi_ipc_iface_refresh(self);

    status = uct_gaudi_reg_init(&self->reg, ipc_md->heap, &config->reg,
                                UCT_GAUDI_IPC_TL_NAME, "GAUDI_IPC_",
                                UCS_STATS_RVAL(self->super.super.stats));
    if (status != UCS_OK) {
        goto err_cache;
    }

    if (!self->import_ok) {
        /* opened, but every peer is unreachable (is_reachable) */
        self->super.no_dma = self->reason;
        return UCS_OK;
    }

    uct_gaudi_iface_dma_params_unset(&dma_params);
    uct_gaudi_iface_dma_params(&dma_params, &config->dma);
    status = uct_gaudi_iface_dma_init(&self->super, &dma_params);
    if (status != UCS_OK) {
        goto err_reg;
    }

    return UCS_OK;

err_reg:
    uct_gaudi_reg_cleanup(&self->reg);
err_cache:
    uct_gaudi_ipc_cache_cleanup(&self->cache);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gaudi_ipc_iface_t)
{
    /* the copies hold imports and local registrations: finish them first */
    uct_gaudi_iface_dma_close(&self->super);
    uct_gaudi_ipc_cache_cleanup(&self->cache);
    uct_gaudi_reg_cleanup(&self->reg);
}

UCS_CLASS_DEFINE(uct_gaudi_ipc_iface_t, uct_gaudi_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(uct_gaudi_ipc_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t*,
                                 const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gaudi_ipc_iface_t, uct_iface_t);

UCT_TL_DEFINE(&uct_gaudi_ipc_component, gaudi_ipc,
              uct_gaudi_query_tl_resources, uct_gaudi_ipc_iface_t,
              "GAUDI_IPC_", uct_gaudi_ipc_iface_config_table,
              uct_gaudi_ipc_iface_config_t);

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_cpy iface: capabilities and performance model over the iface base
 * class (base/gaudi_iface.c: progress, flush, fence, pending). Each iface
 * owns a DMA engine so that completions are delivered only by the progress
 * of the worker that posted them (docs/performance.md "Design").
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_copy_iface.h"
#include "gaudi_copy_md.h"
#include "gaudi_copy_ep.h"

#include <uct/gaudi/base/gaudi_uct_compat.h>
#include <uct/gaudi/dev/gaudi_device.h>
#include <uct/gaudi/base/gaudi_resource.h>
#include <ucs/debug/log.h>
#include <ucs/type/class.h>
#include <ucs/sys/string.h>
#include <ucs/time/time.h>
#include <limits.h>


/* Model defaults per ASIC (docs/performance.md "Model"): host PCIe Gen4
 * x16 for H2D/D2H, PDMA reading and writing HBM for D2D */
typedef struct {
    double bw[UCT_GAUDI_COPY_DIR_LAST]; /* bytes/s */
    double latency;                     /* s: submit + completion */
    double overhead;                    /* s: host time per operation */
} uct_gaudi_copy_perf_default_t;

static const uct_gaudi_copy_perf_default_t uct_gaudi_copy_perf_gaudi1 = {
    .bw       = { 12000.0 * UCS_MBYTE, 12000.0 * UCS_MBYTE,
                  20000.0 * UCS_MBYTE },
    .latency  = 15e-6,
    .overhead = 3e-6
};

static const uct_gaudi_copy_perf_default_t uct_gaudi_copy_perf_gaudi2 = {
    .bw       = { 22000.0 * UCS_MBYTE, 22000.0 * UCS_MBYTE,
                  40000.0 * UCS_MBYTE },
    .latency  = 10e-6,
    .overhead = 2e-6
};


static ucs_config_field_t uct_gaudi_copy_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gaudi_copy_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"BW_H2D", "auto",
     "Host-to-device copy bandwidth of the performance model; auto: the\n"
     "default of the ASIC (Gaudi2 22000MBs, Gaudi1 12000MBs)",
     ucs_offsetof(uct_gaudi_copy_iface_config_t, bw[UCT_GAUDI_COPY_DIR_H2D]),
     UCS_CONFIG_TYPE_BW},

    {"BW_D2H", "auto",
     "Device-to-host copy bandwidth; auto: the default of the ASIC\n"
     "(Gaudi2 22000MBs, Gaudi1 12000MBs)",
     ucs_offsetof(uct_gaudi_copy_iface_config_t, bw[UCT_GAUDI_COPY_DIR_D2H]),
     UCS_CONFIG_TYPE_BW},

    {"BW_D2D", "auto",
     "Device-to-device copy bandwidth; auto: the default of the ASIC\n"
     "(Gaudi2 40000MBs, Gaudi1 20000MBs)",
     ucs_offsetof(uct_gaudi_copy_iface_config_t, bw[UCT_GAUDI_COPY_DIR_D2D]),
     UCS_CONFIG_TYPE_BW},

    {"LAT", "auto",
     "Latency of one copy (submission to completion); auto: the default of\n"
     "the ASIC (Gaudi2 10us, Gaudi1 15us)",
     ucs_offsetof(uct_gaudi_copy_iface_config_t, latency),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"OVERHEAD", "auto",
     "Host CPU time spent per operation; auto: the default of the ASIC\n"
     "(Gaudi2 2us, Gaudi1 3us)",
     ucs_offsetof(uct_gaudi_copy_iface_config_t, overhead),
     UCS_CONFIG_TYPE_TIME_UNITS},

    {"MAX_INFLIGHT", "auto",
     "Asynchronous copies in flight per interface; auto: the driver's window\n"
     "less one (Gaudi2 63) or 255 (Gaudi1). Capped by the driver's window.",
     ucs_offsetof(uct_gaudi_copy_iface_config_t, max_inflight),
     UCS_CONFIG_TYPE_ULUNITS},

    {"SPLIT_MIN", "256k",
     "Smallest piece a copy is split into to run on several DMA queues",
     ucs_offsetof(uct_gaudi_copy_iface_config_t, split_min),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"BOUNCE_SIZE", "256k",
     "Pre-mapped host bounce buffer of short/bcopy operations (also max_bcopy)",
     ucs_offsetof(uct_gaudi_copy_iface_config_t, bounce_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"CB_SIZE", "4k",
     "Command buffer size per DMA queue and copy (limits packets per copy)",
     ucs_offsetof(uct_gaudi_copy_iface_config_t, cb_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"SYNC_TIMEOUT", "60s",
     "How long a synchronous copy (short, bcopy, fence) waits for the device",
     ucs_offsetof(uct_gaudi_copy_iface_config_t, sync_timeout),
     UCS_CONFIG_TYPE_TIME},

    {"MAX_POLL", "16",
     "Submissions whose copies are delivered per progress call",
     ucs_offsetof(uct_gaudi_copy_iface_config_t, max_poll),
     UCS_CONFIG_TYPE_UINT},

    /* MAX_BATCH, BATCH_BYTES, DMA_QUEUES, POLL_INTERVAL, as gaudi_ipc's */
    {"", "", NULL,
     ucs_offsetof(uct_gaudi_copy_iface_config_t, dma),
     UCS_CONFIG_TYPE_TABLE(uct_gaudi_iface_dma_config_table)},

    {NULL}
};


static void UCS_CLASS_DELETE_FUNC_NAME(uct_gaudi_copy_iface_t)(uct_iface_t*);


static ucs_status_t
uct_gaudi_copy_iface_get_address(uct_iface_h tl_iface,
                                 uct_iface_addr_t *iface_addr)
{
    uct_gaudi_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gaudi_copy_iface_t);

    *(uct_gaudi_copy_iface_addr_t*)iface_addr = iface->id;
    return UCS_OK;
}

static int uct_gaudi_copy_iface_is_reachable(const uct_iface_h tl_iface,
                                             const uct_device_addr_t *dev_addr,
                                             const uct_iface_addr_t *iface_addr)
{
    uct_gaudi_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gaudi_copy_iface_t);

    return (iface_addr != NULL) &&
           (iface->id == *(const uct_gaudi_copy_iface_addr_t*)iface_addr);
}

static ucs_status_t uct_gaudi_copy_iface_query(uct_iface_h tl_iface,
                                               uct_iface_attr_t *iface_attr)
{
    uct_gaudi_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gaudi_copy_iface_t);

    uct_gaudi_iface_query(&iface->super, iface->config.max_iov, iface_attr);

    iface_attr->iface_addr_len          = sizeof(uct_gaudi_copy_iface_addr_t);
    iface_attr->device_addr_len         = 0;
    iface_attr->cap.am.max_iov          = 1;
    iface_attr->cap.am.opt_zcopy_align  = 1;
    iface_attr->cap.am.align_mtu        = 1;

    iface_attr->latency                 = ucs_linear_func_make(
                                              iface->config.latency, 0);
    /* the direction UCP's memtype EP uses most (pack/unpack, staging) */
    iface_attr->bandwidth.shared        = ucs_min(
            iface->config.bw[UCT_GAUDI_COPY_DIR_H2D],
            iface->config.bw[UCT_GAUDI_COPY_DIR_D2H]);
    iface_attr->overhead                = iface->config.overhead;
    return UCS_OK;
}

static int uct_gaudi_copy_is_gaudi_mem(const uct_perf_attr_t *perf_attr,
                                       uint64_t field, ucs_memory_type_t type)
{
    return (perf_attr->field_mask & field) &&
           (type == UCT_GAUDI_MEMORY_TYPE);
}

/* Direction of an operation: put writes remote memory, get reads it */
static uct_gaudi_copy_dir_t
uct_gaudi_copy_perf_dir(const uct_perf_attr_t *perf_attr)
{
    int is_get = (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_OPERATION) &&
                 ((perf_attr->operation == UCT_EP_OP_GET_SHORT) ||
                  (perf_attr->operation == UCT_EP_OP_GET_BCOPY) ||
                  (perf_attr->operation == UCT_EP_OP_GET_ZCOPY));
    int local_dev  = uct_gaudi_copy_is_gaudi_mem(
            perf_attr, UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE,
            perf_attr->local_memory_type);
    /* the remote side of a gaudi_cpy operation is Gaudi memory unless
     * told otherwise */
    int remote_dev = !(perf_attr->field_mask &
                       UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE) ||
                     (perf_attr->remote_memory_type == UCT_GAUDI_MEMORY_TYPE);

    if (local_dev && remote_dev) {
        return UCT_GAUDI_COPY_DIR_D2D;
    } else if (is_get) {
        return remote_dev ? UCT_GAUDI_COPY_DIR_D2H : UCT_GAUDI_COPY_DIR_H2D;
    } else {
        return remote_dev ? UCT_GAUDI_COPY_DIR_H2D : UCT_GAUDI_COPY_DIR_D2H;
    }
}

static ucs_status_t
uct_gaudi_copy_iface_estimate_perf(uct_iface_h tl_iface,
                                   uct_perf_attr_t *perf_attr)
{
    uct_gaudi_copy_iface_t *iface = ucs_derived_of(tl_iface,
                                                   uct_gaudi_copy_iface_t);
    uct_gaudi_copy_dir_t dir      = uct_gaudi_copy_perf_dir(perf_attr);
    int is_short                  =
            (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_OPERATION) &&
            ((perf_attr->operation == UCT_EP_OP_PUT_SHORT) ||
             (perf_attr->operation == UCT_EP_OP_GET_SHORT) ||
             (perf_attr->operation == UCT_EP_OP_PUT_BCOPY) ||
             (perf_attr->operation == UCT_EP_OP_GET_BCOPY));

    uct_ppn_bandwidth_t bw;

    bw.dedicated = 0;
    bw.shared    = iface->config.bw[dir];
    if (is_short) {
        /* staged through the bounce buffer: one extra host memcpy,
         * and the copy is waited for (no overlap) */
        bw.shared /= 2;
    }

    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_BANDWIDTH) {
        perf_attr->bandwidth = bw;
    }

    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_PRE_OVERHEAD) {
        perf_attr->send_pre_overhead = iface->config.overhead;
    }

    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_SEND_POST_OVERHEAD) {
        /* synchronous operations wait for the completion */
        perf_attr->send_post_overhead = is_short ? iface->config.latency : 0;
    }

    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_RECV_OVERHEAD) {
        perf_attr->recv_overhead = 0;
    }

    if (perf_attr->field_mask & UCT_PERF_ATTR_FIELD_LATENCY) {
        perf_attr->latency = ucs_linear_func_make(iface->config.latency, 0);
    }

    /* the path is the DMA engine: its bandwidth is the transfer's */
    uct_gaudi_perf_attr_fill_ext(perf_attr, &bw);
    return UCS_OK;
}


/* idle: release device memory a peer's import held back (one counter
 * read when there is none) */
static void uct_gaudi_copy_iface_idle(uct_gaudi_iface_t *iface)
{
    uct_gaudi_heap_progress(iface->reg->heap);
}


/* Resources: not offered where the ASIC has no user DMA queue */

/* Whether the device copies: by the backend it got, or before it is
 * taken by the one it is expected to get (the ASIC decides, facts 6) */
static ucs_status_t uct_gaudi_copy_can_copy(uct_gaudi_copy_md_t *gmd,
                                            const char **reason_p)
{
    uct_gaudi_ctx_t *ctx             = uct_gaudi_heap_ctx(gmd->heap);
    const uct_gaudi_dev_info_t *info = gmd->heap->info;

    if (ctx != NULL) {
        return uct_gaudi_dma_check(ctx, reason_p);
    }

    return uct_gaudi_dma_check_expected(
            info->asic, uct_gaudi_ctx_expected_backend(info->asic), reason_p);
}

static ucs_status_t
uct_gaudi_copy_query_tl_resources(uct_md_h md,
                                  uct_tl_device_resource_t **tl_devices_p,
                                  unsigned *num_tl_devices_p)
{
    static int warned = 0;
    uct_gaudi_copy_md_t *gmd = ucs_derived_of(md, uct_gaudi_copy_md_t);
    const char *reason;

    if (uct_gaudi_copy_can_copy(gmd, &reason) != UCS_OK) {
        if (!warned) {
            /* visible in the log and in ucx_info -d (facts 6) */
            ucs_warn("gaudi %s: %s", uct_gaudi_heap_name(gmd->heap), reason);
            warned = 1;
        }
        *tl_devices_p     = NULL;
        *num_tl_devices_p = 0;
        return UCS_OK;
    }

    return uct_gaudi_query_tl_resources(md, tl_devices_p,
                                               num_tl_devices_p);
}


/* A gaudi_cpy ep reaches only its own iface (is_reachable): its peer is
 * this process, which cannot have exited */
static ucs_status_t uct_gaudi_copy_ep_check(uct_ep_h tl_ep, unsigned flags,
                                            uct_completion_t *comp)
{
    UCT_GAUDI_EP_CHECK_PARAM(flags, comp);
    return UCS_OK;
}

static uct_iface_ops_t uct_gaudi_copy_iface_ops = {
    .ep_put_short             = uct_gaudi_copy_ep_put_short,
    .ep_get_short             = uct_gaudi_copy_ep_get_short,
    .ep_put_bcopy             = uct_gaudi_copy_ep_put_bcopy,
    .ep_get_bcopy             = uct_gaudi_copy_ep_get_bcopy,
    .ep_put_zcopy             = uct_gaudi_copy_ep_put_zcopy,
    .ep_get_zcopy             = uct_gaudi_copy_ep_get_zcopy,
    UCT_GAUDI_IFACE_BASE_OPS,
    .ep_check                 = uct_gaudi_copy_ep_check,
    .iface_close              = UCS_CLASS_DELETE_FUNC_NAME(
                                    uct_gaudi_copy_iface_t),
    .iface_query              = uct_gaudi_copy_iface_query,
    .iface_get_device_address = (uct_iface_get_device_address_func_t)
                                    ucs_empty_function_return_success,
    .iface_get_address        = uct_gaudi_copy_iface_get_address,
    .iface_is_reachable       = uct_gaudi_copy_iface_is_reachable
};

UCT_GAUDI_IS_REACHABLE_ADAPTER(uct_gaudi_compat_copy_iface_is_reachable_v2,
                               uct_gaudi_copy_iface_is_reachable)

static uct_iface_internal_ops_t uct_gaudi_copy_iface_internal_ops = {
    .iface_estimate_perf = uct_gaudi_copy_iface_estimate_perf,
    UCT_GAUDI_IFACE_BASE_INTERNAL_OPS,
    UCT_GAUDI_IFACE_INTERNAL_OPS(uct_gaudi_compat_copy_iface_is_reachable_v2)
};

static const uct_gaudi_iface_ops_t uct_gaudi_copy_iface_gaudi_ops = {
    .desc_done = NULL,
    .idle      = uct_gaudi_copy_iface_idle
};


/* The performance model: configured values, else the ASIC's defaults */
static void
uct_gaudi_copy_iface_perf_init(uct_gaudi_copy_iface_t *iface,
                               const uct_gaudi_copy_iface_config_t *config)
{
    const uct_gaudi_copy_perf_default_t *def =
            (iface->md->heap->info->asic == UCT_GAUDI_ASIC_GAUDI1) ?
            &uct_gaudi_copy_perf_gaudi1 : &uct_gaudi_copy_perf_gaudi2;
    int dir;

    for (dir = 0; dir < UCT_GAUDI_COPY_DIR_LAST; dir++) {
        iface->config.bw[dir] =
                UCT_GAUDI_CONFIG_BW_IS_AUTO(config->bw[dir]) ?
                def->bw[dir] : config->bw[dir];
    }

    iface->config.latency  = (config->latency == UCS_TIME_AUTO) ?
                             def->latency :
                             ucs_time_to_sec(config->latency);
    iface->config.overhead = (config->overhead == UCS_TIME_AUTO) ?
                             def->overhead :
                             ucs_time_to_sec(config->overhead);
}

static void
uct_gaudi_copy_iface_dma_params(const uct_gaudi_copy_iface_t *iface,
                                const uct_gaudi_copy_iface_config_t *config,
                                uct_gaudi_dma_params_t *params)
{
    /* over the defaults of the backend the device gets */
    uct_gaudi_iface_dma_params_unset(params);
    if ((config->max_inflight != UCS_ULUNITS_AUTO) &&
        (config->max_inflight != UCS_ULUNITS_INF)) {
        params->max_inflight = config->max_inflight;
    }
    if (config->split_min != UCS_MEMUNITS_AUTO) {
        params->split_min = config->split_min;
    }
    if (config->bounce_size != UCS_MEMUNITS_AUTO) {
        params->bounce_size = config->bounce_size;
    }
    if (config->cb_size != UCS_MEMUNITS_AUTO) {
        params->cb_size = config->cb_size;
    }
    params->sync_timeout = config->sync_timeout;
    uct_gaudi_iface_dma_params(params, &config->dma);
}

static UCS_CLASS_INIT_FUNC(uct_gaudi_copy_iface_t, uct_md_h md,
                           uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *tl_config)
{
    uct_gaudi_copy_md_t *gmd = ucs_derived_of(md, uct_gaudi_copy_md_t);
    const uct_gaudi_copy_iface_config_t *config =
            ucs_derived_of(tl_config, uct_gaudi_copy_iface_config_t);
    uct_gaudi_dma_params_t dma_params;
    const char *reason;
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_gaudi_iface_t, &uct_gaudi_copy_iface_ops,
                              &uct_gaudi_copy_iface_internal_ops,
                              &uct_gaudi_copy_iface_gaudi_ops, md, worker,
                              params, tl_config, gmd->heap, &gmd->reg,
                              sizeof(uct_gaudi_iface_desc_t),
                              config->max_poll, UCT_GAUDI_COPY_TL_NAME);

    /* UCS classes are not zeroed */
    self->id = ucs_generate_uuid((uintptr_t)self);
    self->md = gmd;

    if (uct_gaudi_copy_can_copy(gmd, &reason) != UCS_OK) {
        ucs_error("gaudi %s: cannot open %s: %s",
                  uct_gaudi_heap_name(gmd->heap), UCT_GAUDI_COPY_TL_NAME,
                  reason);
        return UCS_ERR_UNSUPPORTED;
    }

    uct_gaudi_copy_iface_perf_init(self, config);
    uct_gaudi_copy_iface_dma_params(self, config, &dma_params);
    status = uct_gaudi_iface_dma_init(&self->super, &dma_params);
    if (status != UCS_OK) {
        return status;
    }

    self->config.max_zcopy = UCT_GAUDI_DMA_MAX_COPY;
    self->config.max_iov   = ucs_min(UCT_GAUDI_COPY_MAX_IOV,
                                     (self->super.dma != NULL) ?
                                     uct_gaudi_dma_max_xfers(self->super.dma) :
                                     uct_gaudi_dma_max_xfers_of(
                                             uct_gaudi_ctx_expected_backend(
                                                     gmd->heap->info->asic),
                                             dma_params.cb_size));
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_gaudi_copy_iface_t)
{
}

UCS_CLASS_DEFINE(uct_gaudi_copy_iface_t, uct_gaudi_iface_t);
UCS_CLASS_DEFINE_NEW_FUNC(uct_gaudi_copy_iface_t, uct_iface_t, uct_md_h,
                          uct_worker_h, const uct_iface_params_t*,
                          const uct_iface_config_t*);
static UCS_CLASS_DEFINE_DELETE_FUNC(uct_gaudi_copy_iface_t, uct_iface_t);

UCT_TL_DEFINE(&uct_gaudi_copy_component, gaudi_cpy,
              uct_gaudi_copy_query_tl_resources, uct_gaudi_copy_iface_t,
              "GAUDI_COPY_", uct_gaudi_copy_iface_config_table,
              uct_gaudi_copy_iface_config_t);

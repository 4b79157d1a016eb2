/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * HL_IOCTL_INFO (facts 2).
 */

#include "hlsim_int.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static void hlsim_hw_ip(int dev, struct gaudi_hl_hw_ip_info *hw)
{
    hlsim_devcfg_t *d = &hlsim_cfg.dev[dev];
    const char     *name;

    memset(hw, 0, sizeof(*hw));
    hw->u61.sram_base_address  = d->sram_base;
    hw->u61.dram_base_address  = d->dram_base;
    hw->u61.dram_size          = d->dram_size;
    hw->u61.sram_size          = d->sram_size;
    hw->u61.device_id          = d->device_id;
    hw->u61.module_id          = d->module_id;
    hw->u61.dram_enabled       = d->dram_size > HLSIM_PAGE_SIZE;
    hw->u61.dram_page_size     = d->page_size;
    hw->u61.device_mem_alloc_default_page_size = d->page_size;
    hw->u61.first_available_interrupt_id =
        (d->asic == HLSIM_GAUDI1) ? 0xFFFF : 0;
    hw->u61.tpc_enabled_mask   = 0xFF;
    hw->reserved_dram_size     = d->dram_user_off;
    switch (d->asic) {
    case HLSIM_GAUDI1:
        name = "HL-205";
        break;
    case HLSIM_GAUDI2:
        name = "HL-225";
        hw->u61.edma_enabled_mask = 0xFF;
        break;
    default:
        name = "HL-325";
        gaudi_hl_pdma_user_owned_ch_mask(hw) = 0x3;
        break;
    }
    snprintf((char*)hw->u61.card_name, sizeof(hw->u61.card_name), "%s",
             name);
    snprintf((char*)hw->u61.cpucp_version,
             sizeof(hw->u61.cpucp_version), "hlsim emulated firmware");
}

/*
 * OPEN_STATS' context flags (K612 common/habanalabs_ioctl.c:540-541, K61
 * :527-528). The dma-buf of a closed exporter keeps it active: on accel
 * and Habana's driver it holds the file (K612 common/memory.c:1877-1885);
 * on Linux 6.1 the flag is cleared only in hpriv_release (K61
 * common/device.c:419), after the last dma-buf, and compute_ctx_in_release
 * stays set from the close (device.c:476) until then (:422).
 */
static void hlsim_open_stats_ctx(int dev, struct hl_open_stats_info *o)
{
    hlsim_shdev_t *sd   = &hlsim_shm->dev[dev];
    int            held = hlsim_node_compute_held(dev);
    int            bufs = !held && hlsim_dmabufs_alive(dev);

    o->is_compute_ctx_active  = held || bufs;
    o->compute_ctx_in_release =
        __atomic_load_n(&sd->in_release, __ATOMIC_ACQUIRE) ||
        (hlsim_cfg.legacy && bufs);
}

int hlsim_info(hlsim_file_t *f, struct hl_info_args *a)
{
    hlsim_shdev_t *sd  = &hlsim_shm->dev[f->dev];
    hlsim_ctx_t   *ctx = f->ctx;   /* NULL on the control node */
    union {
        struct gaudi_hl_hw_ip_info          hw;
        struct hl_info_dram_usage           dram;
        struct hl_info_hw_idle              idle;
        struct hl_info_device_status        status;
        struct hl_open_stats_info           open;
        struct hl_info_dev_memalloc_page_sizes pages;
        struct hl_info_reset_count          reset;
        struct hl_info_cs_counters          cs;
        struct hl_info_time_sync            ts;
    } out;
    size_t size;
    int    err;

    if ((err = hlsim_fault_hit("info"))) {
        return -err;
    }
    /* control node: event ops are compute-only (facts 1.2) */
    if ((f->kind == HLSIM_F_CONTROL) &&
        ((a->op == HL_INFO_GET_EVENTS) ||
         (a->op == HL_INFO_REGISTER_EVENTFD) ||
         (a->op == HL_INFO_UNREGISTER_EVENTFD))) {
        return -EOPNOTSUPP;
    }
    /* the notifier's ops (hlsim_notify.c) */
    err = hlsim_notify_info(f, a, hlsim_dev_operational(f->dev));
    if (err != 1) {
        return err;
    }
    /* facts 2.1 */
    if (a->pad || !a->return_pointer || !a->return_size) {
        return -EINVAL;
    }

    memset(&out, 0, sizeof(out));
    switch (a->op) {
    case HL_INFO_HW_IP_INFO:
        hlsim_hw_ip(f->dev, &out.hw);
        size = sizeof(out.hw);
        goto copy;
    case HL_INFO_DRAM_USAGE:
        /* Linux 6.1 answers it only after the operational check (K61
         * common/habanalabs_ioctl.c:850-858) */
        if (hlsim_cfg.legacy && !hlsim_dev_operational(f->dev)) {
            return -EBUSY;
        }
        /* free = user size - device-wide used (facts 2.2) */
        out.dram.dram_free_mem = hlsim_cfg.dev[f->dev].dram_size -
            HLSIM_MIN(hlsim_cfg.dev[f->dev].dram_size,
                      __atomic_load_n(&sd->dram_used, __ATOMIC_ACQUIRE));
        pthread_mutex_lock(&hlsim_lock);
        out.dram.ctx_dram_mem = ctx ? ctx->ctx_dram : 0;
        pthread_mutex_unlock(&hlsim_lock);
        size = sizeof(out.dram);
        goto copy;
    case HL_INFO_DEVICE_STATUS:
        out.status.status = hlsim_dev_status(f->dev);
        size = sizeof(out.status);
        goto copy;
    case HL_INFO_OPEN_STATS:
        out.open.open_counter = __atomic_load_n(&sd->open_counter,
                                                __ATOMIC_ACQUIRE);
        out.open.last_open_period_ms =
            __atomic_load_n(&sd->last_session_ms, __ATOMIC_ACQUIRE);
        hlsim_open_stats_ctx(f->dev, &out.open);
        size = sizeof(out.open);
        goto copy;
    case HL_INFO_DEV_MEM_ALLOC_PAGE_SIZES:
        out.pages.page_order_bitmask = 0;   /* Gaudi1/2: none (facts 2.2) */
        size = sizeof(out.pages);
        goto copy;
    case HL_INFO_RESET_COUNT:
        out.reset.hard_reset_cnt = __atomic_load_n(&sd->hard_reset_cnt,
                                                   __ATOMIC_ACQUIRE);
        out.reset.soft_reset_cnt = __atomic_load_n(&sd->soft_reset_cnt,
                                                   __ATOMIC_ACQUIRE);
        size = sizeof(out.reset);
        goto copy;
    case HL_INFO_CS_COUNTERS:
        out.cs.total_max_cs_in_flight_drop_cnt = sd->drop_in_flight;
        out.cs.total_validation_drop_cnt       = sd->drop_validation;
        out.cs.total_parsing_drop_cnt          = sd->drop_parsing;
        out.cs.total_device_in_reset_drop_cnt  = sd->drop_in_reset;
        pthread_mutex_lock(&hlsim_lock);
        if (ctx != NULL) {
            out.cs.ctx_max_cs_in_flight_drop_cnt = ctx->drop_in_flight;
            out.cs.ctx_validation_drop_cnt       = ctx->drop_validation;
            out.cs.ctx_parsing_drop_cnt          = ctx->drop_parsing;
            out.cs.ctx_device_in_reset_drop_cnt  = ctx->drop_in_reset;
        }
        pthread_mutex_unlock(&hlsim_lock);
        size = sizeof(out.cs);
        goto copy;
    default:
        break;
    }

    /* the remaining ops need an operational device (facts 2.2) */
    if (!hlsim_dev_operational(f->dev)) {
        return -EBUSY;
    }
    switch (a->op) {
    case HL_INFO_HW_IDLE:
        pthread_mutex_lock(&hlsim_lock);
        out.idle.is_idle = (ctx == NULL) || (ctx->in_flight == 0);
        pthread_mutex_unlock(&hlsim_lock);
        size = sizeof(out.idle) + 2 * sizeof(uint64_t); /* 6.12: 40 B */
        size = HLSIM_MIN(size, sizeof(out));
        goto copy;
    case HL_INFO_TIME_SYNC: {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        out.ts.host_time   = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
        out.ts.device_time = hlsim_now_ns();
        size = sizeof(out.ts);
        goto copy;
    }
    default:
        return -EINVAL;   /* unknown or not emulated */
    }

copy:
    size = HLSIM_MIN(size, a->return_size);
    return hlsim_copy_to_user(a->return_pointer, &out, size);
}

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Execution of a job: read the CB, run its LIN_DMA packets (facts 5.5)
 * through this context's address translation, like the QMAN + DMA engine
 * behind an MMU. A LIN_DMA to or from an unmapped address is an MMU page
 * fault, counted and handled per hlsim_page_fault().
 */

#include "hlsim_int.h"
#include "hlsim_packets.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HLSIM_MAX_SEGS 1024

typedef struct {
    uint8_t *p;
    uint64_t len;
} hlsim_seg_t;

typedef struct {
    hlsim_seg_t s[HLSIM_MAX_SEGS];
    int         n;
} hlsim_segs_t;

static int hlsim_seg_add(hlsim_segs_t *v, uint8_t *p, uint64_t len)
{
    if (v->n && (v->s[v->n - 1].p + v->s[v->n - 1].len == p)) {
        v->s[v->n - 1].len += len;
        return 0;
    }
    if (v->n == HLSIM_MAX_SEGS) {
        return -1;
    }
    v->s[v->n].p   = p;
    v->s[v->n].len = len;
    v->n++;
    return 0;
}

static int hlsim_seg_add_cb(void *v, uint8_t *p, uint64_t len)
{
    return hlsim_seg_add(v, p, len);
}

/*
 * Translate [addr, addr+len) into host pointers; lock held; 0 = fault.
 * Through a USERPTR mapping, pages whose pin is stale (hlsim_pin.c) come
 * out as the sink (@a write) or the poison, and *stale_p is set to the
 * first such host address (else 0).
 */
static int hlsim_translate(hlsim_ctx_t *ctx, uint64_t addr, uint64_t len,
                           hlsim_segs_t *v, int write, uint64_t *stale_p)
{
    hlsim_devcfg_t *d = &hlsim_cfg.dev[ctx->dev];
    hlsim_map_t    *m;
    uint8_t        *hbm;
    uint64_t        off, chunk, pg, pos;
    uint32_t        i;

    v->n     = 0;
    *stale_p = 0;
    if (len == 0) {
        return 1;
    }
    if ((d->asic == HLSIM_GAUDI1) && (addr < d->hbm_size) &&
        (len <= d->hbm_size - addr)) {
        /* no DRAM MMU on Gaudi1: physical HBM address (facts 5.3) */
        hbm = hlsim_hbm(ctx->dev);
        return (hbm != NULL) && !hlsim_seg_add(v, hbm + addr, len);
    }
    m = hlsim_map_find(ctx, addr, len);
    if (m == NULL) {
        return 0;
    }
    off = addr - m->blk_va;
    switch (m->kind) {
    case HLSIM_MAP_HOST:
        return !hlsim_pin_segs(m, m->host - (m->va - m->blk_va) + off, len,
                               write, hlsim_seg_add_cb, v, stale_p);
    case HLSIM_MAP_CB:
        return !hlsim_seg_add(v, m->host - (m->va - m->blk_va) + off, len);
    case HLSIM_MAP_DRAM:
        hbm = hlsim_hbm(ctx->dev);
        pg  = d->page_size;
        for (pos = off; (hbm != NULL) && (pos < off + len); pos += chunk) {
            chunk = HLSIM_MIN(pg - pos % pg, off + len - pos);
            if (hlsim_seg_add(v, hbm + (uint64_t)m->alloc->pages[pos / pg] *
                              pg + pos % pg, chunk)) {
                return 0;
            }
        }
        return hbm != NULL;
    case HLSIM_MAP_IMPORT:
        /* the peer's HBM, through the dma-buf's segment list */
        hbm = hlsim_hbm(m->import.dev);
        for (i = 0, pos = 0; (hbm != NULL) && (i < m->import.nseg) &&
             (len > 0); pos += m->import.seg[i].len, i++) {
            uint64_t s = m->import.seg[i].len;

            if (off >= pos + s) {
                continue;
            }
            chunk = HLSIM_MIN(pos + s - off, len);
            if (hlsim_seg_add(v, hbm + m->import.seg[i].hbm_off + (off - pos),
                              chunk)) {
                return 0;
            }
            off += chunk;
            len -= chunk;
        }
        return (hbm != NULL) && (len == 0);
    default:
        return 0;
    }
}

static void hlsim_copy_segs(hlsim_segs_t *dst, hlsim_segs_t *src)
{
    int      di = 0, si = 0;
    uint64_t doff = 0, soff = 0, n;

    while ((di < dst->n) && (si < src->n)) {
        n = HLSIM_MIN(dst->s[di].len - doff, src->s[si].len - soff);
        memmove(dst->s[di].p + doff, src->s[si].p + soff, n);
        doff += n;
        soff += n;
        if (doff == dst->s[di].len) {
            di++;
            doff = 0;
        }
        if (soff == src->s[si].len) {
            si++;
            soff = 0;
        }
    }
}

/* MEMSET: src_addr is a 64-bit fill pattern, repeated from dst */
static void hlsim_fill_segs(hlsim_segs_t *dst, uint64_t val)
{
    uint64_t pos = 0, i;
    int      s;

    for (s = 0; s < dst->n; s++) {
        if ((val == 0) || (val == 0x0101010101010101ULL * (val & 0xff))) {
            memset(dst->s[s].p, val & 0xff, dst->s[s].len);
            continue;
        }
        for (i = 0; i < dst->s[s].len; i++, pos++) {
            dst->s[s].p[i] = val >> (8 * (pos % 8));
        }
    }
}

/*
 * An MMU page fault of a DMA on device @a dev: counted in this process
 * (HLSIM_COUNTER_PAGE_FAULTS) and node-wide (a line in
 * $HLSIM_ROOT/page-faults, which the suites check stays absent). Returns
 * what happens next, a hlsim_pf_mode_t. Linux 6.1 hard-resets Gaudi2 on
 * it (PMMU0/HMMU0 page fault events .reset = 1, K61
 * include/gaudi2/gaudi2_async_ids_map_extended.h:1466-1467, 1562-1563;
 * gaudi2/gaudi2.c:8972-8973, 8984-8987). Elsewhere the events ask for no
 * reset (K612 include/gaudi2/gaudi2_async_ids_map_extended.h:1472-1473,
 * 1568-1569; Gaudi1 GAUDI_EVENT_MMU_PAGE_FAULT, K612 gaudi/gaudi.c:
 * 7751-7756, K61 :7833-7837) and the sources do not say what becomes of
 * the CS: HLSIM_PAGE_FAULT chooses, the strictest outcome by default.
 * @a seq 0: a PDMA copy (hlsim_pdma_copy), whose caller gets EFAULT.
 */
int hlsim_page_fault(int dev, const char *what, uint64_t addr, uint64_t size,
                     uint64_t seq)
{
    char path[4200], line[256];
    int  fd, n, mode = hlsim_cfg.page_fault;

    if (hlsim_cfg.legacy && (hlsim_cfg.dev[dev].asic == HLSIM_GAUDI2)) {
        mode = HLSIM_PF_RESET;
    }
    if (seq == 0) {
        mode = -1;   /* a PDMA copy: the caller gets EFAULT */
    }
    __atomic_add_fetch(&hlsim_counters[HLSIM_COUNTER_PAGE_FAULTS], 1,
                       __ATOMIC_RELAXED);
    __atomic_add_fetch(&hlsim_shm->dev[dev].page_faults, 1,
                       __ATOMIC_RELAXED);
    n = snprintf(line, sizeof(line), "pid %d dev%d %s 0x%llx size %llu CS "
                 "%llu: %s\n", (int)getpid(), dev, what,
                 (unsigned long long)addr, (unsigned long long)size,
                 (unsigned long long)seq,
                 (mode < 0) ? "EFAULT" :
                 (mode == HLSIM_PF_RESET) ? "hard reset" :
                 (mode == HLSIM_PF_STALL) ? "engine stopped" :
                 "transfer dropped");
    hlsim_log("dev%d: MMU page fault: %.*s", dev, n - 1, line);
    hlsim_notify_fault(dev, addr, seq);
    snprintf(path, sizeof(path), "%s/page-faults", hlsim_cfg.root);
    fd = hlsim_real.open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
                         0666);
    if ((fd >= 0) && (write(fd, line, n) != n)) {
        hlsim_log("cannot record the page fault in %s: %m", path);
    }
    if (fd >= 0) {
        hlsim_real.close(fd);
    }
    return mode;
}

/*
 * The engine model (HLSIM_DMA_GBPS): an engine moves one job at a time at
 * the configured rate, plus HLSIM_DMA_JOB_NS per job. A job submitted at
 * @a now_ns ends at max(now, the engine's clock) + bytes / rate + cost,
 * and the engine's clock moves there. Pure arithmetic on virtual time,
 * whatever the host's copy took: the caller reports the completion once
 * the data has moved and the wall clock has passed that end.
 */
uint64_t hlsim_engine_model_end(uint64_t *free_ns, uint64_t now_ns,
                                uint64_t bytes)
{
    uint64_t start = HLSIM_MAX(now_ns, *free_ns);

    *free_ns = start + (uint64_t)(bytes / hlsim_cfg.dma_gbps) +
               hlsim_cfg.dma_job_ns;
    return *free_ns;
}

/* A synchronous PDMA copy waits for the model's end of its transfer */
static void hlsim_throttle(uint64_t start_ns, uint64_t bytes)
{
    uint64_t        want, now;
    struct timespec ts;

    if (hlsim_cfg.dma_gbps <= 0) {
        return;
    }
    want = start_ns + (uint64_t)(bytes / hlsim_cfg.dma_gbps);
    now  = hlsim_now_ns();
    if (want > now) {
        ts.tv_sec  = (want - now) / 1000000000ULL;
        ts.tv_nsec = (want - now) % 1000000000ULL;
        nanosleep(&ts, NULL);
    }
}

/* Count and log a DMA that went through a stale pin (one per DMA) */
static void hlsim_dma_stale(int dev, const char *what, uint64_t dst,
                            uint64_t dst_stale, uint64_t src,
                            uint64_t src_stale, uint64_t size)
{
    char name[64];

    if (dst_stale != 0) {
        snprintf(name, sizeof(name), "%s dst", what);
        hlsim_pin_stale_dma(dev, name, dst, dst_stale, size, 1);
    } else if (src_stale != 0) {
        snprintf(name, sizeof(name), "%s src", what);
        hlsim_pin_stale_dma(dev, name, src, src_stale, size, 0);
    }
}

/*
 * One LIN_DMA; 0, or the outcome of a page fault (hlsim_pf_mode_t + 1).
 * Moves the data at once: the engine model (hlsim_engine_model_end)
 * decides when the job completes.
 */
static int hlsim_lin_dma(hlsim_ctx_t *ctx, const struct hlsim_pkt_lin_dma *p,
                         uint64_t seq, uint64_t *bytes)
{
    static __thread hlsim_segs_t src, dst;
    int      gaudi1 = hlsim_cfg.dev[ctx->dev].asic == HLSIM_GAUDI1;
    int      memset_op = !!(p->ctl & HLSIM_PKT_LIN_DMA_MEMSET);
    uint64_t dst_addr = p->dst_addr, bad = 0, dst_stale, src_stale = 0;
    int      ok;

    if (gaudi1) {
        dst_addr &= HLSIM_PKT_G1_DST_ADDR_MASK;
    }
    pthread_mutex_lock(&hlsim_lock);
    ok = hlsim_translate(ctx, dst_addr, p->tsize, &dst, 1, &dst_stale);
    if (!ok) {
        bad = dst_addr;
    } else if (!memset_op && !(ok = hlsim_translate(ctx, p->src_addr,
                                                    p->tsize, &src, 0,
                                                    &src_stale))) {
        bad = p->src_addr;
    }
    pthread_mutex_unlock(&hlsim_lock);
    if (!ok) {
        return 1 + hlsim_page_fault(ctx->dev, (bad == dst_addr) ?
                                    "LIN_DMA dst" : "LIN_DMA src", bad,
                                    p->tsize, seq);
    }
    hlsim_dma_stale(ctx->dev, "LIN_DMA", dst_addr, dst_stale, p->src_addr,
                    src_stale, p->tsize);
    if (memset_op) {
        hlsim_fill_segs(&dst, p->src_addr);
    } else {
        hlsim_copy_segs(&dst, &src);
    }
    __atomic_add_fetch(&hlsim_counters[HLSIM_COUNTER_DMA_BYTES], p->tsize,
                       __ATOMIC_RELAXED);
    *bytes += p->tsize;
    return 0;
}

/*
 * What a page fault does to the job: a hard reset, the engine stops on the
 * job (hlsim_cs.c: busy until the CS timeout), or nothing (the transfer is
 * gone, the job goes on). The reset is delayed (HL_DRV_RESET_DELAY, K61
 * gaudi2/gaudi2.c:8583; K612 gaudi2/gaudi2.c:10264-10270) and blocks CS
 * completions only after the delay (K612 common/device.c:1728-1736): the
 * engine, not stopped, completes the CS first, which WAIT_CS reports
 * COMPLETED, and the reset follows (HLSIM_PAGE_FAULT_CS=completed, the
 * default: the outcome a module cannot take for a failure); or the reset
 * comes first and aborts it (=aborted).
 */
static int hlsim_fault_outcome(hlsim_ctx_t *ctx, int pf, int *abort)
{
    switch (pf - 1) {
    case HLSIM_PF_RESET:
        if (!hlsim_cfg.pf_cs_aborted) {
            *abort = HLSIM_CS_RESET_AFTER;   /* the job goes on */
            return 0;
        }
        hlsim_dev_reset(ctx->dev, hlsim_cfg.reset_ms,
                        GAUDI_HL_DEVICE_STATUS_IN_RESET);
        *abort = HLSIM_CS_ABORTED;
        return 1;
    case HLSIM_PF_STALL:
        *abort = HLSIM_CS_STALL;
        return 1;
    default:
        return 0;
    }
}

void hlsim_dma_run_job(hlsim_ctx_t *ctx, hlsim_job_t *job, int *abort)
{
    static __thread hlsim_segs_t cbv;
    uint8_t                     *cb = job->cb_copy, *tmp = NULL;
    uint32_t                     pos = 0, ctl, size = job->cb_size, psz;
    struct hlsim_pkt_lin_dma     pkt;
    unsigned                     id;
    int                          i, ok;
    uint64_t                     off, stale = 0;

    if (cb == NULL) {
        /* Gaudi2: the QMAN fetches the CB through the MMU at run time */
        tmp = malloc(size ? size : 1);
        pthread_mutex_lock(&hlsim_lock);
        ok = (tmp != NULL) && hlsim_translate(ctx, job->cb_va, size, &cbv,
                                              0, &stale);
        for (i = 0, off = 0; ok && (i < cbv.n); off += cbv.s[i].len, i++) {
            memcpy(tmp + off, cbv.s[i].p, cbv.s[i].len);
        }
        pthread_mutex_unlock(&hlsim_lock);
        if (ok && (stale != 0)) {
            hlsim_dma_stale(ctx->dev, "CB fetch", 0, 0, job->cb_va, stale,
                            size);
        }
        if (!ok) {
            /* the QMAN's fetch faults: nothing of the CB runs */
            free(tmp);
            if (!hlsim_fault_outcome(ctx, 1 + hlsim_page_fault(ctx->dev,
                                     "CB fetch", job->cb_va, size,
                                     job->seq), abort)) {
                *abort = HLSIM_CS_ABORTED;   /* drop: the emulator's choice */
            }
            return;
        }
        cb = tmp;
    }
    while (pos < size) {
        if (size - pos < 8) {
            goto bad;
        }
        memcpy(&ctl, cb + pos + 4, 4);
        id = hlsim_pkt_opcode(ctl);
        switch (id) {
        case HLSIM_PKT_LIN_DMA:
            psz = HLSIM_PKT_SIZE_LIN_DMA;
            if (size - pos < psz) {
                goto bad;
            }
            memcpy(&pkt, cb + pos, sizeof(pkt));
            if (hlsim_fault_outcome(ctx, hlsim_lin_dma(ctx, &pkt, job->seq,
                                                       &job->bytes),
                                    abort)) {
                goto out;
            }
            break;
        case HLSIM_PKT_MSG_LONG:
            psz = HLSIM_PKT_SIZE_LONG;
            break;
        case HLSIM_PKT_NOP:
        case HLSIM_PKT_MSG_SHORT:
        case HLSIM_PKT_WREG_32:
        case HLSIM_PKT_FENCE:
        case HLSIM_PKT_ARB_POINT:
        case HLSIM_PKT_REPEAT:
            psz = HLSIM_PKT_SIZE_SHORT;
            break;
        case HLSIM_PKT_LOAD_AND_EXE:
            psz = HLSIM_PKT_SIZE_LONG;
            break;
        default:
            hlsim_log("dev%d: unsupported packet opcode 0x%x at CB offset %u;"
                      " CS %llu aborted", ctx->dev, id, pos,
                      (unsigned long long)job->seq);
            *abort = HLSIM_CS_ABORTED;
            goto out;
        }
        if (size - pos < psz) {
            goto bad;
        }
        pos += psz;
    }
    goto out;
bad:
    hlsim_log("dev%d: truncated packet at CB offset %u; CS %llu aborted",
              ctx->dev, pos, (unsigned long long)job->seq);
    *abort = HLSIM_CS_ABORTED;
out:
    free(tmp);
}

int hlsim_va_imported(int fd, uint64_t va, uint64_t len)
{
    hlsim_file_t *f;
    hlsim_map_t  *m;
    int           rc;

    rc = hlsim_init();
    if (rc) {
        return rc;
    }
    pthread_mutex_lock(&hlsim_lock);
    f = hlsim_fd_get(fd);
    if ((f == NULL) || (f->kind != HLSIM_F_COMPUTE) || (f->ctx == NULL)) {
        rc = -EBADF;
    } else {
        m  = hlsim_map_find(f->ctx, va, len);
        rc = (m != NULL) && (m->kind == HLSIM_MAP_IMPORT);
    }
    pthread_mutex_unlock(&hlsim_lock);
    return rc;
}

int hlsim_pdma_fault(int fd, uint64_t va, uint64_t len)
{
    hlsim_file_t *f;
    int           dev = -1;

    if (hlsim_init()) {
        return -EBADF;
    }
    pthread_mutex_lock(&hlsim_lock);
    f = hlsim_fd_get(fd);
    if ((f != NULL) && (f->kind == HLSIM_F_COMPUTE) && (f->ctx != NULL)) {
        dev = f->dev;
    }
    pthread_mutex_unlock(&hlsim_lock);
    if (dev < 0) {
        return -EBADF;
    }
    (void)hlsim_page_fault(dev, "PDMA copy", va, len, 0);
    return 0;
}

int hlsim_pdma_copy(int fd, uint64_t dst, uint64_t src, uint64_t size)
{
    static __thread hlsim_segs_t sv, dv;
    uint64_t      t0 = hlsim_now_ns();
    hlsim_file_t *f;
    uint64_t      dst_stale, src_stale = 0;
    int           rc, err, ok;

    rc = hlsim_init();
    if (rc) {
        return rc;
    }
    if ((err = hlsim_fault_hit("pdma"))) {
        return -err;
    }
    pthread_mutex_lock(&hlsim_lock);
    f = hlsim_fd_get(fd);
    if ((f == NULL) || (f->kind != HLSIM_F_COMPUTE) || (f->ctx == NULL)) {
        pthread_mutex_unlock(&hlsim_lock);
        return -EBADF;
    }
    if (!hlsim_dev_operational(f->dev)) {
        pthread_mutex_unlock(&hlsim_lock);
        return -EIO;
    }
    ok = hlsim_translate(f->ctx, dst, size, &dv, 1, &dst_stale) &&
         hlsim_translate(f->ctx, src, size, &sv, 0, &src_stale);
    pthread_mutex_unlock(&hlsim_lock);
    if (!ok) {
        /* reported to the caller, whatever HLSIM_PAGE_FAULT says */
        (void)hlsim_page_fault(f->dev, "PDMA copy", dst, size, 0);
        return -EFAULT;
    }
    /* the copy succeeds: hardware moves the old pages' data */
    hlsim_dma_stale(f->dev, "PDMA copy", dst, dst_stale, src, src_stale,
                    size);
    hlsim_copy_segs(&dv, &sv);
    __atomic_add_fetch(&hlsim_counters[HLSIM_COUNTER_DMA_BYTES], size,
                       __ATOMIC_RELAXED);
    hlsim_throttle(t0, size);
    return 0;
}

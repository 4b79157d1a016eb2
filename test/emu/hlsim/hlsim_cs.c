/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * HL_IOCTL_CS and HL_IOCTL_WAIT_CS (facts 5.2-5.4). Jobs run on one worker
 * thread per (context, DMA engine), one at a time, taken in turn from the
 * engine's streams (queues), in order per queue, asynchronously.
 */

#include "hlsim_int.h"
#include "hlsim_packets.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>

void hlsim_cb_release_job(hlsim_ctx_t *ctx, hlsim_cb_t *cb);

/* contexts of this process (for reset aborts and CB munmap) */
hlsim_ctx_t *hlsim_ctx_list[HLSIM_MAX_CTX];

#define HLSIM_CS_TYPE_FLAGS \
    (HL_CS_FLAGS_SIGNAL | HL_CS_FLAGS_WAIT | HL_CS_FLAGS_COLLECTIVE_WAIT | \
     HL_CS_FLAGS_STAGED_SUBMISSION | HL_CS_FLAGS_ENCAP_SIGNALS | \
     HL_CS_FLAGS_RESERVE_SIGNALS_ONLY | HL_CS_FLAGS_UNRESERVE_SIGNALS_ONLY | \
     HL_CS_FLAGS_ENGINE_CORE_COMMAND)

void hlsim_ctx_register(hlsim_ctx_t *ctx, int add)
{
    unsigned i;

    for (i = 0; i < sizeof(hlsim_ctx_list) / sizeof(hlsim_ctx_list[0]); i++) {
        if (add && (hlsim_ctx_list[i] == NULL)) {
            hlsim_ctx_list[i] = ctx;
            return;
        } else if (!add && (hlsim_ctx_list[i] == ctx)) {
            hlsim_ctx_list[i] = NULL;
            return;
        }
    }
}

static void hlsim_cs_outcome_push(hlsim_ctx_t *ctx, const hlsim_cs_t *cs);

static uint64_t hlsim_gen(int dev)
{
    return __atomic_load_n(&hlsim_shm->dev[dev].reset_gen, __ATOMIC_ACQUIRE);
}

/* Finish one job of a CS; lock held */
static void hlsim_job_done(hlsim_ctx_t *ctx, hlsim_job_t *job, int aborted)
{
    hlsim_cs_t *cs = &ctx->cs_ring[job->seq & (hlsim_cfg.dev[ctx->dev].
                                               max_pending - 1)];

    if (job->cb != NULL) {
        hlsim_cb_release_job(ctx, job->cb);
    }
    free(job->cb_copy);
    if ((cs->seq != job->seq) || (cs->state != HLSIM_CS_PENDING)) {
        free(job);
        return;   /* already aborted by a reset */
    }
    if (aborted) {
        cs->fail = aborted;
    }
    if (--cs->jobs_left == 0) {
        if (hlsim_gen(ctx->dev) != cs->gen) {
            cs->fail = HLSIM_CS_ABORTED;
        }
        cs->state   = cs->fail ? cs->fail : HLSIM_CS_DONE;
        /* the engine model's time, as the device's timestamp would be */
        cs->done_ns = job->end_ns ? job->end_ns : hlsim_now_ns();
        ctx->in_flight--;
        hlsim_counters[(cs->state == HLSIM_CS_DONE) ?
                       HLSIM_COUNTER_CS_COMPLETED :
                       HLSIM_COUNTER_CS_ABORTED]++;
        pthread_cond_broadcast(&hlsim_cond);
    }
    free(job);
}

typedef struct {
    hlsim_ctx_t *ctx;
    int          e;
} hlsim_worker_arg_t;

static void hlsim_job_append(hlsim_queue_t *q, hlsim_job_t *job)
{
    job->next = NULL;
    if (q->tail != NULL) {
        q->tail->next = job;
    } else {
        q->head = job;
    }
    q->tail = job;
}

static hlsim_engine_t *hlsim_queue_engine(hlsim_ctx_t *ctx, int qi)
{
    return &ctx->engines[qi / HLSIM_ENGINE_STREAMS];
}

/*
 * Run a job, and with HLSIM_ENGINE_CLOCK count the time it took: how busy
 * the emulated engines were, and how fast they copied while busy, are the
 * measure of what the instrument itself can deliver (docs/hlsim.md).
 */
static void hlsim_queue_exec(hlsim_ctx_t *ctx, hlsim_job_t *job, int *abort)
{
    uint64_t start, ns;

    __atomic_add_fetch(&hlsim_counters[HLSIM_COUNTER_JOBS], 1,
                       __ATOMIC_RELAXED);
    if (!hlsim_cfg.engine_clock || (hlsim_cfg.dma_gbps > 0)) {
        hlsim_dma_run_job(ctx, job, abort);   /* the model counts its own */
        return;
    }
    start = hlsim_now_ns();
    hlsim_dma_run_job(ctx, job, abort);
    ns    = hlsim_now_ns() - start;
    __atomic_add_fetch(&hlsim_counters[HLSIM_COUNTER_ENGINE_NS], ns,
                       __ATOMIC_RELAXED);
}

/* Per-engine counters of a job engine @a e ran: tests see how copies were
 * spread over the engines */
_Static_assert(HLSIM_MAX_ENGINES == 2, "one counter pair per engine");

static void hlsim_engine_count(int e, uint64_t bytes)
{
    __atomic_add_fetch(&hlsim_counters[HLSIM_COUNTER_ENGINE0_JOBS + e], 1,
                       __ATOMIC_RELAXED);
    __atomic_add_fetch(&hlsim_counters[HLSIM_COUNTER_ENGINE0_BYTES + e],
                       bytes, __ATOMIC_RELAXED);
}

/* The first stream of engine @a e with a job, from its round-robin start */
static int hlsim_engine_pick(hlsim_ctx_t *ctx, int e)
{
    hlsim_engine_t *eng = &ctx->engines[e];
    unsigned        i;
    int             qi;

    for (i = 0; i < HLSIM_ENGINE_STREAMS; i++) {
        qi = e * HLSIM_ENGINE_STREAMS +
             (eng->next + i) % HLSIM_ENGINE_STREAMS;
        if (ctx->queues[qi].head != NULL) {
            return qi;
        }
    }
    return -1;
}

/*
 * Run the job at the head of queue @a qi, in order: one job of an engine
 * at a time, whichever of its streams it comes from, on the engine's
 * worker. hlsim_lock held; dropped while the job moves data.
 */
static void hlsim_queue_run_head(hlsim_ctx_t *ctx, int qi)
{
    hlsim_queue_t  *q   = &ctx->queues[qi];
    hlsim_engine_t *eng = hlsim_queue_engine(ctx, qi);
    hlsim_job_t    *job = q->head;
    hlsim_cs_t     *cs;
    uint64_t        t0 = job->arrive_ns, end;
    int             abort, fail;

    q->head = job->next;
    if (q->head == NULL) {
        q->tail = NULL;
    }
    eng->next = (qi + 1) % HLSIM_ENGINE_STREAMS;
    cs    = &ctx->cs_ring[job->seq & (hlsim_cfg.dev[ctx->dev].
                                       max_pending - 1)];
    fail  = (cs->seq == job->seq) ? cs->fail : HLSIM_CS_ABORTED;
    abort = 0;
    if (eng->stop || fail || (cs->state != HLSIM_CS_PENDING) ||
        (hlsim_gen(ctx->dev) != cs->gen)) {
        abort = fail ? fail : HLSIM_CS_ABORTED;   /* do not execute */
    } else if (cs->stall) {
        abort = HLSIM_CS_STALL;   /* injected DMA error or hang */
        hlsim_log("dev%d: DMA engine %d %s on CS %llu: the engine stops",
                  ctx->dev, qi / HLSIM_ENGINE_STREAMS,
                  (cs->stall == HLSIM_STALL_HANG) ? "hangs (injected CS "
                  "timeout)" : "error", (unsigned long long)job->seq);
    } else {
        eng->busy = 1;
        pthread_mutex_unlock(&hlsim_lock);
        hlsim_queue_exec(ctx, job, &abort);
        hlsim_engine_count(qi / HLSIM_ENGINE_STREAMS, job->bytes);
        pthread_mutex_lock(&hlsim_lock);
        eng->busy = 0;
        if (hlsim_engine_pick(ctx, qi / HLSIM_ENGINE_STREAMS) >= 0) {
            pthread_cond_signal(&eng->cond);   /* the engine is free again */
        }
    }
    if (abort == HLSIM_CS_RESET_AFTER) {
        /* a page fault: the CS completes, the hard reset follows
         * (hlsim_dma.c hlsim_fault_outcome) */
        hlsim_job_done(ctx, job, 0);
        pthread_mutex_unlock(&hlsim_lock);
        hlsim_dev_reset(ctx->dev, hlsim_cfg.reset_ms,
                        GAUDI_HL_DEVICE_STATUS_IN_RESET);
        pthread_mutex_lock(&hlsim_lock);
        return;
    }
    if ((hlsim_cfg.dma_gbps > 0) && (abort != HLSIM_CS_STALL)) {
        /* engine model: the data has moved, the job completes at the end
         * of its model time (the worker reports it, or a poll) */
        end = eng->free_ns;
        job->end_ns = hlsim_engine_model_end(&eng->free_ns, t0, job->bytes);
        if (hlsim_cfg.engine_clock) {
            /* busy for the job's model time */
            __atomic_add_fetch(&hlsim_counters[HLSIM_COUNTER_ENGINE_NS],
                               job->end_ns - HLSIM_MAX(t0, end),
                               __ATOMIC_RELAXED);
        }
        job->abort = abort;
        hlsim_job_append(&eng->done, job);
        return;
    }
    if (abort == HLSIM_CS_STALL) {
        /* the engine keeps the job and runs nothing more (the worker) */
        eng->held     = job;
        eng->held_gen = hlsim_gen(ctx->dev);
        eng->tdr_done = 0;
        pthread_cond_signal(&eng->cond);
        return;
    }
    hlsim_job_done(ctx, job, abort);
}

/* Wait on the engine's condition until @a until_ns (0: no limit) */
static void hlsim_engine_wait(hlsim_engine_t *eng, uint64_t until_ns)
{
    struct timespec ts;
    uint64_t        now = hlsim_now_ns(), d;

    if (until_ns == 0) {
        pthread_cond_wait(&eng->cond, &hlsim_lock);
        return;
    }
    if (until_ns <= now) {
        return;
    }
    d = until_ns - now;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec  += (ts.tv_nsec + d) / 1000000000ULL;
    ts.tv_nsec  = (ts.tv_nsec + d) % 1000000000ULL;
    pthread_cond_timedwait(&eng->cond, &hlsim_lock, &ts);
}

/*
 * The CS timeout (TDR) of a CS that stopped its engine, lock held. With
 * reset_on_lockup the device hard-resets (K612
 * common/command_submission.c:843-846), whose rollback ends the CS with
 * ETIMEDOUT (:783-784). Without, the TDR only marks the CS timed out and
 * the device NEEDS_RESET (:838-842, K61 :818-822): the CS stays in flight,
 * holding its context (:921, released in cs_do_release :803), so a
 * blocked WAIT_CS runs to its own timeout and reports BUSY (:2688-2717,
 * 3199-3213), later ones EBUSY (:3733-3734), and the last close finds the
 * context in use (hlsim_ioctl.c). Returns 1 if the lock was dropped.
 */
static int hlsim_engine_tdr(hlsim_ctx_t *ctx, hlsim_engine_t *eng,
                            hlsim_cs_t *cs)
{
    int dev = ctx->dev;

    hlsim_log("dev%d: CS %llu timed out after %.1f s (%s)%s", dev,
              (unsigned long long)cs->seq,
              (cs->tdr_ns - cs->submit_ns) / 1e9,
              (cs->stall == HLSIM_STALL_HANG) ? "fault cs_timeout" :
              "timeout_locked",
              hlsim_reset_on_lockup() ? ", hard reset" : "");
    eng->tdr_done = 1;
    cs->fail      = HLSIM_CS_TIMEDOUT;   /* what the rollback reports */
    if (hlsim_reset_on_lockup()) {
        pthread_mutex_unlock(&hlsim_lock);
        hlsim_dev_reset(dev, hlsim_cfg.reset_ms,
                        GAUDI_HL_DEVICE_STATUS_IN_RESET);
        pthread_mutex_lock(&hlsim_lock);
        return 1;
    }
    hlsim_dev_needs_reset(dev);   /* the engine stays stopped */
    return 0;
}

/*
 * A stopped engine (lock held): its CS stays busy until the CS timeout or
 * a reset, which restarts the engine and ends the held job
 */
static void hlsim_engine_stopped(hlsim_ctx_t *ctx, hlsim_engine_t *eng)
{
    hlsim_job_t    *job = eng->held;
    hlsim_cs_t     *cs  = &ctx->cs_ring[job->seq & (hlsim_cfg.dev[ctx->dev].
                                                    max_pending - 1)];
    uint64_t        now = hlsim_now_ns(), tdr;

    if (eng->stop || (hlsim_gen(ctx->dev) != eng->held_gen) ||
        (cs->seq != job->seq) ||
        ((cs->state != HLSIM_CS_PENDING) && !eng->tdr_done)) {
        eng->held = NULL;
        hlsim_job_done(ctx, job, HLSIM_CS_ABORTED);
        pthread_cond_signal(&eng->cond);
        return;
    }
    tdr = cs->tdr_ns;
    if (!eng->tdr_done && (now >= tdr) && hlsim_engine_tdr(ctx, eng, cs)) {
        return;
    }
    /* look again at the deadline, and every 10 ms for a reset */
    hlsim_engine_wait(eng, HLSIM_MIN(eng->tdr_done ? UINT64_MAX : tdr,
                                     now + 10000000ULL));
}

/*
 * Engine model: report the jobs whose model time has passed (all of them
 * with @a all), in order. Returns the end of the next one, or 0. Lock held.
 */
static uint64_t hlsim_engine_report(hlsim_ctx_t *ctx, hlsim_engine_t *eng,
                                    int all)
{
    uint64_t     now = hlsim_now_ns();
    hlsim_job_t *job;

    while (((job = eng->done.head) != NULL) &&
           (all || (job->end_ns <= now))) {
        eng->done.head = job->next;
        if (eng->done.head == NULL) {
            eng->done.tail = NULL;
        }
        hlsim_job_done(ctx, job, job->abort);
    }
    return (job != NULL) ? job->end_ns : 0;
}

static void *hlsim_worker(void *arg)
{
    hlsim_worker_arg_t *wa  = arg;
    hlsim_ctx_t        *ctx = wa->ctx;
    int                 e   = wa->e;
    hlsim_engine_t     *eng = &ctx->engines[e];
    int                 qi;

    uint64_t            next;

    free(wa);
    /* the engine model sleeps until completion times: no timer slack */
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    pthread_mutex_lock(&hlsim_lock);
    for (;;) {
        next = hlsim_engine_report(ctx, eng, eng->stop);
        if (eng->held != NULL) {
            hlsim_engine_stopped(ctx, eng);
            continue;
        }
        qi = hlsim_engine_pick(ctx, e);
        if (((qi < 0) || eng->busy) && !eng->stop) {
            /* sleep until a job comes or the next completion is due */
            hlsim_engine_wait(eng, next);
            continue;
        }
        if (qi < 0) {
            break;
        }
        hlsim_queue_run_head(ctx, qi);
    }
    hlsim_engine_report(ctx, eng, 1);
    pthread_mutex_unlock(&hlsim_lock);
    return NULL;
}

static int hlsim_queue_push(hlsim_ctx_t *ctx, int qi, hlsim_job_t *job)
{
    hlsim_queue_t      *q   = &ctx->queues[qi];
    hlsim_engine_t     *eng = hlsim_queue_engine(ctx, qi);
    hlsim_worker_arg_t *wa;

    if (!eng->started) {
        wa = malloc(sizeof(*wa));
        if (wa == NULL) {
            return -ENOMEM;
        }
        wa->ctx = ctx;
        wa->e   = qi / HLSIM_ENGINE_STREAMS;
        pthread_cond_init(&eng->cond, NULL);
        if (pthread_create(&eng->thread, NULL, hlsim_worker, wa)) {
            pthread_cond_destroy(&eng->cond);
            free(wa);
            return -ENOMEM;
        }
        eng->started = 1;
    }
    hlsim_job_append(q, job);
    pthread_cond_signal(&eng->cond);
    return 0;
}

static hlsim_cb_t *hlsim_cb_lookup(hlsim_ctx_t *ctx, uint64_t handle)
{
    hlsim_cb_t *cb;

    if ((handle >> GAUDI_HL_MMAP_TYPE_SHIFT) != GAUDI_HL_MMAP_TYPE_CB) {
        return NULL;
    }
    for (cb = ctx->cbs; cb != NULL; cb = cb->next) {
        if ((cb->id == (uint32_t)(handle >> 12)) && !cb->destroyed) {
            return cb;
        }
    }
    return NULL;
}

/* Gaudi1 user CB parser (facts 5.3): EINVAL/EPERM like gaudi_validate_cb */
static int hlsim_gaudi1_validate(const uint8_t *cb, uint32_t size)
{
    static const uint8_t psize[16] = {
        [HLSIM_PKT_WREG_32] = 8, [HLSIM_PKT_WREG_BULK] = 8,
        [HLSIM_PKT_MSG_LONG] = 16, [HLSIM_PKT_MSG_SHORT] = 8,
        [HLSIM_PKT_CP_DMA] = 16, [HLSIM_PKT_REPEAT] = 8,
        [HLSIM_PKT_MSG_PROT] = 16, [HLSIM_PKT_FENCE] = 8,
        [HLSIM_PKT_LIN_DMA] = 24, [HLSIM_PKT_NOP] = 8, [HLSIM_PKT_STOP] = 8,
        [HLSIM_PKT_ARB_POINT] = 8, [HLSIM_PKT_WAIT] = 8,
        [HLSIM_PKT_LOAD_AND_EXE] = 16,
    };
    uint32_t pos = 0, ctl, w0;
    unsigned id;

    while (pos < size) {
        if (size - pos < 8) {
            return -EINVAL;
        }
        memcpy(&w0, cb + pos, 4);
        memcpy(&ctl, cb + pos + 4, 4);
        id = hlsim_pkt_opcode(ctl);
        if ((id >= 16) || (psize[id] == 0)) {
            return -EINVAL;   /* invalid packet id */
        }
        if (psize[id] > size - pos) {
            return -EINVAL;   /* packets must tile the CB */
        }
        switch (id) {
        case HLSIM_PKT_MSG_PROT:
        case HLSIM_PKT_CP_DMA:
        case HLSIM_PKT_STOP:
        case HLSIM_PKT_WREG_BULK:
            return -EPERM;
        case HLSIM_PKT_WAIT:
            return -EINVAL;
        case HLSIM_PKT_LOAD_AND_EXE:
            if (w0 & 1) {
                return -EPERM;   /* DST=1 */
            }
            break;
        case HLSIM_PKT_LIN_DMA:
            if (!(ctl & HLSIM_PKT_LIN_DMA_LIN)) {
                return -EINVAL;   /* emulator: only linear DMA */
            }
            break;
        default:
            break;
        }
        pos += psize[id];
    }
    return 0;
}

/* Gaudi2: the CB must lie in a user-accessible range (facts 5.4) */
static int hlsim_gaudi2_cb_range_ok(int dev, uint64_t a, uint64_t len)
{
    hlsim_devcfg_t *d = &hlsim_cfg.dev[dev];
    uint64_t        e = a + len;
    uint64_t        du = d->dram_phys_base + d->dram_user_off;

#define HLSIM_IN(_lo, _hi) (((a) >= (_lo)) && (e <= (_hi)) && (e >= (a)))
    return HLSIM_IN(d->host_va_start, d->host_va_end) ||
           HLSIM_IN(d->huge_va_start, d->huge_va_end) ||
           HLSIM_IN(d->dram_va_start, d->dram_va_end) ||
           HLSIM_IN(du, du + d->dram_size) ||
           (d->sram_size && HLSIM_IN(d->sram_base,
                                     d->sram_base + d->sram_size));
#undef HLSIM_IN
}

/*
 * Whether a DMA engine error resets the device. Gaudi2 on accel: the PDMA
 * core and QM events ask for a compute reset, which Gaudi2 makes hard
 * (K612 include/gaudi2/gaudi2_async_ids_map_extended.h:2520-2521,
 * 2566-2567; gaudi2/gaudi2.c:10246-10277). Linux 6.1 Gaudi2: .reset = 0
 * for them (K61 :2514-2515, 2560-2563). Gaudi1, both kernels: the
 * DMA_QM/DMA_CORE events only notify (K612 gaudi/gaudi.c:7768, 7780-7786;
 * K61 :7850, 7862-7868) and with stop_on_err the QMAN stays stopped
 * (K612 common/habanalabs_drv.c:395, gaudi/gaudi.c:6995-6996): the CS is
 * busy until the CS timeout.
 */
static int hlsim_dma_error_resets(int dev)
{
    return (hlsim_cfg.dev[dev].asic != HLSIM_GAUDI1) && !hlsim_cfg.legacy;
}

/*
 * The TDR of a CS the fault cs_timeout hangs, after its submission: not at
 * once, so that a waiter that waits from the submission on sees what it
 * would on the device, where timeout_locked is seconds (emulator's choice)
 */
#define HLSIM_HANG_TDR_NS 100000000ULL

static void hlsim_drop(hlsim_ctx_t *ctx, int which)
{
    hlsim_shdev_t *sd = &hlsim_shm->dev[ctx->dev];
    uint64_t      *t[] = { &sd->drop_in_flight, &sd->drop_validation,
                           &sd->drop_parsing, &sd->drop_in_reset };
    uint64_t      *c[] = { &ctx->drop_in_flight, &ctx->drop_validation,
                           &ctx->drop_parsing, &ctx->drop_in_reset };

    __atomic_add_fetch(t[which], 1, __ATOMIC_RELAXED);
    (*c[which])++;
}

int hlsim_cs(hlsim_file_t *f, union hl_cs_args *a)
{
    hlsim_ctx_t        *ctx = f->ctx;
    hlsim_devcfg_t     *d   = &hlsim_cfg.dev[f->dev];
    struct hl_cs_chunk *ch  = NULL;
    hlsim_job_t       **jobs = NULL;
    hlsim_cs_t         *cs;
    uint32_t            n   = a->in.num_chunks_execute, i;
    uint64_t            seq;
    int                 rc, err, fail = 0, reset = 0, stall = 0;

    if ((err = hlsim_fault_hit("cs"))) {
        return -err;
    }
    if (a->in.pad[0] | a->in.pad[1] | a->in.pad[2] | a->in.pad[3]) {
        return -EINVAL;
    }
    if (!hlsim_dev_operational(f->dev)) {
        pthread_mutex_lock(&hlsim_lock);
        hlsim_drop(ctx, 3);
        pthread_mutex_unlock(&hlsim_lock);
        return -EBUSY;
    }
    if ((a->in.cs_flags & HLSIM_CS_TYPE_FLAGS) || a->in.num_chunks_restore) {
        return -EINVAL;   /* only plain execute CSs are emulated */
    }
    if ((n == 0) || (n > HL_MAX_JOBS_PER_CS)) {
        return -EINVAL;
    }
    ch = malloc(n * sizeof(*ch));
    if (ch == NULL) {
        return -ENOMEM;
    }
    if (hlsim_copy_from_user(ch, a->in.chunks_execute, n * sizeof(*ch))) {
        free(ch);
        return -EFAULT;
    }
    if (d->asic == HLSIM_GAUDI3) {
        free(ch);
        return -EINVAL;   /* no user-visible CS queue (facts 6) */
    }
    jobs = calloc(n, sizeof(*jobs));
    if (jobs == NULL) {
        free(ch);
        return -ENOMEM;
    }

    pthread_mutex_lock(&hlsim_lock);
    if (ctx->cs_ring == NULL) {
        ctx->cs_ring = calloc(d->max_pending, sizeof(*ctx->cs_ring));
        if (ctx->cs_ring == NULL) {
            rc = -ENOMEM;
            goto out;
        }
    }
    /* in-flight window: slot still busy -> EAGAIN, args untouched */
    seq = ctx->next_seq;
    cs  = &ctx->cs_ring[seq & (d->max_pending - 1)];
    if (cs->state == HLSIM_CS_PENDING) {
        hlsim_drop(ctx, 0);
        rc = -EAGAIN;
        goto out;
    }
    for (i = 0; i < n; i++) {
        hlsim_job_t *job = calloc(1, sizeof(*job));
        uint32_t     q   = ch[i].queue_index;

        if ((jobs[i] = job) == NULL) {
            rc = -ENOMEM;
            goto out;
        }
        job->seq       = seq;
        job->cb_size   = ch[i].cb_size;
        job->arrive_ns = hlsim_now_ns();
        if (d->asic == HLSIM_GAUDI2) {
            /* PDMA_0_0, PDMA_0_1, PDMA_1_0 only; user CBs only */
            if (((q != 0) && (q != 1) && (q != 4)) ||
                !(ch[i].cs_chunk_flags & HL_CS_CHUNK_FLAGS_USER_ALLOC_CB)) {
                hlsim_drop(ctx, 1);
                rc = -EINVAL;
                goto out;
            }
            /* a CB outside the user ranges: EFAULT, counted as a parsing
             * drop (K612 gaudi2/gaudi2.c:6794-6838,
             * common/command_submission.c:1623-1630) */
            if (!hlsim_gaudi2_cb_range_ok(f->dev, ch[i].cb_handle,
                                          ch[i].cb_size)) {
                hlsim_drop(ctx, 2);
                rc = -EFAULT;
                goto out;
            }
            job->cb_va = ch[i].cb_handle;
        } else {
            /* Gaudi1 external queues 0..7 with a CB handle (facts 5.3) */
            hlsim_cb_t *cb = hlsim_cb_lookup(ctx, ch[i].cb_handle);

            if ((q > 7) || (cb == NULL) || (ch[i].cb_size < 8) ||
                (ch[i].cb_size > cb->size)) {
                hlsim_drop(ctx, 1);
                rc = -EINVAL;
                goto out;
            }
            /* the CB is copied at submit: reusable right away */
            job->cb_copy = malloc(ch[i].cb_size);
            if (job->cb_copy == NULL) {
                rc = -ENOMEM;
                goto out;
            }
            memcpy(job->cb_copy, cb->mem, ch[i].cb_size);
            rc = hlsim_gaudi1_validate(job->cb_copy, ch[i].cb_size);
            if (rc) {
                hlsim_drop(ctx, 2);
                goto out;
            }
        }
    }

    /*
     * Accepted. A CS timeout asks for a reset when reset_on_lockup is set
     * (common/command_submission.c:838-846, 890-895), a DMA error see
     * hlsim_dma_error_resets(); on Gaudi1/2 any reset is a hard one.
     */
    if ((err = hlsim_fault_hit("dma_error"))) {
        if (hlsim_dma_error_resets(f->dev)) {
            fail  = HLSIM_CS_ABORTED;
            reset = 1;
        } else {
            stall = HLSIM_STALL_ERROR;
        }
    }
    if ((err = hlsim_fault_hit("cs_timeout"))) {
        if (hlsim_reset_on_lockup()) {
            fail  = HLSIM_CS_TIMEDOUT;
            reset = 1;
        } else {
            /* the engine hangs on it and its TDR comes soon after */
            stall = HLSIM_STALL_HANG;
        }
    }
    /* the CS that triggers an injected reset is among those it aborts */
    if (hlsim_fault_hit("reset") != 0) {
        fail  = HLSIM_CS_ABORTED;
        reset = 1;
    }
    ctx->next_seq++;
    hlsim_cs_outcome_push(ctx, cs);
    memset(cs, 0, sizeof(*cs));
    cs->timestamp = !!(a->in.cs_flags & HL_CS_FLAGS_TIMESTAMP);
    cs->seq       = seq;
    cs->state     = HLSIM_CS_PENDING;
    cs->jobs_left = n;
    cs->fail      = fail;
    cs->stall     = stall;
    cs->submit_ns = hlsim_now_ns();
    cs->tdr_ns    = cs->submit_ns + ((stall == HLSIM_STALL_HANG) ?
                    HLSIM_HANG_TDR_NS :
                    hlsim_timeout_locked_s(f->dev) * 1000000000ULL);
    cs->gen       = hlsim_gen(f->dev);
    ctx->in_flight++;
    hlsim_counters[HLSIM_COUNTER_CS_SUBMITTED]++;
    for (i = 0; i < n; i++) {
        if (d->asic == HLSIM_GAUDI1) {
            hlsim_cb_t *cb = hlsim_cb_lookup(ctx, ch[i].cb_handle);

            cb->cs_cnt++;
            jobs[i]->cb = cb;
        }
        if (hlsim_queue_push(ctx, ch[i].queue_index, jobs[i])) {
            /* no worker: complete the job as aborted right here */
            hlsim_job_done(ctx, jobs[i], HLSIM_CS_ABORTED);
        }
        jobs[i] = NULL;
    }
    memset(&a->out, 0, sizeof(a->out));
    a->out.seq    = seq;
    a->out.status = HL_CS_STATUS_SUCCESS;
    rc            = 0;

out:
    for (i = 0; i < n; i++) {
        if (jobs[i] != NULL) {
            free(jobs[i]->cb_copy);
            free(jobs[i]);
        }
    }
    pthread_mutex_unlock(&hlsim_lock);
    free(jobs);
    free(ch);
    if (reset) {
        hlsim_dev_reset(f->dev, hlsim_cfg.reset_ms,
                        GAUDI_HL_DEVICE_STATUS_IN_RESET);
    }
    return rc;
}

/*
 * The driver stores the outcome of a CS submitted with HL_CS_FLAGS_TIMESTAMP
 * at completion, in a store of HL_CS_OUTCOME_HISTORY_LEN (256) that drops
 * the oldest, and a WAIT on a CS older than the window pops it (K612
 * common/command_submission.c:57-133, 797-800, 2675-2686); other old CSs
 * are "gone". Stored here when the CS's ring slot is reused, the moment it
 * leaves the window; lock held.
 */
static void hlsim_cs_outcome_push(hlsim_ctx_t *ctx, const hlsim_cs_t *cs)
{
    hlsim_cs_outcome_t *o;

    if (!cs->timestamp || (cs->state == HLSIM_CS_PENDING) ||
        (cs->state == HLSIM_CS_FREE)) {
        return;
    }
    o          = &ctx->outcomes[ctx->outcome_next++ % HLSIM_CS_OUTCOMES];
    o->seq     = cs->seq;
    o->done_ns = cs->done_ns;
    o->state   = cs->state;
}

static int hlsim_cs_outcome_pop(hlsim_ctx_t *ctx, uint64_t seq,
                                hlsim_cs_outcome_t *out)
{
    unsigned i;

    for (i = 0; i < HLSIM_CS_OUTCOMES; i++) {
        if (ctx->outcomes[i].state && (ctx->outcomes[i].seq == seq)) {
            *out                  = ctx->outcomes[i];
            ctx->outcomes[i].state = 0;
            return 1;
        }
    }
    return 0;
}

/*
 * Engine model: report what is due on every engine of @a ctx (a WAIT_CS
 * poll). Returns when CS @a cs completes in model time if all its jobs
 * have moved their data, else 0 (the worker that moves them reports).
 * Lock held.
 */
static uint64_t hlsim_model_report(hlsim_ctx_t *ctx, const hlsim_cs_t *cs)
{
    uint64_t     end = 0;
    hlsim_job_t *job;
    int          e, moved = 0;

    for (e = 0; (hlsim_cfg.dma_gbps > 0) && (e < HLSIM_MAX_ENGINES); e++) {
        (void)hlsim_engine_report(ctx, &ctx->engines[e], 0);
        for (job = ctx->engines[e].done.head; job != NULL; job = job->next) {
            if (job->seq == cs->seq) {
                end = HLSIM_MAX(end, job->end_ns);
                moved++;
            }
        }
    }
    return ((cs->state == HLSIM_CS_PENDING) && (moved == cs->jobs_left)) ?
           end : 0;
}

int hlsim_wait_cs(hlsim_file_t *f, union hl_wait_cs_args *a)
{
    hlsim_ctx_t    *ctx = f->ctx;
    unsigned        max = hlsim_cfg.dev[f->dev].max_pending;
    uint64_t        seq = a->in.seq, tmo = a->in.timeout_us;
    struct timespec dl;
    hlsim_cs_t     *cs;
    hlsim_cs_outcome_t old;
    struct timespec nt, *until;
    uint64_t        next;
    int             err, state, ts, rc;

    if ((err = hlsim_fault_hit("wait_cs"))) {
        return -err;
    }
    /* EBUSY before anything else when not operational (facts 5.2) */
    if (!hlsim_dev_operational(f->dev)) {
        return -EBUSY;
    }
    if (a->in.flags & (HL_WAIT_CS_FLAGS_INTERRUPT |
                       HL_WAIT_CS_FLAGS_MULTI_CS)) {
        return -EINVAL;   /* not emulated */
    }
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec  += tmo / 1000000;
    dl.tv_nsec += (tmo % 1000000) * 1000;
    if (dl.tv_nsec >= 1000000000) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000;
    }

    pthread_mutex_lock(&hlsim_lock);
    hlsim_notify_due(f);
    if (seq >= ctx->next_seq) {
        pthread_mutex_unlock(&hlsim_lock);
        return -EINVAL;   /* never issued */
    }
    cs = (ctx->cs_ring != NULL) ? &ctx->cs_ring[seq & (max - 1)] : NULL;
    memset(&a->out, 0, sizeof(a->out));
    /* older than the window: its stored outcome, once, else gone */
    if ((seq + max < ctx->next_seq) || (cs == NULL) || (cs->seq != seq)) {
        if (hlsim_cs_outcome_pop(ctx, seq, &old)) {
            pthread_mutex_unlock(&hlsim_lock);
            state = old.state;
            a->out.timestamp_nsec = old.done_ns;
            ts    = 1;
            goto report;
        }
        pthread_mutex_unlock(&hlsim_lock);
        a->out.status = HL_WAIT_CS_STATUS_COMPLETED;
        a->out.flags  = HL_WAIT_CS_STATUS_FLAG_GONE;
        return 0;
    }
    /* a poll only reads the CS's state: completion_done() (K612
     * common/command_submission.c:2688-2689); the engines run on */
    next = hlsim_model_report(ctx, cs);
    while ((cs->state == HLSIM_CS_PENDING) && (tmo != 0) &&
           (cs->seq == seq)) {
        /* engine model: wake when this CS completes and report it here,
         * not after the worker's wake-up */
        until = &dl;
        if ((next != 0) &&
            (next < dl.tv_sec * 1000000000ULL + dl.tv_nsec)) {
            nt.tv_sec  = next / 1000000000ULL;
            nt.tv_nsec = next % 1000000000ULL;
            until      = &nt;
        }
        rc   = pthread_cond_timedwait(&hlsim_cond, &hlsim_lock, until);
        next = hlsim_model_report(ctx, cs);
        if ((rc == ETIMEDOUT) && (until == &dl)) {
            break;
        }
    }
    state = (cs->seq == seq) ? cs->state : HLSIM_CS_DONE;
    /* a timestamp only for CSs that asked for one (:797-800) */
    ts    = (cs->seq == seq) && cs->timestamp;
    if ((state == HLSIM_CS_DONE) && ts) {
        a->out.timestamp_nsec = cs->done_ns;
    }
    if ((tmo == 0) && (state == HLSIM_CS_PENDING)) {
        /* a poll that found its CS in flight: the suites' proof that the
         * module's in-flight paths ran (HLSIM_COUNTER_POLLS_IN_FLIGHT) */
        hlsim_counters[HLSIM_COUNTER_POLLS_IN_FLIGHT]++;
        __atomic_add_fetch(&hlsim_shm->dev[f->dev].polls_in_flight, 1,
                           __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&hlsim_lock);

report:
    if ((state != HLSIM_CS_PENDING) &&
        __atomic_load_n(&f->ev_pending, __ATOMIC_RELAXED)) {
        pthread_mutex_lock(&hlsim_lock);
        hlsim_notify_reported(f, seq);   /* HLSIM_PAGE_FAULT_EVENT=after */
        pthread_mutex_unlock(&hlsim_lock);
    }
    switch (state) {
    case HLSIM_CS_PENDING:
        a->out.status = HL_WAIT_CS_STATUS_BUSY;
        return 0;
    case HLSIM_CS_DONE:
        a->out.status = HL_WAIT_CS_STATUS_COMPLETED;
        a->out.flags  = ts ? HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD : 0;
        return 0;
    case HLSIM_CS_TIMEDOUT:
        a->out.status = HL_WAIT_CS_STATUS_TIMEDOUT;
        return -ETIMEDOUT;
    default:
        a->out.status = HL_WAIT_CS_STATUS_ABORTED;
        return -EIO;
    }
}

/* Abort every in-flight CS of this process on @dev (reset) */
void hlsim_cs_abort_dev(int dev)
{
    hlsim_ctx_t *ctx;
    unsigned     i, s, max = hlsim_cfg.dev[dev].max_pending;

    pthread_mutex_lock(&hlsim_lock);
    for (i = 0; i < sizeof(hlsim_ctx_list) / sizeof(hlsim_ctx_list[0]); i++) {
        ctx = hlsim_ctx_list[i];
        if ((ctx == NULL) || (ctx->dev != dev) || (ctx->cs_ring == NULL)) {
            continue;
        }
        for (s = 0; s < max; s++) {
            if (ctx->cs_ring[s].state == HLSIM_CS_PENDING) {
                /* a CS that timed out (the reset's cause) stays so */
                ctx->cs_ring[s].state   = ctx->cs_ring[s].fail ?
                                          ctx->cs_ring[s].fail :
                                          HLSIM_CS_ABORTED;
                ctx->cs_ring[s].done_ns = hlsim_now_ns();
                ctx->in_flight--;
                hlsim_counters[HLSIM_COUNTER_CS_ABORTED]++;
            }
        }
    }
    pthread_cond_broadcast(&hlsim_cond);
    pthread_mutex_unlock(&hlsim_lock);
}

/* Stop the workers; called without the lock */
void hlsim_cs_ctx_fini(hlsim_ctx_t *ctx)
{
    int e;

    pthread_mutex_lock(&hlsim_lock);
    hlsim_ctx_register(ctx, 0);
    for (e = 0; e < HLSIM_MAX_ENGINES; e++) {
        ctx->engines[e].stop = 1;
        if (ctx->engines[e].started) {
            pthread_cond_signal(&ctx->engines[e].cond);
        }
    }
    pthread_cond_broadcast(&hlsim_cond);
    pthread_mutex_unlock(&hlsim_lock);
    for (e = 0; e < HLSIM_MAX_ENGINES; e++) {
        if (ctx->engines[e].started && !ctx->inherited) {
            pthread_join(ctx->engines[e].thread, NULL);
            pthread_cond_destroy(&ctx->engines[e].cond);
        }
    }
}

/* Worker threads do not survive fork: forget them in the child */
void hlsim_cs_atfork_child(void)
{
    hlsim_ctx_t *ctx;
    hlsim_job_t *job;
    unsigned     i, q, s;

    for (i = 0; i < sizeof(hlsim_ctx_list) / sizeof(hlsim_ctx_list[0]); i++) {
        if ((ctx = hlsim_ctx_list[i]) == NULL) {
            continue;
        }
        for (q = 0; q < HLSIM_MAX_QUEUES; q++) {
            while ((job = ctx->queues[q].head) != NULL) {
                ctx->queues[q].head = job->next;
                free(job->cb_copy);
                free(job);
            }
            memset(&ctx->queues[q], 0, sizeof(ctx->queues[q]));
        }
        for (q = 0; q < HLSIM_MAX_ENGINES; q++) {
            while ((job = ctx->engines[q].done.head) != NULL) {
                ctx->engines[q].done.head = job->next;
                free(job->cb_copy);
                free(job);
            }
        }
        memset(ctx->engines, 0, sizeof(ctx->engines));
        for (s = 0; ctx->cs_ring &&
             (s < hlsim_cfg.dev[ctx->dev].max_pending); s++) {
            if (ctx->cs_ring[s].state == HLSIM_CS_PENDING) {
                ctx->cs_ring[s].state = HLSIM_CS_ABORTED;
            }
        }
        ctx->in_flight = 0;
    }
    hlsim_cond_init();
}

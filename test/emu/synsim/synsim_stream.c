/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Emulated libSynapse: streams, copies and events. Each stream has a
 * worker thread that runs its copies one after another, in the order they
 * were queued, on a PDMA channel of the emulated device (hlsim); the
 * caller only queues. An event records the last operation queued on a
 * stream and is complete once that operation is done. A copy the engine
 * fails is a device error and goes to the DFA (synsim_dfa.c); an MMU page
 * fault drops the copy, as the driver asks no reset for it.
 */

#include "synsim_int.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Registry look-ups: a handle not created here (or destroyed) is foreign */
static struct synsim_stream *synsim_stream_find(synStreamHandle s)
{
    struct synsim_stream *p;

    for (p = synsim.streams; (p != NULL) && (p != s); p = p->next) {
    }
    return p;
}

static struct synsim_event *synsim_event_find(synEventHandle e)
{
    struct synsim_event *p;

    for (p = synsim.events; (p != NULL) && (p != e); p = p->next) {
    }
    return p;
}

/*
 * What the engine does with a device VA that an op-99 import mapped: not
 * published (docs/synapse.md, "Imported VAs"). SynapseAI does not
 * translate device addresses of a copy (QueueCopyScal::memcopy,
 * rt/scal/common/stream_copy_scal.cpp:143-146, DRAM_TO_DRAM: no
 * translation), so whatever happens, happens in the engine:
 *   read  - it reads and writes it like any mapped VA (the default);
 *   fault - its MMU cannot translate it: a page fault, which on Gaudi2/3
 *           asks no reset (docs/driver-facts.md 9.3): the copy is dropped
 *           and reports success, as for an unmapped VA;
 *   error - the engine fails the copy: a device error, the DFA
 *           (synsim_dfa.c; TERMINATE_SYNAPSE_UPON_DFA=2 kills the process).
 */
enum {
    SYNSIM_IMPORTED_READ,
    SYNSIM_IMPORTED_FAULT,
    SYNSIM_IMPORTED_ERROR
};

int synsim_imported_va_init(void)
{
    static const char *names[] = {"read", "fault", "error"};
    const char *v = getenv("SYNSIM_IMPORTED_VA");
    int         i;

    synsim.imported_va = SYNSIM_IMPORTED_READ;
    synsim.va_imported = (int (*)(int, uint64_t, uint64_t))
                         dlsym(RTLD_DEFAULT, "hlsim_va_imported");
    synsim.pdma_fault  = (int (*)(int, uint64_t, uint64_t))
                         dlsym(RTLD_DEFAULT, "hlsim_pdma_fault");
    if ((v == NULL) || (*v == '\0')) {
        return 0;
    }
    for (i = 0; i < 3; i++) {
        if (!strcmp(v, names[i])) {
            synsim.imported_va = i;
            return 0;
        }
    }
    synsim_log("SYNSIM_IMPORTED_VA=%s: read (the default), fault or error",
               v);
    return -1;
}

/* A copy touching an imported VA under SYNSIM_IMPORTED_VA=fault|error:
 * 0 (dropped after a page fault) or -ENXIO (an engine error); 1 = copy */
static int synsim_imported_copy(int fd, const synsim_copy_t *c)
{
    uint64_t va;

    if ((synsim.imported_va == SYNSIM_IMPORTED_READ) ||
        (synsim.va_imported == NULL)) {
        return 1;
    }
    if (synsim.va_imported(fd, c->src, c->size) == 1) {
        va = c->src;
    } else if (synsim.va_imported(fd, c->dst, c->size) == 1) {
        va = c->dst;
    } else {
        return 1;
    }
    if (synsim.imported_va == SYNSIM_IMPORTED_ERROR) {
        synsim_log("DMA engine error at imported VA 0x%llx "
                   "(SYNSIM_IMPORTED_VA=error)", (unsigned long long)va);
        return -ENXIO;
    }
    if (synsim.pdma_fault != NULL) {
        (void)synsim.pdma_fault(fd, va, c->size);
    }
    return 0;
}

/*
 * Streams and queues (docs/synapse.md). A generic stream starts at
 * affinity 0 (StreamsContainer::createStream, rt/common/streams/
 * streams_container.cpp:15) and gets its queue set at its first copy
 * (addJob -> setStreamAffinityByJobType :267): the usage counter of the
 * copy's queue type modulo the number of sets
 * (getStreamAffinityByStreamType :362), 3 on Gaudi2 and Gaudi3
 * (rt/scal/common/device_scal.cpp:43-53; 2 on a single-die Gaudi3, which
 * hlsim does not model). The stream keeps that set; each set has one
 * queue per direction, shared by every stream of the set. Each stream's
 * worker still runs its own copies in order, and a copy waits for its
 * turn in its queue: copies of one queue run one at a time, in the order
 * they were queued.
 */
void synsim_queues_init(void)
{
    int a, d;

    for (a = 0; a < SYNSIM_AFFINITIES; a++) {
        for (d = 0; d < SYNSIM_DIRECTIONS; d++) {
            pthread_mutex_init(&synsim.queues[a][d].lock, NULL);
            pthread_cond_init(&synsim.queues[a][d].cond, NULL);
        }
    }
}

/* The queue of a copy in @dir on @s, and its ticket; synsim_lock held */
static void synsim_queue_op(struct synsim_stream *s, synDmaDir dir,
                            synsim_op_t *op)
{
    synsim_queue_t *q;

    if (s->affinity < 0) {
        s->affinity = synsim.type_usage[dir] % SYNSIM_AFFINITIES;
        synsim.type_usage[dir]++;
    }
    q = &synsim.queues[s->affinity][dir];
    pthread_mutex_lock(&q->lock);
    op->queue  = q;
    op->ticket = q->next++;
    pthread_mutex_unlock(&q->lock);
}

static void synsim_queue_enter(synsim_op_t *op)
{
    synsim_queue_t *q = op->queue;

    pthread_mutex_lock(&q->lock);
    while (q->serving != op->ticket) {
        pthread_cond_wait(&q->cond, &q->lock);
    }
    pthread_mutex_unlock(&q->lock);
}

static void synsim_queue_leave(synsim_op_t *op)
{
    synsim_queue_t *q = op->queue;

    pthread_mutex_lock(&q->lock);
    q->serving++;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

/* @a op of @s is complete (@a failed: with an error) */
static void synsim_op_done(struct synsim_stream *s, synsim_op_t *op,
                           int failed)
{
    pthread_mutex_lock(&s->lock);
    if (failed) {
        s->fail[s->nfail++ % SYNSIM_FAILS] = op->seq;
    }
    s->done_seq = op->seq;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static void synsim_run_op(struct synsim_stream *s, synsim_op_t *op)
{
    int      rc = 0, dfa = 0;
    uint64_t i;

    synsim_queue_enter(op);
    for (i = 0; (i < op->count) && (rc == 0); i++) {
        rc = synsim_imported_copy(s->fd, &op->copy[i]);
        if (rc != 1) {
            continue;
        }
        rc = synsim.pdma_copy(s->fd, op->copy[i].dst, op->copy[i].src,
                              op->copy[i].size);
        if (rc == -EFAULT) {
            /* MMU page fault (hlsim logged it): the transfer is dropped
             * and no reset is asked, so nothing reports it */
            rc = 0;
        }
    }
    if (rc == 0) {
        /* complete before the queue takes its next copy: a queue's
         * copies complete in the order they ran, so a copy queued behind
         * this one on another stream is never seen done before it */
        synsim_op_done(s, op, 0);
        synsim_queue_leave(op);
        return;
    }

    synsim_queue_leave(op);
    dfa = synsim_dfa_begin((rc == -EIO) ? "device reset" :
                           "DMA engine error");
    synsim_op_done(s, op, 1);
    if (dfa) {
        synsim_dfa_end();
    }
}

/* Did an op in (from, to] of @s fail; lock of @s held */
static int synsim_stream_failed(struct synsim_stream *s, uint64_t from,
                                uint64_t to)
{
    unsigned i;

    for (i = 0; (i < s->nfail) && (i < SYNSIM_FAILS); i++) {
        if ((s->fail[i] > from) && (s->fail[i] <= to)) {
            return 1;
        }
    }
    return 0;
}

static void *synsim_worker(void *arg)
{
    struct synsim_stream *s = (struct synsim_stream*)arg;
    synsim_op_t          *op;

    pthread_mutex_lock(&s->lock);
    for (;;) {
        while ((s->head == NULL) && !s->stop) {
            pthread_cond_wait(&s->cond, &s->lock);
        }
        if (s->head == NULL) {
            break;      /* stopping, and everything queued is done */
        }
        op      = s->head;
        s->head = op->next;
        if (s->head == NULL) {
            s->tail = NULL;
        }
        pthread_mutex_unlock(&s->lock);
        synsim_run_op(s, op);
        free(op);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

synStatus synStreamCreateGeneric(synStreamHandle *pStreamHandle,
                                 const synDeviceId deviceId,
                                 const uint32_t flags)
{
    struct synsim_stream *s;
    synsim_dev_t         *d;
    synStatus             status = synSuccess;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    if (pStreamHandle == NULL) {
        return synInvalidArgument;
    }

    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(deviceId);
    if (d == NULL) {
        status = synFail;
        goto out;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        status = synOutOfHostMemory;
        goto out;
    }
    s->dev      = 0;
    s->fd       = d->fd;
    s->affinity = -1;       /* streams_container.cpp:15 */
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (pthread_create(&s->thread, NULL, synsim_worker, s)) {
        free(s);
        status = synOutOfResources;
        goto out;
    }
    s->next         = synsim.streams;
    synsim.streams  = s;
    *pStreamHandle  = s;
out:
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

static void synsim_stream_join(struct synsim_stream *s)
{
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Unlink @s from the registry; lock held */
static void synsim_stream_unlink(struct synsim_stream *s)
{
    struct synsim_stream **p;
    struct synsim_event   *e;

    for (p = &synsim.streams; *p != s; p = &(*p)->next) {
    }
    *p = s->next;
    for (e = synsim.events; e != NULL; e = e->next) {
        if (e->stream == s) {
            e->stream = NULL;   /* its work is done: see destroy */
        }
    }
}

/* Outcome of the ops (from, seq] of @s once done; lock of @s held */
static synStatus synsim_stream_outcome(struct synsim_stream *s,
                                       uint64_t from, uint64_t seq)
{
    if (__atomic_load_n(&synsim.terminated, __ATOMIC_ACQUIRE)) {
        return synSynapseTerminated;
    }
    /* a completion wait after a reset (scal_completion_group_base.cpp:
     * 126-213); only the work that met it, nothing sticks to the stream */
    return synsim_stream_failed(s, from, seq) ? synDeviceReset : synSuccess;
}

/* Wait until op @seq of @s is done; the outcome of (from, seq] */
static synStatus synsim_stream_wait(struct synsim_stream *s, uint64_t from,
                                    uint64_t seq)
{
    synStatus status;

    pthread_mutex_lock(&s->lock);
    while (s->done_seq < seq) {
        pthread_cond_wait(&s->cond, &s->lock);
    }
    status = synsim_stream_outcome(s, from, seq);
    pthread_mutex_unlock(&s->lock);
    return status;
}

/* Outcome of (from, seq] of @s without waiting: synBusy if not done */
static synStatus synsim_stream_poll(struct synsim_stream *s, uint64_t from,
                                    uint64_t seq)
{
    synStatus status;

    pthread_mutex_lock(&s->lock);
    status = (s->done_seq < seq) ? synBusy :
             synsim_stream_outcome(s, from, seq);
    pthread_mutex_unlock(&s->lock);
    return status;
}

/* Ops of @s not yet reported by a synchronize or query: (from, seq] */
static uint64_t synsim_stream_from(struct synsim_stream *s)
{
    uint64_t from;

    pthread_mutex_lock(&s->lock);
    from = s->sync_seq;
    pthread_mutex_unlock(&s->lock);
    return from;
}

static void synsim_stream_reported(struct synsim_stream *s, uint64_t seq,
                                   synStatus status)
{
    if (status == synBusy) {
        return;
    }
    pthread_mutex_lock(&s->lock);
    if (s->sync_seq < seq) {
        s->sync_seq = seq;
    }
    pthread_mutex_unlock(&s->lock);
}

/* The live stream @a h with synsim_lock held and its last queued op in
 * *seq_p; NULL, the lock released, if there is none */
static struct synsim_stream *synsim_stream_lookup(const synStreamHandle h,
                                                  uint64_t *seq_p)
{
    struct synsim_stream *s;

    pthread_mutex_lock(&synsim_lock);
    s = synsim_stream_find(h);
    if (s == NULL) {
        pthread_mutex_unlock(&synsim_lock);
        return NULL;
    }
    pthread_mutex_lock(&s->lock);
    *seq_p = s->last_seq;
    pthread_mutex_unlock(&s->lock);
    return s;
}

synStatus synStreamDestroy(const synStreamHandle streamHandle)
{
    struct synsim_stream *s;
    synStatus             status;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    /* the stream is synchronized first; if that fails it stays
     * (streams_container.cpp:46-80) */
    status = synStreamSynchronize(streamHandle);
    if (status != synSuccess) {
        return status;
    }
    pthread_mutex_lock(&synsim_lock);
    s = synsim_stream_find(streamHandle);
    if (s == NULL) {
        pthread_mutex_unlock(&synsim_lock);
        return synInvalidArgument;
    }
    synsim_stream_unlink(s);
    pthread_mutex_unlock(&synsim_lock);
    synsim_stream_join(s);      /* runs what was queued meanwhile */
    return synSuccess;
}

void synsim_streams_release(void)
{
    struct synsim_stream *s, *next, *mine = NULL;
    struct synsim_event  *e;

    pthread_mutex_lock(&synsim_lock);
    for (s = synsim.streams; s != NULL; s = next) {
        next = s->next;
        synsim_stream_unlink(s);
        s->next = mine;
        mine    = s;
    }
    while ((e = synsim.events) != NULL) {
        synsim.events = e->next;
        free(e);
    }
    /* the device's queue sets go with it (removeAffinities,
     * streams_container.cpp) */
    memset(synsim.type_usage, 0, sizeof(synsim.type_usage));
    pthread_mutex_unlock(&synsim_lock);

    while ((s = mine) != NULL) {
        mine = s->next;
        synsim_stream_join(s);      /* runs what is queued first */
    }
}

synStatus synStreamSynchronize(const synStreamHandle streamHandle)
{
    struct synsim_stream *s;
    synStatus             status;
    uint64_t              seq, from;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    s = synsim_stream_lookup(streamHandle, &seq);
    if (s == NULL) {
        return synInvalidArgument;
    }
    from   = synsim_stream_from(s);
    status = synsim_stream_poll(s, from, seq);
    pthread_mutex_unlock(&synsim_lock);
    /* with work queued the stream cannot be destroyed while we wait */
    if (status == synBusy) {
        status = synsim_stream_wait(s, from, seq);
    }
    synsim_stream_reported(s, seq, status);
    return status;
}

synStatus synStreamQuery(const synStreamHandle streamHandle)
{
    struct synsim_stream *s;
    synStatus             status;
    uint64_t              seq, from;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    s = synsim_stream_lookup(streamHandle, &seq);
    if (s == NULL) {
        return synInvalidArgument;
    }
    from   = synsim_stream_from(s);
    status = synsim_stream_poll(s, from, seq);
    synsim_stream_reported(s, seq, status);
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

synStatus synDeviceSynchronize(const synDeviceId deviceId)
{
    struct synsim_stream *s;
    synStatus             status, st;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    pthread_mutex_lock(&synsim_lock);
    if (synsim_dev_get(deviceId) == NULL) {
        pthread_mutex_unlock(&synsim_lock);
        return synFail;
    }
    for (s = synsim.streams; s != NULL; s = s->next) {
        st = synsim_stream_wait(s, synsim_stream_from(s), s->last_seq);
        synsim_stream_reported(s, s->last_seq, st);
        if (st != synSuccess) {
            status = st;
        }
    }
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

/* Device VAs of one copy; host sides must be synHostMap'ed */
static synStatus synsim_copy_prepare(synsim_dev_t *d, synDmaDir dir,
                                     uint64_t src, uint64_t dst,
                                     uint64_t size, synsim_copy_t *c)
{
    synStatus status = synSuccess;

    c->src  = src;
    c->dst  = dst;
    c->size = size;
    switch (dir) {
    case HOST_TO_DRAM:
        status = synsim_host_translate(d, src, size, &c->src);
        break;
    case DRAM_TO_HOST:
        status = synsim_host_translate(d, dst, size, &c->dst);
        break;
    case DRAM_TO_DRAM:
        break;
    default:
        status = synInvalidArgument;
        break;
    }
    /* (SynapseAI logs a miss in its own log files only: the module's
     * direct copies of memory no entry holds miss on purpose) */
    return status;
}

static unsigned long synsim_counts[SYNSIM_COUNT_LAST];

unsigned long synsim_count(synsim_count_t what)
{
    return (what < SYNSIM_COUNT_LAST) ?
           __atomic_load_n(&synsim_counts[what], __ATOMIC_RELAXED) : 0;
}

synStatus synMemCopyAsyncMultiple(const synStreamHandle streamHandle,
                                  const uint64_t *src, const uint64_t *size,
                                  const uint64_t *dst,
                                  const synDmaDir direction,
                                  const uint64_t numCopies)
{
    struct synsim_stream *s;
    synsim_op_t          *op;
    synStatus             status = synSuccess;
    uint64_t              i;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    if ((src == NULL) || (size == NULL) || (dst == NULL) ||
        (numCopies == 0) || (numCopies > (1ULL << 20))) {
        return synInvalidArgument;
    }
    if ((unsigned)direction >= DIRECTION_ENUM_MAX) {
        return synInvalidArgument;
    }

    pthread_mutex_lock(&synsim_lock);
    s = synsim_stream_find(streamHandle);
    if (s == NULL) {
        status = synInvalidArgument;
        goto out;
    }
    op = calloc(1, sizeof(*op) + numCopies * sizeof(op->copy[0]));
    if (op == NULL) {
        status = synOutOfHostMemory;
        goto out;
    }
    for (i = 0; (i < numCopies) && (status == synSuccess); i++) {
        status = synsim_copy_prepare(synsim_dev_get(0), direction,
                                     src[i], dst[i], size[i], &op->copy[i]);
    }
    if (status != synSuccess) {
        free(op);
        goto out;
    }
    op->count = numCopies;
    synsim_queue_op(s, direction, op);

    pthread_mutex_lock(&s->lock);
    op->seq = ++s->last_seq;
    if (s->tail != NULL) {
        s->tail->next = op;
    } else {
        s->head = op;
    }
    s->tail = op;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    __atomic_add_fetch(&synsim_counts[SYNSIM_COUNT_COPIES], numCopies,
                       __ATOMIC_RELAXED);
out:
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

synStatus synMemCopyAsync(const synStreamHandle streamHandle,
                          const uint64_t src, const uint64_t size,
                          const uint64_t dst, const synDmaDir direction)
{
    return synMemCopyAsyncMultiple(streamHandle, &src, &size, &dst,
                                   direction, 1);
}

synStatus synEventCreate(synEventHandle *pEventHandler,
                         const synDeviceId deviceId, const uint32_t flags)
{
    struct synsim_event *e;
    synStatus            status = synSuccess;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    if (pEventHandler == NULL) {
        return synInvalidArgument;
    }

    pthread_mutex_lock(&synsim_lock);
    if (synsim_dev_get(deviceId) == NULL) {
        status = synFail;
        goto out;
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        status = synOutOfHostMemory;
        goto out;
    }
    e->dev         = 0;
    e->next        = synsim.events;
    synsim.events  = e;
    *pEventHandler = e;
out:
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

synStatus synEventDestroy(synEventHandle eventHandle)
{
    struct synsim_event **p;
    synStatus             status;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    pthread_mutex_lock(&synsim_lock);
    for (p = &synsim.events; (*p != NULL) && (*p != eventHandle);
         p = &(*p)->next) {
    }
    if (*p == NULL) {
        pthread_mutex_unlock(&synsim_lock);
        return synInvalidEventHandle;
    }
    *p = eventHandle->next;
    pthread_mutex_unlock(&synsim_lock);
    free(eventHandle);
    return synSuccess;
}

synStatus synEventRecord(synEventHandle eventHandle,
                         const synStreamHandle streamHandle)
{
    struct synsim_stream *s;
    struct synsim_event  *e;
    synStatus             status;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    pthread_mutex_lock(&synsim_lock);
    e = synsim_event_find(eventHandle);
    s = synsim_stream_find(streamHandle);
    if (e == NULL) {
        status = synInvalidEventHandle;
    } else if ((s == NULL) || (s->dev != e->dev)) {
        status = synInvalidArgument;
    } else {
        pthread_mutex_lock(&s->lock);
        e->stream  = s;
        e->from    = s->rec_seq;
        e->seq     = s->last_seq;
        s->rec_seq = s->last_seq;
        pthread_mutex_unlock(&s->lock);
        __atomic_add_fetch(&synsim_counts[SYNSIM_COUNT_EVENT_RECORDS], 1,
                           __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

/* An event never recorded: Gaudi2/3 have no stream to ask
 * (device_scal.cpp:868-909, CHECK_POINTER(pStream)); Gaudi1 none to wait */
static synStatus synsim_event_unrecorded(void)
{
    synsim_dev_t *d = synsim_dev_get(0);

    return ((d != NULL) && d->gaudi1) ? synSuccess : synInvalidArgument;
}

synStatus synEventQuery(const synEventHandle eventHandle)
{
    struct synsim_event *e;
    synStatus            status;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    pthread_mutex_lock(&synsim_lock);
    e = synsim_event_find(eventHandle);
    if (e == NULL) {
        status = synInvalidEventHandle;
    } else if (e->stream == NULL) {
        status = synsim_event_unrecorded();
    } else {
        status = synsim_stream_poll(e->stream, e->from, e->seq);
    }
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

synStatus synEventSynchronize(const synEventHandle eventHandle)
{
    struct synsim_event  *e;
    struct synsim_stream *s;
    synStatus             status;
    uint64_t              seq, from;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    pthread_mutex_lock(&synsim_lock);
    e = synsim_event_find(eventHandle);
    if (e == NULL) {
        pthread_mutex_unlock(&synsim_lock);
        return synInvalidEventHandle;
    }
    s    = e->stream;
    from = e->from;
    seq  = e->seq;
    status = (s == NULL) ? synsim_event_unrecorded() :
             synsim_stream_poll(s, from, seq);
    pthread_mutex_unlock(&synsim_lock);
    /* with work queued the stream cannot be destroyed while we wait */
    return (status == synBusy) ? synsim_stream_wait(s, from, seq) : status;
}

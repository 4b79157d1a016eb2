/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Emulated libSynapse: streams, copies and events. Each stream has a
 * worker thread that runs its copies one after another, in the order they
 * were queued, on a PDMA channel of the emulated device (hlsim); the
 * caller only queues. An event records the last operation queued on a
 * stream and is complete once that operation is done. A failed copy makes
 * its stream report the failure from then on, like a device error.
 */

#include "synsim_int.h"

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

static synStatus synsim_copy_status(int rc)
{
    /* -EIO: the device stopped (reset); else an MMU fault or injected */
    return (rc == -EIO) ? synDeviceReset : synFail;
}

static void synsim_run_op(struct synsim_stream *s, synsim_op_t *op)
{
    uint64_t i;
    int      rc = 0;

    for (i = 0; (i < op->count) && (rc == 0); i++) {
        rc = synsim.pdma_copy(s->fd, op->copy[i].dst, op->copy[i].src,
                              op->copy[i].size);
    }

    pthread_mutex_lock(&s->lock);
    if ((rc != 0) && (s->err_seq == 0)) {
        s->err_seq = op->seq;
        s->err     = synsim_copy_status(rc);
    }
    s->done_seq = op->seq;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
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

    if (pStreamHandle == NULL) {
        return synInvalidArgument;
    }

    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(deviceId);
    if ((d == NULL) || (deviceId == (synDeviceId)-1)) {
        status = synInvalidArgument;
        goto out;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        status = synOutOfHostMemory;
        goto out;
    }
    s->dev = deviceId;
    s->fd  = d->fd;
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

/* Wait until op @seq of @s is done; its outcome */
static synStatus synsim_stream_wait(struct synsim_stream *s, uint64_t seq)
{
    synStatus status;

    pthread_mutex_lock(&s->lock);
    while (s->done_seq < seq) {
        pthread_cond_wait(&s->cond, &s->lock);
    }
    status = ((s->err_seq != 0) && (s->err_seq <= seq)) ? s->err :
             synSuccess;
    pthread_mutex_unlock(&s->lock);
    return status;
}

/* Outcome of op @seq of @s without waiting: synBusy if not done */
static synStatus synsim_stream_poll(struct synsim_stream *s, uint64_t seq)
{
    synStatus status;

    pthread_mutex_lock(&s->lock);
    status = (s->done_seq < seq) ? synBusy :
             ((s->err_seq != 0) && (s->err_seq <= seq)) ? s->err :
             synSuccess;
    pthread_mutex_unlock(&s->lock);
    return status;
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
    uint64_t              seq;

    s = synsim_stream_lookup(streamHandle, &seq);
    if (s == NULL) {
        return synInvalidArgument;
    }
    /* SynapseAI refuses to destroy a stream that still has work */
    if (synsim_stream_poll(s, seq) == synBusy) {
        pthread_mutex_unlock(&synsim_lock);
        return synBusy;
    }
    synsim_stream_unlink(s);
    pthread_mutex_unlock(&synsim_lock);
    synsim_stream_join(s);
    return synSuccess;
}

void synsim_streams_release(synDeviceId id)
{
    struct synsim_stream *s, *next, *mine = NULL;
    struct synsim_event **ep, *e;

    pthread_mutex_lock(&synsim_lock);
    for (s = synsim.streams; s != NULL; s = next) {
        next = s->next;
        if (s->dev == id) {
            synsim_stream_unlink(s);
            s->next = mine;
            mine    = s;
        }
    }
    for (ep = &synsim.events; (e = *ep) != NULL;) {
        if (e->dev == id) {
            *ep = e->next;
            free(e);
        } else {
            ep = &e->next;
        }
    }
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
    uint64_t              seq;

    s = synsim_stream_lookup(streamHandle, &seq);
    if (s == NULL) {
        return synInvalidArgument;
    }
    status = synsim_stream_poll(s, seq);
    pthread_mutex_unlock(&synsim_lock);
    /* with work queued the stream cannot be destroyed while we wait */
    return (status == synBusy) ? synsim_stream_wait(s, seq) : status;
}

synStatus synStreamQuery(const synStreamHandle streamHandle)
{
    struct synsim_stream *s;
    synStatus             status;
    uint64_t              seq;

    s = synsim_stream_lookup(streamHandle, &seq);
    if (s == NULL) {
        return synInvalidArgument;
    }
    status = synsim_stream_poll(s, seq);
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

synStatus synDeviceSynchronize(const synDeviceId deviceId)
{
    struct synsim_stream *s;
    synStatus             status = synSuccess, st;

    pthread_mutex_lock(&synsim_lock);
    if (synsim_dev_get(deviceId) == NULL) {
        pthread_mutex_unlock(&synsim_lock);
        return synInvalidArgument;
    }
    for (s = synsim.streams; s != NULL; s = s->next) {
        if ((s->dev == deviceId) &&
            ((st = synsim_stream_wait(s, s->last_seq)) != synSuccess)) {
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
     * probes of the host-address table miss on purpose) */
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
        status = synsim_copy_prepare(synsim_dev_get(s->dev), direction,
                                     src[i], dst[i], size[i], &op->copy[i]);
    }
    if (status != synSuccess) {
        free(op);
        goto out;
    }
    op->count = numCopies;

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

    if (pEventHandler == NULL) {
        return synInvalidArgument;
    }

    pthread_mutex_lock(&synsim_lock);
    if ((synsim_dev_get(deviceId) == NULL) ||
        (deviceId == (synDeviceId)-1)) {
        status = synInvalidArgument;
        goto out;
    }
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
        status = synOutOfHostMemory;
        goto out;
    }
    e->dev         = deviceId;
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
    synStatus             status = synSuccess;

    pthread_mutex_lock(&synsim_lock);
    e = synsim_event_find(eventHandle);
    s = synsim_stream_find(streamHandle);
    if (e == NULL) {
        status = synInvalidEventHandle;
    } else if ((s == NULL) || (s->dev != e->dev)) {
        status = synInvalidArgument;
    } else {
        pthread_mutex_lock(&s->lock);
        e->stream = s;
        e->seq    = s->last_seq;
        pthread_mutex_unlock(&s->lock);
        __atomic_add_fetch(&synsim_counts[SYNSIM_COUNT_EVENT_RECORDS], 1,
                           __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

synStatus synEventQuery(const synEventHandle eventHandle)
{
    struct synsim_event *e;
    synStatus            status;

    pthread_mutex_lock(&synsim_lock);
    e = synsim_event_find(eventHandle);
    if (e == NULL) {
        status = synInvalidEventHandle;
    } else if (e->stream == NULL) {
        status = synSuccess;    /* never recorded: an empty set of work */
    } else {
        status = synsim_stream_poll(e->stream, e->seq);
    }
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

synStatus synEventSynchronize(const synEventHandle eventHandle)
{
    struct synsim_event  *e;
    struct synsim_stream *s;
    synStatus             status;
    uint64_t              seq;

    pthread_mutex_lock(&synsim_lock);
    e = synsim_event_find(eventHandle);
    if (e == NULL) {
        pthread_mutex_unlock(&synsim_lock);
        return synInvalidEventHandle;
    }
    s   = e->stream;
    seq = e->seq;
    status = (s == NULL) ? synSuccess : synsim_stream_poll(s, seq);
    pthread_mutex_unlock(&synsim_lock);
    /* with work queued the stream cannot be destroyed while we wait */
    return (status == synBusy) ? synsim_stream_wait(s, seq) : status;
}

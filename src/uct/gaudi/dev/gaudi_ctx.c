/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The context table: one refcounted context per device per process,
 * shared by every MD and iface of every UCX context. The driver allows a
 * single compute context per device system-wide, even within one process
 * (facts 7.1), so a device is taken once and its context shared. The
 * table's mutex is held for lookup, insert and refcounts only; taking a
 * device is a per-device state (uct_gaudi_slot_state_t) whose slow steps
 * run with no lock held (docs/base.md, "The context table"). Which device
 * and backend: gaudi_select.c; opening and closing: gaudi_open.c.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dev/gaudi_process.h>

#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/time/time.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


uct_gaudi_process_t uct_gaudi_process = {
    .config    = {.lock = PTHREAD_MUTEX_INITIALIZER},
    .discovery = {.lock = PTHREAD_MUTEX_INITIALIZER},
    .ctx       = {.lock = PTHREAD_MUTEX_INITIALIZER,
                  .cond = PTHREAD_COND_INITIALIZER},
    .expected  = {.lock = PTHREAD_MUTEX_INITIALIZER},
    .backend   = {.lock = PTHREAD_MUTEX_INITIALIZER, .value = -1}
};

static struct uct_gaudi_ctx_table *const uct_gaudi_ctx_table =
        &uct_gaudi_process.ctx;

/* uct_gaudi_process locks the calling thread holds */
static __thread int uct_gaudi_process_locks_held;


int uct_gaudi_process_owns(pid_t pid)
{
    return ucs_likely(pid == getpid());
}

void uct_gaudi_process_lock(pthread_mutex_t *lock)
{
    pthread_mutex_lock(lock);
    ++uct_gaudi_process_locks_held;
}

void uct_gaudi_process_unlock(pthread_mutex_t *lock)
{
    --uct_gaudi_process_locks_held;
    pthread_mutex_unlock(lock);
}

void uct_gaudi_process_may_sleep(void)
{
    /* a TLS read: checked in every build, asserted in debug ones */
    if (ucs_unlikely(uct_gaudi_process_locks_held != 0)) {
        ucs_error("gaudi: a call that can sleep with %d process-wide "
                  "lock(s) held (dev/gaudi_process.h, lock order)",
                  uct_gaudi_process_locks_held);
        ucs_assert(0);
    }
}

/*
 * The fork rule (uct_gaudi_process_owns): a forked child inherits the fds
 * but must not share the parent's compute context, so it forgets the
 * parent's table, its takes in progress too (the child's copies stay
 * valid for their holders and are closed by their puts). With the table
 * locked.
 */
static void uct_gaudi_ctx_check_fork(void)
{
    if (uct_gaudi_process_owns(uct_gaudi_ctx_table->pid)) {
        return;
    }

    if (uct_gaudi_ctx_table->pid != 0) {
        ucs_debug("gaudi: pid %d forked from %d, not reusing its device "
                  "contexts", getpid(), uct_gaudi_ctx_table->pid);
    }

    memset(uct_gaudi_ctx_table->by_minor, 0,
           sizeof(uct_gaudi_ctx_table->by_minor));
    memset(uct_gaudi_ctx_table->state, UCT_GAUDI_SLOT_ABSENT,
           sizeof(uct_gaudi_ctx_table->state));
    uct_gaudi_ctx_table->deflt     = NULL;
    uct_gaudi_ctx_table->selecting = 0;
    uct_gaudi_ctx_table->pid       = getpid();
}

static void uct_gaudi_ctx_table_lock(void)
{
    uct_gaudi_process_lock(&uct_gaudi_ctx_table->lock);
    uct_gaudi_ctx_check_fork();
}

static void uct_gaudi_ctx_table_unlock(void)
{
    uct_gaudi_process_unlock(&uct_gaudi_ctx_table->lock);
}

/* Wait for the table's condition until @a deadline, the table locked;
 * 0 when the deadline passed */
static int uct_gaudi_ctx_table_wait(ucs_time_t deadline)
{
    ucs_time_t now = ucs_get_time();
    struct timespec ts;
    double left;

    if (now >= deadline) {
        return 0;
    }

    left = ucs_time_to_sec(deadline - now);
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec  += (time_t)left;
    ts.tv_nsec += (long)((left - (time_t)left) * 1e9);
    ts.tv_sec  += ts.tv_nsec / 1000000000l;
    ts.tv_nsec %= 1000000000l;
    /* a wait releases the mutex: not a lock held across it */
    --uct_gaudi_process_locks_held;
    pthread_cond_timedwait(&uct_gaudi_ctx_table->cond,
                           &uct_gaudi_ctx_table->lock, &ts);
    ++uct_gaudi_process_locks_held;
    uct_gaudi_ctx_check_fork();
    return 1;
}

int uct_gaudi_ctx_owned(const uct_gaudi_ctx_t *ctx)
{
    return uct_gaudi_process_owns(ctx->pid);
}

ucs_time_t uct_gaudi_ctx_deadline(void)
{
    return ucs_get_time() +
           ucs_time_from_sec(uct_gaudi_global_config()->open_timeout + 1.0);
}

ucs_status_t uct_gaudi_ctx_slot_take(const uct_gaudi_dev_info_t *info,
                                     ucs_time_t deadline,
                                     uct_gaudi_ctx_t **ctx_p)
{
    uint8_t *state = &uct_gaudi_ctx_table->state[info->minor];
    ucs_status_t status;
    int closing;

    uct_gaudi_ctx_table_lock();
    for (;;) {
        if (*state == UCT_GAUDI_SLOT_OPEN) {
            *ctx_p = uct_gaudi_ctx_table->by_minor[info->minor];
            ++(*ctx_p)->refcount;
            status = UCS_OK;
            break;
        } else if (*state == UCT_GAUDI_SLOT_ABSENT) {
            *state = UCT_GAUDI_SLOT_OPENING;
            status = UCS_INPROGRESS;
            break;
        } else if (!uct_gaudi_ctx_table_wait(deadline)) {
            status = UCS_ERR_TIMED_OUT;
            break;
        }
    }
    closing = (*state == UCT_GAUDI_SLOT_CLOSING);
    uct_gaudi_ctx_table_unlock();

    if (status == UCS_ERR_TIMED_OUT) {
        ucs_error("gaudi %s (%s): another thread of the process is still "
                  "%s the device after %.1f s (UCX_GAUDI_OPEN_TIMEOUT and "
                  "1 s)", info->name, info->node_name,
                  closing ? "closing" : "taking",
                  uct_gaudi_global_config()->open_timeout + 1.0);
    }
    return status;
}

void uct_gaudi_ctx_slot_publish(const uct_gaudi_dev_info_t *info,
                                uct_gaudi_ctx_t *ctx)
{
    uct_gaudi_ctx_table_lock();
    /* a fork child forgot the parent's take: nothing of it is ours */
    if (uct_gaudi_ctx_table->state[info->minor] == UCT_GAUDI_SLOT_OPENING) {
        uct_gaudi_ctx_table->by_minor[info->minor] = ctx;
        uct_gaudi_ctx_table->state[info->minor]    = (ctx != NULL) ?
                                                     UCT_GAUDI_SLOT_OPEN :
                                                     UCT_GAUDI_SLOT_ABSENT;
    }
    pthread_cond_broadcast(&uct_gaudi_ctx_table->cond);
    uct_gaudi_ctx_table_unlock();
}

ucs_status_t uct_gaudi_ctx_take(const uct_gaudi_dev_info_t *info,
                                ucs_time_t deadline, uct_gaudi_ctx_t **ctx_p)
{
    uct_gaudi_ctx_choice_t choice;
    uct_gaudi_ctx_t *ctx = NULL;
    ucs_status_t status;

    status = uct_gaudi_ctx_slot_enter(info, deadline, ctx_p);
    if (status != UCS_INPROGRESS) {
        return status;
    }

    uct_gaudi_ctx_choose(info->asic, &choice);
    status = uct_gaudi_ctx_open(info, &choice,
                                uct_gaudi_global_config()->open_timeout, 1,
                                &ctx);
    uct_gaudi_ctx_slot_publish(info, (status == UCS_OK) ? ctx : NULL);
    *ctx_p = ctx;
    return status;
}

/* The device of get(-1) another thread selected (UCS_OK), or the
 * selection is this thread's (UCS_INPROGRESS); a borrow, which opens
 * nothing, does not wait for another thread's selection */
static ucs_status_t uct_gaudi_ctx_default(int may_open, ucs_time_t deadline,
                                          uct_gaudi_ctx_t **ctx_p)
{
    ucs_status_t status;

    uct_gaudi_ctx_table_lock();
    for (;;) {
        if (uct_gaudi_ctx_table->deflt != NULL) {
            *ctx_p = uct_gaudi_ctx_table->deflt;
            ++(*ctx_p)->refcount;
            status = UCS_OK;
            break;
        } else if (!may_open) {
            status = UCS_INPROGRESS;
            break;
        } else if (!uct_gaudi_ctx_table->selecting) {
            uct_gaudi_ctx_table->selecting = 1;
            status = UCS_INPROGRESS;
            break;
        } else if (!uct_gaudi_ctx_table_wait(deadline)) {
            status = UCS_ERR_TIMED_OUT;
            break;
        }
    }
    uct_gaudi_ctx_table_unlock();

    if (status == UCS_ERR_TIMED_OUT) {
        ucs_error("gaudi: another thread of the process is still selecting "
                  "and taking its device after %.1f s "
                  "(UCX_GAUDI_OPEN_TIMEOUT and 1 s)",
                  uct_gaudi_global_config()->open_timeout + 1.0);
    }
    return status;
}

/* The selection's end: the process keeps the first device selected (a
 * borrow's selection may have run beside another thread's) */
static ucs_status_t uct_gaudi_ctx_set_default(int may_open,
                                              ucs_status_t status,
                                              uct_gaudi_ctx_t **ctx_p)
{
    uct_gaudi_ctx_t *mine = (status == UCS_OK) ? *ctx_p : NULL;

    uct_gaudi_ctx_table_lock();
    if (may_open) {
        uct_gaudi_ctx_table->selecting = 0;
    }
    if ((mine != NULL) && (uct_gaudi_ctx_table->deflt == NULL)) {
        uct_gaudi_ctx_table->deflt = mine;
        mine                       = NULL;
    } else if (mine != NULL) {
        *ctx_p = uct_gaudi_ctx_table->deflt;
        ++(*ctx_p)->refcount;
    }
    pthread_cond_broadcast(&uct_gaudi_ctx_table->cond);
    uct_gaudi_ctx_table_unlock();

    if (mine != NULL) {
        uct_gaudi_ctx_put(mine);
    }
    return status;
}

static ucs_status_t uct_gaudi_ctx_get_common(int index, int may_open,
                                             uct_gaudi_ctx_t **ctx_p)
{
    ucs_time_t deadline = uct_gaudi_ctx_deadline();
    const uct_gaudi_dev_info_t *info;
    ucs_status_t status;

    if (index >= 0) {
        info = uct_gaudi_device_by_index(index);
        if (info == NULL) {
            ucs_error("gaudi: no device with index %d", index);
            return UCS_ERR_NO_DEVICE;
        }
        return uct_gaudi_ctx_take(info, deadline, ctx_p);
    }

    status = uct_gaudi_ctx_default(may_open, deadline, ctx_p);
    if (status != UCS_INPROGRESS) {
        return status;
    }

    status = uct_gaudi_ctx_select(may_open, deadline, ctx_p);
    return uct_gaudi_ctx_set_default(may_open, status, ctx_p);
}

ucs_status_t uct_gaudi_ctx_get(int index, uct_gaudi_ctx_t **ctx_p)
{
    return uct_gaudi_ctx_get_common(index, 1, ctx_p);
}

ucs_status_t uct_gaudi_ctx_borrow(uct_gaudi_ctx_t **ctx_p)
{
    return uct_gaudi_ctx_get_common(-1, 0, ctx_p);
}

/* The default context, if get(-1) selected one already */
const uct_gaudi_dev_info_t *uct_gaudi_ctx_default_info(void)
{
    const uct_gaudi_dev_info_t *info = NULL;

    uct_gaudi_ctx_table_lock();
    if (uct_gaudi_ctx_table->deflt != NULL) {
        info = uct_gaudi_ctx_table->deflt->info;
    }
    uct_gaudi_ctx_table_unlock();
    return info;
}

/*
 * Drop a reference; the last one takes the context out of the table
 * (CLOSING: a take of the device waits until it is closed) and closes it
 * with no lock held. A fork child's put of an inherited context closes
 * only its copy, the table forgot it.
 */
void uct_gaudi_ctx_put(uct_gaudi_ctx_t *ctx)
{
    int minor = ctx->info->minor;
    int last, slot = 0;

    uct_gaudi_ctx_table_lock();
    ucs_assert(ctx->refcount > 0);
    last = (--ctx->refcount == 0);
    if (last && (uct_gaudi_ctx_table->by_minor[minor] == ctx)) {
        uct_gaudi_ctx_table->by_minor[minor] = NULL;
        uct_gaudi_ctx_table->state[minor]    = UCT_GAUDI_SLOT_CLOSING;
        slot                                 = 1;
    }
    if (last && (uct_gaudi_ctx_table->deflt == ctx)) {
        uct_gaudi_ctx_table->deflt = NULL;
    }
    uct_gaudi_ctx_table_unlock();

    if (!last) {
        return;
    }

    uct_gaudi_ctx_close(ctx);
    if (slot) {
        uct_gaudi_ctx_table_lock();
        if (uct_gaudi_ctx_table->state[minor] == UCT_GAUDI_SLOT_CLOSING) {
            uct_gaudi_ctx_table->state[minor] = UCT_GAUDI_SLOT_ABSENT;
        }
        pthread_cond_broadcast(&uct_gaudi_ctx_table->cond);
        uct_gaudi_ctx_table_unlock();
    }
}

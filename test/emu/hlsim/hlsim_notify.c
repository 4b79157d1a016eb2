/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The driver's notifier and captured page fault (facts 2.4; docs/hlsim.md,
 * "Notifier events"). K612 = Linux 6.12 drivers/accel/habanalabs, K61 =
 * Linux 6.1 drivers/misc/habanalabs; Habana's driver (HAB) has the K612
 * code for all of this (common/habanalabs_ioctl.c events_info,
 * eventfd_register/unregister, page_fault_info, _hl_info_ioctl).
 */

#include "hlsim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

/* pf_captured: claimed by a fault, then available to readers */
#define HLSIM_PF_CLAIMED   1
#define HLSIM_PF_AVAILABLE 2


/*
 * Events of an MMU page fault of a DMA. Gaudi2: the MMU event handler adds
 * USER_ENGINE_ERR (K612 gaudi2/gaudi2.c:9981-9987, K61 gaudi2/gaudi2.c:
 * 8764-8770), and on K612 hl_handle_page_fault adds PAGE_FAULT (K612
 * gaudi2/gaudi2.c:9034, common/device.c:2804-2811); K61 resets Gaudi2 and
 * adds DEVICE_RESET (K61 gaudi2/gaudi2.c:8985-8987). Gaudi1: USER_ENGINE_ERR
 * (K612 gaudi/gaudi.c:7751-7756, K61 :7833-7837), PAGE_FAULT on K612 only
 * (K612 gaudi/gaudi.c:6693). K61 has no PAGE_FAULT bit (U61:711-727).
 */
static uint64_t hlsim_pf_events(int dev)
{
    uint64_t mask = HL_NOTIFIER_EVENT_USER_ENGINE_ERR;

    if (!hlsim_cfg.legacy) {
        mask |= GAUDI_HL_NOTIFIER_EVENT_PAGE_FAULT;
    } else if (hlsim_cfg.dev[dev].asic == HLSIM_GAUDI2) {
        mask |= HL_NOTIFIER_EVENT_DEVICE_RESET;
    }
    return mask;
}

/*
 * hl_notifier_event_send: OR the events into the file's mask, whether or
 * not an eventfd is registered, and signal the eventfd if one is (K612
 * common/device.c:2116-2125, K61 :1741-1750). Lock held.
 */
static void hlsim_notify_send(hlsim_file_t *f, uint64_t mask)
{
    uint64_t one = 1;

    __atomic_or_fetch(&f->events_mask, mask, __ATOMIC_ACQ_REL);
    if ((f->eventfd1 > 0) &&
        (syscall(SYS_write, f->eventfd1 - 1, &one, sizeof(one)) !=
         sizeof(one))) {
        hlsim_log("dev%d: cannot signal the registered eventfd: %m", f->dev);
    }
}

/* The compute file of @a dev in this process (the driver's fpriv_list:
 * one compute open per device); lock held */
static hlsim_file_t *hlsim_notify_file(int dev)
{
    hlsim_file_t *f;
    int           fd;

    for (fd = 0; fd < HLSIM_FD_MAX; fd++) {
        f = hlsim_fd_get(fd);
        if ((f != NULL) && (f->kind == HLSIM_F_COMPUTE) && (f->dev == dev)) {
            return f;
        }
    }
    return NULL;
}

/*
 * hl_capture_page_fault: the first fault since the last compute open only
 * (K612 common/device.c:2788-2802; reset at open by
 * hl_enable_err_info_capture, common/habanalabs_drv.c:253,
 * common/device.c:2873-2879). Device-wide, hence in the node's state.
 */
static void hlsim_notify_capture(int dev, uint64_t addr)
{
    hlsim_shdev_t *sd  = &hlsim_shm->dev[dev];
    uint32_t       old = 0;

    if (!__atomic_compare_exchange_n(&sd->pf_captured, &old,
                                     HLSIM_PF_CLAIMED, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        return;
    }
    sd->pf_timestamp = hlsim_now_ns();   /* ktime_get(): CLOCK_MONOTONIC */
    sd->pf_addr      = addr;
    __atomic_store_n(&sd->pf_captured, HLSIM_PF_AVAILABLE, __ATOMIC_RELEASE);
}

void hlsim_notify_open(int dev)
{
    __atomic_store_n(&hlsim_shm->dev[dev].pf_captured, 0, __ATOMIC_RELEASE);
}

/*
 * A page fault of CS @a seq (0: not of a CS). The fault reaches the driver
 * on the event queue (EQ interrupt, work on eq_wq: K612 common/irq.c:
 * 496-567, 59-67); the CS's completion on a completion queue (CQ
 * interrupt, work on cq_wq: irq.c:130-195, 86); two single-threaded
 * workqueues of their own (K612 common/device.c:906, 915), so nothing
 * orders the two: HLSIM_PAGE_FAULT_EVENT=before publishes the events at
 * the fault, =after (default, the module's harder case) only
 * HLSIM_PAGE_FAULT_EVENT_US after WAIT_CS reported the CS finished.
 */
void hlsim_notify_fault(int dev, uint64_t addr, uint64_t seq)
{
    hlsim_file_t *f;
    uint64_t      mask = hlsim_pf_events(dev);

    pthread_mutex_lock(&hlsim_lock);
    f = hlsim_notify_file(dev);
    if ((f != NULL) && hlsim_cfg.pf_event_after && (seq != 0)) {
        /* the capture is made by the same event handler (K612
         * common/device.c:2804-2811): late as well */
        if (!f->ev_pending) {
            f->ev_addr = addr;
        }
        f->ev_pending |= mask;
        f->ev_seq      = HLSIM_MAX(f->ev_seq, seq);
        f->ev_due_ns   = 0;
    } else {
        if (!hlsim_cfg.legacy) {
            hlsim_notify_capture(dev, addr);   /* K61 captures none */
        }
        if (f != NULL) {
            hlsim_notify_send(f, mask);
        }
    }
    pthread_mutex_unlock(&hlsim_lock);
}

/* WAIT_CS reported CS @a seq finished: late events become due */
void hlsim_notify_reported(hlsim_file_t *f, uint64_t seq)
{
    if (f->ev_pending && !f->ev_due_ns && (seq >= f->ev_seq)) {
        f->ev_due_ns = hlsim_now_ns() + hlsim_cfg.pf_event_us * 1000ULL;
    }
}

/* Publish late events that are due (checked at the process's ioctls) */
void hlsim_notify_due(hlsim_file_t *f)
{
    if (f->ev_due_ns && (hlsim_now_ns() >= f->ev_due_ns)) {
        if (!hlsim_cfg.legacy) {
            hlsim_notify_capture(f->dev, f->ev_addr);
        }
        hlsim_notify_send(f, f->ev_pending);
        f->ev_pending = 0;
        f->ev_due_ns  = 0;
    }
}

/* eventfd_ctx_fdget: EBADF for no file, EINVAL for a file that is no
 * eventfd (its fdinfo has "eventfd-count") */
static int hlsim_notify_check_eventfd(int fd)
{
    char path[64], buf[512];
    int  pfd;
    ssize_t n;

    if (syscall(SYS_fcntl, fd, F_GETFD) < 0) {
        return -EBADF;
    }
    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
    pfd = hlsim_real.open(path, O_RDONLY | O_CLOEXEC);
    if (pfd < 0) {
        return -EBADF;
    }
    n = read(pfd, buf, sizeof(buf) - 1);
    hlsim_real.close(pfd);
    buf[(n > 0) ? n : 0] = '\0';
    return strstr(buf, "eventfd-count:") ? 0 : -EINVAL;
}

/* K612 common/habanalabs_ioctl.c:772-793, K61 :714-735; lock held */
static int hlsim_notify_register(hlsim_file_t *f, int fd)
{
    int err, copy;

    if (f->eventfd1 > 0) {
        return -EINVAL;   /* one per open file */
    }
    if ((err = hlsim_notify_check_eventfd(fd))) {
        return err;
    }
    /* the driver holds the eventfd's context, not the caller's fd */
    copy = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) {
        return -errno;
    }
    f->eventfd1 = copy + 1;
    return 0;
}

/* K612 :795-807, K61 :737-749; lock held */
static int hlsim_notify_unregister(hlsim_file_t *f)
{
    if (f->eventfd1 <= 0) {
        return -EINVAL;
    }
    hlsim_real.close(f->eventfd1 - 1);
    f->eventfd1 = 0;
    return 0;
}

/* hpriv release puts the eventfd (K612 common/device.c:536-537) */
void hlsim_notify_release(hlsim_file_t *f)
{
    if (f->eventfd1 > 0) {
        hlsim_notify_unregister(f);
    }
}

/* events_info: read and clear (K612 :140-155, K61 :128-143), under the
 * file's own lock in the driver: an atomic exchange here, not hlsim_lock,
 * which the engines hold */
static int hlsim_notify_get_events(hlsim_file_t *f, struct hl_info_args *a)
{
    uint64_t mask;

    if ((a->return_size < sizeof(mask)) || !a->return_pointer) {
        return -EINVAL;
    }
    if (__atomic_load_n(&f->ev_due_ns, __ATOMIC_RELAXED)) {
        pthread_mutex_lock(&hlsim_lock);
        hlsim_notify_due(f);
        pthread_mutex_unlock(&hlsim_lock);
    }
    mask = __atomic_exchange_n(&f->events_mask, 0, __ATOMIC_ACQ_REL);
    return hlsim_copy_to_user(a->return_pointer, &mask, sizeof(mask));
}

/* page_fault_info: the capture, as often as asked, or nothing at all
 * (K612 :845-861) */
static int hlsim_notify_pf_info(int dev, struct hl_info_args *a)
{
    hlsim_shdev_t                  *sd = &hlsim_shm->dev[dev];
    struct gaudi_hl_page_fault_info pf;

    if (!a->return_size || !a->return_pointer) {
        return -EINVAL;
    }
    if (__atomic_load_n(&sd->pf_captured, __ATOMIC_ACQUIRE) !=
        HLSIM_PF_AVAILABLE) {
        return 0;   /* the buffer is left as it is */
    }
    memset(&pf, 0, sizeof(pf));
    pf.timestamp = sd->pf_timestamp;
    pf.addr      = sd->pf_addr;
    return hlsim_copy_to_user(a->return_pointer, &pf,
                              HLSIM_MIN(a->return_size, sizeof(pf)));
}

/*
 * The notifier's INFO ops; 1 for any other op. Where each sits in the
 * dispatch (with or without the operational check): K612
 * common/habanalabs_ioctl.c:1061-1071 (GET_EVENTS, PAGE_FAULT_EVENT,
 * UNREGISTER: always), :1133-1134 (REGISTER: operational only); K61
 * :843-844 (GET_EVENTS: always), :899-903 (REGISTER, UNREGISTER:
 * operational only), no PAGE_FAULT_EVENT (op 33: "Invalid request").
 */
int hlsim_notify_info(hlsim_file_t *f, struct hl_info_args *a,
                      int operational)
{
    int rc;

    switch (a->op) {
    case HL_INFO_GET_EVENTS:
    case HL_INFO_REGISTER_EVENTFD:
    case HL_INFO_UNREGISTER_EVENTFD:
        break;
    case GAUDI_HL_INFO_PAGE_FAULT_EVENT:
        if (hlsim_cfg.legacy) {
            return 1;
        }
        if (__atomic_load_n(&f->ev_due_ns, __ATOMIC_RELAXED)) {
            pthread_mutex_lock(&hlsim_lock);
            hlsim_notify_due(f);
            pthread_mutex_unlock(&hlsim_lock);
        }
        return hlsim_notify_pf_info(f->dev, a);
    default:
        return 1;
    }
    if (a->pad) {
        return -EINVAL;
    }
    if (!operational && ((a->op == HL_INFO_REGISTER_EVENTFD) ||
                         (hlsim_cfg.legacy &&
                          (a->op == HL_INFO_UNREGISTER_EVENTFD)))) {
        return -EBUSY;
    }
    if (a->op == HL_INFO_GET_EVENTS) {
        return hlsim_notify_get_events(f, a);
    }
    pthread_mutex_lock(&hlsim_lock);
    switch (a->op) {
    case HL_INFO_REGISTER_EVENTFD:
        rc = hlsim_notify_register(f, (int)a->eventfd);
        break;
    default:
        rc = hlsim_notify_unregister(f);
        break;
    }
    pthread_mutex_unlock(&hlsim_lock);
    return rc;
}

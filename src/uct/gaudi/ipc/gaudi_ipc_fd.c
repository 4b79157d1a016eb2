/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE /* struct ucred, accept4 */
#endif

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_ipc_fd.h"

#include <uct/gaudi/dev/gaudi_dev.h>

#include <ucs/async/async.h>
#include <ucs/debug/log.h>
#include <inttypes.h>
#include <ucs/sys/string.h>
#include <ucs/sys/uid.h>
#include <ucs/time/time.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

/* glibc < 2.36 has no wrappers; the numbers are the same on every arch
 * that has them (asm-generic) */
#ifndef SYS_pidfd_open
#  define SYS_pidfd_open  434
#endif
#ifndef SYS_pidfd_getfd
#  define SYS_pidfd_getfd 438
#endif

#define UCT_GAUDI_IPC_FD_MAGIC 0x47495046u /* "GIPF" */
#define UCT_GAUDI_IPC_CAP_SYS_PTRACE 19       /* linux/capability.h */


const char *uct_gaudi_ipc_fd_method_names[] = {
    [UCT_GAUDI_IPC_FD_AUTO]   = "auto",
    [UCT_GAUDI_IPC_FD_PIDFD]  = "pidfd",
    [UCT_GAUDI_IPC_FD_SOCKET] = "socket",
    [UCT_GAUDI_IPC_FD_LAST]   = NULL
};


/* Request and reply of the socket protocol (one datagram each) */
typedef struct uct_gaudi_ipc_fd_req {
    uint32_t               magic;
    int32_t                fd;      /* dma-buf fd number */
    int32_t                token;   /* token fd number */
    uct_gaudi_ipc_buf_id_t id;
} uct_gaudi_ipc_fd_req_t;

typedef struct uct_gaudi_ipc_fd_rep {
    uint32_t magic;
    int32_t  status;   /* ucs_status_t; with UCS_OK the dma-buf fd and the
                          token fd are attached, in this order */
} uct_gaudi_ipc_fd_rep_t;

#define UCT_GAUDI_IPC_FD_NUM_FDS 2


/* The process's server: one socket, refcounted by the MDs */
static struct {
    pthread_mutex_t lock;
    unsigned        refcount;
    int             fd;
    pid_t           pid;    /* the server belongs to this process only */
    uint64_t        name;   /* random part of its name */
} uct_gaudi_ipc_fd_server = {
    .lock     = PTHREAD_MUTEX_INITIALIZER,
    .refcount = 0,
    .fd       = -1,
    .pid      = 0,
    .name     = 0
};


ucs_status_t uct_gaudi_ipc_pidfd_open(pid_t pid, int *pidfd_p)
{
    int fd = syscall(SYS_pidfd_open, pid, 0);

    if (fd < 0) {
        if (errno == ESRCH) {
            return UCS_ERR_CONNECTION_RESET;
        }
        ucs_error("gaudi_ipc: pidfd_open(%d) failed: %m", pid);
        return UCS_ERR_IO_ERROR;
    }

    /* pidfd_open gives O_CLOEXEC already (man 2 pidfd_open) */
    *pidfd_p = fd;
    return UCS_OK;
}

int uct_gaudi_ipc_pidfd_alive(int pidfd)
{
    struct pollfd pfd = {.fd = pidfd, .events = POLLIN};

    /* readable once the process has exited */
    return poll(&pfd, 1, 0) == 0;
}

int uct_gaudi_ipc_fd_check(int fd, const uct_gaudi_ipc_buf_id_t *id)
{
    struct stat st;

    return (fstat(fd, &st) == 0) && ((uint64_t)st.st_ino == id->ino) &&
           ((uint64_t)st.st_dev == id->dev);
}

int uct_gaudi_ipc_token_check(int fd, const uct_gaudi_ipc_buf_id_t *id)
{
    const int sealed = F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW;
    uint64_t uid;
    int seals;

    /* sealed: nobody can have rewritten the id since the exporter did */
    seals = fcntl(fd, F_GET_SEALS);
    return (seals >= 0) && ((seals & sealed) == sealed) &&
           (pread(fd, &uid, sizeof(uid), 0) == sizeof(uid)) &&
           (uid == id->uid);
}

/* Abstract socket name, nothing on disk: per pid namespace and pid, and
 * a random part, so that no other user can bind it first (squat) */
static void uct_gaudi_ipc_fd_name(uint64_t pidns, pid_t pid, uint64_t name,
                                  struct sockaddr_un *sa, socklen_t *len)
{
    int n;

    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
                 "ucx-gaudi-ipc.%" PRIu64 ".%d.%016" PRIx64, pidns, (int)pid,
                 name);
    *len = offsetof(struct sockaddr_un, sun_path) + 1 + n;
}

void uct_gaudi_ipc_fd_sockaddr(const uct_gaudi_ipc_rkey_t *key,
                               struct sockaddr_un *sa, socklen_t *len_p)
{
    uct_gaudi_ipc_fd_name(key->pidns, key->pid, key->server, sa, len_p);
}

uint64_t uct_gaudi_ipc_fd_server_name(void)
{
    return uct_gaudi_ipc_fd_server.name;
}


/* Importer */

/* pidfd_getfd of the exporter's fd @a remote_fd, the @a what of the key */
static ucs_status_t uct_gaudi_ipc_fd_by_pidfd(int pidfd,
                                              const uct_gaudi_ipc_rkey_t *key,
                                              int remote_fd, const char *what,
                                              int *fd_p)
{
    int fd = syscall(SYS_pidfd_getfd, pidfd, remote_fd, 0);

    if (fd >= 0) {
        /* pidfd_getfd sets FD_CLOEXEC (man 2 pidfd_getfd) */
        *fd_p = fd;
        return UCS_OK;
    }

    switch (errno) {
    case EPERM:
    case EACCES:
        /* the ptrace access mode check (PTRACE_MODE_ATTACH) refused */
        ucs_error("gaudi_ipc: permission denied: pid %d does not let this "
                  "process (uid %d) take its %s fd %d (pidfd_getfd: "
                  "%m; another user, a non-dumpable process or a ptrace "
                  "restriction)", key->pid, (int)geteuid(), what, remote_fd);
        return UCS_ERR_REJECTED;
    case ENOSYS:
        /* no pidfd_getfd (kernel < 5.6) or a seccomp filter */
        ucs_debug("gaudi_ipc: pidfd_getfd(pid %d, fd %d): %m", key->pid,
                  remote_fd);
        return UCS_ERR_UNSUPPORTED;
    case ESRCH:
        return UCS_ERR_CONNECTION_RESET;
    case EBADF:
        /* the exporter closed it: deregistered or invalidated */
        ucs_error("gaudi_ipc: %s fd %d of pid %d is closed: the buffer "
                  "0x%" PRIx64 " was deregistered or invalidated (stale "
                  "rkey)", what, remote_fd, key->pid, key->base);
        return UCS_ERR_INVALID_ADDR;
    default:
        ucs_error("gaudi_ipc: pidfd_getfd(pid %d, fd %d) failed: %m",
                  key->pid, remote_fd);
        return UCS_ERR_IO_ERROR;
    }
}

/* The token first: a closed or replaced one means a stale key, whatever
 * became of the dma-buf's number */
static ucs_status_t
uct_gaudi_ipc_fd_pair_by_pidfd(int pidfd, const uct_gaudi_ipc_rkey_t *key,
                               int *fd_p, int *token_p)
{
    ucs_status_t status;

    status = uct_gaudi_ipc_fd_by_pidfd(pidfd, key, key->token, "key token",
                                       token_p);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_gaudi_ipc_fd_by_pidfd(pidfd, key, key->fd, "dma-buf", fd_p);
    if (status != UCS_OK) {
        close(*token_p);
    }
    return status;
}

static ucs_status_t uct_gaudi_ipc_fd_recv(int sock,
                                          const uct_gaudi_ipc_rkey_t *key,
                                          int *fd_p, int *token_p)
{
    char cbuf[CMSG_SPACE(sizeof(int) * UCT_GAUDI_IPC_FD_NUM_FDS)];
    int fds[UCT_GAUDI_IPC_FD_NUM_FDS] = {-1, -1};
    uct_gaudi_ipc_fd_rep_t rep;
    struct iovec iov        = {.iov_base = &rep, .iov_len = sizeof(rep)};
    struct msghdr msg       = {0};
    struct cmsghdr *cmsg;
    ucs_status_t status;
    size_t nfds;
    ssize_t n;
    int i;

    msg.msg_iov        = &iov;
    msg.msg_iovlen     = 1;
    msg.msg_control    = cbuf;
    msg.msg_controllen = sizeof(cbuf);

    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if ((n < 0) && (errno == ECONNRESET)) {
        /* the server closed before reading our request (a refusal): the
         * reset is reported first, its answer is still queued */
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    }
    if (n != sizeof(rep)) {
        ucs_error("gaudi_ipc: no answer from pid %d for fd %d: %s",
                  key->pid, key->fd, (n < 0) ? strerror(errno) :
                                               "connection closed");
        return (n == 0) ? UCS_ERR_CONNECTION_RESET : UCS_ERR_TIMED_OUT;
    }

    cmsg = CMSG_FIRSTHDR(&msg);
    if ((cmsg != NULL) && (cmsg->cmsg_level == SOL_SOCKET) &&
        (cmsg->cmsg_type == SCM_RIGHTS)) {
        nfds = ucs_min((cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int),
                       UCT_GAUDI_IPC_FD_NUM_FDS);
        memcpy(fds, CMSG_DATA(cmsg), nfds * sizeof(int));
    }

    if ((rep.magic == UCT_GAUDI_IPC_FD_MAGIC) &&
        (rep.status == UCS_ERR_REJECTED)) {
        ucs_error("gaudi_ipc: permission denied: pid %d refused this process "
                  "(uid %d) its dma-buf fd %d (the rule of ptrace: same "
                  "user and a dumpable exporter, or CAP_SYS_PTRACE)",
                  key->pid, (int)geteuid(), key->fd);
        status = UCS_ERR_REJECTED;
        goto err;
    }

    if ((rep.magic != UCT_GAUDI_IPC_FD_MAGIC) || (rep.status != UCS_OK) ||
        (fds[0] < 0) || (fds[1] < 0)) {
        ucs_error("gaudi_ipc: pid %d has no live export 0x%" PRIx64
                  " (fd %d, token fd %d): %s (deregistered or invalidated; "
                  "stale rkey)", key->pid, key->base, key->fd, key->token,
                  ucs_status_string((ucs_status_t)rep.status));
        status = UCS_ERR_INVALID_ADDR;
        goto err;
    }

    *fd_p    = fds[0];
    *token_p = fds[1];
    return UCS_OK;

err:
    for (i = 0; i < UCT_GAUDI_IPC_FD_NUM_FDS; ++i) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    return status;
}

/* The server we reached must be the exporter itself, not a process that
 * bound its name */
static ucs_status_t
uct_gaudi_ipc_fd_check_server(int sock, const uct_gaudi_ipc_rkey_t *key)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
        ucs_error("gaudi_ipc: SO_PEERCRED of the fd server of pid %d: %m",
                  key->pid);
        return UCS_ERR_IO_ERROR;
    }
    if (cred.pid != key->pid) {
        ucs_error("gaudi_ipc: the fd server name of pid %d is held by pid "
                  "%d (uid %d): refused", key->pid, (int)cred.pid,
                  (int)cred.uid);
        return UCS_ERR_REJECTED;
    }
    return UCS_OK;
}

static ucs_status_t uct_gaudi_ipc_fd_by_socket(const uct_gaudi_ipc_rkey_t *key,
                                               double timeout, int *fd_p,
                                               int *token_p)
{
    uct_gaudi_ipc_fd_req_t req = {
        .magic = UCT_GAUDI_IPC_FD_MAGIC,
        .fd    = key->fd,
        .token = key->token,
        .id    = key->id
    };
    struct timeval tv;
    struct sockaddr_un sa;
    ucs_status_t status;
    socklen_t len;
    int sock;

    sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (sock < 0) {
        ucs_error("gaudi_ipc: socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    tv.tv_sec  = (time_t)timeout;
    tv.tv_usec = (suseconds_t)((timeout - tv.tv_sec) * 1e6);
    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

    uct_gaudi_ipc_fd_sockaddr(key, &sa, &len);
    if (connect(sock, (struct sockaddr*)&sa, len) < 0) {
        ucs_error("gaudi_ipc: cannot reach the fd server of pid %d: %m "
                  "(exited, or another network namespace)", key->pid);
        status = (errno == ECONNREFUSED) ? UCS_ERR_CONNECTION_RESET :
                                           UCS_ERR_UNREACHABLE;
        goto out;
    }

    status = uct_gaudi_ipc_fd_check_server(sock, key);
    if (status != UCS_OK) {
        goto out;
    }

    /* a refusal may be sent before our request is read: read it anyway */
    if ((send(sock, &req, sizeof(req), MSG_NOSIGNAL) != sizeof(req)) &&
        (errno != EPIPE)) {
        ucs_error("gaudi_ipc: request to pid %d failed: %m", key->pid);
        status = UCS_ERR_CONNECTION_RESET;
        goto out;
    }

    status = uct_gaudi_ipc_fd_recv(sock, key, fd_p, token_p);
out:
    close(sock);
    return status;
}

ucs_status_t uct_gaudi_ipc_fd_fetch(int pidfd, const uct_gaudi_ipc_rkey_t *key,
                                    uct_gaudi_ipc_fd_method_t method,
                                    double timeout, int *fd_p, int *token_p)
{
    ucs_status_t status;

    if (method != UCT_GAUDI_IPC_FD_SOCKET) {
        status = uct_gaudi_ipc_fd_pair_by_pidfd(pidfd, key, fd_p, token_p);
        if ((status != UCS_ERR_UNSUPPORTED) ||
            (method == UCT_GAUDI_IPC_FD_PIDFD)) {
            if (status == UCS_ERR_UNSUPPORTED) {
                ucs_error("gaudi_ipc: pidfd_getfd is not available for pid "
                          "%d and UCX_GAUDI_IPC_FD_METHOD=pidfd", key->pid);
            }
            return status;
        }
        /* only where pidfd_getfd does not exist: a refusal is final */
        ucs_debug("gaudi_ipc: no pidfd_getfd: asking the fd server of pid %d",
                  key->pid);
    }

    return uct_gaudi_ipc_fd_by_socket(key, timeout, fd_p, token_p);
}


/* Exporter */

/* The answer, with @a fds (UCT_GAUDI_IPC_FD_NUM_FDS of them) or none */
static void uct_gaudi_ipc_fd_reply(int conn, ucs_status_t status,
                                   const int *fds)
{
    uct_gaudi_ipc_fd_rep_t rep = {
        .magic  = UCT_GAUDI_IPC_FD_MAGIC,
        .status = status
    };
    char cbuf[CMSG_SPACE(sizeof(int) * UCT_GAUDI_IPC_FD_NUM_FDS)];
    struct iovec iov  = {.iov_base = &rep, .iov_len = sizeof(rep)};
    struct msghdr msg = {0};
    struct cmsghdr *cmsg;

    msg.msg_iov    = &iov;
    msg.msg_iovlen = 1;
    if (fds != NULL) {
        memset(cbuf, 0, sizeof(cbuf));
        msg.msg_control    = cbuf;
        msg.msg_controllen = sizeof(cbuf);
        cmsg               = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level   = SOL_SOCKET;
        cmsg->cmsg_type    = SCM_RIGHTS;
        cmsg->cmsg_len     = CMSG_LEN(sizeof(int) * UCT_GAUDI_IPC_FD_NUM_FDS);
        memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * UCT_GAUDI_IPC_FD_NUM_FDS);
    }

    if (sendmsg(conn, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        ucs_debug("gaudi_ipc: fd server reply failed: %m");
    }
}

/* Whether process @a pid has CAP_SYS_PTRACE (effective) */
static int uct_gaudi_ipc_fd_has_cap_ptrace(pid_t pid)
{
    unsigned long long caps = 0;
    char path[64], line[256];
    int found = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    while (!found && (fgets(line, sizeof(line), f) != NULL)) {
        found = (sscanf(line, "CapEff: %llx", &caps) == 1);
    }
    fclose(f);
    return found && (caps & (1ull << UCT_GAUDI_IPC_CAP_SYS_PTRACE));
}

/*
 * The rule pidfd_getfd would apply (ptrace access mode ATTACH, as in the
 * kernel's __ptrace_may_access): the client has CAP_SYS_PTRACE, or it has
 * our user and group ids (real, effective and saved all equal) and we are
 * dumpable. LSMs (Yama) are not emulated: they can only refuse more.
 */
static int uct_gaudi_ipc_fd_peer_allowed(const struct ucred *cred)
{
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;

    if (uct_gaudi_ipc_fd_has_cap_ptrace(cred->pid)) {
        return 1;
    }
    if ((getresuid(&ruid, &euid, &suid) < 0) ||
        (getresgid(&rgid, &egid, &sgid) < 0)) {
        return 0;
    }
    return (cred->uid == ruid) && (cred->uid == euid) &&
           (cred->uid == suid) && (cred->gid == rgid) &&
           (cred->gid == egid) && (cred->gid == sgid) &&
           (prctl(PR_GET_DUMPABLE) == 1);
}

static void uct_gaudi_ipc_fd_serve(int conn)
{
    struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
    uct_gaudi_ipc_fd_req_t req;
    struct ucred cred;
    socklen_t len = sizeof(cred);
    ucs_status_t status;
    int fds[UCT_GAUDI_IPC_FD_NUM_FDS];

    /* who it is first: a client we refuse is never waited for, so another
     * user cannot hold the async thread */
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
        return;
    }
    if (!uct_gaudi_ipc_fd_peer_allowed(&cred)) {
        ucs_diag("gaudi_ipc: fd server: permission denied to pid %d "
                 "(uid %d)", (int)cred.pid, (int)cred.uid);
        uct_gaudi_ipc_fd_reply(conn, UCS_ERR_REJECTED, NULL);
        return;
    }

    /* a client allowed to ptrace us could stall us anyway; still bound */
    setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if ((recv(conn, &req, sizeof(req), 0) != sizeof(req)) ||
        (req.magic != UCT_GAUDI_IPC_FD_MAGIC)) {
        ucs_debug("gaudi_ipc: fd server: bad request");
        return;
    }

    status = uct_gaudi_ipc_export_dup(&req.id, req.fd, req.token, &fds[0],
                                      &fds[1]);
    uct_gaudi_ipc_fd_reply(conn, status, (status == UCS_OK) ? fds : NULL);
    if (status == UCS_OK) {
        close(fds[0]);
        close(fds[1]);
    }
}

static void uct_gaudi_ipc_fd_server_cb(int id, ucs_event_set_types_t events,
                                       void *arg)
{
    int conn;

    for (;;) {
        conn = accept4(id, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0) {
            return; /* EAGAIN: no more clients */
        }
        uct_gaudi_ipc_fd_serve(conn);
        close(conn);
    }
}

static ucs_status_t uct_gaudi_ipc_fd_server_start(void)
{
    struct sockaddr_un sa;
    ucs_status_t status;
    int ret, tries = 0;
    uint64_t name;
    socklen_t len;
    int fd;

    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        ucs_error("gaudi_ipc: fd server socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    /* a random name: a taken one is drawn again */
    do {
        name = ucs_generate_uuid((uintptr_t)&sa ^ (uint64_t)random());
        uct_gaudi_ipc_fd_name(uct_gaudi_ipc_pidns(), getpid(), name, &sa,
                              &len);
        ret = bind(fd, (struct sockaddr*)&sa, len);
    } while ((ret < 0) && (errno == EADDRINUSE) && (++tries < 8));
    if ((ret < 0) || (listen(fd, 64) < 0)) {
        ucs_error("gaudi_ipc: fd server bind/listen failed: %m");
        close(fd);
        return UCS_ERR_IO_ERROR;
    }

    status = ucs_async_set_event_handler(UCS_ASYNC_MODE_THREAD_SPINLOCK, fd,
                                         UCS_EVENT_SET_EVREAD,
                                         uct_gaudi_ipc_fd_server_cb, NULL,
                                         NULL);
    if (status != UCS_OK) {
        ucs_error("gaudi_ipc: fd server: no async handler: %s",
                  ucs_status_string(status));
        close(fd);
        return status;
    }

    ucs_debug("gaudi_ipc: fd server of pid %d on @%s", getpid(),
              sa.sun_path + 1);
    uct_gaudi_ipc_fd_server.fd   = fd;
    uct_gaudi_ipc_fd_server.pid  = getpid();
    uct_gaudi_ipc_fd_server.name = name;
    return UCS_OK;
}

ucs_status_t uct_gaudi_ipc_fd_server_get(void)
{
    ucs_status_t status = UCS_OK;

    pthread_mutex_lock(&uct_gaudi_ipc_fd_server.lock);
    if (!uct_gaudi_process_owns(uct_gaudi_ipc_fd_server.pid)) {
        /* fork child: the parent's socket and async handler are not ours */
        uct_gaudi_ipc_fd_server.refcount = 0;
        uct_gaudi_ipc_fd_server.fd       = -1;
    }
    if (uct_gaudi_ipc_fd_server.refcount == 0) {
        status = uct_gaudi_ipc_fd_server_start();
    }
    if (status == UCS_OK) {
        ++uct_gaudi_ipc_fd_server.refcount;
    }
    pthread_mutex_unlock(&uct_gaudi_ipc_fd_server.lock);
    return status;
}

void uct_gaudi_ipc_fd_server_put(void)
{
    pthread_mutex_lock(&uct_gaudi_ipc_fd_server.lock);
    if (uct_gaudi_process_owns(uct_gaudi_ipc_fd_server.pid) &&
        (--uct_gaudi_ipc_fd_server.refcount == 0)) {
        ucs_async_remove_handler(uct_gaudi_ipc_fd_server.fd, 1);
        close(uct_gaudi_ipc_fd_server.fd);
        uct_gaudi_ipc_fd_server.fd = -1;
    }
    pthread_mutex_unlock(&uct_gaudi_ipc_fd_server.lock);
}

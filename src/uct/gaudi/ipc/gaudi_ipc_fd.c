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

#include <ucs/async/async.h>
#include <ucs/debug/log.h>
#include <inttypes.h>
#include <ucs/sys/string.h>
#include <ucs/time/time.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
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


const char *uct_gaudi_ipc_fd_method_names[] = {
    [UCT_GAUDI_IPC_FD_AUTO]   = "auto",
    [UCT_GAUDI_IPC_FD_PIDFD]  = "pidfd",
    [UCT_GAUDI_IPC_FD_SOCKET] = "socket",
    [UCT_GAUDI_IPC_FD_LAST]   = NULL
};


/* Request and reply of the socket protocol (one datagram each) */
typedef struct uct_gaudi_ipc_fd_req {
    uint32_t               magic;
    int32_t                fd;
    uct_gaudi_ipc_buf_id_t id;
} uct_gaudi_ipc_fd_req_t;

typedef struct uct_gaudi_ipc_fd_rep {
    uint32_t magic;
    int32_t  status;   /* ucs_status_t; with UCS_OK the fd is attached */
} uct_gaudi_ipc_fd_rep_t;


/* The process's server: one socket, refcounted by the MDs */
static struct {
    pthread_mutex_t lock;
    unsigned        refcount;
    int             fd;
    pid_t           pid;    /* the server belongs to this process only */
} uct_gaudi_ipc_fd_server = {
    .lock     = PTHREAD_MUTEX_INITIALIZER,
    .refcount = 0,
    .fd       = -1,
    .pid      = 0
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

/* Abstract socket name: per pid namespace and pid, nothing on disk */
static void uct_gaudi_ipc_fd_sockaddr(uint64_t pidns, pid_t pid,
                                      struct sockaddr_un *sa, socklen_t *len)
{
    int n;

    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
                 "ucx-gaudi-ipc.%" PRIu64 ".%d", pidns, (int)pid);
    *len = offsetof(struct sockaddr_un, sun_path) + 1 + n;
}


/* Importer */

static ucs_status_t uct_gaudi_ipc_fd_by_pidfd(int pidfd,
                                              const uct_gaudi_ipc_rkey_t *key,
                                              int *fd_p)
{
    int fd = syscall(SYS_pidfd_getfd, pidfd, key->fd, 0);

    if (fd >= 0) {
        /* pidfd_getfd sets FD_CLOEXEC (man 2 pidfd_getfd) */
        *fd_p = fd;
        return UCS_OK;
    }

    switch (errno) {
    case EPERM:
    case EACCES:
    case ENOSYS:
        /* ptrace access mode check refused, or a seccomp filter */
        ucs_debug("gaudi_ipc: pidfd_getfd(pid %d, fd %d): %m", key->pid,
                  key->fd);
        return UCS_ERR_UNSUPPORTED;
    case ESRCH:
        return UCS_ERR_CONNECTION_RESET;
    case EBADF:
        /* the exporter closed it: deregistered */
        ucs_error("gaudi_ipc: fd %d of pid %d is closed: the buffer "
                  "0x%" PRIx64 " was deregistered (stale rkey)", key->fd,
                  key->pid, key->base);
        return UCS_ERR_INVALID_ADDR;
    default:
        ucs_error("gaudi_ipc: pidfd_getfd(pid %d, fd %d) failed: %m",
                  key->pid, key->fd);
        return UCS_ERR_IO_ERROR;
    }
}

static ucs_status_t uct_gaudi_ipc_fd_recv(int sock, const uct_gaudi_ipc_rkey_t *key,
                                          int *fd_p)
{
    char cbuf[CMSG_SPACE(sizeof(int))];
    uct_gaudi_ipc_fd_rep_t rep;
    struct iovec iov        = {.iov_base = &rep, .iov_len = sizeof(rep)};
    struct msghdr msg       = {0};
    struct cmsghdr *cmsg;
    ssize_t n;
    int fd = -1;

    msg.msg_iov        = &iov;
    msg.msg_iovlen     = 1;
    msg.msg_control    = cbuf;
    msg.msg_controllen = sizeof(cbuf);

    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    if (n != sizeof(rep)) {
        ucs_error("gaudi_ipc: no answer from pid %d for fd %d: %s",
                  key->pid, key->fd, (n < 0) ? strerror(errno) :
                                               "connection closed");
        return (n == 0) ? UCS_ERR_CONNECTION_RESET : UCS_ERR_TIMED_OUT;
    }

    cmsg = CMSG_FIRSTHDR(&msg);
    if ((cmsg != NULL) && (cmsg->cmsg_level == SOL_SOCKET) &&
        (cmsg->cmsg_type == SCM_RIGHTS)) {
        memcpy(&fd, CMSG_DATA(cmsg), sizeof(fd));
    }

    if ((rep.magic != UCT_GAUDI_IPC_FD_MAGIC) || (rep.status != UCS_OK) ||
        (fd < 0)) {
        if (fd >= 0) {
            close(fd);
        }
        ucs_error("gaudi_ipc: pid %d has no live export 0x%" PRIx64
                  " (fd %d): %s", key->pid, key->base, key->fd,
                  ucs_status_string((ucs_status_t)rep.status));
        return UCS_ERR_INVALID_ADDR;
    }

    *fd_p = fd;
    return UCS_OK;
}

static ucs_status_t uct_gaudi_ipc_fd_by_socket(const uct_gaudi_ipc_rkey_t *key,
                                               double timeout, int *fd_p)
{
    uct_gaudi_ipc_fd_req_t req = {
        .magic = UCT_GAUDI_IPC_FD_MAGIC,
        .fd    = key->fd,
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

    uct_gaudi_ipc_fd_sockaddr(key->pidns, key->pid, &sa, &len);
    if (connect(sock, (struct sockaddr*)&sa, len) < 0) {
        ucs_error("gaudi_ipc: cannot reach the fd server of pid %d: %m "
                  "(exited, or another network namespace)", key->pid);
        status = (errno == ECONNREFUSED) ? UCS_ERR_CONNECTION_RESET :
                                           UCS_ERR_UNREACHABLE;
        goto out;
    }

    if (send(sock, &req, sizeof(req), MSG_NOSIGNAL) != sizeof(req)) {
        ucs_error("gaudi_ipc: request to pid %d failed: %m", key->pid);
        status = UCS_ERR_CONNECTION_RESET;
        goto out;
    }

    status = uct_gaudi_ipc_fd_recv(sock, key, fd_p);
out:
    close(sock);
    return status;
}

ucs_status_t uct_gaudi_ipc_fd_fetch(int pidfd, const uct_gaudi_ipc_rkey_t *key,
                                    uct_gaudi_ipc_fd_method_t method,
                                    double timeout, int *fd_p)
{
    ucs_status_t status;

    if (method != UCT_GAUDI_IPC_FD_SOCKET) {
        status = uct_gaudi_ipc_fd_by_pidfd(pidfd, key, fd_p);
        if ((status != UCS_ERR_UNSUPPORTED) ||
            (method == UCT_GAUDI_IPC_FD_PIDFD)) {
            if (status == UCS_ERR_UNSUPPORTED) {
                ucs_error("gaudi_ipc: pidfd_getfd refused for pid %d and "
                          "UCX_GAUDI_IPC_FD_METHOD=pidfd", key->pid);
            }
            return status;
        }
        ucs_debug("gaudi_ipc: falling back to the fd server of pid %d",
                  key->pid);
    }

    return uct_gaudi_ipc_fd_by_socket(key, timeout, fd_p);
}


/* Exporter */

static void uct_gaudi_ipc_fd_reply(int conn, ucs_status_t status, int fd)
{
    uct_gaudi_ipc_fd_rep_t rep = {
        .magic  = UCT_GAUDI_IPC_FD_MAGIC,
        .status = status
    };
    char cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov  = {.iov_base = &rep, .iov_len = sizeof(rep)};
    struct msghdr msg = {0};
    struct cmsghdr *cmsg;

    msg.msg_iov    = &iov;
    msg.msg_iovlen = 1;
    if (fd >= 0) {
        memset(cbuf, 0, sizeof(cbuf));
        msg.msg_control    = cbuf;
        msg.msg_controllen = sizeof(cbuf);
        cmsg               = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level   = SOL_SOCKET;
        cmsg->cmsg_type    = SCM_RIGHTS;
        cmsg->cmsg_len     = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cmsg), &fd, sizeof(fd));
    }

    if (sendmsg(conn, &msg, MSG_NOSIGNAL) < 0) {
        ucs_debug("gaudi_ipc: fd server reply failed: %m");
    }
}

/* Only a process that could ptrace us anyway may get our fds: same uid,
 * or root */
static int uct_gaudi_ipc_fd_peer_allowed(int conn)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
        return 0;
    }
    return (cred.uid == 0) || (cred.uid == geteuid());
}

static void uct_gaudi_ipc_fd_serve(int conn)
{
    struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
    uct_gaudi_ipc_fd_req_t req;
    int fd;

    /* never block the async thread on a slow client */
    setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

    if ((recv(conn, &req, sizeof(req), 0) != sizeof(req)) ||
        (req.magic != UCT_GAUDI_IPC_FD_MAGIC)) {
        ucs_debug("gaudi_ipc: fd server: bad request");
        return;
    }

    if (!uct_gaudi_ipc_fd_peer_allowed(conn)) {
        ucs_diag("gaudi_ipc: fd server: refused a peer of another user");
        uct_gaudi_ipc_fd_reply(conn, UCS_ERR_UNSUPPORTED, -1);
        return;
    }

    fd = uct_gaudi_ipc_export_dup(&req.id, req.fd);
    uct_gaudi_ipc_fd_reply(conn, (fd < 0) ? UCS_ERR_NO_ELEM : UCS_OK, fd);
    if (fd >= 0) {
        close(fd);
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
    socklen_t len;
    int fd;

    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        ucs_error("gaudi_ipc: fd server socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    uct_gaudi_ipc_fd_sockaddr(uct_gaudi_ipc_pidns(), getpid(), &sa, &len);
    if ((bind(fd, (struct sockaddr*)&sa, len) < 0) || (listen(fd, 64) < 0)) {
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
    uct_gaudi_ipc_fd_server.fd  = fd;
    uct_gaudi_ipc_fd_server.pid = getpid();
    return UCS_OK;
}

ucs_status_t uct_gaudi_ipc_fd_server_get(void)
{
    ucs_status_t status = UCS_OK;

    pthread_mutex_lock(&uct_gaudi_ipc_fd_server.lock);
    if (uct_gaudi_ipc_fd_server.pid != getpid()) {
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
    if ((uct_gaudi_ipc_fd_server.pid == getpid()) &&
        (--uct_gaudi_ipc_fd_server.refcount == 0)) {
        ucs_async_remove_handler(uct_gaudi_ipc_fd_server.fd, 1);
        close(uct_gaudi_ipc_fd_server.fd);
        uct_gaudi_ipc_fd_server.fd = -1;
    }
    pthread_mutex_unlock(&uct_gaudi_ipc_fd_server.lock);
}

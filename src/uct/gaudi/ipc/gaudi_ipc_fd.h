/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Getting another process's dma-buf fd. A fd number means nothing outside
 * its process: the importer duplicates it with pidfd_getfd(2), which the
 * kernel allows only where ptrace would be (PTRACE_MODE_ATTACH). Where
 * pidfd_getfd does not exist (ENOSYS: old kernel, seccomp), it asks the
 * exporter over a unix socket the exporter serves from UCX's async thread
 * (SCM_RIGHTS), and the exporter applies the same rule itself. A refusal
 * is final: the socket never widens what the kernel refused.
 */

#ifndef UCT_GAUDI_IPC_FD_H_
#define UCT_GAUDI_IPC_FD_H_

#include "gaudi_ipc_md.h"

#include <ucs/type/status.h>
#include <sys/types.h>
#include <sys/un.h>


/* How an importer gets an exporter's fd (UCX_GAUDI_IPC_FD_METHOD) */
typedef enum {
    UCT_GAUDI_IPC_FD_AUTO,    /* pidfd_getfd, the socket when refused */
    UCT_GAUDI_IPC_FD_PIDFD,   /* pidfd_getfd only */
    UCT_GAUDI_IPC_FD_SOCKET,  /* the exporter's socket only */
    UCT_GAUDI_IPC_FD_LAST
} uct_gaudi_ipc_fd_method_t;

extern const char *uct_gaudi_ipc_fd_method_names[];


/* pidfd_open(2): a fd that becomes readable when @a pid exits */
ucs_status_t uct_gaudi_ipc_pidfd_open(pid_t pid, int *pidfd_p);

/* Whether the process of @a pidfd is still running */
int uct_gaudi_ipc_pidfd_alive(int pidfd);

/*
 * Get fds of the exporter's dma-buf and of the key's token described by
 * @a key, by @a method; @a pidfd is the exporter's pidfd. @a timeout
 * (seconds) bounds the socket exchange. The fds are not verified here
 * (uct_gaudi_ipc_fd_check, uct_gaudi_ipc_token_check).
 * UCS_ERR_CONNECTION_RESET: the exporter is gone.
 */
ucs_status_t uct_gaudi_ipc_fd_fetch(int pidfd, const uct_gaudi_ipc_rkey_t *key,
                                    uct_gaudi_ipc_fd_method_t method,
                                    double timeout, int *fd_p, int *token_p);

/* Whether @a fd is the file of @a id (fstat: device and inode) */
int uct_gaudi_ipc_fd_check(int fd, const uct_gaudi_ipc_buf_id_t *id);

/* Whether @a fd is a sealed token holding the id of @a id */
int uct_gaudi_ipc_token_check(int fd, const uct_gaudi_ipc_buf_id_t *id);


/*
 * Abstract name of the fd server of the exporter of @a key: its pid
 * namespace, pid and the random part of the name (key->server), so that
 * no other process can know it before the exporter hands out a key.
 */
void uct_gaudi_ipc_fd_sockaddr(const uct_gaudi_ipc_rkey_t *key,
                               struct sockaddr_un *sa, socklen_t *len_p);

/* The random part of this process's fd server name (for the rkey) */
uint64_t uct_gaudi_ipc_fd_server_name(void);

/* Exporter: start (first call) / stop (last call) serving this process's
 * exports on its socket */
ucs_status_t uct_gaudi_ipc_fd_server_get(void);

void uct_gaudi_ipc_fd_server_put(void);

#endif

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The emulated RDMA NIC, a test-only UCT component (docs/gdr.md). Memory
 * regions (MRs) are host memory or a dma-buf the NIC attached to through
 * the driver emulator (hlsim_dmabuf_attach); remote keys name an MR of
 * the peer process, whose NIC engine (a thread per interface) serves
 * reads and writes of it over a socket, as the responder side of an RDMA
 * NIC does without the peer's CPU.
 */

#ifndef UCT_NICSIM_INT_H_
#define UCT_NICSIM_INT_H_

#include "nicsim.h"

#include <uct/gaudi/base/gaudi_uct_compat.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/datastruct/list.h>

#include <netinet/in.h>
#include <pthread.h>

#define UCT_NICSIM_NAME         "nicsim"
#define UCT_NICSIM_DEV_NAME     "nic0"
#define UCT_NICSIM_RKEY_MAGIC   0x4e494352u   /* "NICR" */
#define UCT_NICSIM_WIRE_MAGIC   0x4e494357u   /* "NICW" */
#define UCT_NICSIM_CHUNK        (1ul << 20)   /* engine bounce buffer */

/* What the NIC does wrong with the dma-buf it is given (test faults) */
typedef enum {
    UCT_NICSIM_FAULT_NONE,
    UCT_NICSIM_FAULT_FD,      /* attaches another file than the one given */
    UCT_NICSIM_FAULT_OFFSET,  /* one page past the offset given */
    UCT_NICSIM_FAULT_LENGTH,  /* claims the range past the dma-buf's end */
    UCT_NICSIM_FAULT_LAST
} uct_nicsim_fault_t;

typedef struct {
    uct_md_config_t    super;
    unsigned           fault;       /* uct_nicsim_fault_t */
    int                print_counters;
} uct_nicsim_md_config_t;

typedef struct {
    uct_md_t           super;
    uct_nicsim_fault_t fault;
    int                print_counters;
} uct_nicsim_md_t;

/* A memory region: the registration's memh */
typedef struct {
    uct_md_h           md;
    uint64_t           id;          /* the remote key's secret */
    uint64_t           address;     /* registered address (the iova) */
    size_t             length;
    int                attach;      /* hlsim attachment, -1: host memory */
    uint64_t           dmabuf_off;  /* dma-buf offset of address */
} uct_nicsim_mr_t;

/* Packed and unpacked remote key */
typedef struct {
    uint32_t           magic;
    uint32_t           pid;         /* registering process, for messages */
    uint64_t           id;
    uint64_t           address;
    uint64_t           length;
} UCS_S_PACKED uct_nicsim_rkey_t;

/* Device address: the fabric; iface address: the engine's socket */
typedef struct {
    uint64_t           fabric;
} UCS_S_PACKED uct_nicsim_dev_addr_t;

typedef struct {
    uint32_t           ip;          /* network order */
    uint16_t           port;        /* network order */
} UCS_S_PACKED uct_nicsim_iface_addr_t;

/* A request on the wire and its answer (data follows a put request and a
 * successful get answer) */
enum {
    UCT_NICSIM_OP_PUT = 1,
    UCT_NICSIM_OP_GET = 2
};

typedef struct {
    uint32_t           magic;
    uint32_t           op;
    uint64_t           rkey_id;
    uint64_t           address;
    uint64_t           length;
} UCS_S_PACKED uct_nicsim_req_t;

typedef struct {
    uint32_t           magic;
    int32_t            status;      /* ucs_status_t */
} UCS_S_PACKED uct_nicsim_rep_t;

typedef struct {
    uct_iface_config_t super;
    double             bw;
    double             latency;
    char              *fabric;
} uct_nicsim_iface_config_t;

typedef struct {
    uct_base_iface_t   super;
    uint64_t           fabric;
    double             bw;
    double             latency;
    int                listen_fd;
    int                wake[2];     /* pipe: stops the engine */
    struct sockaddr_in addr;
    pthread_t          engine;
    void              *bounce;      /* initiator's bounce buffer */
    ucs_list_link_t    eps;
} uct_nicsim_iface_t;

typedef struct {
    uct_base_ep_t      super;
    ucs_list_link_t    list;
    int                fd;
    int                failed;      /* the connection is gone */
    int                reported;    /* ... and UCT was told */
    struct sockaddr_in peer;
} uct_nicsim_ep_t;

extern uct_component_t uct_nicsim_component;

/* MRs: the process's table, looked up by the engine for remote keys */
void uct_nicsim_mr_table_rdlock(void);
void uct_nicsim_mr_table_unlock(void);
uct_nicsim_mr_t *uct_nicsim_mr_find(uint64_t id);   /* table locked */

/* Read or write [address, +length) of an MR, as the NIC's DMA does;
 * counted. @what names the operation in errors */
ucs_status_t uct_nicsim_mr_access(const uct_nicsim_mr_t *mr,
                                  uint64_t address, void *buf,
                                  size_t length, int write,
                                  const char *what);

/* [address, +length) inside the MR */
int uct_nicsim_mr_covers(const uct_nicsim_mr_t *mr, uint64_t address,
                         size_t length);

void uct_nicsim_count_remote_refused(void);

#endif

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_ipc memory domain: registration of Gaudi memory exports the
 * DMA-BUF of its allocation (facts 4.1) and keeps it open until dereg; the
 * packed rkey tells another process on the node how to obtain its own fd
 * of it (gaudi_ipc_fd.h) and import it (op 99, facts 4.3). Design:
 * docs/ipc.md.
 */

#ifndef UCT_GAUDI_IPC_MD_H_
#define UCT_GAUDI_IPC_MD_H_

#include <uct/base/uct_md.h>
#include <uct/gaudi/dev/gaudi_dev.h>
#include <uct/gaudi/mem/gaudi_mem.h>
#include <ucs/datastruct/list.h>
#include <pthread.h>
#include <sys/types.h>

#define UCT_GAUDI_IPC_COMPONENT_NAME "gaudi_ipc"
#define UCT_GAUDI_IPC_TL_NAME        "gaudi_ipc"


extern uct_component_t uct_gaudi_ipc_component;


typedef struct uct_gaudi_ipc_md_config {
    uct_md_config_t super;
} uct_gaudi_ipc_md_config_t;


typedef struct uct_gaudi_ipc_md {
    uct_md_t              super;
    uct_gaudi_heap_t      *heap;  /* its allocations and their exports */
    int                   export_ok; /* the driver exports DMA-BUF: probed
                                        once the device is taken, until
                                        then expected (discovery's ABI) */
    pthread_mutex_t       lock;   /* of @a regs */
    ucs_list_link_t       regs;   /* live registrations (uct_gaudi_ipc_memh_t) */
} uct_gaudi_ipc_md_t;


/*
 * Identity of an exported buffer: the dma-buf file (st_dev, st_ino) and a
 * random id drawn at export. The file identity lets an importer check a
 * fd it fetched by number; the id tells a buffer freed and reallocated at
 * the same address (same base, new export) from the old one.
 */
typedef struct UCS_S_PACKED uct_gaudi_ipc_buf_id {
    uint64_t ino;
    uint64_t dev;
    uint64_t uid;
} uct_gaudi_ipc_buf_id_t;


/*
 * One export of a device allocation, shared by every registration of that
 * allocation (refcount) so that the importers' caches see one buffer.
 */
typedef struct uct_gaudi_ipc_export {
    ucs_list_link_t        list;       /* in the process export list */
    uct_gaudi_ipc_buf_id_t id;
    int                    fd;         /* our dma-buf fd, open until dereg */
    uint64_t               base;       /* allocation (Gaudi pointer) */
    uint64_t               length;
    uint64_t               offset;     /* of base in the dma-buf */
    uint64_t               import_len; /* bytes an importer maps */
    unsigned               refcount;   /* registrations */
    int                    revoked;    /* invalidated: fd closed, out of
                                          the list, keys of it dead */
} uct_gaudi_ipc_export_t;


/*
 * A registration (the uct_mem_h of gaudi_ipc): one reference to a shared
 * export, listed in its MD so that close releases what UCX left
 * registered (UCX 1.22 loses a user memh's own registration when the
 * handle gets an rcache parent, docs/ipc.md): a leaked reference keeps
 * the dma-buf alive, and the driver then refuses to free the memory.
 */
typedef struct uct_gaudi_ipc_memh {
    ucs_list_link_t        list;       /* in the MD's registrations */
    uct_gaudi_ipc_export_t *exp;       /* NULL: not exportable */
    uint64_t               address;    /* registered range (no export) */
    uint64_t               length;
} uct_gaudi_ipc_memh_t;


/*
 * Packed rkey (mkey_pack / rkey_unpack), little-endian, version 3, 96 B.
 * The unpacked rkey (uct_rkey_t) points to a copy of it. A registration
 * whose memory cannot be exported (driver without export, memory of
 * unknown origin) packs a key with UCT_GAUDI_IPC_RKEY_FLAG_NO_EXPORT and
 * fd -1: peers answer UCS_ERR_UNREACHABLE and UCP uses other transports.
 */
#define UCT_GAUDI_IPC_RKEY_VERSION        3
#define UCT_GAUDI_IPC_RKEY_FLAG_NO_EXPORT UCS_BIT(0)

typedef struct UCS_S_PACKED uct_gaudi_ipc_rkey {
    uint8_t                version;    /* UCT_GAUDI_IPC_RKEY_VERSION */
    uint8_t                flags;      /* UCT_GAUDI_IPC_RKEY_FLAG_* */
    uint8_t                reserved[2];
    uint32_t               module_id;  /* exporter's device (hw_ip) */
    uint64_t               system_id;  /* ucs_get_system_id(): boot id */
    uint64_t               pidns;      /* exporter's pid namespace inode */
    int32_t                pid;        /* exporter's pid (in pidns) */
    int32_t                fd;         /* dma-buf fd number in exporter */
    uct_gaudi_ipc_buf_id_t id;         /* buffer identity */
    uint64_t               base;       /* first byte of the allocation */
    uint64_t               length;     /* bytes of the allocation */
    uint64_t               offset;     /* of base in the dma-buf */
    uint64_t               import_len; /* bytes to map with op 99 */
    uint64_t               server;     /* random part of the exporter's
                                          fd server name (gaudi_ipc_fd.h) */
} uct_gaudi_ipc_rkey_t;


/* Pid namespace of this process (inode of /proc/self/ns/pid), 0 if none */
uint64_t uct_gaudi_ipc_pidns(void);

/*
 * Server side of the SCM_RIGHTS fallback: a dup of the fd of the live
 * export with identity @a id and fd number @a fd, or -1.
 */
int uct_gaudi_ipc_export_dup(const uct_gaudi_ipc_buf_id_t *id, int fd);

/*
 * Whether a packed key is self-consistent: its buffer lies inside the
 * bytes it asks to import. UCS_ERR_INVALID_PARAM (logged) if not.
 */
ucs_status_t uct_gaudi_ipc_rkey_check(const uct_gaudi_ipc_rkey_t *key);

/* Live exports of this process (tests, leak checks) */
unsigned uct_gaudi_ipc_export_count(void);

/* Whether registration exports: probed once the device is taken */
int uct_gaudi_ipc_md_export_ok(uct_gaudi_ipc_md_t *md);

#endif

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
 * Identity of the buffer a key names: the dma-buf file (st_dev, st_ino)
 * and the random id of the key's token. The file identity lets an
 * importer check a fd it fetched by number; the token id tells one
 * generation of keys from the next (a buffer revoked, or freed and
 * reallocated at the same address).
 */
typedef struct UCS_S_PACKED uct_gaudi_ipc_buf_id {
    uint64_t ino;
    uint64_t dev;
    uint64_t uid;   /* the token's id */
} uct_gaudi_ipc_buf_id_t;


/*
 * One generation of keys of an export (docs/ipc.md, "Invalidation"): a
 * sealed memfd holding the generation's random id. Keys name its fd
 * number; an importer fetches it with the dma-buf, checks its id, and
 * asks kcmp at every cache hit whether we still hold it. Revocation
 * closes it: no driver call, the dma-buf stays exported.
 */
typedef struct uct_gaudi_ipc_token {
    int      fd;    /* -1: none (revoked, or no key packed yet) */
    uint64_t id;
} uct_gaudi_ipc_token_t;


/*
 * One export of a device allocation, shared by every registration of that
 * allocation (refcount) so that the importers' caches see one buffer.
 */
typedef struct uct_gaudi_ipc_export {
    ucs_list_link_t        list;       /* in the process export list */
    uint64_t               ino;        /* the dma-buf file */
    uint64_t               dev;
    int                    fd;         /* our dma-buf fd, open until the
                                          last dereg */
    uct_gaudi_ipc_token_t  token;      /* current key generation */
    uint64_t               base;       /* allocation (Gaudi pointer) */
    uint64_t               length;
    uint64_t               offset;     /* of base in the dma-buf */
    uint64_t               import_len; /* bytes an importer maps */
    unsigned               refcount;   /* registrations */
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
 * Packed rkey (mkey_pack / rkey_unpack), little-endian, version 4, 104 B.
 * The unpacked rkey (uct_rkey_t) points to a copy of it. A registration
 * whose memory cannot be exported (driver without export, memory of
 * unknown origin) packs a key with UCT_GAUDI_IPC_RKEY_FLAG_NO_EXPORT and
 * fds -1: peers answer UCS_ERR_UNREACHABLE and UCP uses other transports.
 * Version 3 (no token: revocation re-exported the dma-buf) is refused.
 */
#define UCT_GAUDI_IPC_RKEY_VERSION        4
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
    int32_t                token;      /* token fd number in exporter */
    uint32_t               reserved2;
} uct_gaudi_ipc_rkey_t;


/* Pid namespace of this process (inode of /proc/self/ns/pid), 0 if none */
uint64_t uct_gaudi_ipc_pidns(void);

/*
 * Server side of the SCM_RIGHTS fallback: dups of the dma-buf fd and of
 * the token fd of the live key generation the request names (its
 * identity, dma-buf fd number @a fd and token fd number @a token).
 * UCS_ERR_NO_ELEM if there is none (deregistered or revoked).
 */
ucs_status_t uct_gaudi_ipc_export_dup(const uct_gaudi_ipc_buf_id_t *id,
                                      int fd, int token, int *fd_p,
                                      int *token_p);

/*
 * Whether a packed key is self-consistent: its buffer lies inside the
 * bytes it asks to import. UCS_ERR_INVALID_PARAM (logged) if not.
 */
ucs_status_t uct_gaudi_ipc_rkey_check(const uct_gaudi_ipc_rkey_t *key);

/* Live exports of this process (tests, leak checks) */
unsigned uct_gaudi_ipc_export_count(void);

/* Tokens created (key generations) by this process so far (tests) */
unsigned long uct_gaudi_ipc_token_count(void);

/* Whether registration exports: probed once the device is taken */
int uct_gaudi_ipc_md_export_ok(uct_gaudi_ipc_md_t *md);

#endif

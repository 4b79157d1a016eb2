/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Remote mapping cache of an importer: peer buffers imported into the
 * local device with op 99 (facts 4.3), keyed by (pid, pid namespace,
 * buffer identity), refcounted by the transfers that use them, bounded
 * (LRU) in count and bytes. A buffer of the same peer that overlaps a new
 * key with another identity was freed (and its address reused): it is
 * dropped and the new one mapped. Entries of an exporter that exited are
 * unmapped. Not thread-safe: one cache per iface (worker thread).
 */

#ifndef UCT_GAUDI_IPC_CACHE_H_
#define UCT_GAUDI_IPC_CACHE_H_

#include "gaudi_ipc_md.h"
#include "gaudi_ipc_fd.h"

#include <ucs/datastruct/list.h>


/* An exporter process, watched through its pidfd */
typedef struct uct_gaudi_ipc_peer {
    ucs_list_link_t list;     /* in cache->peers */
    pid_t           pid;
    uint64_t        pidns;
    int             pidfd;
    int             dead;     /* exit seen: every new use fails */
    int             reported; /* its death was logged at ERROR level */
    unsigned        regions;  /* cached regions of this peer */
} uct_gaudi_ipc_peer_t;


/* A peer buffer mapped into the local device */
typedef struct uct_gaudi_ipc_region {
    ucs_list_link_t        list;       /* in cache->lru, most recent first;
                                          detached when stale */
    uct_gaudi_ipc_peer_t   *peer;
    uct_gaudi_ipc_buf_id_t id;
    uint64_t               base;       /* exporter's allocation */
    uint64_t               length;
    uint64_t               offset;     /* of base in the dma-buf */
    uint64_t               import_len;
    int                    fd;         /* our fd of the dma-buf */
    int                    remote_fd;  /* the exporter's fd number */
    int                    token;      /* our fd of the key's token */
    int                    remote_token; /* the exporter's token fd */
    uint64_t               va;         /* op 99 VA (host range, facts 4.3) */
    unsigned               refcount;   /* transfers in flight */
    int                    stale;      /* out of the cache, freed at 0 */
} uct_gaudi_ipc_region_t;


typedef struct uct_gaudi_ipc_cache_stats {
    uint64_t hits;
    uint64_t misses;
    uint64_t evictions;  /* dropped for the bounds */
    uint64_t remaps;     /* dropped for an identity mismatch */
    uint64_t dead;       /* dropped because the exporter exited */
    uint64_t released;   /* dropped because the exporter deregistered */
    uint64_t refused;    /* keys that contradict their cached import */
} uct_gaudi_ipc_cache_stats_t;


typedef struct uct_gaudi_ipc_cache {
    uct_gaudi_heap_t            *heap;     /* its device imports */
    ucs_list_link_t             lru;
    ucs_list_link_t             peers;
    unsigned                    count;       /* cached regions */
    size_t                      bytes;       /* their import_len */
    unsigned                    max_regions;
    size_t                      max_size;
    uct_gaudi_ipc_fd_method_t   fd_method;
    double                      fd_timeout;
    uct_gaudi_ipc_cache_stats_t stats;
} uct_gaudi_ipc_cache_t;


void uct_gaudi_ipc_cache_init(uct_gaudi_ipc_cache_t *cache,
                              uct_gaudi_heap_t *heap, unsigned max_regions,
                              size_t max_size,
                              uct_gaudi_ipc_fd_method_t fd_method,
                              double fd_timeout);

/* Unmap everything; regions still referenced are leaked with a warning */
void uct_gaudi_ipc_cache_cleanup(uct_gaudi_ipc_cache_t *cache);

/*
 * The mapping of the buffer of @a key, with a reference for the caller.
 * UCS_ERR_CONNECTION_RESET: the exporter exited; UCS_ERR_INVALID_ADDR:
 * the buffer is gone (stale rkey); UCS_ERR_INVALID_PARAM: the key
 * contradicts the import of its buffer; other errors: import failed.
 * Logged.
 */
ucs_status_t uct_gaudi_ipc_cache_get(uct_gaudi_ipc_cache_t *cache,
                                     const uct_gaudi_ipc_rkey_t *key,
                                     uct_gaudi_ipc_region_t **region_p);

void uct_gaudi_ipc_cache_put(uct_gaudi_ipc_cache_t *cache,
                             uct_gaudi_ipc_region_t *region);

/* Whether the exporter of @a region still runs; unmaps its regions if not */
int uct_gaudi_ipc_cache_peer_alive(uct_gaudi_ipc_cache_t *cache,
                                   uct_gaudi_ipc_peer_t *peer);

/* Check every peer; drop the regions of those that exited, and idle
 * regions whose export the exporter has closed (deregistered) */
void uct_gaudi_ipc_cache_sweep(uct_gaudi_ipc_cache_t *cache);

#endif

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_ipc_cache.h"

#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <inttypes.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <string.h>
#include <unistd.h>


void uct_gaudi_ipc_cache_init(uct_gaudi_ipc_cache_t *cache,
                              uct_gaudi_heap_t *heap, unsigned max_regions,
                              size_t max_size,
                              uct_gaudi_ipc_fd_method_t fd_method,
                              double fd_timeout)
{
    memset(cache, 0, sizeof(*cache));
    cache->heap        = heap;
    cache->max_regions = ucs_max(max_regions, 1);
    cache->max_size    = max_size;
    cache->fd_method   = fd_method;
    cache->fd_timeout  = fd_timeout;
    ucs_list_head_init(&cache->lru);
    ucs_list_head_init(&cache->peers);
}


/* Peers */

/* Dead peers remembered (without their pidfd), so that their death is
 * logged once however many operations meet it */
#define UCT_GAUDI_IPC_CACHE_MAX_TOMBS 64


static void uct_gaudi_ipc_peer_release(uct_gaudi_ipc_peer_t *peer)
{
    ucs_list_del(&peer->list);
    if (peer->pidfd >= 0) {
        close(peer->pidfd);
    }
    ucs_free(peer);
}

/* A dead peer without regions: keep its record, release its pidfd, and
 * forget the oldest record beyond the bound */
static void uct_gaudi_ipc_peer_bury(uct_gaudi_ipc_cache_t *cache,
                                    uct_gaudi_ipc_peer_t *peer)
{
    uct_gaudi_ipc_peer_t *p, *tmp;
    unsigned tombs = 0;

    if (peer->pidfd >= 0) {
        close(peer->pidfd);
        peer->pidfd = -1;
    }

    ucs_list_for_each(p, &cache->peers, list) {
        tombs += p->dead && (p->regions == 0);
    }
    ucs_list_for_each_safe(p, tmp, &cache->peers, list) {
        if (tombs <= UCT_GAUDI_IPC_CACHE_MAX_TOMBS) {
            break;
        }
        if (p->dead && (p->regions == 0) && (p != peer)) {
            uct_gaudi_ipc_peer_release(p);
            --tombs;
        }
    }
}

/* The ERROR of an exporter's death, once per peer (debug after) */
static void uct_gaudi_ipc_peer_log_exit(uct_gaudi_ipc_peer_t *peer,
                                        pid_t pid)
{
    ucs_log(((peer != NULL) && peer->reported) ? UCS_LOG_LEVEL_DEBUG :
            UCS_LOG_LEVEL_ERROR, "gaudi_ipc: exporter pid %d has exited",
            (int)pid);
    if (peer != NULL) {
        peer->reported = 1;
    }
}

/* The record of a peer found dead before we knew it (pidfd_open: ESRCH) */
static uct_gaudi_ipc_peer_t *
uct_gaudi_ipc_peer_tomb(uct_gaudi_ipc_cache_t *cache,
                        const uct_gaudi_ipc_rkey_t *key)
{
    uct_gaudi_ipc_peer_t *peer = ucs_calloc(1, sizeof(*peer),
                                            "gaudi_ipc_peer");

    if (peer != NULL) {
        peer->pid   = key->pid;
        peer->pidns = key->pidns;
        peer->pidfd = -1;
        peer->dead  = 1;
        ucs_list_add_tail(&cache->peers, &peer->list);
        uct_gaudi_ipc_peer_bury(cache, peer);
    }
    return peer;
}

static ucs_status_t uct_gaudi_ipc_peer_get(uct_gaudi_ipc_cache_t *cache,
                                           const uct_gaudi_ipc_rkey_t *key,
                                           uct_gaudi_ipc_peer_t **peer_p)
{
    uct_gaudi_ipc_peer_t *peer, *tomb = NULL;
    ucs_status_t status;
    int pidfd;

    ucs_list_for_each(peer, &cache->peers, list) {
        if ((peer->pid != key->pid) || (peer->pidns != key->pidns)) {
            continue;
        } else if (!peer->dead) {
            *peer_p = peer;
            return UCS_OK;
        }
        tomb = peer;
    }

    status = uct_gaudi_ipc_pidfd_open(key->pid, &pidfd);
    if (status == UCS_ERR_CONNECTION_RESET) {
        uct_gaudi_ipc_peer_log_exit((tomb != NULL) ? tomb :
                                    uct_gaudi_ipc_peer_tomb(cache, key),
                                    key->pid);
    }
    if (status != UCS_OK) {
        return status;
    }

    peer = ucs_calloc(1, sizeof(*peer), "gaudi_ipc_peer");
    if (peer == NULL) {
        close(pidfd);
        return UCS_ERR_NO_MEMORY;
    }

    peer->pid   = key->pid;
    peer->pidns = key->pidns;
    peer->pidfd = pidfd;
    ucs_list_add_tail(&cache->peers, &peer->list);
    *peer_p = peer;
    return UCS_OK;
}


/* Regions */

static void uct_gaudi_ipc_region_unmap(uct_gaudi_ipc_cache_t *cache,
                                       uct_gaudi_ipc_region_t *region)
{
    uct_gaudi_ipc_peer_t *peer = region->peer;
    uct_gaudi_ctx_t *ctx;
    ucs_status_t status;

    /* imports exist only once the device is taken; the driver serializes
     * its memory ioctls itself */
    ctx    = uct_gaudi_heap_ctx(cache->heap);
    status = uct_gaudi_hl_mem_unmap(&ctx->hl, region->va);
    if (status != UCS_OK) {
        /* the shim logged the failure; this says whose buffer it was */
        ucs_debug("gaudi_ipc: unmap of imported 0x%" PRIx64 " (pid %d "
                  "buffer 0x%" PRIx64 ") failed: %s", region->va, peer->pid,
                  region->base, ucs_status_string(status));
    }

    close(region->fd);
    close(region->token);
    ucs_trace("gaudi_ipc: unmapped pid %d buffer 0x%" PRIx64 " from 0x%"
              PRIx64, peer->pid, region->base, region->va);
    ucs_free(region);

    if ((--peer->regions == 0) && peer->dead) {
        uct_gaudi_ipc_peer_bury(cache, peer);
    }
}

/* Take @a region out of the cache; unmapped now or by its last put */
static void uct_gaudi_ipc_region_drop(uct_gaudi_ipc_cache_t *cache,
                                      uct_gaudi_ipc_region_t *region)
{
    ucs_assert(!region->stale);
    ucs_list_del(&region->list);
    --cache->count;
    cache->bytes -= region->import_len;
    region->stale = 1;
    if (region->refcount == 0) {
        uct_gaudi_ipc_region_unmap(cache, region);
    }
}

static void uct_gaudi_ipc_peer_drop(uct_gaudi_ipc_cache_t *cache,
                                    uct_gaudi_ipc_peer_t *peer)
{
    uct_gaudi_ipc_region_t *region, *tmp;

    peer->dead = 1;
    ++peer->regions; /* keep the peer while its regions go */
    ucs_list_for_each_safe(region, tmp, &cache->lru, list) {
        if (region->peer == peer) {
            ++cache->stats.dead;
            uct_gaudi_ipc_region_drop(cache, region);
        }
    }
    if (--peer->regions == 0) {
        uct_gaudi_ipc_peer_bury(cache, peer);
    }
}

static void uct_gaudi_ipc_peer_died(uct_gaudi_ipc_cache_t *cache,
                                    uct_gaudi_ipc_peer_t *peer)
{
    ucs_diag("gaudi_ipc: exporter pid %d exited: unmapping its buffers",
             peer->pid);
    uct_gaudi_ipc_peer_drop(cache, peer);
}

int uct_gaudi_ipc_cache_peer_alive(uct_gaudi_ipc_cache_t *cache,
                                   uct_gaudi_ipc_peer_t *peer)
{
    if (peer->dead) {
        return 0;
    }
    if (uct_gaudi_ipc_pidfd_alive(peer->pidfd)) {
        return 1;
    }
    uct_gaudi_ipc_peer_died(cache, peer);
    return 0;
}

/*
 * Whether the exporter is exiting although its pidfd does not say so yet:
 * a pidfd is readable only once the whole thread group is gone, while the
 * group leader drops its file table (kcmp then fails with EBADF, as for a
 * closed export) and turns zombie while its other threads still exit.
 */
static int uct_gaudi_ipc_peer_exiting(uct_gaudi_ipc_cache_t *cache,
                                      uct_gaudi_ipc_peer_t *peer)
{
    char path[64], buf[256], *p;
    ssize_t n;
    int fd;

    if (!uct_gaudi_ipc_cache_peer_alive(cache, peer)) {
        return 1;
    }
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)peer->pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if ((fd < 0) && (errno != ENOENT)) {
        return 0;       /* no /proc to ask: the pidfd's word stands */
    } else if (fd >= 0) {
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        buf[ucs_max(n, 0)] = '\0';
        p = strrchr(buf, ')');       /* "pid (comm) S ..." */
        if ((p == NULL) || (p[1] != ' ') ||
            (strchr("ZXx", p[2]) == NULL)) {
            return 0;
        }
    }

    uct_gaudi_ipc_peer_died(cache, peer);
    return 1;
}

/*
 * Whether the exporter still holds the key generation of @a region:
 * kcmp(2) tells whether its token fd number still refers to the token's
 * file description we share (pidfd_getfd and SCM_RIGHTS both give the
 * same description); a newer token under the same number is another
 * file. Unknown (kcmp refused or missing) counts as held.
 */
static int uct_gaudi_ipc_region_exported(const uct_gaudi_ipc_region_t *region)
{
    long ret = syscall(SYS_kcmp, getpid(), region->peer->pid, KCMP_FILE,
                       region->token, region->remote_token);

    if (ret == 0) {
        return 1;
    }
    return (ret < 0) && (errno != EBADF);
}

/*
 * A cached import whose exporter no longer holds the export: it was
 * deregistered or invalidated (docs/ipc.md, "Invalidation"). Its keys are
 * stale: the transfer fails before any DMA, and the import goes (now, or
 * when the copies already in flight on it are done).
 */
static ucs_status_t
uct_gaudi_ipc_region_revoked(uct_gaudi_ipc_cache_t *cache,
                             uct_gaudi_ipc_region_t *region)
{
    ucs_error("gaudi_ipc: pid %d no longer exports buffer 0x%" PRIx64
              "+%" PRIu64 " (id 0x%" PRIx64 ", token fd %d): it was "
              "deregistered or invalidated; stale rkey refused",
              region->peer->pid, region->base, region->length,
              region->id.uid, region->remote_token);
    ++cache->stats.released;
    uct_gaudi_ipc_region_drop(cache, region);
    return UCS_ERR_INVALID_ADDR;
}

void uct_gaudi_ipc_cache_sweep(uct_gaudi_ipc_cache_t *cache)
{
    uct_gaudi_ipc_region_t *region, *rtmp;
    uct_gaudi_ipc_peer_t *peer, *tmp;

    ucs_list_for_each_safe(peer, tmp, &cache->peers, list) {
        if (!peer->dead) {
            (void)uct_gaudi_ipc_cache_peer_alive(cache, peer);
        }
    }

    /* a deregistered buffer may be freed by its exporter, which cannot
     * unmap it while our import holds its dma-buf (facts 3.3): let go */
    ucs_list_for_each_safe(region, rtmp, &cache->lru, list) {
        if ((region->refcount == 0) &&
            !uct_gaudi_ipc_region_exported(region)) {
            ucs_debug("gaudi_ipc: pid %d deregistered buffer 0x%" PRIx64
                      ": unmapping it", region->peer->pid, region->base);
            ++cache->stats.released;
            uct_gaudi_ipc_region_drop(cache, region);
        }
    }
}

/* Drop least recently used idle regions until @a need more fit */
static void uct_gaudi_ipc_cache_trim(uct_gaudi_ipc_cache_t *cache,
                                     size_t need)
{
    ucs_list_link_t *link = cache->lru.prev;
    uct_gaudi_ipc_region_t *region;
    ucs_list_link_t *prev;

    while ((link != &cache->lru) &&
           ((cache->count >= cache->max_regions) ||
            (cache->bytes + need > cache->max_size))) {
        prev   = link->prev;
        region = ucs_container_of(link, uct_gaudi_ipc_region_t, list);
        if (region->refcount == 0) {
            ++cache->stats.evictions;
            uct_gaudi_ipc_region_drop(cache, region);
        }
        link = prev;
    }
}

/*
 * The exporter's fds of @a key, verified: the token must hold the key's
 * id (a closed generation's number may now hold a newer token), the
 * dma-buf fd must be the key's file (its number may have been reused)
 */
static ucs_status_t uct_gaudi_ipc_region_fetch(uct_gaudi_ipc_cache_t *cache,
                                               uct_gaudi_ipc_peer_t *peer,
                                               const uct_gaudi_ipc_rkey_t *key,
                                               int *fd_p, int *token_p)
{
    ucs_status_t status;

    status = uct_gaudi_ipc_fd_fetch(peer->pidfd, key, cache->fd_method,
                                    cache->fd_timeout, fd_p, token_p);
    if (status != UCS_OK) {
        return status;
    }

    if (!uct_gaudi_ipc_token_check(*token_p, &key->id)) {
        ucs_error("gaudi_ipc: token fd %d of pid %d no longer holds key id "
                  "0x%" PRIx64 ": buffer 0x%" PRIx64 " was deregistered or "
                  "invalidated (stale rkey)", key->token, key->pid,
                  key->id.uid, key->base);
    } else if (!uct_gaudi_ipc_fd_check(*fd_p, &key->id)) {
        ucs_error("gaudi_ipc: fd %d of pid %d is no longer the dma-buf of "
                  "buffer 0x%" PRIx64 " (deregistered or freed; stale rkey)",
                  key->fd, key->pid, key->base);
    } else {
        return UCS_OK;
    }

    close(*fd_p);
    close(*token_p);
    return UCS_ERR_INVALID_ADDR;
}

/* Import the buffer of @a key: fetch and verify the fds, op 99 */
static ucs_status_t uct_gaudi_ipc_region_map(uct_gaudi_ipc_cache_t *cache,
                                             uct_gaudi_ipc_peer_t *peer,
                                             const uct_gaudi_ipc_rkey_t *key,
                                             uct_gaudi_ipc_region_t **region_p)
{
    uct_gaudi_ipc_region_t *region;
    uct_gaudi_ctx_t *ctx;
    ucs_status_t status;
    uint64_t va;
    int fd, token;

    status = uct_gaudi_ipc_region_fetch(cache, peer, key, &fd, &token);
    if (status != UCS_OK) {
        return status;
    }

    /* the iface's engine took the device before any copy; the driver
     * serializes its memory ioctls itself */
    ctx    = uct_gaudi_heap_ctx(cache->heap);
    status = uct_gaudi_hl_reg_dmabuf(&ctx->hl, fd, key->import_len, &va);
    if (status != UCS_OK) {
        /* the shim logged the failure; this says whose buffer it was */
        ucs_debug("gaudi_ipc: import (op 99) of pid %d buffer 0x%" PRIx64
                  " (%" PRIu64 " bytes) failed: %s", key->pid, key->base,
                  key->import_len, ucs_status_string(status));
        goto err_close;
    }

    region = ucs_calloc(1, sizeof(*region), "gaudi_ipc_region");
    if (region == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err_unmap;
    }

    region->peer         = peer;
    region->id           = key->id;
    region->base         = key->base;
    region->length       = key->length;
    region->offset       = key->offset;
    region->import_len   = key->import_len;
    region->fd           = fd;
    region->remote_fd    = key->fd;
    region->token        = token;
    region->remote_token = key->token;
    region->va           = va;
    ++peer->regions;
    ucs_trace("gaudi_ipc: mapped pid %d buffer 0x%" PRIx64 "+%" PRIu64
              " at 0x%" PRIx64, key->pid, key->base, key->length, va);
    *region_p = region;
    return UCS_OK;

err_unmap:
    (void)uct_gaudi_hl_mem_unmap(&ctx->hl, va);
err_close:
    close(fd);
    close(token);
    return status;
}

/* A cached import serves a key only if the key describes exactly the
 * buffer that was imported: a key of the same identity with another
 * geometry is forged or corrupt, not a new buffer */
static int uct_gaudi_ipc_region_matches(const uct_gaudi_ipc_region_t *region,
                                        const uct_gaudi_ipc_rkey_t *key)
{
    return (region->base == key->base) && (region->length == key->length) &&
           (region->offset == key->offset) &&
           (region->import_len == key->import_len) &&
           (region->remote_fd == key->fd) &&
           (region->remote_token == key->token);
}

static int uct_gaudi_ipc_region_overlaps(const uct_gaudi_ipc_region_t *region,
                                         const uct_gaudi_ipc_rkey_t *key)
{
    return (region->base < key->base + key->length) &&
           (key->base < region->base + region->length);
}

/* The exporter of @a peer has exited: the transport's error for a peer
 * that went away, which UCP turns into the endpoint's failure */
static ucs_status_t uct_gaudi_ipc_peer_exited(uct_gaudi_ipc_peer_t *peer)
{
    uct_gaudi_ipc_peer_log_exit(peer, peer->pid);
    return UCS_ERR_CONNECTION_RESET;
}

ucs_status_t uct_gaudi_ipc_cache_get(uct_gaudi_ipc_cache_t *cache,
                                     const uct_gaudi_ipc_rkey_t *key,
                                     uct_gaudi_ipc_region_t **region_p)
{
    uct_gaudi_ipc_region_t *region, *tmp;
    uct_gaudi_ipc_peer_t *peer;
    ucs_status_t status;

    status = uct_gaudi_ipc_peer_get(cache, key, &peer);
    if (status != UCS_OK) {
        return status;
    }

    /* liveness first: a dead (or zombie) exporter's fd table is gone, so
     * the identity check below would call its keys revoked */
    if (!uct_gaudi_ipc_cache_peer_alive(cache, peer)) {
        return uct_gaudi_ipc_peer_exited(peer);
    }

    ucs_list_for_each_safe(region, tmp, &cache->lru, list) {
        if (region->peer != peer) {
            continue;
        }
        if (!memcmp(&region->id, &key->id, sizeof(key->id))) {
            if (!uct_gaudi_ipc_region_matches(region, key)) {
                ucs_error("gaudi_ipc: rkey of pid %d names buffer id 0x%"
                          PRIx64 " as 0x%" PRIx64 "+%" PRIu64 " (offset %"
                          PRIu64 ", import %" PRIu64 ", fds %d/%d), but it "
                          "was imported as 0x%" PRIx64 "+%" PRIu64
                          " (offset %" PRIu64 ", import %" PRIu64 ", fds "
                          "%d/%d): refused", peer->pid, key->id.uid,
                          key->base, key->length, key->offset,
                          key->import_len, key->fd, key->token,
                          region->base, region->length, region->offset,
                          region->import_len, region->remote_fd,
                          region->remote_token);
                ++cache->stats.refused;
                return UCS_ERR_INVALID_PARAM;
            }
            if (!uct_gaudi_ipc_region_exported(region)) {
                /* or is it dying (or died since the check above)? */
                if (uct_gaudi_ipc_peer_exiting(cache, peer)) {
                    return uct_gaudi_ipc_peer_exited(peer);
                }
                return uct_gaudi_ipc_region_revoked(cache, region);
            }
            ++cache->stats.hits;
            ucs_list_del(&region->list);
            ucs_list_add_head(&cache->lru, &region->list);
            ++region->refcount;
            *region_p = region;
            return UCS_OK;
        }
        if (uct_gaudi_ipc_region_overlaps(region, key)) {
            /* the exporter freed that buffer and reused its address */
            ucs_debug("gaudi_ipc: pid %d buffer 0x%" PRIx64 " changed "
                      "identity: remapping", peer->pid, key->base);
            ++cache->stats.remaps;
            uct_gaudi_ipc_region_drop(cache, region);
        }
    }

    ++cache->stats.misses;
    uct_gaudi_ipc_cache_trim(cache, key->import_len);
    status = uct_gaudi_ipc_region_map(cache, peer, key, &region);
    if (status != UCS_OK) {
        if ((status == UCS_ERR_CONNECTION_RESET) ||
            !uct_gaudi_ipc_cache_peer_alive(cache, peer)) {
            return UCS_ERR_CONNECTION_RESET;
        }
        return status;
    }

    ucs_list_add_head(&cache->lru, &region->list);
    ++cache->count;
    cache->bytes     += region->import_len;
    region->refcount  = 1;
    *region_p         = region;
    return UCS_OK;
}

void uct_gaudi_ipc_cache_put(uct_gaudi_ipc_cache_t *cache,
                             uct_gaudi_ipc_region_t *region)
{
    ucs_assert(region->refcount > 0);
    if ((--region->refcount == 0) && region->stale) {
        uct_gaudi_ipc_region_unmap(cache, region);
    }
}

void uct_gaudi_ipc_cache_cleanup(uct_gaudi_ipc_cache_t *cache)
{
    uct_gaudi_ipc_region_t *region, *tmp;
    uct_gaudi_ipc_peer_t *peer, *ptmp;

    ucs_list_for_each_safe(region, tmp, &cache->lru, list) {
        if (region->refcount > 0) {
            ucs_warn("gaudi_ipc: closing with %u transfers on pid %d "
                     "buffer 0x%" PRIx64, region->refcount,
                     region->peer->pid, region->base);
            region->refcount = 0;
        }
        uct_gaudi_ipc_region_drop(cache, region);
    }

    ucs_list_for_each_safe(peer, ptmp, &cache->peers, list) {
        if (peer->regions == 0) {
            uct_gaudi_ipc_peer_release(peer);
        }
    }
}

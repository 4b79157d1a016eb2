/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Another device's driver attaching to an exported dma-buf: what an RDMA
 * NIC's driver does for ibv_reg_dmabuf_mr (Linux drivers/infiniband/core/
 * umem_dmabuf.c: dma_buf_get, dma_buf_dynamic_attach, then
 * dma_buf_map_attachment for the scatter list of the exporter's pages) and
 * then moves data with peer-to-peer DMA to and from those pages. Test
 * entry points for the emulated NIC (test/emu/nicsim); docs/hlsim.md,
 * "Dma-buf importers".
 */

#include "hlsim.h"
#include "hlsim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HLSIM_P2P_MAX 4096

typedef struct {
    int       dfd;       /* our reference to the dma-buf (dma_buf_get) */
    uint32_t  dev;
    uint32_t  nseg;
    uint64_t  length;
    struct {
        uint64_t hbm_off;
        uint64_t len;
    }        *seg;
} hlsim_p2p_t;

static pthread_mutex_t hlsim_p2p_lock = PTHREAD_MUTEX_INITIALIZER;
static hlsim_p2p_t    *hlsim_p2p[HLSIM_P2P_MAX];

/* The exporter's pages of an emulated dma-buf fd of this node */
static int hlsim_p2p_read_hdr(int fd, hlsim_p2p_t *a)
{
    hlsim_dmabuf_hdr_t h;
    size_t             segsz;

    /* dma_buf_get(): no open fd -> EBADF, not a dma-buf -> EINVAL; a
     * dma-buf of another emulated node is no dma-buf to this one */
    if ((fd < 0) || (hlsim_real.fcntl(fd, F_GETFD) < 0)) {
        return -EBADF;
    }
    if (!hlsim_is_dmabuf_fd(fd) ||
        (pread(fd, &h, sizeof(h), 0) != sizeof(h)) ||
        (h.magic != HLSIM_DMABUF_MAGIC) ||
        (h.dev >= (unsigned)hlsim_cfg.num_dev) || !h.nseg ||
        (h.nseg > HLSIM_DMABUF_MAX_SEGS)) {
        return -EINVAL;
    }
    segsz  = h.nseg * sizeof(a->seg[0]);
    a->seg = malloc(segsz);
    if (a->seg == NULL) {
        return -ENOMEM;
    }
    if (pread(fd, a->seg, segsz, sizeof(h)) != (ssize_t)segsz) {
        free(a->seg);
        return -EINVAL;
    }
    a->dev    = h.dev;
    a->nseg   = h.nseg;
    a->length = h.length;
    return 0;
}

int hlsim_dmabuf_attach(int fd, uint64_t *size_p)
{
    hlsim_p2p_t *a;
    int          rc, err, i;

    rc = hlsim_init();
    if (rc) {
        return rc;
    }
    if ((err = hlsim_fault_hit("dmabuf_attach"))) {
        return -err;
    }
    a = calloc(1, sizeof(*a));
    if (a == NULL) {
        return -ENOMEM;
    }
    rc = hlsim_p2p_read_hdr(fd, a);
    if (rc) {
        free(a);
        return rc;
    }
    /* the attachment holds the dma-buf (and so the exporter's memory) */
    a->dfd = hlsim_real.fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (a->dfd < 0) {
        rc = -errno;
        goto err_free;
    }
    pthread_mutex_lock(&hlsim_p2p_lock);
    for (i = 0; (i < HLSIM_P2P_MAX) && (hlsim_p2p[i] != NULL); i++) {
    }
    if (i < HLSIM_P2P_MAX) {
        hlsim_p2p[i] = a;
        __atomic_add_fetch(&hlsim_counters[HLSIM_COUNTER_DMABUF_ATTACHMENTS],
                           1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&hlsim_p2p_lock);
    if (i == HLSIM_P2P_MAX) {
        hlsim_real.close(a->dfd);
        rc = -ENOMEM;
        goto err_free;
    }
    *size_p = a->length;
    return i;

err_free:
    free(a->seg);
    free(a);
    return rc;
}

static hlsim_p2p_t *hlsim_p2p_get(int handle)
{
    hlsim_p2p_t *a;

    if ((handle < 0) || (handle >= HLSIM_P2P_MAX)) {
        return NULL;
    }
    pthread_mutex_lock(&hlsim_p2p_lock);
    a = hlsim_p2p[handle];
    pthread_mutex_unlock(&hlsim_p2p_lock);
    return a;
}

int hlsim_dmabuf_access(int handle, uint64_t offset, void *buf,
                        uint64_t len, int write)
{
    hlsim_p2p_t *a = hlsim_p2p_get(handle);
    uint8_t     *hbm, *p = buf;
    uint64_t     pos, n;
    uint32_t     i;

    if (a == NULL) {
        return -EBADF;
    }
    if ((offset > a->length) || (len > a->length - offset)) {
        return -EINVAL;   /* outside the mapped scatter list */
    }
    if (!hlsim_dev_operational(a->dev)) {
        return -EIO;      /* the exporter's device does not answer */
    }
    hbm = hlsim_hbm(a->dev);
    if (hbm == NULL) {
        return -EIO;
    }
    for (i = 0, pos = 0; (i < a->nseg) && (len > 0);
         pos += a->seg[i].len, i++) {
        if (offset >= pos + a->seg[i].len) {
            continue;
        }
        n = HLSIM_MIN(len, pos + a->seg[i].len - offset);
        if (write) {
            memcpy(hbm + a->seg[i].hbm_off + (offset - pos), p, n);
        } else {
            memcpy(p, hbm + a->seg[i].hbm_off + (offset - pos), n);
        }
        p      += n;
        offset += n;
        len    -= n;
    }
    return 0;
}

int hlsim_dmabuf_detach(int handle)
{
    hlsim_p2p_t *a = NULL;

    if ((handle >= 0) && (handle < HLSIM_P2P_MAX)) {
        pthread_mutex_lock(&hlsim_p2p_lock);
        a                 = hlsim_p2p[handle];
        hlsim_p2p[handle] = NULL;
        pthread_mutex_unlock(&hlsim_p2p_lock);
    }
    if (a == NULL) {
        return -EBADF;
    }
    __atomic_sub_fetch(&hlsim_counters[HLSIM_COUNTER_DMABUF_ATTACHMENTS], 1,
                       __ATOMIC_RELAXED);
    hlsim_real.close(a->dfd);
    free(a->seg);
    free(a);
    return 0;
}

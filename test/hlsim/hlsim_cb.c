/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * HL_IOCTL_CB and mmap of CBs through the compute fd (facts 5.1).
 */

#include "hlsim_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int hlsim_cb_user_maps;   /* user CB mappings alive: munmap fast path */

#define HLSIM_CB_HANDLE(_id) \
    (((uint64_t)(_id) << 12) | (GAUDI_HL_MMAP_TYPE_CB << GAUDI_HL_MMAP_TYPE_SHIFT))

/* The lookup uses lower_32_bits(handle >> PAGE_SHIFT) (facts 5.1) */
static hlsim_cb_t *hlsim_cb_find(hlsim_ctx_t *ctx, uint64_t handle)
{
    uint32_t    id = (uint32_t)(handle >> 12);
    hlsim_cb_t *cb;

    if ((handle >> GAUDI_HL_MMAP_TYPE_SHIFT) != GAUDI_HL_MMAP_TYPE_CB) {
        return NULL;
    }
    for (cb = ctx->cbs; cb != NULL; cb = cb->next) {
        if ((cb->id == id) && !cb->destroyed) {
            return cb;
        }
    }
    return NULL;
}

/* Free a destroyed CB once unmapped and unused; lock held */
static void hlsim_cb_put(hlsim_ctx_t *ctx, hlsim_cb_t *cb)
{
    hlsim_cb_t **pp;
    hlsim_map_t **mp;

    if (!cb->destroyed || (cb->user != NULL) || (cb->cs_cnt > 0)) {
        return;
    }
    for (pp = &ctx->cbs; *pp != cb; pp = &(*pp)->next) {
    }
    *pp = cb->next;
    for (mp = &ctx->maps; *mp != NULL; mp = &(*mp)->next) {
        if (((*mp)->kind == HLSIM_MAP_CB) && ((*mp)->host == cb->mem)) {
            hlsim_map_t *m = *mp;

            *mp = m->next;
            free(m);
            hlsim_counters[HLSIM_COUNTER_MAPPINGS]--;
            break;
        }
    }
    hlsim_real.munmap(cb->mem, cb->size);
    hlsim_real.close(cb->memfd);
    free(cb);
}

void hlsim_cb_release_job(hlsim_ctx_t *ctx, hlsim_cb_t *cb)
{
    cb->cs_cnt--;
    hlsim_cb_put(ctx, cb);
}

static int hlsim_cb_create(hlsim_ctx_t *ctx, union hl_cb_args *a)
{
    hlsim_devcfg_t *d = &hlsim_cfg.dev[ctx->dev];
    hlsim_cb_t     *cb;
    hlsim_map_t    *m;
    uint32_t        size = a->in.cb_size;
    int             err = 0;

    if (size > HL_MAX_CB_SIZE) {
        return -EINVAL;
    }
    /* CB mapping needs supports_cb_mapping: not Gaudi1 (facts 5.1) */
    if ((a->in.flags & HL_CB_FLAGS_MAP) && (d->asic == HLSIM_GAUDI1)) {
        return -EINVAL;
    }
    size = HLSIM_ALIGN_UP(size ? size : 1, HLSIM_PAGE_SIZE);
    cb   = calloc(1, sizeof(*cb));
    if (cb == NULL) {
        return -ENOMEM;
    }
    /* "kernel" CB memory; a memfd lets the user mmap alias it */
    cb->memfd = memfd_create("hlsim-cb", MFD_CLOEXEC);
    if ((cb->memfd < 0) || ftruncate(cb->memfd, size) ||
        ((cb->mem = hlsim_real.mmap(NULL, size, PROT_READ | PROT_WRITE,
                                    MAP_SHARED, cb->memfd, 0)) ==
         MAP_FAILED)) {
        if (cb->memfd >= 0) {
            hlsim_real.close(cb->memfd);
        }
        free(cb);
        return -ENOMEM;
    }
    cb->size = size;
    if (a->in.flags & HL_CB_FLAGS_MAP) {
        m = calloc(1, sizeof(*m));
        cb->dev_va = (m == NULL) ? 0 :
                     hlsim_va_alloc(ctx, d->host_va_start, d->host_va_end,
                                    size, HLSIM_PAGE_SIZE, 0, 0, &err);
        if (cb->dev_va == 0) {
            free(m);
            hlsim_real.munmap(cb->mem, size);
            hlsim_real.close(cb->memfd);
            free(cb);
            return -ENOMEM;
        }
        m->kind     = HLSIM_MAP_CB;
        m->va       = cb->dev_va;
        m->blk_va   = cb->dev_va;
        m->blk_size = size;
        m->size     = size;
        m->host     = cb->mem;
        hlsim_map_insert(ctx, m);
    }
    cb->id   = ctx->next_cb_id++;
    cb->next = ctx->cbs;
    ctx->cbs = cb;
    memset(a, 0, sizeof(*a));
    a->out.cb_handle = HLSIM_CB_HANDLE(cb->id);
    return 0;
}

int hlsim_cb(hlsim_file_t *f, union hl_cb_args *a)
{
    hlsim_ctx_t *ctx = f->ctx;
    hlsim_cb_t  *cb;
    int          rc, err;

    if ((err = hlsim_fault_hit("cb"))) {
        return -err;
    }
    if (!hlsim_dev_operational(f->dev)) {
        return -EBUSY;   /* facts 7.2 */
    }
    pthread_mutex_lock(&hlsim_lock);
    switch (a->in.op) {
    case HL_CB_OP_CREATE:
        rc = hlsim_cb_create(ctx, a);
        break;
    case HL_CB_OP_DESTROY:
        cb = hlsim_cb_find(ctx, a->in.cb_handle);
        if (cb == NULL) {
            rc = -EINVAL;   /* unknown or double destroy */
            break;
        }
        cb->destroyed = 1;
        hlsim_cb_put(ctx, cb);
        rc = 0;
        break;
    case HL_CB_OP_INFO:
        cb = hlsim_cb_find(ctx, a->in.cb_handle);
        if (cb == NULL) {
            rc = -EINVAL;
            break;
        }
        if (a->in.flags & HL_CB_FLAGS_GET_DEVICE_VA) {
            if (cb->dev_va == 0) {
                rc = -EINVAL;   /* not mapped */
                break;
            }
            memset(a, 0, sizeof(*a));
            a->out.device_va = cb->dev_va;
        } else {
            memset(a, 0, sizeof(*a));
            a->out.usage_cnt = cb->cs_cnt;
        }
        rc = 0;
        break;
    default:
        rc = -EINVAL;
        break;
    }
    pthread_mutex_unlock(&hlsim_lock);
    return rc;
}

/* mmap(fd, offset = handle, exact length, once); lock held */
void *hlsim_cb_mmap(hlsim_ctx_t *ctx, void *addr, size_t len, int prot,
                    int flags, uint64_t off, int *err)
{
    hlsim_cb_t *cb = hlsim_cb_find(ctx, off);
    void       *p;

    if ((cb == NULL) || (len != cb->size) || cb->mmapped) {
        *err = EINVAL;
        return NULL;
    }
    p = hlsim_real.mmap(addr, len, prot, flags, cb->memfd, 0);
    if (p == MAP_FAILED) {
        *err = errno;
        return NULL;
    }
    cb->user    = p;
    cb->mmapped = 1;
    __atomic_add_fetch(&hlsim_cb_user_maps, 1, __ATOMIC_RELAXED);
    return p;
}

/* munmap of a CB user mapping: 1 if it was one (and is now unmapped) */
int hlsim_cb_munmap(void *addr, size_t len)
{
    hlsim_ctx_t *ctx;
    hlsim_cb_t  *cb;
    int          i, found = 0;

    (void)len;
    pthread_mutex_lock(&hlsim_lock);
    for (i = 0; (i < HLSIM_MAX_CTX) && !found; i++) {
        if ((ctx = hlsim_ctx_list[i]) == NULL) {
            continue;
        }
        for (cb = ctx->cbs; cb != NULL; cb = cb->next) {
            if (cb->user == addr) {
                hlsim_real.munmap(addr, cb->size);
                cb->user = NULL;
                __atomic_sub_fetch(&hlsim_cb_user_maps, 1, __ATOMIC_RELAXED);
                hlsim_cb_put(ctx, cb);
                found = 1;
                break;
            }
        }
    }
    pthread_mutex_unlock(&hlsim_lock);
    return found;
}

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * HL_IOCTL_CB and mmap of CBs through the compute fd (facts 5.1).
 */

#include "hlsim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
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

/* The emulator's mapping of the CB memory; in the node file, also give
 * the pages back (a hole reads zeros for the next CB with this handle) */
static void hlsim_cb_free_mem(hlsim_ctx_t *ctx, hlsim_cb_t *cb)
{
    if (cb->memfd < 0) {
        if (!ctx->inherited) {
            (void)madvise(cb->mem, cb->size, MADV_REMOVE);
        }
    } else {
        hlsim_real.close(cb->memfd);
    }
    hlsim_real.munmap(cb->mem, cb->size);
}

/*
 * Is any part of the CB's node file range mapped in this process, other
 * than the emulator's own mapping? The user may have mapped it with a raw
 * mmap syscall that no interposer saw, and unmapped it the same way, so
 * /proc/self/maps is the truth. Lock held.
 */
static int hlsim_cb_mapped(hlsim_ctx_t *ctx, hlsim_cb_t *cb)
{
    unsigned long long lo, hi, off, ino, s, e, a;
    unsigned           maj, mnr;
    char               line[512];
    FILE              *f;
    int                found = 0;

    if (!ctx->cb_node) {
        return cb->user != NULL;   /* own memfd: only we can map it */
    }
    f = fopen("/proc/self/maps", "re");
    if (f == NULL) {
        return cb->user != NULL;   /* cannot tell: trust the interposer */
    }
    while (!found && fgets(line, sizeof(line), f)) {
        if ((sscanf(line, "%llx-%llx %*s %llx %x:%x %llu", &lo, &hi, &off,
                    &maj, &mnr, &ino) != 6) ||
            (ino != (unsigned long long)ctx->mem_ino) ||
            (maj != major(ctx->mem_dev)) || (mnr != minor(ctx->mem_dev))) {
            continue;
        }
        /* the part of this VMA that maps the CB's file range; the kernel
         * may have merged our own mapping with a neighbour's */
        s = HLSIM_MAX(off, cb->off);
        e = HLSIM_MIN(off + (hi - lo), cb->off + cb->size);
        if (s >= e) {
            continue;
        }
        a = lo + (s - off);
        found = (a < (uintptr_t)cb->mem) ||
                (a + (e - s) > (uintptr_t)cb->mem + cb->size);
    }
    fclose(f);
    if (!found && (cb->user != NULL)) {
        /* mmapped through us, unmapped behind our back */
        cb->user = NULL;
        __atomic_sub_fetch(&hlsim_cb_user_maps, 1, __ATOMIC_RELAXED);
    }
    return found;
}

/* Free a destroyed CB once unmapped and unused; lock held */
static void hlsim_cb_put(hlsim_ctx_t *ctx, hlsim_cb_t *cb)
{
    hlsim_cb_t **pp;
    hlsim_map_t *m;

    if (!cb->destroyed || (cb->cs_cnt > 0)) {
        return;
    }
    if (hlsim_cb_mapped(ctx, cb)) {
        /* memory lives until unmapped (facts 5.1); recheck later */
        if (!cb->zombie) {
            cb->zombie = 1;
            ctx->cb_zombies++;
        }
        return;
    }
    if (cb->zombie) {
        ctx->cb_zombies--;
    }
    for (pp = &ctx->cbs; *pp != cb; pp = &(*pp)->next) {
    }
    *pp = cb->next;
    m = (cb->dev_va != 0) ? hlsim_map_find(ctx, cb->dev_va, 1) : NULL;
    if ((m != NULL) && (m->kind == HLSIM_MAP_CB) && (m->host == cb->mem)) {
        hlsim_map_remove(ctx, m);
        free(m);
        hlsim_counters[HLSIM_COUNTER_MAPPINGS]--;
    }
    hlsim_cb_free_mem(ctx, cb);
    free(cb);
}

/* Free destroyed CBs whose raw user mapping is gone; lock held */
void hlsim_cb_sweep(hlsim_ctx_t *ctx)
{
    hlsim_cb_t *cb, *next;

    for (cb = ctx->cbs; (cb != NULL) && (ctx->cb_zombies > 0); cb = next) {
        next = cb->next;
        if (cb->zombie) {
            hlsim_cb_put(ctx, cb);
        }
    }
}

/* Context teardown, lock held: the emulator's mappings go. User mappings
 * of a per-CB memfd stay valid; in the node file they read zeros (the
 * next context reuses the handles) */
void hlsim_cb_ctx_fini(hlsim_ctx_t *ctx)
{
    hlsim_cb_t *cb;

    while ((cb = ctx->cbs) != NULL) {
        ctx->cbs = cb->next;
        if (cb->user != NULL) {
            __atomic_sub_fetch(&hlsim_cb_user_maps, 1, __ATOMIC_RELAXED);
        }
        hlsim_cb_free_mem(ctx, cb);
        free(cb);
    }
    ctx->cb_zombies = 0;
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
    /* ids are spaced by the CB's pages so that the handle ranges of live
     * CBs never overlap in the node file (see HLSIM_CB_FILE_END) */
    if ((uint64_t)ctx->next_cb_id + size / HLSIM_PAGE_SIZE > UINT32_MAX) {
        return -ENOMEM;
    }
    cb = calloc(1, sizeof(*cb));
    if (cb == NULL) {
        return -ENOMEM;
    }
    /* "kernel" CB memory: the node file at offset == handle (tmpfs), so
     * that a raw mmap(fd, handle) maps it too; else a memfd of its own */
    cb->id    = ctx->next_cb_id;
    cb->off   = HLSIM_CB_HANDLE(cb->id);
    cb->memfd = -1;
    cb->mem   = MAP_FAILED;
    if (ctx->cb_node) {
        char path[4300];
        int  fd;

        snprintf(path, sizeof(path), hlsim_cfg.legacy ? "%s/dev/hl%d" :
                 "%s/dev/accel/accel%d", hlsim_cfg.root,
                 hlsim_accel_idx(ctx->dev));
        fd = hlsim_real.open(path, O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
            cb->mem = hlsim_real.mmap(NULL, size, PROT_READ | PROT_WRITE,
                                      MAP_SHARED, fd, cb->off);
            hlsim_real.close(fd);
        }
        if (cb->mem != MAP_FAILED) {
            /* zeroed like fresh kernel memory */
            (void)madvise(cb->mem, size, MADV_REMOVE);
        }
    } else {
        cb->memfd = memfd_create("hlsim-cb", MFD_CLOEXEC);
        if ((cb->memfd >= 0) && !ftruncate(cb->memfd, size)) {
            cb->mem = hlsim_real.mmap(NULL, size, PROT_READ | PROT_WRITE,
                                      MAP_SHARED, cb->memfd, 0);
        }
        if ((cb->mem == MAP_FAILED) && (cb->memfd >= 0)) {
            hlsim_real.close(cb->memfd);
        }
    }
    if (cb->mem == MAP_FAILED) {
        free(cb);
        return -ENOMEM;
    }
    cb->size = size;
    if (a->in.flags & HL_CB_FLAGS_MAP) {
        m = calloc(1, sizeof(*m));
        cb->dev_va = (m == NULL) ? 0 :
                     hlsim_va_alloc(ctx, d->host_va_start, d->host_va_end,
                                    size, HLSIM_PAGE_SIZE, 0, 0, &err);
        if (cb->dev_va != 0) {
            m->kind     = HLSIM_MAP_CB;
            m->va       = cb->dev_va;
            m->blk_va   = cb->dev_va;
            m->blk_size = size;
            m->size     = size;
            m->host     = cb->mem;
            if (hlsim_map_insert(ctx, m)) {
                cb->dev_va = 0;
            }
        }
        if (cb->dev_va == 0) {
            free(m);
            cb->size = size;
            hlsim_cb_free_mem(ctx, cb);
            free(cb);
            return -ENOMEM;
        }
    }
    ctx->next_cb_id += size / HLSIM_PAGE_SIZE;
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
    hlsim_cb_sweep(ctx);
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

/*
 * mmap(fd, offset = handle, exact length, once); lock held. Only when the
 * call reaches an interposer (mmap, or mmap through syscall()): a raw
 * mmap syscall maps the same node file range without these checks.
 */
void *hlsim_cb_mmap(hlsim_ctx_t *ctx, void *addr, size_t len, int prot,
                    int flags, int fd, uint64_t off, int *err)
{
    hlsim_cb_t *cb = hlsim_cb_find(ctx, off);
    void       *p;

    if ((cb == NULL) || (len != cb->size) || cb->mmapped) {
        *err = EINVAL;
        return NULL;
    }
    p = (cb->memfd < 0) ?
        hlsim_real.libc_mmap(addr, len, prot, flags, fd, (off_t)off) :
        hlsim_real.libc_mmap(addr, len, prot, flags, cb->memfd, 0);
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
                hlsim_real.libc_munmap(addr, cb->size);
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

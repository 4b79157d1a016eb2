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
#include <sys/stat.h>
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

/*
 * The CB store: the node file at offset == handle (tmpfs), so that a raw
 * mmap(fd, handle) maps it too, else a memfd of the context. The driver's
 * CB memory is kernel memory that costs the process no VMA until the user
 * maps it (K612 common/command_buffer.c:103-160, memory_mgr.c:230-296): the
 * emulator reaches its CBs through a few windows of HLSIM_CB_SLICE_PAGES
 * on the store, so a mapped CB costs one VMA, as on the driver.
 */
static uint64_t hlsim_cb_store_off(hlsim_ctx_t *ctx, uint64_t page)
{
    return (ctx->cb_node ? HLSIM_CB_HANDLE(0) : 0) + page * HLSIM_PAGE_SIZE;
}

/* The window on the store's slice @a k (in HLSIM_CB_SLICE_PAGES from
 * its start), mapped on first use; lock held */
static uint8_t *hlsim_cb_slice(hlsim_ctx_t *ctx, uint32_t k)
{
    const uint64_t len = (uint64_t)HLSIM_CB_SLICE_PAGES * HLSIM_PAGE_SIZE;
    uint64_t       off = hlsim_cb_store_off(ctx, (uint64_t)k *
                                            HLSIM_CB_SLICE_PAGES);
    char           path[4300];
    struct stat    st;
    void          *p = MAP_FAILED;
    int            fd, i, w = -1;

    for (i = 0; i < HLSIM_CB_SLICES; i++) {
        if (ctx->cb_win[i].idx == k + 1) {
            return ctx->cb_win[i].p;
        }
        w = ((w < 0) && (ctx->cb_win[i].idx == 0)) ? i : w;
    }
    if (w < 0) {
        return NULL;
    }
    if (ctx->cb_node) {
        snprintf(path, sizeof(path), hlsim_cfg.legacy ? "%s/dev/hl%d" :
                 "%s/dev/accel/accel%d", hlsim_cfg.root,
                 hlsim_accel_idx(ctx->dev));
        fd = hlsim_real.open(path, O_RDWR | O_CLOEXEC);
    } else {
        if ((ctx->cb_memfd < 0) &&
            ((ctx->cb_memfd = memfd_create("hlsim-cb", MFD_CLOEXEC)) < 0)) {
            return NULL;
        }
        /* grow only: a fork child shares the memfd */
        fd = hlsim_real.fstat(ctx->cb_memfd, &st) ? -1 :
             ((uint64_t)st.st_size >= off + len) ? ctx->cb_memfd :
             ftruncate(ctx->cb_memfd, off + len) ? -1 : ctx->cb_memfd;
    }
    if (fd >= 0) {
        p = hlsim_real.mmap(NULL, len, PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_NORESERVE, fd, off);
    }
    if (ctx->cb_node && (fd >= 0)) {
        hlsim_real.close(fd);
    }
    if (p == MAP_FAILED) {
        return NULL;
    }
    ctx->cb_win[w].idx = k + 1;
    ctx->cb_win[w].p   = p;
    return p;
}

/* A fork child's copy of the context: its CBs get store pages of their
 * own, away from the parent's and other children's (one slice apart by
 * pid; base + HLSIM_CB_SLICES slices stays below 2^32 pages) */
void hlsim_cb_atfork_child(hlsim_ctx_t *ctx)
{
    ctx->cb_id_base = 0x80000000u | (((uint32_t)getpid() & 0xfff) << 18);
}

/* Give the CB's pages back: a hole reads zeros for the next CB there */
static void hlsim_cb_free_mem(hlsim_ctx_t *ctx, hlsim_cb_t *cb)
{
    if (!ctx->inherited) {
        (void)madvise(cb->mem, cb->size, MADV_REMOVE);
    }
}

/*
 * Store pages for a CB of @a pages, lowest first as the driver's IDR
 * hands out ids (K612 common/memory_mgr.c:160, idr_alloc from 1). Each CB
 * keeps a free page after it and none starts a window, so that no two
 * mappings of the store abut in file offset and merge into one VMA (the
 * driver's are VM_PFNMAP, never merged). Lock held; 0 when none.
 */
static uint32_t hlsim_cb_id_alloc(hlsim_ctx_t *ctx, uint32_t pages)
{
    const uint64_t sp = HLSIM_CB_SLICE_PAGES;
    uint64_t       id = 1, first, cid, cend;   /* from cb_id_base */
    hlsim_cb_t    *cb;
    int            moved;

    do {
        moved = 0;
        first = id % sp;
        if (first == 0) {
            id++;
        } else if (first + pages + 1 > sp) {
            id += sp - first + 1;
        }
        for (cb = ctx->cbs; cb != NULL; cb = cb->next) {
            cid  = cb->id - ctx->cb_id_base;
            cend = cid + cb->size / HLSIM_PAGE_SIZE + 1;
            if ((id < cend) && (cid < id + pages + 1)) {
                id    = cend;
                moved = 1;
            }
        }
    } while (moved || (id % sp == 0) || (id % sp + pages + 1 > sp));
    return (id / sp < HLSIM_CB_SLICES) ? ctx->cb_id_base + id : 0;
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

/* Context teardown, lock held: the emulator's windows go. User mappings
 * of the context's memfd stay valid; in the node file they read zeros
 * (the next context reuses the handles) */
void hlsim_cb_ctx_fini(hlsim_ctx_t *ctx)
{
    hlsim_cb_t *cb;
    unsigned    k;

    while ((cb = ctx->cbs) != NULL) {
        ctx->cbs = cb->next;
        if (cb->user != NULL) {
            __atomic_sub_fetch(&hlsim_cb_user_maps, 1, __ATOMIC_RELAXED);
        }
        hlsim_cb_free_mem(ctx, cb);
        free(cb);
    }
    ctx->cb_zombies = 0;
    for (k = 0; k < HLSIM_CB_SLICES; k++) {
        if (ctx->cb_win[k].idx != 0) {
            hlsim_real.munmap(ctx->cb_win[k].p, (uint64_t)HLSIM_CB_SLICE_PAGES *
                              HLSIM_PAGE_SIZE);
            ctx->cb_win[k].idx = 0;
        }
    }
    if (ctx->cb_memfd >= 0) {
        hlsim_real.close(ctx->cb_memfd);
        ctx->cb_memfd = -1;
    }
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
    cb = calloc(1, sizeof(*cb));
    if (cb == NULL) {
        return -ENOMEM;
    }
    cb->id  = hlsim_cb_id_alloc(ctx, size / HLSIM_PAGE_SIZE);
    cb->off = hlsim_cb_store_off(ctx, cb->id);
    cb->mem = (cb->id == 0) ? NULL :
              hlsim_cb_slice(ctx, cb->id / HLSIM_CB_SLICE_PAGES);
    if (cb->mem == NULL) {
        hlsim_log("dev%d: CB create of %u bytes: no room in the emulator's "
                  "CB store", ctx->dev, size);
        free(cb);
        return -ENOMEM;
    }
    cb->mem += (uint64_t)(cb->id % HLSIM_CB_SLICE_PAGES) * HLSIM_PAGE_SIZE;
    /* zeroed like fresh kernel memory */
    (void)madvise(cb->mem, size, MADV_REMOVE);
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
            free(cb);
            return -ENOMEM;
        }
    }
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
 * mmap(fd, offset = handle, once) of a length that page-rounds to the
 * CB's page-rounded size: do_mmap rounds the length up before the driver
 * compares the VMA with the CB (Linux 6.12 mm/mmap.c:316-318; K612
 * common/memory_mgr.c:252-259, 269-274); lock held. Only when the call
 * reaches an interposer (mmap, or mmap through syscall()): a raw mmap
 * syscall maps the same node file range without these checks.
 */
void *hlsim_cb_mmap(hlsim_ctx_t *ctx, void *addr, size_t len, int prot,
                    int flags, int fd, uint64_t off, int *err)
{
    hlsim_cb_t *cb = hlsim_cb_find(ctx, off);
    void       *p;

    if ((cb == NULL) || (len == 0) ||
        (HLSIM_ALIGN_UP((uint64_t)len, HLSIM_PAGE_SIZE) != cb->size) ||
        cb->mmapped) {
        *err = EINVAL;
        return NULL;
    }
    p = ctx->cb_node ?
        hlsim_real.libc_mmap(addr, len, prot, flags, fd, (off_t)off) :
        hlsim_real.libc_mmap(addr, len, prot, flags, ctx->cb_memfd,
                             (off_t)cb->off);
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

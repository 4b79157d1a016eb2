/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * HL_IOCTL_MEMORY: ALLOC/FREE/MAP/UNMAP (facts 3), EXPORT_DMABUF_FD
 * (facts 4.1, 4.2) and the Habana op 99 REG_DMABUF_FD (facts 4.3).
 */

#include "hlsim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/vfs.h>
#include <sys/mman.h>

#define HLSIM_TASK_SIZE 0x7FFFFFFFF000ULL

/* ---- VA ranges of one context ----
 *
 * The blocks never overlap: ctx->map_idx holds them sorted by blk_va, so
 * lookup, insertion point and removal are binary searches (O(log n); the
 * array move is a memmove); ctx->maps links them in the same order for
 * the walks */

/* Index of the last block with blk_va <= @a va, -1 if none */
static long hlsim_map_floor(hlsim_ctx_t *ctx, uint64_t va)
{
    long lo = 0, hi = (long)ctx->map_cnt - 1, mid, res = -1;

    while (lo <= hi) {
        mid = lo + (hi - lo) / 2;
        if (ctx->map_idx[mid].blk_va <= va) {
            res = mid;
            lo  = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    return res;
}

int hlsim_map_insert(hlsim_ctx_t *ctx, hlsim_map_t *m)
{
    hlsim_map_ent_t *idx;
    long             pos;
    uint32_t         cap;

    if (ctx->map_cnt == ctx->map_cap) {
        cap = ctx->map_cap ? 2 * ctx->map_cap : 64;
        idx = realloc(ctx->map_idx, cap * sizeof(*idx));
        if (idx == NULL) {
            return -ENOMEM;
        }
        ctx->map_idx = idx;
        ctx->map_cap = cap;
    }
    pos = hlsim_map_floor(ctx, m->blk_va) + 1;
    if (pos == 0) {
        m->next   = ctx->maps;
        ctx->maps = m;
    } else {
        m->next                      = ctx->map_idx[pos - 1].m->next;
        ctx->map_idx[pos - 1].m->next = m;
    }
    memmove(&ctx->map_idx[pos + 1], &ctx->map_idx[pos],
            (ctx->map_cnt - pos) * sizeof(*ctx->map_idx));
    ctx->map_idx[pos].blk_va  = m->blk_va;
    ctx->map_idx[pos].blk_end = m->blk_va + m->blk_size;
    ctx->map_idx[pos].m       = m;
    ctx->map_cnt++;
    hlsim_counters[HLSIM_COUNTER_MAPPINGS]++;
    return 0;
}

/* Unlink @a m from the list and the index (not freed, not counted) */
void hlsim_map_remove(hlsim_ctx_t *ctx, hlsim_map_t *m)
{
    long pos = hlsim_map_floor(ctx, m->blk_va);

    while ((pos >= 0) && (ctx->map_idx[pos].m != m)) {
        pos--;   /* a zero-sized block may share blk_va */
    }
    if (pos < 0) {
        return;
    }
    if (pos == 0) {
        ctx->maps = m->next;
    } else {
        ctx->map_idx[pos - 1].m->next = m->next;
    }
    memmove(&ctx->map_idx[pos], &ctx->map_idx[pos + 1],
            (ctx->map_cnt - pos - 1) * sizeof(*ctx->map_idx));
    ctx->map_cnt--;
    m->next = NULL;
}

/*
 * @a va rounded up to a multiple of @a align in its low 48 bits: the
 * driver aligns DRAM VAs of a non-power-of-two page that way, with the
 * hint mask's bits above (K612 common/memory.c:605-625, DRAM_VA_HINT_MASK
 * include/gaudi2/gaudi2.h:46); for powers of two it is plain alignment
 */
#define HLSIM_VA_LOW_MASK 0xFFFFFFFFFFFFULL

static uint64_t hlsim_va_align(uint64_t va, uint64_t align)
{
    uint64_t rem = (va & HLSIM_VA_LOW_MASK) % align;

    return rem ? va + align - rem : va;
}

/*
 * A VA block of @a size in [start, end) as the driver's get_va_block (K612
 * common/memory.c:593-740): the free blocks are the gaps between this
 * context's mappings; each is tried from its first aligned address, and
 * the smallest that fits wins, the lowest on a tie (best fit, :671-676).
 * A hint is taken when it is aligned and lies in a fitting gap, with one
 * byte to spare before the gap's end (the driver compares against the
 * gap's inclusive end, :678-679); an unaligned hint is ignored (:623-640),
 * as is one that does not fit. With HL_MEM_FORCE_HINT any hint not taken
 * fails, hint 0 included (:693-701), and the caller answers ENOMEM
 * (:1175-1182).
 */
uint64_t hlsim_va_alloc(hlsim_ctx_t *ctx, uint64_t start, uint64_t end,
                        uint64_t size, uint64_t align, uint64_t hint,
                        int force, int *err)
{
    uint64_t         gs = start, ge, vs, best = 0, best_size = UINT64_MAX;
    hlsim_map_ent_t *e, *last = ctx->map_idx + ctx->map_cnt;

    if (hlsim_va_align(hint, align) != hint) {
        hint = 0;
    }
    /* every gap of the range, over the index's inline blocks from the
     * last one that starts at or below the range's start (binary search;
     * the ones before it end before it) */
    e = ctx->map_idx + HLSIM_MAX(hlsim_map_floor(ctx, start), 0);
    for (;; ++e) {
        ge = ((e >= last) || (e->blk_va >= end)) ? end : e->blk_va;
        vs = hlsim_va_align(gs, align);
        if ((vs < ge) && (ge - vs >= size)) {
            if (hint && (hint >= vs) && (hint < ge) && (size < ge - hint)) {
                return hint;
            }
            if (ge - vs < best_size) {
                best      = vs;
                best_size = ge - vs;
            }
        }
        if (ge == end) {
            break;
        }
        gs = HLSIM_MAX(gs, e->blk_end);
    }
    if ((best == 0) || force) {
        *err = ENOMEM;
        return 0;
    }
    return best;
}

/* The mapping whose block covers [va, va+len) */
hlsim_map_t *hlsim_map_find(hlsim_ctx_t *ctx, uint64_t va, uint64_t len)
{
    long         pos = hlsim_map_floor(ctx, va);
    hlsim_map_t *m;

    if (pos < 0) {
        return NULL;
    }
    m = ctx->map_idx[pos].m;
    if ((va - m->blk_va < m->blk_size) &&
        (len <= m->blk_size - (va - m->blk_va))) {
        return m;
    }
    return NULL;
}

/* The mapping MAP returned @a va for: its VA lies in its own block */
static hlsim_map_t *hlsim_map_exact(hlsim_ctx_t *ctx, uint64_t va)
{
    long         pos = hlsim_map_floor(ctx, va);
    hlsim_map_t *m;

    for (; pos >= 0; pos--) {
        m = ctx->map_idx[pos].m;
        if ((m->va == va) && (m->kind != HLSIM_MAP_CB)) {
            return m;
        }
        if (m->blk_va + m->blk_size <= va) {
            break;
        }
    }
    return NULL;
}

/* ---- dma-buf liveness: a probe OFD fails to get LOCK_EX while any
 * descriptor of the exported OFD (in any process) holds LOCK_SH ---- */

int hlsim_map_exported(hlsim_map_t *m)
{
    hlsim_export_t **pp = &m->exports, *e;

    while ((e = *pp) != NULL) {
        if (flock(e->probe_fd, LOCK_EX | LOCK_NB) == 0) {
            *pp = e->next;
            hlsim_real.close(e->probe_fd);
            free(e);
        } else {
            pp = &e->next;
        }
    }
    return m->exports != NULL;
}

/* Forget the released exports of this process's mappings on @a dev, once
 * one of its dma-buf fds is closed (lock held): their probe fds are the
 * emulator's bookkeeping, the kernel keeps nothing for a released dma-buf */
void hlsim_mem_prune_exports(int dev)
{
    hlsim_ctx_t *ctx;
    hlsim_map_t *m;
    unsigned     i;

    for (i = 0; i < HLSIM_MAX_CTX; i++) {
        ctx = hlsim_ctx_list[i];
        if ((ctx == NULL) || (ctx->dev != dev)) {
            continue;
        }
        for (m = ctx->maps; m != NULL; m = m->next) {
            if (m->exports != NULL) {
                (void)hlsim_map_exported(m);
            }
        }
    }
}

/*
 * Whether a dma-buf exported from device @a dev is still referenced by any
 * process (an importer's op-99 mapping, a received fd, the exporter's own).
 * The driver keeps the exporter's context, and with it the device, until
 * the last one is released (K612 common/memory.c:1827-1885: the dma-buf
 * holds the compute file). Dead exports are unlinked on the way.
 */
int hlsim_dmabufs_alive(int dev)
{
    char           dir[4200], path[4400], prefix[32];
    struct dirent *de;
    DIR           *d;
    int            fd, alive = 0;

    snprintf(dir, sizeof(dir), "%s/dmabuf", hlsim_cfg.root);
    snprintf(prefix, sizeof(prefix), "dev%d.", dev);
    d = opendir(dir);
    if (d == NULL) {
        return 0;
    }
    while (!alive && ((de = readdir(d)) != NULL)) {
        if (strncmp(de->d_name, prefix, strlen(prefix))) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        fd = hlsim_real.open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            unlink(path);   /* nobody holds it any more */
        } else {
            alive = 1;
        }
        hlsim_real.close(fd);
    }
    closedir(d);
    return alive;
}

int hlsim_is_dmabuf_fd(int fd)
{
    char        link[64], target[4200];
    const char *root = hlsim_root_path();
    size_t      rl   = strlen(root);
    ssize_t     n;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    if (hlsim_real.readlink == NULL) {
        hlsim_real_init();
    }
    n = hlsim_real.readlink(link, target, sizeof(target) - 1);
    if (n <= 0) {
        return 0;
    }
    target[n] = '\0';
    return !strncmp(target, root, rl) && !strncmp(target + rl, "/dmabuf/", 8);
}

/* ---- host memory checks (facts 3.3: access_ok, pin with FOLL_WRITE) ---- */

/*
 * Linux >= 6.5 refuses FOLL_LONGTERM|FOLL_WRITE pins of shared file
 * mappings whose file system tracks dirty pages (mm/gup.c
 * writable_file_mapping_allowed(), "mm/gup: disallow FOLL_LONGTERM GUP-nonfast
 * writing to file-backed mappings"); shmem and hugetlbfs are fine. The
 * driver pins USERPTR memory that way (facts 9.10). Modelled for the accel
 * flavours (kernels >= 6.3, taken as >= 6.5), not for Linux 6.1.
 */
static int hlsim_longterm_pin_refused(const char *line, const char *perms)
{
    char          path[512], *p;
    struct statfs sfs;
    int           n = 0;

    if (hlsim_cfg.legacy || (perms[1] != 'w') || (perms[3] != 's') ||
        (sscanf(line, "%*s %*s %*s %*s %*s %n", &n) < 0) || (n == 0) ||
        (line[n] != '/')) {
        return 0;   /* private, read-only or anonymous */
    }
    snprintf(path, sizeof(path), "%s", line + n);
    path[strcspn(path, "\n")] = '\0';
    if ((p = strstr(path, " (deleted)")) != NULL) {
        *strrchr(path, '/') = '\0';   /* its directory's file system */
        if (path[0] == '\0') {
            return 0;
        }
    }
    if (!strncmp(path, "/memfd:", 7) || !strncmp(path, "/SYSV", 5) ||
        (statfs(path, &sfs) != 0)) {
        return 0;   /* shmem, or cannot tell */
    }
    return (sfs.f_type != HLSIM_TMPFS_MAGIC) &&
           (sfs.f_type != 0x958458f6 /* HUGETLBFS_MAGIC */);
}

/*
 * Whether pin_user_pages_fast(FOLL_WRITE | FOLL_LONGTERM) pins a page of
 * this mapping. Linux 6.1 adds FOLL_FORCE (K61 common/memory.c:2196-2197),
 * which pins any private (copy-on-write) mapping, writable or not.
 */
static int hlsim_pinnable(const char *line, const char *perms)
{
    if (hlsim_cfg.legacy && (perms[3] == 'p')) {
        return 1;
    }
    return (perms[0] == 'r') && (perms[1] == 'w') &&
           !hlsim_longterm_pin_refused(line, perms);
}

/* Bytes the driver pins from @a start on, up to @a end */
static uint64_t hlsim_user_range_pinned(uint64_t start, uint64_t end)
{
    FILE              *f;
    char               line[512], perms[8];
    unsigned long long lo, hi;
    uint64_t           cur = start;

    f = fopen("/proc/self/maps", "re");
    if (f == NULL) {
        return end - start;   /* cannot tell: accept */
    }
    while ((cur < end) && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3) {
            continue;
        }
        if ((hi <= cur) || (lo > cur)) {
            if (lo > cur) {
                break;   /* hole */
            }
            continue;
        }
        if (!hlsim_pinnable(line, perms)) {
            break;
        }
        cur = hi;
    }
    fclose(f);
    return HLSIM_MIN(cur, end) - start;
}

/* ---- ALLOC / FREE (facts 3.2) ---- */

static hlsim_alloc_t *hlsim_alloc_find(hlsim_ctx_t *ctx, uint64_t handle)
{
    hlsim_alloc_t *a;

    for (a = ctx->allocs; a != NULL; a = a->next) {
        if (a->handle == (uint32_t)handle) {
            return a;
        }
    }
    return NULL;
}

static void hlsim_account(hlsim_ctx_t *ctx, int64_t delta)
{
    hlsim_shdev_t *sd = &hlsim_shm->dev[ctx->dev];

    if ((delta < 0) && ((uint64_t)-delta > ctx->ctx_dram)) {
        delta = -(int64_t)ctx->ctx_dram;   /* never poison the node */
    }
    ctx->ctx_dram += delta;
    if (!ctx->inherited) {
        __atomic_add_fetch(&sd->dram_used, delta, __ATOMIC_ACQ_REL);
    }
}

static int hlsim_mem_alloc(hlsim_ctx_t *ctx, struct hl_mem_in *in,
                           uint64_t *handle)
{
    hlsim_devcfg_t *d = &hlsim_cfg.dev[ctx->dev];
    hlsim_alloc_t  *a;
    uint64_t        npages;
    uint32_t        i, n, run, h;

    if (in->alloc.mem_size == 0) {
        return -EINVAL;
    }
    if (d->asic == HLSIM_GAUDI1) {
        /* no DRAM MMU: only accounting, handle 0 (facts 3.2) */
        hlsim_account(ctx, in->alloc.mem_size);
        *handle = 0;
        return 0;
    }
    /* page_size is ignored: no user-set page size on Gaudi2 (facts 3.2) */
    npages = (in->alloc.mem_size + d->page_size - 1) / d->page_size;
    if (npages * d->page_size > d->dram_size) {
        return -ENOMEM;
    }
    a = calloc(1, sizeof(*a));
    if (a != NULL) {
        a->pages = calloc(npages, sizeof(*a->pages));
    }
    if ((a == NULL) || (a->pages == NULL)) {
        free(a);
        return -ENOMEM;
    }
    n = 0;
    if (in->flags & HL_MEM_CONTIGUOUS) {
        for (i = 1, run = 0; (i < ctx->npages) && (run < npages); i++) {
            run = ctx->page_used[i] ? 0 : run + 1;
        }
        if (run == npages) {
            for (n = 0; n < npages; n++) {
                a->pages[n] = i - npages + n;
            }
        }
    } else {
        for (i = 1; (i < ctx->npages) && (n < npages); i++) {
            if (!ctx->page_used[i]) {
                a->pages[n++] = i;
            }
        }
    }
    if (n < npages) {
        free(a->pages);
        free(a);
        return -ENOMEM;
    }
    for (n = 0; n < npages; n++) {
        ctx->page_used[a->pages[n]] = 1;
    }
    /* IDR: lowest free id >= 1 */
    for (h = 1; hlsim_alloc_find(ctx, h) != NULL; h++) {
    }
    a->handle   = h;
    a->npages   = npages;
    a->size     = npages * d->page_size;
    a->flags    = in->flags;
    a->next     = ctx->allocs;
    ctx->allocs = a;
    hlsim_account(ctx, a->size);
    hlsim_counters[HLSIM_COUNTER_ALLOCS]++;
    *handle = h;
    return 0;
}

static int hlsim_mem_free(hlsim_ctx_t *ctx, struct hl_mem_in *in)
{
    hlsim_alloc_t **pp, *a;
    uint32_t        n;

    if (hlsim_cfg.dev[ctx->dev].asic == HLSIM_GAUDI1) {
        /* FREE reads alloc.mem_size, aliasing free.handle (facts 3.2) */
        hlsim_account(ctx, -(int64_t)in->alloc.mem_size);
        return 0;
    }
    for (pp = &ctx->allocs; (a = *pp) != NULL; pp = &a->next) {
        if (a->handle == (uint32_t)in->free.handle) {
            break;
        }
    }
    if ((a == NULL) || (a->map_cnt > 0)) {
        return -EINVAL;   /* unknown, or "is mapped, cannot free" */
    }
    *pp = a->next;
    for (n = 0; n < a->npages; n++) {
        ctx->page_used[a->pages[n]] = 0;
    }
    hlsim_account(ctx, -(int64_t)a->size);
    hlsim_counters[HLSIM_COUNTER_ALLOCS]--;
    free(a->pages);
    free(a);
    return 0;
}

/* ---- MAP / UNMAP (facts 3.3) ---- */

static int hlsim_map_host(hlsim_ctx_t *ctx, struct hl_mem_in *in,
                          uint64_t *va_out)
{
    hlsim_devcfg_t *d    = &hlsim_cfg.dev[ctx->dev];
    uint64_t        addr = in->map_host.host_virt_addr;
    uint64_t        size = in->map_host.mem_size;
    uint64_t        start, end, blk, va, lo, hi, pinned;
    hlsim_map_t    *m;
    int             huge, err = 0;

    if ((size == 0) || (addr + size < addr)) {
        return -EINVAL;
    }
    if ((addr == 0) || (addr + size > HLSIM_TASK_SIZE)) {
        return -EFAULT;
    }
    start = HLSIM_ALIGN_DOWN(addr, HLSIM_PAGE_SIZE);
    end   = HLSIM_ALIGN_UP(addr + size, HLSIM_PAGE_SIZE);
    pinned = hlsim_user_range_pinned(start, end);
    if (pinned == 0) {
        return -EFAULT;   /* pin_user_pages_fast fails on the first page */
    }
    if (pinned < end - start) {
        /* pinned partly: K612 common/memory.c:2325-2335 ENOMEM; K61
         * :2196-2207 EFAULT */
        return hlsim_cfg.legacy ? -EFAULT : -ENOMEM;
    }
    /* a forced hint needs a page-aligned host address (K612
     * common/memory.c:1161-1168); unforced, the hint stays */
    if (in->map_host.hint_addr && (addr != start) &&
        (in->flags & HL_MEM_FORCE_HINT)) {
        return -EINVAL;
    }
    /* 2 MiB-aligned runs use the huge range (facts 3.3) */
    huge = ((addr % HLSIM_HUGE_PAGE) == 0) && ((size % HLSIM_HUGE_PAGE) == 0);
    lo   = huge ? d->huge_va_start : d->host_va_start;
    hi   = huge ? d->huge_va_end : d->host_va_end;
    blk  = hlsim_va_alloc(ctx, lo, hi, end - start,
                          huge ? HLSIM_HUGE_PAGE : HLSIM_PAGE_SIZE,
                          in->map_host.hint_addr,
                          in->flags & HL_MEM_FORCE_HINT, &err);
    if (blk == 0) {
        return -err;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return -ENOMEM;
    }
    va          = blk + (addr - start);  /* keeps the sub-page offset */
    m->kind     = HLSIM_MAP_HOST;
    m->va       = va;
    m->blk_va   = blk;
    m->blk_size = end - start;
    m->size     = size;
    m->host     = (uint8_t*)(uintptr_t)addr;
    if (hlsim_pin_record(m) || hlsim_map_insert(ctx, m)) {
        hlsim_pin_release(m);
        free(m);
        return -ENOMEM;
    }
    *va_out = va;
    return 0;
}

static int hlsim_map_device(hlsim_ctx_t *ctx, struct hl_mem_in *in,
                            uint64_t *va_out)
{
    hlsim_devcfg_t *d = &hlsim_cfg.dev[ctx->dev];
    hlsim_alloc_t  *a;
    hlsim_map_t    *m;
    uint64_t        va, blk;
    int             err = 0;

    /* Gaudi1 has no IDR entries at all: handle 0 is unknown (facts 3.2) */
    if ((d->asic == HLSIM_GAUDI1) ||
        !(a = hlsim_alloc_find(ctx, in->map_device.handle))) {
        return -EINVAL;
    }
    blk = HLSIM_ALIGN_UP(a->size, d->dmmu_page);
    va  = hlsim_va_alloc(ctx, d->dram_va_start, d->dram_va_end, blk,
                         d->dmmu_page, in->map_device.hint_addr,
                         in->flags & HL_MEM_FORCE_HINT, &err);
    if (va == 0) {
        return -err;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return -ENOMEM;
    }
    m->kind     = HLSIM_MAP_DRAM;
    m->va       = va;
    m->blk_va   = va;
    m->blk_size = a->size;   /* only the allocation is backed */
    m->size     = a->size;
    m->alloc    = a;
    if (hlsim_map_insert(ctx, m)) {
        free(m);
        return -ENOMEM;
    }
    a->map_cnt++;
    *va_out = va;
    return 0;
}

static void hlsim_map_free(hlsim_map_t *m)
{
    hlsim_export_t *e;

    if (m->alloc != NULL) {
        m->alloc->map_cnt--;
    }
    if (m->kind == HLSIM_MAP_IMPORT) {
        hlsim_real.close(m->import_fd);
        free(m->import.seg);
    }
    while ((e = m->exports) != NULL) {
        m->exports = e->next;
        hlsim_real.close(e->probe_fd);
        free(e);
    }
    hlsim_pin_release(m);   /* UNMAP unpins the pages */
    hlsim_counters[HLSIM_COUNTER_MAPPINGS]--;
    free(m);
}

static int hlsim_mem_unmap(hlsim_ctx_t *ctx, struct hl_mem_in *in)
{
    hlsim_map_t *m = hlsim_map_exact(ctx, in->unmap.device_virt_addr);

    /* exact VA only; not while an exported dma-buf lives (facts 3.3) */
    if ((m == NULL) || hlsim_map_exported(m)) {
        return -EINVAL;
    }
    hlsim_map_remove(ctx, m);
    hlsim_map_free(m);
    return 0;
}

/* ---- EXPORT_DMABUF_FD (facts 4.1) ---- */

static int hlsim_add_seg(hlsim_dmabuf_hdr_t *h, uint64_t off, uint64_t len)
{
    if (h->nseg && (h->seg[h->nseg - 1].hbm_off +
                    h->seg[h->nseg - 1].len == off)) {
        h->seg[h->nseg - 1].len += len;
        return 0;
    }
    if (h->nseg == HLSIM_DMABUF_MAX_SEGS) {
        return -ENOMEM;
    }
    h->seg[h->nseg].hbm_off = off;
    h->seg[h->nseg].len     = len;
    h->nseg++;
    return 0;
}

static int hlsim_dmabuf_create(hlsim_ctx_t *ctx, hlsim_dmabuf_hdr_t *h,
                               int flags, int *probe)
{
    char          path[4300], tmp[4300];
    hlsim_file_t *f;
    size_t        len = sizeof(*h) + h->nseg * sizeof(h->seg[0]);
    int           fd, pfd;

    h->magic    = HLSIM_DMABUF_MAGIC;
    h->dev      = ctx->dev;
    h->exporter = getpid();
    h->id       = __atomic_add_fetch(&hlsim_shm->dev[ctx->dev].next_dmabuf_id,
                                     1, __ATOMIC_ACQ_REL);
    snprintf(path, sizeof(path), "%s/dmabuf/dev%d.%llu", hlsim_cfg.root,
             ctx->dev, (unsigned long long)h->id);
    /*
     * Locked before it is visible under its name: hlsim_dmabufs_alive() in
     * another process (an open of this device) would otherwise take
     * LOCK_EX on the new file first and unlink it as dead
     */
    snprintf(tmp, sizeof(tmp), "%s/dmabuf/new.%d.%llu", hlsim_cfg.root,
             ctx->dev, (unsigned long long)h->id);
    fd = hlsim_real.open(tmp, O_RDWR | O_CREAT | O_EXCL |
                         (flags & O_CLOEXEC), 0600);
    if (fd < 0) {
        return -errno;
    }
    /* stays linked while alive: hlsim_dmabufs_alive() probes it */
    pfd = hlsim_real.open(tmp, O_RDONLY | O_CLOEXEC);
    if ((pfd < 0) || (pwrite(fd, h, len, 0) != (ssize_t)len) ||
        flock(fd, LOCK_SH | LOCK_NB) || (fd >= HLSIM_FD_MAX) ||
        rename(tmp, path)) {
        if (pfd >= 0) {
            hlsim_real.close(pfd);
        }
        hlsim_real.close(fd);
        unlink(tmp);
        return -ENOMEM;
    }
    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        hlsim_real.close(pfd);
        hlsim_real.close(fd);
        unlink(path);
        return -ENOMEM;
    }
    f->kind      = HLSIM_F_DMABUF;
    f->dev       = ctx->dev;
    f->refcnt    = 1;
    f->dmabuf_id = h->id;
    hlsim_fd_install_locked(fd, f);   /* the caller holds hlsim_lock */
    hlsim_counters[HLSIM_COUNTER_DMABUFS]++;
    *probe = pfd;
    return fd;
}

static int hlsim_mem_export(hlsim_ctx_t *ctx, struct gaudi_hl_mem_in *in)
{
    hlsim_devcfg_t     *d    = &hlsim_cfg.dev[ctx->dev];
    uint64_t            addr = in->export_dmabuf_fd.addr;
    uint64_t            size = in->export_dmabuf_fd.mem_size;
    uint64_t            off  = in->export_dmabuf_fd.offset;
    union {
        hlsim_dmabuf_hdr_t h;
        uint8_t            raw[sizeof(hlsim_dmabuf_hdr_t) +
                               HLSIM_DMABUF_MAX_SEGS * 16];
    }                  *u;
    hlsim_map_t        *m = NULL;
    hlsim_export_t     *e;
    uint64_t            pos, chunk, page;
    int                 fd, probe, rc;

    if (hlsim_cfg.legacy) {
        /*
         * Linux 6.1 (K61 common/memory.c:1852-1886, 2158-2166): no export
         * on ASICs with DRAM virtual memory (Gaudi2); else the 6.1 form
         * {handle = physical address, mem_size}, the offset is not read
         * (K61 memory.c:1796-1830: aligned address, >= one page).
         */
        if (d->asic != HLSIM_GAUDI1) {
            return -EOPNOTSUPP;
        }
        if ((addr % HLSIM_PAGE_SIZE) || (size < HLSIM_PAGE_SIZE)) {
            return -EINVAL;
        }
        off = 0;
    } else if (!size || (addr % HLSIM_PAGE_SIZE) ||
               (size % HLSIM_PAGE_SIZE) || (off % HLSIM_PAGE_SIZE)) {
        return -EINVAL;
    }
    u = calloc(1, sizeof(*u));
    if (u == NULL) {
        return -ENOMEM;
    }
    if (d->asic == HLSIM_GAUDI1) {
        /* physical user DRAM address, offset 0 (facts 4.1) */
        if (off || (addr < d->dram_user_off) ||
            (addr - d->dram_user_off >= d->dram_size) ||
            (size > d->dram_user_off + d->dram_size - addr)) {
            rc = -EINVAL;
            goto out;
        }
        /* the whole range inside the DRAM PCI BAR (K612 memory.c:
         * 1919-1949) */
        if (addr - d->dram_phys_base + size > hlsim_dram_bar_size(ctx->dev)) {
            rc = -EINVAL;
            goto out;
        }
        hlsim_add_seg(&u->h, addr - d->dram_phys_base, size);
    } else {
        /* exact VA of a device-memory MAP; host maps refused (facts 4.1) */
        m = hlsim_map_exact(ctx, addr);
        if ((m == NULL) || (m->kind != HLSIM_MAP_DRAM) ||
            (off > m->size) || (size > m->size - off)) {
            rc = -EINVAL;
            goto out;
        }
        page = d->page_size;
        /* every page of the allocation, not just the exported range,
         * inside the DRAM PCI BAR (K612 memory.c:1951-1983) */
        for (pos = 0; pos < m->alloc->npages; pos++) {
            if ((uint64_t)m->alloc->pages[pos] * page + page >
                hlsim_dram_bar_size(ctx->dev)) {
                rc = -EINVAL;
                goto out;
            }
        }
        for (pos = off; pos < off + size; pos += chunk) {
            chunk = HLSIM_MIN(page - pos % page, off + size - pos);
            rc    = hlsim_add_seg(&u->h, (uint64_t)m->alloc->pages[pos / page]
                                  * page + pos % page, chunk);
            if (rc) {
                goto out;
            }
        }
    }
    u->h.length = size;
    fd = hlsim_dmabuf_create(ctx, &u->h, in->flags, &probe);
    if (fd < 0) {
        rc = fd;
        goto out;
    }
    if ((m != NULL) && (e = calloc(1, sizeof(*e)))) {
        e->probe_fd = probe;
        e->next     = m->exports;
        m->exports  = e;
    } else {
        hlsim_real.close(probe);
    }
    rc = fd;
out:
    free(u);
    return rc;
}

/* ---- REG_DMABUF_FD, Habana driver only (facts 4.3) ---- */

static int hlsim_mem_reg_dmabuf(hlsim_ctx_t *ctx, struct gaudi_hl_mem_in *in,
                                uint64_t *va_out)
{
    hlsim_devcfg_t     *d   = &hlsim_cfg.dev[ctx->dev];
    int                 ufd = (int)in->reg_dmabuf_fd.fd;
    uint64_t            len = in->reg_dmabuf_fd.length;
    hlsim_dmabuf_hdr_t  h;
    hlsim_map_t        *m;
    uint64_t            blk, span;
    size_t              segsz;
    int                 err = 0, dfd;

    if (!hlsim_cfg.habana) {
        return -EINVAL;   /* upstream: "Unknown opcode" */
    }
    /* dma_buf_get(fd): no such open fd -> EBADF, not a dma-buf -> EINVAL */
    if ((ufd < 0) || (in->reg_dmabuf_fd.fd > INT32_MAX) ||
        (hlsim_real.fcntl(ufd, F_GETFD) < 0)) {
        return -EBADF;
    }
    /* a dma-buf of another emulated node cannot reach this one: no
     * machine can hand a dma-buf to another machine's driver */
    if (!hlsim_is_dmabuf_fd(ufd) ||
        (pread(ufd, &h, sizeof(h), 0) != sizeof(h))) {
        return -EINVAL;
    }
    if ((h.magic != HLSIM_DMABUF_MAGIC) || (h.dev >= (unsigned)
        hlsim_cfg.num_dev) || !h.nseg || (h.nseg > HLSIM_DMABUF_MAX_SEGS) ||
        (len == 0) || (len > h.length)) {
        return -EINVAL;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return -ENOMEM;
    }
    segsz         = h.nseg * sizeof(m->import.seg[0]);
    m->import.seg = malloc(segsz);
    if ((m->import.seg == NULL) ||
        (pread(ufd, m->import.seg, segsz, sizeof(h)) != (ssize_t)segsz)) {
        free(m->import.seg);
        free(m);
        return -EINVAL;
    }
    /* our own reference keeps the dma-buf alive, as dma_buf_get does */
    dfd = hlsim_real.fcntl(ufd, F_DUPFD_CLOEXEC, 3);
    span = HLSIM_ALIGN_UP(len, HLSIM_PAGE_SIZE);
    blk  = (dfd < 0) ? 0 :
           hlsim_va_alloc(ctx, d->host_va_start, d->host_va_end, span,
                          HLSIM_PAGE_SIZE, 0, 0, &err);
    if (blk == 0) {
        if (dfd >= 0) {
            hlsim_real.close(dfd);
        }
        free(m->import.seg);
        free(m);
        return (dfd < 0) ? -EMFILE : -err;
    }
    m->kind          = HLSIM_MAP_IMPORT;
    m->va            = blk;
    m->blk_va        = blk;
    m->blk_size      = len;
    m->size          = len;
    m->import.dev    = h.dev;
    m->import.length = len;
    m->import.nseg   = h.nseg;
    m->import_fd     = dfd;
    if (hlsim_map_insert(ctx, m)) {
        hlsim_real.close(dfd);
        free(m->import.seg);
        free(m);
        return -ENOMEM;
    }
    *va_out = blk;
    return 0;
}

int hlsim_mem(hlsim_file_t *f, union hl_mem_args *a)
{
    struct gaudi_hl_mem_in in;
    hlsim_ctx_t           *ctx = f->ctx;
    const char            *fop;
    uint64_t               out = 0;
    int                    rc, err;

    memcpy(&in, &a->in, sizeof(in));
    switch (in.op) {
    case HL_MEM_OP_ALLOC:              fop = "mem_alloc"; break;
    case HL_MEM_OP_FREE:               fop = "mem_free"; break;
    case HL_MEM_OP_MAP:                fop = "mem_map"; break;
    case HL_MEM_OP_UNMAP:              fop = "mem_unmap"; break;
    case HL_MEM_OP_EXPORT_DMABUF_FD:   fop = "mem_export"; break;
    case GAUDI_HL_MEM_OP_REG_DMABUF_FD: fop = "mem_reg_dmabuf"; break;
    default:                           fop = NULL; break;
    }
    if ((fop != NULL) && (err = hlsim_fault_hit(fop))) {
        rc = -err;
        goto out;
    }
    /* every MEMORY op needs an operational device (facts 3.1) */
    if (!hlsim_dev_operational(f->dev)) {
        rc = -EBUSY;
        goto out;
    }
    pthread_mutex_lock(&hlsim_lock);
    switch (in.op) {
    case HL_MEM_OP_ALLOC:
        rc = hlsim_mem_alloc(ctx, &a->in, &out);
        break;
    case HL_MEM_OP_FREE:
        rc = hlsim_mem_free(ctx, &a->in);
        break;
    case HL_MEM_OP_MAP:
        rc = (in.flags & HL_MEM_USERPTR) ? hlsim_map_host(ctx, &a->in, &out) :
                                           hlsim_map_device(ctx, &a->in, &out);
        break;
    case HL_MEM_OP_UNMAP:
        rc = hlsim_mem_unmap(ctx, &a->in);
        break;
    case HL_MEM_OP_EXPORT_DMABUF_FD:
        rc = hlsim_mem_export(ctx, &in);
        break;
    case GAUDI_HL_MEM_OP_REG_DMABUF_FD:
        rc = hlsim_mem_reg_dmabuf(ctx, &in, &out);
        break;
    default:
        rc = -EINVAL;   /* MAP_BLOCK, TS_ALLOC: not emulated */
        break;
    }
    pthread_mutex_unlock(&hlsim_lock);

out:
    /* ALLOC/MAP/EXPORT zero the whole args before the output (facts 3.1) */
    switch (in.op) {
    case HL_MEM_OP_ALLOC:
    case HL_MEM_OP_MAP:
    case GAUDI_HL_MEM_OP_REG_DMABUF_FD:
        memset(a, 0, sizeof(*a));
        a->out.handle = (rc == 0) ? out : 0;
        break;
    case HL_MEM_OP_EXPORT_DMABUF_FD:
        memset(a, 0, sizeof(*a));
        a->out.fd = (rc >= 0) ? rc : -1;
        rc        = (rc >= 0) ? 0 : rc;
        break;
    default:
        break;
    }
    return rc;
}

/* Context teardown, with the lock held */
void hlsim_mem_ctx_fini(hlsim_ctx_t *ctx)
{
    hlsim_map_t   *m;
    hlsim_alloc_t *a;

    while ((m = ctx->maps) != NULL) {
        ctx->maps = m->next;
        hlsim_map_free(m);
    }
    free(ctx->map_idx);
    ctx->map_idx = NULL;
    ctx->map_cnt = ctx->map_cap = 0;
    while ((a = ctx->allocs) != NULL) {
        ctx->allocs = a->next;
        free(a->pages);
        free(a);
        hlsim_counters[HLSIM_COUNTER_ALLOCS]--;
    }
    hlsim_cb_ctx_fini(ctx);
}

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Pinned host pages of MAP USERPTR (docs/hlsim.md "Pinned pages").
 *
 * The driver pins the user pages at MAP with
 * pin_user_pages_fast(FOLL_WRITE | FOLL_LONGTERM) (K612 common/memory.c:
 * 2310-2340; K61 :2185-2207 adds FOLL_FORCE) and its MMU maps those pages
 * until UNMAP: every later DMA reads and writes them, whatever the process
 * does with the virtual range meanwhile. hlsim copies through the host
 * virtual address, so it records the page frame of every page at MAP (from
 * /proc/self/pagemap, which shows frames to CAP_SYS_ADMIN only) and checks
 * them at each DMA: a page whose frame changed, or that is no longer
 * present, is a stale pin. A stale-pin DMA is counted, logged, and does to
 * the new pages what the hardware does to them: nothing. Its writes are
 * dropped; its reads deliver a poison pattern (stricter than the old
 * pages' stale data, which the emulator no longer has).
 *
 * The pages are held as the driver holds them: registered as fixed
 * buffers of an io_uring instance, which pins them with the same
 * FOLL_WRITE | FOLL_LONGTERM (Linux io_uring/rsrc.c io_pin_pages), so the
 * kernel neither migrates nor reclaims them until UNMAP, and the frame
 * recorded is the one the device would use. Without that hold a page the
 * kernel migrates (compaction) would read as stale: a false alarm.
 */

#include "hlsim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <linux/io_uring.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ  22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define HLSIM_PM_PRESENT   (1ULL << 63)
#define HLSIM_PM_PFN_MASK  ((1ULL << 55) - 1)
#define HLSIM_PIN_BATCH    512        /* pagemap entries per pread */
#define HLSIM_PIN_SCRATCH  (4ULL << 20)
#define HLSIM_PIN_SLOTS    16384      /* io_uring's IORING_MAX_REG_BUFFERS */
#define HLSIM_PIN_SLOT_MAX (1ULL << 30) /* its largest buffer (SZ_1G) */

/* madvise without UCM's hook (the emulator's own, under hlsim_lock) */
static int hlsim_pin_madvise(uint64_t addr, uint64_t len, int advice)
{
    return (int)hlsim_real.syscall(SYS_madvise, addr, len, advice);
}

/* What a stale-pin read delivers, repeated from the DMA's first byte */
static const uint8_t hlsim_pin_poison[8] = {'S', 'T', 'A', 'L', 'E', 'P',
                                            'I', 'N'};

static int      hlsim_pin_state;   /* 0: not probed, 1: on, -1: off */
static int      hlsim_pin_fd = -1; /* /proc/self/pagemap of hlsim_pin_pid */
static pid_t    hlsim_pin_pid;
static uint8_t *hlsim_pin_sink;    /* dropped writes land here */
static uint8_t *hlsim_pin_src;     /* poison, HLSIM_PIN_SCRATCH + 8 */
static int      hlsim_pin_ring = -1; /* io_uring holding the pinned pages */
static pid_t    hlsim_pin_ring_pid;
static uint32_t hlsim_pin_hint;    /* where the next free slot search starts */
static uint8_t  hlsim_pin_used[HLSIM_PIN_SLOTS];
static int      hlsim_pin_warned;

/* The pagemap of this process (reopened in a fork child); lock held */
static int hlsim_pin_pagemap(void)
{
    pid_t pid = getpid();

    if ((hlsim_pin_fd >= 0) && (hlsim_pin_pid == pid)) {
        return hlsim_pin_fd;
    }
    if (hlsim_pin_fd >= 0) {
        hlsim_real.close(hlsim_pin_fd);   /* the parent's mm */
    }
    hlsim_pin_fd  = hlsim_real.open("/proc/self/pagemap",
                                    O_RDONLY | O_CLOEXEC);
    hlsim_pin_pid = pid;
    return hlsim_pin_fd;
}

/*
 * The io_uring of this process, with an empty table of HLSIM_PIN_SLOTS
 * buffers; a fork child drops its parent's (whose buffers are the
 * parent's pages) and makes its own. -1 when io_uring is not available.
 * Lock held, or at load.
 */
static int hlsim_pin_uring(void)
{
    struct io_uring_rsrc_register reg;
    struct io_uring_params params;
    pid_t pid = getpid();
    int fd;

    if (hlsim_pin_ring_pid == pid) {
        return hlsim_pin_ring;
    }
    if (hlsim_pin_ring >= 0) {
        hlsim_real.close(hlsim_pin_ring);
    }
    hlsim_pin_ring     = -1;
    hlsim_pin_ring_pid = pid;
    memset(hlsim_pin_used, 0, sizeof(hlsim_pin_used));
    memset(&params, 0, sizeof(params));
    fd = (int)syscall(__NR_io_uring_setup, 1, &params);
    if (fd < 0) {
        return -1;
    }
    memset(&reg, 0, sizeof(reg));
    reg.nr    = HLSIM_PIN_SLOTS;
    reg.flags = IORING_RSRC_REGISTER_SPARSE;
    if (syscall(__NR_io_uring_register, fd, IORING_REGISTER_BUFFERS2, &reg,
                sizeof(reg)) < 0) {
        hlsim_real.close(fd);
        return -1;
    }
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    hlsim_pin_ring = fd;
    return fd;
}

/* Slot @a slot of the ring holds [base, +len) (pinned), or nothing when
 * @a base is NULL (unpinned); 0 or -errno */
static int hlsim_pin_slot_set(uint32_t slot, void *base, uint64_t len)
{
    struct iovec iov = {.iov_base = base, .iov_len = len};
    struct io_uring_rsrc_update2 up;

    memset(&up, 0, sizeof(up));
    up.offset = slot;
    up.data   = (uintptr_t)&iov;
    up.nr     = 1;
    return (syscall(__NR_io_uring_register, hlsim_pin_ring,
                    IORING_REGISTER_BUFFERS_UPDATE, &up, sizeof(up)) == 1) ?
           0 : -errno;
}

static int hlsim_pin_slot_get(uint32_t *slot_p)
{
    uint32_t i, slot;

    for (i = 0; i < HLSIM_PIN_SLOTS; i++) {
        slot = (hlsim_pin_hint + i) % HLSIM_PIN_SLOTS;
        if (!hlsim_pin_used[slot]) {
            hlsim_pin_used[slot] = 1;
            hlsim_pin_hint       = slot + 1;
            *slot_p              = slot;
            return 0;
        }
    }
    return -ENOSPC;
}

/* Drop the hold of @a m's pages (their frames may move from now on) */
static void hlsim_pin_unhold(hlsim_map_t *m)
{
    uint32_t i;

    /* a fork child's copy of its parent's map: the parent's ring */
    for (i = 0; (i < m->nslots) && (m->slots_pid == getpid()) &&
                (hlsim_pin_ring_pid == m->slots_pid); i++) {
        (void)hlsim_pin_slot_set(m->slots[i], NULL, 0);
        hlsim_pin_used[m->slots[i]] = 0;
    }
    free(m->slots);
    m->slots  = NULL;
    m->nslots = 0;
}

/*
 * Hold the pages of [start, end) as the driver does, in slots of at most
 * 1 GiB. When io_uring cannot (not available, all slots taken, memory it
 * does not pin), the frames are only recorded: said once, as a migrated
 * page may then read as stale. Lock held.
 */
static void hlsim_pin_hold(hlsim_map_t *m, uint64_t start, uint64_t end)
{
    uint64_t n = (end - start + HLSIM_PIN_SLOT_MAX - 1) / HLSIM_PIN_SLOT_MAX;
    uint64_t off, len;
    int      rc = -ENOSYS;

    if (hlsim_pin_uring() < 0) {
        goto out_warn;
    }
    m->slots = calloc(n, sizeof(*m->slots));
    if (m->slots == NULL) {
        rc = -ENOMEM;
        goto out_warn;
    }
    m->slots_pid = getpid();
    for (off = start; off < end; off += len) {
        len = HLSIM_MIN(end - off, HLSIM_PIN_SLOT_MAX);
        rc  = hlsim_pin_slot_get(&m->slots[m->nslots]);
        if (rc == 0) {
            rc = hlsim_pin_slot_set(m->slots[m->nslots], (void*)off, len);
            if (rc != 0) {
                hlsim_pin_used[m->slots[m->nslots]] = 0;
            }
        }
        if (rc != 0) {
            hlsim_pin_unhold(m);
            goto out_warn;
        }
        m->nslots++;
    }
    return;

out_warn:
    if (!hlsim_pin_warned) {
        hlsim_pin_warned = 1;
        hlsim_log("stale-pin check: pages of 0x%llx..0x%llx not held (%s); "
                  "their frames are recorded only, and a page the kernel "
                  "migrates would read as stale", (unsigned long long)start,
                  (unsigned long long)end, strerror(-rc));
    }
}

/* At load: the fds are there before any test counts its fds */
void hlsim_pin_init(void)
{
    (void)hlsim_pin_pagemap();
    (void)hlsim_pin_uring();
}

/* Pagemap entries of @a n pages from @a addr; 0 or -1 */
static int hlsim_pin_read(uint64_t addr, uint64_t n, uint64_t *ent)
{
    int    fd  = hlsim_pin_pagemap();
    size_t len = n * sizeof(*ent);

    return ((fd >= 0) &&
            (pread(fd, ent, len, (addr / HLSIM_PAGE_SIZE) * sizeof(*ent)) ==
             (ssize_t)len)) ? 0 : -1;
}

/*
 * Whether frames are visible (root): probed once on a page of our own.
 * When on, transparent huge pages are disabled for the process: khugepaged
 * collapsing a range would move unpinned pages and read as a stale pin.
 */
static int hlsim_pin_probe(void)
{
    uint64_t ent = 0;
    void    *p;

    if (hlsim_pin_state != 0) {
        return hlsim_pin_state > 0;
    }
    hlsim_pin_state = -1;
    p = hlsim_real.mmap(NULL, 2 * HLSIM_PIN_SCRATCH + 8,
                        PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        hlsim_log("stale-pin check off: no memory for its buffers");
        return 0;
    }
    hlsim_pin_sink = p;
    hlsim_pin_src  = hlsim_pin_sink + HLSIM_PIN_SCRATCH;
    hlsim_pin_sink[0] = 1;   /* faulted in: present */
    if (hlsim_pin_read((uintptr_t)hlsim_pin_sink, 1, &ent) ||
        !(ent & HLSIM_PM_PRESENT) || !(ent & HLSIM_PM_PFN_MASK)) {
        hlsim_real.munmap(p, 2 * HLSIM_PIN_SCRATCH + 8);
        hlsim_pin_sink = hlsim_pin_src = NULL;
        hlsim_log("stale-pin check off: /proc/self/pagemap shows no page "
                  "frames (needs CAP_SYS_ADMIN: run as root)");
        return 0;
    }
    for (ent = 0; ent < HLSIM_PIN_SCRATCH + 8; ent++) {
        hlsim_pin_src[ent] = hlsim_pin_poison[ent % 8];
    }
    (void)prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
    hlsim_pin_state = 1;
    return 1;
}

int hlsim_pin_check_active(void)
{
    int rc = hlsim_init();

    if (rc) {
        return rc;
    }
    pthread_mutex_lock(&hlsim_lock);
    rc = hlsim_pin_probe();
    pthread_mutex_unlock(&hlsim_lock);
    return rc;
}

/*
 * Pin the pages of [m->host, +size) as the driver does: fault them in
 * for write without changing data (FOLL_WRITE breaks copy-on-write), and
 * record their frames. A range only readable (6.1 FOLL_FORCE on a private
 * read-only mapping) is faulted in for read. Lock held; 0 or -ENOMEM.
 */
int hlsim_pin_record(hlsim_map_t *m)
{
    uint64_t start = HLSIM_ALIGN_DOWN((uintptr_t)m->host, HLSIM_PAGE_SIZE);
    uint64_t end   = HLSIM_ALIGN_UP((uintptr_t)m->host + m->size,
                                    HLSIM_PAGE_SIZE);
    uint64_t i, n  = (end - start) / HLSIM_PAGE_SIZE;

    hlsim_pin_release(m);
    if (!hlsim_pin_probe()) {
        return 0;
    }
    if (hlsim_pin_madvise(start, end - start, MADV_POPULATE_WRITE) &&
        hlsim_pin_madvise(start, end - start, MADV_POPULATE_READ)) {
        return 0;   /* the pinnable check passed: nothing to record */
    }
    m->pfn = malloc(n * sizeof(*m->pfn));
    if (m->pfn == NULL) {
        return -ENOMEM;
    }
    /* frames after the hold: a long-term pin may first move a page out of
     * a movable zone */
    hlsim_pin_hold(m, start, end);
    if (hlsim_pin_read(start, n, m->pfn)) {
        hlsim_pin_release(m);
        return 0;
    }
    for (i = 0; i < n; i++) {
        /* 0: not present after the fault-in, not checked */
        m->pfn[i] = (m->pfn[i] & HLSIM_PM_PRESENT) ?
                    (m->pfn[i] & HLSIM_PM_PFN_MASK) : 0;
    }
    m->npfn = n;
    return 0;
}

void hlsim_pin_release(hlsim_map_t *m)
{
    hlsim_pin_unhold(m);
    free(m->pfn);
    m->pfn  = NULL;
    m->npfn = 0;
}

/* Add [p, p+len) pointing into a scratch buffer; phase keeps the poison
 * pattern aligned on the DMA's offset @a pos */
static int hlsim_pin_add_scratch(hlsim_pin_add_t add, void *v, int write,
                                 uint64_t pos, uint64_t len)
{
    uint64_t chunk;

    for (; len > 0; pos += chunk, len -= chunk) {
        chunk = HLSIM_MIN(len, HLSIM_PIN_SCRATCH);
        if (add(v, write ? hlsim_pin_sink : hlsim_pin_src + pos % 8,
                chunk)) {
            return -1;
        }
    }
    return 0;
}

/*
 * Segments of [host, host+len), a range of USERPTR mapping @a m, as the
 * DMA sees it: pages still holding their pinned frames through their host
 * address, stale ones through the sink (@a write) or the poison. Sets
 * *stale_p to the first stale host address (0: none). Lock held; 0, or -1
 * when the segment list is full.
 */
int hlsim_pin_segs(hlsim_map_t *m, uint8_t *host, uint64_t len, int write,
                   hlsim_pin_add_t add, void *v, uint64_t *stale_p)
{
    uint64_t base = HLSIM_ALIGN_DOWN((uintptr_t)m->host, HLSIM_PAGE_SIZE);
    uint64_t addr = (uintptr_t)host, pos = 0, run = 0, pg, i, n, chunk;
    uint64_t ent[HLSIM_PIN_BATCH];
    int      run_stale = 0, stale;

    *stale_p = 0;
    if (m->pfn == NULL) {
        return add(v, host, len);
    }
    while (pos < len) {
        pg = ((addr + pos) - base) / HLSIM_PAGE_SIZE;
        n  = HLSIM_MIN(HLSIM_PIN_BATCH,
                       (HLSIM_ALIGN_UP(addr + len, HLSIM_PAGE_SIZE) -
                        HLSIM_ALIGN_DOWN(addr + pos, HLSIM_PAGE_SIZE)) /
                       HLSIM_PAGE_SIZE);
        if (hlsim_pin_read(HLSIM_ALIGN_DOWN(addr + pos, HLSIM_PAGE_SIZE), n,
                           ent)) {
            memset(ent, 0, n * sizeof(ent[0]));   /* unreadable: stale */
        }
        for (i = 0; (i < n) && (pos < len); i++, pg++, pos += chunk) {
            chunk = HLSIM_MIN(HLSIM_PAGE_SIZE - (addr + pos) % HLSIM_PAGE_SIZE,
                              len - pos);
            stale = (pg < m->npfn) && (m->pfn[pg] != 0) &&
                    (!(ent[i] & HLSIM_PM_PRESENT) ||
                     ((ent[i] & HLSIM_PM_PFN_MASK) != m->pfn[pg]));
            if (stale && (*stale_p == 0)) {
                *stale_p = addr + pos;
            }
            if ((run > 0) && (stale != run_stale)) {
                if (run_stale ?
                    hlsim_pin_add_scratch(add, v, write, pos - run, run) :
                    add(v, host + pos - run, run)) {
                    return -1;
                }
                run = 0;
            }
            run_stale = stale;
            run      += chunk;
        }
    }
    if (run > 0) {
        return run_stale ? hlsim_pin_add_scratch(add, v, write, pos - run, run)
                         : add(v, host + pos - run, run);
    }
    return 0;
}

/*
 * A stale-pin DMA: counted in this process and node-wide, and logged.
 * @a what names the transfer, @a va its device address.
 */
void hlsim_pin_stale_dma(int dev, const char *what, uint64_t va,
                         uint64_t host, uint64_t size, int write)
{
    __atomic_add_fetch(&hlsim_counters[HLSIM_COUNTER_STALE_PIN_DMAS], 1,
                       __ATOMIC_RELAXED);
    __atomic_add_fetch(&hlsim_shm->dev[dev].stale_pin_dmas, 1,
                       __ATOMIC_RELAXED);
    hlsim_log("dev%d: stale-pin DMA: pid %d %s VA 0x%llx size %llu: host "
              "page 0x%llx is no longer the page pinned at MAP; %s",
              dev, (int)getpid(), what, (unsigned long long)va,
              (unsigned long long)size, (unsigned long long)host,
              write ? "the write is dropped (hardware writes the old page)"
                    : "the read delivers poison \"STALEPIN\" (hardware "
                      "reads the old page)");
}

/*
 * After fork() the parent's private pages are shared copy-on-write with
 * the child; the kernel instead copies pinned pages for the child at once
 * (mm/memory.c copy_present_page(), for folio_maybe_dma_pinned()) and the
 * parent keeps its frames. Here the parent breaks the sharing now, keeping
 * the data, and takes the frames it ends up with for the pages that still
 * held their pinned ones (a stale pin stays stale). Lock held.
 */
static void hlsim_pin_refresh(hlsim_map_t *m)
{
    uint64_t start = HLSIM_ALIGN_DOWN((uintptr_t)m->host, HLSIM_PAGE_SIZE);
    uint64_t cur[HLSIM_PIN_BATCH], now[HLSIM_PIN_BATCH], pg, i, n;

    for (pg = 0; pg < m->npfn; pg += n) {
        n = HLSIM_MIN(HLSIM_PIN_BATCH, m->npfn - pg);
        if (hlsim_pin_read(start + pg * HLSIM_PAGE_SIZE, n, cur) ||
            hlsim_pin_madvise(start + pg * HLSIM_PAGE_SIZE,
                              n * HLSIM_PAGE_SIZE, MADV_POPULATE_WRITE) ||
            hlsim_pin_read(start + pg * HLSIM_PAGE_SIZE, n, now)) {
            continue;
        }
        for (i = 0; i < n; i++) {
            if ((cur[i] & HLSIM_PM_PRESENT) && (now[i] & HLSIM_PM_PRESENT) &&
                ((cur[i] & HLSIM_PM_PFN_MASK) == m->pfn[pg + i])) {
                m->pfn[pg + i] = now[i] & HLSIM_PM_PFN_MASK;
            }
        }
    }
}

void hlsim_pin_atfork_parent(void)
{
    hlsim_ctx_t *ctx;
    hlsim_map_t *m;
    unsigned     i;

    if (hlsim_pin_state <= 0) {
        return;
    }
    for (i = 0; i < HLSIM_MAX_CTX; i++) {
        ctx = hlsim_ctx_list[i];
        if ((ctx == NULL) || ctx->inherited) {
            continue;
        }
        for (m = ctx->maps; m != NULL; m = m->next) {
            if ((m->kind == HLSIM_MAP_HOST) && (m->pfn != NULL)) {
                hlsim_pin_refresh(m);
            }
        }
    }
}

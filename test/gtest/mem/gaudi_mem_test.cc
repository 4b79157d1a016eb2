/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Tests of the memory layer's heap itself (src/uct/gaudi/mem): the free
 * lists of a chunk (allocation and free patterns, fragmentation,
 * coalescing), and on the habanalabs emulator (test/emu/hlsim, the ASIC of
 * HLSIM_ASIC) the heap's allocation, sub-allocation in chunks, resolution
 * of interior addresses and of addresses outside any buffer, the deferred
 * release of an exported chunk (moved here from the MD's tests, which
 * reach the heap through the MD) and heap teardown. Retained SynapseAI
 * chunks:
 * gaudi_syn_heap.* (test/gtest/syn, 25-syn), which need the emulated
 * libSynapse. Run by test/suites/40-md.sh.
 */

#include "common/gaudi_gtest.h"

#include <gtest/gtest.h>

extern "C" {
#include <uct/gaudi/mem/gaudi_mem_int.h>
}

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

using gaudi_gtest::count_fds;
using gaudi_gtest::hlsim_counter;


/* ---- chunk free lists, no device ---- */

class gaudi_mem_chunk : public ::testing::Test {
protected:
    static const uint64_t SIZE = 1 << 20;

    void SetUp() override {
        m_chunk = uct_gaudi_chunk_new(0x1000000, 0x2000, SIZE);
        ASSERT_NE(nullptr, m_chunk);
    }

    void TearDown() override {
        uct_gaudi_chunk_delete(m_chunk);
    }

    /* the free list as (offset, length) pairs */
    std::vector<std::pair<uint64_t, uint64_t>> extents() const {
        std::vector<std::pair<uint64_t, uint64_t>> v;
        uct_gaudi_extent_t *ext;

        ucs_list_for_each(ext, &m_chunk->free_list, list) {
            v.push_back(std::make_pair(ext->offset, ext->length));
        }
        return v;
    }

    uint64_t take(uint64_t size) {
        uint64_t off = UINT64_MAX;
        EXPECT_EQ(UCS_OK, uct_gaudi_chunk_take(m_chunk, size, &off));
        return off;
    }

    void give(uint64_t off, uint64_t size) {
        EXPECT_EQ(UCS_OK, uct_gaudi_chunk_give(m_chunk, off, size));
    }

    uct_gaudi_chunk_t *m_chunk = nullptr;
};

TEST_F(gaudi_mem_chunk, first_fit_in_order)
{
    EXPECT_EQ(0u, take(256));
    EXPECT_EQ(256u, take(512));
    EXPECT_EQ(768u, take(256));
    EXPECT_EQ(3u, m_chunk->nbufs);
    EXPECT_EQ(1024u, m_chunk->used);
    ASSERT_EQ(1u, extents().size());
    EXPECT_EQ(std::make_pair(1024ul, SIZE - 1024), extents()[0]);
}

TEST_F(gaudi_mem_chunk, whole_chunk_then_full)
{
    uint64_t off;

    EXPECT_EQ(0u, take(SIZE));
    EXPECT_TRUE(extents().empty());
    EXPECT_EQ(UCS_ERR_NO_MEMORY, uct_gaudi_chunk_take(m_chunk, 256, &off));
    give(0, SIZE);
    ASSERT_EQ(1u, extents().size());
    EXPECT_EQ(std::make_pair(0ul, SIZE), extents()[0]);
    EXPECT_EQ(0u, m_chunk->nbufs);
    EXPECT_EQ(0u, m_chunk->used);
}

/* Holes left by frees are reused first fit; a request larger than every
 * hole goes past them */
TEST_F(gaudi_mem_chunk, fragmentation)
{
    uint64_t a = take(256), b = take(256), c = take(1024), d = take(256);

    give(a, 256);
    give(c, 1024);
    ASSERT_EQ(3u, extents().size());                 /* two holes + tail */
    EXPECT_EQ(std::make_pair(a, 256ul), extents()[0]);
    EXPECT_EQ(std::make_pair(c, 1024ul), extents()[1]);

    EXPECT_EQ(d + 256, take(2048));                  /* fits no hole */
    EXPECT_EQ(c, take(512));                         /* first that fits */
    EXPECT_EQ(a, take(256));                         /* the first hole */
    ASSERT_EQ(2u, extents().size());
    EXPECT_EQ(std::make_pair(c + 512, 512ul), extents()[0]);
    (void)b;
}

/* A free merges with the free range before it, after it, or both */
TEST_F(gaudi_mem_chunk, coalescing)
{
    uint64_t a = take(256), b = take(256), c = take(256), d = take(256);

    give(a, 256);
    give(c, 256);
    EXPECT_EQ(3u, extents().size());
    give(b, 256);                                     /* joins a and c */
    ASSERT_EQ(2u, extents().size());
    EXPECT_EQ(std::make_pair(a, 768ul), extents()[0]);
    give(d, 256);                                     /* joins all */
    ASSERT_EQ(1u, extents().size());
    EXPECT_EQ(std::make_pair(0ul, SIZE), extents()[0]);
    EXPECT_EQ(0u, m_chunk->used);
}

/* Frees in every order end with one extent over the whole chunk */
TEST_F(gaudi_mem_chunk, free_orders)
{
    const unsigned n = 16;
    std::vector<uint64_t> offs;
    unsigned order, i;

    for (order = 0; order < 3; ++order) {
        offs.clear();
        for (i = 0; i < n; ++i) {
            offs.push_back(take(256 * (i + 1)));
        }
        for (i = 0; i < n; ++i) {
            unsigned k = (order == 0) ? i : (order == 1) ? (n - 1 - i) :
                         ((i * 7) % n);              /* interleaved */
            give(offs[k], 256 * (k + 1));
        }
        ASSERT_EQ(1u, extents().size()) << "order " << order;
        EXPECT_EQ(std::make_pair(0ul, SIZE), extents()[0]);
        EXPECT_EQ(0u, m_chunk->nbufs);
    }
}


/* ---- the heap on the emulated device ---- */

/* UCX errors and warnings, kept off the output (test/gtest/common) */
class scoped_log : public gaudi_gtest::log_capture {
public:
    /* some captured message contains all of @a words */
    bool has(const char *w1, const char *w2 = NULL) const {
        std::vector<std::string> words{w1};

        if (w2 != NULL) {
            words.push_back(w2);
        }
        return !find(words).empty();
    }
    bool empty() const { return entries.empty(); }
    void clear() { entries.clear(); }
    std::string all() const { return dump(); }
};

/*
 * The process's heap, not taken until the first allocation opens the
 * device (nothing else in this program holds one). Its last put destroys
 * it (no public API reference here), so every test starts from none.
 */
class gaudi_mem_heap : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(gaudi_gtest::hlsim_loaded())
            << "run with LD_PRELOAD=libhlsim.so";
        gaudi_gtest::hlsim_fault_clear();
        m_fds = count_fds();
        ASSERT_EQ(nullptr, uct_gaudi_heap_peek()) << "a heap left behind";
        heap_open();
    }

    void TearDown() override {
        gaudi_gtest::hlsim_fault_clear();
        heap_close();
        EXPECT_EQ(nullptr, uct_gaudi_heap_peek()) << "heap left behind";
        EXPECT_EQ(m_fds, count_fds());
    }

    /* a heap whose device is taken, as by the first allocation */
    void heap_open() {
        ASSERT_EQ(UCS_OK, uct_gaudi_heap_get(NULL, &m_heap));
        ASSERT_EQ(UCS_OK, uct_gaudi_heap_take(m_heap, 1, 0, "test"));
    }

    void heap_close() {
        for (uint64_t ptr : m_bufs) {
            EXPECT_EQ(UCS_OK, uct_gaudi_heap_free_ptr(m_heap, ptr));
        }
        m_bufs.clear();
        if (m_heap != NULL) {
            uct_gaudi_heap_put(m_heap);
            m_heap = NULL;
        }
    }

    uint64_t alloc(size_t length) {
        size_t len = length;
        uct_gaudi_buf_t *buf;

        EXPECT_EQ(UCS_OK, uct_gaudi_heap_alloc(m_heap, &len, &buf)) << length;
        if (::testing::Test::HasFailure()) {
            return 0;
        }
        EXPECT_GE(len, length);
        m_bufs.push_back(buf->memh.address);
        return buf->memh.address;
    }

    void release(uint64_t ptr) {
        EXPECT_EQ(UCS_OK, uct_gaudi_heap_free_ptr(m_heap, ptr));
        m_bufs.erase(std::find(m_bufs.begin(), m_bufs.end(), ptr));
    }

    /* a dma-buf of [ptr, +len) as gaudi_ipc and the public API take it */
    int dmabuf(uint64_t ptr, size_t len) {
        uint64_t off;
        int fd = -1;

        EXPECT_EQ(UCS_OK, uct_gaudi_heap_dmabuf(m_heap, ptr, len, &fd, &off));
        return fd;
    }

    const uct_gaudi_counters_t &counters() const {
        return m_heap->counters;
    }

    bool gaudi1() const {
        return m_heap->info->asic == UCT_GAUDI_ASIC_GAUDI1;
    }

    bool ranged() const {
        return uct_gaudi_heap_ranged(m_heap);
    }

    uint64_t chunk_size() const {
        return m_heap->chunk_size;
    }

    /* The driver exports DMA-BUF (not Linux 6.1 with Gaudi2, facts 4.1) */
    bool export_ok() const {
        int supported = 0;

        EXPECT_EQ(UCS_OK, uct_gaudi_hl_probe_export(
                                  &uct_gaudi_heap_ctx(m_heap)->hl,
                                  &supported));
        return supported;
    }

    /* the chunk of live buffer @a ptr */
    uint64_t chunk_of(uint64_t ptr) {
        uct_gaudi_dev_range_t range;

        EXPECT_EQ(UCS_OK, uct_gaudi_heap_resolve(m_heap, ptr, 1, &range));
        return range.buf->chunk->ptr;
    }

    uct_gaudi_heap_t     *m_heap = NULL;
    std::vector<uint64_t> m_bufs;
    int                   m_fds;
};

/* Small buffers share a chunk, aligned and in the window; freed holes are
 * reused; the chunk goes back when the last one is freed */
TEST_F(gaudi_mem_heap, sub_allocation)
{
    uint64_t chunks = counters().chunk_count;
    uint64_t a = alloc(100), b = alloc(4096), c = alloc(1);
    std::vector<uint64_t> more;

    ASSERT_NE(0u, a);
    for (uint64_t p : {a, b, c}) {
        EXPECT_EQ(0u, p % UCT_GAUDI_MEM_ALLOC_ALIGN);
        EXPECT_TRUE(uct_gaudi_heap_in_window(m_heap, p, 1));
    }
    EXPECT_EQ(a + 256, b);                  /* 100 rounded to 256 */
    EXPECT_EQ(b + 4096, c);
    EXPECT_EQ(256u, uct_gaudi_heap_buf_size(m_heap, a));
    EXPECT_EQ(0u, uct_gaudi_heap_buf_size(m_heap, a + 256 + 8));

    /* 200 x 4 KiB share that chunk too; Gaudi1's driver memory has none */
    for (unsigned i = 0; i < 200; ++i) {
        more.push_back(alloc(4096));
    }
    EXPECT_EQ(ranged() ? 0u : 1u, counters().chunk_count - chunks);
    EXPECT_EQ(256u + 4096 + 256 + 200 * 4096, counters().alloc_bytes);

    release(b);
    EXPECT_EQ(b, alloc(4096));              /* the hole is reused */
    for (uint64_t p : more) {
        release(p);
    }
    release(a);
    release(b);
    release(c);
    EXPECT_EQ(chunks, counters().chunk_count);
    EXPECT_EQ(0u, counters().alloc_bytes);
}

/* Half a chunk or more: a dedicated chunk of its own */
TEST_F(gaudi_mem_heap, large_buffer_dedicated)
{
    uint64_t small, large;

    if (ranged()) {
        GTEST_SKIP() << "Gaudi1's heap is one range, no chunks";
    }
    small = alloc(256);
    large = alloc(chunk_size() / 2);
    EXPECT_EQ(2u, counters().chunk_count);
    EXPECT_NE(chunk_of(small), chunk_of(large));
    release(large);
    EXPECT_EQ(1u, counters().chunk_count);
    release(small);
    EXPECT_EQ(0u, counters().chunk_count);
}

/* Interior addresses resolve to their buffer; ranges past its end,
 * freed addresses and addresses outside every buffer do not */
TEST_F(gaudi_mem_heap, resolve)
{
    uct_gaudi_dev_range_t range;
    uint64_t a = alloc(8192), b = alloc(256), dma;
    scoped_log log;

    ASSERT_NE(0u, a);
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_resolve(m_heap, a + 1000, 100, &range));
    EXPECT_EQ(a, range.base);
    EXPECT_EQ(8192u, range.length);
    ASSERT_NE(nullptr, range.buf);
    EXPECT_EQ(a, range.buf->memh.address);
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_dma_addr(m_heap, (void*)(a + 1000), 100,
                                              &dma));
    EXPECT_EQ(range.dma_base + 1000, dma);
    if (gaudi1()) {                        /* physical: pointer - window */
        EXPECT_EQ(a - UCT_GAUDI_MEM_G1_WINDOW, range.dma_base);
    }

    ASSERT_EQ(UCS_OK, uct_gaudi_heap_resolve(m_heap, b, 256, &range));
    EXPECT_EQ(b, range.base);
    EXPECT_EQ(256u, range.length);

    EXPECT_EQ(UCS_ERR_INVALID_ADDR,        /* runs past the buffer */
              uct_gaudi_heap_resolve(m_heap, a + 8000, 300, &range));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,        /* after the last buffer */
              uct_gaudi_heap_resolve(m_heap, b + 4096, 8, &range));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,        /* window, far from any chunk */
              uct_gaudi_heap_resolve(m_heap, m_heap->win_end - 4096, 8,
                                     &range));
    release(a);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,        /* freed */
              uct_gaudi_heap_resolve(m_heap, a + 1000, 100, &range));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, uct_gaudi_heap_free_ptr(m_heap, a));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, uct_gaudi_heap_free_ptr(m_heap, b + 8));
    EXPECT_TRUE(log.empty()) << log.all(); /* resolve and free_ptr: quiet */

    EXPECT_EQ(UCS_ERR_INVALID_ADDR,        /* dma_addr says why */
              uct_gaudi_heap_dma_addr(m_heap, (void*)(a + 8), 8, &dma));
    EXPECT_TRUE(log.has("not inside one", "live allocation")) << log.all();
}

/* Alloc/free patterns leave no chunk and no table entry behind */
TEST_F(gaudi_mem_heap, patterns_leave_nothing)
{
    std::vector<uint64_t> ptrs;
    unsigned round, i;

    for (round = 0; round < 3; ++round) {
        for (i = 0; i < 64; ++i) {
            ptrs.push_back(alloc(256 * (1 + (i * 13) % 32)));
        }
        for (i = 0; i < ptrs.size(); i += 2) {        /* every other one */
            release(ptrs[i]);
        }
        for (i = 1; i < ptrs.size(); i += 2) {
            release(ptrs[i]);
        }
        ptrs.clear();
        EXPECT_EQ(0u, m_heap->bufs.num_regions);
        EXPECT_EQ(0u, counters().chunk_count) << "round " << round;
        EXPECT_EQ(0u, counters().alloc_bytes);
    }
}

/*
 * Deferred release (gaudi_mem.h): the driver refuses to UNMAP a chunk
 * while a dma-buf exported from it is alive anywhere (facts 3.3). Freeing
 * a buffer whose dma-buf fd is still held must not log an error nor leak:
 * the chunk waits on the deferred list (its range is not reused) and is
 * released by a later alloc/free or uct_gaudi_heap_progress().
 */
TEST_F(gaudi_mem_heap, dmabuf_held_defers_chunk_release)
{
    if (!export_ok()) {
        GTEST_SKIP() << "the driver cannot export DMA-BUF (Linux 6.1, Gaudi2)";
    }
    uct_gaudi_counters_t c0 = counters(), c1;
    int64_t allocs = hlsim_counter(HLSIM_COUNTER_ALLOCS);
    int64_t maps   = hlsim_counter(HLSIM_COUNTER_MAPPINGS);
    uct_gaudi_dev_range_t range;
    uint64_t a, b, c, x, dchunk;
    int fd, fd2;
    scoped_log log;

    /* A: a sub-allocated buffer alone in a shared chunk, exported */
    a      = alloc(8192);
    dchunk = chunk_of(a);
    fd     = dmabuf(a, 8192);
    release(a);                                     /* fd still held */

    if (gaudi1()) {
        /* no UNMAP on Gaudi1 (one heap-managed range, facts 3.2) */
        EXPECT_EQ(c0.deferred_chunks, counters().deferred_chunks);
        close(fd);
        EXPECT_TRUE(log.empty()) << log.all();
        GTEST_SKIP() << "Gaudi1: chunks are never unmapped";
    }

    c1 = counters();
    EXPECT_EQ(c0.deferred_chunks + 1, c1.deferred_chunks);
    EXPECT_EQ(c0.chunk_count + 1, c1.chunk_count);   /* still allocated */
    EXPECT_EQ(c0.chunk_bytes + chunk_size(), c1.chunk_bytes);
    EXPECT_EQ(c0.alloc_bytes, c1.alloc_bytes);       /* the buffer is gone */
    EXPECT_EQ(c0.dmabuf_open, c1.dmabuf_open);       /* our export closed */
    EXPECT_EQ(allocs + 1, hlsim_counter(HLSIM_COUNTER_ALLOCS));
    EXPECT_EQ(maps + 1, hlsim_counter(HLSIM_COUNTER_MAPPINGS));

    /* the freed range is not an allocation, and not handed out again */
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_gaudi_heap_resolve(m_heap, a, 8192, &range));
    b = alloc(8192);
    EXPECT_TRUE((b + 8192 <= dchunk) || (b >= dchunk + chunk_size()))
            << std::hex << b << " reuses deferred chunk " << dchunk;
    EXPECT_EQ(c0.deferred_chunks + 1, counters().deferred_chunks);
    EXPECT_EQ(c0.chunk_count + 2, counters().chunk_count);

    /* fd closed: the next alloc releases the chunk */
    close(fd);
    EXPECT_EQ(c0.deferred_chunks + 1, counters().deferred_chunks);
    c  = alloc(4096);
    c1 = counters();
    EXPECT_EQ(c0.deferred_chunks, c1.deferred_chunks);
    EXPECT_EQ(c0.chunk_count + 1, c1.chunk_count);    /* b and c share one */
    EXPECT_EQ(c0.chunk_bytes + chunk_size(), c1.chunk_bytes);
    EXPECT_EQ(allocs + 1, hlsim_counter(HLSIM_COUNTER_ALLOCS));
    EXPECT_EQ(maps + 1, hlsim_counter(HLSIM_COUNTER_MAPPINGS));

    /* second round, a dedicated chunk: the next free releases it */
    x   = alloc(chunk_size() / 2);
    fd2 = dmabuf(x, 4096);
    release(x);
    EXPECT_EQ(c0.deferred_chunks + 1, counters().deferred_chunks);
    EXPECT_EQ(allocs + 2, hlsim_counter(HLSIM_COUNTER_ALLOCS));
    close(fd2);
    release(c);
    EXPECT_EQ(c0.deferred_chunks, counters().deferred_chunks);
    EXPECT_EQ(allocs + 1, hlsim_counter(HLSIM_COUNTER_ALLOCS));

    /* third round, the last buffer of a shared chunk; the progress hook */
    fd = dmabuf(b, 100);
    release(b);
    EXPECT_EQ(c0.deferred_chunks + 1, counters().deferred_chunks);
    uct_gaudi_heap_progress(m_heap);              /* fd still held */
    EXPECT_EQ(c0.deferred_chunks + 1, counters().deferred_chunks);
    close(fd);
    uct_gaudi_heap_progress(m_heap);
    c1 = counters();
    EXPECT_EQ(c0.deferred_chunks, c1.deferred_chunks);
    EXPECT_EQ(c0.chunk_count, c1.chunk_count);
    EXPECT_EQ(c0.chunk_bytes, c1.chunk_bytes);
    EXPECT_EQ(c0.alloc_bytes, c1.alloc_bytes);
    EXPECT_EQ(c0.dmabuf_open, c1.dmabuf_open);
    EXPECT_EQ(allocs, hlsim_counter(HLSIM_COUNTER_ALLOCS));
    EXPECT_EQ(maps, hlsim_counter(HLSIM_COUNTER_MAPPINGS));
    EXPECT_EQ(0, hlsim_counter(HLSIM_COUNTER_DMABUFS));

    /* no ERROR or WARN at any point */
    EXPECT_TRUE(log.empty()) << log.all();
}

/* UNMAP refused while the device is not operational (EBUSY): deferred
 * and retried the same way, quietly */
TEST_F(gaudi_mem_heap, unmap_busy_defers_chunk_release)
{
    if (gaudi1()) {
        GTEST_SKIP() << "Gaudi1: chunks are never unmapped";
    }

    uct_gaudi_counters_t c0 = counters();
    int64_t allocs = hlsim_counter(HLSIM_COUNTER_ALLOCS);
    uint64_t p;
    scoped_log log;

    p = alloc(chunk_size());
    gaudi_gtest::hlsim_fault_add("mem_unmap", 1, EBUSY);
    release(p);
    EXPECT_EQ(c0.deferred_chunks + 1, counters().deferred_chunks);
    EXPECT_EQ(allocs + 1, hlsim_counter(HLSIM_COUNTER_ALLOCS));

    p = alloc(4096);                           /* retried: released */
    EXPECT_EQ(c0.deferred_chunks, counters().deferred_chunks);
    release(p);
    EXPECT_EQ(c0.chunk_count, counters().chunk_count);
    EXPECT_EQ(allocs, hlsim_counter(HLSIM_COUNTER_ALLOCS));
    EXPECT_TRUE(log.empty()) << log.all();
}

/*
 * Heap teardown with a deferred chunk: its fd closed before the last
 * put, teardown releases it quietly; still held, one warning and no
 * error, and the device's close frees it (facts 3.2)
 */
TEST_F(gaudi_mem_heap, dmabuf_held_at_teardown)
{
    uint64_t p;
    int fd;

    if (!export_ok()) {
        GTEST_SKIP() << "the driver cannot export DMA-BUF (Linux 6.1, Gaudi2)";
    }
    if (gaudi1()) {
        GTEST_SKIP() << "Gaudi1: chunks are never unmapped";
    }

    scoped_log log;

    /* 1: the fd is closed before the last put: teardown releases quietly */
    p  = alloc(4096);
    fd = dmabuf(p, 4096);
    release(p);
    EXPECT_EQ(1u, counters().deferred_chunks);
    EXPECT_EQ(1, hlsim_counter(HLSIM_COUNTER_ALLOCS));
    close(fd);
    heap_close();                                 /* heap teardown */
    EXPECT_EQ(nullptr, uct_gaudi_heap_peek());
    EXPECT_EQ(0, hlsim_counter(HLSIM_COUNTER_ALLOCS));
    EXPECT_EQ(0, hlsim_counter(HLSIM_COUNTER_MAPPINGS));
    EXPECT_TRUE(log.empty()) << log.all();

    /* 2: still held at teardown: one warning, no error */
    heap_open();
    p  = alloc(4096);
    fd = dmabuf(p, 4096);
    release(p);
    EXPECT_EQ(1u, counters().deferred_chunks);
    heap_close();
    EXPECT_EQ(0u, log.count(UCS_LOG_LEVEL_ERROR)) << log.all();
    EXPECT_EQ(1u, log.count(UCS_LOG_LEVEL_WARN)) << log.all();
    EXPECT_TRUE(log.has("still exported at teardown",
                        "the driver frees it")) << log.all();
    close(fd);
}

/* A buffer is exported once for its life: each export is a dup of the
 * same dma-buf (gaudi_ipc revokes keys with its tokens, docs/ipc.md) */
TEST_F(gaudi_mem_heap, dmabuf_kept)
{
    struct stat st1, st2;
    uint64_t a;
    int fd1, fd2;

    if (!export_ok()) {
        GTEST_SKIP() << "the driver cannot export DMA-BUF (Linux 6.1, Gaudi2)";
    }
    a   = alloc(4096);
    fd1 = dmabuf(a, 4096);
    fd2 = dmabuf(a, 4096);
    ASSERT_EQ(0, fstat(fd1, &st1));
    ASSERT_EQ(0, fstat(fd2, &st2));
    EXPECT_NE(fd1, fd2);
    EXPECT_EQ(st1.st_ino, st2.st_ino);
    close(fd1);
    close(fd2);
    release(a);
    uct_gaudi_heap_progress(m_heap);
}

int main(int argc, char **argv)
{
    /* preload the emulator, give it a node of its own */
    gaudi_gtest::hlsim_setup(argv, "gaudi_mem_test");
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}

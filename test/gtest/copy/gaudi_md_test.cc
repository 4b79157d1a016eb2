/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_copy memory domain tests, on the habanalabs emulator (test/emu/hlsim).
 * Run by test/suites/40-md.sh once per ASIC model (HLSIM_ASIC). The program
 * preloads libhlsim.so itself (re-exec) when it is not loaded yet, and uses
 * a fresh HLSIM_ROOT when none is given.
 */

#include "common/gaudi_gtest.h"

#include <gtest/gtest.h>

extern "C" {
#include <uct/gaudi/copy/gaudi_copy_md.h>
#include <uct/gaudi/api/uct_gaudi.h>
#include <uct/api/uct.h>
#include <ucs/debug/log_def.h>
#include <ucs/memory/memtype_cache.h>
#include "../../emu/hlsim/hlsim.h"
}

#include <dirent.h>
#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <string>
#include <vector>
#include <set>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <string.h>
#include <stdlib.h>


/* fd counting and emulator control: test/gtest/common */
using gaudi_gtest::count_fds;
using gaudi_gtest::hlsim_counter;

static long rss_kb()
{
    long kb = -1;
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    while (fgets(line, sizeof(line), f)) {
        if (!strncmp(line, "VmRSS:", 6)) {
            kb = atol(line + 6);
        }
    }
    fclose(f);
    return kb;
}


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
 * mmap() of @a fd in a fresh process. Not in this one: once UCM has
 * installed its mmap hooks (any rcache or memtype cache does), mmap() no
 * longer reaches the emulator's interposer (reported to the hlsim owner).
 * Returns 0 when mmap failed with EINVAL, as on the driver.
 */
static int mmap_probe(int fd)
{
    int nfd = dup(fd);   /* without O_CLOEXEC */
    char arg[16];
    int st;

    snprintf(arg, sizeof(arg), "%d", nfd);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "gaudi_md_test", "--mmap-probe", arg,
              (char*)NULL);
        _exit(3);
    }
    close(nfd);
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 4;
}

static int mmap_probe_main(int fd)
{
    void *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);

    if (p != MAP_FAILED) {
        fprintf(stderr, "mmap of dma-buf fd %d succeeded\n", fd);
        return 1;
    }
    return (errno == EINVAL) ? 0 : 2;
}


class gaudi_md : public ::testing::Test {
protected:
    void SetUp() override {
        gaudi_gtest::hlsim_fault_clear();
        open_md(NULL);
    }

    void TearDown() override {
        gaudi_gtest::hlsim_fault_clear();
        close_md();
    }

    /* @a take: the device, as an application's first allocation would
     * (it is taken at the first use of Gaudi memory: gaudi_md_lazy) */
    void open_md(const char *rcache, bool take = true) {
        uct_component_h *comps;
        unsigned num, i;
        uct_md_config_t *config;

        ASSERT_EQ(UCS_OK, uct_query_components(&comps, &num));
        m_comp = NULL;
        for (i = 0; i < num; ++i) {
            uct_component_attr_t attr;
            attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
            ASSERT_EQ(UCS_OK, uct_component_query(comps[i], &attr));
            if (!strcmp(attr.name, "gaudi_copy")) {
                m_comp = comps[i];
            }
        }
        uct_release_component_list(comps);
        ASSERT_TRUE(m_comp != NULL) << "gaudi_copy component not found";

        ASSERT_EQ(UCS_OK, uct_md_config_read(m_comp, NULL, NULL, &config));
        if (rcache != NULL) {
            ASSERT_EQ(UCS_OK, uct_config_modify(config, "RCACHE", rcache));
        }
        ASSERT_EQ(UCS_OK, uct_md_open(m_comp, "gaudi_copy", config, &m_md));
        uct_config_release(config);
        m_gmd = (uct_gaudi_copy_md_t*)m_md;
        if (take) {
            (void)ctx();
        }
        ASSERT_EQ(UCS_OK, uct_md_query(m_md, &m_attr));
    }

    void close_md() {
        if (m_md != NULL) {
            uct_md_close(m_md);
            m_md = NULL;
        }
    }

    uct_gaudi_counters_t counters() {
        uct_gaudi_counters_t c;
        EXPECT_EQ(UCS_OK, uct_gaudi_counters_get(&c));
        return c;
    }

    bool gaudi1() const {
        return m_gmd->heap->info->asic == UCT_GAUDI_ASIC_GAUDI1;
    }

    /* Gaudi1's heap without chunks: one range over the user DRAM (driver
     * memory; SynapseAI's allocator gives chunks, UCX_GAUDI_DEVICE_MEM) */
    bool ranged() const {
        return gaudi1() &&
               (m_gmd->heap->device_mem == UCT_GAUDI_DEVICE_MEM_DRIVER);
    }

    /* The device context, taken as an allocation would */
    uct_gaudi_ctx_t *ctx() const {
        EXPECT_EQ(UCS_OK, uct_gaudi_heap_take(m_gmd->heap, 1, 0, "test"));
        return uct_gaudi_heap_ctx(m_gmd->heap);
    }

    /* The driver exports DMA-BUF (not Linux 6.1 with Gaudi2, facts 4.1) */
    bool export_ok() const {
        uct_gaudi_ctx_t *c = ctx();
        int supported      = 0;

        EXPECT_EQ(UCS_OK, uct_gaudi_hl_probe_export(&c->hl, &supported));
        return supported;
    }

    uint64_t chunk_size() const {
        return m_gmd->heap->chunk_size;
    }

    ucs_memory_type_t gaudi_type() const {
        return uct_gaudi_memory_type();
    }

    ucs_status_t alloc(size_t *len, void **ptr, uct_mem_h *memh) {
        *ptr = NULL;
        return uct_md_mem_alloc(m_md, len, ptr, gaudi_type(), 0, "test",
                                memh);
    }

    void *alloc_ok(size_t len, uct_mem_h *memh) {
        void *ptr;
        size_t l = len;
        EXPECT_EQ(UCS_OK, alloc(&l, &ptr, memh)) << len;
        EXPECT_GE(l, len);
        return ptr;
    }

    void pack_unpack(uct_mem_h memh, uct_rkey_bundle_t *rkey) {
        std::vector<char> buf(m_attr.rkey_packed_size);
        ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, buf.data()));
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_comp, buf.data(), rkey));
    }

    /* DMA address of @a addr through the transport contract */
    uint64_t dma_of(const void *addr, size_t len, uct_mem_h memh) {
        uct_gaudi_dma_ref_t ref;
        EXPECT_EQ(UCS_OK, uct_gaudi_reg_dma_resolve(&m_gmd->reg, addr, len,
                                                    memh, &ref));
        EXPECT_TRUE(ref.region == NULL);
        return ref.dma_addr;
    }

    uct_component_h     m_comp = NULL;
    uct_md_h            m_md   = NULL;
    uct_gaudi_copy_md_t *m_gmd = NULL;
    uct_md_attr_t       m_attr;
};


class gaudi_md_lazy : public gaudi_md {
protected:
    void SetUp() override {
        gaudi_gtest::hlsim_fault_clear();
        open_md(NULL, false);
    }
};

/*
 * First of the file: nothing in this process has used Gaudi memory yet.
 * The MD opens without taking the device (docs/base.md, "Ownership"):
 * memory type detection and a host registration take nothing either, and
 * no error is logged; the first allocation through UCX opens the device
 * (nobody else holds one), and a copy then maps the host registration
 * made before.
 */

TEST_F(gaudi_md_lazy, device_taken_at_first_alloc)
{
    std::vector<char> host(8192, 7);
    ucs_memory_type_t mem_type;
    uct_mem_h host_memh, memh;
    scoped_log log;

    ASSERT_TRUE(uct_gaudi_heap_ctx(m_gmd->heap) == NULL)
            << "an earlier test left the device taken";
    EXPECT_EQ(0, hlsim_counter(HLSIM_COUNTER_CONTEXTS));
    EXPECT_EQ(UCS_OK, uct_md_detect_memory_type(m_md, host.data(),
                                                host.size(), &mem_type));
    EXPECT_EQ(UCS_MEMORY_TYPE_HOST, mem_type);
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, host.data(), host.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &host_memh));
    EXPECT_EQ(0, hlsim_counter(HLSIM_COUNTER_CONTEXTS));
    EXPECT_TRUE(log.empty()) << log.all();

    alloc_ok(8192, &memh);
    EXPECT_EQ(1, hlsim_counter(HLSIM_COUNTER_CONTEXTS));
    ASSERT_TRUE(uct_gaudi_heap_ctx(m_gmd->heap) != NULL);
    /* opened for the kernel backend, acquired through SynapseAI for its */
    EXPECT_STREQ((uct_gaudi_heap_ctx(m_gmd->heap)->syn != NULL) ?
                 "SynapseAI (acquired by UCX)" : "opened",
                 uct_gaudi_heap_ctx(m_gmd->heap)->source);

    /* the early host registration serves a copy: mapped on the fly */
    int64_t maps = hlsim_counter(HLSIM_COUNTER_MAPPINGS);
    uct_gaudi_dma_ref_t ref;
    ASSERT_EQ(UCS_OK, uct_gaudi_reg_dma_resolve(&m_gmd->reg, host.data(),
                                                host.size(), host_memh,
                                                &ref));
    EXPECT_TRUE(ref.region != NULL) << "an unmapped registration was used";
    EXPECT_NE(0u, ref.dma_addr);
    if (uct_gaudi_heap_ctx(m_gmd->heap)->syn == NULL) {
        EXPECT_EQ(maps + 1, hlsim_counter(HLSIM_COUNTER_MAPPINGS));
    }
    uct_gaudi_reg_dma_release(&m_gmd->reg, &ref);
    EXPECT_TRUE(log.empty()) << log.all();

    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, host_memh));
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
}

TEST_F(gaudi_md, query)
{
    EXPECT_TRUE(m_attr.cap.flags & UCT_MD_FLAG_ALLOC);
    EXPECT_TRUE(m_attr.cap.flags & UCT_MD_FLAG_REG);
    EXPECT_FALSE(m_attr.cap.flags & UCT_MD_FLAG_NEED_RKEY);
    EXPECT_EQ(UCS_BIT(gaudi_type()), m_attr.cap.alloc_mem_types);
    EXPECT_EQ(UCS_BIT(gaudi_type()) | UCS_BIT(UCS_MEMORY_TYPE_HOST),
              m_attr.cap.reg_mem_types);
    EXPECT_EQ(UCS_BIT(gaudi_type()), m_attr.cap.access_mem_types);
    EXPECT_EQ(UCS_BIT(gaudi_type()), m_attr.cap.detect_mem_types);
    EXPECT_EQ(m_gmd->heap->info->hw_ip.u61.dram_size, m_attr.cap.max_alloc);
    EXPECT_GT(m_attr.cap.max_alloc, 0u);
    EXPECT_GT(m_attr.cap.max_reg, 0u);
    EXPECT_EQ(sizeof(uct_gaudi_copy_rkey_t), m_attr.rkey_packed_size);
    EXPECT_EQ(40u, m_attr.rkey_packed_size);
}

TEST_F(gaudi_md, alloc_free_sizes)
{
    uint64_t chunk = gaudi1() ? (64ull << 20) : chunk_size();
    std::vector<size_t> sizes = {1, 255, 256, 257, 4095, 4096, 4097,
                                 65536, (1 << 20) + 1, chunk / 2 - 1,
                                 chunk / 2, chunk, chunk + 1, 2 * chunk + 7};
    std::vector<std::pair<uintptr_t, size_t>> ranges;
    std::vector<uct_mem_h> memhs;
    uct_gaudi_counters_t c0 = counters();

    for (size_t size : sizes) {
        size_t len = size;
        void *ptr;
        uct_mem_h memh;
        ucs_memory_type_t mt;
        uct_md_mem_attr_t mattr;

        ASSERT_EQ(UCS_OK, alloc(&len, &ptr, &memh)) << size;
        EXPECT_GE(len, size);
        EXPECT_EQ(0u, len % UCT_GAUDI_MEM_ALLOC_ALIGN);
        EXPECT_EQ(0u, (uintptr_t)ptr % UCT_GAUDI_MEM_ALLOC_ALIGN);
        ASSERT_EQ(UCS_OK, uct_md_detect_memory_type(m_md, ptr, size, &mt));
        EXPECT_EQ(gaudi_type(), mt);

        mattr.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE |
                           UCT_MD_MEM_ATTR_FIELD_SYS_DEV |
                           UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS |
                           UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH;
        ASSERT_EQ(UCS_OK, uct_md_mem_query(m_md, (char*)ptr + size / 2, 1,
                                           &mattr));
        EXPECT_EQ(gaudi_type(), mattr.mem_type);
        EXPECT_EQ(m_gmd->heap->info->sys_dev, mattr.sys_dev);
        EXPECT_EQ(ptr, mattr.base_address);
        EXPECT_EQ(len, mattr.alloc_length);
        if (gaudi1()) {
            /* synthetic window over the physical user range */
            EXPECT_GE((uintptr_t)ptr, UCT_GAUDI_MEM_G1_WINDOW);
            EXPECT_EQ((uintptr_t)ptr - UCT_GAUDI_MEM_G1_WINDOW,
                      dma_of(ptr, size, memh));
        } else {
            EXPECT_GE((uintptr_t)ptr,
                      m_gmd->heap->info->hw_ip.u61.dram_base_address);
            EXPECT_EQ((uintptr_t)ptr, dma_of(ptr, size, memh));
        }
        for (auto &r : ranges) {  /* no overlap */
            EXPECT_TRUE(((uintptr_t)ptr + len <= r.first) ||
                        ((uintptr_t)ptr >= r.first + r.second));
        }
        ranges.push_back({(uintptr_t)ptr, len});
        memhs.push_back(memh);
    }

    EXPECT_EQ(c0.alloc_count + sizes.size(), counters().alloc_count);
    for (uct_mem_h memh : memhs) {
        EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
    }

    uct_gaudi_counters_t c1 = counters();
    EXPECT_EQ(c0.alloc_bytes, c1.alloc_bytes);
    EXPECT_EQ(c0.chunk_count, c1.chunk_count);   /* chunks released */
    EXPECT_EQ(c0.chunk_bytes, c1.chunk_bytes);
    /* driver memory is all given back; SynapseAI's pool stays mapped */
    if (!gaudi1() &&
        (m_gmd->heap->device_mem == UCT_GAUDI_DEVICE_MEM_DRIVER)) {
        EXPECT_EQ(0, hlsim_counter(HLSIM_COUNTER_ALLOCS));
        EXPECT_EQ(0, hlsim_counter(HLSIM_COUNTER_MAPPINGS));
    }
}

TEST_F(gaudi_md, uct_mem_alloc_md_method)
{
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
    uct_mem_alloc_params_t params;
    uct_allocated_memory_t mem;

    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS |
                        UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE |
                        UCT_MEM_ALLOC_PARAM_FIELD_MDS |
                        UCT_MEM_ALLOC_PARAM_FIELD_NAME;
    params.flags      = UCT_MD_MEM_ACCESS_ALL;
    params.mem_type   = gaudi_type();
    params.mds.mds    = &m_md;
    params.mds.count  = 1;
    params.name       = "uct_mem_alloc test";
    ASSERT_EQ(UCS_OK, uct_mem_alloc(12345, &method, 1, &params, &mem));
    EXPECT_EQ(UCT_ALLOC_METHOD_MD, mem.method);
    EXPECT_EQ(m_md, mem.md);
    EXPECT_EQ(gaudi_type(), mem.mem_type);
    EXPECT_GE(mem.length, 12345u);
    EXPECT_EQ(UCS_OK, uct_mem_free(&mem));
}

TEST_F(gaudi_md, memtype_cache_seeded)
{
    uct_mem_h memh;
    void *ptr = alloc_ok(1000, &memh);
    ucs_memory_info_t info;

    if (ucs_memtype_cache_global_instance == NULL) {
        GTEST_SKIP() << "UCX_MEMTYPE_CACHE=n";
    }
    EXPECT_FALSE(ucs_memtype_cache_is_empty());
    ASSERT_EQ(UCS_OK, ucs_memtype_cache_lookup(ptr, 1000, &info));
    EXPECT_EQ(gaudi_type(), info.type);
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
}

TEST_F(gaudi_md, mem_query_foreign)
{
    std::vector<char> host(100);
    uct_md_mem_attr_t mattr;
    ucs_memory_type_t mt;

    mattr.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE;
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_md_mem_query(m_md, host.data(), host.size(), &mattr));
    EXPECT_EQ(UCS_OK, uct_md_detect_memory_type(m_md, host.data(),
                                                host.size(), &mt));
    EXPECT_EQ(UCS_MEMORY_TYPE_HOST, mt);
    EXPECT_FALSE(uct_gaudi_heap_in_window(m_gmd->heap,
                                          (uintptr_t)host.data(), 100));
}

TEST_F(gaudi_md, host_reg_unaligned_overlapping)
{
    const size_t size = 5 * 4096;
    char *buf         = (char*)aligned_alloc(4096, size);
    struct { size_t off, len; } regs[] = {
        {0, size}, {1, 10}, {4095, 2}, {4097, 8191}, {100, size - 200},
        {4096, 4096}, {0, 1}
    };
    std::vector<uct_mem_h> memhs;

    for (auto r : regs) {
        uct_mem_h memh;
        uct_rkey_bundle_t rkey;
        void *addr = buf + r.off;

        ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, addr, r.len,
                                         UCT_MD_MEM_ACCESS_ALL, &memh));
        uint64_t dma = dma_of(addr, r.len, memh);
        /* MAP keeps the sub-page offset (facts 3.3) */
        EXPECT_EQ((uintptr_t)addr & 4095, dma & 4095) << r.off;
        EXPECT_FALSE(m_gmd->heap->win_start <= dma &&
                     dma < m_gmd->heap->win_end);

        pack_unpack(memh, &rkey);
        EXPECT_EQ(UCS_OK, uct_gaudi_copy_rkey_check(m_gmd, rkey.rkey,
                                                    (uintptr_t)addr, r.len));
        EXPECT_EQ(dma, uct_gaudi_copy_rkey_dma_addr(rkey.rkey,
                                                    (uintptr_t)addr));
        uct_rkey_release(m_comp, &rkey);
        memhs.push_back(memh);
    }
    for (auto memh : memhs) {
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    }
    free(buf);
}

TEST_F(gaudi_md, device_reg_and_rkey)
{
    uct_mem_h amemh, rmemh;
    uct_rkey_bundle_t rkey;
    char *ptr = (char*)alloc_ok(1 << 20, &amemh);
    int64_t maps = hlsim_counter(HLSIM_COUNTER_MAPPINGS);

    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, ptr + 4096, 8192,
                                     UCT_MD_MEM_ACCESS_ALL, &rmemh));
    EXPECT_EQ(maps, hlsim_counter(HLSIM_COUNTER_MAPPINGS));  /* no ioctl */
    pack_unpack(rmemh, &rkey);
    const uct_gaudi_copy_rkey_t *key = (const uct_gaudi_copy_rkey_t*)rkey.rkey;
    EXPECT_EQ(UCT_GAUDI_COPY_RKEY_VERSION, key->version);
    EXPECT_EQ(UCT_GAUDI_COPY_RKEY_FLAG_DEVICE, key->flags);
    EXPECT_EQ((uintptr_t)ptr + 4096, key->base);
    EXPECT_EQ(8192u, key->length);
    EXPECT_EQ(dma_of(ptr + 4096, 1, NULL), key->dma_base);
    EXPECT_EQ(UCS_OK, uct_gaudi_copy_rkey_check(m_gmd, rkey.rkey,
                                                key->base + 100, 8000));
    {
        scoped_log log;
        EXPECT_EQ(UCS_ERR_INVALID_ADDR,
                  uct_gaudi_copy_rkey_check(m_gmd, rkey.rkey, key->base + 1,
                                            8192));
        EXPECT_TRUE(log.has("outside the registration")) << log.all();
    }
    uct_rkey_release(m_comp, &rkey);

    /* rkey of another device context / device: refused */
    std::vector<char> packed(m_attr.rkey_packed_size);
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, rmemh, packed.data()));
    uct_gaudi_copy_rkey_t *pk = (uct_gaudi_copy_rkey_t*)packed.data();
    pk->ctx_uuid ^= 1;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_comp, packed.data(), &rkey));
    {
        scoped_log log;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_gaudi_copy_rkey_check(m_gmd, rkey.rkey, pk->base, 1));
        EXPECT_TRUE(log.has("another process")) << log.all();
    }
    uct_rkey_release(m_comp, &rkey);
    pk->ctx_uuid ^= 1;
    pk->module_id += 1;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_comp, packed.data(), &rkey));
    {
        scoped_log log;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_gaudi_copy_rkey_check(m_gmd, rkey.rkey, pk->base, 1));
        EXPECT_TRUE(log.has("another device", m_gmd->heap->info->name))
                << log.all();
    }
    uct_rkey_release(m_comp, &rkey);
    pk->version = 7;
    {
        scoped_log log;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_rkey_unpack(m_comp, packed.data(), &rkey));
        EXPECT_TRUE(log.has("version 7")) << log.all();
    }

    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, rmemh));
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, amemh));
}

TEST_F(gaudi_md, rcache_hit_miss)
{
    std::vector<char> buf(64 * 1024);
    uct_mem_h m1, m2, m3;
    uct_gaudi_counters_t c0 = counters();

    if (m_gmd->reg.rcache == NULL) {
        GTEST_SKIP() << "no registration cache";
    }
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(), UCT_MD_MEM_ACCESS_ALL, &m1));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(), UCT_MD_MEM_ACCESS_ALL, &m2));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data() + 100, 1000, UCT_MD_MEM_ACCESS_ALL, &m3));
    uct_gaudi_counters_t c1 = counters();
    EXPECT_EQ(1u, c1.rcache_misses - c0.rcache_misses);
    EXPECT_EQ(2u, c1.rcache_hits - c0.rcache_hits);
    EXPECT_EQ(1u, c1.host_maps - c0.host_maps);
    EXPECT_EQ(m1, m2);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, m1));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, m2));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, m3));
    {
        scoped_log log;  /* one reference too many */
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_dereg(m_md, m1));
        EXPECT_TRUE(log.has("double dereg")) << log.all();
    }
    /* still cached after the last dereg */
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(), UCT_MD_MEM_ACCESS_ALL, &m1));
    EXPECT_EQ(3u, counters().rcache_hits - c0.rcache_hits);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, m1));
}

TEST_F(gaudi_md, rcache_off)
{
    std::vector<char> buf(8192);
    uct_mem_h m1, m2;

    close_md();
    open_md("no");
    ASSERT_TRUE(m_gmd->reg.rcache == NULL);
    uct_gaudi_counters_t c0 = counters();
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(), UCT_MD_MEM_ACCESS_ALL, &m1));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(), UCT_MD_MEM_ACCESS_ALL, &m2));
    EXPECT_NE(m1, m2);
    EXPECT_EQ(2u, counters().host_maps - c0.host_maps);
    EXPECT_EQ(0u, counters().rcache_hits - c0.rcache_hits);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, m1));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, m2));
    EXPECT_EQ(2u, counters().host_unmaps - c0.host_unmaps);
    {
        scoped_log log;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_dereg(m_md, m1));
        EXPECT_TRUE(log.has("mem_dereg", m_gmd->heap->info->name))
                << log.all();
    }
}

TEST_F(gaudi_md, munmap_remap_fresh_mapping)
{
    const size_t size = 16 * 4096;
    uct_mem_h memh;

    if (m_gmd->reg.rcache == NULL) {
        GTEST_SKIP() << "no registration cache";
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, p);
    memset(p, 1, size);
    uct_gaudi_counters_t c0 = counters();
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, p, size, UCT_MD_MEM_ACCESS_ALL, &memh));
    ASSERT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));   /* stays cached */
    ASSERT_EQ(1u, counters().rcache_misses - c0.rcache_misses);

    ASSERT_EQ(0, munmap(p, size));
    void *q = mmap(p, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    ASSERT_EQ(p, q);
    memset(q, 2, size);

    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, q, size, UCT_MD_MEM_ACCESS_ALL, &memh));
    uct_gaudi_counters_t c1 = counters();
    /* the stale mapping was dropped and the new pages mapped again */
    EXPECT_EQ(2u, c1.rcache_misses - c0.rcache_misses);
    EXPECT_EQ(2u, c1.host_maps - c0.host_maps);
    EXPECT_EQ(1u, c1.host_unmaps - c0.host_unmaps);
    EXPECT_EQ(0u, c1.rcache_hits - c0.rcache_hits);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    munmap(q, size);
}

TEST_F(gaudi_md, fork_child_cannot_touch_parent_mappings)
{
    std::vector<char> host(3 * 4096);
    uct_mem_h hmemh, dmemh;
    void *dptr = alloc_ok(4096, &dmemh);

    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, host.data(), host.size(), UCT_MD_MEM_ACCESS_ALL,
                                     &hmemh));
    uint64_t hdma = dma_of(host.data(), host.size(), hmemh);
    uint64_t ddma = dma_of(dptr, 4096, dmemh);
    int64_t maps  = hlsim_counter(HLSIM_COUNTER_MAPPINGS);
    int64_t allocs = hlsim_counter(HLSIM_COUNTER_ALLOCS);

    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        /* child: releasing the parent's handles issues no driver call,
         * new device work is refused with a clear error */
        int bad = 0;
        uct_mem_h m;
        void *p;
        size_t len = 4096;
        scoped_log quiet;
        bad |= (uct_md_mem_dereg(m_md, hmemh) != UCS_OK);
        bad |= (uct_md_mem_free(m_md, dmemh) != UCS_OK);
        bad |= (uct_md_mem_alloc(m_md, &len, &p, gaudi_type(), 0, "child",
                                 &m) != UCS_ERR_NO_DEVICE);
        bad |= (hlsim_counter(HLSIM_COUNTER_MAPPINGS) != maps);
        bad |= (hlsim_counter(HLSIM_COUNTER_ALLOCS) != allocs);
        _exit(bad ? 1 : 0);
    }

    int st;
    ASSERT_EQ(pid, waitpid(pid, &st, 0));
    EXPECT_TRUE(WIFEXITED(st) && (WEXITSTATUS(st) == 0)) << st;
    /* the parent's data path is intact */
    EXPECT_EQ(maps, hlsim_counter(HLSIM_COUNTER_MAPPINGS));
    EXPECT_EQ(hdma, dma_of(host.data(), host.size(), hmemh));
    EXPECT_EQ(ddma, dma_of(dptr, 4096, dmemh));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, hmemh));
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, dmemh));
}

TEST_F(gaudi_md, dmabuf_export)
{
    if (!export_ok()) {
        GTEST_SKIP() << "the driver cannot export DMA-BUF (Linux 6.1, Gaudi2)";
    }
    uct_mem_h m1, m2;
    void *p1 = alloc_ok(1000, &m1);
    char *p2 = (char*)alloc_ok(3 * 4096, &m2);
    int fd, fd2, fds = count_fds();
    uint64_t off, off2;
    char hbuf[64];
    uct_gaudi_counters_t c0 = counters();

    ASSERT_EQ(UCS_OK, uct_gaudi_dmabuf_get(p2 + 10, 100, &fd, &off));
    EXPECT_GE(fcntl(fd, F_GETFD), 0);
    EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    if (gaudi1()) {
        EXPECT_EQ(((uintptr_t)p2 - UCT_GAUDI_MEM_G1_WINDOW) % 4096 + 10, off);
    } else {
        EXPECT_EQ((uintptr_t)p2 % 4096 + 10, off);
    }
    /* one export per buffer, a new dup per call */
    ASSERT_EQ(UCS_OK, uct_gaudi_dmabuf_get(p2, 3 * 4096, &fd2, &off2));
    EXPECT_NE(fd, fd2);
    EXPECT_EQ(off - 10, off2);
    EXPECT_EQ(1u, counters().dmabuf_exports - c0.dmabuf_exports);
    EXPECT_EQ(1u, counters().dmabuf_open - c0.dmabuf_open);
    close(fd);
    close(fd2);

    {
        scoped_log log;
        EXPECT_EQ(UCS_ERR_INVALID_ADDR,
                  uct_gaudi_dmabuf_get(p2, 3 * 4096 + 1, &fd, &off));
        EXPECT_EQ(UCS_ERR_INVALID_ADDR,
                  uct_gaudi_dmabuf_get(hbuf, 10, &fd, &off));
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_gaudi_dmabuf_get(p2, 0, &fd,
                                                              &off));
        EXPECT_TRUE(log.has("not inside one live device allocation",
                            m_gmd->heap->info->name)) << log.all();
    }

    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, m2));
    EXPECT_EQ(c0.dmabuf_open, counters().dmabuf_open);
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, m1));
    EXPECT_EQ(fds, count_fds());
    EXPECT_EQ(0, hlsim_counter(HLSIM_COUNTER_DMABUFS));
    (void)p1;
}

/*
 * A DRAM PCI BAR smaller than the DRAM (HLSIM_DRAM_BAR_SIZE, facts 4.1,
 * 9.6): memory inside it exports, an allocation with a page beyond it does
 * not, and the error says why. Runs where the BAR is limited (40-md.sh).
 */
TEST_F(gaudi_md, dmabuf_export_outside_bar)
{
    if (!export_ok()) {
        GTEST_SKIP() << "the driver cannot export DMA-BUF (Linux 6.1, Gaudi2)";
    }
    const uct_gaudi_dev_info_t *info = m_gmd->heap->info;
    if ((info->dram_bar_size == 0) ||
        (info->dram_bar_size >= info->hw_ip.u61.dram_size)) {
        GTEST_SKIP() << "the DRAM BAR covers the DRAM";
    }
    uct_mem_h m1, m2;
    void *p1 = alloc_ok(1000, &m1);
    void *p2 = alloc_ok(info->dram_bar_size, &m2);
    uint64_t off;
    int fd;

    ASSERT_EQ(UCS_OK, uct_gaudi_dmabuf_get(p1, 1000, &fd, &off));
    close(fd);
    {
        scoped_log log;
        EXPECT_NE(UCS_OK, uct_gaudi_dmabuf_get(p2, 4096, &fd, &off));
        EXPECT_TRUE(log.has("cannot be exported", "DRAM PCI BAR"))
                << log.all();
    }
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, m2));
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, m1));
}

TEST_F(gaudi_md, dmabuf_mmap_fails)
{
    if (!export_ok()) {
        GTEST_SKIP() << "the driver cannot export DMA-BUF (Linux 6.1, Gaudi2)";
    }
    uct_mem_h memh;
    void *ptr = alloc_ok(8192, &memh);
    uint64_t off;
    int fd;

    ASSERT_EQ(UCS_OK, uct_gaudi_dmabuf_get(ptr, 8192, &fd, &off));
    /* as on the driver, the dma-buf cannot be mmap()ed (facts 4.2) */
    EXPECT_EQ(0, mmap_probe(fd)) << "mmap() of the dma-buf did not fail "
                                    "with EINVAL";
    close(fd);
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
}

TEST_F(gaudi_md, public_api)
{
    void *p;
    ucs_memory_type_t mt;

    ASSERT_EQ(UCS_OK, uct_gaudi_mem_alloc(3000, &p));
    ASSERT_EQ(UCS_OK, uct_md_detect_memory_type(m_md, p, 3000, &mt));
    EXPECT_EQ(gaudi_type(), mt);
    {
        scoped_log log;
        EXPECT_EQ(UCS_ERR_INVALID_ADDR, uct_gaudi_mem_free((char*)p + 256));
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_gaudi_mem_alloc(0, &p));
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_gaudi_mem_alloc(10, NULL));
    }
    EXPECT_EQ(UCS_OK, uct_gaudi_mem_free(p));
    {
        scoped_log log;
        EXPECT_EQ(UCS_ERR_INVALID_ADDR, uct_gaudi_mem_free(p));
        EXPECT_EQ(UCS_ERR_INVALID_ADDR, uct_gaudi_mem_free(NULL));
        EXPECT_TRUE(log.has("double free")) << log.all();
    }
}

TEST_F(gaudi_md, bad_input)
{
    const char *dev = m_gmd->heap->info->name;
    uct_gaudi_memh_t fake = {};
    std::vector<char> host(4096);
    uct_mem_h memh, memh2;
    size_t len;
    void *ptr;
    scoped_log log;

    len = 0;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, alloc(&len, &ptr, &memh));
    EXPECT_TRUE(log.has("cannot allocate 0 bytes", dev)) << log.all();
    len = SIZE_MAX;
    EXPECT_EQ(UCS_ERR_NO_MEMORY, alloc(&len, &ptr, &memh));
    len = m_attr.cap.max_alloc + 1;
    EXPECT_EQ(UCS_ERR_NO_MEMORY, alloc(&len, &ptr, &memh));
    EXPECT_TRUE(log.has("bytes of user DRAM", dev)) << log.all();
    len = 100;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_md_mem_alloc(m_md, &len, &ptr, UCS_MEMORY_TYPE_HOST, 0,
                               "host", &memh));

    /* double free, unknown handles */
    ptr = alloc_ok(100, &memh);
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_free(m_md, memh));
    EXPECT_TRUE(log.has("double free", dev)) << log.all();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_free(m_md, &fake));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_dereg(m_md, &fake));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_dereg(m_md, host.data()));

    /* a freed device pointer, and one past its allocation */
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, uct_md_mem_reg(m_md, ptr, 100, UCT_MD_MEM_ACCESS_ALL,
                                                   &memh2));
    ptr = alloc_ok(1024, &memh);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, uct_md_mem_reg(m_md, ptr, 4096, UCT_MD_MEM_ACCESS_ALL,
                                                   &memh2));
    EXPECT_TRUE(log.has("not inside one live allocation", dev)) << log.all();
    /* a registration of an allocation handle, and dereg of it */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_dereg(m_md, memh));
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));

    /* NULL and wild addresses */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_reg(m_md, NULL, 100, UCT_MD_MEM_ACCESS_ALL,
                                                    &memh2));
    EXPECT_NE(UCS_OK, uct_md_mem_reg(m_md, (void*)0x1000, 4096, UCT_MD_MEM_ACCESS_ALL, &memh2));
    EXPECT_NE(UCS_OK, uct_md_mem_reg(m_md, (void*)0x7ffffff00000ul, 100, UCT_MD_MEM_ACCESS_ALL,
                                     &memh2));
    /* straddling host and device memory */
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_md_mem_reg(m_md, (void*)(m_gmd->heap->win_start - 4096),
                             8192, UCT_MD_MEM_ACCESS_ALL, &memh2));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mkey_pack(m_md, &fake,
                                                      host.data()));
}

TEST_F(gaudi_md, driver_faults)
{
    const char *dev = m_gmd->heap->info->name;
    std::vector<char> host(4096);
    uct_mem_h memh;
    size_t len;
    void *ptr;
    int64_t allocs = hlsim_counter(HLSIM_COUNTER_ALLOCS);
    int64_t maps   = hlsim_counter(HLSIM_COUNTER_MAPPINGS);
    uct_gaudi_counters_t c0 = counters();
    /* a size that always calls ALLOC: a dedicated chunk on Gaudi2/3, the
     * usage accounting on Gaudi1 */
    size_t big = gaudi1() ? 4096 : chunk_size();
    scoped_log log;

    /* ALLOC: Gaudi2 chunk allocation, Gaudi1 usage accounting */
    gaudi_gtest::hlsim_fault_add("mem_alloc", 1, ENOMEM);
    len = big;
    EXPECT_EQ(UCS_ERR_NO_MEMORY, alloc(&len, &ptr, &memh));
    EXPECT_TRUE(log.has("failed to allocate", dev) || gaudi1()) << log.all();
    gaudi_gtest::hlsim_fault_add("mem_alloc", 1, EBUSY);
    len = big;
    EXPECT_EQ(UCS_ERR_BUSY, alloc(&len, &ptr, &memh));
    gaudi_gtest::hlsim_fault_add("mem_alloc", 1, EIO);
    len = big;
    EXPECT_EQ(UCS_ERR_IO_ERROR, alloc(&len, &ptr, &memh));

    if (!gaudi1()) {
        /* MAP of the chunk fails: the ALLOC is undone */
        gaudi_gtest::hlsim_fault_add("mem_map", 1, ENOMEM);
        len = big;
        EXPECT_EQ(UCS_ERR_NO_MEMORY, alloc(&len, &ptr, &memh));
        EXPECT_EQ(allocs, hlsim_counter(HLSIM_COUNTER_ALLOCS));
    }

    /* host MAP */
    close_md();
    open_md("no");
    gaudi_gtest::hlsim_fault_add("mem_map", 1, EIO);
    EXPECT_EQ(UCS_ERR_IO_ERROR, uct_md_mem_reg(m_md, host.data(), 4096, UCT_MD_MEM_ACCESS_ALL,
                                               &memh));
    EXPECT_TRUE(log.has("registration of host memory", dev)) << log.all();
    gaudi_gtest::hlsim_fault_add("mem_map", 1, EBUSY);
    EXPECT_EQ(UCS_ERR_BUSY, uct_md_mem_reg(m_md, host.data(), 4096, UCT_MD_MEM_ACCESS_ALL,
                                           &memh));

    /* export (a driver without it: UNSUPPORTED) */
    ptr = alloc_ok(4096, &memh);
    int fd;
    uint64_t off;
    gaudi_gtest::hlsim_fault_add("mem_export", 1, EIO);
    EXPECT_EQ(UCS_ERR_IO_ERROR, uct_gaudi_dmabuf_get(ptr, 4096, &fd, &off));
    if (export_ok()) {
        EXPECT_EQ(UCS_OK, uct_gaudi_dmabuf_get(ptr, 4096, &fd, &off));
        close(fd);
    } else {
        EXPECT_EQ(UCS_ERR_UNSUPPORTED,
                  uct_gaudi_dmabuf_get(ptr, 4096, &fd, &off));
        EXPECT_TRUE(log.has("EXPORT_DMABUF_FD", "not supported")) << log.all();
    }
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));

    /* nothing leaked */
    uct_gaudi_counters_t c1 = counters();
    EXPECT_EQ(c0.alloc_bytes, c1.alloc_bytes);
    EXPECT_EQ(c0.chunk_count, c1.chunk_count);
    EXPECT_EQ(c0.dmabuf_open, c1.dmabuf_open);
    EXPECT_EQ(allocs, hlsim_counter(HLSIM_COUNTER_ALLOCS));
    EXPECT_EQ(maps, hlsim_counter(HLSIM_COUNTER_MAPPINGS));
}

TEST_F(gaudi_md, stable_over_10000_cycles)
{
    std::vector<char> host(64 * 1024);
    uct_mem_h memh;
    void *ptr;
    int fds;
    long rss;

    /* warm up (allocator, rcache, hash tables) before the baseline */
    for (int i = 0; i < 100; ++i) {
        ptr = alloc_ok(4096, &memh);
        uct_md_mem_free(m_md, memh);
    }
    fds = count_fds();
    rss = rss_kb();
    int64_t maps = hlsim_counter(HLSIM_COUNTER_MAPPINGS);
    uct_gaudi_counters_t c0 = counters();

    bool exports = export_ok();
    for (int i = 0; i < 10000; ++i) {
        size_t size = 1 + (i * 7919) % (1 << 20);
        ptr = alloc_ok(size, &memh);
        if (exports && ((i % 100) == 0)) {
            int fd;
            uint64_t off;
            ASSERT_EQ(UCS_OK, uct_gaudi_dmabuf_get(ptr, size, &fd, &off));
            close(fd);
        }
        ASSERT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
    }
    for (int i = 0; i < 10000; ++i) {
        size_t off = (i * 613) % 4096;
        ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, host.data() + off,
                                         host.size() - off,
                                         UCT_MD_MEM_ACCESS_ALL, &memh));
        ASSERT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    }

    uct_gaudi_counters_t c1 = counters();
    EXPECT_EQ(fds, count_fds());
    EXPECT_EQ(c0.alloc_bytes, c1.alloc_bytes);
    EXPECT_EQ(c0.chunk_count, c1.chunk_count);
    EXPECT_EQ(c0.dmabuf_open, c1.dmabuf_open);
    EXPECT_EQ(0, hlsim_counter(HLSIM_COUNTER_DMABUFS));
    EXPECT_LE(hlsim_counter(HLSIM_COUNTER_MAPPINGS), maps + 2);
    EXPECT_LT(rss_kb() - rss, 8 * 1024) << "RSS grew by KiB";
}


/*
 * A borrowed fd (UCX_GAUDI_DEVICE_FD, SynapseAI's; facts 9.5): on Gaudi1
 * ALLOC only counts bytes and the fd's owner uses the same DRAM, so the MD
 * must not allocate (no ALLOC capability, allocation refused with the
 * reason) but still registers; on Gaudi2 ALLOC gives pages of their own.
 * Runs in a fresh process that holds the fd itself (borrowed_fd_child).
 */
TEST_F(gaudi_md, borrowed_fd)
{
    gaudi_gtest::child_result r = gaudi_gtest::run_test_in_child(
            "gaudi_md.borrowed_fd_child", {{"GAUDI_MD_TEST_BORROW", "1"}});

    EXPECT_TRUE(r.passed() && !r.skipped) << r.output;
}

TEST_F(gaudi_md, borrowed_fd_child)
{
    if (getenv("GAUDI_MD_TEST_BORROW") == NULL) {
        GTEST_SKIP() << "run by borrowed_fd";
    }

    std::vector<char> host(8192);
    uct_mem_h memh;
    size_t len = 4096;
    void *ptr;

    EXPECT_STRNE("opened", ctx()->source);
    if (gaudi1()) {
        EXPECT_FALSE(m_attr.cap.flags & UCT_MD_FLAG_ALLOC);
        EXPECT_EQ(0u, m_attr.cap.alloc_mem_types);
        scoped_log log;
        EXPECT_EQ(UCS_ERR_UNSUPPORTED, alloc(&len, &ptr, &memh));
        EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_gaudi_mem_alloc(4096, &ptr));
        EXPECT_TRUE(log.has("no device memory allocation on Gaudi1",
                            "UCX_GAUDI_DEVICE_FD")) << log.all();
    } else {
        EXPECT_TRUE(m_attr.cap.flags & UCT_MD_FLAG_ALLOC);
        ASSERT_EQ(UCS_OK, alloc(&len, &ptr, &memh));
        EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
    }
    /* registration still works */
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, host.data(), host.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &memh));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
}


int main(int argc, char **argv)
{
    if ((argc == 3) && !strcmp(argv[1], "--mmap-probe")) {
        return mmap_probe_main(atoi(argv[2]));
    }
    /* preload the emulator, give it a node of its own */
    gaudi_gtest::hlsim_setup(argv, "gaudi_md_test");
    if (getenv("GAUDI_MD_TEST_BORROW") != NULL) {
        /* the application (e.g. SynapseAI) owns the device fd */
        char value[16];
        int fd = open("/dev/accel/accel0", O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            fd = open("/dev/hl0", O_RDWR | O_CLOEXEC);   /* Linux 6.1 */
        }
        if (fd < 0) {
            perror("open /dev/accel/accel0");
            return 1;
        }
        snprintf(value, sizeof(value), "%d", fd);
        setenv("UCX_GAUDI_DEVICE_FD", value, 1);
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Freed and reused registered host buffers, through the public UCT API
 * with the registration cache on (UCX_GAUDI_COPY_RCACHE=yes). The driver
 * pins the pages of a MAP USERPTR until UNMAP (docs/driver-facts.md 9.10):
 * a cached registration that outlives the pages it pinned makes every
 * later DMA of the address hit the old pages, silently on hardware. The
 * emulator counts such DMAs (HLSIM_COUNTER_STALE_PIN_DMAS, docs/hlsim.md
 * "Pinned pages"); each test frees a buffer the module has used, gets new
 * pages at the same address (munmap + mmap, free + malloc, mremap,
 * madvise(MADV_DONTNEED), synHostMalloc) and moves data through them
 * again: the data must arrive and no DMA may go through a stale pin. On
 * the SynapseAI backend, a framework process's own maps and copies of
 * such memory beside UCX's (syn_app_test).
 * libuct_gaudi.so is dlopen'ed (GAUDI_REUSE_TEST_MODULE).
 */

#include "common/gaudi_gtest.h"

#include <gtest/gtest.h>

extern "C" {
#include <uct/api/uct.h>
#include <ucs/async/async.h>
#include <ucs/arch/bitops.h>
}

#include <dlfcn.h>
#include <malloc.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include <random>
#include <string>
#include <vector>

using gaudi_gtest::hlsim_counter;


class reuse_test : public ::testing::Test {
protected:
    typedef ucs_status_t (*memcpy_fn_t)(void*, const void*, size_t);

    static const size_t SIZE = 1ul << 20;

    void SetUp() override {
        uct_component_h *comps;
        uct_component_attr_t cattr;
        uct_md_config_t *md_config;
        uct_iface_config_t *if_config;
        uct_tl_resource_desc_t *tls;
        uct_md_attr_t md_attr;
        unsigned i, n, num_tls;

        ASSERT_TRUE(gaudi_gtest::hlsim_loaded())
            << "run with LD_PRELOAD=libhlsim.so";
        auto active = (int (*)())gaudi_gtest::hlsim_sym(
                "hlsim_pin_check_active");
        ASSERT_TRUE(active != NULL);
        if (active() != 1) {
            GTEST_SKIP() << "the emulator cannot see page frames (not "
                            "root): stale pins are not detected";
        }
        std::string names;

        ASSERT_EQ(UCS_OK, uct_query_components(&comps, &n));
        for (i = 0; i < n; ++i) {
            cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
            uct_component_query(comps[i], &cattr);
            names += std::string(" ") + cattr.name;
            if (!strcmp(cattr.name, "gaudi_copy")) {
                m_comp = comps[i];
            }
        }
        uct_release_component_list(comps);
        ASSERT_TRUE(m_comp != NULL) << "gaudi_copy component not loaded; "
                                       "components:" << names;

        ASSERT_EQ(UCS_OK, uct_md_config_read(m_comp, NULL, NULL, &md_config));
        /* the cache must exist: a test without it proves nothing */
        ASSERT_EQ(UCS_OK, uct_config_modify(md_config, "RCACHE", "yes"));
        ASSERT_EQ(UCS_OK, uct_md_open(m_comp, "gaudi_copy", md_config, &m_md));
        uct_config_release(md_config);
        ASSERT_EQ(UCS_OK, uct_md_query(m_md, &md_attr));
        m_mem_type = (ucs_memory_type_t)
                     ucs_ffs64(md_attr.cap.alloc_mem_types);

        ASSERT_EQ(UCS_OK, uct_md_query_tl_resources(m_md, &tls, &num_tls));
        for (i = 0; i < num_tls; ++i) {
            if (!strcmp(tls[i].tl_name, "gaudi_cpy")) {
                m_dev_name = tls[i].dev_name;
            }
        }
        uct_release_tl_resource_list(tls);
        if (m_dev_name.empty()) {
            GTEST_SKIP() << "gaudi_cpy not offered on this ASIC";
        }

        ASSERT_EQ(UCS_OK, ucs_async_context_create(
                          UCS_ASYNC_MODE_THREAD_SPINLOCK, &m_async));
        ASSERT_EQ(UCS_OK, uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                            &m_worker));
        ASSERT_EQ(UCS_OK, uct_md_iface_config_read(m_md, "gaudi_cpy", NULL,
                                                   NULL, &if_config));
        uct_iface_params_t params = {};
        params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                      UCT_IFACE_PARAM_FIELD_DEVICE;
        params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
        params.mode.device.tl_name  = "gaudi_cpy";
        params.mode.device.dev_name = m_dev_name.c_str();
        ASSERT_EQ(UCS_OK, uct_iface_open(m_md, m_worker, &params, if_config,
                                         &m_iface));
        uct_config_release(if_config);
        uct_iface_progress_enable(m_iface, UCT_PROGRESS_SEND |
                                           UCT_PROGRESS_RECV);
        uct_iface_attr_t attr;
        ASSERT_EQ(UCS_OK, uct_iface_query(m_iface, &attr));
        std::vector<char> addr(attr.iface_addr_len);
        ASSERT_EQ(UCS_OK, uct_iface_get_address(m_iface,
                                                (uct_iface_addr_t*)addr.data()));
        uct_ep_params_t ep_params = {};
        ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                               UCT_EP_PARAM_FIELD_DEV_ADDR |
                               UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep_params.iface      = m_iface;
        ep_params.iface_addr = (uct_iface_addr_t*)addr.data();
        ASSERT_EQ(UCS_OK, uct_ep_create(&ep_params, &m_ep));
        m_memcpy = (memcpy_fn_t)dlsym(RTLD_DEFAULT, "uct_gaudi_memcpy");
        ASSERT_TRUE(m_memcpy != NULL);
        m_stale0   = hlsim_counter(HLSIM_COUNTER_STALE_PIN_DMAS);
        m_counting = true;
    }

    void TearDown() override {
        if (m_counting) {
            EXPECT_EQ(m_stale0, hlsim_counter(HLSIM_COUNTER_STALE_PIN_DMAS))
                << "DMAs through stale pins (see the emulator's log)";
        }
        for (auto &m : m_dev_mem) {
            uct_mem_free(&m);
        }
        for (auto &r : m_rkeys) {
            uct_rkey_release(m_comp, &r);
        }
        if (m_ep != NULL) {
            uct_ep_destroy(m_ep);
        }
        if (m_iface != NULL) {
            uct_iface_close(m_iface);
        }
        if (m_worker != NULL) {
            uct_worker_destroy(m_worker);
        }
        if (m_async != NULL) {
            ucs_async_context_destroy(m_async);
        }
        if (m_md != NULL) {
            uct_md_close(m_md);
        }
        if (m_syn_release) {
            /* the application's device, after the module let it go */
            EXPECT_EQ(0, m_syn_release(m_syn_id));
        }
        if (m_syn_lib != NULL) {
            dlclose(m_syn_lib);
        }
    }

    uint64_t dev_alloc(size_t size, uct_rkey_t *rkey) {
        uct_allocated_memory_t mem;
        uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
        uct_mem_alloc_params_t params = {};
        uct_rkey_bundle_t bundle;

        params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS |
                            UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE |
                            UCT_MEM_ALLOC_PARAM_FIELD_MDS |
                            UCT_MEM_ALLOC_PARAM_FIELD_NAME;
        params.flags      = UCT_MD_MEM_ACCESS_ALL;
        params.mem_type   = m_mem_type;
        params.mds.mds    = &m_md;
        params.mds.count  = 1;
        params.name       = "reuse_test";
        EXPECT_EQ(UCS_OK, uct_mem_alloc(size, &method, 1, &params, &mem));
        m_dev_mem.push_back(mem);
        std::vector<char> packed(64 + 256);
        EXPECT_EQ(UCS_OK, uct_md_mkey_pack(m_md, mem.memh, packed.data()));
        EXPECT_EQ(UCS_OK, uct_rkey_unpack(m_comp, packed.data(), &bundle));
        m_rkeys.push_back(bundle);
        *rkey = bundle.rkey;
        return (uintptr_t)mem.address;
    }

    struct comp_t {
        uct_completion_t uct;
        ucs_status_t     status;
    };

    static void comp_cb(uct_completion_t *self) {
        ucs_container_of(self, comp_t, uct)->status = self->status;
    }

    ucs_status_t zcopy(bool put, void *buf, size_t len, uct_mem_h memh) {
        uct_iov_t iov = { buf, len, memh, 0, 1 };
        comp_t c;
        ucs_status_t status;

        c.uct.func   = comp_cb;
        c.uct.count  = 1;
        c.uct.status = UCS_OK;
        c.status     = UCS_ERR_LAST;
        do {
            status = put ? uct_ep_put_zcopy(m_ep, &iov, 1, m_dev, m_rkey,
                                            &c.uct) :
                           uct_ep_get_zcopy(m_ep, &iov, 1, m_dev, m_rkey,
                                            &c.uct);
            if (status == UCS_ERR_NO_RESOURCE) {
                uct_worker_progress(m_worker);
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        if (status != UCS_INPROGRESS) {
            return status;
        }
        while (c.uct.count > 0) {
            uct_worker_progress(m_worker);
        }
        return c.status;
    }

    static void fill(uint8_t *p, size_t len, unsigned seed) {
        std::mt19937 gen(seed);
        for (size_t i = 0; i < len; ++i) {
            p[i] = (uint8_t)gen();
        }
    }

    /*
     * Every way the module moves [p, +len) (a host buffer at an address
     * it has seen before): a registration of the MD (the cache) used by
     * put_zcopy, get_zcopy into it, then the module's own resolution of
     * unregistered memory (uct_gaudi_memcpy, zcopy without a memh). The
     * data read back must be the data written.
     */
    void move_all(uint8_t *p, size_t len, unsigned seed) {
        std::vector<uint8_t> want(len);
        uct_mem_h memh;

        if (m_dev == 0) {
            /* at first use: a SynapseAI application acquires the device
             * first, the module borrows it */
            m_dev = dev_alloc(2 * SIZE, &m_rkey);   /* the largest move */
        }

        fill(want.data(), len, seed);
        memcpy(p, want.data(), len);
        ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, p, len, UCT_MD_MEM_ACCESS_ALL,
                                         &memh));
        EXPECT_EQ(UCS_OK, zcopy(true, p, len, memh));
        memset(p, 0, len);
        EXPECT_EQ(UCS_OK, zcopy(false, p, len, memh));
        ASSERT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));   /* stays cached */
        ASSERT_EQ(0, memcmp(want.data(), p, len))
            << "registered round trip, seed " << seed;

        if (!m_api_memcpy) {
            goto unregistered;
        }
        fill(want.data(), len, seed + 1000);
        memcpy(p, want.data(), len);
        ASSERT_EQ(UCS_OK, m_memcpy((void*)m_dev, p, len));
        memset(p, 0, len);
        ASSERT_EQ(UCS_OK, m_memcpy(p, (const void*)m_dev, len));
        ASSERT_EQ(0, memcmp(want.data(), p, len))
            << "uct_gaudi_memcpy round trip, seed " << seed;

unregistered:
        fill(want.data(), len, seed + 2000);
        memcpy(p, want.data(), len);
        ASSERT_EQ(UCS_OK, zcopy(true, p, len, UCT_MEM_HANDLE_NULL));
        memset(p, 0, len);
        ASSERT_EQ(UCS_OK, zcopy(false, p, len, UCT_MEM_HANDLE_NULL));
        ASSERT_EQ(0, memcmp(want.data(), p, len))
            << "unregistered zcopy round trip, seed " << seed;
    }

    static uint8_t *map_at(void *at, size_t len) {
        void *p = mmap(at, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS |
                       ((at != NULL) ? MAP_FIXED_NOREPLACE : 0), -1, 0);
        return (p == MAP_FAILED) ? NULL : (uint8_t*)p;
    }

    uct_component_h                     m_comp   = NULL;
    uct_md_h                            m_md     = NULL;
    ucs_async_context_t                 *m_async = NULL;
    uct_worker_h                        m_worker = NULL;
    uct_iface_h                         m_iface  = NULL;
    uct_ep_h                            m_ep     = NULL;
    ucs_memory_type_t                   m_mem_type = UCS_MEMORY_TYPE_HOST;
    std::string                         m_dev_name;
    /* free + malloc of SIZE bytes, three times, glibc giving the same
     * address back each time: every way of moving data through it */
    void malloc_rounds() {
        uint8_t *p = (uint8_t*)malloc(SIZE), *q;

        ASSERT_TRUE(p != NULL);
        move_all(p, SIZE, 1);
        for (unsigned round = 2; round < 5; ++round) {
            uintptr_t was = (uintptr_t)p;

            free(p);
            p = q = (uint8_t*)malloc(SIZE);
            if (was != (uintptr_t)q) {
                free(p);
                FAIL() << "glibc did not give the same address back";
            }
            move_all(q, SIZE, round);
        }
        free(p);
    }

    std::vector<uct_allocated_memory_t> m_dev_mem;
    std::vector<uct_rkey_bundle_t>      m_rkeys;
    uint64_t                            m_dev    = 0;
    uct_rkey_t                          m_rkey   = 0;
    memcpy_fn_t                         m_memcpy = NULL;
    int64_t                             m_stale0 = 0;
    bool                                m_counting = false;
    bool                                m_api_memcpy = true;
    void                                *m_syn_lib = NULL;
    int                                 (*m_syn_release)(uint32_t) = NULL;
    uint32_t                            m_syn_id = 0;
};

/* munmap, then new pages mapped at the same address */
TEST_F(reuse_test, munmap_mmap)
{
    uint8_t *p = map_at(NULL, SIZE);

    ASSERT_TRUE(p != NULL);
    move_all(p, SIZE, 1);
    for (unsigned round = 2; round < 5; ++round) {
        ASSERT_EQ(0, munmap(p, SIZE));
        ASSERT_EQ(p, map_at(p, SIZE)) << "address taken meanwhile";
        move_all(p, SIZE, round);
        /* part of the range only */
        move_all(p + 4096 + 7, 3 * 4096, round + 100);
    }
    munmap(p, SIZE);
}

/* free + malloc of a buffer glibc maps by itself (fixed mmap threshold:
 * no dynamic growth moves it to the heap) */
TEST_F(reuse_test, free_malloc)
{
    ASSERT_EQ(1, mallopt(M_MMAP_THRESHOLD, 256 * 1024));
    malloc_rounds();
}

/* free + malloc at the top of the heap: the trim gives the pages back
 * (brk down), the next malloc gets new ones (brk up) */
TEST_F(reuse_test, heap_trim)
{
    ASSERT_EQ(1, mallopt(M_MMAP_THRESHOLD, 64 << 20));
    ASSERT_EQ(1, mallopt(M_TRIM_THRESHOLD, 0));
    ASSERT_EQ(1, mallopt(M_TOP_PAD, 0));
    malloc_rounds();
}

/* mremap moves the pages away (grown where they cannot grow in place;
 * without MREMAP_FIXED, which UCM's hook of UCX 1.13 does not pass on);
 * new pages at the old address */
TEST_F(reuse_test, mremap_move)
{
    uint8_t *p = map_at(NULL, 2 * SIZE), *q;

    ASSERT_TRUE(p != NULL);
    ASSERT_EQ(0, munmap(p + SIZE, SIZE));
    ASSERT_EQ(p + SIZE, (uint8_t*)mmap(p + SIZE, SIZE, PROT_NONE,
                                        MAP_PRIVATE | MAP_ANONYMOUS |
                                        MAP_FIXED, -1, 0));   /* a wall */
    move_all(p, SIZE, 1);
    q = (uint8_t*)mremap(p, SIZE, 2 * SIZE, MREMAP_MAYMOVE);
    ASSERT_TRUE((q != MAP_FAILED) && (q != p)) << "mremap: " << (void*)q;
    ASSERT_EQ(p, map_at(p, SIZE));
    move_all(p, SIZE, 2);
    move_all(q, 2 * SIZE, 3);     /* the moved pages, at a new address */
    /* shrunk in place, then grown back: new pages at the end */
    ASSERT_EQ(q, mremap(q, 2 * SIZE, SIZE, 0));
    ASSERT_EQ(q + SIZE, map_at(q + SIZE, SIZE));
    move_all(q, 2 * SIZE, 4);
    munmap(p, 2 * SIZE);
    munmap(q, 2 * SIZE);
}

/* madvise(MADV_DONTNEED): the pages are dropped, zero pages come back */
TEST_F(reuse_test, madvise_dontneed)
{
    uint8_t *p = map_at(NULL, SIZE);

    ASSERT_TRUE(p != NULL);
    move_all(p, SIZE, 1);
    for (unsigned round = 2; round < 5; ++round) {
        ASSERT_EQ(0, madvise(p + 4096 * round, SIZE / 2, MADV_DONTNEED));
        move_all(p, SIZE, round);
    }
    munmap(p, SIZE);
}

/*
 * A framework process on the SynapseAI backend: the application acquires
 * its device through the same libSynapse after UCX is up, maps or
 * allocates its own pinned buffers and copies them on its own stream,
 * beside UCX's registrations and copies of the same memory. SynapseAI's
 * host-address table is one per process, shared, without reference count
 * (docs/synapse.md, "Host maps"): the module must put no entry into it
 * over the application's memory, or the application's maps and copies
 * stop behaving as they would without UCX (issue 32, S3, S5, S6 and the
 * stale entry).
 */
class syn_app_test : public reuse_test {
protected:
    static const size_t PG = 4096;

    /* in a child of its own (a process whose device nothing took yet);
     * false: the parent's part is done, or skipped */
    bool in_child() {
        const char *backend = getenv("UCX_GAUDI_COPY_BACKEND");

        if ((backend == NULL) || strcmp(backend, "synapse") ||
            (getenv("UCX_GAUDI_SYNAPSE_LIB") == NULL)) {
            m_skip = "not on the SynapseAI backend";
            return false;
        }
        if (getenv("GAUDI_REUSE_CHILD") != NULL) {
            return true;
        }
        gaudi_gtest::child_result r = gaudi_gtest::run_test_in_child(
                gaudi_gtest::current_test(), {{"GAUDI_REUSE_CHILD", "1"}},
                true);
        EXPECT_TRUE(r.passed() && !r.skipped) << r.output;
        return false;
    }

    /* the application's SynapseAI: device, stream, a device buffer */
    void app_start() {
        void *lib = dlopen(getenv("UCX_GAUDI_SYNAPSE_LIB"), RTLD_NOW);

        ASSERT_TRUE(lib != NULL) << dlerror();
        m_syn_lib = lib;
        sym(m_host_malloc, "synHostMalloc");
        sym(m_host_free, "synHostFree");
        sym(m_host_map, "synHostMap");
        sym(m_host_unmap, "synHostUnmap");
        sym(m_app_copy, "synMemCopyAsync");
        sym(m_app_sync, "synStreamSynchronize");
        int (*init)(), (*acquire)(uint32_t*, const char*);
        int (*release)(uint32_t), (*stream_new)(void**, uint32_t, uint32_t);
        int (*dev_malloc)(uint32_t, uint64_t, uint64_t, uint32_t,
                          uint64_t*);
        sym(init, "synInitialize");
        sym(acquire, "synDeviceAcquire");
        sym(release, "synDeviceRelease");
        sym(stream_new, "synStreamCreateGeneric");
        sym(dev_malloc, "synDeviceMalloc");
        sym(m_dev_free, "synDeviceFree");
        sym(m_stream_del, "synStreamDestroy");
        ASSERT_TRUE(m_host_malloc && m_host_free && m_host_map &&
                    m_host_unmap && m_app_copy && m_app_sync && init &&
                    acquire && release && stream_new && dev_malloc &&
                    m_dev_free && m_stream_del);
        /* uct_gaudi_memcpy's engine outlives the test, and the device
         * the application releases in TearDown */
        m_api_memcpy = false;
        ASSERT_EQ(0, init());
        ASSERT_EQ(0, acquire(&m_syn_id, NULL));
        m_syn_release = release;
        ASSERT_EQ(0, dev_malloc(m_syn_id, SIZE, 0, 0, &m_app_dev));
        ASSERT_EQ(0, stream_new(&m_app_stream, m_syn_id, 0));
    }

    void app_stop() {
        EXPECT_EQ(0, m_stream_del(m_app_stream));
        EXPECT_EQ(0, m_dev_free(m_syn_id, m_app_dev, 0));
    }

    template <typename F> void sym(F &fn, const char *name) {
        fn = (F)dlsym(m_syn_lib, name);
    }

    /* the application's own round trip of [p, +len) on its stream: to
     * its device buffer and back, read back and compared */
    void app_roundtrip(uint8_t *p, size_t len, unsigned seed,
                       const char *what) {
        std::vector<uint8_t> want(len);

        ASSERT_LE(len, (size_t)SIZE);
        fill(want.data(), len, seed);
        memcpy(p, want.data(), len);
        ASSERT_EQ(0, m_app_copy(m_app_stream, (uintptr_t)p, len, m_app_dev,
                                0 /* HOST_TO_DRAM */)) << what;
        ASSERT_EQ(0, m_app_sync(m_app_stream)) << what;
        memset(p, 0, len);
        ASSERT_EQ(0, m_app_copy(m_app_stream, m_app_dev, len, (uintptr_t)p,
                                1 /* DRAM_TO_HOST */)) << what;
        ASSERT_EQ(0, m_app_sync(m_app_stream)) << what;
        ASSERT_EQ(0, memcmp(want.data(), p, len))
            << "application's copies: " << what;
    }

    /* UCX lets go of everything (every registration deregistered, the
     * cache and the engines gone), the application's device stays */
    void uct_close() {
        for (auto &m : m_dev_mem) {
            uct_mem_free(&m);
        }
        m_dev_mem.clear();
        for (auto &r : m_rkeys) {
            uct_rkey_release(m_comp, &r);
        }
        m_rkeys.clear();
        uct_ep_destroy(m_ep);
        m_ep = NULL;
        uct_iface_close(m_iface);
        m_iface = NULL;
        uct_md_close(m_md);
        m_md = NULL;
    }

    std::string m_skip;
    int (*m_host_malloc)(uint32_t, uint64_t, uint32_t, void**) = NULL;
    int (*m_host_free)(uint32_t, const void*, uint32_t)         = NULL;
    int (*m_host_map)(uint32_t, uint64_t, const void*)          = NULL;
    int (*m_host_unmap)(uint32_t, const void*)                  = NULL;
    int (*m_app_copy)(void*, uint64_t, uint64_t, uint64_t, int) = NULL;
    int (*m_app_sync)(void*)                                    = NULL;
    int (*m_dev_free)(uint32_t, uint64_t, uint32_t)             = NULL;
    int (*m_stream_del)(void*)                                  = NULL;
    void     *m_app_stream = NULL;
    uint64_t m_app_dev     = 0;
};

#define SYN_APP_CHILD() \
    do { \
        if (!in_child()) { \
            if (!m_skip.empty()) { \
                GTEST_SKIP() << m_skip; \
            } \
            return; \
        } \
    } while (0)

/* The application's synHostMalloc lands where a buffer the module used
 * was, before the module runs again: the application's own copies of the
 * new buffer and the module's must both use the new pages */
TEST_F(syn_app_test, host_malloc_on_stale_range)
{
    SYN_APP_CHILD();
    uint8_t *p = map_at(NULL, SIZE), *q = NULL;

    app_start();
    ASSERT_TRUE(p != NULL);
    move_all(p, SIZE, 1);
    ASSERT_EQ(0, munmap(p, SIZE));
    ASSERT_EQ(0, m_host_malloc(m_syn_id, SIZE, 0, (void**)&q));
    ASSERT_EQ(p, q) << "synHostMalloc did not land on the freed range";
    /* the application's round trip first, the module's after */
    app_roundtrip(q, SIZE, 7, "new synHostMalloc buffer");
    move_all(q, SIZE, 3);
    /* and the application's entry is still there afterwards */
    app_roundtrip(q, SIZE, 8, "after UCX's copies");
    uct_close();
    app_roundtrip(q, SIZE, 9, "after UCX let go");
    EXPECT_EQ(0, m_host_free(m_syn_id, q, 0));
    app_stop();
}

/* S3: the application maps a page inside a range UCX registered and
 * copied; its copies work while UCX holds the registration, after UCX
 * copies it again, and after UCX deregisters everything */
TEST_F(syn_app_test, app_maps_inside_registration)
{
    SYN_APP_CHILD();
    uint8_t *b = map_at(NULL, 8 * PG);

    app_start();
    ASSERT_TRUE(b != NULL);
    move_all(b, 8 * PG, 1);     /* registered, cached, copied */
    ASSERT_EQ(0, m_host_map(m_syn_id, PG, b + PG));
    app_roundtrip(b + PG, PG, 2, "map inside UCX's registration");
    move_all(b, 8 * PG, 3);     /* runs past the application's entry */
    move_all(b + PG, PG, 4);    /* inside it */
    app_roundtrip(b + PG, PG, 5, "after UCX's copies");
    uct_close();
    app_roundtrip(b + PG, PG, 6, "after UCX deregistered");
    EXPECT_EQ(0, m_host_unmap(m_syn_id, b + PG));
    app_stop();
    munmap(b, 8 * PG);
}

/* S5: UCX holds a registration (the cache) of a buffer the application
 * maps and unmaps per use, re-mapping the same and then a larger size:
 * its entries stay its own */
TEST_F(syn_app_test, app_remaps_same_and_larger)
{
    SYN_APP_CHILD();
    uint8_t *b = map_at(NULL, 8 * PG);

    app_start();
    ASSERT_TRUE(b != NULL);
    ASSERT_EQ(0, m_host_map(m_syn_id, 2 * PG, b));
    move_all(b, 2 * PG, 1);
    app_roundtrip(b, 2 * PG, 2, "first map");
    ASSERT_EQ(0, m_host_unmap(m_syn_id, b));
    move_all(b, 2 * PG, 3);     /* no entry now: staged */
    ASSERT_EQ(0, m_host_map(m_syn_id, 2 * PG, b));
    app_roundtrip(b, 2 * PG, 4, "same size re-mapped");
    move_all(b, 2 * PG, 5);
    app_roundtrip(b, 2 * PG, 6, "same size, after UCX's copies");
    ASSERT_EQ(0, m_host_unmap(m_syn_id, b));
    ASSERT_EQ(0, m_host_map(m_syn_id, 4 * PG, b));
    app_roundtrip(b, 4 * PG, 7, "larger re-mapped");
    move_all(b, 4 * PG, 8);
    move_all(b, 2 * PG, 9);
    app_roundtrip(b, 4 * PG, 10, "larger, after UCX's copies");
    uct_close();
    app_roundtrip(b, 4 * PG, 11, "after UCX deregistered");
    EXPECT_EQ(0, m_host_unmap(m_syn_id, b));
    app_stop();
    munmap(b, 8 * PG);
}

/* S6: UCX registered and copied a page, then the application maps a
 * larger range around it (starting before): the application's copies
 * from that page running past it work while UCX holds its registration;
 * UCX's copies running past the application's entry are staged */
TEST_F(syn_app_test, app_maps_around_registration)
{
    SYN_APP_CHILD();
    uint8_t *b = map_at(NULL, 10 * PG);

    app_start();
    ASSERT_TRUE(b != NULL);
    move_all(b + 4 * PG, PG, 1);
    ASSERT_EQ(0, m_host_map(m_syn_id, 8 * PG, b));
    app_roundtrip(b + 4 * PG, 4 * PG, 2, "from UCX's page on");
    app_roundtrip(b, 8 * PG, 3, "the whole map");
    move_all(b + 4 * PG, PG, 4);        /* through the application's entry */
    move_all(b + 6 * PG, 4 * PG, 5);    /* runs past it */
    app_roundtrip(b + 4 * PG, 4 * PG, 6, "after UCX's copies");
    uct_close();
    app_roundtrip(b + 4 * PG, 4 * PG, 7, "after UCX deregistered");
    EXPECT_EQ(0, m_host_unmap(m_syn_id, b));
    app_stop();
    munmap(b, 10 * PG);
}

int main(int argc, char **argv)
{
    ::testing::InitGoogleTest(&argc, argv);
    if (dlopen(GAUDI_REUSE_TEST_MODULE, RTLD_NOW | RTLD_GLOBAL) == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", GAUDI_REUSE_TEST_MODULE,
                dlerror());
        return 1;
    }
    return RUN_ALL_TESTS();
}

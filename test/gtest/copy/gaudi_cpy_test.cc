/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_cpy transport tests through the public UCT API, on the emulator:
 * put/get short, bcopy and zcopy in every direction (H2D, D2H, D2D) with
 * data read back, multi-entry iov, more outstanding copies than the CS
 * window (pending queue), flush with a completion, fence, bad input.
 * libuct_gaudi.so is dlopen'ed (GAUDI_CPY_TEST_MODULE) so that its
 * component registers with UCT. Gaudi memory is never dereferenced here.
 */

#include "common/gaudi_gtest.h"

#include <gtest/gtest.h>

extern "C" {
#include <uct/api/uct.h>
#include <uct/api/v2/uct_v2.h>
#include <uct/gaudi/hl/gaudi_hl_abi.h>
#include <ucs/async/async.h>
#include <ucs/time/time.h>
#include <ucs/arch/bitops.h>
}

#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/mman.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <algorithm>
#include <vector>

/* emulator control: test/gtest/common */
using gaudi_gtest::hlsim_counter;


class cpy_test : public ::testing::Test {
protected:
    void SetUp() override {
        uct_component_h *comps;
        uct_component_attr_t cattr;
        uct_md_config_t *md_config;
        uct_tl_resource_desc_t *tls;
        uct_md_attr_t md_attr;
        unsigned i, n, num_tls;

        ASSERT_TRUE(gaudi_gtest::hlsim_loaded())
            << "run with LD_PRELOAD=libhlsim.so";
        ASSERT_EQ(UCS_OK, uct_query_components(&comps, &n));
        for (i = 0; i < n; ++i) {
            cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
            uct_component_query(comps[i], &cattr);
            if (!strcmp(cattr.name, "gaudi_copy")) {
                m_comp = comps[i];
            }
        }
        uct_release_component_list(comps);
        ASSERT_TRUE(m_comp != NULL) << "gaudi_copy component not loaded";

        ASSERT_EQ(UCS_OK, uct_md_config_read(m_comp, NULL, NULL, &md_config));
        ASSERT_EQ(UCS_OK, uct_md_open(m_comp, "gaudi_copy", md_config, &m_md));
        uct_config_release(md_config);
        ASSERT_EQ(UCS_OK, uct_md_query(m_md, &md_attr));
        ASSERT_NE(0u, md_attr.cap.alloc_mem_types);
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
            m_no_tl = true;   /* Gaudi3: checked by no_transport_gaudi3 */
            return;
        }

        ASSERT_EQ(UCS_OK, ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                                   &m_async));
        ASSERT_EQ(UCS_OK, uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                            &m_worker));
        open_iface();
    }

    /* The gaudi_cpy iface of the MD's device and an ep to itself */
    void open_iface() {
        uct_iface_config_t *if_config;

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
        ASSERT_EQ(UCS_OK, uct_iface_query(m_iface, &m_attr));
        uct_iface_progress_enable(m_iface, UCT_PROGRESS_SEND |
                                           UCT_PROGRESS_RECV);

        std::vector<char> addr(m_attr.iface_addr_len);
        ASSERT_EQ(UCS_OK, uct_iface_get_address(m_iface,
                                                (uct_iface_addr_t*)addr.data()));
        ASSERT_TRUE(uct_iface_is_reachable(m_iface, NULL,
                                           (uct_iface_addr_t*)addr.data()));
        uct_ep_params_t ep_params = {};
        ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                               UCT_EP_PARAM_FIELD_DEV_ADDR |
                               UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep_params.iface      = m_iface;
        ep_params.dev_addr   = NULL;
        ep_params.iface_addr = (uct_iface_addr_t*)addr.data();
        ASSERT_EQ(UCS_OK, uct_ep_create(&ep_params, &m_ep));
    }

    void TearDown() override {
        for (auto &m : m_dev_mem) {
            uct_mem_free(&m);
        }
        for (auto &r : m_rkeys) {
            uct_rkey_release(m_comp, &r);
        }
        for (auto &h : m_host_regs) {
            uct_md_mem_dereg(m_md, h);
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
    }

    /* Gaudi memory from the MD, with its rkey */
    void *dev_alloc(size_t size, uct_rkey_t *rkey) {
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
        params.name       = "cpy_test";
        EXPECT_EQ(UCS_OK, uct_mem_alloc(size, &method, 1, &params, &mem));
        m_dev_mem.push_back(mem);
        std::vector<char> packed(64 + 256);
        EXPECT_EQ(UCS_OK, uct_md_mkey_pack(m_md, mem.memh, packed.data()));
        EXPECT_EQ(UCS_OK, uct_rkey_unpack(m_comp, packed.data(), &bundle));
        m_rkeys.push_back(bundle);
        *rkey = bundle.rkey;
        return mem.address;
    }

    uct_mem_h host_reg(std::vector<uint8_t> &buf) {
        uct_mem_h memh;
        EXPECT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(),
                                         UCT_MD_MEM_ACCESS_ALL, &memh));
        m_host_regs.push_back(memh);
        return memh;
    }

    static void fill(std::vector<uint8_t> &buf, unsigned seed) {
        std::mt19937 gen(seed);
        for (auto &b : buf) {
            b = (uint8_t)gen();
        }
    }

    struct comp_t {
        uct_completion_t uct;
        ucs_status_t     status;
    };

    static void comp_cb(uct_completion_t *self) {
        comp_t *c = ucs_container_of(self, comp_t, uct);
        c->status = self->status;
    }

    void comp_init(comp_t &c) {
        c.uct.func   = comp_cb;
        c.uct.count  = 1;
        c.uct.status = UCS_OK;
        c.status     = UCS_ERR_LAST;
    }

    void wait(comp_t &c) {
        while (c.uct.count > 0) {
            uct_worker_progress(m_worker);
        }
    }

    /* zcopy with retries on NO_RESOURCE, then waited for */
    ucs_status_t zcopy(bool put, const uct_iov_t *iov, size_t cnt,
                       uint64_t raddr, uct_rkey_t rkey) {
        comp_t c;
        ucs_status_t status;

        comp_init(c);
        do {
            status = put ? uct_ep_put_zcopy(m_ep, iov, cnt, raddr, rkey, &c.uct)
                         : uct_ep_get_zcopy(m_ep, iov, cnt, raddr, rkey, &c.uct);
            if (status == UCS_ERR_NO_RESOURCE) {
                uct_worker_progress(m_worker);
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        if (status == UCS_INPROGRESS) {
            wait(c);
            return c.status;
        }
        return status;
    }

    /* The emulated libSynapse if the SynapseAI backend loaded it (to be
     * dlclose'd), else NULL: the kernel backend is in use */
    static void *synapse_lib() {
        const char *lib = getenv("UCX_GAUDI_SYNAPSE_LIB");

        return (lib != NULL) ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
    }

    void flush() {
        ucs_status_t status;
        while ((status = uct_iface_flush(m_iface, 0, NULL)) == UCS_INPROGRESS) {
            uct_worker_progress(m_worker);
        }
        ASSERT_EQ(UCS_OK, status);
    }

    uct_component_h                m_comp   = NULL;
    uct_md_h                       m_md     = NULL;
    ucs_async_context_t            *m_async = NULL;
    uct_worker_h                   m_worker = NULL;
    uct_iface_h                    m_iface  = NULL;
    uct_ep_h                       m_ep     = NULL;
    uct_iface_attr_t               m_attr;
    ucs_memory_type_t              m_mem_type = UCS_MEMORY_TYPE_HOST;
    std::string                    m_dev_name;
    bool                           m_no_tl = false;
    std::vector<uct_allocated_memory_t> m_dev_mem;
    std::vector<uct_rkey_bundle_t> m_rkeys;
    std::vector<uct_mem_h>         m_host_regs;
};

#define SKIP_NO_TL() \
    if (m_no_tl) { \
        GTEST_SKIP() << "gaudi_cpy not offered on this ASIC"; \
    }


TEST_F(cpy_test, no_transport_gaudi3) {
    const char *asic = getenv("HLSIM_ASIC");

    /* Gaudi3: the MD works, the transport is not offered (facts 6) */
    EXPECT_EQ((asic != NULL) && !strcmp(asic, "gaudi3"), m_no_tl);
}

TEST_F(cpy_test, caps) {
    SKIP_NO_TL();
    uint64_t need = UCT_IFACE_FLAG_CONNECT_TO_IFACE | UCT_IFACE_FLAG_PUT_SHORT |
                    UCT_IFACE_FLAG_GET_SHORT | UCT_IFACE_FLAG_PUT_ZCOPY |
                    UCT_IFACE_FLAG_GET_ZCOPY | UCT_IFACE_FLAG_PENDING;
    EXPECT_EQ(need, m_attr.cap.flags & need);
    EXPECT_GT(m_attr.cap.put.max_iov, 1u);
    EXPECT_GT(m_attr.cap.put.max_zcopy, 64ul << 20);
    EXPECT_GT(m_attr.bandwidth.shared, 0);

    /* per-direction estimates */
    uct_perf_attr_t perf = {};
    perf.field_mask        = UCT_PERF_ATTR_FIELD_OPERATION |
                             UCT_PERF_ATTR_FIELD_LOCAL_MEMORY_TYPE |
                             UCT_PERF_ATTR_FIELD_REMOTE_MEMORY_TYPE |
                             UCT_PERF_ATTR_FIELD_BANDWIDTH |
                             UCT_PERF_ATTR_FIELD_LATENCY;
    perf.operation          = UCT_EP_OP_PUT_ZCOPY;
    perf.local_memory_type  = m_mem_type;
    perf.remote_memory_type = m_mem_type;
    ASSERT_EQ(UCS_OK, uct_iface_estimate_perf(m_iface, &perf));
    double d2d = perf.bandwidth.shared;
    perf.local_memory_type = UCS_MEMORY_TYPE_HOST;
    ASSERT_EQ(UCS_OK, uct_iface_estimate_perf(m_iface, &perf));
    EXPECT_GT(d2d, perf.bandwidth.shared);   /* D2D faster than H2D */
    EXPECT_GT(perf.latency.c, 0);
}

/* put_short/get_short: host <-> Gaudi, and Gaudi <-> Gaudi */
TEST_F(cpy_test, short_all_directions) {
    SKIP_NO_TL();
    uct_rkey_t rkey, rkey2;
    char *dev  = (char*)dev_alloc(1 << 20, &rkey);
    char *dev2 = (char*)dev_alloc(1 << 20, &rkey2);

    for (unsigned size : { 1u, 5u, 4096u, 70001u, 600000u }) {
        std::vector<uint8_t> src(size), dst(size, 0);
        fill(src, size);
        ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep, src.data(), size,
                                           (uintptr_t)dev + 3, rkey));
        /* D2D: local buffer is Gaudi memory too */
        ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep, dev + 3, size,
                                           (uintptr_t)dev2 + 1, rkey2));
        ASSERT_EQ(UCS_OK, uct_ep_get_short(m_ep, dst.data(), size,
                                           (uintptr_t)dev2 + 1, rkey2));
        ASSERT_EQ(src, dst) << "size " << size;
    }
}

TEST_F(cpy_test, bcopy) {
    SKIP_NO_TL();
    uct_rkey_t rkey;
    char *dev = (char*)dev_alloc(1 << 20, &rkey);
    std::vector<uint8_t> src(5000), dst(5000, 0);

    fill(src, 9);
    ssize_t len = uct_ep_put_bcopy(m_ep, [](void *dest, void *arg) -> size_t {
        memcpy(dest, arg, 5000);
        return 5000;
    }, src.data(), (uintptr_t)dev + 11, rkey);
    ASSERT_EQ(5000, len);
    ASSERT_EQ(UCS_OK, uct_ep_get_bcopy(m_ep, [](void *arg, const void *data,
                                                size_t length) {
        memcpy(arg, data, length);
    }, dst.data(), 5000, (uintptr_t)dev + 11, rkey, NULL));
    EXPECT_EQ(src, dst);
}

/* zcopy H2D (iov of several entries), D2D, D2H; unaligned; large */
TEST_F(cpy_test, zcopy_all_directions) {
    SKIP_NO_TL();
    uct_rkey_t rkey, rkey2;
    const size_t max = 40ul << 20;
    char *dev  = (char*)dev_alloc(max + 4096, &rkey);
    char *dev2 = (char*)dev_alloc(max + 4096, &rkey2);

    for (size_t size : { 1ul, 1000ul, 65536ul, (1ul << 20) + 7, 33ul << 20 }) {
        std::vector<uint8_t> src(size + 16), dst(size + 16, 0);
        uct_mem_h smemh = host_reg(src), dmemh = host_reg(dst);
        uct_iov_t iov[3];
        size_t part = size / 3;

        fill(src, (unsigned)size);
        iov[0] = { src.data() + 1, part, smemh, 0, 1 };
        iov[1] = { src.data() + 1 + part, part, smemh, 0, 1 };
        iov[2] = { src.data() + 1 + 2 * part, size - 2 * part, smemh, 0, 1 };
        ASSERT_EQ(UCS_OK, zcopy(true, iov, 3, (uintptr_t)dev + 5, rkey));

        /* D2D: local iov is Gaudi memory (no memh needed) */
        iov[0] = { dev + 5, size, NULL, 0, 1 };
        ASSERT_EQ(UCS_OK, zcopy(true, iov, 1, (uintptr_t)dev2 + 2, rkey2));

        /* D2H by get_zcopy into a host iov */
        iov[0] = { dst.data() + 3, size, dmemh, 0, 1 };
        ASSERT_EQ(UCS_OK, zcopy(false, iov, 1, (uintptr_t)dev2 + 2, rkey2));
        ASSERT_EQ(0, memcmp(src.data() + 1, dst.data() + 3, size))
            << "size " << size;
    }
}

/* More outstanding copies than the transport holds (CS window times the
 * copies a CS takes): NO_RESOURCE + pending */
/*
 * Teardown with copies in flight: the ep and the iface go without a flush
 * while large copies still run on the engines (copies progress only
 * there). The close waits until the device is done with the buffers:
 * nothing is left in flight when it returns and nothing was aborted; the
 * data has landed, which a new iface on the same device reads back.
 */
TEST_F(cpy_test, close_with_copies_in_flight) {
    SKIP_NO_TL();
    const unsigned n = 8;
    const size_t len = 8ul << 20;
    uct_rkey_t rkey;
    char *dev = (char*)dev_alloc(n * len, &rkey);
    std::vector<uint8_t> src(n * len), back(n * len, 0);
    uct_mem_h smemh = host_reg(src), bmemh = host_reg(back);
    std::vector<comp_t> comps(n);
    int64_t aborted0 = hlsim_counter(HLSIM_COUNTER_CS_ABORTED);
    unsigned i, posted = 0;
    ucs_status_t status;

    fill(src, 31);
    for (i = 0; i < n; ++i) {
        uct_iov_t iov = { src.data() + i * len, len, smemh, 0, 1 };

        comp_init(comps[i]);
        status = uct_ep_put_zcopy(m_ep, &iov, 1, (uintptr_t)dev + i * len,
                                  rkey, &comps[i].uct);
        if (status == UCS_ERR_NO_RESOURCE) {
            break;
        }
        ASSERT_EQ(UCS_INPROGRESS, status);
        ++posted;
    }
    ASSERT_GT(posted, 0u);
    /* kernel backend: the CSs are the copies in flight (SynapseAI's
     * streams are the emulated library's) */
    void *syn = synapse_lib();
    bool kernel = (syn == NULL);
    if (syn != NULL) {
        dlclose(syn);
    }
    if (kernel) {
        EXPECT_GT(hlsim_counter(HLSIM_COUNTER_CS_SUBMITTED) -
                  hlsim_counter(HLSIM_COUNTER_CS_COMPLETED) -
                  hlsim_counter(HLSIM_COUNTER_CS_ABORTED), 0)
            << "no copy in flight at the close";
    }
    uct_ep_destroy(m_ep);
    m_ep = NULL;
    uct_iface_close(m_iface);
    m_iface = NULL;
    if (kernel) {
        EXPECT_EQ(hlsim_counter(HLSIM_COUNTER_CS_SUBMITTED),
                  hlsim_counter(HLSIM_COUNTER_CS_COMPLETED) +
                  hlsim_counter(HLSIM_COUNTER_CS_ABORTED))
            << "the close returned with copies in flight";
        EXPECT_EQ(aborted0, hlsim_counter(HLSIM_COUNTER_CS_ABORTED));
    }

    open_iface();
    uct_iov_t iov = { back.data(), posted * len, bmemh, 0, 1 };
    ASSERT_EQ(UCS_OK, zcopy(false, &iov, 1, (uintptr_t)dev, rkey));
    EXPECT_EQ(0, memcmp(src.data(), back.data(), posted * len));
}

TEST_F(cpy_test, many_outstanding_pending) {
    SKIP_NO_TL();
    const unsigned max_n = 12000, len = 4096;
    uct_rkey_t rkey;
    char *dev = (char*)dev_alloc(max_n * len, &rkey);
    std::vector<uint8_t> src(max_n * len);
    uct_mem_h smemh = host_reg(src);
    std::vector<comp_t> comps(max_n);
    unsigned i, n, posted = 0, no_resource = 0, pend_calls = 0;

    struct pend_t {
        uct_pending_req_t req;
        unsigned          *calls;
    } pend;

    fill(src, 3);
    pend.req.func = [](uct_pending_req_t *self) -> ucs_status_t {
        ++*ucs_container_of(self, pend_t, req)->calls;
        return UCS_OK;
    };
    pend.calls = &pend_calls;

    for (i = 0; i < max_n; ++i) {
        comp_init(comps[i]);
    }
    /* at least 300 copies, and on until the pending path ran twice */
    while ((posted < max_n) && ((posted < 300) || (no_resource < 2))) {
        uct_iov_t iov = { src.data() + posted * len, len, smemh, 0, 1 };
        ucs_status_t status = uct_ep_put_zcopy(m_ep, &iov, 1,
                                               (uintptr_t)dev + posted * len,
                                               rkey, &comps[posted].uct);
        if (status == UCS_ERR_NO_RESOURCE) {
            ++no_resource;
            /* UCP's way: park a request, progress until it is dispatched */
            unsigned before = pend_calls;
            status = uct_ep_pending_add(m_ep, &pend.req, 0);
            if (status == UCS_OK) {
                while (pend_calls == before) {
                    uct_worker_progress(m_worker);
                }
            } else {
                ASSERT_EQ(UCS_ERR_BUSY, status);
            }
            continue;
        }
        ASSERT_EQ(UCS_INPROGRESS, status);
        ++posted;
    }
    n = posted;
    EXPECT_GT(no_resource, 0u);
    EXPECT_GT(pend_calls, 0u);

    /* flush with a completion covers every copy posted before it */
    comp_t fc;
    comp_init(fc);
    ucs_status_t status = uct_ep_flush(m_ep, 0, &fc.uct);
    if (status == UCS_INPROGRESS) {
        wait(fc);
    } else {
        ASSERT_EQ(UCS_OK, status);
    }
    for (i = 0; i < n; ++i) {
        EXPECT_EQ(0u, comps[i].uct.count) << "copy " << i;
        EXPECT_EQ(UCS_OK, comps[i].status);
    }

    std::vector<uint8_t> back(n * len);
    ASSERT_EQ(UCS_OK, uct_ep_get_short(m_ep, back.data(), n * len,
                                       (uintptr_t)dev, rkey));
    EXPECT_EQ(0, memcmp(src.data(), back.data(), n * len));
}

/*
 * Several requests parked at once, each posting its own copy when
 * dispatched (what UCP's rendezvous pipeline does): the one being
 * dispatched must not be refused for the others still queued behind it,
 * or the queue never drains.
 */
TEST_F(cpy_test, pending_queue_drains) {
    SKIP_NO_TL();
    const unsigned n_parked = 8, len = 65536;
    const unsigned max_fill = 20000;
    uct_rkey_t rkey;
    char *dev = (char*)dev_alloc((n_parked + 1) * len, &rkey);
    std::vector<uint8_t> src(n_parked * len), back(n_parked * len, 0);
    uct_mem_h smemh = host_reg(src);
    std::vector<comp_t> fill_comps(max_fill);
    unsigned i, filled = 0;

    struct parked_t {
        uct_pending_req_t req;
        uct_ep_h          ep;
        uct_iov_t         iov;
        uint64_t          raddr;
        uct_rkey_t        rkey;
        comp_t            comp;
        bool              posted;
    };
    std::vector<parked_t> parked(n_parked);

    fill(src, 21);

    /* fill the transport's window with copies to a scratch area */
    for (;;) {
        ASSERT_LT(filled, max_fill) << "window never filled";
        uct_iov_t iov = { src.data(), len, smemh, 0, 1 };
        comp_init(fill_comps[filled]);
        ucs_status_t status = uct_ep_put_zcopy(m_ep, &iov, 1,
                                               (uintptr_t)dev +
                                               n_parked * len,
                                               rkey, &fill_comps[filled].uct);
        if (status == UCS_ERR_NO_RESOURCE) {
            break;
        }
        ASSERT_EQ(UCS_INPROGRESS, status);
        ++filled;
    }

    /* park requests that post their copy from the dispatch */
    for (i = 0; i < n_parked; ++i) {
        parked_t &p = parked[i];
        p.ep       = m_ep;
        p.iov      = { src.data() + i * len, len, smemh, 0, 1 };
        p.raddr    = (uintptr_t)dev + i * len;
        p.rkey     = rkey;
        p.posted   = false;
        p.req.func = [](uct_pending_req_t *self) -> ucs_status_t {
            parked_t *pk = ucs_container_of(self, parked_t, req);
            ucs_status_t st = uct_ep_put_zcopy(pk->ep, &pk->iov, 1, pk->raddr,
                                               pk->rkey, &pk->comp.uct);
            if (st == UCS_INPROGRESS) {
                pk->posted = true;
                return UCS_OK;
            }
            return st;   /* NO_RESOURCE: stays queued */
        };
        comp_init(p.comp);
        ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_ep, &p.req, 0)) << i;
    }

    /* every parked request is dispatched and its copy completes */
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(20);
    bool done;
    do {
        uct_worker_progress(m_worker);
        done = true;
        for (auto &p : parked) {
            done = done && p.posted && (p.comp.uct.count == 0);
        }
        if (ucs_get_time() > deadline) {
            /* the requests live on this stack: take them out first */
            uct_ep_pending_purge(m_ep, NULL, NULL);
            FAIL() << "parked requests not dispatched: the pending queue "
                      "is stuck";
        }
    } while (!done);

    for (i = 0; i < filled; ++i) {
        wait(fill_comps[i]);
    }
    for (auto &p : parked) {
        EXPECT_EQ(UCS_OK, p.comp.status);
    }
    ASSERT_EQ(UCS_OK, uct_ep_get_short(m_ep, back.data(), n_parked * len,
                                       (uintptr_t)dev, rkey));
    EXPECT_EQ(src, back);
}

/* An ep flush with UCT_FLUSH_FLAG_CANCEL flushes what was posted and
 * leaves the ep's parked requests to the owner's purge, which hands them
 * back (never dispatched, never lost) */
TEST_F(cpy_test, flush_cancel_leaves_pending_to_purge) {
    SKIP_NO_TL();
    const unsigned len = 65536, max_fill = 20000;
    uct_rkey_t rkey;
    char *dev = (char*)dev_alloc(len, &rkey);
    std::vector<uint8_t> src(len);
    uct_mem_h smemh = host_reg(src);
    std::vector<comp_t> comps(max_fill);
    unsigned i, filled = 0, dispatched = 0;

    struct parked_t {
        uct_pending_req_t req;
        unsigned          *dispatched;
    } parked;

    for (;;) {
        ASSERT_LT(filled, max_fill) << "window never filled";
        uct_iov_t iov = { src.data(), len, smemh, 0, 1 };
        comp_init(comps[filled]);
        ucs_status_t status = uct_ep_put_zcopy(m_ep, &iov, 1,
                                               (uintptr_t)dev, rkey,
                                               &comps[filled].uct);
        if (status == UCS_ERR_NO_RESOURCE) {
            break;
        }
        ASSERT_EQ(UCS_INPROGRESS, status);
        ++filled;
    }

    parked.dispatched = &dispatched;
    parked.req.func   = [](uct_pending_req_t *self) -> ucs_status_t {
        ++*ucs_container_of(self, parked_t, req)->dispatched;
        return UCS_OK;
    };
    ASSERT_EQ(UCS_OK, uct_ep_pending_add(m_ep, &parked.req, 0));
    /* without CANCEL the flush waits for the parked request */
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_flush(m_ep, 0, NULL));

    comp_t fc;
    comp_init(fc);
    ucs_status_t status = uct_ep_flush(m_ep, UCT_FLUSH_FLAG_CANCEL, &fc.uct);
    unsigned purged     = 0;
    uct_ep_pending_purge(m_ep, [](uct_pending_req_t *self, void *arg) {
        ++*(unsigned*)arg;
    }, &purged);
    EXPECT_EQ(1u, purged) << "the parked request was not handed back";
    if (status == UCS_INPROGRESS) {
        wait(fc);
    } else {
        ASSERT_EQ(UCS_OK, status);
    }
    for (i = 0; i < filled; ++i) {
        wait(comps[i]);
        EXPECT_EQ(UCS_OK, comps[i].status);
    }
    for (i = 0; i < 100; ++i) {
        uct_worker_progress(m_worker);
    }
    EXPECT_EQ(0u, dispatched) << "a cancelled request was dispatched";
}

/* A fence orders a get after an earlier put to the same Gaudi memory */
TEST_F(cpy_test, fence) {
    SKIP_NO_TL();
    uct_rkey_t rkey;
    char *dev = (char*)dev_alloc(8 << 20, &rkey);
    std::vector<uint8_t> src(8 << 20), dst(8 << 20, 0);
    uct_mem_h smemh = host_reg(src), dmemh = host_reg(dst);
    comp_t c1, c2;

    fill(src, 1);
    comp_init(c1);
    comp_init(c2);
    uct_iov_t iov = { src.data(), src.size(), smemh, 0, 1 };
    ucs_status_t status = uct_ep_put_zcopy(m_ep, &iov, 1, (uintptr_t)dev,
                                           rkey, &c1.uct);
    ASSERT_EQ(UCS_INPROGRESS, status);
    ASSERT_EQ(UCS_OK, uct_ep_fence(m_ep, 0));
    iov = { dst.data(), dst.size(), dmemh, 0, 1 };
    status = uct_ep_get_zcopy(m_ep, &iov, 1, (uintptr_t)dev, rkey, &c2.uct);
    ASSERT_EQ(UCS_INPROGRESS, status);
    wait(c1);
    wait(c2);
    EXPECT_EQ(src, dst);
    flush();
}

/* Bad input: clear errors, nothing reaches the device */
TEST_F(cpy_test, bad_input) {
    SKIP_NO_TL();
    uct_rkey_t rkey;
    char *dev = (char*)dev_alloc(1 << 20, &rkey);
    std::vector<uint8_t> buf(4096);
    uct_mem_h memh = host_reg(buf);
    uct_iov_t iov  = { buf.data(), buf.size(), memh, 0, 1 };

    /* remote range outside the rkey's registration */
    EXPECT_NE(UCS_OK, zcopy(true, &iov, 1, (uintptr_t)dev + (1 << 20), rkey));
    /* Gaudi range that is not an allocation: in the heap's chunk of a
     * small buffer, past the buffer. (Beyond the module's chunks, an
     * address of SynapseAI's pool is SynapseAI's memory, which the
     * module takes as the application's: no such hole there.) */
    uct_rkey_t small_rkey;
    uintptr_t hole = (uintptr_t)dev_alloc(64 << 10, &small_rkey) +
                     (512 << 10);
    EXPECT_NE(UCS_OK, uct_ep_put_short(m_ep, buf.data(), 64, hole,
                                       UCT_INVALID_RKEY));
    iov.length = 64;
    EXPECT_NE(UCS_OK, zcopy(true, &iov, 1, hole, UCT_INVALID_RKEY));
    /* longer than max_zcopy */
    iov.length = m_attr.cap.put.max_zcopy + 1;
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT, uct_ep_put_zcopy(m_ep, &iov, 1,
                                                      (uintptr_t)dev, rkey,
                                                      NULL));
    /* an rkey of another device (module id differs, packed rkey v1:
     * u8 version, u8 flags, u16 reserved, u32 module_id @4) */
    std::vector<char> packed(256);
    uct_rkey_bundle_t other;
    uint32_t module_id;
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, m_dev_mem[0].memh,
                                       packed.data()));
    memcpy(&module_id, packed.data() + 4, 4);
    module_id += 1;
    memcpy(packed.data() + 4, &module_id, 4);
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_comp, packed.data(), &other));
    ASSERT_TRUE(gaudi_gtest::hlsim_loaded());
    int64_t submitted = hlsim_counter(HLSIM_COUNTER_CS_SUBMITTED);
    iov.length = 64;
    EXPECT_NE(UCS_OK, zcopy(true, &iov, 1, (uintptr_t)dev, other.rkey));
    EXPECT_NE(UCS_OK, uct_ep_get_short(m_ep, buf.data(), 64, (uintptr_t)dev,
                                       other.rkey));
    /* nothing reached the device */
    EXPECT_EQ(submitted, hlsim_counter(HLSIM_COUNTER_CS_SUBMITTED));
    uct_rkey_release(m_comp, &other);

    /* the iface still works */
    iov.length = buf.size();
    EXPECT_EQ(UCS_OK, zcopy(true, &iov, 1, (uintptr_t)dev, rkey));
}

/*
 * The module's handling of a CS that fails. A CS timeout with
 * reset_on_lockup=1 resets the device and kills the process (gaudi_dma_test
 * fault_*_kills); with reset_on_lockup=0 the driver only marks the CS,
 * which stays in flight, and leaves the device NEEDS_RESET, every ioctl
 * EBUSY until an administrator resets it (K612
 * common/command_submission.c:838-842, 3733-3734): the copy fails with
 * IO_ERROR at the first EBUSY, the following copies at once, said once,
 * instead of waiting for a reset that does not come. The test then plays
 * the administrator (hlsim_admin_reset). A failed CS submission (EIO) fails
 * its operation and the iface goes on.
 */
TEST_F(cpy_test, faults) {
    SKIP_NO_TL();
    uct_rkey_t rkey;
    char *dev = (char*)dev_alloc(1 << 20, &rkey);
    std::vector<uint8_t> buf(65536), back(65536);
    uct_mem_h memh = host_reg(buf);
    uct_iov_t iov  = { buf.data(), buf.size(), memh, 0, 1 };

    ASSERT_TRUE(gaudi_gtest::hlsim_loaded());
    fill(buf, 5);
    setenv("HLSIM_RESET_ON_LOCKUP", "0", 1);
    ASSERT_EQ(0, gaudi_gtest::hlsim_fault_add("cs_timeout", 1, ETIMEDOUT));
    {
        gaudi_gtest::log_capture log(UCS_LOG_LEVEL_ERROR);

        /* the CS stays in flight after its timeout, the device
         * NEEDS_RESET: the copy fails when a poll gets EBUSY */
        EXPECT_EQ(UCS_ERR_IO_ERROR, zcopy(true, &iov, 1, (uintptr_t)dev,
                                          rkey));
        EXPECT_EQ(UCS_ERR_IO_ERROR, uct_ep_put_short(m_ep, buf.data(), 64,
                                                     (uintptr_t)dev, rkey));
        EXPECT_EQ(UCS_ERR_IO_ERROR, zcopy(true, &iov, 1, (uintptr_t)dev,
                                          rkey));
        EXPECT_NE("", log.find({"needs a reset"})) << log.dump();
    }
    unsetenv("HLSIM_RESET_ON_LOCKUP");
    ASSERT_EQ(0, gaudi_gtest::hlsim_admin_reset(0));
    /* a short copy is run again once (UCX 1.13's memory-type copies drop
     * its status): a fault of both runs is an error, of one is not */
    ASSERT_EQ(0, gaudi_gtest::hlsim_fault_add("cs", 1, EIO));
    ASSERT_EQ(0, gaudi_gtest::hlsim_fault_add("cs", 2, EIO));
    EXPECT_EQ(UCS_ERR_IO_ERROR, uct_ep_put_short(m_ep, buf.data(), 64,
                                                 (uintptr_t)dev, rkey));
    ASSERT_EQ(0, gaudi_gtest::hlsim_fault_add("cs", 1, EIO));
    ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep, buf.data(), 64, (uintptr_t)dev,
                                       rkey));
    ASSERT_EQ(UCS_OK, uct_ep_get_short(m_ep, back.data(), 64,
                                       (uintptr_t)dev, rkey));
    EXPECT_TRUE(std::equal(buf.begin(), buf.begin() + 64, back.begin()));
    ASSERT_EQ(0, gaudi_gtest::hlsim_fault_add("cs", 1, EIO));
    ASSERT_EQ(0, gaudi_gtest::hlsim_fault_add("cs", 2, EIO));
    EXPECT_EQ(UCS_ERR_IO_ERROR, uct_ep_get_short(m_ep, back.data(), 64,
                                                 (uintptr_t)dev, rkey));
    /* CS EAGAIN is flow control: NO_RESOURCE, then it goes through */
    ASSERT_EQ(0, gaudi_gtest::hlsim_fault_add("cs", 1, EAGAIN));
    comp_t c;
    comp_init(c);
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_ep_put_zcopy(m_ep, &iov, 1,
                                                    (uintptr_t)dev, rkey,
                                                    &c.uct));
    EXPECT_EQ(UCS_OK, zcopy(true, &iov, 1, (uintptr_t)dev, rkey));
    ASSERT_EQ(UCS_OK, uct_ep_get_short(m_ep, back.data(), back.size(),
                                       (uintptr_t)dev, rkey));
    EXPECT_EQ(buf, back);
    flush();
}

/* SynapseAI backend: a copy the PDMA engine fails completes with an
 * error and the engine recovers (a new stream: the failed one stays
 * failed, as SynapseAI's does); a device reset fails the copies after it */
/*
 * Device errors on the SynapseAI backend do what SynapseAI does with them
 * (docs/synapse.md): its failure handler kills the process by default;
 * with TERMINATE_SYNAPSE_UPON_DFA=0 the copy that met the error fails and
 * the engine goes on; a copy to an unmapped device address is dropped
 * without an error. Each case runs in a fresh process (this test again,
 * GAUDI_CPY_SYN_FAULT saying which case), since SynapseAI holds the one
 * device of the process and the default case kills it.
 */
#define GAUDI_CPY_SYN_FAULT "GAUDI_CPY_SYN_FAULT"

class cpy_syn_fault_test : public cpy_test {
protected:
    void SetUp() override {
        const char *backend = getenv("UCX_GAUDI_COPY_BACKEND");

        if ((backend == NULL) || strcmp(backend, "synapse")) {
            GTEST_SKIP() << "UCX_GAUDI_COPY_BACKEND is not synapse";
        }
        m_case = getenv(GAUDI_CPY_SYN_FAULT);
        if (m_case != NULL) {
            cpy_test::SetUp();  /* the child: a transport of its own */
        }
    }

    void TearDown() override {
        if (m_case != NULL) {
            cpy_test::TearDown();
        }
    }

    /* Run this test in a child, on this node, with @a fault_case and
     * @a dfa set */
    gaudi_gtest::child_result run_case(const char *fault_case,
                                       const char *dfa) {
        gaudi_gtest::env_t env = {{GAUDI_CPY_SYN_FAULT, fault_case}};

        if (dfa != NULL) {
            env["TERMINATE_SYNAPSE_UPON_DFA"] = dfa;
        }
        return gaudi_gtest::run_test_in_child(gaudi_gtest::current_test(),
                                              env, false);
    }

    /* The child's part: the copies of @a fault_case */
    void child_case() {
        SKIP_NO_TL();
        uct_rkey_t rkey;
        char *dev = (char*)dev_alloc(1 << 20, &rkey);
        std::vector<uint8_t> buf(65536), back(65536);
        uct_mem_h memh = host_reg(buf);
        uct_iov_t iov  = { buf.data(), buf.size(), memh, 0, 1 };

        fill(buf, 9);
        /* a good round trip first: the data is really moved */
        ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep, buf.data(), 4096,
                                           (uintptr_t)dev, rkey));
        ASSERT_EQ(UCS_OK, uct_ep_get_short(m_ep, back.data(), 4096,
                                           (uintptr_t)dev, rkey));
        ASSERT_EQ(0, memcmp(buf.data(), back.data(), 4096));

        if (!strcmp(m_case, "page_fault")) {
            /* the MMU drops the copy, no reset: nobody reports it */
            ASSERT_EQ(0, gaudi_gtest::hlsim_fault_add("pdma", 1, EFAULT));
            fill(buf, 10);
            EXPECT_EQ(UCS_OK, zcopy(true, &iov, 1, (uintptr_t)dev, rkey));
            ASSERT_EQ(UCS_OK, uct_ep_get_short(m_ep, back.data(), 4096,
                                               (uintptr_t)dev, rkey));
            EXPECT_NE(0, memcmp(buf.data(), back.data(), 4096));
            return;
        }

        ASSERT_EQ(0, gaudi_gtest::hlsim_fault_add("pdma", 1, EIO));
        if (!strcmp(m_case, "kill_sync")) {
            (void)uct_ep_put_short(m_ep, buf.data(), 64, (uintptr_t)dev,
                                   rkey);
            sleep(30);  /* killed meanwhile: the parent says if not */
            return;
        } else if (!strcmp(m_case, "kill_async")) {
            (void)zcopy(true, &iov, 1, (uintptr_t)dev, rkey);
            sleep(30);
            return;
        }

        /* "disabled": the copy fails, the same engine goes on */
        EXPECT_EQ(UCS_ERR_IO_ERROR, zcopy(true, &iov, 1, (uintptr_t)dev,
                                          rkey));
        fill(buf, 11);
        EXPECT_EQ(UCS_OK, zcopy(true, &iov, 1, (uintptr_t)dev, rkey));
        std::fill(back.begin(), back.end(), 0);
        ASSERT_EQ(UCS_OK, uct_ep_get_short(m_ep, back.data(), back.size(),
                                           (uintptr_t)dev, rkey));
        EXPECT_EQ(buf, back);
        /* a short copy runs once more after a failure, on the same
         * stream, and lands */
        fill(buf, 12);
        ASSERT_EQ(0, gaudi_gtest::hlsim_fault_add("pdma", 1, EIO));
        EXPECT_EQ(UCS_OK, uct_ep_put_short(m_ep, buf.data(), 64,
                                           (uintptr_t)dev, rkey));
        std::fill(back.begin(), back.end(), 0);
        ASSERT_EQ(UCS_OK, uct_ep_get_short(m_ep, back.data(), 64,
                                           (uintptr_t)dev, rkey));
        EXPECT_EQ(0, memcmp(buf.data(), back.data(), 64));
    }

    const char *m_case = NULL;
};

TEST_F(cpy_syn_fault_test, synapse_faults) {
    if (m_case != NULL) {
        child_case();
        return;
    }

    ASSERT_TRUE(gaudi_gtest::hlsim_loaded());
    /* by default SynapseAI's failure handler SIGKILLs the process, for an
     * asynchronous copy and a synchronous one alike */
    for (const char *c : {"kill_async", "kill_sync"}) {
        gaudi_gtest::child_result r = run_case(c, NULL);
        EXPECT_TRUE(WIFSIGNALED(r.status) && (WTERMSIG(r.status) == SIGKILL))
            << c << ": child status 0x" << std::hex << r.status << "\n"
            << r.output;
    }
    /* the handler disabled, and a page fault: the child's own checks */
    for (const char *c : {"disabled", "page_fault"}) {
        gaudi_gtest::child_result r = run_case(c, "0");
        EXPECT_TRUE(r.passed() && !r.skipped)
            << c << ": child status 0x" << std::hex << r.status << "\n"
            << r.output;
    }
}


/*
 * The application's side of SynapseAI (the emulated library the backend
 * loaded): its host buffers, its device memory, its own stream. The ids
 * are 0, the device of the one-device node.
 */
class cpy_app_test : public cpy_test {
protected:
    typedef int (*host_malloc_fn_t)(uint32_t, uint64_t, uint32_t, void**);
    typedef int (*host_free_fn_t)(uint32_t, const void*, uint32_t);
    typedef int (*host_map_fn_t)(uint32_t, uint64_t, const void*);
    typedef int (*host_unmap_fn_t)(uint32_t, const void*);
    typedef int (*dev_malloc_fn_t)(uint32_t, uint64_t, uint64_t, uint32_t,
                                   uint64_t*);
    typedef int (*stream_create_fn_t)(void**, uint32_t, uint32_t);
    typedef int (*stream_fn_t)(void*);
    typedef int (*memcpy_fn_t)(void*, uint64_t, uint64_t, uint64_t, int);
    typedef int (*acquire_fn_t)(uint32_t*, const char*);

    enum { H2D = 0, D2H = 1 };

    void SetUp() override {
        const char *backend = getenv("UCX_GAUDI_COPY_BACKEND");

        cpy_test::SetUp();
        if (m_no_tl || (backend == NULL) || strcmp(backend, "synapse")) {
            GTEST_SKIP() << "not on the SynapseAI backend";
        }
        m_lib = synapse_lib();
        ASSERT_TRUE(m_lib != NULL);
        m_host_malloc = (host_malloc_fn_t)sym("synHostMalloc");
        m_host_free   = (host_free_fn_t)sym("synHostFree");
        m_host_map    = (host_map_fn_t)sym("synHostMap");
        m_host_unmap  = (host_unmap_fn_t)sym("synHostUnmap");
        m_memcpy      = (memcpy_fn_t)sym("synMemCopyAsync");
        m_sync        = (stream_fn_t)sym("synStreamSynchronize");
        /* as a framework does after UCX is up: the application acquires
         * its device; the module borrows it at its first use */
        ASSERT_EQ(0, ((int (*)())sym("synInitialize"))());
        ASSERT_EQ(0, ((acquire_fn_t)sym("synDeviceAcquire"))(&m_app_id,
                                                             NULL));
        m_acquired = true;
        ASSERT_EQ(0, ((dev_malloc_fn_t)sym("synDeviceMalloc"))(
                         0, 1 << 20, 0, 0, &m_app_dev));
        ASSERT_EQ(0, ((stream_create_fn_t)sym("synStreamCreateGeneric"))(
                         &m_stream, 0, 0));
    }

    void TearDown() override {
        if (m_stream != NULL) {
            ((stream_fn_t)sym("synStreamDestroy"))(m_stream);
        }
        if (m_app_dev != 0) {
            ((int (*)(uint32_t, uint64_t, uint32_t))sym("synDeviceFree"))(
                    0, m_app_dev, 0);
        }
        cpy_test::TearDown();
        if (m_acquired) {
            EXPECT_EQ(0, ((int (*)(uint32_t))sym("synDeviceRelease"))(
                             m_app_id));
        }
        if (m_lib != NULL) {
            dlclose(m_lib);
        }
    }

    void *sym(const char *name) {
        void *p = dlsym(m_lib, name);
        EXPECT_TRUE(p != NULL) << name;
        return p;
    }

    /* The application's own round trip of [p, +len) through its device
     * memory and stream: 0 and the data back in place, else the status */
    int app_roundtrip(uint8_t *p, size_t len) {
        std::vector<uint8_t> want(p, p + len);
        int st = m_memcpy(m_stream, (uintptr_t)p, len, m_app_dev, H2D);

        if (st != 0) {
            return st;
        }
        EXPECT_EQ(0, m_sync(m_stream));
        memset(p, 0, len);
        EXPECT_EQ(0, m_memcpy(m_stream, m_app_dev, len, (uintptr_t)p, D2H));
        EXPECT_EQ(0, m_sync(m_stream));
        EXPECT_EQ(0, memcmp(want.data(), p, len)) << "app copy differs";
        return 0;
    }

    /* Register [p, +len), move it to Gaudi memory and back into
     * [back, +len) (registered too) with zcopy and compare; deregister */
    void uct_roundtrip(uint8_t *p, uint8_t *back, size_t len,
                       unsigned seed) {
        uct_rkey_t rkey;
        char *dev = (char*)dev_alloc(len, &rkey);
        uct_mem_h memh, bmemh;
        std::mt19937 gen(seed);

        for (size_t i = 0; i < len; ++i) {
            p[i] = (uint8_t)gen();
        }
        memset(back, 0, len);
        ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, p, len, UCT_MD_MEM_ACCESS_ALL,
                                         &memh));
        ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, back, len,
                                         UCT_MD_MEM_ACCESS_ALL, &bmemh));
        uct_iov_t iov = { p, len, memh, 0, 1 };
        EXPECT_EQ(UCS_OK, zcopy(true, &iov, 1, (uintptr_t)dev, rkey));
        iov = { back, len, bmemh, 0, 1 };
        EXPECT_EQ(UCS_OK, zcopy(false, &iov, 1, (uintptr_t)dev, rkey));
        EXPECT_EQ(0, memcmp(p, back, len)) << "UCX round trip differs";
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, bmemh));
    }

    static bool allocated(const void *p, size_t len) {
        return msync((void*)p, len, MS_ASYNC) == 0;
    }

    void             *m_lib       = NULL;
    void             *m_stream    = NULL;
    uint64_t         m_app_dev    = 0;
    uint32_t         m_app_id     = 0;
    bool             m_acquired   = false;
    host_malloc_fn_t m_host_malloc;
    host_free_fn_t   m_host_free;
    host_map_fn_t    m_host_map;
    host_unmap_fn_t  m_host_unmap;
    memcpy_fn_t      m_memcpy;
    stream_fn_t      m_sync;
};

/* Pinned memory from synHostMalloc (PyTorch's pinned allocator): used
 * through its own entry, and still the application's after UCX is done */
TEST_F(cpy_app_test, host_malloc_kept)
{
    const size_t size = 4 * 65536;
    uint8_t *p = NULL;

    ASSERT_EQ(0, m_host_malloc(0, size, 0, (void**)&p));
    uct_roundtrip(p, p + size / 2, size / 2, 1);
    uct_roundtrip(p + 4096, p + size / 2 + 100, 65536, 2);
    EXPECT_TRUE(allocated(p, size)) << "synHostMalloc buffer freed";
    p[size - 1] = 7;
    EXPECT_EQ(0, app_roundtrip(p, size)) << "application's entry gone";
    EXPECT_EQ(0, m_host_free(0, p, 0));
}

/* A buffer the application synHostMap'ed: the same */
TEST_F(cpy_app_test, host_map_kept)
{
    const size_t size = 4 * 65536;
    void *buf = NULL;

    ASSERT_EQ(0, posix_memalign(&buf, 4096, size));
    uint8_t *p = (uint8_t*)buf;
    ASSERT_EQ(0, m_host_map(0, size, p));
    uct_roundtrip(p, p + size / 2, size / 2, 3);
    uct_roundtrip(p + 8192 + 5, p + size / 2 + 64, 30000, 4);
    EXPECT_EQ(0, app_roundtrip(p, size)) << "application's entry gone";
    EXPECT_EQ(0, m_host_unmap(0, p));
    free(buf);
}

/* The application unmaps its buffer while UCX still has it registered:
 * UCX's copies of it, still allocated, are staged and move the data; once
 * the buffer is gone too (synHostUnmap of a synHostMalloc buffer frees
 * it), they fail cleanly, nothing crashes */
TEST_F(cpy_app_test, app_unmaps_registered)
{
    const size_t size = 2 * 65536;
    uct_rkey_t rkey;
    char *dev = (char*)dev_alloc(size, &rkey);
    std::vector<uint8_t> want(size);
    void *buf = NULL;
    uint8_t *p = NULL;
    uct_mem_h memh;

    ASSERT_EQ(0, posix_memalign(&buf, 4096, size));
    ASSERT_EQ(0, m_host_map(0, size, buf));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf, size, UCT_MD_MEM_ACCESS_ALL,
                                     &memh));
    uct_iov_t iov = { buf, size, memh, 0, 1 };
    EXPECT_EQ(UCS_OK, zcopy(true, &iov, 1, (uintptr_t)dev, rkey));
    ASSERT_EQ(0, m_host_unmap(0, buf));
    for (size_t i = 0; i < size; ++i) {
        want[i] = (uint8_t)(i * 7 + 3);
    }
    memcpy(buf, want.data(), size);
    EXPECT_EQ(UCS_OK, zcopy(true, &iov, 1, (uintptr_t)dev, rkey));
    memset(buf, 0, size);
    EXPECT_EQ(UCS_OK, zcopy(false, &iov, 1, (uintptr_t)dev, rkey));
    EXPECT_EQ(0, memcmp(want.data(), buf, size)) << "staged after unmap";
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    free(buf);

    ASSERT_EQ(0, m_host_malloc(0, size, 0, (void**)&p));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, p, size, UCT_MD_MEM_ACCESS_ALL,
                                     &memh));
    ASSERT_EQ(0, m_host_unmap(0, p));        /* frees it too */
    EXPECT_FALSE(allocated(p, size));
    iov = { p, size, memh, 0, 1 };
    {
        gaudi_gtest::log_capture log(UCS_LOG_LEVEL_ERROR);
        EXPECT_EQ(UCS_ERR_INVALID_ADDR,
                  zcopy(false, &iov, 1, (uintptr_t)dev, rkey));
        EXPECT_NE("", log.find({"GAUDI_0", "get_zcopy", "not mapped in the "
                                "process"})) << log.dump();
    }
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
}

/* A host range no entry holds is staged (the module maps nothing), and
 * its next copies skip the failing call; once the application maps it, a
 * direct copy is tried again within 64 copies and stays: zero copy. The
 * emulated libSynapse counts synMemCopyAsync: a staged copy of 1 MiB is
 * four through the 256 KiB bounce buffer, a direct one is one */
TEST_F(cpy_app_test, staged_until_app_maps)
{
    const size_t size = 1 << 20;
    typedef unsigned long (*count_fn_t)(int);
    count_fn_t count = (count_fn_t)sym("synsim_count");
    const int copies = 0;   /* synsim_count_t */
    uct_rkey_t rkey;
    char *dev = (char*)dev_alloc(size, &rkey);
    std::vector<uint8_t> want(size);
    void *buf = NULL;
    uct_mem_h memh;

    ASSERT_TRUE(count != NULL);
    ASSERT_EQ(0, posix_memalign(&buf, 4096, size));
    uint8_t *p = (uint8_t*)buf;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, p, size, UCT_MD_MEM_ACCESS_ALL,
                                     &memh));
    uct_iov_t iov = { p, size, memh, 0, 1 };
    /* copies of one put of [p, +size), then its data read back */
    auto put = [&](unsigned seed) {
        for (size_t i = 0; i < size; ++i) {
            want[i] = (uint8_t)(i * seed + seed);
        }
        memcpy(p, want.data(), size);
        unsigned long c0 = count(copies);
        EXPECT_EQ(UCS_OK, zcopy(true, &iov, 1, (uintptr_t)dev, rkey));
        unsigned long n = count(copies) - c0;
        memset(p, 0, size);
        EXPECT_EQ(UCS_OK, zcopy(false, &iov, 1, (uintptr_t)dev, rkey));
        EXPECT_EQ(0, memcmp(want.data(), p, size)) << "seed " << seed;
        return n;
    };

    EXPECT_EQ(4u, put(1)) << "not staged";
    EXPECT_EQ(4u, put(2)) << "not staged";
    ASSERT_EQ(0, m_host_map(0, size, p));
    unsigned rounds = 0;
    while ((put(3 + rounds) != 1) && (++rounds < 70)) {
    }
    EXPECT_LT(rounds, 70u) << "never direct after the application's map";
    EXPECT_EQ(1u, put(100)) << "staged again";
    EXPECT_EQ(0, app_roundtrip(p, size)) << "application's entry gone";
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    EXPECT_EQ(0, m_host_unmap(0, p));
    free(buf);
}

/* Ordinary memory: registrations that share pages, overlap, and start
 * inside one another all work, with the data checked; once all are gone
 * the module has left no entry behind */
TEST_F(cpy_app_test, neighbours_and_overlaps)
{
    const size_t size = 8 * 4096;
    uct_rkey_t rkey;
    char *dev = (char*)dev_alloc(size, &rkey);
    void *buf = NULL;
    std::vector<uint8_t> back(size);
    uct_mem_h memh[5], bmemh;
    const struct { size_t off, len; } reg[5] = {
        {100, 1000}, {2000, 3000}, {0, 3 * 4096}, {4096 + 10, 100},
        {5 * 4096 - 7, 2 * 4096}
    };

    ASSERT_EQ(0, posix_memalign(&buf, 4096, size));
    uint8_t *p = (uint8_t*)buf;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, back.data(), size,
                                     UCT_MD_MEM_ACCESS_ALL, &bmemh));
    for (int i = 0; i < 5; ++i) {
        ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, p + reg[i].off, reg[i].len,
                                         UCT_MD_MEM_ACCESS_ALL, &memh[i]))
            << i;
    }
    for (int round = 0; round < 2; ++round) {
        for (int i = 0; i < 5; ++i) {
            std::mt19937 gen(i + 10 * round);
            for (size_t j = 0; j < reg[i].len; ++j) {
                p[reg[i].off + j] = (uint8_t)gen();
            }
            /* the whole range and a piece from its middle to its end */
            uct_iov_t iov = { p + reg[i].off, reg[i].len, memh[i], 0, 1 };
            ASSERT_EQ(UCS_OK, zcopy(true, &iov, 1, (uintptr_t)dev, rkey))
                << i;
            size_t mid = reg[i].len / 2;
            iov = { p + reg[i].off + mid, reg[i].len - mid, memh[i], 0, 1 };
            ASSERT_EQ(UCS_OK, zcopy(true, &iov, 1, (uintptr_t)dev + mid,
                                    rkey)) << i;
            iov = { back.data(), reg[i].len, bmemh, 0, 1 };
            ASSERT_EQ(UCS_OK, zcopy(false, &iov, 1, (uintptr_t)dev, rkey))
                << i;
            ASSERT_EQ(0, memcmp(p + reg[i].off, back.data(), reg[i].len))
                << "registration " << i << " round " << round;
        }
    }
    for (int i : {1, 3, 0, 4, 2}) {
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh[i]));
    }
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, bmemh));
    /* the registration cache may keep regions: drop them with the MD */
    for (auto &h : m_host_regs) {
        uct_md_mem_dereg(m_md, h);
    }
    m_host_regs.clear();
    EXPECT_EQ(34, m_memcpy(m_stream, (uintptr_t)p, 1, m_app_dev, H2D))
        << "an entry of the module over the buffer survived";
    free(buf);
}

/* Completions that record the order they come in */
struct ordered_comp_t {
    uct_completion_t uct;
    ucs_status_t     status;
    int              order;
    int              *next;
};

static void ordered_comp_cb(uct_completion_t *self)
{
    ordered_comp_t *c = ucs_container_of(self, ordered_comp_t, uct);

    c->status = self->status;
    c->order  = (*c->next)++;
}

static void ordered_comp_init(ordered_comp_t &c, int *next)
{
    c.uct.func   = ordered_comp_cb;
    c.uct.count  = 1;
    c.uct.status = UCS_OK;
    c.status     = UCS_ERR_LAST;
    c.order      = -1;
    c.next       = next;
}

/* Post put_zcopy @a i of @a len bytes from @a src to @a dev */
#define BATCH_PUT(_src, _memh, _dev, _rkey, _i, _len, _comp) \
    do { \
        uct_iov_t _iov = { (_src) + (_i) * (_len), (_len), (_memh), 0, 1 }; \
        ASSERT_EQ(UCS_INPROGRESS, \
                  uct_ep_put_zcopy(m_ep, &_iov, 1, \
                                   (uintptr_t)(_dev) + (_i) * (_len), \
                                   (_rkey), &(_comp).uct)) << (_i); \
    } while (0)

/* The batching tests that count what the backend was asked to do */
class cpy_batch_test : public cpy_test {
protected:
    /*
     * Post @a n put_zcopy of @a len bytes at once and flush; each must
     * complete, in posting order. @a counted runs then, before the data is
     * read back (a synchronous copy, counted by the backend too) and
     * compared.
     */
    void post_flush_check(unsigned n, unsigned len, unsigned seed,
                          const std::function<void()> &counted) {
        uct_rkey_t rkey;
        char *dev = (char*)dev_alloc(n * len, &rkey);
        std::vector<uint8_t> src(n * len), back(n * len, 0);
        uct_mem_h smemh = host_reg(src);
        std::vector<ordered_comp_t> comps(n);
        int next = 0;
        unsigned i;

        fill(src, seed);
        for (i = 0; i < n; ++i) {
            ordered_comp_init(comps[i], &next);
            BATCH_PUT(src.data(), smemh, dev, rkey, i, len, comps[i]);
        }
        flush();
        for (i = 0; i < n; ++i) {
            EXPECT_EQ(UCS_OK, comps[i].status) << i;
            EXPECT_EQ((int)i, comps[i].order) << "completed out of order";
        }
        counted();
        ASSERT_EQ(UCS_OK, uct_ep_get_short(m_ep, back.data(), n * len,
                                           (uintptr_t)dev, rkey));
        EXPECT_EQ(src, back);
    }
};

/*
 * Copies posted while the engine is busy share a command submission
 * (MAX_BATCH, default 32): the first goes alone, the next 32 as one CS,
 * the rest as another. Each completes on its own, in posting order. The
 * copies are small enough (4 KiB) for 32 to stay under BATCH_BYTES.
 * 64 KiB copies go 8 to a CS (512 KiB, the kernel backend's default).
 */
TEST_F(cpy_batch_test, batch_completes_in_order) {
    SKIP_NO_TL();
    int64_t cs0 = hlsim_counter(HLSIM_COUNTER_CS_SUBMITTED);

    post_flush_check(40, 4096, 11, [&]() {
        EXPECT_EQ(3, hlsim_counter(HLSIM_COUNTER_CS_SUBMITTED) - cs0)
            << "1 + 32 + 7 copies in 3 submissions";
    });
    void *syn = synapse_lib();
    if (syn != NULL) {
        dlclose(syn);
        return;   /* one event per batch, whatever its bytes */
    }
    cs0 = hlsim_counter(HLSIM_COUNTER_CS_SUBMITTED);
    post_flush_check(40, 65536, 11, [&]() {
        EXPECT_EQ(6, hlsim_counter(HLSIM_COUNTER_CS_SUBMITTED) - cs0)
            << "1 + 4 x 8 + 7 copies in 6 submissions";
    });
}

/*
 * A batch that fails fails each of its copies, and only those: on the
 * device (CS timeout without reset) and at its submission (the CS ioctl
 * refused). The copy before it and the ones after it succeed.
 */
TEST_F(cpy_batch_test, batch_fault_fails_its_copies) {
    SKIP_NO_TL();
    const unsigned n = 6, len = 65536;
    uct_rkey_t rkey;
    char *dev = (char*)dev_alloc(n * len, &rkey);
    std::vector<uint8_t> src(n * len);
    uct_mem_h smemh = host_reg(src);
    std::vector<ordered_comp_t> comps(n);
    int next;
    unsigned i, round;

    ASSERT_TRUE(gaudi_gtest::hlsim_loaded());
    fill(src, 12);
    setenv("HLSIM_RESET_ON_LOCKUP", "0", 1);
    for (round = 0; round < 2; ++round) {
        /* the first copy is a CS of its own, the others queue behind it
         * and are the second CS */
        if (round == 0) {
            ASSERT_EQ(0, gaudi_gtest::hlsim_fault_add("cs_timeout", 2,
                                                      ETIMEDOUT));
        } else {
            ASSERT_EQ(0, gaudi_gtest::hlsim_fault_add("cs", 2, ENOMEM));
        }
        next = 0;
        for (i = 0; i < n; ++i) {
            ordered_comp_init(comps[i], &next);
            BATCH_PUT(src.data(), smemh, dev, rkey, i, len, comps[i]);
        }
        flush();
        EXPECT_EQ(UCS_OK, comps[0].status) << "round " << round;
        for (i = 0; i < n; ++i) {
            EXPECT_EQ((int)i, comps[i].order) << "round " << round;
            if (i > 0) {
                EXPECT_EQ((round == 0) ? UCS_ERR_IO_ERROR :
                          UCS_ERR_NO_MEMORY, comps[i].status)
                    << "round " << round << " copy " << i;
            }
        }
        if (round == 0) {
            /* the timeout left the device NEEDS_RESET (cpy_test.faults):
             * the administrator's reset, by hand */
            ASSERT_EQ(0, gaudi_gtest::hlsim_admin_reset(0));
        }
    }
    unsetenv("HLSIM_RESET_ON_LOCKUP");

    /* the iface goes on: a batch after the faults succeeds */
    post_flush_check(n, len, 12, []() {});
}

/* A flush completes after every copy of a queued batch; a fence makes a
 * get wait for the queued puts before it */
TEST_F(cpy_test, batch_flush_fence) {
    SKIP_NO_TL();
    const unsigned n = 20, len = 65536;
    uct_rkey_t rkey;
    char *dev = (char*)dev_alloc(n * len, &rkey);
    std::vector<uint8_t> src(n * len), src2(n * len), dst(n * len, 0);
    uct_mem_h smemh = host_reg(src), s2memh = host_reg(src2);
    uct_mem_h dmemh = host_reg(dst);
    std::vector<ordered_comp_t> comps(n);
    ordered_comp_t fc, gc;
    int next = 0;
    unsigned i;

    fill(src, 13);
    fill(src2, 14);
    for (i = 0; i < n; ++i) {
        ordered_comp_init(comps[i], &next);
        BATCH_PUT(src.data(), smemh, dev, rkey, i, len, comps[i]);
    }
    ordered_comp_init(fc, &next);
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_flush(m_ep, 0, &fc.uct));
    while (fc.uct.count > 0) {
        uct_worker_progress(m_worker);
    }
    EXPECT_EQ((int)n, fc.order) << "the flush completed before its copies";
    for (i = 0; i < n; ++i) {
        EXPECT_EQ((int)i, comps[i].order);
    }

    /* overwrite by queued puts, fence, read back in one get */
    for (i = 0; i < n; ++i) {
        ordered_comp_init(comps[i], &next);
        BATCH_PUT(src2.data(), s2memh, dev, rkey, i, len, comps[i]);
    }
    ASSERT_EQ(UCS_OK, uct_ep_fence(m_ep, 0));
    ordered_comp_init(gc, &next);
    uct_iov_t iov = { dst.data(), dst.size(), dmemh, 0, 1 };
    ASSERT_EQ(UCS_INPROGRESS, uct_ep_get_zcopy(m_ep, &iov, 1, (uintptr_t)dev,
                                               rkey, &gc.uct));
    flush();
    EXPECT_EQ(UCS_OK, gc.status);
    EXPECT_EQ(src2, dst) << "the get overtook the puts before the fence";
}

/*
 * The same batching on the SynapseAI backend: a batch is one
 * synEventRecord after one synMemCopyAsync per copy (counted by the
 * emulated libSynapse), so 40 copies posted at once cost 3 events. Skipped
 * on the kernel backend (batch_completes_in_order counts its CS).
 */
TEST_F(cpy_batch_test, synapse_one_event_per_batch) {
    SKIP_NO_TL();
    void *syn = synapse_lib();
    if (syn == NULL) {
        GTEST_SKIP() << "the SynapseAI backend is not in use";
    }
    typedef unsigned long (*count_fn_t)(int);
    count_fn_t count = (count_fn_t)dlsym(syn, "synsim_count");
    ASSERT_NE(nullptr, count) << "not the emulated libSynapse";
    const int copies = 0, events = 1;  /* synsim_count_t */
    unsigned long c0 = count(copies), e0 = count(events);

    post_flush_check(40, 65536, 12, [&]() {
        EXPECT_EQ(40u, count(copies) - c0) << "one synMemCopyAsync per copy";
        EXPECT_EQ(3u, count(events) - e0)
            << "1 + 32 + 7 copies under 3 events";
    });
    dlclose(syn);
}

/* gaudi_cpy with UCX_GAUDI_COPY_DMA_QUEUES=1 */
class cpy_one_queue_test : public cpy_batch_test {
protected:
    void SetUp() override {
        setenv("UCX_GAUDI_COPY_DMA_QUEUES", "1", 1);
        cpy_batch_test::SetUp();
        unsetenv("UCX_GAUDI_COPY_DMA_QUEUES");
    }
};

/*
 * DMA_QUEUES=1: every submission runs on one queue, one job (the emulator
 * counts jobs; with the default two a lone 1 MiB copy is split in two).
 */
TEST_F(cpy_one_queue_test, dma_queues) {
    SKIP_NO_TL();
    void *syn = synapse_lib();
    if (syn != NULL) {
        dlclose(syn);
        GTEST_SKIP() << "the SynapseAI backend has no DMA queues to choose";
    }
    int64_t cs0   = hlsim_counter(HLSIM_COUNTER_CS_SUBMITTED);
    int64_t jobs0 = hlsim_counter(HLSIM_COUNTER_JOBS);

    post_flush_check(8, 1 << 20, 13, [&]() {
        int64_t cs = hlsim_counter(HLSIM_COUNTER_CS_SUBMITTED) - cs0;

        EXPECT_GE(cs, 2) << "the first alone, then a batch";
        EXPECT_EQ(cs, hlsim_counter(HLSIM_COUNTER_JOBS) - jobs0)
            << "one queue, one job per submission";
    });
}

int main(int argc, char **argv)
{
    ::testing::InitGoogleTest(&argc, argv);
    if (dlopen(GAUDI_CPY_TEST_MODULE, RTLD_NOW | RTLD_GLOBAL) == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", GAUDI_CPY_TEST_MODULE, dlerror());
        return 1;
    }
    return RUN_ALL_TESTS();
}

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The context table under threads (src/uct/gaudi/dev/gaudi_ctx.c): a take
 * of one device that stalls inside the emulated SynapseAI's acquire
 * (test/emu/synsim waits out a device reset inside synDeviceAcquire, as
 * SynapseAI does) while a progress thread copies on another device and an
 * application thread gets and puts that device's context, NIXL's pattern;
 * a second thread taking the stalled device waits for that device only,
 * and gets it, or a bounded UCS_ERR_TIMED_OUT. Each test runs in a fresh
 * process on its own emulated node (common/gaudi_unit.h).
 *
 * Landing in SynapseAI's wait: the module reads the device's status before
 * each acquire and waits out a reset itself (docs/synapse.md); SynapseAI's
 * own wait is entered when a reset starts between that read and the
 * acquire. The tests open that window deterministically: the module's
 * status read fails once (an emulated failed open of the control node, so
 * it cannot tell) while the device is in reset.
 */

#include "common/gaudi_unit.h"

extern "C" {
#include <uct/gaudi/dev/gaudi_process.h>
#include <uct/gaudi/dma/gaudi_dma.h>
#include <ucs/debug/assert.h>
#include <ucs/time/time.h>
}

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


namespace {

const char *syn_lib()
{
    const char *lib = getenv("SYNSIM_LIB");

    return (lib != NULL) ? lib : GAUDI_CTX_TEST_SYN_LIB;
}

double now_sec()
{
    return ucs_time_to_sec(ucs_get_time());
}

const size_t COPY_SIZE = 256 * 1024;

/* Copies on device 1 from a progress thread, and gets and puts of its
 * context from an application thread, while the test stalls device 0 */
class ctx_threads {
public:
    explicit ctx_threads(uct_gaudi_ctx_t *ctx) : m_ctx(ctx) {}

    /* Engine and device memory on the context, then both threads */
    void start()
    {
        uct_gaudi_dma_params_t params;

        uct_gaudi_dma_params_default(m_ctx, &params);
        ASSERT_EQ(UCS_OK, uct_gaudi_dma_create(m_ctx, &params, &m_dma));
        ASSERT_EQ(UCS_OK, uct_gaudi_hl_mem_alloc(&m_ctx->hl, COPY_SIZE, 0,
                                                 &m_handle));
        ASSERT_EQ(UCS_OK, uct_gaudi_hl_mem_map_device(&m_ctx->hl, m_handle,
                                                      0, &m_va));
        m_progress = std::thread(&ctx_threads::progress_main, this);
        m_app      = std::thread(&ctx_threads::app_main, this);
    }

    void stop()
    {
        m_stop = true;
        if (m_progress.joinable()) {
            m_progress.join();
        }
        if (m_app.joinable()) {
            m_app.join();
        }
        if (m_va != 0) {
            EXPECT_EQ(UCS_OK, uct_gaudi_hl_mem_unmap(&m_ctx->hl, m_va));
            EXPECT_EQ(UCS_OK, uct_gaudi_hl_mem_free(&m_ctx->hl, m_handle));
        }
        if (m_dma != NULL) {
            uct_gaudi_dma_destroy(m_dma);
        }
    }

    /* Copies verified, and the app thread's gets and puts, that ended
     * within [from, to] */
    void count(double from, double to, unsigned *copies,
               unsigned *gets) const
    {
        std::lock_guard<std::mutex> guard(m_lock);

        *copies = 0;
        *gets   = 0;
        for (double t : m_copy_done) {
            *copies += (t >= from) && (t <= to);
        }
        for (double t : m_get_done) {
            *gets += (t >= from) && (t <= to);
        }
    }

    unsigned bad_copies() const { return m_bad; }
    double longest_get() const { return m_longest_get; }

private:
    void record(std::vector<double> &times)
    {
        std::lock_guard<std::mutex> guard(m_lock);

        times.push_back(now_sec());
    }

    /* The progress thread: a get and put of the context (a lazily taken
     * device), then host -> device -> host, compared */
    void progress_main()
    {
        std::vector<uint8_t> src(COPY_SIZE), dst(COPY_SIZE);
        uct_gaudi_dma_end_t h_src = { src.data(), 0 };
        uct_gaudi_dma_end_t h_dst = { dst.data(), 0 };
        uct_gaudi_dma_end_t dev   = { NULL, m_va };
        uct_gaudi_ctx_t *ctx;

        for (unsigned round = 0; !m_stop; ++round) {
            for (size_t i = 0; i < src.size(); ++i) {
                src[i] = (uint8_t)(i * 7 + round * 13 + (i >> 9));
            }
            memset(dst.data(), 0, dst.size());
            if ((uct_gaudi_ctx_get(1, &ctx) != UCS_OK) || (ctx != m_ctx)) {
                ++m_bad;
                return;
            }
            uct_gaudi_ctx_put(ctx);
            if ((uct_gaudi_dma_copy_sync(m_dma, &dev, &h_src, COPY_SIZE,
                                         "h2d") != UCS_OK) ||
                (uct_gaudi_dma_copy_sync(m_dma, &h_dst, &dev, COPY_SIZE,
                                         "d2h") != UCS_OK) ||
                (src != dst)) {
                ++m_bad;
                return;
            }
            record(m_copy_done);
            usleep(2000);
        }
    }

    /* The application thread: a get and put of the context, as an MD or
     * iface open and close does */
    void app_main()
    {
        uct_gaudi_ctx_t *ctx;
        double start, took;

        while (!m_stop) {
            start = now_sec();
            if ((uct_gaudi_ctx_get(1, &ctx) != UCS_OK) || (ctx != m_ctx)) {
                ++m_bad;
                return;
            }
            uct_gaudi_ctx_put(ctx);
            took          = now_sec() - start;
            m_longest_get = std::max(m_longest_get.load(), took);
            record(m_get_done);
            usleep(2000);
        }
    }

    uct_gaudi_ctx_t     *m_ctx;
    uct_gaudi_dma_t     *m_dma    = NULL;
    uint64_t            m_handle  = 0;
    uint64_t            m_va      = 0;
    std::thread         m_progress, m_app;
    std::atomic<bool>   m_stop{false};
    std::atomic<unsigned> m_bad{0};
    mutable std::mutex  m_lock;               /* the two lists */
    std::vector<double> m_copy_done, m_get_done;
    std::atomic<double> m_longest_get{0};
};

/* A thread's take of device 0, timed */
struct take {
    std::thread      thread;
    uct_gaudi_ctx_t  *ctx    = NULL;
    ucs_status_t     status  = UCS_ERR_LAST;
    double           start   = 0;
    double           end     = 0;
    std::atomic<int> started{0};

    void run()
    {
        thread = std::thread([this]() {
            start   = now_sec();
            started = 1;
            status  = uct_gaudi_ctx_get(0, &ctx);
            end     = now_sec();
        });
    }
};

const unsigned RESET_MS = 3000;

class gaudi_ctx_threads : public ::testing::Test {
protected:
    /* Device 1 taken (kernel backend), SynapseAI loaded by the
     * "application", device 0 put in reset and the module's status read of
     * it blinded once: a take of device 0 stalls inside synDeviceAcquire
     * for about RESET_MS */
    void setup(bool synapse = true, unsigned reset_ms = RESET_MS)
    {
        m_fds = gaudi_unit::count_fds();
        ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(1, &m_ctx1));
        ASSERT_EQ(UCT_GAUDI_BACKEND_KERNEL, m_ctx1->backend);
        if (synapse) {
            m_app = dlopen(syn_lib(), RTLD_NOW | RTLD_GLOBAL);
            ASSERT_NE(nullptr, m_app) << dlerror();
        }
        m_threads = new ctx_threads(m_ctx1);
        m_threads->start();
        usleep(100000);   /* both threads at work */
        if (reset_ms > 0) {
            ASSERT_EQ(0, gaudi_unit::hlsim_reset_device(0, reset_ms));
        } else {   /* until the test sets it back */
            ASSERT_EQ(0, gaudi_unit::hlsim_set_device_status(0,
                                      GAUDI_HL_DEVICE_STATUS_IN_RESET));
        }
        if (synapse) {
            ASSERT_EQ(0, gaudi_unit::hlsim_fault_add("open", 1, EIO));
        }
    }

    void TearDown() override
    {
        if (m_threads != NULL) {
            m_threads->stop();
            EXPECT_EQ(0u, m_threads->bad_copies())
                << "a copy on device 1 failed or read back wrong data";
            delete m_threads;
        }
        if (m_ctx1 != NULL) {
            uct_gaudi_ctx_put(m_ctx1);
        }
        if (m_app != NULL) {
            dlclose(m_app);
        }
        if (m_fds >= 0) {
            EXPECT_EQ(m_fds, gaudi_unit::count_fds());
        }
    }

    /* While @a b was inside its take, device 1 kept going: copies
     * completed with correct data, gets and puts were not held up */
    void expect_device1_went_on(const take &b)
    {
        unsigned copies, gets;

        m_threads->count(b.start + 0.2, b.end - 0.2, &copies, &gets);
        EXPECT_GE(copies, 10u) << "copies on device 1 stopped while device "
                                  "0 was taken";
        EXPECT_GE(gets, 10u) << "gets of device 1 stopped while device 0 "
                                "was taken";
        EXPECT_LT(m_threads->longest_get(), 0.5)
            << "a get of device 1 waited for device 0's take";
    }

    int             m_fds     = -1;
    uct_gaudi_ctx_t *m_ctx1   = NULL;
    void            *m_app    = NULL;
    ctx_threads     *m_threads = NULL;
};

} // namespace


/* A take stalled in SynapseAI's acquire: device 1's copies and gets go on;
 * a second take of device 0 waits for that device and gets its context */
TEST_F(gaudi_ctx_threads, stalled_take_blocks_only_its_device)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "2"}, {"HLSIM_ASIC", "gaudi2"}});
    take b, c;

    setup();
    b.run();
    while (!b.started) {
        usleep(1000);
    }
    usleep(300000);   /* b is inside SynapseAI's wait */
    c.run();
    b.thread.join();
    c.thread.join();

    ASSERT_EQ(UCS_OK, b.status);
    EXPECT_GE(b.end - b.start, RESET_MS / 1000.0 * 0.8)
        << "the take did not wait inside SynapseAI's acquire";
    EXPECT_EQ(UCT_GAUDI_BACKEND_SYNAPSE, b.ctx->backend);
    EXPECT_EQ(1, b.ctx->syn_acquired);
    ASSERT_EQ(UCS_OK, c.status);
    EXPECT_EQ(b.ctx, c.ctx) << "one context per device";
    EXPECT_GE(c.end + 0.05, b.end) << "the second take did not wait";
    expect_device1_went_on(b);

    uct_gaudi_ctx_put(c.ctx);
    uct_gaudi_ctx_put(b.ctx);
}

/* The second take's wait is bounded: UCX_GAUDI_OPEN_TIMEOUT and 1 s, then
 * UCS_ERR_TIMED_OUT naming the device; the first take still succeeds */
TEST_F(gaudi_ctx_threads, same_device_wait_is_bounded)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "2"}, {"HLSIM_ASIC", "gaudi2"},
                      {"UCX_GAUDI_OPEN_TIMEOUT", "0.5s"}});
    take b, c;

    setup();
    b.run();
    while (!b.started) {
        usleep(1000);
    }
    usleep(300000);
    {
        gaudi_unit::log_capture log;

        c.run();
        c.thread.join();
        EXPECT_EQ(UCS_ERR_TIMED_OUT, c.status);
        EXPECT_NE("", log.find({"GAUDI_0", "another thread", "taking",
                                "1.5 s"}))
            << log.dump();
    }
    EXPECT_GE(c.end - c.start, 1.3);
    EXPECT_LE(c.end - c.start, 2.5);
    b.thread.join();
    EXPECT_LT(c.end, b.end) << "the bound did not end the wait";
    ASSERT_EQ(UCS_OK, b.status);
    EXPECT_EQ(UCT_GAUDI_BACKEND_SYNAPSE, b.ctx->backend);
    expect_device1_went_on(b);
    uct_gaudi_ctx_put(b.ctx);
}

/* The taker fails (the kernel backend's open gives up on a device still in
 * reset after UCX_GAUDI_OPEN_TIMEOUT): its waiter wakes, takes the device
 * itself and gets it, the reset being over by then */
TEST_F(gaudi_ctx_threads, failed_take_lets_the_waiter_retry)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "2"}, {"HLSIM_ASIC", "gaudi2"},
                      {"UCX_GAUDI_OPEN_TIMEOUT", "2s"}});
    take b, c;

    setup(false, 0);
    {
        gaudi_unit::log_capture log;

        b.run();
        while (!b.started) {
            usleep(1000);
        }
        usleep(300000);
        c.run();
        b.thread.join();
        ASSERT_EQ(0, gaudi_unit::hlsim_set_device_status(0,
                                  GAUDI_HL_DEVICE_STATUS_OPERATIONAL));
        c.thread.join();
        EXPECT_EQ(UCS_ERR_NO_RESOURCE, b.status);
        EXPECT_NE("", log.find({"GAUDI_0", "still in reset"})) << log.dump();
    }
    if (b.status == UCS_OK) {
        uct_gaudi_ctx_put(b.ctx);
    }
    ASSERT_EQ(UCS_OK, c.status) << ucs_status_string(c.status);
    EXPECT_EQ(UCT_GAUDI_BACKEND_KERNEL, c.ctx->backend);
    EXPECT_GT(c.end, b.end) << "the waiter did not wait for the taker";
    expect_device1_went_on(b);
    uct_gaudi_ctx_put(c.ctx);
}

/* The check before every call that can sleep (dev/gaudi_process.h): with
 * one of the process-wide locks held it logs an error, and a build with
 * assertions (the test builds) aborts; with none held it is silent */
TEST(gaudi_ctx_locks, may_sleep_check)
{
    gaudi_unit::log_capture log;

    uct_gaudi_process_may_sleep();
    EXPECT_EQ(0u, log.count(UCS_LOG_LEVEL_ERROR)) << log.dump();
    if (UCS_ENABLE_ASSERT) {
        ::testing::FLAGS_gtest_death_test_style = "threadsafe";
        EXPECT_DEATH({
            uct_gaudi_process_lock(&uct_gaudi_process.backend.lock);
            uct_gaudi_process_may_sleep();
        }, "");
        return;
    }

    uct_gaudi_process_lock(&uct_gaudi_process.backend.lock);
    uct_gaudi_process_may_sleep();
    uct_gaudi_process_unlock(&uct_gaudi_process.backend.lock);
    EXPECT_NE("", log.find({"can sleep", "1 process-wide lock"}))
        << log.dump();
}

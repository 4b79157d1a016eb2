/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Tests of the SynapseAI loader and wrappers (src/uct/gaudi/syn/
 * gaudi_syn.c) against the emulated libSynapse (test/emu/synsim) on the
 * habanalabs emulator (test/emu/hlsim). Every test that touches a device
 * re-runs itself in a fresh process with its own emulated node
 * (GAUDI_UNIT_CHILD, gaudi_unit.h), since both emulators read their
 * environment once per process.
 */

extern "C" {
#include <uct/gaudi/dev/gaudi_dev.h>
#include <uct/gaudi/hl/gaudi_hl.h>
#include <uct/gaudi/mem/gaudi_mem.h>
#include <uct/gaudi/syn/gaudi_syn.h>
#include <uct/gaudi/dev/gaudi_device.h>
#include <uct/gaudi/dma/gaudi_dma.h>
#include <ucs/time/time.h>
#include <ucs/sys/math.h>
#include <ucs/config/global_opts.h>
#include <ucs/debug/log_def.h>
}

#include "common/gaudi_unit.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>


namespace {

const char *syn_lib()
{
    const char *lib = getenv("SYNSIM_LIB");

    return (lib != NULL) ? lib : GAUDI_SYN_TEST_LIB;
}

/* UCX messages down to diag level, while alive */
struct log_capture : gaudi_unit::log_capture {
    log_capture() : gaudi_unit::log_capture(UCS_LOG_LEVEL_DIAG) {}
};

void fill(std::vector<uint8_t> &v, unsigned seed)
{
    for (size_t i = 0; i < v.size(); ++i) {
        v[i] = (uint8_t)(i * 13 + seed * 7 + (i >> 10));
    }
}

/* Poll an event as a progress function would, up to 10 s */
ucs_status_t wait_event(const uct_gaudi_syn_t *syn,
                        uct_gaudi_syn_event_t event, unsigned *polls)
{
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_sec(10);
    ucs_status_t status;

    *polls = 0;
    do {
        status = uct_gaudi_syn_event_query(syn, event);
        ++*polls;
    } while ((status == UCS_INPROGRESS) && (ucs_get_time() < deadline));
    return status;
}

const char *DEV0_BUS = "0000:10:00.0";   /* hlsim: 0000:BB:00.0 */
const char *DEV1_BUS = "0000:17:00.0";   /* BB = 0x10 + 7 * index */

} // namespace


/* ---- loading ---- */

TEST(gaudi_syn_load, missing_library)
{
    log_capture log;
    uct_gaudi_syn_t syn;
    uint64_t absent_at = 0;

    EXPECT_FALSE(uct_gaudi_syn_is_loaded("libSynapse-not-there.so",
                                         &absent_at));
    EXPECT_NE(0u, absent_at);                     /* remembered */
    EXPECT_FALSE(uct_gaudi_syn_is_loaded("libSynapse-not-there.so",
                                         &absent_at));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_gaudi_syn_load("libSynapse-not-there.so",
                                 uct_gaudi_device_minor_known, &syn));
    EXPECT_EQ(nullptr, syn.handle);
    EXPECT_NE("", log.find({"cannot load SynapseAI",
                            "libSynapse-not-there.so"})) << log.dump();
}

/* A library without the API: refused, naming the entry point missing */
TEST(gaudi_syn_load, missing_symbol)
{
    log_capture log;
    uct_gaudi_syn_t syn;

    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_gaudi_syn_load("libm.so.6", uct_gaudi_device_minor_known,
                                 &syn));
    EXPECT_EQ(nullptr, syn.handle);
    EXPECT_NE("", log.find({"has no synInitialize",
                            "not a usable SynapseAI library"}))
            << log.dump();
}

/* Not loaded by the process: the module loads its own reference */
TEST(gaudi_syn_load, own_reference)
{
    GAUDI_UNIT_CHILD();
    uct_gaudi_syn_t syn;
    uint64_t absent_at = 0;

    EXPECT_FALSE(uct_gaudi_syn_is_loaded(NULL, &absent_at));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_load(syn_lib(),
                                         uct_gaudi_device_minor_known, &syn));
    EXPECT_FALSE(syn.preloaded);
    EXPECT_NE(nullptr, strstr(syn.path, "libSynapse.so")) << syn.path;
    EXPECT_NE(nullptr, (void*)syn.ops.event_query);
    EXPECT_NE(nullptr, (void*)syn.ops.memcpy_async_multiple);
    /* local: it never preempts the application's symbols */
    EXPECT_EQ(nullptr, dlsym(RTLD_DEFAULT, "synDeviceGetInfo"));
    /* found by its soname, the remembered absence being stale */
    EXPECT_TRUE(uct_gaudi_syn_is_loaded(NULL, &absent_at));
    uct_gaudi_syn_unload(&syn);
    EXPECT_FALSE(uct_gaudi_syn_is_loaded(NULL, &absent_at));
}

/* By its default name, found like any library (LD_LIBRARY_PATH here) */
TEST(gaudi_syn_load, default_name)
{
    std::string dir(syn_lib());
    const char *ldpath = getenv("LD_LIBRARY_PATH");

    dir = dir.substr(0, dir.rfind('/'));
    GAUDI_UNIT_CHILD({{"LD_LIBRARY_PATH",
                dir + ((ldpath != NULL) ? std::string(":") + ldpath : "")}});
    uct_gaudi_syn_t syn;

    ASSERT_EQ(UCS_OK, uct_gaudi_syn_load(NULL, uct_gaudi_device_minor_known,
                                         &syn));
    EXPECT_FALSE(syn.preloaded);
    char *want = realpath(syn_lib(), NULL), *got = realpath(syn.path, NULL);
    ASSERT_NE(nullptr, want);
    EXPECT_STREQ(want, got) << syn.path;
    free(want);
    free(got);
    uct_gaudi_syn_unload(&syn);
}

/* Loaded by the application: the module uses that copy */
TEST(gaudi_syn_load, preloaded)
{
    GAUDI_UNIT_CHILD();
    uint64_t absent_at = 0;
    uct_gaudi_syn_t syn;
    void *app;

    /* absent, remembered; the application's load makes that stale */
    EXPECT_FALSE(uct_gaudi_syn_is_loaded(NULL, &absent_at));
    EXPECT_NE(0u, absent_at);
    app = dlopen(syn_lib(), RTLD_NOW | RTLD_GLOBAL);
    ASSERT_NE(nullptr, app) << dlerror();
    EXPECT_TRUE(uct_gaudi_syn_is_loaded(NULL, &absent_at));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_load(NULL, uct_gaudi_device_minor_known,
                                         &syn));
    EXPECT_TRUE(syn.preloaded);
    EXPECT_EQ(dlsym(app, "synMemCopyAsync"), (void*)syn.ops.memcpy_async);
    uct_gaudi_syn_unload(&syn);
    EXPECT_TRUE(uct_gaudi_syn_is_loaded(NULL, &absent_at)); /* app's stays */
    dlclose(app);
}

TEST(gaudi_syn_load, status_table)
{
    std::map<std::string, int> names;

    for (int s = 0; s <= UCT_GAUDI_SYN_STATUS_LAST; ++s) {
        std::string name = uct_gaudi_syn_status_name(s);
        EXPECT_EQ(0u, name.find("syn")) << s;
        EXPECT_EQ(0u, names.count(name)) << name << " twice";
        names[name] = s;
        EXPECT_STRNE("", uct_gaudi_syn_status_str(s));
        EXPECT_EQ(s == 0, uct_gaudi_syn_status(s) == UCS_OK) << name;
    }
    EXPECT_EQ(0, names["synSuccess"]);
    EXPECT_EQ(34, names["synMappingNotFound"]);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_gaudi_syn_status(UCT_GAUDI_SYN_MAPPING_NOT_FOUND));
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              uct_gaudi_syn_status(UCT_GAUDI_SYN_OUT_OF_DEVICE_MEMORY));
    EXPECT_EQ(UCS_ERR_BUSY,
              uct_gaudi_syn_status(UCT_GAUDI_SYN_DEVICE_ALREADY_ACQUIRED));
    EXPECT_EQ(UCS_ERR_NO_DEVICE,
              uct_gaudi_syn_status(UCT_GAUDI_SYN_NO_DEVICE_FOUND));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_gaudi_syn_status(UCT_GAUDI_SYN_INVALID_EVENT_HANDLE));
    EXPECT_EQ(UCS_ERR_TIMED_OUT, uct_gaudi_syn_status(UCT_GAUDI_SYN_TIMEOUT));
    EXPECT_EQ(UCS_ERR_IO_ERROR,
              uct_gaudi_syn_status(UCT_GAUDI_SYN_DEVICE_RESET));
    EXPECT_EQ(UCS_ERR_IO_ERROR, uct_gaudi_syn_status(44));
    EXPECT_EQ(UCS_ERR_IO_ERROR, uct_gaudi_syn_status(-1));
    EXPECT_STREQ("synStatus?", uct_gaudi_syn_status_name(1000));
}


/* ---- a device through the wrappers ---- */

class gaudi_syn : public ::testing::Test {
protected:
    void SetUp() override
    {
        m_loaded = false;
        m_dev    = (uct_gaudi_syn_device_t)-1;
    }

    void TearDown() override
    {
        if (m_dev != (uct_gaudi_syn_device_t)-1) {
            EXPECT_EQ(UCS_OK, uct_gaudi_syn_release(&m_syn, m_dev));
        }
        if (m_loaded) {
            uct_gaudi_syn_unload(&m_syn);
        }
    }

    void acquire(const char *bus)
    {
        ASSERT_EQ(UCS_OK, uct_gaudi_syn_load(syn_lib(),
                                             uct_gaudi_device_minor_known,
                                             &m_syn));
        m_loaded = true;
        ASSERT_EQ(UCS_OK, uct_gaudi_syn_acquire(&m_syn, bus, &m_dev));
    }

    /* H2D, D2D, D2H of @a size bytes, completion by events */
    void roundtrip(size_t size, int want_type);

    uct_gaudi_syn_t        m_syn;
    bool                   m_loaded;
    uct_gaudi_syn_device_t m_dev;
};

void gaudi_syn::roundtrip(size_t size, int want_type)
{
    std::vector<uint8_t> src(size), dst(size, 0);
    uct_gaudi_syn_stream_t stream;
    uct_gaudi_syn_event_t event;
    uint64_t a, b;
    unsigned polls;
    int fd, type;
    char link[64], target[256] = "";

    ASSERT_EQ(UCS_OK, uct_gaudi_syn_device_fd(&m_syn, m_dev, &fd, &type));
    EXPECT_EQ(want_type, type);
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    EXPECT_GT(readlink(link, target, sizeof(target) - 1), 0);
    EXPECT_NE(nullptr, strstr(target, "accel")) << target;

    fill(src, 1);
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_host_map(&m_syn, m_dev, src.data(),
                                             size));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_host_map(&m_syn, m_dev, dst.data(),
                                             size));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_device_malloc(&m_syn, m_dev, size, &a));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_device_malloc(&m_syn, m_dev, size, &b));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_stream_create(&m_syn, m_dev, &stream));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_event_create(&m_syn, m_dev, &event));

    EXPECT_EQ(UCS_OK, uct_gaudi_syn_memcpy_async(&m_syn, stream, a,
                                                 (uintptr_t)src.data(), size,
                                                 UCT_GAUDI_SYN_HOST_TO_DRAM));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_memcpy_async(&m_syn, stream, b, a, size,
                                                 UCT_GAUDI_SYN_DRAM_TO_DRAM));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_memcpy_async(&m_syn, stream,
                                                 (uintptr_t)dst.data(), b,
                                                 size,
                                                 UCT_GAUDI_SYN_DRAM_TO_HOST));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_event_record(&m_syn, event, stream));
    EXPECT_EQ(UCS_OK, wait_event(&m_syn, event, &polls));
    EXPECT_TRUE(src == dst) << "data differs after H2D, D2D, D2H";

    EXPECT_EQ(UCS_OK, uct_gaudi_syn_event_destroy(&m_syn, event));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_stream_destroy(&m_syn, stream));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_device_free(&m_syn, m_dev, a));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_device_free(&m_syn, m_dev, b));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_host_unmap(&m_syn, m_dev, src.data()));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_host_unmap(&m_syn, m_dev, dst.data()));
}

TEST_F(gaudi_syn, copy_gaudi2)
{
    GAUDI_UNIT_CHILD();
    acquire(DEV0_BUS);
    roundtrip(5 * 1024 * 1024 + 3, UCT_GAUDI_SYN_DEVICE_GAUDI2);
}

TEST_F(gaudi_syn, copy_gaudi3)
{
    GAUDI_UNIT_CHILD({{"HLSIM_ASIC_1", "gaudi3"}});
    acquire(DEV1_BUS);
    roundtrip(5 * 1024 * 1024 + 3, UCT_GAUDI_SYN_DEVICE_GAUDI3);
}

TEST_F(gaudi_syn, copy_gaudi1)
{
    GAUDI_UNIT_CHILD({{"HLSIM_ASIC", "gaudi1"}});
    acquire(NULL);
    roundtrip(1024 * 1024, UCT_GAUDI_SYN_DEVICE_GAUDI);
}

/* The fd of older headers' synDeviceInfo (offset 40) is found too */
TEST_F(gaudi_syn, device_fd_old_layout)
{
    GAUDI_UNIT_CHILD({{"SYNSIM_INFO_FD_OFFSET", "40"}});
    acquire(NULL);
    roundtrip(4096, UCT_GAUDI_SYN_DEVICE_GAUDI2);
}

/* Under a slow DMA model the event is seen in progress, then done */
TEST_F(gaudi_syn, event_in_progress)
{
    GAUDI_UNIT_CHILD({{"HLSIM_DMA_GBPS", "0.1"}});
    const size_t size = 16 * 1024 * 1024;
    std::vector<uint8_t> src(size), dst(size, 0);
    uct_gaudi_syn_stream_t stream;
    uct_gaudi_syn_event_t event;
    unsigned polls;
    uint64_t d;

    acquire(NULL);
    fill(src, 2);
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_host_map(&m_syn, m_dev, src.data(),
                                             size));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_host_map(&m_syn, m_dev, dst.data(),
                                             size));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_device_malloc(&m_syn, m_dev, size, &d));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_stream_create(&m_syn, m_dev, &stream));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_event_create(&m_syn, m_dev, &event));
    {
        /* never recorded: Gaudi2/3 have no stream to ask */
        log_capture log;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_gaudi_syn_event_query(&m_syn, event));
    }

    EXPECT_EQ(UCS_OK, uct_gaudi_syn_memcpy_async(&m_syn, stream, d,
                                                 (uintptr_t)src.data(), size,
                                                 UCT_GAUDI_SYN_HOST_TO_DRAM));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_memcpy_async(&m_syn, stream,
                                                 (uintptr_t)dst.data(), d,
                                                 size,
                                                 UCT_GAUDI_SYN_DRAM_TO_HOST));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_event_record(&m_syn, event, stream));
    EXPECT_EQ(UCS_INPROGRESS, uct_gaudi_syn_event_query(&m_syn, event));
    EXPECT_EQ(UCS_OK, wait_event(&m_syn, event, &polls));
    EXPECT_GT(polls, 1u);
    EXPECT_TRUE(src == dst);
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_stream_sync(&m_syn, stream));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_stream_destroy(&m_syn, stream));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_event_destroy(&m_syn, event));
}

/* What SynapseAI rejects comes back as a UCS status, logged by name;
 * with its failure handler off, a device error fails the copy only */
TEST_F(gaudi_syn, errors_mapped)
{
    GAUDI_UNIT_CHILD({{"TERMINATE_SYNAPSE_UPON_DFA", "0"}});
    std::vector<uint8_t> host(4096);
    uct_gaudi_syn_stream_t stream, foreign_s;
    uct_gaudi_syn_event_t event, foreign_e;
    uct_gaudi_syn_device_t other;
    unsigned polls;
    uint64_t d;

    acquire(DEV0_BUS);
    foreign_s = (uct_gaudi_syn_stream_t)&host;
    foreign_e = (uct_gaudi_syn_event_t)&host;
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_device_malloc(&m_syn, m_dev, 4096, &d));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_stream_create(&m_syn, m_dev, &stream));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_event_create(&m_syn, m_dev, &event));

    {
        /* untranslatable host side: the caller's to report (the host-map
         * probes and staged copies expect it) */
        log_capture log;
        EXPECT_EQ(UCS_ERR_INVALID_ADDR,
                  uct_gaudi_syn_memcpy_async(&m_syn, stream, d,
                                             (uintptr_t)host.data(), 4096,
                                             UCT_GAUDI_SYN_HOST_TO_DRAM));
        EXPECT_EQ("", log.find({"synMemCopyAsync"})) << log.dump();
    }
    {
        log_capture log;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_gaudi_syn_memcpy_async(&m_syn, stream, d, d, 64,
                                             (uct_gaudi_syn_dir_t)7));
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_gaudi_syn_memcpy_async(&m_syn, foreign_s, d, d + 64, 64,
                                             UCT_GAUDI_SYN_DRAM_TO_DRAM));
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_gaudi_syn_event_query(&m_syn, foreign_e));
        EXPECT_NE("", log.find({"synEventQuery", "synInvalidEventHandle"}))
                << log.dump();
        /* SynapseAI's pool has no room: synFail, read as no memory */
        EXPECT_EQ(UCS_ERR_NO_MEMORY,
                  uct_gaudi_syn_device_malloc(&m_syn, m_dev, 1ULL << 42, &d));
        EXPECT_NE("", log.find({"synDeviceMalloc", "bytes on SynapseAI "
                                "device", "pool has no room", "synFail"}))
                << log.dump();
        /* one device per process: another one is refused too */
        EXPECT_EQ(UCS_ERR_BUSY,
                  uct_gaudi_syn_acquire(&m_syn, DEV1_BUS, &other));
        EXPECT_NE("", log.find({"cannot acquire device", DEV1_BUS,
                                "synDeviceAlreadyAcquired"})) << log.dump();
    }
    /* the copy after the failed one works on the same stream */
    ASSERT_EQ(0, gaudi_gtest::hlsim_fault_add("pdma", 1, EIO));

    EXPECT_EQ(UCS_OK, uct_gaudi_syn_memcpy_async(&m_syn, stream, d + 64, d,
                                                 64,
                                                 UCT_GAUDI_SYN_DRAM_TO_DRAM));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_event_record(&m_syn, event, stream));
    {
        log_capture log;
        EXPECT_EQ(UCS_ERR_IO_ERROR, wait_event(&m_syn, event, &polls));
        EXPECT_NE("", log.find({"synEventQuery", "synDeviceReset"}))
                << log.dump();
    }
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_memcpy_async(&m_syn, stream, d + 64, d,
                                                 64,
                                                 UCT_GAUDI_SYN_DRAM_TO_DRAM));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_event_record(&m_syn, event, stream));
    EXPECT_EQ(UCS_OK, wait_event(&m_syn, event, &polls));
    {
        /* the stream's next synchronize reports the failed copy once */
        log_capture log;
        EXPECT_EQ(UCS_ERR_IO_ERROR, uct_gaudi_syn_stream_sync(&m_syn, stream));
    }
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_stream_sync(&m_syn, stream));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_stream_destroy(&m_syn, stream));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_event_destroy(&m_syn, event));
}

/*
 * SynapseAI's default failure handler: after a device error every call
 * says synSynapseTerminated (UCS_ERR_CANCELED) and the process is
 * SIGKILLed; done by a grandchild, so that this child sees it die
 */
TEST_F(gaudi_syn, device_error_kills)
{
    GAUDI_UNIT_CHILD();
    int pfd[2], st;
    char report[16] = "";
    pid_t pid;

    ASSERT_EQ(0, pipe(pfd));
    pid = fork();
    if (pid == 0) {
        uct_gaudi_syn_stream_t stream;
        uct_gaudi_syn_event_t event;
        ucs_status_t status;
        unsigned polls;
        uint64_t d;

        close(pfd[0]);
        acquire(NULL);
        if ((uct_gaudi_syn_device_malloc(&m_syn, m_dev, 4096, &d) !=
             UCS_OK) ||
            (uct_gaudi_syn_stream_create(&m_syn, m_dev, &stream) != UCS_OK) ||
            (uct_gaudi_syn_event_create(&m_syn, m_dev, &event) != UCS_OK) ||
            gaudi_gtest::hlsim_fault_add("pdma", 1, EIO) ||
            (uct_gaudi_syn_memcpy_async(&m_syn, stream, d + 64, d, 64,
                                        UCT_GAUDI_SYN_DRAM_TO_DRAM) !=
             UCS_OK)) {
            _exit(2);
        }
        /* the copy may have failed already: then the record is refused */
        status = uct_gaudi_syn_event_record(&m_syn, event, stream);
        if (status == UCS_OK) {
            status = wait_event(&m_syn, event, &polls);
        }
        if ((status == UCS_ERR_CANCELED) &&
            (uct_gaudi_syn_device_malloc(&m_syn, m_dev, 64, &d) ==
             UCS_ERR_CANCELED)) {
            (void)!write(pfd[1], "canceled", 8);
        }
        close(pfd[1]);
        sleep(30);      /* killed meanwhile */
        _exit(0);
    }
    close(pfd[1]);
    EXPECT_GE(read(pfd[0], report, sizeof(report) - 1), 0);
    close(pfd[0]);
    ASSERT_EQ(pid, waitpid(pid, &st, 0));
    EXPECT_STREQ("canceled", report);
    EXPECT_TRUE(WIFSIGNALED(st) && (WTERMSIG(st) == SIGKILL))
        << "child status 0x" << std::hex << st;
}

/*
 * The process's situation with PyTorch: the application loaded SynapseAI
 * and acquired the device; the module's device context borrows the fd
 * (its own open would be refused); SynapseAI's pools took all DRAM at
 * acquire, so the driver has none for the module, and device memory comes
 * from synDeviceMalloc
 */
TEST_F(gaudi_syn, module_borrows_device)
{
    GAUDI_UNIT_CHILD();
    const size_t size = 1024 * 1024;
    void *app = dlopen(syn_lib(), RTLD_NOW | RTLD_GLOBAL);
    std::vector<uint8_t> src(size), dst(size, 0);
    uct_gaudi_syn_stream_t stream;
    size_t length = 64 * 1024 * 1024;
    uct_gaudi_heap_t *heap;
    uct_gaudi_buf_t *buf;
    uct_gaudi_ctx_t *ctx;
    uint64_t handle, va, d;
    int fd, type;

    ASSERT_NE(nullptr, app) << dlerror();
    acquire(NULL);
    EXPECT_TRUE(m_syn.preloaded);
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_device_fd(&m_syn, m_dev, &fd, &type));

    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_STREQ("SynapseAI", ctx->source);
    EXPECT_EQ(fd, ctx->hl.fd);

    /* SCAL's pool took the DRAM at acquire: the driver has none left, and
     * the module's memory comes from SynapseAI's allocator */
    {
        log_capture log;

        EXPECT_EQ(UCS_ERR_NO_MEMORY,
                  uct_gaudi_hl_mem_alloc(&ctx->hl, length, 0, &handle));
    }
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_get(ctx, &heap));
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(heap, &length, &buf));
    EXPECT_TRUE(buf->chunk->syn);
    va = buf->memh.address;
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_device_malloc(&m_syn, m_dev, size, &d));
    EXPECT_TRUE((d + size <= va) || (d >= va + length)) << "overlap";

    fill(src, 3);
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_host_map(&m_syn, m_dev, src.data(),
                                             size));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_host_map(&m_syn, m_dev, dst.data(),
                                             size));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_stream_create(&m_syn, m_dev, &stream));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_memcpy_async(&m_syn, stream, va,
                                                 (uintptr_t)src.data(), size,
                                                 UCT_GAUDI_SYN_HOST_TO_DRAM));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_memcpy_async(&m_syn, stream, d,
                                                 va, size,
                                                 UCT_GAUDI_SYN_DRAM_TO_DRAM));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_memcpy_async(&m_syn, stream,
                                                 (uintptr_t)dst.data(), d,
                                                 size,
                                                 UCT_GAUDI_SYN_DRAM_TO_HOST));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_stream_sync(&m_syn, stream));
    EXPECT_TRUE(src == dst) << "copy through device memory differs";

    EXPECT_EQ(UCS_OK, uct_gaudi_syn_stream_destroy(&m_syn, stream));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_device_free(&m_syn, m_dev, d));
    pthread_mutex_lock(&heap->lock);
    EXPECT_EQ(UCS_OK, uct_gaudi_heap_free(heap, buf));
    pthread_mutex_unlock(&heap->lock);
    uct_gaudi_heap_put(heap);
    uct_gaudi_ctx_put(ctx);
    /* the module closed nothing: SynapseAI's fd is still open */
    EXPECT_GE(fcntl(fd, F_GETFD), 0);
}


/* ---- the module's host maps in SynapseAI's shared table ---- */

/* The table (gaudi_syn_map.c) on an acquired device; the test plays the
 * application through the same library */
class gaudi_syn_maps : public gaudi_syn {
protected:
    static const size_t PG = 4096;

    void SetUp() override
    {
        gaudi_syn::SetUp();
        memset(&m_maps, 0, sizeof(m_maps));
        m_stream = NULL;
        m_d      = 0;
        m_buf    = NULL;
    }

    void TearDown() override
    {
        if (m_stream != NULL) {
            EXPECT_EQ(UCS_OK, uct_gaudi_syn_stream_destroy(&m_syn,
                                                           m_stream));
            EXPECT_EQ(UCS_OK, uct_gaudi_syn_device_free(&m_syn, m_dev, m_d));
            uct_gaudi_syn_maps_cleanup(&m_syn, m_dev, &m_maps);
        }
        free(m_buf);
        gaudi_syn::TearDown();
    }

    void start()
    {
        acquire(NULL);
        ASSERT_EQ(UCS_OK, uct_gaudi_syn_stream_create(&m_syn, m_dev,
                                                      &m_stream));
        ASSERT_EQ(UCS_OK, uct_gaudi_syn_device_malloc(&m_syn, m_dev, 8 * PG,
                                                      &m_d));
        ASSERT_EQ(0, posix_memalign((void**)&m_buf, PG, 8 * PG));
        memset(m_buf, 0, 8 * PG);
    }

    /* the module's view of [p, +len) */
    uct_gaudi_syn_map_kind_t get(uint8_t *p, size_t len, uintptr_t *key)
    {
        uintptr_t a = (uintptr_t)p;
        uct_gaudi_syn_map_kind_t kind = UCT_GAUDI_SYN_MAP_NONE;

        EXPECT_EQ(UCS_OK, uct_gaudi_syn_map_get(&m_syn, m_dev, &m_maps, a,
                                                len, a & ~(PG - 1),
                                                (a + len + PG - 1) &
                                                ~(PG - 1), &kind, key));
        return kind;
    }

    /* whether a copy of [p, +len) translates (and reads the data) */
    ucs_status_t copy(uint8_t *p, size_t len)
    {
        ucs_status_t status;

        status = uct_gaudi_syn_memcpy_async(&m_syn, m_stream, m_d,
                                            (uintptr_t)p, len,
                                            UCT_GAUDI_SYN_HOST_TO_DRAM);
        if (status == UCS_OK) {
            EXPECT_EQ(UCS_OK, uct_gaudi_syn_stream_sync(&m_syn, m_stream));
        }
        return status;
    }

    uct_gaudi_syn_maps_t   m_maps;
    uct_gaudi_syn_stream_t m_stream;
    uint64_t               m_d;
    uint8_t                *m_buf;
};

/* A range inside the application's entry is the application's: no new
 * entry, nothing unmapped by the module */
TEST_F(gaudi_syn_maps, app_entry_used_as_is)
{
    GAUDI_UNIT_CHILD();
    uint8_t *b;
    uintptr_t key = 1;

    start();
    b = m_buf;
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_host_map(&m_syn, m_dev, b, 4 * PG));
    EXPECT_EQ(UCT_GAUDI_SYN_MAP_APP, get(b + 100, 1000, &key));
    EXPECT_EQ(0u, key);
    EXPECT_EQ(UCT_GAUDI_SYN_MAP_APP, get(b, 4 * PG, &key));
    /* past the application's entry: nothing can start inside it */
    EXPECT_EQ(UCT_GAUDI_SYN_MAP_NONE, get(b + 3 * PG, 2 * PG, &key));
    EXPECT_EQ(nullptr, m_maps.head);
    uct_gaudi_syn_maps_cleanup(&m_syn, m_dev, &m_maps);
    EXPECT_EQ(UCS_OK, copy(b, 4 * PG)) << "the application's entry is gone";
}

/* Ranges no entry holds get the module's own entry, shared by ranges
 * inside it; the last put unmaps it */
TEST_F(gaudi_syn_maps, own_entries)
{
    GAUDI_UNIT_CHILD();
    uint8_t *c;
    uintptr_t k1, k2, k3;

    start();
    c = m_buf + 2 * PG;
    EXPECT_EQ(UCT_GAUDI_SYN_MAP_OWN, get(c + 100, 1000, &k1));
    EXPECT_EQ((uintptr_t)c, uct_gaudi_syn_map_key_start(k1));
    EXPECT_EQ(UCT_GAUDI_SYN_MAP_OWN, get(c + 2000, 300, &k2));
    EXPECT_EQ(k1, k2);
    /* starts inside our entry and runs past it: staged */
    EXPECT_EQ(UCT_GAUDI_SYN_MAP_NONE, get(c + 4000, 200, &k3));
    EXPECT_EQ(UCS_OK, copy(c + 100, 1000));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_map_put(&m_syn, m_dev, &m_maps, k1));
    EXPECT_EQ(UCS_OK, copy(c + 2000, 300));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_map_put(&m_syn, m_dev, &m_maps, k2));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, copy(c + 2000, 300));
}

/* Memory under the module's entry is unmapped (the memory event): the
 * entry leaves SynapseAI's table at the flush, before the registrations
 * holding it are put; a new entry at the same address is another one,
 * which the old registration's put leaves alone */
TEST_F(gaudi_syn_maps, unmapped_entry_leaves_table)
{
    GAUDI_UNIT_CHILD();
    uint8_t *c;
    uintptr_t k1, k2;

    start();
    c = m_buf + 2 * PG;
    EXPECT_EQ(UCT_GAUDI_SYN_MAP_OWN, get(c, 2 * PG, &k1));
    EXPECT_EQ(1, uct_gaudi_syn_maps_overlap(&m_maps, (uintptr_t)c + PG,
                                            (uintptr_t)c + 2 * PG));
    uct_gaudi_syn_maps_unmapped(&m_maps, (uintptr_t)c + PG,
                                (uintptr_t)c + 2 * PG);
    uct_gaudi_syn_maps_flush(&m_syn, m_dev, &m_maps);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, copy(c, 100)) << "entry still there";
    EXPECT_EQ(0, uct_gaudi_syn_maps_overlap(&m_maps, (uintptr_t)c,
                                            (uintptr_t)c + 2 * PG));
    EXPECT_EQ(UCT_GAUDI_SYN_MAP_OWN, get(c, 2 * PG, &k2));
    EXPECT_NE(k1, k2);
    EXPECT_EQ((uintptr_t)c, uct_gaudi_syn_map_key_start(k2));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_map_put(&m_syn, m_dev, &m_maps, k1));
    EXPECT_EQ(UCS_OK, copy(c, 100)) << "the old key's put unmapped the new";
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_map_put(&m_syn, m_dev, &m_maps, k2));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, copy(c, 100));
}

/* The page start is held by the application's (small) entry: the
 * module's entry starts at the range itself, and leaves the
 * application's alone */
TEST_F(gaudi_syn_maps, page_start_of_app)
{
    GAUDI_UNIT_CHILD();
    uint8_t *b;
    uintptr_t key;

    start();
    b = m_buf;
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_host_map(&m_syn, m_dev, b, 100));
    EXPECT_EQ(UCT_GAUDI_SYN_MAP_OWN, get(b + 200, 100, &key));
    EXPECT_EQ((uintptr_t)b + 200, uct_gaudi_syn_map_key_start(key));
    EXPECT_EQ(UCS_OK, copy(b + 200, 100));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_map_put(&m_syn, m_dev, &m_maps, key));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, copy(b + 200, 100));
    EXPECT_EQ(UCS_OK, copy(b, 100)) << "the application's entry is gone";
}

/* The application unmapped the module's entry (its own map inside it had
 * made nothing) and mapped a smaller buffer at the same start: the
 * module's put leaves that entry alone */
TEST_F(gaudi_syn_maps, put_spares_new_app_entry)
{
    GAUDI_UNIT_CHILD();
    uint8_t *c;
    uintptr_t key;

    start();
    c = m_buf + PG;
    EXPECT_EQ(UCT_GAUDI_SYN_MAP_OWN, get(c, 2 * PG, &key));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_host_map(&m_syn, m_dev, c, PG));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_host_unmap(&m_syn, m_dev, c));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_host_map(&m_syn, m_dev, c, PG));
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_map_put(&m_syn, m_dev, &m_maps, key));
    EXPECT_EQ(UCS_OK, copy(c, PG)) << "the application's entry is gone";
}


/*
 * A framework process that initialises UCX before its first HPU use
 * (MPI_Init, a UCP context): opening the memory domains takes no device
 * (docs/base.md, "Ownership"), so the application's own acquire succeeds
 * afterwards; its synDeviceMalloc tensor, registered then, borrows
 * SynapseAI's device, and the engine the transports use moves its data.
 */
class gaudi_syn_fw : public gaudi_syn {
protected:
    void framework_acquires_after_ucx();
};

void gaudi_syn_fw::framework_acquires_after_ucx()
{
    const char *reason = NULL;
    const size_t size = 256 * 1024;
    std::vector<uint8_t> src(size), dst(size, 0);
    uct_gaudi_dma_params_t params;
    uct_gaudi_dev_range_t range;
    uct_gaudi_dma_end_t host_end, dev_end;
    uct_gaudi_heap_t *heap;
    uct_gaudi_dma_t *dma;
    uct_gaudi_ctx_t *ctx;
    uint64_t d;
    int fd, type;

    /* the framework loaded SynapseAI (import), acquired nothing yet */
    void *app = dlopen(syn_lib(), RTLD_NOW | RTLD_GLOBAL);
    ASSERT_NE(nullptr, app) << dlerror();

    /* UCX: the memory domains' heap; resources and capabilities */
    ASSERT_TRUE(uct_gaudi_device_info() != NULL);
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_md_get(&heap));
    EXPECT_TRUE(uct_gaudi_heap_ctx(heap) == NULL);
    EXPECT_EQ(0, gaudi_gtest::hlsim_counter(HLSIM_COUNTER_CONTEXTS));

    /* the framework acquires its HPU: nothing holds it */
    acquire(NULL);
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_device_fd(&m_syn, m_dev,
                                              &fd, &type));
    ASSERT_EQ(UCS_OK, uct_gaudi_syn_device_malloc(&m_syn, m_dev,
                                                  size, &d));

    /* registration of its tensor: the device is borrowed, not opened */
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_resolve(heap, d, size, &range));
    EXPECT_TRUE(range.buf == NULL);
    ctx = uct_gaudi_heap_ctx(heap);
    ASSERT_TRUE(ctx != NULL);
    EXPECT_EQ(fd, ctx->hl.fd);
    EXPECT_FALSE(ctx->hl.owns_fd);
    EXPECT_EQ(1, gaudi_gtest::hlsim_counter(HLSIM_COUNTER_CONTEXTS));

    /* the data moves through the engine of the transports */
    ASSERT_EQ(UCS_OK, uct_gaudi_dma_check(ctx, &reason)) << reason;
    uct_gaudi_dma_params_default(ctx, &params);
    ASSERT_EQ(UCS_OK, uct_gaudi_dma_create(ctx, &params, &dma));
    for (size_t i = 0; i < size; ++i) {
        src[i] = (uint8_t)(i * 7 + 1);
    }
    host_end.host = src.data();
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_dma_end(heap, (void*)d, size, "test",
                                             &dev_end));
    EXPECT_EQ(UCS_OK, uct_gaudi_dma_copy_sync(dma, &dev_end, &host_end,
                                              size, "test"));
    host_end.host = dst.data();
    EXPECT_EQ(UCS_OK, uct_gaudi_dma_copy_sync(dma, &host_end, &dev_end,
                                              size, "test"));
    EXPECT_TRUE(src == dst) << "the tensor's data did not round-trip";

    uct_gaudi_dma_destroy(dma);
    EXPECT_EQ(UCS_OK, uct_gaudi_syn_device_free(&m_syn, m_dev,
                                                d));
    uct_gaudi_heap_put(heap);
}

TEST_F(gaudi_syn_fw, acquire_after_ucx_kernel)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_COPY_BACKEND", "kernel"}});
    framework_acquires_after_ucx();
}

TEST_F(gaudi_syn_fw, acquire_after_ucx_synapse)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_COPY_BACKEND", "synapse"},
                      {"UCX_GAUDI_SYNAPSE_LIB", syn_lib()}});
    framework_acquires_after_ucx();
}

TEST_F(gaudi_syn_fw, acquire_after_ucx_gaudi3)
{
    GAUDI_UNIT_CHILD({{"HLSIM_ASIC", "gaudi3"},
                      {"UCX_GAUDI_SYNAPSE_LIB", syn_lib()}});
    framework_acquires_after_ucx();
}


/* ---- device memory of the heap from SynapseAI (UCX_GAUDI_DEVICE_MEM) ---- */

/*
 * The application holds the device through SynapseAI (as PyTorch does) and
 * the module's heap on it; @a size bytes allocated by the heap are written
 * and read back through the application's own stream
 */
class gaudi_syn_heap : public gaudi_syn {
protected:
    void SetUp() override
    {
        gaudi_syn::SetUp();
        m_app  = NULL;
        m_ctx  = NULL;
        m_heap = NULL;
    }

    void TearDown() override
    {
        for (int fd : m_fds) {
            close(fd);
        }
        if (m_heap != NULL) {
            uct_gaudi_heap_put(m_heap);
        }
        if (m_ctx != NULL) {
            uct_gaudi_ctx_put(m_ctx);
        }
        gaudi_syn::TearDown();
    }

    void open_heap(int backend = UCT_GAUDI_BACKEND_SYNAPSE)
    {
        m_app = dlopen(syn_lib(), RTLD_NOW | RTLD_GLOBAL);
        ASSERT_NE(nullptr, m_app) << dlerror();
        acquire(NULL);
        ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &m_ctx));
        ASSERT_EQ(backend, m_ctx->backend);
        ASSERT_EQ(UCS_OK, uct_gaudi_heap_get(m_ctx, &m_heap));
    }

    /* Free @a buf as the MD does (with the heap lock) */
    void heap_free(uct_gaudi_buf_t *buf)
    {
        pthread_mutex_lock(&m_heap->lock);
        EXPECT_EQ(UCS_OK, uct_gaudi_heap_free(m_heap, buf));
        pthread_mutex_unlock(&m_heap->lock);
    }

    /* H2D into @a ptr and D2H back on the application's stream */
    void check_data(uint64_t ptr, size_t size)
    {
        check_alias(ptr, ptr, size, 5);
    }

    /* whether SynapseAI still counts @a ptr as allocated: its free takes
     * only what it handed out (a second synDeviceMalloc of the piece
     * would not tell) */
    bool syn_owns(uint64_t ptr)
    {
        log_capture quiet;

        return uct_gaudi_syn_device_free(&m_syn, m_dev, ptr) == UCS_OK;
    }

    /* Allocate @a length, export it, free it with the dma-buf fd still
     * open (a holder of the export: the chunk is retained when from
     * SynapseAI), the chunk it had, 0 on failure */
    uint64_t exported_cycle(size_t length)
    {
        uct_gaudi_buf_t *buf;
        uint64_t chunk, off;
        int fd;

        if ((uct_gaudi_heap_alloc(m_heap, &length, &buf) != UCS_OK)) {
            return 0;
        }
        chunk = buf->chunk->ptr;
        if (uct_gaudi_heap_dmabuf(m_heap, buf->memh.address, length, &fd,
                                  &off) == UCS_OK) {
            m_fds.push_back(fd);
        } else {
            chunk = 0;
        }
        heap_free(buf);
        return chunk;
    }

    /* Whether the emulated SynapseAI tells where its pool lies */
    bool syn_pool()
    {
        return dlsym(m_app, "synDeviceGetInfoV2") != NULL;
    }

    /* @a size bytes written through @a ptr read back through @a alias
     * (device addresses), both on the application's stream */
    void check_alias(uint64_t ptr, uint64_t alias, size_t size,
                     unsigned seed)
    {
        std::vector<uint8_t> src(size), dst(size, 0);
        uct_gaudi_syn_stream_t stream;

        fill(src, seed);
        ASSERT_EQ(UCS_OK, uct_gaudi_syn_host_map(&m_syn, m_dev, src.data(),
                                                 size));
        ASSERT_EQ(UCS_OK, uct_gaudi_syn_host_map(&m_syn, m_dev, dst.data(),
                                                 size));
        ASSERT_EQ(UCS_OK, uct_gaudi_syn_stream_create(&m_syn, m_dev,
                                                      &stream));
        EXPECT_EQ(UCS_OK, uct_gaudi_syn_memcpy_async(&m_syn, stream, ptr,
                                                     (uintptr_t)src.data(),
                                                     size,
                                                     UCT_GAUDI_SYN_HOST_TO_DRAM));
        EXPECT_EQ(UCS_OK, uct_gaudi_syn_memcpy_async(&m_syn, stream,
                                                     (uintptr_t)dst.data(),
                                                     alias, size,
                                                     UCT_GAUDI_SYN_DRAM_TO_HOST));
        EXPECT_EQ(UCS_OK, uct_gaudi_syn_stream_sync(&m_syn, stream));
        EXPECT_TRUE(src == dst) << "the import does not show the tensor";
        EXPECT_EQ(UCS_OK, uct_gaudi_syn_stream_destroy(&m_syn, stream));
        EXPECT_EQ(UCS_OK, uct_gaudi_syn_host_unmap(&m_syn, m_dev, src.data()));
        EXPECT_EQ(UCS_OK, uct_gaudi_syn_host_unmap(&m_syn, m_dev, dst.data()));
    }

    void                   *m_app;
    uct_gaudi_ctx_t        *m_ctx;
    uct_gaudi_heap_t       *m_heap;
    std::vector<int>       m_fds;    /* exports held open */
};

/* UCX_GAUDI_DEVICE_MEM=synapse: chunks from synDeviceMalloc, freed back */
TEST_F(gaudi_syn_heap, synapse_provider)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_DEVICE_MEM", "synapse"}});
    size_t length = 3 * 1024 * 1024 + 100;
    uct_gaudi_buf_t *buf;
    uint64_t chunk;

    open_heap();
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(m_heap, &length, &buf));
    EXPECT_TRUE(buf->chunk->syn);
    check_data(buf->memh.address, length);
    chunk = buf->chunk->ptr;
    heap_free(buf);
    EXPECT_FALSE(syn_owns(chunk)) << "the chunk was not given back";
}

/* Gaudi1 on SynapseAI: the driver's ALLOC only counts bytes there, so
 * auto takes SynapseAI's allocator; pointers stay in the Gaudi1 window */
TEST_F(gaudi_syn_heap, gaudi1_synapse_memory)
{
    GAUDI_UNIT_CHILD({{"HLSIM_ASIC", "gaudi1"}});
    size_t length = 1024 * 1024 + 100;
    uct_gaudi_buf_t *buf;
    uint64_t phys;

    open_heap();
    ASSERT_TRUE(uct_gaudi_heap_can_alloc(m_heap));
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(m_heap, &length, &buf));
    EXPECT_TRUE(buf->chunk->syn);
    EXPECT_GE(buf->memh.address, UCT_GAUDI_MEM_G1_WINDOW);
    EXPECT_EQ(buf->memh.address - UCT_GAUDI_MEM_G1_WINDOW,
              buf->memh.dma_base);
    /* SynapseAI addresses Gaudi1 DRAM physically */
    check_data(buf->memh.dma_base, length);
    phys = buf->chunk->dma;
    heap_free(buf);
    EXPECT_FALSE(syn_owns(phys)) << "the chunk was not given back";
}

/* auto under SynapseAI: SynapseAI's allocator, never the driver's ALLOC,
 * which finds no DRAM once SCAL took it at acquire */
TEST_F(gaudi_syn_heap, auto_takes_synapse_memory)
{
    GAUDI_UNIT_CHILD({{"HLSIM_FAULTS", "mem_alloc:1:ENOMEM"}});
    size_t length = 64 * 1024, length2;
    uct_gaudi_buf_t *buf, *buf2;

    open_heap();
    EXPECT_EQ(UCT_GAUDI_DEVICE_MEM_SYNAPSE, m_heap->device_mem);
    {
        log_capture log;

        ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(m_heap, &length, &buf));
        EXPECT_EQ("", log.find({"MEMORY ALLOC"})) << log.dump();
    }
    EXPECT_TRUE(buf->chunk->syn);
    check_data(buf->memh.address, length);

    /* a dedicated chunk (half a chunk or more) as well */
    length2 = m_heap->chunk_size / 2;
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(m_heap, &length2, &buf2));
    EXPECT_TRUE(buf2->chunk->syn);
    check_data(buf2->memh.address + length2 - 1024 * 1024, 1024 * 1024);
    heap_free(buf);
    heap_free(buf2);
}

/*
 * The application's tensors (synDeviceMalloc: 128-byte aligned pieces of
 * SynapseAI's pool, not MAP starts) export as the pages around them in
 * the pool's mapping, at their offset: data written through a tensor is
 * read back through an import of its dma-buf, on the application's
 * stream
 */
TEST_F(gaudi_syn_heap, app_tensors_export)
{
    static const size_t sizes[] = {1000, 4096 + 128, 300000, 128, 70000};
    std::vector<uint64_t> tensors;
    uct_gaudi_syn_pool_t pool;
    uint64_t t, off, va;
    int fd;

    GAUDI_UNIT_CHILD();
    open_heap();
    if (!syn_pool()) {
        GTEST_SKIP() << "the emulated SynapseAI has no device memory pool";
    }
    for (size_t size : sizes) {
        ASSERT_EQ(UCS_OK, uct_gaudi_syn_device_malloc(&m_syn, m_dev, size,
                                                      &t));
        tensors.push_back(t);
    }

    for (size_t i = 0; i < tensors.size(); ++i) {
        t = tensors[i];
        ASSERT_EQ(UCS_OK, uct_gaudi_syn_pool_find(&m_syn, m_ctx->hl.fd, t,
                                                  sizes[i], &pool));
        EXPECT_NE(pool.map_va, t);
        EXPECT_EQ(0u, t % 128);
        log_capture log;
        ASSERT_EQ(UCS_OK, uct_gaudi_heap_dmabuf(m_heap, t, sizes[i], &fd,
                                                &off)) << log.dump();
        EXPECT_EQ((t - pool.map_va) % m_heap->host_page, off);
        ASSERT_EQ(UCS_OK, uct_gaudi_hl_reg_dmabuf(&m_ctx->hl, fd,
                                                  ucs_align_up(off + sizes[i],
                                                      m_heap->host_page),
                                                  &va));
        close(fd);
        check_alias(t, va + off, sizes[i], (unsigned)i);
        EXPECT_EQ(UCS_OK, uct_gaudi_hl_mem_unmap(&m_ctx->hl, va));
        EXPECT_EQ(0u, log.count(UCS_LOG_LEVEL_WARN)) << log.dump();
    }

    /* a range that runs past the pool, and a freed buffer of the
     * module's own whose chunk it keeps (its export still open, so
     * retained): clear errors, no export */
    uct_gaudi_buf_t *buf;
    size_t length = 4096;
    uint64_t own;
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(m_heap, &length, &buf));
    own = buf->memh.address;
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_dmabuf(m_heap, own, length, &fd, &off));
    m_fds.push_back(fd);
    heap_free(buf);
    {
        log_capture log;

        EXPECT_EQ(UCS_ERR_INVALID_ADDR,
                  uct_gaudi_heap_dmabuf(m_heap, own, 64, &fd, &off));
        EXPECT_NE("", log.find({m_ctx->info->name, "dma-buf export",
                                "not inside"})) << log.dump();
    }
    EXPECT_NE(UCS_OK, uct_gaudi_heap_dmabuf(m_heap, pool.end - 4096,
                                            8192, &fd, &off));

    for (uint64_t p : tensors) {
        EXPECT_EQ(UCS_OK, uct_gaudi_syn_device_free(&m_syn, m_dev, p));
    }
}

/* An exported SynapseAI chunk stays while an fd of its export is open in
 * the process, and goes back to SynapseAI once none is */
TEST_F(gaudi_syn_heap, exported_chunk_retained)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_DEVICE_MEM", "synapse"}});
    size_t length = 2 * 1024 * 1024;
    uct_gaudi_dev_range_t range;
    uct_gaudi_buf_t *buf;
    uint64_t chunk, off;
    int fd;

    open_heap();
    if (!syn_pool()) {
        GTEST_SKIP() << "the emulated SynapseAI has no device memory pool";
    }
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(m_heap, &length, &buf));
    ASSERT_TRUE(buf->chunk->syn);
    chunk = buf->chunk->ptr;
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_dmabuf(m_heap, buf->memh.address,
                                            length, &fd, &off));
    pthread_mutex_lock(&m_heap->lock);
    EXPECT_EQ(UCS_OK, uct_gaudi_heap_free(m_heap, buf));
    EXPECT_FALSE(ucs_list_is_empty(&m_heap->retained));
    pthread_mutex_unlock(&m_heap->lock);
    /* a pointer into it is the module's freed memory, not SynapseAI's */
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              uct_gaudi_heap_resolve(m_heap, chunk + 4096, 64, &range));

    /* the export closed: the next heap operation gives it back */
    close(fd);
    length = 4096;
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(m_heap, &length, &buf));
    pthread_mutex_lock(&m_heap->lock);
    EXPECT_TRUE(ucs_list_is_empty(&m_heap->retained));
    pthread_mutex_unlock(&m_heap->lock);
    heap_free(buf);
    EXPECT_FALSE(syn_owns(chunk)) << "a chunk whose exports are closed "
                                     "was kept";
}

/* Exported SynapseAI chunks are reused: alloc, export, free in cycles
 * keeps the module's memory at one chunk, and the data stays right */
TEST_F(gaudi_syn_heap, retained_chunk_reused)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_DEVICE_MEM", "synapse"}});
    uct_gaudi_counters_t c0;
    uct_gaudi_buf_t *buf;
    uint64_t first = 0, off;
    size_t length;
    int fd;

    open_heap();
    if (!syn_pool()) {
        GTEST_SKIP() << "the emulated SynapseAI has no device memory pool";
    }
    c0 = m_heap->counters;
    for (int i = 0; i < 20; ++i) {
        length = 1000 + i * 4096;
        ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(m_heap, &length, &buf));
        if (i == 0) {
            first = buf->chunk->ptr;
        }
        EXPECT_EQ(first, buf->chunk->ptr) << "cycle " << i;
        ASSERT_EQ(UCS_OK, uct_gaudi_heap_dmabuf(m_heap, buf->memh.address,
                                                length, &fd, &off));
        m_fds.push_back(fd);    /* a holder of every export */
        if ((i % 5) == 0) {
            check_data(buf->memh.address, length);
        }
        heap_free(buf);
    }
    EXPECT_EQ(c0.chunk_count + 1, m_heap->counters.chunk_count);
    EXPECT_TRUE(syn_owns(first));
}

/* Retained chunks serve later chunks that fit, the smallest first */
TEST_F(gaudi_syn_heap, retained_chunk_best_fit)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_DEVICE_MEM", "synapse"}});
    uct_gaudi_buf_t *buf;
    uint64_t big, small, count;

    open_heap();
    if (!syn_pool()) {
        GTEST_SKIP() << "the emulated SynapseAI has no device memory pool";
    }
    const uint64_t chunk = m_heap->chunk_size;
    /* two exported dedicated chunks, of 3 and 2 chunk sizes, retained */
    big   = exported_cycle(3 * chunk);
    small = exported_cycle(2 * chunk);
    ASSERT_NE(0u, big);
    ASSERT_NE(0u, small);
    count = m_heap->counters.chunk_count;

    /* a small buffer needs a shared chunk (1 chunk size): the smaller
     * retained one that holds it */
    size_t length = 4096;
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(m_heap, &length, &buf));
    EXPECT_EQ(small, buf->chunk->ptr);
    check_data(buf->memh.address, length);
    heap_free(buf);

    /* what fits only in the larger one gets it */
    length = 3 * chunk - 100;
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(m_heap, &length, &buf));
    EXPECT_EQ(big, buf->chunk->ptr);
    heap_free(buf);
    EXPECT_EQ(count, m_heap->counters.chunk_count) << "a chunk was added";
}

/* synapse memory needs the synapse backend: refused with a reason */
TEST_F(gaudi_syn_heap, synapse_needs_backend)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_DEVICE_MEM", "synapse"},
               {"UCX_GAUDI_COPY_BACKEND", "kernel"}});
    uct_gaudi_heap_t *heap;
    log_capture log;

    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &m_ctx));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_gaudi_heap_get(m_ctx, &heap));
    EXPECT_NE("", log.find({"UCX_GAUDI_DEVICE_MEM=synapse", "kernel"}))
            << log.dump();
}

/*
 * HBM economy (docs/md.md): the framework's free HBM as it reads it
 * (synDeviceGetMemoryInfo) drops by at most one UCX_GAUDI_SYN_HEAP_CHUNK
 * and a page for a 4 KiB UCX allocation, far below the driver's DRAM page,
 * and is back after the free; an exported allocation stays retained, still
 * within that bound
 */
class gaudi_syn_hbm : public gaudi_syn_heap {
protected:
    uint64_t free_hbm()
    {
        typedef int (*meminfo_fn)(uint32_t, uint64_t*, uint64_t*);
        meminfo_fn fn = (meminfo_fn)dlsym(m_app, "synDeviceGetMemoryInfo");
        uint64_t free = 0, total = 0;

        EXPECT_TRUE(fn != NULL) << dlerror();
        if (fn != NULL) {
            EXPECT_EQ(0, fn((uint32_t)m_dev, &free, &total));
            EXPECT_GE(total, free);
            EXPECT_LE(total, (uint64_t)m_ctx->info->hw_ip.u61.dram_size);
        }
        return free;
    }

    void small_alloc(uint64_t want_page,
                     int backend = UCT_GAUDI_BACKEND_SYNAPSE);
};

void gaudi_syn_hbm::small_alloc(uint64_t want_page, int backend)
{
    const uint64_t bound = (2ull << 20) + 4096; /* default chunk + page */
    uct_gaudi_buf_t *buf;
    uint64_t free0, off;
    size_t length;
    int fd;

    open_heap(backend);
    if (want_page != 0) {
        EXPECT_EQ(want_page,
                  (uint64_t)m_ctx->info->hw_ip.u61.dram_page_size);
    }
    free0 = free_hbm();
    ASSERT_GT(free0, 0u);

    length = 4096;
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(m_heap, &length, &buf));
    EXPECT_TRUE(buf->chunk->syn);
    EXPECT_LE(free0 - free_hbm(), bound);
    EXPECT_GT(free0 - free_hbm(), 0u) << "the allocation took no HBM";
    EXPECT_LE(m_heap->counters.chunk_bytes, bound);
    EXPECT_EQ(0u, buf->chunk->ptr % m_heap->host_page);
    check_data(buf->memh.address, length);
    heap_free(buf);
    EXPECT_EQ(free0, free_hbm()) << "the HBM did not come back";
    EXPECT_EQ(0u, m_heap->counters.chunk_bytes);

    /* exported: retained while an fd of the export is open (bounded),
     * given back at the next heap operation once it is closed */
    if (!syn_pool()) {
        return;
    }
    length = 4096;
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(m_heap, &length, &buf));
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_dmabuf(m_heap, buf->memh.address,
                                            length, &fd, &off));
    heap_free(buf);
    EXPECT_LE(free0 - free_hbm(), bound);
    EXPECT_GT(free0 - free_hbm(), 0u) << "given back while exported";
    close(fd);
    uct_gaudi_heap_progress(m_heap);
    length = 4096;
    ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(m_heap, &length, &buf));
    heap_free(buf);
    EXPECT_EQ(free0, free_hbm()) << "kept after its export was closed";
}

TEST_F(gaudi_syn_hbm, small_alloc_gaudi2)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_SYNAPSE_LIB", syn_lib()}});
    small_alloc(768ull << 20);
}

/* the kernel backend on the framework's fd: SynapseAI's allocator too */
TEST_F(gaudi_syn_hbm, small_alloc_gaudi2_kernel)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_COPY_BACKEND", "kernel"},
                      {"UCX_GAUDI_SYNAPSE_LIB", syn_lib()}});
    small_alloc(768ull << 20, UCT_GAUDI_BACKEND_KERNEL);
}

TEST_F(gaudi_syn_hbm, small_alloc_gaudi3)
{
    GAUDI_UNIT_CHILD({{"HLSIM_ASIC", "gaudi3"},
                      {"UCX_GAUDI_SYNAPSE_LIB", syn_lib()}});
    small_alloc(0);     /* Gaudi3's page as hlsim models it */
}

/*
 * A UCX allocation before the framework's acquire (UCX_GAUDI_ALLOC_ACQUIRE
 * =try): refused with the reason, the device untouched, so the
 * framework's own acquire succeeds; UCX's next allocation borrows it
 */
class gaudi_syn_fw_first : public gaudi_syn {
protected:
    void alloc_before_acquire()
    {
        uct_gaudi_heap_t *heap;
        uct_gaudi_buf_t *buf;
        size_t length = 4096;

        void *app = dlopen(syn_lib(), RTLD_NOW | RTLD_GLOBAL);
        ASSERT_NE(nullptr, app) << dlerror();
        ASSERT_EQ(UCS_OK, uct_gaudi_heap_md_get(&heap));
        {
            log_capture log;

            EXPECT_EQ(UCS_ERR_NO_DEVICE,
                      uct_gaudi_heap_alloc(heap, &length, &buf));
            EXPECT_NE("", log.find({"allocation refused", "loaded "
                                    "SynapseAI", "UCX_GAUDI_ALLOC_ACQUIRE"}))
                    << log.dump();
            EXPECT_EQ(1u, log.count(UCS_LOG_LEVEL_ERROR)) << log.dump();
        }
        EXPECT_EQ(0, gaudi_gtest::hlsim_counter(HLSIM_COUNTER_CONTEXTS));

        /* the framework acquires: its device */
        acquire(NULL);
        ASSERT_EQ(UCS_OK, uct_gaudi_heap_alloc(heap, &length, &buf));
        EXPECT_FALSE(uct_gaudi_heap_ctx(heap)->hl.owns_fd);
        EXPECT_EQ(1, gaudi_gtest::hlsim_counter(HLSIM_COUNTER_CONTEXTS));
        pthread_mutex_lock(&heap->lock);
        EXPECT_EQ(UCS_OK, uct_gaudi_heap_free(heap, buf));
        pthread_mutex_unlock(&heap->lock);
        uct_gaudi_heap_put(heap);
    }
};

TEST_F(gaudi_syn_fw_first, refused_synapse)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_COPY_BACKEND", "synapse"},
                      {"UCX_GAUDI_SYNAPSE_LIB", syn_lib()}});
    alloc_before_acquire();
}

TEST_F(gaudi_syn_fw_first, refused_kernel)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_COPY_BACKEND", "kernel"},
                      {"UCX_GAUDI_SYNAPSE_LIB", syn_lib()}});
    alloc_before_acquire();
}

TEST_F(gaudi_syn_fw_first, refused_gaudi3)
{
    GAUDI_UNIT_CHILD({{"HLSIM_ASIC", "gaudi3"},
                      {"UCX_GAUDI_SYNAPSE_LIB", syn_lib()}});
    alloc_before_acquire();
}

/*
 * A device in reset: the module waits for it by its control node within
 * UCX_GAUDI_OPEN_TIMEOUT, never inside SynapseAI's own wait (up to 60 s,
 * physical_device.cpp:82-110); after the reset the acquire goes through
 */
TEST_F(gaudi_syn, acquire_waits_reset_within_open_timeout)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_COPY_BACKEND", "synapse"},
                      {"UCX_GAUDI_SYNAPSE_LIB", syn_lib()},
                      {"UCX_GAUDI_DEVICE", "0"},
                      {"UCX_GAUDI_OPEN_TIMEOUT", "1s"}});
    uct_gaudi_ctx_t *ctx = NULL;
    ucs_time_t t0;
    double elapsed;

    ASSERT_EQ(0, gaudi_gtest::hlsim_set_device_status(0,
                   GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE));
    t0 = ucs_get_time();
    {
        log_capture log;

        EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_gaudi_ctx_get(-1, &ctx));
        EXPECT_NE("", log.find({"GAUDI_0", "UCX_GAUDI_OPEN_TIMEOUT",
                                "in reset"})) << log.dump();
    }
    elapsed = ucs_time_to_sec(ucs_get_time() - t0);
    EXPECT_GE(elapsed, 0.9);
    EXPECT_LT(elapsed, 5.0) << "waited inside SynapseAI";

    ASSERT_EQ(0, gaudi_gtest::hlsim_set_device_status(0,
                   GAUDI_HL_DEVICE_STATUS_OPERATIONAL));
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_EQ(UCT_GAUDI_BACKEND_SYNAPSE, ctx->backend);
    uct_gaudi_ctx_put(ctx);
}

/*
 * A device whose previous context is still being released (Linux 6.1
 * nodes, where only Gaudi1 exports: its exporter closed it while a
 * dma-buf of it lives, OPEN_STATS compute_ctx_in_release, the open
 * EAGAIN): SynapseAI's acquire fails at once (synFail, no wait of its
 * own); the module reads the release on the control node and waits
 * within UCX_GAUDI_OPEN_TIMEOUT, then names it; once the dma-buf is
 * closed the acquire goes through
 */
TEST_F(gaudi_syn, acquire_waits_release_within_open_timeout)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NODES", "legacy"},
                      {"HLSIM_ASIC", "gaudi1"},
                      {"UCX_GAUDI_COPY_BACKEND", "synapse"},
                      {"UCX_GAUDI_SYNAPSE_LIB", syn_lib()},
                      {"UCX_GAUDI_DEVICE", "0"},
                      {"UCX_GAUDI_OPEN_TIMEOUT", "1s"}});
    const uct_gaudi_dev_info_t *info = uct_gaudi_device_by_index(0);
    uct_gaudi_ctx_t *ctx = NULL;
    uct_gaudi_hl_t hl;
    ucs_time_t t0;
    double elapsed;
    int dfd;

    ASSERT_TRUE(info != NULL);
    ASSERT_EQ(UCS_OK, uct_gaudi_hl_open(info->minor, 0, 0, &hl));
    ASSERT_EQ(UCS_OK, uct_gaudi_hl_export_dmabuf(&hl,
                        info->hw_ip.u61.dram_base_address, 4096, 0,
                        O_RDWR | O_CLOEXEC, &dfd));
    uct_gaudi_hl_close(&hl);    /* the context lives on in the dma-buf */

    t0 = ucs_get_time();
    {
        log_capture log;

        EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_gaudi_ctx_get(-1, &ctx));
        EXPECT_NE("", log.find({"GAUDI_0", "UCX_GAUDI_OPEN_TIMEOUT",
                                "releasing its previous context"}))
                << log.dump();
    }
    elapsed = ucs_time_to_sec(ucs_get_time() - t0);
    EXPECT_GE(elapsed, 0.9);
    EXPECT_LT(elapsed, 5.0);

    close(dfd);
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_EQ(UCT_GAUDI_BACKEND_SYNAPSE, ctx->backend);
    uct_gaudi_ctx_put(ctx);
}

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Tests of the emulated libSynapse (synsim) on the habanalabs emulator.
 * Linked like an application that uses SynapseAI; run with
 * LD_PRELOAD=libhlsim.so ./test_synsim [test-name-substring...]
 * Every test runs in a forked child with a fresh HLSIM_ROOT and its own
 * HLSIM_* / SYNSIM_* environment. Prints "PASS name" / "FAIL name: why"
 * and finally "N passed, N failed".
 */

#define _GNU_SOURCE
#include "synsim_api.h"
#include <uct/gaudi/hl/gaudi_hl_abi.h>
#include "hlsim.h"
#include "test_runner.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define MB        (1ULL << 20)
#define DEV0_BUS  "0000:10:00.0"   /* hlsim: 0000:BB:00.0, BB = 0x10+7*i */
#define DEV1_BUS  "0000:17:00.0"

#define CHECK_SYN(_call, _want) \
    do { \
        synStatus _s = (_call); \
        CHECK(_s == (_want), "%s: synStatus %d, want %d", #_call, _s, \
              (int)(_want)); \
    } while (0)
#define OK(_call) CHECK_SYN(_call, synSuccess)

/* ---- helpers ---- */

static int64_t dram_used(int dev)
{
    return API(hlsim_get_counter)(HLSIM_COUNTER_DRAM_USED, dev);
}

static synDeviceId acquire(const char *bus)
{
    synDeviceId id = 99;

    OK(synInitialize());
    OK(synDeviceAcquire(&id, bus));
    return id;
}

static void *xmalloc(size_t size)
{
    void *p = calloc(1, size);

    CHECK(p != NULL, "malloc %zu", size);
    return p;
}

static void fill(void *buf, size_t size, unsigned seed)
{
    size_t i;

    for (i = 0; i < size; i++) {
        ((uint8_t*)buf)[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 12));
    }
}

static void *mapped(synDeviceId id, size_t size)
{
    void *p = xmalloc(size);

    OK(synHostMap(id, size, p));
    return p;
}

/* fd of the device the process acquired, read as the module does */
static int synapse_fd(size_t offset)
{
    synStatus (*get_info)(synDeviceId, void*) =
        (synStatus (*)(synDeviceId, void*))test_sym("synDeviceGetInfo");
    uint8_t  buf[256];
    uint32_t fd;

    memset(buf, 0xff, sizeof(buf));
    OK(get_info((synDeviceId)-1, buf));
    memcpy(&fd, buf + offset, sizeof(fd));
    return (int)fd;
}

/* H2D, D2D, D2H with data compared, on a device of the given kind */
static void roundtrip(const char *bus, synDeviceType want, size_t size)
{
    synDeviceId     id = acquire(bus);
    synStreamHandle s;
    synDeviceInfo   info;
    uint64_t        a, b;
    uint8_t        *src = mapped(id, size), *dst = mapped(id, size);

    OK(synDeviceGetInfo(id, &info));
    CHECK(info.deviceType == want, "device type %d, want %d",
          info.deviceType, want);
    fill(src, size, 1);
    memset(dst, 0, size);
    OK(synDeviceMalloc(id, size, 0, 0, &a));
    OK(synDeviceMalloc(id, size, 0, 0, &b));
    CHECK((a + size <= b) || (b + size <= a), "overlap 0x%llx 0x%llx",
          (unsigned long long)a, (unsigned long long)b);
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synMemCopyAsync(s, (uintptr_t)src, size, a, HOST_TO_DRAM));
    OK(synMemCopyAsync(s, a, size, b, DRAM_TO_DRAM));
    OK(synMemCopyAsync(s, b, size, (uintptr_t)dst, DRAM_TO_HOST));
    OK(synStreamSynchronize(s));
    CHECK(!memcmp(src, dst, size), "data differs after H2D, D2D, D2H");

    /* a piece in the middle, host side offset too */
    memset(dst, 0, size);
    OK(synMemCopyAsync(s, a + 4096 + 3, 1000, (uintptr_t)dst + 17,
                       DRAM_TO_HOST));
    OK(synStreamSynchronize(s));
    CHECK(!memcmp(src + 4096 + 3, dst + 17, 1000), "partial copy differs");

    OK(synStreamDestroy(s));
    OK(synDeviceFree(id, a, 0));
    OK(synDeviceFree(id, b, 0));
    OK(synDeviceRelease(id));
}

/* ---- tests ---- */

static void t_init(void)
{
    uint32_t    n = 0;
    synDeviceId id;

    CHECK_SYN(synDeviceGetCount(&n), synUninitialized);
    CHECK_SYN(synDeviceAcquire(&id, NULL), synUninitialized);
    OK(synInitialize());
    CHECK_SYN(synInitialize(), synObjectAlreadyInitialized);
    OK(synDeviceGetCount(&n));
    CHECK(n == 2, "%u devices, want 2", n);
    OK(synDestroy());
    CHECK_SYN(synDestroy(), synUninitialized);
}

static void t_acquire(void)
{
    synDeviceId a = 99, b = 99, c;
    char        path[64];
    int         fd;

    OK(synInitialize());
    OK(synDeviceAcquire(&a, NULL));
    OK(synDeviceAcquire(&b, ""));
    CHECK((a == 0) && (b == 1), "ids %u %u", a, b);
    CHECK_SYN(synDeviceAcquire(&c, NULL), synDeviceAlreadyAcquired);
    CHECK_SYN(synDeviceAcquire(&c, DEV0_BUS), synDeviceAlreadyAcquired);
    /* one compute context per device: nobody else can open it */
    snprintf(path, sizeof(path), GAUDI_HL_ACCEL_NODE_FMT, 0);
    CHECK((open(path, O_RDWR) < 0) && (errno == EBUSY),
          "second open of an acquired device: errno %d", errno);
    OK(synDeviceRelease(a));
    CHECK_SYN(synDeviceRelease(a), synInvalidArgument);
    OK(synDeviceAcquire(&c, DEV0_BUS));
    CHECK(c == 0, "re-acquired id %u", c);
    OK(synDestroy());
    /* released for real: the node opens again */
    fd = open(path, O_RDWR);
    CHECK(fd >= 0, "open after synDestroy: errno %d", errno);
    close(fd);
}

/*
 * Gaudi2/3 reset after their user closes the device, inside the close: the
 * releasing process re-acquires at once; another process acquiring
 * meanwhile fails (the open gets EAGAIN, here set by hand as another
 * user's release would) and applications retry, as PyTorch's and
 * PaddlePaddle's HPU backends do (waitForIdleDevice)
 */
static void t_acquire_after_release(void)
{
    synDeviceId id = acquire(DEV0_BUS), again = 99;

    OK(synDeviceRelease(id));
    OK(synDeviceAcquire(&again, DEV0_BUS));
    CHECK(again == id, "re-acquired as %u", again);
    OK(synDeviceRelease(again));
    CHECK(!API(hlsim_set_device_status)(0,
            GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE), "status");
    CHECK_SYN(synDeviceAcquire(&again, DEV0_BUS), synDeviceReset);
    CHECK(!API(hlsim_set_device_status)(0,
            GAUDI_HL_DEVICE_STATUS_OPERATIONAL), "status");
    OK(synDeviceAcquire(&again, DEV0_BUS));
    CHECK(again == id, "not re-acquired: %u", again);
}

static void t_acquire_select(void)
{
    synDeviceId id = 99;

    OK(synInitialize());
    CHECK_SYN(synDeviceAcquire(&id, "0000:99:00.0"), synNoDeviceFound);
    OK(synDeviceAcquire(&id, DEV1_BUS));
    CHECK(id == 1, "by bus: id %u", id);
    OK(synDeviceRelease(id));
    CHECK_SYN(synDeviceAcquireByModuleId(&id, 4), synNoDeviceFound);
    OK(synDeviceAcquireByModuleId(&id, 3));   /* HLSIM_MODULE_IDS=5,3 */
    CHECK(id == 1, "by module id: id %u", id);
    OK(synDeviceAcquireByModuleId(&id, 5));
    CHECK(id == 0, "by module id: id %u", id);
}

/* Another process holds device 0: acquire takes device 1 */
static void t_acquire_busy(void)
{
    int         pfd[2], fd;
    synDeviceId id = 99;
    char        c, path[64];
    pid_t       pid;

    CHECK(!pipe(pfd), "pipe");
    pid = fork();
    if (pid == 0) {
        snprintf(path, sizeof(path), GAUDI_HL_ACCEL_NODE_FMT, 0);
        fd = open(path, O_RDWR);
        c  = (fd >= 0) ? 'y' : 'n';
        if (write(pfd[1], &c, 1) != 1) {
            _exit(1);
        }
        pause();
        _exit(0);
    }
    CHECK((read(pfd[0], &c, 1) == 1) && (c == 'y'), "holder");
    OK(synInitialize());
    CHECK_SYN(synDeviceAcquire(&id, DEV0_BUS), synDeviceAlreadyAcquired);
    OK(synDeviceAcquire(&id, NULL));
    CHECK(id == 1, "acquired %u, want the free device 1", id);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static void check_info(size_t offset)
{
    synDeviceId id = acquire(NULL);
    int         fd = synapse_fd(offset);
    struct stat st;
    uint8_t     raw[64];

    CHECK((fstat(fd, &st) == 0) && S_ISCHR(st.st_mode),
          "fd %d at offset %zu is not the device", fd, offset);
    /* the same open file description as the library's */
    CHECK(fcntl(fd, F_GETFL) >= 0, "fd %d not open", fd);
    memset(raw, 0xff, sizeof(raw));
    OK(synDeviceGetInfo(id, (synDeviceInfo*)raw));
    if (offset == 40) {
        CHECK((raw[48] == 0xff) && (raw[51] == 0xff),
              "the older layout wrote past its 48 bytes");
        CHECK(*(int32_t*)(raw + 44) == synDeviceGaudi2, "type at 44");
    } else {
        CHECK(((synDeviceInfo*)raw)->deviceType == synDeviceGaudi2, "type");
        CHECK(((synDeviceInfo*)raw)->dramSize != 0, "dram size");
        CHECK(((synDeviceInfo*)raw)->deviceId == GAUDI_HL_PCI_ID_GAUDI2,
              "PCI device id 0x%x", ((synDeviceInfo*)raw)->deviceId);
    }
    CHECK_SYN(synDeviceGetInfo(7, (synDeviceInfo*)raw), synInvalidArgument);
}

static void t_info48(void)
{
    check_info(48);
}

static void t_info40(void)
{
    check_info(40);
}

static void t_info_bad_layout(void)
{
    CHECK_SYN(synInitialize(), synInvalidArgument);
}

static void t_malloc(void)
{
    synDeviceId id   = acquire(NULL);
    int64_t     base = dram_used(0);
    uint64_t    a, b, c;

    OK(synDeviceMalloc(id, 1000, 0, 0, &a));
    CHECK(dram_used(0) == base + 64 * MB, "one DRAM page from the driver");
    OK(synDeviceMalloc(id, 5000, 0, 0, &b));
    CHECK(dram_used(0) == base + 64 * MB, "second piece from the same page");
    CHECK((a % 128 == 0) && (b % 128 == 0) && (b >= a + 1000 || a >= b +
          5000), "pieces 0x%llx 0x%llx", (unsigned long long)a,
          (unsigned long long)b);
    OK(synDeviceMalloc(id, 100 * MB, 0, 0, &c));
    CHECK(dram_used(0) == base + 64 * MB + 128 * MB, "whole pages");
    CHECK_SYN(synDeviceMalloc(id, 1ULL << 40, 0, 0, &c),
              synOutOfDeviceMemory);
    CHECK_SYN(synDeviceMalloc(id, 0, 0, 0, &c), synInvalidArgument);
    CHECK_SYN(synDeviceMalloc(9, 64, 0, 0, &c), synInvalidArgument);
    CHECK_SYN(synDeviceFree(id, a + 128, 0), synInvalidArgument);
    OK(synDeviceFree(id, a, 0));
    CHECK_SYN(synDeviceFree(id, a, 0), synInvalidArgument);
    CHECK(dram_used(0) == base + 64 * MB + 128 * MB, "page still in use");
    OK(synDeviceFree(id, b, 0));
    CHECK(dram_used(0) == base + 128 * MB, "empty page back to the driver");
    OK(synDeviceRelease(id));
    CHECK(dram_used(0) == base, "release returns everything");
}

static void t_copy_gaudi2(void)
{
    roundtrip(NULL, synDeviceGaudi2, 3 * MB + 5);
}

static void t_copy_gaudi3(void)
{
    roundtrip(DEV1_BUS, synDeviceGaudi3, 3 * MB + 5);
}

static void t_copy_gaudi1(void)
{
    roundtrip(NULL, synDeviceGaudi, 3 * MB + 5);
}

/* Copies across more than one DRAM page of the device */
static void t_copy_pages(void)
{
    roundtrip(NULL, synDeviceGaudi2, 70 * MB);
}

static void t_copy_multiple(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *h = mapped(id, 4 * MB), *o = mapped(id, 4 * MB);
    uint64_t        d, src[4], dst[4], len[4];
    synStreamHandle s;
    int             i;

    fill(h, 4 * MB, 3);
    memset(o, 0, 4 * MB);
    OK(synDeviceMalloc(id, 4 * MB, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    for (i = 0; i < 4; i++) {   /* the MBs in reverse order */
        src[i] = (uintptr_t)h + i * MB;
        dst[i] = d + (3 - i) * MB;
        len[i] = MB;
    }
    OK(synMemCopyAsyncMultiple(s, src, len, dst, HOST_TO_DRAM, 4));
    OK(synMemCopyAsync(s, d, 4 * MB, (uintptr_t)o, DRAM_TO_HOST));
    OK(synStreamSynchronize(s));
    for (i = 0; i < 4; i++) {
        CHECK(!memcmp(h + i * MB, o + (3 - i) * MB, MB), "MB %d", i);
    }
    CHECK_SYN(synMemCopyAsyncMultiple(s, src, len, dst, HOST_TO_DRAM, 0),
              synInvalidArgument);
}

/* SynapseAI copies host memory only after synHostMap */
static void t_reject_unmapped(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *h = xmalloc(MB), *o;
    uint64_t        d;
    synStreamHandle s;

    OK(synDeviceMalloc(id, MB, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    CHECK_SYN(synMemCopyAsync(s, (uintptr_t)h, MB, d, HOST_TO_DRAM),
              synMappingNotFound);
    CHECK_SYN(synMemCopyAsync(s, d, MB, (uintptr_t)h, DRAM_TO_HOST),
              synMappingNotFound);
    OK(synHostMap(id, MB / 2, h));
    /* past the mapped part */
    CHECK_SYN(synMemCopyAsync(s, (uintptr_t)h, MB, d, HOST_TO_DRAM),
              synMappingNotFound);
    OK(synMemCopyAsync(s, (uintptr_t)h + 100, MB / 2 - 100, d,
                       HOST_TO_DRAM));
    /* mapped twice: two unmaps; unmapping what is not mapped succeeds */
    OK(synHostMap(id, MB / 2, h));
    OK(synHostUnmap(id, h));
    OK(synMemCopyAsync(s, (uintptr_t)h, 64, d, HOST_TO_DRAM));
    OK(synStreamSynchronize(s));    /* before the buffer is unmapped */
    OK(synHostUnmap(id, h));
    CHECK_SYN(synMemCopyAsync(s, (uintptr_t)h, 64, d, HOST_TO_DRAM),
              synMappingNotFound);
    OK(synHostUnmap(id, h));
    o = h + MB;
    CHECK_SYN(synHostMap(id, 0, o), synInvalidArgument);
    CHECK_SYN(synHostMap(5, 64, h), synInvalidArgument);
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_MAPPINGS, 0) == 1,
          "only the device memory is mapped now");
}

static void t_reject_direction(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *h = mapped(id, MB);
    uint64_t        d;
    synStreamHandle s;

    OK(synDeviceMalloc(id, MB, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    CHECK_SYN(synMemCopyAsync(s, (uintptr_t)h, MB, d, DIRECTION_ENUM_MAX),
              synInvalidArgument);
    CHECK_SYN(synMemCopyAsync(s, (uintptr_t)h, MB, d, (synDmaDir)-1),
              synInvalidArgument);
    /* the directions swapped: the "host" side is device memory */
    CHECK_SYN(synMemCopyAsync(s, d, MB, (uintptr_t)h, HOST_TO_DRAM),
              synMappingNotFound);
    CHECK_SYN(synMemCopyAsync(s, (uintptr_t)h, MB, d, DRAM_TO_HOST),
              synMappingNotFound);
    OK(synStreamSynchronize(s));
}

static void t_reject_foreign(void)
{
    synDeviceId     id = acquire(NULL), other;
    synStreamHandle s, s1, fake_s = (synStreamHandle)&id;
    synEventHandle  e, e1, fake_e = (synEventHandle)&id;
    uint64_t        d;

    OK(synDeviceAcquire(&other, NULL));
    OK(synDeviceMalloc(id, MB, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synStreamCreateGeneric(&s1, other, 0));
    OK(synEventCreate(&e, id, 0));
    OK(synEventCreate(&e1, other, 0));
    CHECK_SYN(synStreamCreateGeneric(&s, 17, 0), synInvalidArgument);
    CHECK_SYN(synEventCreate(&e, 17, 0), synInvalidArgument);
    CHECK_SYN(synMemCopyAsync(fake_s, d, 64, d + 64, DRAM_TO_DRAM),
              synInvalidArgument);
    CHECK_SYN(synMemCopyAsync(NULL, d, 64, d + 64, DRAM_TO_DRAM),
              synInvalidArgument);
    CHECK_SYN(synStreamSynchronize(fake_s), synInvalidArgument);
    CHECK_SYN(synStreamQuery(fake_s), synInvalidArgument);
    CHECK_SYN(synStreamDestroy(fake_s), synInvalidArgument);
    CHECK_SYN(synEventQuery(fake_e), synInvalidEventHandle);
    CHECK_SYN(synEventSynchronize(fake_e), synInvalidEventHandle);
    CHECK_SYN(synEventRecord(fake_e, s), synInvalidEventHandle);
    CHECK_SYN(synEventDestroy(fake_e), synInvalidEventHandle);
    CHECK_SYN(synEventRecord(e, fake_s), synInvalidArgument);
    /* an event records streams of its own device only */
    CHECK_SYN(synEventRecord(e, s1), synInvalidArgument);
    CHECK_SYN(synEventRecord(e1, s), synInvalidArgument);
    /* destroyed handles are foreign from then on */
    OK(synStreamDestroy(s1));
    CHECK_SYN(synStreamSynchronize(s1), synInvalidArgument);
    OK(synEventDestroy(e1));
    CHECK_SYN(synEventQuery(e1), synInvalidEventHandle);
    /* streams of a released device are gone with it */
    OK(synDeviceRelease(id));
    CHECK_SYN(synStreamQuery(s), synInvalidArgument);
    CHECK_SYN(synEventQuery(e), synInvalidEventHandle);
}

/*
 * In order per stream: under a slow DMA model, successive copies into the
 * same device range and reads back must see each write in turn
 */
static void t_order(void)
{
    synDeviceId     id = acquire(NULL);
    size_t          n = 4 * MB;
    uint8_t        *p[3], *o[3];
    synStreamHandle s;
    synEventHandle  e;
    uint64_t        d;
    int             i;

    OK(synDeviceMalloc(id, n, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synEventCreate(&e, id, 0));
    for (i = 0; i < 3; i++) {
        p[i] = mapped(id, n);
        o[i] = mapped(id, n);
        fill(p[i], n, 10 + i);
        memset(o[i], 0, n);
    }
    for (i = 0; i < 3; i++) {
        OK(synMemCopyAsync(s, (uintptr_t)p[i], n, d, HOST_TO_DRAM));
        OK(synMemCopyAsync(s, d, n, (uintptr_t)o[i], DRAM_TO_HOST));
    }
    OK(synEventRecord(e, s));
    /* 24 MiB at HLSIM_DMA_GBPS=0.1 take ~0.25 s: still running now */
    CHECK_SYN(synEventQuery(e), synBusy);
    CHECK_SYN(synStreamQuery(s), synBusy);
    CHECK_SYN(synStreamDestroy(s), synBusy);
    OK(synEventSynchronize(e));
    OK(synEventQuery(e));
    OK(synStreamQuery(s));
    for (i = 0; i < 3; i++) {
        CHECK(!memcmp(p[i], o[i], n), "read %d saw another write", i);
    }
    OK(synStreamDestroy(s));
}

/* Streams are independent: a short copy is not behind a long one */
static void t_streams_independent(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *big = mapped(id, 32 * MB), *small = mapped(id, 4096);
    synStreamHandle s1, s2;
    synEventHandle  e1, e2;
    uint64_t        d1, d2;

    OK(synDeviceMalloc(id, 32 * MB, 0, 0, &d1));
    OK(synDeviceMalloc(id, 4096, 0, 0, &d2));
    OK(synStreamCreateGeneric(&s1, id, 0));
    OK(synStreamCreateGeneric(&s2, id, 0));
    OK(synEventCreate(&e1, id, 0));
    OK(synEventCreate(&e2, id, 0));
    OK(synMemCopyAsync(s1, (uintptr_t)big, 32 * MB, d1, HOST_TO_DRAM));
    OK(synEventRecord(e1, s1));
    OK(synMemCopyAsync(s2, (uintptr_t)small, 4096, d2, HOST_TO_DRAM));
    OK(synEventRecord(e2, s2));
    OK(synEventSynchronize(e2));
    CHECK_SYN(synEventQuery(e1), synBusy);
    OK(synStreamSynchronize(s1));
    OK(synEventQuery(e1));
}

static void t_device_sync(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *h = mapped(id, 8 * MB);
    synStreamHandle s1, s2;
    synEventHandle  e1, e2;
    uint64_t        d;

    OK(synDeviceMalloc(id, 16 * MB, 0, 0, &d));
    OK(synStreamCreateGeneric(&s1, id, 0));
    OK(synStreamCreateGeneric(&s2, id, 0));
    OK(synEventCreate(&e1, id, 0));
    OK(synEventCreate(&e2, id, 0));
    OK(synMemCopyAsync(s1, (uintptr_t)h, 8 * MB, d, HOST_TO_DRAM));
    OK(synMemCopyAsync(s2, (uintptr_t)h, 8 * MB, d + 8 * MB, HOST_TO_DRAM));
    OK(synEventRecord(e1, s1));
    OK(synEventRecord(e2, s2));
    CHECK_SYN(synEventQuery(e1), synBusy);
    OK(synDeviceSynchronize(id));
    OK(synEventQuery(e1));
    OK(synEventQuery(e2));
    CHECK_SYN(synDeviceSynchronize(id + 1), synInvalidArgument);
}

/* Legacy device nodes (/dev/hlN, the misc-era ioctl codes) */
static void t_copy_legacy(void)
{
    roundtrip(NULL, synDeviceGaudi2, MB + 1);
}

static void t_events(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *h = mapped(id, 16 * MB);
    synStreamHandle s;
    synEventHandle  e, first;
    uint64_t        d;

    OK(synDeviceMalloc(id, 16 * MB, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synEventCreate(&e, id, 0));
    OK(synEventCreate(&first, id, 0));
    OK(synEventQuery(e));                   /* never recorded: empty */
    OK(synEventRecord(first, s));           /* nothing queued yet */
    OK(synEventQuery(first));
    OK(synMemCopyAsync(s, (uintptr_t)h, 16 * MB, d, HOST_TO_DRAM));
    OK(synEventRecord(e, s));
    CHECK_SYN(synEventQuery(e), synBusy);
    OK(synEventQuery(first));               /* recorded before the copy */
    OK(synStreamSynchronize(s));
    OK(synEventQuery(e));
    OK(synEventRecord(e, s));               /* re-recorded: nothing new */
    OK(synEventQuery(e));
    OK(synEventDestroy(e));
    OK(synEventDestroy(first));
}

/* A copy the DMA engine fails: reported by the stream and later events */
static void t_copy_error(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *h = mapped(id, MB);
    synStreamHandle s;
    synEventHandle  before, after;
    uint64_t        d;

    OK(synDeviceMalloc(id, MB, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synEventCreate(&before, id, 0));
    OK(synEventCreate(&after, id, 0));
    OK(synMemCopyAsync(s, (uintptr_t)h, MB, d, HOST_TO_DRAM));
    OK(synEventRecord(before, s));
    OK(synEventSynchronize(before));
    CHECK(!API(hlsim_fault_add)("pdma", 1, EFAULT), "fault");
    OK(synMemCopyAsync(s, (uintptr_t)h, MB, d, HOST_TO_DRAM));  /* queued */
    OK(synEventRecord(after, s));
    CHECK_SYN(synStreamSynchronize(s), synFail);
    CHECK_SYN(synEventQuery(after), synFail);
    OK(synEventQuery(before));
    /* an unmapped device address is an MMU fault of the engine */
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synMemCopyAsync(s, d, 64, 0x1000, DRAM_TO_DRAM));
    CHECK_SYN(synStreamSynchronize(s), synFail);
}

static void t_device_reset(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *h = mapped(id, MB);
    synStreamHandle s;
    uint64_t        d;

    OK(synDeviceMalloc(id, MB, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    CHECK(!API(hlsim_set_device_status)(0, GAUDI_HL_DEVICE_STATUS_IN_RESET),
          "reset");
    OK(synMemCopyAsync(s, (uintptr_t)h, MB, d, HOST_TO_DRAM));
    CHECK_SYN(synStreamSynchronize(s), synDeviceReset);
    CHECK(!API(hlsim_set_device_status)(0,
          GAUDI_HL_DEVICE_STATUS_OPERATIONAL), "operational");
}

/*
 * What the UCX module does in a SynapseAI process: borrow the fd (its
 * own open would get EBUSY), allocate and map DRAM on it, and the device
 * memory of both lives in one context, with one DRAM account
 */
static void t_coexist(void)
{
    synDeviceId       id = acquire(NULL);
    int               fd = synapse_fd(48), own;
    uint8_t          *h = mapped(id, MB), *o = mapped(id, MB);
    union hl_mem_args a;
    synStreamHandle   s;
    uint64_t          va, d, handle, base = dram_used(0);
    char              path[64];

    snprintf(path, sizeof(path), GAUDI_HL_ACCEL_NODE_FMT, 0);
    own = open(path, O_RDWR);
    CHECK((own < 0) && (errno == EBUSY), "own open: errno %d", errno);

    memset(&a, 0, sizeof(a));
    a.in.op             = HL_MEM_OP_ALLOC;
    a.in.alloc.mem_size = 64 * MB;
    CHECK(!ioctl(fd, GAUDI_HL_DRM_IOCTL_MEMORY, &a), "ALLOC on the borrowed "
          "fd: errno %d", errno);
    handle = a.out.handle;
    memset(&a, 0, sizeof(a));
    a.in.op                = HL_MEM_OP_MAP;
    a.in.map_device.handle = handle;
    CHECK(!ioctl(fd, GAUDI_HL_DRM_IOCTL_MEMORY, &a), "MAP: errno %d", errno);
    va = a.out.device_virt_addr;
    CHECK(dram_used(0) == base + 64 * MB, "one account");

    OK(synDeviceMalloc(id, MB, 0, 0, &d));
    CHECK((d + MB <= va) || (d >= va + 64 * MB), "SynapseAI handed out "
          "the module's DRAM");
    CHECK(dram_used(0) == base + 128 * MB, "one account");

    fill(h, MB, 5);
    memset(o, 0, MB);
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synMemCopyAsync(s, (uintptr_t)h, MB, va + 4096, HOST_TO_DRAM));
    OK(synMemCopyAsync(s, va + 4096, MB, d, DRAM_TO_DRAM));
    OK(synMemCopyAsync(s, d, MB, (uintptr_t)o, DRAM_TO_HOST));
    OK(synStreamSynchronize(s));
    CHECK(!memcmp(h, o, MB), "copy through the module's DRAM differs");

    /* SynapseAI's release closes the fd the module borrowed */
    OK(synDeviceRelease(id));
    CHECK((fcntl(fd, F_GETFD) < 0) && (errno == EBADF), "fd still open");
    CHECK(dram_used(0) == 0, "DRAM used %lld after release",
          (long long)dram_used(0));
}

static void t_no_device_after_destroy(void)
{
    synDeviceId     id = acquire(NULL);
    synDeviceInfo   info;
    synStreamHandle s;

    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synDestroy());
    CHECK_SYN(synDeviceGetInfo(id, &info), synUninitialized);
    OK(synInitialize());
    CHECK_SYN(synDeviceGetInfo(id, &info), synInvalidArgument);
    CHECK_SYN(synStreamCreateGeneric(&s, id, 0), synInvalidArgument);
    CHECK_SYN(synStreamQuery(s), synInvalidArgument);
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_CONTEXTS, 0) == 0,
          "context left open");
}

/* ---- runner ---- */

static const test_t tests[] = {
    { "init", t_init, "" },
    { "acquire", t_acquire, "HLSIM_RELEASE_RESET_MS=0" },
    { "acquire_after_release", t_acquire_after_release,
      "HLSIM_RELEASE_RESET_MS=1000" },
    { "acquire_select", t_acquire_select,
      "HLSIM_MODULE_IDS=5,3 HLSIM_RELEASE_RESET_MS=0" },
    { "acquire_busy", t_acquire_busy, "" },
    { "info48", t_info48, "" },
    { "info40", t_info40, "SYNSIM_INFO_FD_OFFSET=40" },
    { "info_bad_layout", t_info_bad_layout, "SYNSIM_INFO_FD_OFFSET=44" },
    { "malloc", t_malloc, "" },
    { "copy_gaudi2", t_copy_gaudi2, "" },
    { "copy_gaudi3", t_copy_gaudi3, "HLSIM_ASIC_1=gaudi3" },
    { "copy_gaudi1", t_copy_gaudi1, "HLSIM_ASIC=gaudi1" },
    { "copy_pages", t_copy_pages, "" },
    { "copy_multiple", t_copy_multiple, "HLSIM_ASIC=gaudi3" },
    { "reject_unmapped", t_reject_unmapped, "" },
    { "reject_direction", t_reject_direction, "" },
    { "reject_foreign", t_reject_foreign, "" },
    { "order", t_order, "HLSIM_DMA_GBPS=0.1" },
    { "order_gaudi3", t_order, "HLSIM_DMA_GBPS=0.1 HLSIM_ASIC=gaudi3" },
    { "streams_independent", t_streams_independent, "HLSIM_DMA_GBPS=0.1" },
    { "events", t_events, "HLSIM_DMA_GBPS=0.1" },
    { "device_sync", t_device_sync, "HLSIM_DMA_GBPS=0.1" },
    { "copy_legacy", t_copy_legacy, "HLSIM_NODES=legacy" },
    { "copy_error", t_copy_error, "" },
    { "device_reset", t_device_reset, "" },
    { "coexist", t_coexist, "" },
    { "destroy", t_no_device_after_destroy, "" },
};

/* a fresh node with the defaults unless the test says otherwise */
static const char *const test_unset[] = {
    "HLSIM_NUM_DEVICES", "HLSIM_ASIC", "HLSIM_ASIC_0", "HLSIM_ASIC_1",
    "HLSIM_FAULTS", "HLSIM_MODULE_IDS", "HLSIM_DMA_GBPS", "HLSIM_NODES",
    "HLSIM_RELEASE_RESET_MS", "SYNSIM_INFO_FD_OFFSET", NULL
};

static const test_env_t test_env = {test_unset, ""};

int main(int argc, char **argv)
{
    char base[] = "/tmp/synsim-test-XXXXXX";

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (dlsym(RTLD_DEFAULT, "hlsim_pdma_copy") == NULL) {
        fprintf(stderr, "test_synsim: run with LD_PRELOAD=libhlsim.so\n");
        return 2;
    }
    return test_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv,
                     base, &test_env);
}

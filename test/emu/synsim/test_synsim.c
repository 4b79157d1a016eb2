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
#include "synsim_scal.h"
#include <uct/gaudi/hl/gaudi_hl_abi.h>
#include "hlsim.h"
#include "test_runner.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define MB        (1ULL << 20)
#define SYNSIM_DFA_KILL_S_TEST 7   /* > the DFA's 5 s before SIGKILL */
#define PG        4096ULL
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

/* A driver memory op on @fd (accel node): 0 or errno */
static int mem_op(int fd, union hl_mem_args *a)
{
    return ioctl(fd, GAUDI_HL_DRM_IOCTL_MEMORY, a) ? errno : 0;
}

/* ALLOC of @size on @fd: 0 or errno */
static int driver_alloc(int fd, uint64_t size)
{
    union hl_mem_args a;

    memset(&a, 0, sizeof(a));
    a.in.op             = HL_MEM_OP_ALLOC;
    a.in.alloc.mem_size = size;
    return mem_op(fd, &a);
}

/* EXPORT_DMABUF_FD of [addr, addr + size) at @off: the fd, or -errno */
static int export_dmabuf(int fd, uint64_t addr, uint64_t size, uint64_t off)
{
    union hl_mem_args       a;
    struct gaudi_hl_mem_in *in = (struct gaudi_hl_mem_in*)&a.in;
    int                     err;

    memset(&a, 0, sizeof(a));
    in->op                        = HL_MEM_OP_EXPORT_DMABUF_FD;
    in->flags                     = O_RDWR | O_CLOEXEC;
    in->export_dmabuf_fd.addr     = addr;
    in->export_dmabuf_fd.mem_size = size;
    in->export_dmabuf_fd.offset   = off;
    err = mem_op(fd, &a);
    return err ? -err : (int)a.out.fd;
}

/* Another process opens device node @n and holds it until we exit */
static pid_t hold_node(int n)
{
    char  path[64], c;
    int   pfd[2], fd;
    pid_t pid;

    CHECK(!pipe(pfd), "pipe");
    pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        snprintf(path, sizeof(path), GAUDI_HL_ACCEL_NODE_FMT, n);
        fd = open(path, O_RDWR);
        c  = (fd >= 0) ? 'y' : 'n';
        if (write(pfd[1], &c, 1) != 1) {
            _exit(1);
        }
        pause();
        _exit(0);
    }
    close(pfd[1]);
    CHECK((read(pfd[0], &c, 1) == 1) && (c == 'y'), "holder of node %d", n);
    close(pfd[0]);
    return pid;
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


/* A page-aligned host buffer of @pages pages (not mapped) */
static uint8_t *pages(size_t n)
{
    void *p = NULL;

    CHECK(!posix_memalign(&p, PG, n * PG), "posix_memalign");
    memset(p, 0, n * PG);
    return p;
}

/* Whether [p, p + len) is mapped in this process */
static int host_mapped(const void *p, size_t len)
{
    return msync((void*)((uintptr_t)p & ~(PG - 1)), len, MS_ASYNC) == 0;
}

/* A copy of [h, h + len) to the device, synchronized */
static synStatus h2d(synStreamHandle s, const void *h, size_t len,
                     uint64_t d)
{
    synStatus st = synMemCopyAsync(s, (uintptr_t)h, len, d, HOST_TO_DRAM);

    if (st == synSuccess) {
        OK(synStreamSynchronize(s));
    }
    return st;
}

static int64_t mappings(void)
{
    return API(hlsim_get_counter)(HLSIM_COUNTER_MAPPINGS, 0);
}

/* ---- tests ---- */

static void t_init(void)
{
    uint32_t    n = 0;
    synDeviceId id;

    CHECK_SYN(synDeviceGetCount(&n), synUninitialized);
    CHECK_SYN(synDeviceAcquire(&id, NULL), synUninitialized);
    OK(synInitialize());
    OK(synInitialize());        /* a second one succeeds */
    OK(synDeviceGetCount(&n));
    CHECK(n == 2, "%u devices, want 2", n);
    OK(synDestroy());
    CHECK_SYN(synDestroy(), synUninitialized);
}

/* One device per process: id 0, the ids of calls ignored */
static void t_acquire(void)
{
    synDeviceId   a = 99, c = 99;
    synDeviceInfo info;
    uint64_t      d;
    char          path[64];
    int           fd;

    OK(synInitialize());
    OK(synDeviceAcquire(&a, NULL));
    CHECK(a == 0, "id %u", a);
    CHECK_SYN(synDeviceAcquire(&c, ""), synDeviceAlreadyAcquired);
    CHECK_SYN(synDeviceAcquire(&c, DEV1_BUS), synDeviceAlreadyAcquired);
    CHECK_SYN(synDeviceAcquire(&c, DEV0_BUS), synDeviceAlreadyAcquired);
    CHECK_SYN(synDeviceAcquireByModuleId(&c, 1), synDeviceAlreadyAcquired);
    CHECK(c == 99, "id written by a refused acquire");
    /* any id means the process's device */
    OK(synDeviceGetInfo(7, &info));
    CHECK(info.deviceType == synDeviceGaudi2, "type %d", info.deviceType);
    OK(synDeviceMalloc(9, 4096, 0, 0, &d));
    OK(synDeviceFree(3, d, 0));
    /* one compute context per device: nobody else can open it */
    snprintf(path, sizeof(path), GAUDI_HL_ACCEL_NODE_FMT, 0);
    CHECK((open(path, O_RDWR) < 0) && (errno == EBUSY),
          "second open of an acquired device: errno %d", errno);
    OK(synDeviceRelease(5));
    CHECK_SYN(synDeviceRelease(a), synNoDeviceFound);
    OK(synDeviceAcquire(&c, DEV1_BUS));
    CHECK(c == 0, "re-acquired id %u", c);
    OK(synDestroy());
    /* released for real: the node opens again */
    snprintf(path, sizeof(path), GAUDI_HL_ACCEL_NODE_FMT, 1);
    fd = open(path, O_RDWR);
    CHECK(fd >= 0, "open after synDestroy: errno %d", errno);
    close(fd);
}

/*
 * Gaudi2/3 reset after their user closes the device, inside the close: the
 * releasing process re-acquires at once; an acquire during another
 * process's reset waits inside the call until it is over, by bus and "any
 * device"
 */
static void t_acquire_after_release(void)
{
    synDeviceId     id = acquire(DEV0_BUS), again = 99;
    synDeviceInfoV2 info;

    OK(synDeviceRelease(id));
    OK(synDeviceAcquire(&again, DEV0_BUS));
    CHECK(again == 0, "id %u", again);
    OK(synDeviceRelease(again));
    /* any device: waits for device 0 rather than taking device 1 */
    OK(synDeviceAcquire(&again, NULL));
    OK(synDeviceGetInfoV2(again, &info));
    CHECK(info.deviceIndex == 0, "took device %u", info.deviceIndex);
}

static void t_acquire_select(void)
{
    synDeviceId     id = 99;
    synDeviceInfoV2 info;

    OK(synInitialize());
    CHECK_SYN(synDeviceAcquire(&id, "0000:99:00.0"), synNoDeviceFound);
    OK(synDeviceAcquire(&id, DEV1_BUS));
    OK(synDeviceGetInfoV2(id, &info));
    CHECK((id == 0) && (info.deviceIndex == 1), "by bus: id %u index %u", id,
          info.deviceIndex);
    OK(synDeviceRelease(id));
    CHECK_SYN(synDeviceAcquireByModuleId(&id, 4), synNoDeviceFound);
    OK(synDeviceAcquireByModuleId(&id, 3));   /* HLSIM_MODULE_IDS=5,3 */
    OK(synDeviceGetInfoV2(id, &info));
    CHECK(info.deviceIndex == 1, "by module id: index %u", info.deviceIndex);
    OK(synDeviceRelease(id));
    OK(synDeviceAcquireByModuleId(&id, 5));
    OK(synDeviceGetInfoV2(id, &info));
    CHECK(info.deviceIndex == 0, "by module id: index %u", info.deviceIndex);
}
/* Another process holds device 0: acquire takes device 1 */
/*
 * Another process holds device 0: by bus that is synFail, by module id
 * synNoDeviceFound; "any device" skips it and takes device 1
 */
static void t_acquire_busy(void)
{
    pid_t           pid = hold_node(0);
    synDeviceId     id = 99;
    synDeviceInfoV2 info;

    OK(synInitialize());
    CHECK_SYN(synDeviceAcquire(&id, DEV0_BUS), synFail);
    CHECK_SYN(synDeviceAcquireByModuleId(&id, 0), synNoDeviceFound);
    OK(synDeviceAcquire(&id, NULL));
    OK(synDeviceGetInfoV2(id, &info));
    CHECK(info.deviceIndex == 1, "acquired %u, want the free device 1",
          info.deviceIndex);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/*
 * The compute open refused with EAGAIN for another reason than a reset
 * status (as for a previous context still in release): by bus synFail at
 * once, "any device" skips the device; SynapseAI waits only while the
 * control node says IN_RESET(_AFTER_DEVICE_RELEASE)
 * (physical_device.cpp:82-110), never on EAGAIN. HLSIM_FAULTS fails the
 * 2nd and 4th node opens (each acquire opens the control node first).
 */
static void t_acquire_in_release(void)
{
    synDeviceId     id = 99;
    synDeviceInfoV2 info;
    struct timespec t0, t1;

    OK(synInitialize());
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_SYN(synDeviceAcquire(&id, DEV0_BUS), synFail);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(t1.tv_sec - t0.tv_sec < 2, "acquire waited %ld s",
          (long)(t1.tv_sec - t0.tv_sec));
    OK(synDeviceAcquire(&id, NULL));
    OK(synDeviceGetInfoV2(id, &info));
    CHECK(info.deviceIndex == 1, "took device %u, want 1", info.deviceIndex);
    OK(synDeviceRelease(id));
    OK(synDeviceAcquire(&id, DEV0_BUS));
    OK(synDeviceGetInfoV2(id, &info));
    CHECK(info.deviceIndex == 0, "took device %u, want 0", info.deviceIndex);
}

/* synDeviceGetMemoryInfo: the pool's free bytes follow synDeviceMalloc;
 * total is what the framework may use; no device: synFail */
static void t_memory_info(void)
{
    uint64_t    free0, total0, free1, total1, d;
    synDeviceId id;

    OK(synInitialize());
    CHECK_SYN(synDeviceGetMemoryInfo(0, &free0, &total0), synFail);
    id = acquire(NULL);
    CHECK_SYN(synDeviceGetMemoryInfo(id, NULL, &total0), synInvalidArgument);
    OK(synDeviceGetMemoryInfo(id, &free0, &total0));
    CHECK((free0 == total0) && (total0 > 0), "free %llu total %llu at "
          "acquire", (unsigned long long)free0, (unsigned long long)total0);
    OK(synDeviceMalloc(id, 4096, 0, 0, &d));
    OK(synDeviceGetMemoryInfo(id, &free1, &total1));
    CHECK((total1 == total0) && (free0 - free1 == 4096), "free %llu -> %llu",
          (unsigned long long)free0, (unsigned long long)free1);
    OK(synDeviceFree(id, d, 0));
    OK(synDeviceGetMemoryInfo(id, &free1, &total1));
    CHECK(free1 == free0, "free %llu after the free, %llu before",
          (unsigned long long)free1, (unsigned long long)free0);
}

/* Every device held by someone else: "any device" finds none */
static void t_acquire_none(void)
{
    pid_t       p0 = hold_node(0), p1 = hold_node(1);
    synDeviceId id = 99;

    OK(synInitialize());
    CHECK_SYN(synDeviceAcquire(&id, NULL), synNoDeviceFound);
    CHECK_SYN(synDeviceAcquire(&id, DEV1_BUS), synFail);
    kill(p0, SIGKILL);
    kill(p1, SIGKILL);
    waitpid(p0, NULL, 0);
    waitpid(p1, NULL, 0);
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
    OK(synDeviceRelease(id));
    CHECK_SYN(synDeviceGetInfo(id, (synDeviceInfo*)raw), synFail);
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

/* Pieces of the one pool: 128-byte aligned, synFail when it is exhausted
 * or flags are given; no driver call after acquire */
static void t_malloc(void)
{
    synDeviceId id   = acquire(NULL);
    int64_t     used = dram_used(0);
    uint64_t    a, b, c;

    OK(synDeviceMalloc(id, 1000, 0, 0, &a));
    OK(synDeviceMalloc(id, 5000, 0, 0, &b));
    OK(synDeviceMalloc(id, 100 * MB, 0, 0, &c));
    CHECK((a % 128 == 0) && (b % 128 == 0) && (c % 128 == 0) &&
          ((b >= a + 1000) || (a >= b + 5000)), "pieces 0x%llx 0x%llx",
          (unsigned long long)a, (unsigned long long)b);
    CHECK(dram_used(0) == used, "synDeviceMalloc went to the driver");
    CHECK_SYN(synDeviceMalloc(id, 1ULL << 40, 0, 0, &c), synFail);
    CHECK_SYN(synDeviceMalloc(id, 64, 0, 1, &c), synFail);
    CHECK_SYN(synDeviceMalloc(id, 0, 0, 0, &c), synInvalidArgument);
    CHECK_SYN(synDeviceFree(id, a + 128, 0), synInvalidArgument);
    OK(synDeviceFree(id, a, 0));
    CHECK_SYN(synDeviceFree(id, a, 0), synInvalidArgument);
    OK(synDeviceFree(id, b, 0));
    OK(synDeviceRelease(id));
    CHECK(dram_used(0) == 0, "release returns the pools: %lld used",
          (long long)dram_used(0));
    CHECK_SYN(synDeviceMalloc(id, 64, 0, 0, &c), synFail);
}

/* SCAL's pools as a process finds them: through libscal (RTLD_NOLOAD once
 * libSynapse is loaded) and synDeviceGetInfoV2 */
static void check_pool(uint64_t others, uint64_t total)
{
    synDeviceId             id = acquire(NULL);
    int                     fd = synapse_fd(48);
    uint64_t                dram = API(hlsim_get_counter)(
                                   HLSIM_COUNTER_DRAM_USED, 0);
    void                   *scal = dlopen("libscal.so", RTLD_NOW |
                                          RTLD_NOLOAD);
    scal_handle_t           h;
    scal_pool_handle_t      pool;
    scal_memory_pool_infoV2 pi;
    synDeviceInfoV2         info;
    uint64_t                a, b, page = 64 * MB;
    int                     dfd;

    CHECK(scal != NULL, "libscal.so not loaded with libSynapse");
    CHECK(!API(scal_get_handle_from_fd)(fd, &h), "no SCAL on fd %d", fd);
    CHECK(API(scal_get_handle_from_fd)(fd + 100, &h) == SCAL_FAILURE,
          "SCAL on a foreign fd");
    CHECK(!API(scal_get_pool_handle_by_name)(h, "global_hbm", &pool),
          "pool");
    CHECK(API(scal_get_pool_handle_by_name)(h, "nope", &pool) ==
          SCAL_NOT_FOUND, "unknown pool");
    CHECK(!API(scal_get_pool_handle_by_name)(h, "global_hbm", &pool),
          "pool");
    CHECK(!API(scal_pool_get_infoV2)(pool, &pi), "pool info");
    OK(synDeviceGetInfoV2(5, &info));
    CHECK(!strcmp(pi.name, "global_hbm"), "name %s", pi.name);
    CHECK(info.fd == (uint32_t)fd, "V2 fd %u", info.fd);
    CHECK(pi.device_base_allocated_address == info.globalHbmBaseAddress,
          "MAP VA 0x%llx, globalHbmBaseAddress 0x%llx",
          (unsigned long long)pi.device_base_allocated_address,
          (unsigned long long)info.globalHbmBaseAddress);
    CHECK(pi.device_base_address == pi.device_base_allocated_address +
          others, "pool at +0x%llx, want +0x%llx", (unsigned long long)
          (pi.device_base_address - pi.device_base_allocated_address),
          (unsigned long long)others);
    CHECK((pi.totalSize == total) && (pi.freeSize == total),
          "pool size %llu free %llu, want %llu",
          (unsigned long long)pi.totalSize,
          (unsigned long long)pi.freeSize, (unsigned long long)total);
    /* the driver has nothing left: its own allocation fails */
    CHECK(dram == info.dramSize, "DRAM used %llu of %llu",
          (unsigned long long)dram, (unsigned long long)info.dramSize);
    CHECK(driver_alloc(fd, page) == ENOMEM, "driver ALLOC after acquire");

    OK(synDeviceMalloc(id, 3 * MB, 0, 0, &a));
    OK(synDeviceMalloc(id, 3 * MB, 0, 0, &b));
    CHECK((a >= pi.device_base_address) && (b + 3 * MB <=
          pi.device_base_address + pi.totalSize), "pieces outside the pool");
    CHECK(!API(scal_pool_get_infoV2)(pool, &pi) &&
          (pi.freeSize <= total - 6 * MB), "free %llu",
          (unsigned long long)pi.freeSize);
    /* a piece exports as the pool's mapping with an offset; its own
     * address is no MAP start */
    dfd = export_dmabuf(fd, info.globalHbmBaseAddress, 4 * MB,
                        (b & ~(4096ULL - 1)) - info.globalHbmBaseAddress);
    CHECK(dfd >= 0, "export of the pool mapping: %d", dfd);
    close(dfd);
    CHECK(export_dmabuf(fd, b, 3 * MB, 0) < 0, "piece exported by itself");
    OK(synDeviceFree(id, a, 0));
    OK(synDeviceFree(id, b, 0));
    CHECK(!API(scal_pool_get_infoV2)(pool, &pi) && (pi.freeSize == total),
          "free %llu after synDeviceFree", (unsigned long long)pi.freeSize);
    OK(synDeviceRelease(id));
    CHECK(dram_used(0) == 0, "the pools outlive the release");
    CHECK(API(scal_get_handle_from_fd)(fd, &h) == SCAL_FAILURE,
          "SCAL instance after release");
}

/* Gaudi2: one mapping of all DRAM; hbm_binary (32 MiB) and hbm_shared
 * (128 MiB) before global_hbm, 4 KiB left at the end */
static void t_pool_gaudi2(void)
{
    check_pool(160 * MB, 16384 * MB - 64 * MB - 160 * MB - 4096);
}

/* Gaudi3: a mapping per pool of whole pages: 1 + 2 + 2 pages for the
 * others, global_hbm the remaining 250 pages less 4 KiB */
static void t_pool_gaudi3(void)
{
    check_pool(0, 250 * 64 * MB - 4096);
}

/* Gaudi1: no SCAL; a best-fit heap over the user DRAM, 128 B aligned */
static void t_malloc_gaudi1(void)
{
    synDeviceId     id = acquire(NULL);
    synDeviceInfoV2 info;
    scal_handle_t   h;
    uint64_t        a, b;

    OK(synDeviceGetInfoV2(id, &info));
    CHECK(info.globalHbmBaseAddress == info.dramBaseAddress, "base");
    CHECK(API(scal_get_handle_from_fd)(info.fd, &h) == SCAL_FAILURE,
          "SCAL on Gaudi1");
    OK(synDeviceMalloc(id, 1000, 0, 0, &a));
    OK(synDeviceMalloc(id, 1000, 0, 0, &b));
    CHECK((a >= info.dramBaseAddress) && (a % 128 == 0) && (b % 128 == 0) &&
          ((b >= a + 1000) || (a >= b + 1000)), "pieces 0x%llx 0x%llx",
          (unsigned long long)a, (unsigned long long)b);
    CHECK(dram_used(0) == 2000, "driver account %lld",
          (long long)dram_used(0));
    CHECK_SYN(synDeviceMalloc(id, info.dramSize, 0, 0, &b), synFail);
    OK(synDeviceFree(id, a, 0));
    OK(synDeviceRelease(id));
    CHECK(dram_used(0) == 0, "account after release");
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
    OK(synStreamSynchronize(s));    /* before the buffer is unmapped */
    OK(synHostUnmap(id, h));
    CHECK_SYN(synMemCopyAsync(s, (uintptr_t)h, 64, d, HOST_TO_DRAM),
              synMappingNotFound);
    /* unmapping what is not mapped succeeds */
    OK(synHostUnmap(id, h));
    o = h + MB;
    CHECK_SYN(synHostMap(id, 0, o), synInvalidArgument);
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_MAPPINGS, 0) == 1,
          "only the device memory is mapped now");
}

/* A map inside a live entry succeeds and creates nothing; unmapping an
 * address that is not an entry's start removes nothing */
static void t_host_map_inside(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *p  = pages(4);
    synStreamHandle s;
    uint64_t        d;
    int64_t         n;

    OK(synDeviceMalloc(id, 4 * PG, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synHostMap(id, 4 * PG, p));
    n = mappings();
    OK(synHostMap(id, PG, p + PG));
    OK(synHostMap(id, 2 * PG, p));
    OK(synHostMap(id, 100, p + 2 * PG + 7));
    CHECK(mappings() == n, "%lld MAPs, want %lld: a map inside a live one "
          "made a new one", (long long)mappings(), (long long)n);
    OK(synHostUnmap(id, p + PG));
    OK(h2d(s, p + PG, PG, d));
    OK(synHostUnmap(id, p));
    CHECK_SYN(h2d(s, p + PG, PG, d), synMappingNotFound);
    CHECK(mappings() == n - 1, "the entry's MAP is still there");
}

/* A map that starts inside a live entry and runs past it is refused,
 * the same start with a larger size too */
static void t_host_map_past(void)
{
    synDeviceId id = acquire(NULL);
    uint8_t    *p  = pages(4);

    OK(synHostMap(id, 2 * PG, p));
    CHECK_SYN(synHostMap(id, 2 * PG, p + PG), synInvalidArgument);
    CHECK_SYN(synHostMap(id, 3 * PG, p), synInvalidArgument);
    CHECK_SYN(synHostMap(id, 3 * PG - 100, p + 100), synInvalidArgument);
    /* right after it is a new entry */
    OK(synHostMap(id, PG, p + 2 * PG));
    OK(synHostUnmap(id, p + 2 * PG));
    OK(synHostUnmap(id, p));
}

/* A map that starts before a live entry is accepted; a copy is translated
 * by the entry with the greatest start <= its address only */
static void t_host_translate_nearest(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *p  = pages(4);
    uint8_t        *want = xmalloc(4 * PG);
    synStreamHandle s;
    uint64_t        d;

    OK(synDeviceMalloc(id, 4 * PG, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synHostMap(id, PG, p + PG));
    OK(synHostMap(id, 4 * PG, p));
    CHECK_SYN(h2d(s, p + PG + 100, 2 * PG, d), synMappingNotFound);
    CHECK_SYN(h2d(s, p + PG, 2 * PG, d), synMappingNotFound);
    fill(p, 4 * PG, 3);
    /* past the inner entry's end: that entry is still the nearest */
    CHECK_SYN(h2d(s, p + 2 * PG, 2 * PG, d), synMappingNotFound);
    OK(h2d(s, p, 4 * PG, d));
    OK(h2d(s, p + PG + 100, PG - 100, d + PG + 100));
    memset(p, 0, 4 * PG);
    OK(synMemCopyAsync(s, d, 4 * PG, (uintptr_t)p, DRAM_TO_HOST));
    OK(synStreamSynchronize(s));
    fill(want, 4 * PG, 3);
    CHECK(!memcmp(p, want, 4 * PG), "data differs");
    /* without the inner entry the straddling copy translates */
    OK(synHostUnmap(id, p + PG));
    OK(h2d(s, p + PG + 100, 2 * PG, d));
}

/* No reference count: one unmap removes an entry mapped twice */
static void t_host_unmap_whole(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *p  = pages(2);
    synStreamHandle s;
    uint64_t        d;

    OK(synDeviceMalloc(id, 2 * PG, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synHostMap(id, 2 * PG, p));
    OK(synHostMap(id, 2 * PG, p));
    OK(synHostUnmap(id, p));
    CHECK_SYN(h2d(s, p, PG, d), synMappingNotFound);
    CHECK(mappings() == 1, "only the device memory is mapped now");
}

/* synHostMalloc: fresh page-aligned pinned pages whose entry covers the
 * size asked for; synHostFree frees them; flags must be 0 */
static void t_host_malloc(void)
{
    synDeviceId     id = acquire(NULL);
    synStreamHandle s;
    uint8_t        *p = NULL, *o = pages(4);
    void           *z = (void*)1;
    uint64_t        d;
    size_t          size = 3 * PG + 100;

    OK(synDeviceMalloc(id, 4 * PG, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    CHECK_SYN(synHostMalloc(id, PG, 1, (void**)&p), synFail);
    OK(synHostMalloc(id, 0, 0, &z));
    CHECK(z == NULL, "size 0 gives %p", z);
    OK(synHostMalloc(id, size, 0, (void**)&p));
    CHECK(((uintptr_t)p & (PG - 1)) == 0, "%p not page-aligned", p);
    fill(p, size, 9);
    OK(h2d(s, p, size, d));
    OK(synHostMap(id, 4 * PG, o));
    OK(synMemCopyAsync(s, d, size, (uintptr_t)o, DRAM_TO_HOST));
    OK(synStreamSynchronize(s));
    CHECK(!memcmp(p, o, size), "data differs");
    /* inside: nothing new; past the size asked for: not mapped */
    OK(synHostMap(id, PG, p + PG));
    CHECK_SYN(h2d(s, p + 3 * PG, PG, d), synMappingNotFound);
    CHECK_SYN(synHostFree(id, p + PG, 0), synInvalidArgument);
    CHECK_SYN(synHostFree(id, p, 1), synFail);
    OK(synHostFree(id, p, 0));
    CHECK(!host_mapped(p, PG), "synHostFree left the buffer allocated");
    CHECK_SYN(synHostFree(id, p, 0), synInvalidArgument);
    OK(synHostFree(id, NULL, 0));
    /* synHostFree of a synHostMap'ed buffer unmaps it, frees nothing */
    OK(synHostFree(id, o, 0));
    CHECK_SYN(h2d(s, o, PG, d), synMappingNotFound);
    o[0] = 1;
    free(o);
}

/* synHostUnmap of a synHostMalloc buffer frees it too */
static void t_host_unmap_frees(void)
{
    synDeviceId     id = acquire(NULL);
    synStreamHandle s;
    uint8_t        *p = NULL;
    uint64_t        d;

    OK(synDeviceMalloc(id, 2 * PG, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synHostMalloc(id, 2 * PG, 0, (void**)&p));
    p[0] = 1;
    OK(synHostUnmap(id, p + PG));          /* not its start: nothing */
    CHECK(host_mapped(p, 2 * PG), "buffer freed by an inner unmap");
    OK(synHostUnmap(id, p));
    CHECK(!host_mapped(p, PG), "synHostUnmap left a synHostMalloc buffer "
          "allocated");
    CHECK_SYN(h2d(s, p, PG, d), synMappingNotFound);
    CHECK_SYN(synHostFree(id, p, 0), synInvalidArgument);
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
    synDeviceId     id = acquire(NULL);
    synStreamHandle s, s1, fake_s = (synStreamHandle)&id;
    synEventHandle  e, e1, fake_e = (synEventHandle)&id;
    uint64_t        d;

    OK(synDeviceMalloc(id, MB, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synStreamCreateGeneric(&s1, 17, 0));     /* ids are ignored */
    OK(synEventCreate(&e, id, 0));
    OK(synEventCreate(&e1, 17, 0));
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
    OK(synEventRecord(e1, s));
    /* destroyed handles are foreign from then on */
    OK(synStreamDestroy(s1));
    CHECK_SYN(synStreamSynchronize(s1), synInvalidArgument);
    OK(synEventDestroy(e1));
    CHECK_SYN(synEventQuery(e1), synInvalidEventHandle);
    /* streams of a released device are gone with it */
    OK(synDeviceRelease(id));
    CHECK_SYN(synStreamQuery(s), synInvalidArgument);
    CHECK_SYN(synEventQuery(e), synInvalidEventHandle);
    CHECK_SYN(synStreamCreateGeneric(&s, id, 0), synFail);
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

/* SynapseAI's queue sets (docs/synapse.md, "Streams and queues"): the
 * first copies of four streams put them on sets 0, 1, 2, 0; a copy on the
 * fourth waits behind the first stream's, the second's does not */
static void t_streams_share_queue(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *big = mapped(id, 32 * MB), *small = mapped(id, 4096);
    synStreamHandle s[4];
    synEventHandle  ebig, e2, e4;
    uint64_t        d;
    int             i;

    OK(synDeviceMalloc(id, 32 * MB + 8 * 4096, 0, 0, &d));
    for (i = 0; i < 4; i++) {
        OK(synStreamCreateGeneric(&s[i], id, 0));
        OK(synMemCopyAsync(s[i], (uintptr_t)small, 4096,
                           d + 32 * MB + i * 4096, HOST_TO_DRAM));
        OK(synStreamSynchronize(s[i]));
    }
    OK(synEventCreate(&ebig, id, 0));
    OK(synEventCreate(&e2, id, 0));
    OK(synEventCreate(&e4, id, 0));
    OK(synMemCopyAsync(s[0], (uintptr_t)big, 32 * MB, d, HOST_TO_DRAM));
    OK(synEventRecord(ebig, s[0]));
    OK(synMemCopyAsync(s[1], (uintptr_t)small, 4096, d + 32 * MB,
                       HOST_TO_DRAM));
    OK(synEventRecord(e2, s[1]));
    OK(synMemCopyAsync(s[3], (uintptr_t)small, 4096, d + 32 * MB + 4096,
                       HOST_TO_DRAM));
    OK(synEventRecord(e4, s[3]));
    OK(synEventSynchronize(e2));
    CHECK_SYN(synEventQuery(ebig), synBusy);     /* set 1: not behind it */
    CHECK_SYN(synEventQuery(e4), synBusy);       /* set 0: behind it */
    OK(synEventSynchronize(e4));
    OK(synEventQuery(ebig));
    /* the other direction of set 0 is another queue */
    OK(synMemCopyAsync(s[0], (uintptr_t)big, 32 * MB, d, HOST_TO_DRAM));
    OK(synEventRecord(ebig, s[0]));
    OK(synMemCopyAsync(s[3], d + 32 * MB, 4096, (uintptr_t)small,
                       DRAM_TO_HOST));
    OK(synEventRecord(e4, s[3]));
    OK(synEventSynchronize(e4));
    CHECK_SYN(synEventQuery(ebig), synBusy);
    OK(synStreamSynchronize(s[0]));
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
    OK(synDeviceSynchronize(id + 1));      /* the id is ignored */
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
/* Stream destroy with work pending synchronizes first: the copy lands */
static void t_stream_destroy_waits(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *h = mapped(id, 8 * MB), *o = mapped(id, 8 * MB);
    synStreamHandle s;
    synEventHandle  e;
    uint64_t        d;

    fill(h, 8 * MB, 4);
    memset(o, 0, 8 * MB);
    OK(synDeviceMalloc(id, 8 * MB, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synEventCreate(&e, id, 0));
    OK(synMemCopyAsync(s, (uintptr_t)h, 8 * MB, d, HOST_TO_DRAM));
    OK(synMemCopyAsync(s, d, 8 * MB, (uintptr_t)o, DRAM_TO_HOST));
    OK(synEventRecord(e, s));
    CHECK_SYN(synEventQuery(e), synBusy);
    OK(synStreamDestroy(s));
    CHECK(!memcmp(h, o, 8 * MB), "destroy returned before the copies");
    CHECK_SYN(synStreamQuery(s), synInvalidArgument);
}

/* Gaudi2/3: an event never recorded has no stream to ask */
static void t_event_unrecorded(void)
{
    synDeviceId    id = acquire(NULL);
    synEventHandle e;

    OK(synEventCreate(&e, id, 0));
    CHECK_SYN(synEventQuery(e), synInvalidArgument);
    CHECK_SYN(synEventSynchronize(e), synInvalidArgument);
    OK(synEventDestroy(e));
}

/* A copy to an unmapped device VA: the MMU drops it, no reset is asked,
 * so it completes and the device goes on */
static void t_page_fault(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *h = mapped(id, MB), *o = mapped(id, MB);
    synStreamHandle s;
    uint64_t        d;

    OK(synDeviceMalloc(id, MB, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    memset(o, 0x5a, MB);
    OK(synMemCopyAsync(s, d, 64, 0x1000, DRAM_TO_DRAM));
    OK(synMemCopyAsync(s, 0x1000, 64, (uintptr_t)o, DRAM_TO_HOST));
    OK(synStreamSynchronize(s));
    CHECK(o[0] == 0x5a, "a faulting copy wrote");
    fill(h, MB, 6);
    OK(synMemCopyAsync(s, (uintptr_t)h, MB, d, HOST_TO_DRAM));
    OK(synMemCopyAsync(s, d, MB, (uintptr_t)o, DRAM_TO_HOST));
    OK(synStreamSynchronize(s));
    CHECK(!memcmp(h, o, MB), "copies after the fault");
}

/*
 * TERMINATE_SYNAPSE_UPON_DFA=0: a device error is only logged; the waits
 * that cover the failed copy report synDeviceReset, nothing sticks to the
 * stream
 */
static void t_dfa_disabled(void)
{
    synDeviceId     id = acquire(NULL);
    uint8_t        *h = mapped(id, MB), *o = mapped(id, MB);
    synStreamHandle s;
    synEventHandle  before, after, later;
    uint64_t        d;

    OK(synDeviceMalloc(id, MB, 0, 0, &d));
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synEventCreate(&before, id, 0));
    OK(synEventCreate(&after, id, 0));
    OK(synEventCreate(&later, id, 0));
    OK(synMemCopyAsync(s, (uintptr_t)h, MB, d, HOST_TO_DRAM));
    OK(synEventRecord(before, s));
    OK(synEventSynchronize(before));
    CHECK(!API(hlsim_fault_add)("pdma", 1, EIO), "fault");
    OK(synMemCopyAsync(s, (uintptr_t)h, MB, d, HOST_TO_DRAM));  /* queued */
    OK(synEventRecord(after, s));
    CHECK_SYN(synEventSynchronize(after), synDeviceReset);
    CHECK_SYN(synStreamSynchronize(s), synDeviceReset);
    OK(synStreamSynchronize(s));
    OK(synEventQuery(before));
    fill(h, MB, 7);
    OK(synMemCopyAsync(s, (uintptr_t)h, MB, d, HOST_TO_DRAM));
    OK(synMemCopyAsync(s, d, MB, (uintptr_t)o, DRAM_TO_HOST));
    OK(synEventRecord(later, s));
    OK(synEventSynchronize(later));
    CHECK(!memcmp(h, o, MB), "copies after the error");
    CHECK_SYN(synEventQuery(after), synDeviceReset);
}

/* A device error in a child process that then lives @wait_s more; the
 * child's synStatus of the calls after the error; its wait status */
static int dfa_child(int (*fault)(void), unsigned wait_s, synStatus *after)
{
    int   pfd[2], st;
    pid_t pid;

    CHECK(!pipe(pfd), "pipe");
    pid = fork();
    if (pid == 0) {
        synDeviceId     id = acquire(NULL);
        uint8_t        *h = mapped(id, MB);
        synStreamHandle s;
        synStatus       st2[2];
        uint64_t        d;

        OK(synDeviceMalloc(id, MB, 0, 0, &d));
        OK(synStreamCreateGeneric(&s, id, 0));
        CHECK(!fault(), "fault");
        OK(synMemCopyAsync(s, (uintptr_t)h, MB, d, HOST_TO_DRAM));
        st2[0] = synStreamSynchronize(s);
        st2[1] = synDeviceMalloc(id, 64, 0, 0, &d);
        if (write(pfd[1], st2, sizeof(st2)) != sizeof(st2)) {
            _exit(3);
        }
        sleep(wait_s);  /* killed meanwhile, unless the DFA only waits */
        _exit(0);
    }
    close(pfd[1]);
    CHECK(read(pfd[0], after, 2 * sizeof(*after)) == 2 * sizeof(*after),
          "no status from the child");
    close(pfd[0]);
    waitpid(pid, &st, 0);
    return st;
}

static int fault_engine(void)
{
    return API(hlsim_fault_add)("pdma", 1, ENOMEM);
}

static int fault_reset(void)
{
    return API(hlsim_set_device_status)(0, GAUDI_HL_DEVICE_STATUS_IN_RESET);
}

/* The default DFA: calls return synSynapseTerminated, then SIGKILL */
static void t_dfa_kill(void)
{
    synStatus after[2];
    int       st = dfa_child(fault_engine, 30, after);

    CHECK((after[0] == synSynapseTerminated) &&
          (after[1] == synSynapseTerminated), "after the error: %d %d",
          after[0], after[1]);
    CHECK(WIFSIGNALED(st) && (WTERMSIG(st) == SIGKILL), "child status 0x%x",
          st);
}
/* A copy meets a device reset: the same DFA, the process is killed */
static void t_device_reset(void)
{
    synStatus after[2];
    int       st = dfa_child(fault_reset, 30, after);

    CHECK(after[0] == synSynapseTerminated, "sync after reset: %d",
          after[0]);
    CHECK(WIFSIGNALED(st) && (WTERMSIG(st) == SIGKILL), "child status 0x%x",
          st);
}

/* TERMINATE_SYNAPSE_UPON_DFA=1: the calls are refused, nobody is killed */
static void t_dfa_terminate(void)
{
    synStatus after[2];
    int       st;

    /* longer than the 5 s after which the default kills */
    st = dfa_child(fault_engine, SYNSIM_DFA_KILL_S_TEST, after);
    CHECK((after[0] == synSynapseTerminated) &&
          (after[1] == synSynapseTerminated), "after the error: %d %d",
          after[0], after[1]);
    CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0), "child status 0x%x", st);
}
/*
 * What the UCX module does in a SynapseAI process: borrow the fd (its
 * own open would get EBUSY), allocate and map DRAM on it, and the device
 * memory of both lives in one context, with one DRAM account
 */
/*
 * What the UCX module does in a SynapseAI process: borrow the fd (its
 * own open would get EBUSY); the driver has no DRAM left for it after
 * acquire, device memory comes from synDeviceMalloc, and SynapseAI's
 * release closes the borrowed fd
 */
static void t_coexist(void)
{
    synDeviceId     id = acquire(NULL);
    int             fd = synapse_fd(48), own;
    uint8_t        *h = mapped(id, MB), *o = mapped(id, MB);
    synStreamHandle s;
    uint64_t        d, e;
    char            path[64];

    snprintf(path, sizeof(path), GAUDI_HL_ACCEL_NODE_FMT, 0);
    own = open(path, O_RDWR);
    CHECK((own < 0) && (errno == EBUSY), "own open: errno %d", errno);
    CHECK(driver_alloc(fd, 64 * MB) == ENOMEM, "ALLOC on the borrowed fd");

    OK(synDeviceMalloc(id, MB, 0, 0, &d));
    OK(synDeviceMalloc(id, MB, 0, 0, &e));
    fill(h, MB, 5);
    memset(o, 0, MB);
    OK(synStreamCreateGeneric(&s, id, 0));
    OK(synMemCopyAsync(s, (uintptr_t)h, MB, e, HOST_TO_DRAM));
    OK(synMemCopyAsync(s, e, MB, d, DRAM_TO_DRAM));
    OK(synMemCopyAsync(s, d, MB, (uintptr_t)o, DRAM_TO_HOST));
    OK(synStreamSynchronize(s));
    CHECK(!memcmp(h, o, MB), "copy through device memory differs");

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
    CHECK_SYN(synDeviceGetInfo(id, &info), synFail);
    CHECK_SYN(synStreamCreateGeneric(&s, id, 0), synFail);
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
    { "acquire_none", t_acquire_none, "" },
    { "acquire_in_release", t_acquire_in_release,
      "HLSIM_FAULTS=open:2:EAGAIN,open:4:EAGAIN HLSIM_RELEASE_RESET_MS=0" },
    { "memory_info", t_memory_info, "" },
    { "memory_info_gaudi3", t_memory_info, "HLSIM_ASIC=gaudi3" },
    { "memory_info_gaudi1", t_memory_info, "HLSIM_ASIC=gaudi1" },
    { "info48", t_info48, "" },
    { "info40", t_info40, "SYNSIM_INFO_FD_OFFSET=40" },
    { "info_bad_layout", t_info_bad_layout, "SYNSIM_INFO_FD_OFFSET=44" },
    { "malloc", t_malloc, "" },
    { "malloc_gaudi1", t_malloc_gaudi1, "HLSIM_ASIC=gaudi1" },
    /* the pool arithmetic below is worked out for 16 GiB, 64 MiB pages */
    { "pool_gaudi2", t_pool_gaudi2,
      "HLSIM_HBM_SIZE=16G HLSIM_DRAM_PAGE_SIZE=64M" },
    { "pool_gaudi3", t_pool_gaudi3, "HLSIM_ASIC=gaudi3 HLSIM_HBM_SIZE=16G" },
    { "copy_gaudi2", t_copy_gaudi2, "" },
    { "copy_gaudi3", t_copy_gaudi3, "HLSIM_ASIC_1=gaudi3" },
    { "copy_gaudi1", t_copy_gaudi1, "HLSIM_ASIC=gaudi1" },
    { "copy_pages", t_copy_pages, "" },
    { "copy_multiple", t_copy_multiple, "HLSIM_ASIC=gaudi3" },
    { "reject_unmapped", t_reject_unmapped, "" },
    { "host_map_inside", t_host_map_inside, "" },
    { "host_map_past", t_host_map_past, "" },
    { "host_translate_nearest", t_host_translate_nearest, "" },
    { "host_unmap_whole", t_host_unmap_whole, "" },
    { "host_malloc", t_host_malloc, "" },
    { "host_unmap_frees", t_host_unmap_frees, "" },
    { "reject_direction", t_reject_direction, "" },
    { "reject_foreign", t_reject_foreign, "" },
    { "order", t_order, "HLSIM_DMA_GBPS=0.1" },
    { "order_gaudi3", t_order, "HLSIM_DMA_GBPS=0.1 HLSIM_ASIC=gaudi3" },
    { "streams_independent", t_streams_independent, "HLSIM_DMA_GBPS=0.1" },
    { "streams_share_queue", t_streams_share_queue, "HLSIM_DMA_GBPS=0.1" },
    { "events", t_events, "HLSIM_DMA_GBPS=0.1" },
    { "device_sync", t_device_sync, "HLSIM_DMA_GBPS=0.1" },
    { "copy_legacy", t_copy_legacy, "HLSIM_NODES=legacy" },
    { "stream_destroy_waits", t_stream_destroy_waits, "HLSIM_DMA_GBPS=0.1" },
    { "event_unrecorded", t_event_unrecorded, "" },
    { "page_fault", t_page_fault, "" },
    { "dfa_disabled", t_dfa_disabled, "TERMINATE_SYNAPSE_UPON_DFA=0" },
    { "dfa_kill", t_dfa_kill, "" },
    { "dfa_terminate", t_dfa_terminate, "TERMINATE_SYNAPSE_UPON_DFA=1" },
    { "device_reset", t_device_reset, "" },
    { "coexist", t_coexist, "" },
    { "destroy", t_no_device_after_destroy, "" },
};

/* a fresh node with the defaults unless the test says otherwise */
static const char *const test_unset[] = {
    "HLSIM_NUM_DEVICES", "HLSIM_ASIC", "HLSIM_ASIC_0", "HLSIM_ASIC_1",
    "HLSIM_FAULTS", "HLSIM_MODULE_IDS", "HLSIM_DMA_GBPS", "HLSIM_NODES",
    "HLSIM_RELEASE_RESET_MS", "SYNSIM_INFO_FD_OFFSET", "HLSIM_HBM_SIZE",
    "HLSIM_DRAM_PAGE_SIZE",
    "TERMINATE_SYNAPSE_UPON_DFA", NULL
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

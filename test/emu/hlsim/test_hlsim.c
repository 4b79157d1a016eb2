/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Tests of the hlsim emulator, through raw open/ioctl with the ABI header.
 * Run: LD_PRELOAD=libhlsim.so ./test_hlsim [test-name-substring...]
 * Every test runs in a forked child with a fresh HLSIM_ROOT and its own
 * HLSIM_* environment, set before the emulator's lazy initialisation.
 */

#define _GNU_SOURCE
#include <uct/gaudi/hl/gaudi_hl_abi.h>
#include "hlsim.h"
#include "hlsim_packets.h"
#include "test_runner.h"

#include <dirent.h>
#include <ftw.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#define INFO_CODE   GAUDI_HL_DRM_IOCTL_INFO
#define MEM_CODE    GAUDI_HL_DRM_IOCTL_MEMORY
#define CB_CODE     GAUDI_HL_DRM_IOCTL_CB
#define CS_CODE     GAUDI_HL_DRM_IOCTL_CS
#define WAIT_CODE   GAUDI_HL_DRM_IOCTL_WAIT_CS
#define MB          (1ULL << 20)
#define GB          (1ULL << 30)

/* expect rc == -1 with errno _e */
#define CHECK_ERR(_rc, _e, _what) \
    do { \
        long _r = (long)(_rc); int _er = errno; \
        CHECK((_r == -1) && (_er == (_e)), "%s: rc %ld errno %s, want %s", \
              _what, _r, strerror(_er), strerror(_e)); \
    } while (0)
#define CHECK_OK(_rc, _what) \
    do { \
        long _r = (long)(_rc); \
        CHECK(_r >= 0, "%s: rc %ld errno %s", _what, _r, strerror(errno)); \
    } while (0)

/* ---- helpers ---- */

/* HLSIM_NODES=legacy: /dev/hlN and the misc-era codes (facts 1.6) */
static int hl_legacy_nodes(void)
{
    return getenv("HLSIM_NODES") != NULL;
}

static int open_dev(int i)
{
    char p[64];

    snprintf(p, sizeof(p), hl_legacy_nodes() ? "/dev/hl%d" :
             "/dev/accel/accel%d", i);
    return open(p, O_RDWR | O_CLOEXEC);
}

static int open_ctl(int i)
{
    char p[64];

    snprintf(p, sizeof(p), hl_legacy_nodes() ? "/dev/hl_controlD%d" :
             "/dev/accel/accel_controlD%d", i);
    return open(p, O_RDWR | O_CLOEXEC);
}

static int info(int fd, unsigned op, void *buf, unsigned size)
{
    struct hl_info_args a = {0};

    a.return_pointer = (uintptr_t)buf;
    a.return_size    = size;
    a.op             = op;
    return ioctl(fd, hl_legacy_nodes() ? GAUDI_HL_LEGACY_IOCTL_INFO :
                 INFO_CODE, &a);
}

static struct gaudi_hl_hw_ip_info hw_ip(int fd)
{
    struct gaudi_hl_hw_ip_info hw;

    CHECK_OK(info(fd, HL_INFO_HW_IP_INFO, &hw, sizeof(hw)), "hw_ip");
    return hw;
}

static uint64_t dram_free(int fd)
{
    struct hl_info_dram_usage u;

    CHECK_OK(info(fd, HL_INFO_DRAM_USAGE, &u, sizeof(u)), "dram usage");
    return u.dram_free_mem;
}

static int mem(int fd, union hl_mem_args *a)
{
    return ioctl(fd, hl_legacy_nodes() ? GAUDI_HL_LEGACY_IOCTL_MEMORY :
                 MEM_CODE, a);
}

static int mem_alloc(int fd, uint64_t size, uint64_t *handle)
{
    union hl_mem_args a = {0};
    int               rc;

    a.in.op             = HL_MEM_OP_ALLOC;
    a.in.alloc.mem_size = size;
    rc      = mem(fd, &a);
    *handle = a.out.handle;
    return rc;
}

static int mem_free(int fd, uint64_t handle)
{
    union hl_mem_args a = {0};

    a.in.op          = HL_MEM_OP_FREE;
    a.in.free.handle = handle;
    return mem(fd, &a);
}

static int map_dev(int fd, uint64_t handle, uint64_t hint, uint32_t flags,
                   uint64_t *va)
{
    union hl_mem_args a = {0};
    int               rc;

    a.in.op                   = HL_MEM_OP_MAP;
    a.in.flags                = flags;
    a.in.map_device.handle    = handle;
    a.in.map_device.hint_addr = hint;
    rc  = mem(fd, &a);
    *va = a.out.device_virt_addr;
    return rc;
}

static int map_host(int fd, const void *p, uint64_t size, uint64_t *va)
{
    union hl_mem_args a = {0};
    int               rc;

    a.in.op                      = HL_MEM_OP_MAP;
    a.in.flags                   = HL_MEM_USERPTR;
    a.in.map_host.host_virt_addr = (uintptr_t)p;
    a.in.map_host.mem_size       = size;
    rc  = mem(fd, &a);
    *va = a.out.device_virt_addr;
    return rc;
}

static int map_host_hint(int fd, const void *p, uint64_t size, uint64_t hint,
                         uint32_t flags, uint64_t *va)
{
    union hl_mem_args a = {0};
    int               rc;

    a.in.op                      = HL_MEM_OP_MAP;
    a.in.flags                   = HL_MEM_USERPTR | flags;
    a.in.map_host.host_virt_addr = (uintptr_t)p;
    a.in.map_host.mem_size       = size;
    a.in.map_host.hint_addr      = hint;
    rc  = mem(fd, &a);
    *va = a.out.device_virt_addr;
    return rc;
}

static int unmap(int fd, uint64_t va)
{
    union hl_mem_args a = {0};

    a.in.op                   = HL_MEM_OP_UNMAP;
    a.in.unmap.device_virt_addr = va;
    return mem(fd, &a);
}

static int export_fd(int fd, uint64_t addr, uint64_t size, uint64_t off,
                     uint32_t flags)
{
    union hl_mem_args      a = {0};
    struct gaudi_hl_mem_in *in = (struct gaudi_hl_mem_in*)&a.in;
    int                    rc;

    in->op                        = HL_MEM_OP_EXPORT_DMABUF_FD;
    in->flags                     = flags;
    in->export_dmabuf_fd.addr     = addr;
    in->export_dmabuf_fd.mem_size = size;
    in->export_dmabuf_fd.offset   = off;
    rc = mem(fd, &a);
    return (rc < 0) ? rc : a.out.fd;
}

static int reg_dmabuf(int fd, int dfd, uint64_t len, uint64_t *va)
{
    union hl_mem_args      a = {0};
    struct gaudi_hl_mem_in *in = (struct gaudi_hl_mem_in*)&a.in;
    int                    rc;

    in->op                   = GAUDI_HL_MEM_OP_REG_DMABUF_FD;
    in->reg_dmabuf_fd.fd     = dfd;
    in->reg_dmabuf_fd.length = len;
    rc  = mem(fd, &a);
    *va = a.out.device_virt_addr;
    return rc;
}

static int read_file(const char *path, char *buf, size_t len)
{
    int     fd = open(path, O_RDONLY);
    ssize_t n;

    if (fd < 0) {
        return -1;
    }
    n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0) {
        return -1;
    }
    buf[n] = '\0';
    return 0;
}

static void check_file(const char *path, const char *want)
{
    char buf[256];

    CHECK(read_file(path, buf, sizeof(buf)) == 0, "read %s: %s", path,
          strerror(errno));
    CHECK(!strcmp(buf, want), "%s = '%s', want '%s'", path, buf, want);
}

/* ---- CB / CS helpers ---- */

typedef struct {
    uint8_t *p;
    uint32_t len;
} cbuf_t;

static void pkt_lin(cbuf_t *cb, uint64_t src, uint64_t dst, uint32_t size,
                    int memset_op, int gaudi1)
{
    struct hlsim_pkt_lin_dma p;

    p.tsize    = size;
    p.ctl      = (HLSIM_PKT_LIN_DMA << HLSIM_PKT_CTL_OPCODE_SHIFT) |
                 HLSIM_PKT_CTL_MB | HLSIM_PKT_CTL_EB |
                 (memset_op ? HLSIM_PKT_LIN_DMA_MEMSET : 0) |
                 (gaudi1 ? (HLSIM_PKT_LIN_DMA_LIN | HLSIM_PKT_CTL_RB) : 0);
    p.src_addr = src;
    p.dst_addr = dst;
    memcpy(cb->p + cb->len, &p, sizeof(p));
    cb->len += sizeof(p);
}

static void pkt_short(cbuf_t *cb, unsigned opcode, uint32_t w0)
{
    uint32_t ctl = (opcode << HLSIM_PKT_CTL_OPCODE_SHIFT) | HLSIM_PKT_CTL_EB;

    memcpy(cb->p + cb->len, &w0, 4);
    memcpy(cb->p + cb->len + 4, &ctl, 4);
    cb->len += 8;
}

static int submit_cs(int fd, uint64_t cb_handle, uint32_t size, uint32_t q,
                     uint32_t chunk_flags, uint32_t cs_flags, uint64_t *seq)
{
    struct hl_cs_chunk ch = {0};
    union hl_cs_args   a  = {0};
    int                rc;

    a.in.cs_flags           = cs_flags;

    ch.cb_handle            = cb_handle;
    ch.queue_index          = q;
    ch.cb_size              = size;
    ch.cs_chunk_flags       = chunk_flags;
    a.in.chunks_execute     = (uintptr_t)&ch;
    a.in.num_chunks_execute = 1;
    rc = ioctl(fd, hl_legacy_nodes() ? GAUDI_HL_LEGACY_IOCTL_CS : CS_CODE,
               &a);
    if (seq != NULL) {
        *seq = a.out.seq;
    }
    return rc;
}

static int submit(int fd, uint64_t cb_handle, uint32_t size, uint32_t q,
                  uint32_t chunk_flags, uint64_t *seq)
{
    return submit_cs(fd, cb_handle, size, q, chunk_flags, 0, seq);
}

static int wait_cs(int fd, uint64_t seq, uint64_t tmo_us, uint32_t *status,
                   uint32_t *flags)
{
    union hl_wait_cs_args a = {0};
    int                   rc;

    a.in.seq        = seq;
    a.in.timeout_us = tmo_us;
    rc = ioctl(fd, hl_legacy_nodes() ? GAUDI_HL_LEGACY_IOCTL_WAIT_CS :
               WAIT_CODE, &a);
    if (status) {
        *status = a.out.status;
    }
    if (flags) {
        *flags = a.out.flags;
    }
    return rc;
}

/* Gaudi2 host CB: page-aligned host memory mapped with USERPTR */
typedef struct {
    cbuf_t   cb;
    uint64_t va;
} hcb_t;

static hcb_t hcb_new(int fd, size_t size)
{
    hcb_t h;

    h.cb.p = aligned_alloc(4096, size);
    CHECK(h.cb.p != NULL, "alloc");
    memset(h.cb.p, 0, size);
    h.cb.len = 0;
    CHECK_OK(map_host(fd, h.cb.p, size, &h.va), "map CB");
    return h;
}

/* one LIN_DMA, submitted on queue q and waited for; returns WAIT rc */
static int g2_dma(int fd, hcb_t *h, int q, uint64_t src, uint64_t dst,
                  uint32_t size, int memset_op, uint32_t *status)
{
    uint64_t seq;

    h->cb.len = 0;
    pkt_lin(&h->cb, src, dst, size, memset_op, 0);
    pkt_short(&h->cb, HLSIM_PKT_NOP, 0);
    CHECK_OK(submit(fd, h->va, h->cb.len, q, HL_CS_CHUNK_FLAGS_USER_ALLOC_CB,
                    &seq), "CS");
    return wait_cs(fd, seq, 5000000, status, NULL);
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    size_t i;

    for (i = 0; i < n; i++) {
        p[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 8)) & 0xff);
    }
}

/* ---- SCM_RIGHTS ---- */

static void send_fd(int sock, int fd)
{
    char            c = 'x', buf[CMSG_SPACE(sizeof(int))];
    struct iovec    iov = { &c, 1 };
    struct msghdr   m = {0};
    struct cmsghdr *cm;

    memset(buf, 0, sizeof(buf));
    m.msg_iov        = &iov;
    m.msg_iovlen     = 1;
    m.msg_control    = buf;
    m.msg_controllen = sizeof(buf);
    cm               = CMSG_FIRSTHDR(&m);
    cm->cmsg_level   = SOL_SOCKET;
    cm->cmsg_type    = SCM_RIGHTS;
    cm->cmsg_len     = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    CHECK(sendmsg(sock, &m, 0) == 1, "sendmsg");
}

static int recv_fd(int sock)
{
    char            c, buf[CMSG_SPACE(sizeof(int))];
    struct iovec    iov = { &c, 1 };
    struct msghdr   m = {0};
    struct cmsghdr *cm;
    int             fd;

    m.msg_iov        = &iov;
    m.msg_iovlen     = 1;
    m.msg_control    = buf;
    m.msg_controllen = sizeof(buf);
    CHECK(recvmsg(sock, &m, 0) == 1, "recvmsg");
    cm = CMSG_FIRSTHDR(&m);
    CHECK(cm && cm->cmsg_type == SCM_RIGHTS, "no fd received");
    memcpy(&fd, CMSG_DATA(cm), sizeof(int));
    return fd;
}

static void sync_byte(int sock, char c)
{
    CHECK(write(sock, &c, 1) == 1, "sync write");
}

static char sync_wait(int sock)
{
    char c = 0;

    CHECK(read(sock, &c, 1) == 1, "sync read");
    return c;
}

/* Run @fn in a child; its exit status must be 0 */
static void in_child(void (*fn)(void *), void *arg)
{
    pid_t pid = fork();
    int   st;

    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        fn(arg);
        _exit(0);
    }
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
    CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0), "child failed (%d)", st);
}

/* ================= stage 1: nodes, sysfs, INFO ================= */

static void t_nodes_accel(void)
{
    struct stat st;
    DIR        *d;
    int         n = 0;

    CHECK(stat("/dev/accel/accel0", &st) == 0, "accel0");
    CHECK(stat("/dev/accel/accel_controlD1", &st) == 0, "controlD1");
    CHECK_ERR(stat("/dev/accel/accel2", &st), ENOENT, "accel2");
    CHECK_ERR(access("/dev/hl0", F_OK), ENOENT, "hl0");
    CHECK((d = opendir("/dev/accel")) != NULL, "opendir");
    while (readdir(d)) {
        n++;
    }
    closedir(d);
    CHECK(n == 4 + 2, "dir entries %d", n);
}

static void t_nodes_legacy(void)
{
    struct hl_info_args a = {0};
    struct gaudi_hl_hw_ip_info hw;
    int fd, cfd;

    CHECK_ERR(access("/dev/accel", F_OK), ENOENT, "/dev/accel");
    CHECK(access("/dev/hl_controlD0", F_OK) == 0, "hl_controlD0");
    check_file("/sys/class/habanalabs/hl1/pci_addr", "0000:17:00.0\n");
    check_file("/sys/class/habanalabs/hl0/device_type", "GAUDI2\n");
    CHECK_OK(fd = open("/dev/hl0", O_RDWR), "open hl0");
    CHECK_OK(cfd = open("/dev/hl_controlD0", O_RDWR), "open ctl");
    a.return_pointer = (uintptr_t)&hw;
    a.return_size    = sizeof(hw);
    a.op             = HL_INFO_HW_IP_INFO;
    CHECK_OK(ioctl(fd, GAUDI_HL_LEGACY_IOCTL_INFO, &a), "legacy INFO");
    CHECK(hw.u61.device_id == 0x1020, "device id");
    CHECK_OK(ioctl(cfd, GAUDI_HL_LEGACY_IOCTL_INFO, &a), "legacy ctl INFO");
    /* legacy dispatch is by number: the DRM code (nr 0x40) is unknown */
    CHECK_ERR(ioctl(fd, INFO_CODE, &a), ENOTTY, "DRM code on legacy");
    CHECK_ERR(ioctl(cfd, GAUDI_HL_LEGACY_IOCTL_MEMORY, &a), ENOTTY,
              "legacy ctl MEMORY");
    CHECK_ERR(open("/dev/hl0", O_RDWR), EBUSY, "second open");
    close(fd);
    close(cfd);
}

static void t_sysfs_values(void)
{
    char        buf[256];
    struct stat st;
    ssize_t     n;
    int         fd;

    check_file("/sys/class/accel/accel0/device/pci_addr", "0000:10:00.0\n");
    check_file("/sys/class/accel/accel1/device/pci_addr", "0000:17:00.0\n");
    check_file("/sys/class/accel/accel0/device/module_id", "5\n");
    check_file("/sys/class/accel/accel1/device/module_id", "3\n");
    check_file("/sys/class/accel/accel1/device/device_type", "GAUDI2\n");
    check_file("/sys/class/accel/accel0/device/status", "operational\n");
    /* Habana's driver is an out-of-tree module */
    check_file("/sys/module/habanalabs/taint", "O\n");
    /* Habana's DRM build: on the PCI device only (K612 common/sysfs.c:528,
     * facts 1.1) */
    CHECK_ERR(access("/sys/class/accel/accel1/pci_addr", F_OK), ENOENT,
              "flat attr on the DRM build");
    n = readlink("/sys/class/accel/accel0/device", buf, sizeof(buf) - 1);
    CHECK(n > 0, "readlink device");
    buf[n] = '\0';
    CHECK(strstr(buf, "0000:10:00.0") && !strcmp(strrchr(buf, '/') + 1,
          "0000:10:00.0"), "device link %s", buf);
    CHECK(realpath("/sys/class/accel/accel0/device", buf) != NULL,
          "realpath");
    CHECK(!strcmp(strrchr(buf, '/') + 1, "0000:10:00.0"), "realpath %s",
          buf);
    /* the PCI bus view (UCX's topology resolves it with realpath) */
    CHECK(realpath("/sys/bus/pci/devices/0000:17:00.0", buf) != NULL,
          "realpath of the bus view");
    CHECK(!strncmp(buf, getenv("HLSIM_ROOT"), strlen(getenv("HLSIM_ROOT")))
          && strstr(buf, "/sys/devices/pci0000:00/0000:17:00.0"),
          "bus view -> %s", buf);
    check_file("/sys/bus/pci/devices/0000:10:00.0/numa_node", "-1\n");
    /* other PCI addresses stay the machine's own */
    CHECK(realpath("/sys/bus/pci/devices/0000:10:00.00", buf) == NULL,
          "not an emulated address");
    /* BDF from an open fd via /sys/dev/char (facts 1.3) */
    CHECK_OK(fd = open_dev(1), "open");
    CHECK(fstat(fd, &st) == 0 && S_ISCHR(st.st_mode), "fstat chr");
    snprintf(buf, sizeof(buf), "/sys/dev/char/%u:%u/device/pci_addr",
             major(st.st_rdev), minor(st.st_rdev));
    check_file(buf, "0000:17:00.0\n");
    FILE *f = fopen("/sys/class/accel/accel1/device/device_type", "r");
    CHECK(f != NULL && fgets(buf, sizeof(buf), f), "fopen sysfs");
    fclose(f);
    close(fd);
}

static void t_sysfs_upstream(void)
{
    CHECK(access("/sys/class/accel/accel0/device/pci_addr", R_OK) == 0,
          "device attr");
    CHECK_ERR(access("/sys/class/accel/accel0/pci_addr", F_OK), ENOENT,
              "flat attr on upstream");
    /* the in-kernel driver: a module without taint */
    check_file("/sys/module/habanalabs/taint", "\n");
}

/* Habana's build without DRM accel: the attributes on the accel device
 * too, kept current (facts 1.1) */
static void t_sysfs_nodrm(void)
{
    check_file("/sys/class/accel/accel0/pci_addr", "0000:10:00.0\n");
    check_file("/sys/class/accel/accel0/device/pci_addr", "0000:10:00.0\n");
    CHECK_OK(API(hlsim_set_device_status)(0,
             GAUDI_HL_DEVICE_STATUS_IN_RESET), "set");
    check_file("/sys/class/accel/accel0/status", "in reset\n");
    check_file("/sys/class/accel/accel0/device/status", "in reset\n");
    CHECK_OK(API(hlsim_set_device_status)(0,
             GAUDI_HL_DEVICE_STATUS_OPERATIONAL), "set");
    check_file("/sys/class/accel/accel0/status", "operational\n");
}

/* HLSIM_NUMA_NODE: per device, the last value repeating */
static void t_sysfs_numa(void)
{
    check_file("/sys/bus/pci/devices/0000:10:00.0/numa_node", "0\n");
    check_file("/sys/bus/pci/devices/0000:17:00.0/numa_node", "1\n");
    check_file("/sys/bus/pci/devices/0000:1e:00.0/numa_node", "1\n");
    check_file("/sys/class/accel/accel1/device/numa_node", "1\n");
}

static void t_sysfs_types(void)
{
    check_file("/sys/class/accel/accel0/device/device_type", "GAUDI2\n");
    check_file("/sys/class/accel/accel1/device/device_type", "GAUDI\n");
    check_file("/sys/class/accel/accel2/device/device_type", "GAUDI3\n");
}

static void t_eight_devices(void)
{
    int fds[8], i;

    for (i = 0; i < 8; i++) {
        CHECK_OK(fds[i] = open_dev(i), "open");
        CHECK(hw_ip(fds[i]).u61.module_id == (unsigned)i, "module id");
    }
    for (i = 0; i < 8; i++) {
        close(fds[i]);
    }
    CHECK_ERR(open_dev(8), ENOENT, "accel8");
}

static void t_info_hw_ip(void)
{
    struct gaudi_hl_hw_ip_info hw, hw2;
    int fd, cfd;

    CHECK_OK(cfd = open_ctl(0), "ctl");
    hw = hw_ip(cfd);
    CHECK(hw.u61.device_id == 0x1020, "device_id %x", hw.u61.device_id);
    /* the real Gaudi2 by default: 6 HBMs, 96 GiB, 768 MiB pages (K612
     * gaudi2/gaudi2.c:2343-2346) */
    CHECK(hw.u61.dram_page_size == 768 * MB, "page %llx",
          (unsigned long long)hw.u61.dram_page_size);
    CHECK(hw.u61.device_mem_alloc_default_page_size == 768 * MB, "def page");
    /* facts 3.4: base + page * ceil(size / page) */
    CHECK(hw.u61.dram_base_address == 0x1001001800000000ULL,
          "dram base %llx", (unsigned long long)hw.u61.dram_base_address);
    CHECK(hw.u61.dram_size == 127 * 768 * MB, "dram size");
    CHECK(hw.reserved_dram_size == 768 * MB, "reserved");
    CHECK(hw.u61.dram_enabled == 1, "dram_enabled");
    /* short return size: only those bytes are written */
    memset(&hw2, 0xEE, sizeof(hw2));
    CHECK_OK(info(cfd, HL_INFO_HW_IP_INFO, &hw2, 12), "short");
    CHECK(hw2.u61.sram_base_address == hw.u61.sram_base_address, "copied");
    CHECK(((uint8_t*)&hw2)[12] == 0xEE && hw2.u61.device_id == 0xEEEEEEEE,
          "wrote past return_size");
    /* the U61 256-byte size works too */
    memset(&hw2, 0xEE, sizeof(hw2));
    CHECK_OK(info(cfd, HL_INFO_HW_IP_INFO, &hw2, 256), "256");
    CHECK(hw2.reserved_dram_size == 0xEEEEEEEEEEEEEEEEULL, "past 256");
    CHECK_OK(fd = open_dev(0), "open");
    CHECK(hw_ip(fd).u61.module_id == 0, "module");
    close(fd);
    close(cfd);
}

static void t_info_models(void)
{
    struct gaudi_hl_hw_ip_info hw;
    int fd;

    CHECK_OK(fd = open_ctl(1), "ctl1");
    hw = hw_ip(fd);
    CHECK(hw.u61.device_id == 0x1000, "gaudi1 id");
    CHECK(hw.u61.dram_base_address == 0x20000000, "gaudi1 base");
    CHECK(hw.u61.dram_page_size == 2 * MB, "gaudi1 page");
    /* 32 GiB of HBM (K612 gaudi/gaudi.c:598) from 0x20000000 */
    CHECK(hw.u61.dram_size == 32 * GB - 512 * MB, "gaudi1 size");
    close(fd);
    CHECK_OK(fd = open_ctl(2), "ctl2");
    hw = hw_ip(fd);
    CHECK(hw.u61.device_id == 0x1060, "gaudi3 id");
    CHECK(hw.u61.dram_base_address >= 0x0200000000000000ULL &&
          hw.u61.dram_base_address < 0x0202000000000000ULL, "gaudi3 base");
    CHECK(hw.u61.reserved4 != 0, "pdma_user_owned_ch_mask");
    close(fd);
}

static void t_info_errors(void)
{
    struct hl_info_args a = {0};
    uint64_t buf[8];
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    a.return_pointer = (uintptr_t)buf;
    a.return_size    = sizeof(buf);
    a.op             = HL_INFO_DEVICE_STATUS;
    a.pad            = 1;
    CHECK_ERR(ioctl(fd, INFO_CODE, &a), EINVAL, "pad");
    a.pad = 0;
    a.op  = 999;
    CHECK_ERR(ioctl(fd, INFO_CODE, &a), EINVAL, "unknown op");
    CHECK_ERR(info(fd, HL_INFO_DEVICE_STATUS, NULL, 8), EINVAL, "null");
    CHECK_ERR(info(fd, HL_INFO_DEVICE_STATUS, buf, 0), EINVAL, "size 0");
    CHECK_ERR(info(fd, HL_INFO_DEVICE_STATUS, (void*)8, 8), EFAULT,
              "bad pointer");
    CHECK_ERR(ioctl(fd, INFO_CODE, (void*)16), EFAULT, "bad args");
    /* legacy 'H' codes on an accel node: ENOTTY (facts 1.5) */
    CHECK_ERR(ioctl(fd, GAUDI_HL_LEGACY_IOCTL_INFO, &a), ENOTTY, "'H'");
    CHECK_ERR(ioctl(fd, _IOWR('d', 0x50, struct hl_info_args), &a), ENOTTY,
              "nr 0x50");
    CHECK_ERR(ioctl(fd, GAUDI_HL_DRM_IOCTL_DEBUG, buf), EFAULT, "debug");
    close(fd);
}

static void t_info_ops(void)
{
    struct hl_open_stats_info      os;
    struct hl_info_device_status   ds;
    struct hl_info_dev_memalloc_page_sizes ps;
    struct hl_info_reset_count     rc;
    struct hl_info_cs_counters     cc;
    struct hl_info_hw_idle         idle;
    int fd, cfd;

    CHECK_OK(cfd = open_ctl(0), "ctl");
    CHECK_OK(info(cfd, HL_INFO_OPEN_STATS, &os, sizeof(os)), "open stats");
    CHECK(os.is_compute_ctx_active == 0 && os.open_counter == 0, "idle");
    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(info(cfd, HL_INFO_OPEN_STATS, &os, sizeof(os)), "open stats");
    CHECK(os.is_compute_ctx_active == 1 && os.open_counter == 1, "active");
    CHECK_OK(info(fd, HL_INFO_DEVICE_STATUS, &ds, sizeof(ds)), "status");
    CHECK(ds.status == GAUDI_HL_DEVICE_STATUS_OPERATIONAL, "operational");
    memset(&ps, 0xff, sizeof(ps));
    CHECK_OK(info(fd, HL_INFO_DEV_MEM_ALLOC_PAGE_SIZES, &ps, sizeof(ps)),
             "page sizes");
    CHECK(ps.page_order_bitmask == 0, "mask 0");
    CHECK_OK(info(fd, HL_INFO_RESET_COUNT, &rc, sizeof(rc)), "reset cnt");
    CHECK(rc.hard_reset_cnt == 0, "no resets");
    CHECK_OK(info(fd, HL_INFO_CS_COUNTERS, &cc, sizeof(cc)), "cs counters");
    CHECK_OK(info(fd, HL_INFO_HW_IDLE, &idle, sizeof(idle)), "idle");
    CHECK(idle.is_idle == 1, "is idle");
    CHECK(dram_free(cfd) == 127 * 768 * MB, "free");
    close(fd);
    CHECK_OK(info(cfd, HL_INFO_OPEN_STATS, &os, sizeof(os)), "open stats");
    CHECK(os.is_compute_ctx_active == 0, "released");
    close(cfd);
}

static void t_control_node(void)
{
    union hl_cb_args cb = {0};
    struct hl_info_args a = {0};
    int fds[5], i;

    for (i = 0; i < 5; i++) {
        CHECK_OK(fds[i] = open_ctl(0), "ctl open");
    }
    CHECK_ERR(ioctl(fds[0], CB_CODE, &cb), ENOTTY, "CB on control");
    CHECK_ERR(ioctl(fds[0], MEM_CODE, &cb), ENOTTY, "MEM on control");
    a.op = HL_INFO_GET_EVENTS;
    CHECK_ERR(ioctl(fds[0], INFO_CODE, &a), EOPNOTSUPP, "events");
    a.op = HL_INFO_REGISTER_EVENTFD;
    CHECK_ERR(ioctl(fds[0], INFO_CODE, &a), EOPNOTSUPP, "reg eventfd");
    a.op = HL_INFO_UNREGISTER_EVENTFD;
    CHECK_ERR(ioctl(fds[0], INFO_CODE, &a), EOPNOTSUPP, "unreg eventfd");
    /* control dispatch compares the number only: 'H' nr 1 != 0x40 */
    CHECK_ERR(ioctl(fds[0], GAUDI_HL_LEGACY_IOCTL_INFO, &a), ENOTTY, "'H'");
    CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fds[0], 0) == MAP_FAILED
          && errno == ENODEV, "control mmap");
    for (i = 0; i < 5; i++) {
        close(fds[i]);
    }
    CHECK_OK(API(hlsim_set_device_status)(1,
             GAUDI_HL_DEVICE_STATUS_MALFUNCTION), "set status");
    CHECK_ERR(open_ctl(1), EPERM, "ctl of disabled device");
    CHECK_OK(i = open_ctl(0), "other device still fine");
    close(i);
}

typedef struct {
    int v[3];
    size_t nl; uint64_t n; size_t dl; uint64_t d; size_t sl; uint64_t s;
} drm_version_t;

/* DRM_IOCTL_VERSION as libdrm issues it: lengths first, then strings */
static int drm_version(int fd, drm_version_t *v, char *name, char *date,
                       char *desc, size_t max)
{
    memset(v, 0, sizeof(*v));
    if (ioctl(fd, _IOWR('d', 0, *v), v)) {
        return -1;
    }
    if ((v->nl >= max) || (v->dl >= max) || (v->sl >= max)) {
        errno = E2BIG;
        return -1;
    }
    v->n = (uintptr_t)name;
    v->d = (uintptr_t)date;
    v->s = (uintptr_t)desc;
    memset(name, 0, max);
    memset(date, 0, max);
    memset(desc, 0, max);
    return ioctl(fd, _IOWR('d', 0, *v), v);
}

/* Habana's driver (default flavour): its own version.h numbers */
static void t_drm_version(void)
{
    char name[64], date[64], desc[64];
    drm_version_t v;
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(drm_version(fd, &v, name, date, desc, 64), "DRM_IOCTL_VERSION");
    CHECK(!strcmp(name, "habanalabs") && v.nl == 10, "name %s", name);
    CHECK((v.v[0] == 1) && (v.v[1] == 24) && (v.v[2] == 1),
          "version %d.%d.%d", v.v[0], v.v[1], v.v[2]);
    CHECK(!strcmp(date, "20260305") && v.dl == 8, "date %s", date);
    CHECK(!strcmp(desc, "Driver for HabanaLabs's AI Accelerators"),
          "desc %s", desc);
    close(fd);
    /* the control node answers INFO only (facts 1.2) */
    CHECK_OK(fd = open_ctl(0), "open ctl");
    CHECK_ERR(drm_version(fd, &v, name, date, desc, 64), ENOTTY,
              "VERSION on the control node");
    close(fd);
}

/* The in-kernel accel driver: the running kernel's version (facts 1.5) */
static void t_drm_version_upstream(void)
{
    char name[64], date[64], desc[64];
    struct utsname uts;
    drm_version_t v;
    int fd, major, minor;

    CHECK(!uname(&uts) && sscanf(uts.release, "%d.%d", &major, &minor) == 2,
          "uname %s", uts.release);
    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(drm_version(fd, &v, name, date, desc, 64), "DRM_IOCTL_VERSION");
    CHECK(!strcmp(name, "habanalabs"), "name %s", name);
    CHECK((v.v[0] == major) && (v.v[1] == minor), "version %d.%d vs %s",
          v.v[0], v.v[1], uts.release);
    CHECK(!strcmp(date, "20190505"), "date %s", date);
    CHECK(!strcmp(desc, "Driver for HabanaLabs's AI Accelerators"),
          "desc %s", desc);
    close(fd);
}

/* Habana's build without DRM accel: the HL codes work, VERSION does not;
 * the in-kernel driver always has the DRM core */
static void t_drm_version_nodrm(void)
{
    struct hl_info_args a = {0};
    struct gaudi_hl_hw_ip_info hw;
    char name[64], date[64], desc[64];
    drm_version_t v;
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_ERR(drm_version(fd, &v, name, date, desc, 64), ENOTTY,
              "VERSION without DRM accel");
    a.return_pointer = (uintptr_t)&hw;
    a.return_size    = sizeof(hw);
    a.op             = HL_INFO_HW_IP_INFO;
    CHECK_OK(ioctl(fd, GAUDI_HL_DRM_IOCTL_INFO, &a), "DRM-coded INFO");
    close(fd);
}

static void t_drm_version_nodrm_upstream(void)
{
    char name[64], date[64], desc[64];
    drm_version_t v;
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(drm_version(fd, &v, name, date, desc, 64), "DRM_IOCTL_VERSION");
    CHECK(!strcmp(date, "20190505"), "date %s", date);
    close(fd);
}

/* The misc-era driver (Linux 6.1) has no DRM core: nr 0 is unknown */
static void t_drm_version_legacy(void)
{
    char name[64], date[64], desc[64];
    drm_version_t v;
    int fd;

    CHECK_OK(fd = open("/dev/hl0", O_RDWR | O_CLOEXEC), "open hl0");
    CHECK_ERR(drm_version(fd, &v, name, date, desc, 64), ENOTTY,
              "VERSION on /dev/hl0");
    close(fd);
}

static void t_size_tolerant(void)
{
    uint8_t big[64] = {0};
    struct hl_info_device_status ds = { 7, 7 };
    struct hl_info_args *a = (struct hl_info_args*)big;
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    /* 16-byte input: op present, pad zero-extended */
    a->return_pointer = (uintptr_t)&ds;
    a->return_size    = sizeof(ds);
    a->op             = HL_INFO_DEVICE_STATUS;
    CHECK_OK(ioctl(fd, _IOC(_IOC_READ | _IOC_WRITE, 'd', 0x40, 16), big),
             "short INFO");
    CHECK(ds.status == 0, "status");
    /* larger than the kernel struct: the tail is ignored */
    big[40] = 0xAB;
    CHECK_OK(ioctl(fd, _IOC(_IOC_READ | _IOC_WRITE, 'd', 0x40, 64), big),
             "long INFO");
    CHECK(big[40] == 0xAB, "tail untouched");
    close(fd);
}

/* ================= stage 1: exclusivity, status ================= */

static void t_excl_same_process(void)
{
    int fd, fd2, d;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_ERR(open_dev(0), EBUSY, "second open");
    CHECK_OK(fd2 = open_dev(1), "other device");
    close(fd2);
    CHECK_OK(d = dup(fd), "dup");
    close(fd);
    CHECK_ERR(open_dev(0), EBUSY, "dup keeps the context");
    CHECK(hw_ip(d).u61.device_id == 0x1020, "ioctl via dup");
    close(d);
    CHECK_OK(fd = open_dev(0), "reopen after close");
    close(fd);
    CHECK_ERR(open("/dev/accel/accel0", O_RDWR | O_EXCL), EBUSY, "O_EXCL");
    CHECK_OK(fd = open("/dev/accel/accel0", O_RDWR), "no O_CLOEXEC");
    CHECK_OK(d = fcntl(fd, F_DUPFD_CLOEXEC, 100), "F_DUPFD_CLOEXEC");
    CHECK(d >= 100, "dupfd");
    close(fd);
    CHECK(hw_ip(d).u61.device_id == 0x1020, "ioctl via F_DUPFD");
    CHECK_OK(dup2(d, 50), "dup2");
    close(d);
    CHECK_ERR(open_dev(0), EBUSY, "dup2 keeps it");
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_OPEN_FDS, 0) == 1, "fds");
    close(50);
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_OPEN_FDS, 0) == 0, "fds 0");
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_CONTEXTS, 0) == 0, "ctx 0");
}

static void holder(void *arg)
{
    int *sv = arg, fd = open_dev(0);

    if (fd < 0) {
        _exit(3);
    }
    sync_byte(sv[1], 'o');
    sync_wait(sv[1]);
    close(fd);
    _exit(0);
}

static void t_excl_other_process(void)
{
    int   sv[2], fd, st;
    pid_t pid;

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
    pid = fork();
    if (pid == 0) {
        holder(sv);
    }
    CHECK(sync_wait(sv[0]) == 'o', "holder");
    CHECK_ERR(open_dev(0), EBUSY, "owned by another process");
    sync_byte(sv[0], 'q');
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "holder status");
    CHECK_OK(fd = open_dev(0), "free again");
    close(fd);
}

static void t_status_open(void)
{
    int (*set)(int, unsigned) = API(hlsim_set_device_status);
    struct hl_info_device_status ds;
    uint64_t h;
    int fd, cfd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(cfd = open_ctl(0), "ctl");
    CHECK_OK(set(0, GAUDI_HL_DEVICE_STATUS_IN_RESET), "set");
    check_file("/sys/class/accel/accel0/device/status", "in reset\n");
    CHECK_ERR(mem_alloc(fd, 4096, &h), EBUSY, "alloc in reset");
    CHECK_ERR(info(fd, HL_INFO_HW_IDLE, &ds, sizeof(ds)), EBUSY, "idle");
    CHECK_OK(info(cfd, HL_INFO_DEVICE_STATUS, &ds, sizeof(ds)), "status");
    CHECK(ds.status == 1, "status in reset");
    close(fd);
    CHECK_ERR(open_dev(0), EAGAIN, "open in reset");
    CHECK_OK(set(0, 5), "after release");
    check_file("/sys/class/accel/accel0/device/status",
               "in reset after device release\n");
    CHECK_ERR(open_dev(0), EAGAIN, "open in reset after release");
    CHECK_OK(set(0, GAUDI_HL_DEVICE_STATUS_MALFUNCTION), "set");
    CHECK_ERR(open_dev(0), EPERM, "open disabled");
    check_file("/sys/class/accel/accel0/device/status", "disabled\n");
    CHECK_OK(set(0, GAUDI_HL_DEVICE_STATUS_NEEDS_RESET), "set");
    CHECK_ERR(open_dev(0), EPERM, "open needs reset");
    /* IN_DEVICE_CREATION counts as operational (facts 9.12) */
    CHECK_OK(set(0, GAUDI_HL_DEVICE_STATUS_IN_DEVICE_CREATION), "set");
    CHECK_OK(fd = open_dev(0), "open in device creation");
    CHECK_OK(mem_alloc(fd, 4096, &h), "alloc in device creation");
    close(fd);
    CHECK_OK(set(0, GAUDI_HL_DEVICE_STATUS_OPERATIONAL), "set");
    CHECK_OK(fd = open_dev(0), "open operational");
    close(fd);
    close(cfd);
    CHECK(set(0, 9) == -EINVAL && set(7, 0) == -EINVAL, "bad args");
}

static void t_reset_timer(void)
{
    struct hl_info_reset_count rc;
    int fd, cfd;

    CHECK_OK(cfd = open_ctl(0), "ctl");
    CHECK_OK(API(hlsim_reset_device)(0, 100), "reset");
    CHECK_ERR(open_dev(0), EAGAIN, "open during reset");
    usleep(300000);
    check_file("/sys/class/accel/accel0/device/status", "operational\n");
    CHECK_OK(fd = open_dev(0), "open after reset");
    CHECK_OK(info(cfd, HL_INFO_RESET_COUNT, &rc, sizeof(rc)), "count");
    CHECK(rc.hard_reset_cnt == 1, "hard resets %u", rc.hard_reset_cnt);
    close(fd);
    close(cfd);
}

/* What another thread sees while the main one closes the device */
typedef struct {
    volatile int done;
    int          saw_release;   /* status IN_RESET_AFTER_DEVICE_RELEASE */
    int          saw_eagain;    /* an open got EAGAIN */
    int          other_errno;
} release_watch_t;

static void *release_watcher(void *arg)
{
    release_watch_t *w = arg;
    int              fd;

    while (!w->done) {
        if (API(hlsim_get_device_status)(0) ==
            GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE) {
            w->saw_release = 1;
            fd = open_dev(0);
            if (fd >= 0) {
                close(fd);
                w->other_errno = -1;
            } else if (errno == EAGAIN) {
                w->saw_eagain = 1;
            } else {
                w->other_errno = errno;
            }
        }
        usleep(1000);
    }
    return NULL;
}

static struct hl_info_reset_count reset_count(void)
{
    struct hl_info_reset_count rc = {0};
    int                        cfd;
    struct hl_info_args        a = {0};

    cfd = hl_legacy_nodes() ? open("/dev/hl_controlD0", O_RDWR | O_CLOEXEC) :
          open_ctl(0);
    CHECK_OK(cfd, "control node");
    a.return_pointer = (uintptr_t)&rc;
    a.return_size    = sizeof(rc);
    a.op             = HL_INFO_RESET_COUNT;
    CHECK_OK(ioctl(cfd, hl_legacy_nodes() ? GAUDI_HL_LEGACY_IOCTL_INFO :
                   INFO_CODE, &a), "reset count");
    close(cfd);
    return rc;
}

/*
 * Gaudi2/3 reset upon every release (facts 9.8), Gaudi1 does not (K612
 * common/habanalabs_drv.c:356-378). The compute reset runs inside the
 * closer's close() (device.c:1749-1762 queue hard resets only): another
 * thread sees the status and EAGAIN meanwhile, the closer reopens at once
 * after close() returns, and no reset counter moves (:1981-1994).
 */
static void t_release_reset_default(void)
{
    int gaudi1 = getenv("HLSIM_ASIC") && !strcmp(getenv("HLSIM_ASIC"),
                                                 "gaudi1");
    release_watch_t w = {0};
    pthread_t       th;
    int             fd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK(pthread_create(&th, NULL, release_watcher, &w) == 0, "thread");
    close(fd);
    w.done = 1;
    pthread_join(th, NULL);
    CHECK_OK(fd = open_dev(0), "reopen right after close()");
    close(fd);
    CHECK(w.saw_release == !gaudi1, "release reset seen: %d", w.saw_release);
    CHECK(w.saw_eagain == !gaudi1, "EAGAIN seen: %d", w.saw_eagain);
    CHECK(w.other_errno == 0, "open during the release reset: %d",
          w.other_errno);
    CHECK(reset_count().hard_reset_cnt == 0, "no hard reset counted");
}

/*
 * A close during a hard reset does not shorten it: the release reset is
 * ignored while a reset runs (K612 common/device.c:1688-1697)
 */
static void t_close_during_reset(void)
{
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(API(hlsim_reset_device)(0, 1500), "hard reset");
    close(fd);   /* within the second of grace: not killed */
    CHECK(API(hlsim_get_device_status)(0) == GAUDI_HL_DEVICE_STATUS_IN_RESET,
          "still the hard reset: status %d",
          API(hlsim_get_device_status)(0));
    usleep(500000);   /* longer than a release reset */
    CHECK_ERR(open_dev(0), EAGAIN, "the hard reset goes on");
    CHECK(reset_count().hard_reset_cnt == 1, "one hard reset");
}

/* ================= stage 1: memory ================= */

static void t_mem_alloc_free(void)
{
    uint64_t h1, h2, h3, va, total, pg;
    int fd, cfd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(cfd = open_ctl(0), "ctl");
    pg    = hw_ip(fd).u61.dram_page_size;
    total = hw_ip(fd).u61.dram_size;
    CHECK(pg == 768 * MB && total == 127 * pg, "the real Gaudi2 geometry");
    CHECK_ERR(mem_alloc(fd, 0, &h1), EINVAL, "size 0");
    CHECK(h1 == 0, "output zeroed on error");
    CHECK_OK(mem_alloc(fd, 1, &h1), "alloc 1");
    CHECK(h1 == 1, "first handle %llu", (unsigned long long)h1);
    CHECK(dram_free(cfd) == total - pg, "rounded to a page");
    CHECK_OK(mem_alloc(fd, pg + 1, &h2), "alloc 2 pages");
    CHECK(h2 == 2, "second handle");
    CHECK(dram_free(fd) == total - 3 * pg, "3 pages used");
    CHECK_ERR(mem_alloc(fd, total, &h3), ENOMEM, "too big");
    CHECK_ERR(mem_free(fd, 77), EINVAL, "unknown handle");
    CHECK_OK(map_dev(fd, h1, 0, 0, &va), "map");
    CHECK_ERR(mem_free(fd, h1), EINVAL, "mapped");
    CHECK_OK(unmap(fd, va), "unmap");
    CHECK_OK(mem_free(fd, h1), "free");
    CHECK_ERR(mem_free(fd, h1), EINVAL, "double free");
    CHECK_OK(mem_alloc(fd, 4096, &h3), "realloc");
    CHECK(h3 == 1, "lowest free id reused");
    CHECK_OK(mem_free(fd, h3), "free");
    /* exhaustion: fill all pages, then one more */
    CHECK_OK(mem_alloc(fd, total - 2 * pg, &h3), "fill");
    CHECK(dram_free(fd) == 0, "full");
    CHECK_ERR(mem_alloc(fd, 1, &h1), ENOMEM, "exhausted");
    CHECK_OK(mem_free(fd, h3), "free");
    CHECK_OK(mem_alloc(fd, 3 * pg, &h3), "contiguous");
    CHECK_OK(mem_free(fd, h3), "free");
    CHECK_OK(mem_free(fd, h2), "free");
    CHECK(dram_free(cfd) == total, "all free");
    close(fd);
    close(cfd);
}

static void t_mem_map_device(void)
{
    struct gaudi_hl_hw_ip_info hw;
    uint64_t h, h2, va, va2, va3;
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    hw = hw_ip(fd);
    CHECK_OK(mem_alloc(fd, 64 * MB, &h), "alloc");
    CHECK_OK(mem_alloc(fd, 64 * MB, &h2), "alloc");
    CHECK_ERR(map_dev(fd, 99, 0, 0, &va), EINVAL, "unknown handle");
    CHECK(va == 0, "zero VA on error");
    CHECK_OK(map_dev(fd, h, 0, 0, &va), "map");
    CHECK(va >= hw.u61.dram_base_address && va < 0x1002000000000000ULL,
          "va %llx in DRAM range", (unsigned long long)va);
    CHECK((va & (GB - 1)) == 0, "1 GiB aligned");
    CHECK_OK(map_dev(fd, h, 0, 0, &va2), "map twice");
    CHECK(va2 != va && (va2 & (GB - 1)) == 0, "second VA");
    CHECK_ERR(unmap(fd, va + 4096), EINVAL, "inexact unmap");
    CHECK_ERR(unmap(fd, 0), EINVAL, "unmap 0");
    CHECK_OK(unmap(fd, va), "unmap");
    CHECK_ERR(unmap(fd, va), EINVAL, "double unmap");
    /* hint: honoured when free and aligned; FORCE_HINT fails otherwise */
    CHECK_OK(map_dev(fd, h2, va + 8 * GB, 0, &va3), "hint");
    CHECK(va3 == va + 8 * GB, "hint honoured");
    /* K612 common/memory.c:623-640, 1175-1182 */
    CHECK_ERR(map_dev(fd, h2, va + 8 * GB + 4096, HL_MEM_FORCE_HINT, &va3),
              ENOMEM, "misaligned forced hint");
    CHECK_ERR(map_dev(fd, h2, va + 8 * GB, HL_MEM_FORCE_HINT, &va3),
              ENOMEM, "busy forced hint");
    CHECK_OK(map_dev(fd, h2, va + 8 * GB + 4096, 0, &va3), "bad hint");
    CHECK(va3 != va + 8 * GB + 4096, "bad hint ignored");
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_MAPPINGS, 0) == 3, "maps");
    close(fd);
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_MAPPINGS, 0) == 0, "freed");
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_ALLOCS, 0) == 0, "freed");
}

static void t_mem_map_host(void)
{
    uint64_t va, va2;
    uint8_t *buf, *huge, *ro, *hole;
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    buf = malloc(100000);
    CHECK_OK(map_host(fd, buf + 0x123, 5000, &va), "map");
    CHECK(va >= 0xFFF0000000000000ULL && va < 0xFFF0800000000000ULL,
          "host range %llx", (unsigned long long)va);
    CHECK((va & 0xfff) == (((uintptr_t)buf + 0x123) & 0xfff), "offset kept");
    CHECK_OK(map_host(fd, buf + 0x123, 5000, &va2), "same range twice");
    CHECK(va2 != va, "distinct VAs");
    CHECK_ERR(map_host(fd, buf, 0, &va2), EINVAL, "size 0");
    CHECK_ERR(map_host(fd, (void*)-4096L, 8192, &va2), EINVAL, "overflow");
    CHECK_ERR(map_host(fd, NULL, 4096, &va2), EFAULT, "NULL");
    hole = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(hole + 4096, 4096);
    /* K612: the pages before the hole pin, then ENOMEM (t_pin_errnos) */
    CHECK_ERR(map_host(fd, hole, 3 * 4096, &va2), ENOMEM, "hole");
    CHECK_OK(map_host(fd, hole, 4096, &va2), "before the hole");
    ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK_ERR(map_host(fd, ro, 4096, &va2), EFAULT, "read-only");
    huge = aligned_alloc(2 * MB, 4 * MB);
    memset(huge, 0, 4 * MB);
    CHECK_OK(map_host(fd, huge, 4 * MB, &va2), "huge");
    CHECK(va2 >= 0xFFF0800000000000ULL && va2 < 0xFFF1000000000000ULL &&
          (va2 % (2 * MB)) == 0, "huge range %llx", (unsigned long long)va2);
    CHECK_ERR(unmap(fd, va + 1), EINVAL, "inexact");
    CHECK_OK(unmap(fd, va), "unmap");
    CHECK_OK(unmap(fd, va2), "unmap huge");
    close(fd);
    free(buf);
    free(huge);
    munmap(ro, 4096);
    munmap(hole, 4096);
    munmap(hole + 8192, 4096);
}

static void t_mem_gaudi1(void)
{
    uint64_t h, va, total = 32 * GB - 512 * MB;
    uint8_t *buf = aligned_alloc(4096, 8192);
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_ERR(mem_alloc(fd, 0, &h), EINVAL, "size 0");
    CHECK_OK(mem_alloc(fd, 10 * MB, &h), "alloc accounts");
    CHECK(h == 0, "handle 0");
    CHECK(dram_free(fd) == total - 10 * MB, "accounted");
    CHECK_ERR(map_dev(fd, 0, 0, 0, &va), EINVAL, "map handle 0");
    CHECK_OK(mem_free(fd, 10 * MB), "free by size");
    CHECK(dram_free(fd) == total, "unaccounted");
    CHECK_OK(map_host(fd, buf + 8, 100, &va), "host map");
    CHECK(va >= 0x1000000000000ULL && va < 0x27FC000000000ULL &&
          (va & 0xfff) == 8, "gaudi1 host range %llx",
          (unsigned long long)va);
    CHECK_OK(unmap(fd, va), "unmap");
    close(fd);
    free(buf);
}

static void t_mem_gaudi3(void)
{
    uint64_t h, va;
    uint8_t *buf = aligned_alloc(4096, 8192);
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(mem_alloc(fd, 1, &h), "alloc");
    CHECK_OK(map_dev(fd, h, 0, 0, &va), "map");
    CHECK(va >= hw_ip(fd).u61.dram_base_address &&
          va < 0x0202000000000000ULL, "gaudi3 dram va");
    CHECK_OK(map_host(fd, buf, 8192, &va), "host");
    CHECK(va >= 0xFF70000000000000ULL && va < 0xFF70800000000000ULL,
          "gaudi3 host range");
    close(fd);
    free(buf);
}

static void t_mem_export(void)
{
    uint64_t h, va, hva, va2, pg;
    uint8_t *buf = aligned_alloc(4096, 8192);
    char     hdr[16];
    int fd, d, d2, d3;

    CHECK_OK(fd = open_dev(0), "open");
    pg = hw_ip(fd).u61.dram_page_size;
    CHECK_OK(mem_alloc(fd, 128 * MB, &h), "alloc");
    CHECK_OK(map_dev(fd, h, 0, 0, &va), "map");
    CHECK_OK(map_host(fd, buf, 8192, &hva), "host");
    CHECK_ERR(export_fd(fd, hva, 4096, 0, O_RDWR), EINVAL, "host VA");
    CHECK_ERR(export_fd(fd, va + 4096, 4096, 0, O_RDWR), EINVAL, "inexact");
    CHECK_ERR(export_fd(fd, va, 0, 0, O_RDWR), EINVAL, "size 0");
    CHECK_ERR(export_fd(fd, va, 100, 0, O_RDWR), EINVAL, "size unaligned");
    CHECK_ERR(export_fd(fd, va, 4096, 100, O_RDWR), EINVAL, "off unaligned");
    CHECK_ERR(export_fd(fd, va, 64 * MB, pg - 64 * MB + 4096, O_RDWR), EINVAL,
              "past the mapping");
    CHECK_ERR(export_fd(fd, h, 4096, 0, O_RDWR), EINVAL, "handle, not VA");
    CHECK_OK(d = export_fd(fd, va, 64 * MB, 64 * MB, O_RDWR | O_CLOEXEC),
             "export");
    CHECK(fcntl(d, F_GETFD) & FD_CLOEXEC, "cloexec");
    CHECK_OK(d2 = export_fd(fd, va, 4096, 0, O_RDWR), "export no cloexec");
    CHECK(!(fcntl(d2, F_GETFD) & FD_CLOEXEC), "no cloexec");
    CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, d, 0) == MAP_FAILED &&
          errno == EINVAL, "dma-buf mmap must fail");
    CHECK(pread(d, hdr, sizeof(hdr), 0) == sizeof(hdr), "readable header");
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_DMABUFS, 0) == 2, "dmabufs");
    CHECK_ERR(unmap(fd, va), EINVAL, "exported");
    close(d2);
    CHECK_OK(d3 = dup(d), "dup");
    close(d);
    CHECK_ERR(unmap(fd, va), EINVAL, "dup still exported");
    CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, d3, 0) == MAP_FAILED &&
          errno == EINVAL, "dup mmap must fail");
    close(d3);
    CHECK_OK(unmap(fd, va), "unmap after close");
    CHECK_OK(map_dev(fd, h, 0, 0, &va2), "remap");
    close(fd);
    free(buf);
}

static void t_export_gaudi1(void)
{
    int fd, d;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(d = export_fd(fd, 0x20000000, 2 * MB, 0, O_RDWR | O_CLOEXEC),
             "physical");
    CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, d, 0) == MAP_FAILED &&
          errno == EINVAL, "mmap");
    close(d);
    CHECK_ERR(export_fd(fd, 0x20000000, 2 * MB, 4096, O_RDWR), EINVAL,
              "offset on gaudi1");
    CHECK_ERR(export_fd(fd, 0x10000000, 2 * MB, 0, O_RDWR), EINVAL,
              "below user DRAM");
    CHECK_ERR(export_fd(fd, 32 * GB - 4096, 2 * MB, 0, O_RDWR), EINVAL,
              "past the end");
    close(fd);
}

static void dmabuf_receiver(void *arg)
{
    int *sv = arg, d;

    d = recv_fd(sv[1]);
    if (mmap(NULL, 4096, PROT_READ, MAP_SHARED, d, 0) != MAP_FAILED ||
        errno != EINVAL) {
        _exit(4);
    }
    sync_byte(sv[1], 'r');
    sync_wait(sv[1]);
    close(d);
    sync_byte(sv[1], 'c');
    _exit(0);
}

static void t_dmabuf_other_process(void)
{
    uint64_t h, va;
    int sv[2], fd, d, st;
    pid_t pid;

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(mem_alloc(fd, 64 * MB, &h), "alloc");
    CHECK_OK(map_dev(fd, h, 0, 0, &va), "map");
    CHECK_OK(d = export_fd(fd, va, 64 * MB, 0, O_RDWR | O_CLOEXEC), "export");
    pid = fork();
    if (pid == 0) {
        close(fd);
        dmabuf_receiver(sv);
    }
    send_fd(sv[0], d);
    close(d);
    CHECK(sync_wait(sv[0]) == 'r', "receiver mmap check");
    CHECK_ERR(unmap(fd, va), EINVAL, "alive in the other process");
    sync_byte(sv[0], 'g');
    CHECK(sync_wait(sv[0]) == 'c', "closed");
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "receiver status %d", st);
    CHECK_OK(unmap(fd, va), "unmap once all copies are closed");
    close(fd);
}

/*
 * The dma-buf holds the exporter's compute file (facts 4.1, 9.4): after the
 * exporter exits, its device stays busy (EBUSY) while an importer's op-99
 * mapping (or any copy of the fd) lives, and is free once it is unmapped
 */
static void exporter_child(void *arg)
{
    int *sv = arg, fd, d;
    uint64_t h, va;

    fd = open_dev(0);
    if ((fd < 0) || mem_alloc(fd, 64 * MB, &h) || map_dev(fd, h, 0, 0, &va)) {
        _exit(3);
    }
    d = export_fd(fd, va, 64 * MB, 0, O_RDWR | O_CLOEXEC);
    if (d < 0) {
        _exit(4);
    }
    send_fd(sv[1], d);
    sync_wait(sv[1]);
    _exit(0);   /* without closing anything */
}

static void t_exporter_lifetime(void)
{
    uint64_t va;
    int sv[2], fd, d, st;
    pid_t pid;

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
    pid = fork();
    if (pid == 0) {
        exporter_child(sv);
    }
    CHECK_OK(d = recv_fd(sv[0]), "received dma-buf");
    CHECK_OK(fd = open_dev(1), "importer device");
    CHECK_OK(reg_dmabuf(fd, d, 64 * MB, &va), "op 99");
    close(d);   /* the mapping keeps its own reference */
    sync_byte(sv[0], 'x');
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
          "exporter status 0x%x", st);
    CHECK_ERR(open_dev(0), EBUSY, "exporter's context alive");
    CHECK_ERR(open_dev(0), EBUSY, "still alive");
    CHECK_OK(unmap(fd, va), "drop the import");
    CHECK_OK(d = open_dev(0), "free once the last dma-buf is gone");
    close(d);
    close(fd);
}

/*
 * A Gaudi1 exporter that exits while another process holds its dma-buf:
 * the device stays taken, EBUSY on accel and Habana's driver (the dma-buf
 * holds the exporter's file), EAGAIN on Linux 6.1 (it holds the context
 * only, whose release is pending: K61 common/habanalabs_drv.c:183-187)
 */
static void t_exporter_held_gaudi1(void)
{
    int   sv[2], fd, d, st, want = hl_legacy_nodes() ? EAGAIN : EBUSY;
    pid_t pid;

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
    pid = fork();
    if (pid == 0) {
        fd = open_dev(0);
        d  = (fd < 0) ? -1 : export_fd(fd, 0x20000000, 2 * MB, 0,
                                       O_RDWR | O_CLOEXEC);
        if (d < 0) {
            _exit(3);
        }
        send_fd(sv[1], d);
        close(d);
        close(fd);
        _exit(0);
    }
    CHECK_OK(d = recv_fd(sv[0]), "received dma-buf");
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
          "exporter status 0x%x", st);
    CHECK_ERR(open_dev(0), want, "exporter's context alive");
    close(d);
    CHECK_OK(fd = open_dev(0), "free once the last dma-buf is gone");
    close(fd);
}

static struct hl_open_stats_info open_stats(int cfd)
{
    struct hl_open_stats_info os;

    memset(&os, 0xff, sizeof(os));
    CHECK_OK(info(cfd, HL_INFO_OPEN_STATS, &os, sizeof(os)), "open stats");
    return os;
}

/*
 * A second open while the exporter holds its device is EBUSY on every
 * kernel (K61 common/habanalabs_drv.c:190-196, K612 :232-237); once the
 * exporter closed and its dma-buf lives, 6.1 answers EAGAIN (the release
 * is pending, K61 :182-188, device.c:476), accel and Habana's driver EBUSY
 * (the dma-buf holds the file, K612 common/memory.c:1877-1885). OPEN_STATS
 * shows the device active throughout, and in release on 6.1 after the
 * close (K61 common/habanalabs_ioctl.c:527-528, device.c:419-422)
 */
static void t_exporter_open_stats(void)
{
    int   sv[2], fd, cfd, d, st, legacy = hl_legacy_nodes();
    struct hl_open_stats_info os;
    pid_t pid;

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
    pid = fork();
    if (pid == 0) {
        fd = open_dev(0);
        d  = (fd < 0) ? -1 : export_fd(fd, 0x20000000, 2 * MB, 0,
                                       O_RDWR | O_CLOEXEC);
        if (d < 0) {
            _exit(3);
        }
        send_fd(sv[1], d);
        close(d);
        sync_wait(sv[1]);
        close(fd);
        sync_byte(sv[1], 'd');
        sync_wait(sv[1]);
        _exit(0);
    }
    CHECK_OK(d = recv_fd(sv[0]), "received dma-buf");
    CHECK_OK(cfd = open_ctl(0), "control");
    CHECK_ERR(open_dev(0), EBUSY, "exporter holds the device");
    os = open_stats(cfd);
    CHECK(os.is_compute_ctx_active == 1 && os.compute_ctx_in_release == 0,
          "exporter open: active %u, in release %u",
          os.is_compute_ctx_active, os.compute_ctx_in_release);
    sync_byte(sv[0], 'c');
    CHECK(sync_wait(sv[0]) == 'd', "exporter closed");
    CHECK_ERR(open_dev(0), legacy ? EAGAIN : EBUSY, "dma-buf alive");
    os = open_stats(cfd);
    CHECK(os.is_compute_ctx_active == 1 &&
          os.compute_ctx_in_release == (unsigned)legacy,
          "exporter closed: active %u, in release %u",
          os.is_compute_ctx_active, os.compute_ctx_in_release);
    close(d);
    os = open_stats(cfd);
    CHECK(os.is_compute_ctx_active == 0 && os.compute_ctx_in_release == 0,
          "dma-buf gone: active %u, in release %u",
          os.is_compute_ctx_active, os.compute_ctx_in_release);
    CHECK_OK(fd = open_dev(0), "free once the last dma-buf is gone");
    close(fd);
    close(cfd);
    sync_byte(sv[0], 'x');
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
          "exporter status 0x%x", st);
    close(sv[0]);
    close(sv[1]);
}

/*
 * Linux >= 6.5 refuses long-term writable pins of shared file mappings on
 * file systems with dirty tracking (facts 9.10): USERPTR MAP -> EFAULT on
 * the accel flavours; private, memfd (shmem) mappings and Linux 6.1 pass
 */
static void t_pin_shared_file(void)
{
    static const char *dirs[] = { "/var/tmp", "/tmp", "." };
    char     path[256];
    struct statfs sfs;
    uint64_t va;
    unsigned i;
    void    *p, *q, *m;
    int      fd, f = -1, mfd;

    for (i = 0; (f < 0) && (i < 3); i++) {
        if ((statfs(dirs[i], &sfs) == 0) && (sfs.f_type != 0x01021994)) {
            snprintf(path, sizeof(path), "%s/hlsim-pin-XXXXXX", dirs[i]);
            f = mkstemp(path);
        }
    }
    CHECK(f >= 0, "no writable non-tmpfs directory for the test file");
    unlink(path);
    CHECK(ftruncate(f, 8192) == 0, "ftruncate");
    p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
    q = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE, f, 0);
    CHECK(p != MAP_FAILED && q != MAP_FAILED, "mmap file");
    CHECK_OK(mfd = memfd_create("hlsim-pin", MFD_CLOEXEC), "memfd");
    CHECK(ftruncate(mfd, 8192) == 0, "ftruncate memfd");
    m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    CHECK(m != MAP_FAILED, "mmap memfd");
    CHECK_OK(fd = open_dev(0), "open");
    if (hl_legacy_nodes()) {
        CHECK_OK(map_host(fd, p, 8192, &va), "Linux 6.1 pins it");
    } else {
        CHECK_ERR(map_host(fd, p, 8192, &va), EFAULT, "shared file");
    }
    CHECK_OK(map_host(fd, q, 8192, &va), "private file mapping");
    CHECK_OK(map_host(fd, m, 8192, &va), "memfd (shmem)");
    close(fd);
    munmap(p, 8192);
    munmap(q, 8192);
    munmap(m, 8192);
    close(f);
    close(mfd);
}

/*
 * DRAM PCI BAR (facts 4.1, 9.6): export checks every page of the whole
 * allocation against the BAR size (BAR 4 in sysfs `resource`)
 */
static void t_export_bar(void)
{
    unsigned long long s, e, fl;
    char     buf[1024], *line;
    uint64_t h1, h2, va1, va2;
    int      fd, d, i;

    CHECK(read_file("/sys/bus/pci/devices/0000:10:00.0/resource", buf,
                    sizeof(buf)) == 0, "resource");
    for (i = 0, line = buf; i < 4; i++) {
        line = strchr(line, '\n') + 1;
    }
    CHECK(sscanf(line, "%llx %llx %llx", &s, &e, &fl) == 3 &&
          e - s + 1 == (getenv("HLSIM_ASIC") ? GB : 2 * GB), "BAR 4: %s",
          line);
    CHECK_OK(fd = open_dev(0), "open");
    if (getenv("HLSIM_ASIC")) {   /* Gaudi1: physical range, BAR 1 GiB */
        CHECK_OK(d = export_fd(fd, 0x20000000, 2 * MB, 0, O_RDWR),
                 "inside the BAR");
        close(d);
        CHECK_ERR(export_fd(fd, GB - MB, 2 * MB, 0, O_RDWR), EINVAL,
                  "partly outside the BAR");
        close(fd);
        return;
    }
    /* 768 MiB pages: page 1 ends at 1.5 GiB, page 2 at 2.25 GiB */
    CHECK_OK(mem_alloc(fd, 1, &h1), "page 1");
    CHECK_OK(mem_alloc(fd, 1, &h2), "page 2");
    CHECK_OK(map_dev(fd, h1, 0, 0, &va1), "map");
    CHECK_OK(map_dev(fd, h2, 0, 0, &va2), "map");
    CHECK_OK(d = export_fd(fd, va1, 4096, 0, O_RDWR), "inside the BAR");
    close(d);
    CHECK_ERR(export_fd(fd, va2, 4096, 0, O_RDWR), EINVAL,
              "one page of the allocation outside the BAR");
    close(fd);
}

/*
 * Upstream names the control node by accel index but opens it by the
 * driver's probe-order id (facts 9.9). With accel indices starting at 1
 * (another accel driver took accel0): accel_controlD1 reaches the second
 * device, accel_controlD2 none (ENXIO)
 */
static void t_control_probe_order(void)
{
    struct stat st;
    int fd, cfd;

    CHECK_ERR(access("/dev/accel/accel0", F_OK), ENOENT, "accel0");
    CHECK_OK(fd = open("/dev/accel/accel1", O_RDWR | O_CLOEXEC), "accel1");
    CHECK(hw_ip(fd).u61.module_id == 0, "accel1 is device 0");
    CHECK(fstat(fd, &st) == 0 && minor(st.st_rdev) == 1, "minor %u",
          minor(st.st_rdev));
    check_file("/sys/class/accel/accel1/device/module_id", "0\n");
    CHECK_OK(cfd = open("/dev/accel/accel_controlD1", O_RDWR | O_CLOEXEC),
             "controlD1");
    CHECK(hw_ip(cfd).u61.module_id == 1, "controlD1 is device 1");
    close(cfd);
    CHECK_ERR(open("/dev/accel/accel_controlD2", O_RDWR | O_CLOEXEC), ENXIO,
              "controlD2: no device with probe id 2");
    close(fd);
}

static void t_close_frees(void)
{
    uint64_t h, va, total = 127 * 768 * MB, pg = 768 * MB;
    uint8_t *buf = malloc(4096);
    int fd, cfd;

    CHECK_OK(cfd = open_ctl(0), "ctl");
    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(mem_alloc(fd, 256 * MB, &h), "alloc");
    CHECK_OK(map_dev(fd, h, 0, 0, &va), "map");
    CHECK_OK(map_host(fd, buf, 4096, &va), "host");
    CHECK(dram_free(cfd) == total - pg, "used");
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_DRAM_USED, 0) == pg,
          "counter");
    close(fd);
    CHECK(dram_free(cfd) == total, "freed on close");
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_MAPPINGS, 0) == 0, "maps");
    CHECK_OK(fd = open_dev(0), "reopen");
    CHECK_OK(mem_alloc(fd, 1, &h), "alloc");
    CHECK(h == 1, "fresh handles");
    close(fd);
    close(cfd);
    free(buf);
}

static void t_faults_env(void)
{
    uint64_t h;
    int fd;

    CHECK_ERR(open_dev(0), EIO, "open #1");
    CHECK_OK(fd = open_dev(0), "open #2");
    CHECK_OK(mem_alloc(fd, 1, &h), "alloc #1");
    CHECK_ERR(mem_alloc(fd, 1, &h), ENOMEM, "alloc #2");
    CHECK_OK(mem_alloc(fd, 1, &h), "alloc #3");
    CHECK_ERR(mem_free(fd, h), 123, "numeric errno");
    close(fd);
}

static void t_faults_api(void)
{
    int (*add)(const char *, unsigned, int) = API(hlsim_fault_add);
    struct hl_info_device_status ds;
    uint64_t h, va;
    uint8_t *buf = malloc(4096);
    int fd, d;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK(add("nope", 1, EIO) == -EINVAL, "unknown op");
    CHECK(add("info", 0, EIO) == -EINVAL, "nth 0");
    CHECK_OK(add("info", 2, ETIMEDOUT), "add");
    CHECK_OK(info(fd, HL_INFO_DEVICE_STATUS, &ds, sizeof(ds)), "info 1");
    CHECK_ERR(info(fd, HL_INFO_DEVICE_STATUS, &ds, sizeof(ds)), ETIMEDOUT,
              "info 2");
    CHECK_OK(info(fd, HL_INFO_DEVICE_STATUS, &ds, sizeof(ds)), "info 3");
    CHECK_OK(add("mem_map", 1, EFAULT), "add");
    CHECK_ERR(map_host(fd, buf, 4096, &va), EFAULT, "map");
    CHECK_OK(mem_alloc(fd, 1, &h), "alloc");
    CHECK_OK(map_dev(fd, h, 0, 0, &va), "map");
    CHECK_OK(add("mem_export", 1, ENODEV), "add");
    CHECK_ERR(export_fd(fd, va, 4096, 0, O_RDWR), ENODEV, "export");
    CHECK_OK(add("mem_unmap", 1, EBUSY), "add");
    CHECK_ERR(unmap(fd, va), EBUSY, "unmap");
    CHECK_OK(add("mem_free", 1, EIO), "add");
    CHECK_OK(unmap(fd, va), "unmap");
    CHECK_ERR(mem_free(fd, h), EIO, "free");
    CHECK_OK(add("mem_alloc", 1, ENOMEM), "add");
    CHECK_OK(add("open", 1, ENODEV), "add");
    CHECK_OK(API(hlsim_fault_clear)(), "clear");
    CHECK_OK(mem_alloc(fd, 1, &h), "cleared");
    close(fd);
    CHECK_OK(fd = open_dev(0), "cleared open");
    CHECK_OK(d = open_ctl(1), "ctl");
    CHECK_OK(add("open", 1, EAGAIN), "add");
    CHECK_ERR(open_ctl(1), EAGAIN, "control open fault");
    close(d);
    close(fd);
    free(buf);
}

static void fork_child(void *arg)
{
    int fd = *(int*)arg;

    /* the inherited fd is usable; closing it here keeps the parent's */
    if (hw_ip(fd).u61.device_id != 0x1020) {
        _exit(5);
    }
    close(fd);
    if ((open_dev(0) != -1) || (errno != EBUSY)) {
        _exit(6);
    }
    _exit(0);
}

static void t_fork(void)
{
    uint64_t h, va;
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(mem_alloc(fd, 64 * MB, &h), "alloc");
    CHECK_OK(map_dev(fd, h, 0, 0, &va), "map");
    in_child(fork_child, &fd);
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_DRAM_USED, 0) == 768 * MB,
          "child close did not free the parent's memory");
    CHECK_OK(unmap(fd, va), "parent still owns its mapping");
    close(fd);
}

/* ================= stage 2: CB, CS, WAIT, DMA ================= */

static int cb_op(int fd, union hl_cb_args *a)
{
    return ioctl(fd, hl_legacy_nodes() ? GAUDI_HL_LEGACY_IOCTL_CB : CB_CODE,
                 a);
}

static void t_cb_basic(void)
{
    union hl_cb_args a = {0};
    uint64_t h, h2;
    void *p;
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    a.in.op      = HL_CB_OP_CREATE;
    a.in.cb_size = HL_MAX_CB_SIZE + 1;
    CHECK_ERR(cb_op(fd, &a), EINVAL, "too big");
    memset(&a, 0, sizeof(a));
    a.in.op      = HL_CB_OP_CREATE;
    a.in.cb_size = 100;
    CHECK_OK(cb_op(fd, &a), "create");
    h = a.out.cb_handle;
    CHECK(h == ((1ULL << 12) | (2ULL << 59)), "handle %llx",
          (unsigned long long)h);
    CHECK(mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, h) ==
          MAP_FAILED && errno == EINVAL, "wrong length");
    p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, h);
    CHECK(p != MAP_FAILED, "mmap %s", strerror(errno));
    memset(p, 0xAB, 4096);
    CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, h) == MAP_FAILED &&
          errno == EINVAL, "second mmap");
    memset(&a, 0, sizeof(a));
    a.in.op        = HL_CB_OP_INFO;
    a.in.cb_handle = h;
    CHECK_OK(cb_op(fd, &a), "info");
    CHECK(a.out.usage_cnt == 0, "usage");
    a.in.op        = HL_CB_OP_INFO;
    a.in.cb_handle = h;
    a.in.flags     = HL_CB_FLAGS_GET_DEVICE_VA;
    CHECK_ERR(cb_op(fd, &a), EINVAL, "VA of an unmapped CB");
    memset(&a, 0, sizeof(a));
    a.in.op      = HL_CB_OP_CREATE;
    a.in.cb_size = 8192;
    a.in.flags   = HL_CB_FLAGS_MAP;
    CHECK_OK(cb_op(fd, &a), "create mapped");
    h2 = a.out.cb_handle;
    memset(&a, 0, sizeof(a));
    a.in.op        = HL_CB_OP_INFO;
    a.in.cb_handle = h2;
    a.in.flags     = HL_CB_FLAGS_GET_DEVICE_VA;
    CHECK_OK(cb_op(fd, &a), "device va");
    CHECK(a.out.device_va >= 0xFFF0000000000000ULL, "va in host range");
    memset(&a, 0, sizeof(a));
    a.in.op        = HL_CB_OP_DESTROY;
    a.in.cb_handle = h;
    CHECK_OK(cb_op(fd, &a), "destroy");
    a.in.op        = HL_CB_OP_DESTROY;
    a.in.cb_handle = h;
    CHECK_ERR(cb_op(fd, &a), EINVAL, "double destroy");
    CHECK(((uint8_t*)p)[100] == 0xAB, "mapping outlives destroy");
    CHECK(munmap(p, 4096) == 0, "munmap");
    a.in.op        = HL_CB_OP_DESTROY;
    a.in.cb_handle = h2;
    CHECK_OK(cb_op(fd, &a), "destroy mapped");
    a.in.op = 7;
    CHECK_ERR(cb_op(fd, &a), EINVAL, "bad op");
    close(fd);
}

static void t_cb_gaudi1_map(void)
{
    union hl_cb_args a = {0};
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    a.in.op      = HL_CB_OP_CREATE;
    a.in.cb_size = 4096;
    a.in.flags   = HL_CB_FLAGS_MAP;
    CHECK_ERR(cb_op(fd, &a), EINVAL, "no CB mapping on Gaudi1");
    close(fd);
}

/*
 * A mmap/munmap that no interposer sees: UCM's bistro hooks overwrite the
 * emulator's mmap and issue the syscall themselves. An inline syscall
 * instruction, so that not even the syscall() interposer runs.
 * Returns the kernel's value (-errno on failure).
 */
static long raw_syscall6(long n, long a1, long a2, long a3, long a4, long a5,
                         long a6)
{
#if defined(__x86_64__)
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8")   = a5;
    register long r9 __asm__("r9")   = a6;
    long          ret;

    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a1), "S"(a2),
                     "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a1;
    register long x1 __asm__("x1") = a2;
    register long x2 __asm__("x2") = a3;
    register long x3 __asm__("x3") = a4;
    register long x4 __asm__("x4") = a5;
    register long x5 __asm__("x5") = a6;

    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2),
                     "r"(x3), "r"(x4), "r"(x5) : "memory");
    return x0;
#else
    long r = syscall(n, a1, a2, a3, a4, a5, a6);
    return (r == -1) ? -errno : r;
#endif
}

static void *raw_mmap(size_t len, int fd, uint64_t off)
{
    long r = raw_syscall6(SYS_mmap, 0, (long)len, PROT_READ | PROT_WRITE,
                          MAP_SHARED, fd, (long)off);

    return ((r < 0) && (r > -4096)) ? MAP_FAILED : (void*)r;
}

static int cb_create(int fd, uint32_t size, uint64_t *h)
{
    union hl_cb_args a = {0};
    int rc;

    a.in.op      = HL_CB_OP_CREATE;
    a.in.cb_size = size;
    rc = cb_op(fd, &a);
    *h = a.out.cb_handle;
    return rc;
}

static int cb_destroy(int fd, uint64_t h)
{
    union hl_cb_args a = {0};

    a.in.op        = HL_CB_OP_DESTROY;
    a.in.cb_handle = h;
    return cb_op(fd, &a);
}

/*
 * The CB mmap length: do_mmap page-rounds it before the driver compares
 * the VMA with the CB's page-rounded size (Linux 6.12 mm/mmap.c:316-318,
 * K612 common/memory_mgr.c:252-259)
 */
static void t_cb_mmap_len(void)
{
    uint64_t h1, h2, h3;
    uint8_t *p;
    int      fd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(cb_create(fd, 100, &h1), "create 100");
    CHECK_OK(cb_create(fd, 5000, &h2), "create 5000");
    CHECK_OK(cb_create(fd, 5000, &h3), "create 5000");
    CHECK(mmap(NULL, 0, PROT_READ, MAP_SHARED, fd, h1) == MAP_FAILED &&
          errno == EINVAL, "length 0");
    p = mmap(NULL, 1, PROT_READ | PROT_WRITE, MAP_SHARED, fd, h1);
    CHECK(p != MAP_FAILED, "1 byte of a 100-byte CB: %s", strerror(errno));
    p[4095] = 1;   /* the whole page is mapped */
    CHECK(munmap(p, 1) == 0, "munmap");
    CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, h2) == MAP_FAILED &&
          errno == EINVAL, "one page of two");
    CHECK(mmap(NULL, 8193, PROT_READ, MAP_SHARED, fd, h2) == MAP_FAILED &&
          errno == EINVAL, "three pages of two");
    p = mmap(NULL, 4097, PROT_READ | PROT_WRITE, MAP_SHARED, fd, h2);
    CHECK(p != MAP_FAILED, "4097 bytes of 5000: %s", strerror(errno));
    p[8191] = 1;
    CHECK(munmap(p, 4097) == 0, "munmap");
    p = mmap(NULL, 5000, PROT_READ | PROT_WRITE, MAP_SHARED, fd, h3);
    CHECK(p != MAP_FAILED, "the exact size: %s", strerror(errno));
    CHECK(munmap(p, 8192) == 0, "munmap");
    close(fd);
}

static int vma_count(void)
{
    char  line[512];
    FILE *f = fopen("/proc/self/maps", "re");
    int   n = 0;

    CHECK(f != NULL, "maps");
    while (fgets(line, sizeof(line), f)) {
        n += (strchr(line, '\n') != NULL);
    }
    fclose(f);
    return n;
}

/*
 * CB memory is the driver's: a CB costs the process a VMA only once the
 * user maps it, one per CB (K612 common/command_buffer.c:103-160,
 * memory_mgr.c:230-296), so a process maps as many CBs as
 * vm.max_map_count allows
 */
#define CB_VMA_N 64
static void t_cb_vmas(void)
{
    static uint64_t h[CB_VMA_N];
    static void    *p[CB_VMA_N];
    int fd, i, n0, n1, n2;

    CHECK_OK(fd = open_dev(0), "open");
    n0 = vma_count();
    for (i = 0; i < CB_VMA_N; i++) {
        CHECK_OK(cb_create(fd, 4096 * (1 + i % 3), &h[i]), "create");
    }
    n1 = vma_count();
    CHECK(n1 - n0 <= 1, "%d CBs, not mapped: %d VMAs more (the emulator's "
          "one window at most)", CB_VMA_N, n1 - n0);
    for (i = 0; i < CB_VMA_N; i++) {
        p[i] = mmap(NULL, 4096 * (1 + i % 3), PROT_READ | PROT_WRITE,
                    MAP_SHARED, fd, h[i]);
        CHECK(p[i] != MAP_FAILED, "mmap: %s", strerror(errno));
        memset(p[i], i, 4096);
    }
    n2 = vma_count();
    CHECK(n2 - n1 == CB_VMA_N, "%d CBs mapped: %d VMAs more", CB_VMA_N,
          n2 - n1);
    for (i = 0; i < CB_VMA_N; i++) {
        CHECK(((uint8_t*)p[i])[4095] == i, "own memory");
        CHECK(munmap(p[i], 4096 * (1 + i % 3)) == 0, "munmap");
        CHECK_OK(cb_destroy(fd, h[i]), "destroy");
    }
    CHECK(vma_count() == n1, "unmapped: %d VMAs", vma_count() - n0);
    close(fd);
    CHECK(vma_count() == n0, "closed: the window went too");
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    (void)st; (void)flag; (void)ftw;
    return remove(path);
}

/* The same on a root outside tmpfs, where the CB store is a memfd of the
 * context (the suites' roots are in /tmp) */
static void t_cb_vmas_memfd(void)
{
    static const char *dirs[] = { "/var/tmp", "/tmp", "." };
    struct statfs sfs;
    char     root[256] = "";
    unsigned i;

    for (i = 0; !root[0] && (i < 3); i++) {
        if ((statfs(dirs[i], &sfs) == 0) && (sfs.f_type != 0x01021994)) {
            snprintf(root, sizeof(root), "%s/hlsim-cbvma-XXXXXX", dirs[i]);
            if (mkdtemp(root) == NULL) {
                root[0] = '\0';
            }
        }
    }
    CHECK(root[0], "no writable non-tmpfs directory for the node");
    setenv("HLSIM_ROOT", root, 1);   /* before the first emulated call */
    t_cb_vmas();
    CHECK(nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS) == 0,
          "remove %s", root);
}

/*
 * CBs created in a fork child through the inherited fd while the parent
 * creates its own: the driver has one IDR per file, the emulator a copy of
 * the context per process, so the child's CBs take store pages of their
 * own and neither side's CB overwrites the other's
 */
static void t_fork_cb(void)
{
    uint64_t h1, h2;
    uint8_t *p;
    int      fd, sv[2], st, i;
    pid_t    pid;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(cb_create(fd, 4096, &h1), "parent CB");
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
    pid = fork();
    if (pid == 0) {
        if (cb_create(fd, 8192, &h2)) {
            _exit(3);
        }
        p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, h2);
        if (p == MAP_FAILED) {
            _exit(4);
        }
        memset(p, 0x5A, 8192);
        sync_byte(sv[1], 'c');
        sync_wait(sv[1]);
        for (i = 0; i < 8192; i++) {
            if (p[i] != 0x5A) {
                _exit(5);
            }
        }
        _exit(0);
    }
    CHECK(sync_wait(sv[0]) == 'c', "child's CB");
    CHECK_OK(cb_create(fd, 8192, &h2), "parent's next CB");
    p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, h2);
    CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
    for (i = 0; i < 8192; i++) {
        CHECK(p[i] == 0, "byte %d of the parent's CB: %x", i, p[i]);
    }
    memset(p, 0xA5, 8192);
    sync_byte(sv[0], 'p');
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st),
          "child status 0x%x", st);
    munmap(p, 8192);
    close(fd);
    close(sv[0]);
    close(sv[1]);
}

/* Gaudi1 DMA through a CB mapped behind the emulator's back (facts 5.1) */
static void t_cb_raw_mmap(void)
{
    const size_t n = 256 * 1024 + 3;
    uint8_t *src = malloc(n), *dst = calloc(1, n);
    uint64_t sva, tva, seq, h, h2, h3;
    uint32_t status;
    uint8_t  saved[8];
    struct statfs sfs;
    cbuf_t   c;
    size_t   i;
    int      fd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK(statfs(API(hlsim_root)(), &sfs) == 0 &&
          sfs.f_type == 0x01021994, "needs HLSIM_ROOT on tmpfs: %s",
          API(hlsim_root)());
    fill(src, n, 4);
    CHECK_OK(map_host(fd, src, n, &sva), "map src");
    CHECK_OK(map_host(fd, dst, n, &tva), "map dst");
    /* a multi-page CB first: the next CB's range must not overlap it */
    CHECK_OK(cb_create(fd, 3 * 4096, &h2), "create 12K");
    CHECK_OK(cb_create(fd, 4096, &h), "create");
    CHECK(h >> 59 == 2, "CB handle type");
    c.p = raw_mmap(3 * 4096, fd, h2);
    CHECK(c.p != MAP_FAILED, "raw mmap 12K");
    memset(c.p, 0xEE, 3 * 4096);
    c.p = raw_mmap(4096, fd, h);
    CHECK(c.p != MAP_FAILED, "raw mmap of the CB");
    for (i = 0; i < 4096; i++) {
        CHECK(c.p[i] == 0, "fresh CB byte %zu = %x", i, c.p[i]);
    }
    /* host -> DRAM, then DRAM -> host, CB written through the raw map */
    c.len = 0;
    pkt_lin(&c, sva, 0x20000000ULL + 4096, n, 0, 1);
    CHECK_OK(submit(fd, h, c.len, 0, 0, &seq), "CS h2d");
    CHECK_OK(wait_cs(fd, seq, 5000000, &status, NULL), "wait h2d");
    CHECK(status == HL_WAIT_CS_STATUS_COMPLETED, "h2d status");
    c.len = 0;
    pkt_lin(&c, 0x20000000ULL + 4096, tva, n, 0, 1);
    pkt_short(&c, HLSIM_PKT_NOP, 0);
    CHECK_OK(submit(fd, h, c.len, 3, 0, &seq), "CS d2h");
    CHECK_OK(wait_cs(fd, seq, 5000000, &status, NULL), "wait d2h");
    CHECK(!memcmp(src, dst, n), "data through a raw-mapped CB");
    /* the parser reads the same memory: a bad packet is refused */
    c.len = 0;
    pkt_short(&c, HLSIM_PKT_STOP, 0);
    CHECK_ERR(submit(fd, h, c.len, 0, 0, NULL), EPERM, "STOP via raw map");
    /* destroyed while mapped: the memory lives until unmapped */
    memcpy(saved, c.p, sizeof(saved));
    CHECK_OK(cb_destroy(fd, h), "destroy");
    c.p[100] = 0x42;
    CHECK(c.p[100] == 0x42 && !memcmp(saved, c.p, sizeof(saved)),
          "mapping outlives destroy");
    CHECK(raw_syscall6(SYS_munmap, (long)c.p, 4096, 0, 0, 0, 0) == 0,
          "raw munmap");
    /* the next CB op frees it; the new CB takes its id, the lowest free
     * (idr_alloc, K612 common/memory_mgr.c:160), with fresh zeroed memory:
     * the freed pages went back (a hole) */
    CHECK_OK(cb_create(fd, 4096, &h3), "create after");
    CHECK(h3 == h, "lowest free id reused: %llx, was %llx",
          (unsigned long long)h3, (unsigned long long)h);
    c.p = raw_mmap(4096, fd, h3);
    CHECK(c.p != MAP_FAILED, "raw mmap 3");
    CHECK(c.p[0] == 0 && c.p[100] == 0 && c.p[4095] == 0, "fresh memory");
    CHECK(raw_syscall6(SYS_munmap, (long)c.p, 4096, 0, 0, 0, 0) == 0,
          "raw munmap 3");
    close(fd);
    free(src);
    free(dst);
}

/* UCM's bistro "original" mmap is syscall(SYS_mmap): the checks still run */
static void t_cb_syscall_mmap(void)
{
    uint64_t h;
    uint8_t *p;
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(cb_create(fd, 4096, &h), "create");
    CHECK((long)syscall(SYS_mmap, NULL, 8192, PROT_READ | PROT_WRITE,
                        MAP_SHARED, fd, h) == -1 && errno == EINVAL,
          "wrong length");
    p = (uint8_t*)syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_WRITE,
                          MAP_SHARED, fd, h);
    CHECK(p != MAP_FAILED, "syscall mmap: %s", strerror(errno));
    memset(p, 0x11, 4096);
    CHECK((long)syscall(SYS_mmap, NULL, 4096, PROT_READ, MAP_SHARED, fd, h)
          == -1 && errno == EINVAL, "second mmap");
    CHECK((long)syscall(SYS_mmap, NULL, 4096, PROT_READ, MAP_SHARED, fd,
                        h + (1ULL << 60)) == -1 && errno == EINVAL,
          "not a CB handle");
    CHECK_OK(cb_destroy(fd, h), "destroy");
    CHECK(p[7] == 0x11, "mapping outlives destroy");
    CHECK(syscall(SYS_munmap, p, 4096) == 0, "syscall munmap");
    close(fd);
}

/* the compute fd is a memfd but still looks like the node */
static void t_compute_fd_node(void)
{
    const char *want = getenv("HLSIM_NODES") ? "/dev/hl1" :
                       "/dev/accel/accel1";
    char link[64], buf[4200], *rp;
    struct stat st;
    ssize_t n;
    int fd;

    fd = open(getenv("HLSIM_NODES") ? "/dev/hl1" : "/dev/accel/accel1",
              O_RDWR | O_CLOEXEC);
    CHECK_OK(fd, "open");
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, buf, sizeof(buf) - 1);
    CHECK(n > 0, "readlink: %s", strerror(errno));
    buf[n] = '\0';
    CHECK((size_t)n > strlen(want) && !strcmp(buf + n - strlen(want), want),
          "link %s, want ...%s", buf, want);
    CHECK(readlink(link, buf, 3) == 3, "truncated readlink");
    snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)getpid(), fd);
    n = readlink(link, buf, sizeof(buf) - 1);
    CHECK(n > 0, "readlink pid");
    buf[n] = '\0';
    CHECK(!strcmp(buf + n - strlen(want), want), "pid link %s", buf);
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    rp = realpath(link, NULL);
    CHECK(rp != NULL && !strcmp(rp + strlen(rp) - strlen(want), want),
          "realpath %s", rp ? rp : "(null)");
    free(rp);
    CHECK(fstat(fd, &st) == 0 && S_ISCHR(st.st_mode), "fstat chr");
    CHECK(getenv("HLSIM_NODES") ? (major(st.st_rdev) == 510 &&
                                   minor(st.st_rdev) == 2) :
          (major(st.st_rdev) == 261 && minor(st.st_rdev) == 1),
          "rdev %u:%u", major(st.st_rdev), minor(st.st_rdev));
    if (!getenv("HLSIM_NODES")) {
        CHECK(hw_ip(fd).u61.device_id == 0x1020, "ioctl on the memfd");
    }
    close(fd);
}

static void t_dma_gaudi2(void)
{
    const size_t n = 3 * MB + 123;
    uint8_t *src = malloc(n + 64), *dst = malloc(n + 64);
    uint64_t h, dva, sva, tva;
    uint32_t status;
    hcb_t    cb;
    size_t   i;
    int      fd;

    CHECK_OK(fd = open_dev(0), "open");
    cb = hcb_new(fd, 4096);
    fill(src, n + 64, 1);
    memset(dst, 0, n + 64);
    CHECK_OK(mem_alloc(fd, 128 * MB, &h), "alloc");
    CHECK_OK(map_dev(fd, h, 0, 0, &dva), "map dram");
    CHECK_OK(map_host(fd, src + 7, n, &sva), "map src");
    CHECK_OK(map_host(fd, dst + 9, n, &tva), "map dst");
    /* host -> DRAM (crossing a 64 MiB page boundary) -> host */
    CHECK_OK(g2_dma(fd, &cb, 0, sva, dva + 64 * MB - MB, n, 0, &status),
             "h2d");
    CHECK(status == HL_WAIT_CS_STATUS_COMPLETED, "h2d status");
    CHECK_OK(g2_dma(fd, &cb, 4, dva + 64 * MB - MB, tva, n, 0, &status),
             "d2h");
    CHECK(!memcmp(src + 7, dst + 9, n), "round trip data");
    /* memset in DRAM, then back */
    CHECK_OK(g2_dma(fd, &cb, 1, 0x5A5A5A5A5A5A5A5AULL, dva + 4096, 8192, 1,
                    &status), "memset");
    CHECK_OK(g2_dma(fd, &cb, 4, dva, tva, 16384, 0, &status), "d2h");
    for (i = 0; i < 16384; i++) {
        uint8_t want = ((i >= 4096) && (i < 12288)) ? 0x5A :
                       src[7 + 64 * MB - MB + i - 64 * MB + MB];
        if (i < 4096 || i >= 12288) {
            continue;   /* untouched bytes checked by the round trip */
        }
        CHECK(dst[9 + i] == want, "memset byte %zu = %x", i, dst[9 + i]);
    }
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_DMA_BYTES, 0) ==
          (int64_t)(2 * n + 8192 + 16384), "dma bytes");
    /* a CB created with HL_CB_FLAGS_MAP works as a user CB too */
    {
        union hl_cb_args a = {0};
        uint64_t seq;
        cbuf_t   c;
        void    *p;

        a.in.op      = HL_CB_OP_CREATE;
        a.in.cb_size = 4096;
        a.in.flags   = HL_CB_FLAGS_MAP;
        CHECK_OK(cb_op(fd, &a), "create");
        p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                 a.out.cb_handle);
        CHECK(p != MAP_FAILED, "mmap CB");
        a.in.op    = HL_CB_OP_INFO;
        a.in.flags = HL_CB_FLAGS_GET_DEVICE_VA;
        CHECK_OK(cb_op(fd, &a), "va");
        c.p   = p;
        c.len = 0;
        memset(dst, 0, n);
        pkt_lin(&c, dva + 64 * MB - MB, tva, 4096, 0, 0);
        CHECK_OK(submit(fd, a.out.device_va, c.len, 0,
                        HL_CS_CHUNK_FLAGS_USER_ALLOC_CB, &seq), "CS");
        CHECK_OK(wait_cs(fd, seq, 5000000, &status, NULL), "wait");
        CHECK(!memcmp(src + 7, dst + 9, 4096), "kernel CB data");
    }
    close(fd);
    free(src);
    free(dst);
}

static void t_dma_gaudi1(void)
{
    union hl_cb_args a = {0};
    const size_t n = 1 * MB + 5;
    uint8_t *src = malloc(n), *dst = calloc(1, n);
    uint64_t sva, tva, seq, h;
    uint32_t status;
    cbuf_t   c;
    int      fd;

    CHECK_OK(fd = open_dev(0), "open");
    fill(src, n, 2);
    CHECK_OK(map_host(fd, src, n, &sva), "map src");
    CHECK_OK(map_host(fd, dst, n, &tva), "map dst");
    a.in.op      = HL_CB_OP_CREATE;
    a.in.cb_size = 4096;
    CHECK_OK(cb_op(fd, &a), "create");
    h   = a.out.cb_handle;
    c.p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, h);
    CHECK(c.p != MAP_FAILED, "mmap");
    /* host -> physical DRAM 0x20000000 (context id high bits ignored) */
    c.len = 0;
    pkt_lin(&c, sva, 0x20000000ULL | (0x5AULL << 56), n, 0, 1);
    CHECK_OK(submit(fd, h, c.len, 0, 0, &seq), "CS h2d");
    CHECK_OK(wait_cs(fd, seq, 5000000, &status, NULL), "wait h2d");
    /* the CB is copied at submit: rewrite it right away */
    c.len = 0;
    pkt_lin(&c, 0x20000000ULL, tva, n, 0, 1);
    pkt_short(&c, HLSIM_PKT_NOP, 0);
    CHECK_OK(submit(fd, h, c.len, 5, 0, &seq), "CS d2h");
    CHECK_OK(wait_cs(fd, seq, 5000000, &status, NULL), "wait");
    CHECK(!memcmp(src, dst, n), "gaudi1 round trip");
    /* parser rules (facts 5.3) */
    c.len = 0;
    pkt_short(&c, HLSIM_PKT_STOP, 0);
    CHECK_ERR(submit(fd, h, c.len, 0, 0, NULL), EPERM, "STOP");
    c.len = 0;
    pkt_short(&c, HLSIM_PKT_WREG_BULK, 0);
    CHECK_ERR(submit(fd, h, c.len, 0, 0, NULL), EPERM, "WREG_BULK");
    c.len = 0;
    pkt_short(&c, HLSIM_PKT_NOP, 0);
    pkt_short(&c, HLSIM_PKT_MSG_PROT, 0);
    c.len += 8;
    CHECK_ERR(submit(fd, h, c.len, 0, 0, NULL), EPERM, "MSG_PROT");
    c.len = 0;
    pkt_short(&c, HLSIM_PKT_CP_DMA, 0);
    c.len += 8;
    CHECK_ERR(submit(fd, h, c.len, 0, 0, NULL), EPERM, "CP_DMA");
    c.len = 0;
    pkt_short(&c, HLSIM_PKT_LOAD_AND_EXE, 1);
    c.len += 8;
    CHECK_ERR(submit(fd, h, c.len, 0, 0, NULL), EPERM, "LOAD_AND_EXE DST");
    c.len = 0;
    pkt_short(&c, HLSIM_PKT_WAIT, 0);
    CHECK_ERR(submit(fd, h, c.len, 0, 0, NULL), EINVAL, "WAIT");
    c.len = 0;
    pkt_short(&c, 0x1F, 0);
    CHECK_ERR(submit(fd, h, c.len, 0, 0, NULL), EINVAL, "unknown");
    c.len = 0;
    pkt_lin(&c, sva, 0x20000000ULL, 16, 0, 1);
    CHECK_ERR(submit(fd, h, 16, 0, 0, NULL), EINVAL, "partial packet");
    c.len = 0;
    pkt_lin(&c, sva, 0x20000000ULL, 16, 0, 0);
    CHECK_ERR(submit(fd, h, c.len, 0, 0, NULL), EINVAL, "no LIN bit");
    c.len = 0;
    pkt_short(&c, HLSIM_PKT_NOP, 0);
    CHECK_ERR(submit(fd, h, 8, 8, 0, NULL), EINVAL, "queue 8 (CPU PQ)");
    CHECK_ERR(submit(fd, h, 4, 0, 0, NULL), EINVAL, "cb_size < 8");
    CHECK_ERR(submit(fd, h, 8192, 0, 0, NULL), EINVAL, "cb_size > CB");
    CHECK_ERR(submit(fd, h + 4096, 8, 0, 0, NULL), EINVAL, "bad handle");
    close(fd);
    free(src);
    free(dst);
}

static void t_cs_errors(void)
{
    struct hl_cs_chunk ch[513];
    union hl_cs_args   a;
    hcb_t    cb;
    int      fd, i;

    CHECK_OK(fd = open_dev(0), "open");
    cb = hcb_new(fd, 4096);
    pkt_short(&cb.cb, HLSIM_PKT_NOP, 0);
    memset(ch, 0, sizeof(ch));
    for (i = 0; i < 513; i++) {
        ch[i].cb_handle      = cb.va;
        ch[i].cb_size        = 8;
        ch[i].cs_chunk_flags = HL_CS_CHUNK_FLAGS_USER_ALLOC_CB;
    }
    memset(&a, 0, sizeof(a));
    a.in.chunks_execute     = (uintptr_t)ch;
    a.in.num_chunks_execute = 1;
    a.in.pad[2]             = 1;
    CHECK_ERR(ioctl(fd, CS_CODE, &a), EINVAL, "pad");
    a.in.pad[2]             = 0;
    a.in.num_chunks_execute = 0;
    CHECK_ERR(ioctl(fd, CS_CODE, &a), EINVAL, "0 chunks");
    a.in.num_chunks_execute = 513;
    CHECK_ERR(ioctl(fd, CS_CODE, &a), EINVAL, "513 chunks");
    a.in.num_chunks_execute = 512;
    CHECK_OK(ioctl(fd, CS_CODE, &a), "512 chunks");
    CHECK_OK(wait_cs(fd, a.out.seq, 5000000, NULL, NULL), "wait 512");
    memset(&a, 0, sizeof(a));
    a.in.chunks_execute     = 8;
    a.in.num_chunks_execute = 1;
    CHECK_ERR(ioctl(fd, CS_CODE, &a), EFAULT, "bad chunk pointer");
    CHECK_ERR(submit(fd, cb.va, 8, 2, HL_CS_CHUNK_FLAGS_USER_ALLOC_CB, NULL),
              EINVAL, "PDMA_0_2 reserved for FW");
    CHECK_ERR(submit(fd, cb.va, 8, 5, HL_CS_CHUNK_FLAGS_USER_ALLOC_CB, NULL),
              EINVAL, "PDMA_1_1");
    CHECK_ERR(submit(fd, cb.va, 8, 0, 0, NULL), EINVAL, "no USER_ALLOC_CB");
    CHECK_ERR(submit(fd, 0x10000, 8, 0, HL_CS_CHUNK_FLAGS_USER_ALLOC_CB,
                     NULL), EFAULT, "CB outside device ranges");
    memset(&a, 0, sizeof(a));
    a.in.chunks_execute     = (uintptr_t)ch;
    a.in.num_chunks_execute = 1;
    a.in.cs_flags           = HL_CS_FLAGS_SIGNAL;
    CHECK_ERR(ioctl(fd, CS_CODE, &a), EINVAL, "signal CS not emulated");
    CHECK_OK(API(hlsim_set_device_status)(0, 1), "in reset");
    CHECK_ERR(submit(fd, cb.va, 8, 0, HL_CS_CHUNK_FLAGS_USER_ALLOC_CB, NULL),
              EBUSY, "CS in reset");
    CHECK_ERR(wait_cs(fd, 1, 0, NULL, NULL), EBUSY, "WAIT in reset");
    CHECK_OK(API(hlsim_set_device_status)(0, 0), "operational");
    close(fd);
}

static void t_cs_gaudi3(void)
{
    hcb_t cb;
    int   fd;

    CHECK_OK(fd = open_dev(0), "open");
    cb = hcb_new(fd, 4096);
    pkt_short(&cb.cb, HLSIM_PKT_NOP, 0);
    CHECK_ERR(submit(fd, cb.va, 8, 0, HL_CS_CHUNK_FLAGS_USER_ALLOC_CB, NULL),
              EINVAL, "no user queue on Gaudi3");
    close(fd);
}

/*
 * CSs on one queue run in submission order, on the engine. Alternate
 * copies of two patterns into one buffer; polling only the last CS must
 * leave the last pattern, and every earlier CS must be complete by then.
 */
static void t_engine_order(void)
{
    const size_t n = MB;
    const int    num = 16;
    uint8_t *a = malloc(n), *b = malloc(n), *d = malloc(n);
    uint64_t ava, bva, dva, seq[16];
    uint32_t status = 0;
    hcb_t    cba, cbb;
    int      fd, i, polls = 0;

    CHECK_OK(fd = open_dev(0), "open");
    cba = hcb_new(fd, 4096);
    cbb = hcb_new(fd, 4096);
    fill(a, n, 3);
    fill(b, n, 4);
    memset(d, 0, n);
    CHECK_OK(map_host(fd, a, n, &ava), "map a");
    CHECK_OK(map_host(fd, b, n, &bva), "map b");
    CHECK_OK(map_host(fd, d, n, &dva), "map d");
    pkt_lin(&cba.cb, ava, dva, n, 0, 0);
    pkt_lin(&cbb.cb, bva, dva, n, 0, 0);
    for (i = 0; i < num; i++) {
        hcb_t *cb = (i % 2) ? &cbb : &cba;

        CHECK_OK(submit(fd, cb->va, cb->cb.len, 0,
                        HL_CS_CHUNK_FLAGS_USER_ALLOC_CB, &seq[i]), "CS");
    }
    do {
        CHECK_OK(wait_cs(fd, seq[num - 1], 0, &status, NULL), "poll last");
        polls++;
    } while ((status == HL_WAIT_CS_STATUS_BUSY) && (polls < 10000000));
    CHECK(status == HL_WAIT_CS_STATUS_COMPLETED, "last done: status %u",
          status);
    for (i = 0; i < num - 1; i++) {
        CHECK_OK(wait_cs(fd, seq[i], 0, &status, NULL), "poll earlier");
        CHECK(status == HL_WAIT_CS_STATUS_COMPLETED,
              "CS %d done before the last one: status %u", i, status);
    }
    CHECK(!memcmp(d, b, n), "the last copy wins (in-order execution)");
    close(fd);
    free(a);
    free(b);
    free(d);
}

/*
 * A WAIT_CS poll (timeout 0) only reads the CS's state, as the driver's
 * completion_done() (K612 common/command_submission.c:2688-2689): queued
 * 32 MiB copies are still in flight at the first poll, they complete on
 * the engine while the caller only polls, and each poll that found its CS
 * running is counted, in the process and node-wide (hlsim_totals).
 */
static void t_poll_in_flight(void)
{
    const size_t n = 32 * MB;
    const int    num = 8;
    uint8_t     *a = malloc(n), *d = malloc(n);
    uint64_t     ava, dva, seq[8];
    uint32_t     status = 0;
    int64_t      polls0, polls, busy = 0;
    hcb_t        cb;
    int          fd, i;

    CHECK(a && d, "alloc");
    CHECK_OK(fd = open_dev(0), "open");
    cb = hcb_new(fd, 4096);
    fill(a, n, 7);
    memset(d, 0, n);
    CHECK_OK(map_host(fd, a, n, &ava), "map a");
    CHECK_OK(map_host(fd, d, n, &dva), "map d");
    pkt_lin(&cb.cb, ava, dva, n, 0, 0);
    polls0 = API(hlsim_get_counter)(HLSIM_COUNTER_POLLS_IN_FLIGHT, 0);
    for (i = 0; i < num; i++) {
        CHECK_OK(submit(fd, cb.va, cb.cb.len, 0,
                        HL_CS_CHUNK_FLAGS_USER_ALLOC_CB, &seq[i]), "CS");
    }
    CHECK_OK(wait_cs(fd, seq[num - 1], 0, &status, NULL), "first poll");
    CHECK(status == HL_WAIT_CS_STATUS_BUSY,
          "256 MiB queued: still in flight at the first poll (status %u)",
          status);
    busy++;
    do {
        CHECK_OK(wait_cs(fd, seq[num - 1], 0, &status, NULL), "poll");
        busy += (status == HL_WAIT_CS_STATUS_BUSY);
    } while ((status == HL_WAIT_CS_STATUS_BUSY) && (busy < 100000000));
    CHECK(status == HL_WAIT_CS_STATUS_COMPLETED, "done: %u", status);
    CHECK(!memcmp(a, d, n), "copied by the engine");
    polls = API(hlsim_get_counter)(HLSIM_COUNTER_POLLS_IN_FLIGHT, 0);
    CHECK(polls - polls0 == busy, "%lld polls in flight counted, %lld seen",
          (long long)(polls - polls0), (long long)busy);
    /* a blocking wait is not a poll */
    CHECK_OK(submit(fd, cb.va, cb.cb.len, 0,
                    HL_CS_CHUNK_FLAGS_USER_ALLOC_CB, &seq[0]), "CS");
    CHECK_OK(wait_cs(fd, seq[0], 5000000, &status, NULL), "wait");
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_POLLS_IN_FLIGHT, 0) == polls,
          "a blocking wait is not counted");
    close(fd);
    free(a);
    free(d);
}

/*
 * HLSIM_ENGINE_CLOCK counts the time jobs run, and which part of it ran in
 * WAIT_CS callers: off, it counts nothing; with the bandwidth model on, a
 * 1 MiB job at 1 GB/s runs at least 1.048 ms and never in the caller.
 */
static void t_engine_clock(void)
{
    const size_t n = MB;
    const int    num = 4;
    const char  *clk = getenv("HLSIM_ENGINE_CLOCK");
    const char  *gbps = getenv("HLSIM_DMA_GBPS");
    int          on = (clk != NULL) && (atoi(clk) == 1);
    uint8_t     *a = malloc(n), *d = malloc(n);
    uint64_t     ava, dva, seq[4];
    int64_t      eng, waiter;
    uint32_t     status = 0;
    hcb_t        cb;
    int          fd, i;

    CHECK_OK(fd = open_dev(0), "open");
    cb = hcb_new(fd, 4096);
    fill(a, n, 5);
    CHECK_OK(map_host(fd, a, n, &ava), "map a");
    CHECK_OK(map_host(fd, d, n, &dva), "map d");
    pkt_lin(&cb.cb, ava, dva, n, 0, 0);
    for (i = 0; i < num; i++) {
        CHECK_OK(submit(fd, cb.va, cb.cb.len, 0,
                        HL_CS_CHUNK_FLAGS_USER_ALLOC_CB, &seq[i]), "CS");
    }
    for (i = 0; i < num; i++) {
        CHECK_OK(wait_cs(fd, seq[i], 5000000, &status, NULL), "wait");
        CHECK(status == HL_WAIT_CS_STATUS_COMPLETED, "done: %u", status);
    }
    CHECK(!memcmp(a, d, n), "copied");
    eng    = API(hlsim_get_counter)(HLSIM_COUNTER_ENGINE_NS, 0);
    waiter = API(hlsim_get_counter)(HLSIM_COUNTER_WAITER_NS, 0);
    if (!on) {
        CHECK((eng == 0) && (waiter == 0), "not counted: %lld %lld",
              (long long)eng, (long long)waiter);
    } else if (gbps != NULL) {
        CHECK(eng >= num * 1048576ll, "model time counted: %lld ns",
              (long long)eng);
        CHECK(waiter == 0, "no job in a waiter under the model: %lld",
              (long long)waiter);
    } else {
        /* a WAIT_CS never runs a job (K612 command_submission.c:2688) */
        CHECK((eng > 0) && (waiter == 0),
              "counted: %lld ns, %lld ns by waiters", (long long)eng,
              (long long)waiter);
    }
    close(fd);
    free(a);
    free(d);
}

/* A CB with one LIN_DMA, for either ASIC (Gaudi1: a kernel CB) */
static uint64_t engine_cb(int fd, int gaudi1, uint64_t src, uint64_t dst,
                          size_t n, uint32_t *len, uint32_t *flags)
{
    uint64_t handle;
    hcb_t    h;
    cbuf_t   c;

    if (!gaudi1) {
        h = hcb_new(fd, 4096);
        pkt_lin(&h.cb, src, dst, n, 0, 0);
        *len   = h.cb.len;
        *flags = HL_CS_CHUNK_FLAGS_USER_ALLOC_CB;
        return h.va;
    }
    CHECK_OK(cb_create(fd, 4096, &handle), "create");
    c.p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, handle);
    CHECK(c.p != MAP_FAILED, "mmap");
    c.len = 0;
    pkt_lin(&c, src, dst, n, 0, 1);
    *len   = c.len;
    *flags = 0;
    return handle;
}

/*
 * Submit one timestamped CS on each of @a qa and @a qb, wait for both:
 * how much later the second ended, in the engine model's time
 */
static uint64_t engine_pair(int fd, uint64_t cb, uint32_t len,
                            uint32_t flags, int qa, int qb)
{
    union hl_wait_cs_args w;
    uint64_t seq[2], ts[2];
    int      i;

    CHECK_OK(submit_cs(fd, cb, len, qa, flags, HL_CS_FLAGS_TIMESTAMP,
                       &seq[0]), "CS a");
    CHECK_OK(submit_cs(fd, cb, len, qb, flags, HL_CS_FLAGS_TIMESTAMP,
                       &seq[1]), "CS b");
    for (i = 0; i < 2; i++) {
        memset(&w, 0, sizeof(w));
        w.in.seq        = seq[i];
        w.in.timeout_us = 5000000;
        CHECK_OK(ioctl(fd, WAIT_CODE, &w), "wait");
        CHECK(w.out.status == HL_WAIT_CS_STATUS_COMPLETED, "done: %u",
              w.out.status);
        ts[i] = w.out.timestamp_nsec;
    }
    return (ts[1] > ts[0]) ? ts[1] - ts[0] : 0;
}

/*
 * Queues 0-3 are the streams of one DMA engine and 4-7 of another
 * (docs/hlsim.md): under the bandwidth model (1 GB/s) the second of two
 * 16 MiB copies on two streams of one engine ends one copy's model time
 * after the first, on two engines with it (model time: the CS
 * timestamps; submitting the second takes far less than one copy's
 * 17 ms). An engine takes its streams in turn: a CS on a second stream
 * runs before the third of three queued on the first. The per-engine
 * counters count each job on the engine of its queue.
 */
static void t_engine_streams(void)
{
    const size_t n = 16 * MB;
    const uint64_t one = n;   /* ns at 1 GB/s */
    int      gaudi1 = getenv("HLSIM_ASIC") != NULL;
    int      qb = gaudi1 ? 2 : 1;   /* Gaudi2: PDMA_0_1; Gaudi1: DMA_0_2 */
    uint8_t  *a = malloc(n), *d = malloc(n);
    uint64_t ava, dva, cb, t, seq[4];
    uint32_t len, flags, status;
    int64_t  c0[4];
    int      fd, i;

    for (i = 0; i < 4; i++) {
        c0[i] = API(hlsim_get_counter)(HLSIM_COUNTER_ENGINE0_JOBS + i, 0);
    }
    CHECK_OK(fd = open_dev(0), "open");
    fill(a, n, 6);
    CHECK_OK(map_host(fd, a, n, &ava), "map a");
    CHECK_OK(map_host(fd, d, n, &dva), "map d");
    cb = engine_cb(fd, gaudi1, ava, dva, n, &len, &flags);
    t  = engine_pair(fd, cb, len, flags, 0, qb);
    CHECK(t == one, "one engine: %.3f ms apart, serial: %.3f", t / 1e6,
          one / 1e6);
    t  = engine_pair(fd, cb, len, flags, 0, 4);
    CHECK(t < one / 2, "two engines: %.3f ms apart, parallel", t / 1e6);
    memset(d, 0, n);
    for (i = 0; i < 3; i++) {
        CHECK_OK(submit(fd, cb, len, 0, flags, &seq[i]), "CS q0");
    }
    CHECK_OK(submit(fd, cb, len, qb, flags, &seq[3]), "CS q1");
    CHECK_OK(wait_cs(fd, seq[3], 5000000, &status, NULL), "wait second");
    CHECK(status == HL_WAIT_CS_STATUS_COMPLETED, "second stream: %u",
          status);
    CHECK_OK(wait_cs(fd, seq[2], 0, &status, NULL), "poll third");
    CHECK(status == HL_WAIT_CS_STATUS_BUSY, "third on the first stream "
          "still queued or running: %u", status);
    CHECK_OK(wait_cs(fd, seq[2], 5000000, &status, NULL), "wait third");
    CHECK(!memcmp(a, d, n), "copied");
    /* engine 0: 2 + 1 + 4 jobs, engine 1: the one on queue 4 */
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_ENGINE0_JOBS, 0) - c0[0] == 7 &&
          API(hlsim_get_counter)(HLSIM_COUNTER_ENGINE1_JOBS, 0) - c0[1] == 1,
          "jobs per engine");
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_ENGINE0_BYTES, 0) - c0[2] ==
          (int64_t)(7 * n) &&
          API(hlsim_get_counter)(HLSIM_COUNTER_ENGINE1_BYTES, 0) - c0[3] ==
          (int64_t)n, "bytes per engine");
    close(fd);
    free(a);
    free(d);
}

static void t_cs_inflight(void)
{
    struct hl_cs_chunk ch = {0};
    struct hl_info_cs_counters cc;
    union hl_cs_args a;
    uint8_t *src = malloc(64 * 1024), *dst = malloc(64 * 1024);
    uint64_t sva, tva, seq = 0;
    uint32_t status;
    hcb_t    cb;
    int      fd, i;

    CHECK_OK(fd = open_dev(0), "open");
    cb = hcb_new(fd, 4096);
    CHECK_OK(map_host(fd, src, 64 * 1024, &sva), "src");
    CHECK_OK(map_host(fd, dst, 64 * 1024, &tva), "dst");
    pkt_lin(&cb.cb, sva, tva, 64 * 1024, 0, 0);
    ch.cb_handle      = cb.va;
    ch.cb_size        = cb.cb.len;
    ch.cs_chunk_flags = HL_CS_CHUNK_FLAGS_USER_ALLOC_CB;
    /* 64 KiB at 0.001 GB/s = 65 ms a CS: 64 submissions outrun them */
    for (i = 0; i < 64; i++) {
        memset(&a, 0, sizeof(a));
        a.in.chunks_execute     = (uintptr_t)&ch;
        a.in.num_chunks_execute = 1;
        CHECK_OK(ioctl(fd, CS_CODE, &a), "CS");
        CHECK(a.out.seq == (uint64_t)i + 1, "seq %llu",
              (unsigned long long)a.out.seq);
        seq = a.out.seq;
    }
    CHECK_OK(wait_cs(fd, 1, 0, &status, NULL), "poll");
    CHECK(status == HL_WAIT_CS_STATUS_BUSY, "busy: status %u", status);
    memset(&a, 0, sizeof(a));
    a.in.chunks_execute     = (uintptr_t)&ch;
    a.in.num_chunks_execute = 1;
    CHECK_ERR(ioctl(fd, CS_CODE, &a), EAGAIN, "65th in flight");
    CHECK(a.in.chunks_execute == (uintptr_t)&ch &&
          a.in.num_chunks_execute == 1, "args untouched");
    CHECK_OK(info(fd, HL_INFO_CS_COUNTERS, &cc, sizeof(cc)), "counters");
    CHECK(cc.ctx_max_cs_in_flight_drop_cnt == 1, "drop counted");
    CHECK_OK(wait_cs(fd, 1, 5000000, &status, NULL), "wait first");
    CHECK_OK(ioctl(fd, CS_CODE, &a), "slot free again");
    CHECK(a.out.seq == 65, "seq 65");
    CHECK_OK(wait_cs(fd, 65, 10000000, &status, NULL), "wait last");
    CHECK(status == HL_WAIT_CS_STATUS_COMPLETED, "done");
    CHECK_OK(wait_cs(fd, seq, 0, &status, NULL), "poll 64");
    close(fd);
    free(src);
    free(dst);
}

/* The device's status, as the control node tells it */
static unsigned dev_status(int dev)
{
    struct hl_info_device_status ds = {0};
    struct hl_info_args a = {0};
    char p[64];
    int cfd;

    snprintf(p, sizeof(p), "/dev/hl_controlD%d", dev);
    cfd = hl_legacy_nodes() ? open(p, O_RDWR | O_CLOEXEC) : open_ctl(dev);
    a.return_pointer = (uintptr_t)&ds;
    a.return_size    = sizeof(ds);
    a.op             = HL_INFO_DEVICE_STATUS;
    if ((cfd < 0) || ioctl(cfd, hl_legacy_nodes() ?
                           GAUDI_HL_LEGACY_IOCTL_INFO : INFO_CODE, &a)) {
        ds.status = ~0u;
    }
    if (cfd >= 0) {
        close(cfd);
    }
    return ds.status;
}

static void t_wait_errors(void)
{
    int (*add)(const char *, unsigned, int) = API(hlsim_fault_add);
    uint8_t *buf = malloc(8192);
    uint64_t va, seq, i;
    uint32_t status, flags, hard;
    int64_t  ncs, nwait;
    hcb_t    cb;
    int      fd;

    CHECK_OK(fd = open_dev(0), "open");
    cb = hcb_new(fd, 4096);
    CHECK_OK(map_host(fd, buf, 8192, &va), "map");
    ncs   = API(hlsim_get_counter)(HLSIM_COUNTER_CS_IOCTLS, 0);
    nwait = API(hlsim_get_counter)(HLSIM_COUNTER_WAIT_CS_IOCTLS, 0);
    CHECK_ERR(wait_cs(fd, 1, 0, NULL, NULL), EINVAL, "never issued");
    /* every ioctl is counted, refused ones too */
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_WAIT_CS_IOCTLS, 0) ==
          nwait + 1, "WAIT_CS ioctls counted");
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_CS_IOCTLS, 0) == ncs,
          "no CS ioctl");
    CHECK_OK(add("wait_cs", 1, EINTR), "fault");
    CHECK_ERR(wait_cs(fd, 1, 0, NULL, NULL), EINTR, "injected EINTR");
    /* old sequence numbers are gone but completed */
    for (i = 0; i < 70; i++) {
        CHECK_OK(g2_dma(fd, &cb, 1, va, va + 4096, 64, 0, &status), "dma");
    }
    CHECK_OK(wait_cs(fd, 2, 0, &status, &flags), "old seq");
    CHECK(status == HL_WAIT_CS_STATUS_COMPLETED &&
          (flags & HL_WAIT_CS_STATUS_FLAG_GONE), "gone");
    CHECK_OK(wait_cs(fd, 70, 0, &status, &flags), "recent seq");
    CHECK(!(flags & HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD),
          "no timestamp unless asked for");
    /* reset_on_lockup=0 (HLSIM_RESET_ON_LOCKUP=0): the TDR only marks the
     * CS and the device (K612 common/command_submission.c:838-842); the CS
     * stays in flight: its waiter gets BUSY at its own timeout
     * (:2688-2717, 3199-3213), later ioctls EBUSY (:3733-3734) */
    CHECK_OK(add("cs_timeout", 1, ETIMEDOUT), "fault");
    cb.cb.len = 0;
    pkt_lin(&cb.cb, va, va + 4096, 4096, 0, 0);
    pkt_short(&cb.cb, HLSIM_PKT_NOP, 0);
    CHECK_OK(submit(fd, cb.va, cb.cb.len, 0,
                    HL_CS_CHUNK_FLAGS_USER_ALLOC_CB, &seq), "CS");
    CHECK_OK(wait_cs(fd, seq, 300000, &status, NULL), "blocked waiter");
    CHECK(status == HL_WAIT_CS_STATUS_BUSY, "BUSY at its timeout: %u",
          status);
    CHECK(dev_status(0) == GAUDI_HL_DEVICE_STATUS_NEEDS_RESET, "needs reset");
    CHECK_ERR(submit(fd, cb.va, cb.cb.len, 0,
                     HL_CS_CHUNK_FLAGS_USER_ALLOC_CB, &seq), EBUSY,
              "CS while the device needs a reset");
    CHECK_ERR(wait_cs(fd, 70, 0, NULL, NULL), EBUSY, "WAIT_CS");
    CHECK_ERR(open_dev(0), EPERM, "open while the device needs a reset");
    hard = reset_count().hard_reset_cnt;
    close(fd);
    if (hl_legacy_nodes()) {
        /* Linux 6.1: the stuck CS holds the context, which is never
         * released: no reset, NEEDS_RESET stays (K61 device.c:478-480) */
        CHECK(dev_status(0) == GAUDI_HL_DEVICE_STATUS_NEEDS_RESET,
              "6.1: still needs a reset after the close");
        CHECK(reset_count().hard_reset_cnt == hard, "6.1: no reset");
        CHECK_ERR(open_dev(0), EPERM, "6.1: open still refused");
    } else {
        /* accel and Habana: the context is still in use at the last
         * close: a hard reset (K612 common/device.c:618-622) */
        CHECK(reset_count().hard_reset_cnt == hard + 1,
              "hard reset at the close: %u -> %u", hard,
              reset_count().hard_reset_cnt);
        for (i = 0; (i < 1000) && (dev_status(0) !=
                                   GAUDI_HL_DEVICE_STATUS_OPERATIONAL); i++) {
            usleep(10000);
        }
        CHECK(dev_status(0) == GAUDI_HL_DEVICE_STATUS_OPERATIONAL,
              "operational after the hard reset");
        CHECK_OK(fd = open_dev(0), "open after the hard reset");
        close(fd);
    }
    free(buf);
}

/*
 * Hard reset (facts 7.3, 9.1): the child holding the device submits a CS
 * with the fault HLSIM_TEST_FAULT; in-flight work aborts, ioctls EBUSY,
 * and after the second of grace the driver SIGKILLs it. The parent sees
 * the kill, then the device operational again with its memory freed.
 */
static void reset_child(int wfd)
{
    int (*add)(const char *, unsigned, int) = API(hlsim_fault_add);
    const char *fault = getenv("HLSIM_TEST_FAULT");
    uint8_t *buf = malloc(8192);
    uint64_t va, seq, h;
    uint32_t status;
    hcb_t    cb;
    char     r = 'x';
    int      fd, gaudi1 = getenv("HLSIM_ASIC") != NULL;

    fd = open_dev(0);
    if (fd < 0 || (!gaudi1 && mem_alloc(fd, 1, &h))) {
        _exit(3);
    }
    if (!strcmp(fault, "api")) {
        r = 'o';   /* the parent resets the device */
        if (write(wfd, &r, 1) != 1) {
            _exit(3);
        }
        pause();
        _exit(0);
    }
    if (gaudi1) {
        union hl_cb_args a = {0};
        cbuf_t           c;

        a.in.op      = HL_CB_OP_CREATE;
        a.in.cb_size = 4096;
        if (cb_op(fd, &a)) {
            _exit(4);
        }
        c.p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                   a.out.cb_handle);
        if (c.p == MAP_FAILED) {
            _exit(4);
        }
        c.len = 0;
        pkt_lin(&c, 0x20000000ULL, 0x20001000ULL, 4096, 0, 1);
        add(fault, 1, EIO);
        if (submit(fd, a.out.cb_handle, c.len, 0, 0, &seq)) {
            _exit(5);
        }
    } else {
        cb = hcb_new(fd, 4096);
        if (map_host(fd, buf, 8192, &va)) {
            _exit(4);
        }
        add(fault, 1, EIO);
        cb.cb.len = 0;
        pkt_lin(&cb.cb, va, va + 4096, 4096, 0, 0);
        if (submit(fd, cb.va, cb.cb.len, 0, HL_CS_CHUNK_FLAGS_USER_ALLOC_CB,
                   &seq)) {
            _exit(5);
        }
    }
    /* ioctls EBUSY while the device resets (facts 7.2) */
    if ((wait_cs(fd, seq, 0, NULL, NULL) == 0) || (errno != EBUSY)) {
        _exit(6);
    }
    r = 'b';
    if (write(wfd, &r, 1) != 1) {
        _exit(3);
    }
    sleep(10);   /* killed before */
    _exit(0);
}

static void t_hard_reset(void)
{
    struct hl_info_dram_usage u;
    uint64_t t0, ms;
    int      pfd[2], st, fd, cfd;
    char     r = 0;
    pid_t    pid;

    CHECK(pipe(pfd) == 0, "pipe");
    CHECK_OK(cfd = open_ctl(0), "ctl");
    pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        reset_child(pfd[1]);
    }
    close(pfd[1]);
    CHECK(read(pfd[0], &r, 1) == 1, "child report");
    t0 = now_ns();
    if (r == 'o') {
        CHECK_OK(API(hlsim_reset_device)(0, 100), "reset");
    }
    CHECK(r == 'b' || r == 'o', "child saw %c", r);
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
    ms = (now_ns() - t0) / 1000000;
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
          "child not killed by SIGKILL: status 0x%x", st);
    CHECK(ms < 3000, "killed after %llu ms", (unsigned long long)ms);
    CHECK_ERR(open_dev(0), EAGAIN, "open while the reset finishes");
    usleep(400000);
    CHECK_OK(fd = open_dev(0), "open after the reset");
    CHECK_OK(info(cfd, HL_INFO_DRAM_USAGE, &u, sizeof(u)), "usage");
    CHECK(u.dram_free_mem == hw_ip(cfd).u61.dram_size,
          "the killed context's DRAM freed: %llu free",
          (unsigned long long)u.dram_free_mem);
    close(fd);
    close(cfd);
}

/*
 * WAIT on a CS older than the window (facts 9.11): a CS submitted with
 * HL_CS_FLAGS_TIMESTAMP reports its stored outcome, with its timestamp,
 * once; then, like any other old CS, it is gone
 */
static int submit_ts(int fd, hcb_t *h, uint64_t src, uint64_t dst,
                     uint32_t size, uint64_t *seq)
{
    struct hl_cs_chunk ch = {0};
    union hl_cs_args   a  = {0};
    int                rc;

    h->cb.len = 0;
    pkt_lin(&h->cb, src, dst, size, 0, 0);
    ch.cb_handle            = h->va;
    ch.queue_index          = 0;
    ch.cb_size              = h->cb.len;
    ch.cs_chunk_flags       = HL_CS_CHUNK_FLAGS_USER_ALLOC_CB;
    a.in.chunks_execute     = (uintptr_t)&ch;
    a.in.num_chunks_execute = 1;
    a.in.cs_flags           = HL_CS_FLAGS_TIMESTAMP;
    rc   = ioctl(fd, CS_CODE, &a);
    *seq = a.out.seq;
    return rc;
}

static void t_wait_old_outcome(void)
{
    int (*add)(const char *, unsigned, int) = API(hlsim_fault_add);
    uint8_t *buf = malloc(8192);
    uint64_t va, s_ok, s_bad, s_plain, i;
    uint32_t status, flags;
    hcb_t    cb;
    int      fd;

    CHECK_OK(fd = open_dev(0), "open");
    cb = hcb_new(fd, 4096);
    CHECK_OK(map_host(fd, buf, 8192, &va), "map");
    CHECK_OK(submit_ts(fd, &cb, va, va + 4096, 64, &s_ok), "CS ts");
    CHECK_OK(wait_cs(fd, s_ok, 5000000, &status, &flags), "wait");
    CHECK(flags & HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD, "timestamp");
    CHECK_OK(add("cs_timeout", 1, ETIMEDOUT), "fault");
    CHECK_OK(submit_ts(fd, &cb, va, va + 4096, 64, &s_bad), "CS ts, fails");
    /* reset_on_lockup=0: in flight after its TDR, until a reset */
    CHECK_OK(wait_cs(fd, s_bad, 300000, &status, NULL), "waiter");
    CHECK(status == HL_WAIT_CS_STATUS_BUSY, "in flight after its TDR: %u",
          status);
    CHECK_ERR(submit_ts(fd, &cb, va, va + 4096, 64, &s_plain), EBUSY,
              "needs a reset");
    /* the administrator's reset (which would end this process) by hand,
     * to look at the stored outcomes: its rollback ends the timed-out CS
     * with ETIMEDOUT (K612 common/command_submission.c:783-784) */
    CHECK_OK(API(hlsim_set_device_status)(0,
             GAUDI_HL_DEVICE_STATUS_IN_RESET), "reset");
    CHECK_OK(API(hlsim_set_device_status)(0,
             GAUDI_HL_DEVICE_STATUS_OPERATIONAL), "operational");
    CHECK_OK(g2_dma(fd, &cb, 0, va, va + 4096, 64, 0, &status), "plain");
    s_plain = s_bad + 1;
    for (i = 0; i < 70; i++) {   /* the window (64) moves past them */
        CHECK_OK(g2_dma(fd, &cb, 1, va, va + 4096, 64, 0, &status), "dma");
    }
    CHECK_OK(wait_cs(fd, s_ok, 0, &status, &flags), "old, stored");
    CHECK(status == HL_WAIT_CS_STATUS_COMPLETED &&
          (flags & HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD) &&
          !(flags & HL_WAIT_CS_STATUS_FLAG_GONE), "stored outcome %u/%x",
          status, flags);
    CHECK_OK(wait_cs(fd, s_ok, 0, &status, &flags), "popped");
    CHECK(flags & HL_WAIT_CS_STATUS_FLAG_GONE, "gone after the pop");
    CHECK_ERR(wait_cs(fd, s_bad, 0, &status, NULL), ETIMEDOUT,
              "stored failure");
    CHECK(status == HL_WAIT_CS_STATUS_TIMEDOUT, "status 2");
    CHECK_OK(wait_cs(fd, s_plain, 0, &status, &flags), "plain old");
    CHECK(flags & HL_WAIT_CS_STATUS_FLAG_GONE, "no outcome stored");
    close(fd);
    free(buf);
}

/* Gaudi2's real DRAM page, 768 MiB, is not a power of two (facts 3.4):
 * the default geometry, 96 GiB of HBM */
static void t_dram_page_768m(void)
{
    const uint64_t page = 768 * MB;
    uint8_t *src = malloc(8192), *dst = calloc(1, 8192);
    uint64_t h1, h2, dva, sva, tva, free0;
    uint32_t status;
    hcb_t    cb;
    int      fd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK(hw_ip(fd).u61.dram_page_size == page, "page size %llu",
          (unsigned long long)hw_ip(fd).u61.dram_page_size);
    CHECK(hw_ip(fd).u61.dram_base_address == 0x1001001800000000ULL &&
          hw_ip(fd).u61.dram_size == 127 * page, "96 GiB: 127 user pages");
    free0 = dram_free(fd);
    CHECK_OK(mem_alloc(fd, 1, &h1), "alloc 1 byte");
    CHECK(free0 - dram_free(fd) == page, "one whole page");
    CHECK_OK(mem_alloc(fd, page + 1, &h2), "alloc a page and a byte");
    CHECK(free0 - dram_free(fd) == 3 * page, "two more pages");
    CHECK_OK(map_dev(fd, h2, 0, 0, &dva), "map");
    /* VA blocks of whole pages packed from the DMMU start, no 1 GiB
     * alignment (K612 gaudi2/gaudi2.c:2373-2377, common/memory.c:605-640) */
    CHECK(dva == hw_ip(fd).u61.dram_base_address, "first block at the "
          "start: 0x%llx", (unsigned long long)dva);
    CHECK_OK(map_dev(fd, h1, 0, 0, &tva), "map h1");
    CHECK(tva == dva + 2 * page, "next block abuts: 0x%llx",
          (unsigned long long)tva);
    CHECK_OK(unmap(fd, tva), "unmap h1");
    /* get_va_block fails, MAP answers ENOMEM (K612 common/memory.c:
     * 623-640, 1175-1182) */
    CHECK_ERR(map_dev(fd, h1, dva + 3 * page + GB, HL_MEM_FORCE_HINT, &tva),
              ENOMEM, "hint not a page multiple");
    cb = hcb_new(fd, 4096);
    fill(src, 8192, 5);
    CHECK_OK(map_host(fd, src, 8192, &sva), "map src");
    CHECK_OK(map_host(fd, dst, 8192, &tva), "map dst");
    /* across the boundary of the two pages */
    CHECK_OK(g2_dma(fd, &cb, 0, sva, dva + page - 4096, 8192, 0, &status),
             "h2d");
    CHECK_OK(g2_dma(fd, &cb, 4, dva + page - 4096, tva, 8192, 0, &status),
             "d2h");
    CHECK(!memcmp(src, dst, 8192), "data across the page boundary");
    close(fd);
    free(src);
    free(dst);
}

/*
 * get_va_block (K612 common/memory.c:593-740) takes the smallest free
 * block that fits (:671-676), the lowest of equals; a hint must fit with
 * a byte to spare before the free block's inclusive end (:678-679); a
 * forced hint that is not taken, hint 0 included, fails with ENOMEM
 * (:693-701, 1175-1182); a forced hint on an unaligned host address is
 * EINVAL (:1161-1168)
 */
static void t_va_best_fit(void)
{
    const uint64_t page = 768 * MB;
    uint64_t h[12], va[12], base, v, hb;
    uint8_t *buf = aligned_alloc(4096, 3 * 4096);
    int      fd, i;

    CHECK_OK(fd = open_dev(0), "open");
    base = hw_ip(fd).u61.dram_base_address;
    for (i = 0; i < 11; i++) {
        CHECK_OK(mem_alloc(fd, 1, &h[i]), "alloc");
        CHECK_OK(map_dev(fd, h[i], 0, 0, &va[i]), "map");
        CHECK(va[i] == base + i * page, "packed: %d", i);
    }
    CHECK_OK(mem_alloc(fd, 2 * page, &hb), "alloc 2 pages");
    CHECK_OK(mem_alloc(fd, 1, &h[11]), "alloc");
    /* holes: 3 pages at +5, 1 page at +9, the rest after +11 */
    for (i = 5; i < 8; i++) {
        CHECK_OK(unmap(fd, va[i]), "unmap");
    }
    CHECK_OK(unmap(fd, va[9]), "unmap 9");
    CHECK_OK(map_dev(fd, h[9], 0, 0, &v), "1 page");
    CHECK(v == base + 9 * page, "best fit: the 1-page hole, got +%lld",
          (long long)((v - base) / page));
    CHECK_OK(unmap(fd, v), "unmap");
    CHECK_OK(map_dev(fd, hb, 0, 0, &v), "2 pages");
    CHECK(v == base + 5 * page, "best fit: the 3-page hole, got +%lld",
          (long long)((v - base) / page));
    /* holes now: +7 (1 page), +9 (1 page), the tail */
    CHECK_ERR(map_dev(fd, h[9], base + 7 * page, HL_MEM_FORCE_HINT, &v),
              ENOMEM, "hint fills its hole to the end");
    CHECK_ERR(map_dev(fd, h[9], 0, HL_MEM_FORCE_HINT, &v), ENOMEM,
              "forced hint 0");
    CHECK_OK(map_dev(fd, h[9], base + 9 * page, 0, &v), "unforced hint");
    CHECK(v == base + 7 * page, "not taken, best fit: the lowest of equal "
          "holes, got +%lld", (long long)((v - base) / page));
    CHECK_OK(unmap(fd, v), "unmap");
    CHECK_OK(map_dev(fd, h[9], base + 20 * page, HL_MEM_FORCE_HINT, &v),
             "forced hint in the tail");
    CHECK(v == base + 20 * page, "hint taken");
    /* the host range: same allocator; forced hint needs an aligned host
     * address */
    CHECK_ERR(map_host_hint(fd, buf + 8, 4096, 0xFFF0000100000000ULL,
                            HL_MEM_FORCE_HINT, &v), EINVAL,
              "forced hint, unaligned host address");
    CHECK_OK(map_host_hint(fd, buf + 8, 4096, 0xFFF0000100000000ULL, 0, &v),
             "unforced");
    CHECK_OK(map_host_hint(fd, buf, 4096, 0xFFF0000200000000ULL,
                           HL_MEM_FORCE_HINT, &v), "forced, aligned");
    CHECK(v == 0xFFF0000200000000ULL, "host hint taken");
    close(fd);
    free(buf);
}

static void t_dma_bandwidth(void)
{
    uint8_t *buf = malloc(4 * MB);
    uint64_t va, t0, t1;
    uint32_t status;
    struct timespec ts;
    hcb_t cb;
    int   fd;

    CHECK_OK(fd = open_dev(0), "open");
    cb = hcb_new(fd, 4096);
    CHECK_OK(map_host(fd, buf, 4 * MB, &va), "map");
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t0 = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
    CHECK_OK(g2_dma(fd, &cb, 0, va, va + 2 * MB, 2 * MB, 0, &status), "dma");
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t1 = ts.tv_sec * 1000000000ULL + ts.tv_nsec;
    /* 2 MiB at 0.02 GB/s = ~105 ms */
    CHECK(t1 - t0 >= 90000000ULL, "too fast: %llu ns",
          (unsigned long long)(t1 - t0));
    close(fd);
    free(buf);
}

/*
 * The engine model's clock (HLSIM_DMA_GBPS=0.01, HLSIM_DMA_JOB_NS=1000):
 * CSs queued on one busy engine end exactly bytes / rate + the job cost
 * apart in model time, which the CS timestamps report; one queued on an
 * idle engine starts when it arrives. Virtual time: no wall-clock bound.
 * Submitting four takes far less than one job's 105 ms.
 */
static void t_engine_model_clock(void)
{
    const uint64_t job = 1 * MB, dur = 104857600 + 1000;   /* ns */
    uint8_t *buf = aligned_alloc(4096, 2 * MB);
    uint64_t va, seq[4], ts[4], t0;
    union hl_wait_cs_args w;
    hcb_t    cb;
    int      fd, i;

    CHECK_OK(fd = open_dev(0), "open");
    cb = hcb_new(fd, 4096);
    CHECK_OK(map_host(fd, buf, 2 * MB, &va), "map");
    t0 = now_ns();
    for (i = 0; i < 4; i++) {
        CHECK_OK(submit_ts(fd, &cb, va, va + MB, job, &seq[i]), "CS");
    }
    for (i = 0; i < 4; i++) {
        memset(&w, 0, sizeof(w));
        w.in.seq        = seq[i];
        w.in.timeout_us = 10000000;
        CHECK_OK(ioctl(fd, WAIT_CODE, &w), "wait");
        CHECK(w.out.flags & HL_WAIT_CS_STATUS_FLAG_TIMESTAMP_VLD, "ts");
        ts[i] = w.out.timestamp_nsec;
    }
    CHECK(ts[0] >= t0 + dur, "the first ends a job after its arrival");
    for (i = 1; i < 4; i++) {
        CHECK(ts[i] - ts[i - 1] == dur, "job %d: %llu ns after the one "
              "before, want %llu", i, (unsigned long long)(ts[i] - ts[i - 1]),
              (unsigned long long)dur);
    }
    /* the engine is idle now: the next job starts when it comes */
    t0 = now_ns();
    CHECK_OK(submit_ts(fd, &cb, va, va + MB, 4096, &seq[0]), "CS");
    memset(&w, 0, sizeof(w));
    w.in.seq        = seq[0];
    w.in.timeout_us = 10000000;
    CHECK_OK(ioctl(fd, WAIT_CODE, &w), "wait");
    CHECK(w.out.timestamp_nsec >= t0 + 409600 + 1000, "idle engine: from "
          "its arrival");
    close(fd);
    free(buf);
}

/*
 * USERPTR pinning errnos per kernel: a range whose first page pins but a
 * later one does not is ENOMEM on K612 (common/memory.c:2325-2335),
 * EFAULT on 6.1 (K61 :2196-2207); 6.1 pins with FOLL_FORCE, so a
 * read-only private mapping pins there. And 6.1 answers DRAM_USAGE only
 * when operational (K61 common/habanalabs_ioctl.c:850-858).
 */
static void t_pin_errnos(void)
{
    int       legacy = hl_legacy_nodes();
    uint8_t  *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct hl_info_dram_usage u;
    struct hl_info_args       a = {0};
    uint64_t  va;
    int       fd;

    CHECK(p != MAP_FAILED, "mmap");
    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(munmap(p + 2 * 4096, 4096), "hole");
    CHECK_ERR(map_host(fd, p, 3 * 4096, &va), legacy ? EFAULT : ENOMEM,
              "hole after the first page");
    CHECK_ERR(map_host(fd, p + 2 * 4096, 4096, &va), EFAULT,
              "nothing pinned");
    CHECK_OK(mprotect(p, 4096, PROT_READ), "read-only");
    if (legacy) {
        CHECK_OK(map_host(fd, p, 4096, &va), "FOLL_FORCE pins it");
        CHECK_OK(unmap(fd, va), "unmap");
    } else {
        CHECK_ERR(map_host(fd, p, 4096, &va), EFAULT, "read-only");
    }
    CHECK_OK(API(hlsim_set_device_status)(0,
             GAUDI_HL_DEVICE_STATUS_MALFUNCTION), "status");
    a.return_pointer = (uintptr_t)&u;
    a.return_size    = sizeof(u);
    a.op             = HL_INFO_DRAM_USAGE;
    if (legacy) {
        CHECK_ERR(ioctl(fd, GAUDI_HL_LEGACY_IOCTL_INFO, &a), EBUSY,
                  "DRAM_USAGE not operational");
    } else {
        CHECK_OK(ioctl(fd, INFO_CODE, &a), "DRAM_USAGE not operational");
    }
    CHECK_OK(API(hlsim_set_device_status)(0,
             GAUDI_HL_DEVICE_STATUS_OPERATIONAL), "status");
    close(fd);
    munmap(p, 2 * 4096);
}

/* ================= engine faults and closes with work ================= */

static int is_gaudi1(void)
{
    return getenv("HLSIM_ASIC") && !strcmp(getenv("HLSIM_ASIC"), "gaudi1");
}

/* A queue's CS of one LIN_DMA, on a Gaudi1 kernel CB or a Gaudi2 host CB */
static int submit_dma(int fd, uint64_t src, uint64_t dst, uint32_t size,
                      uint64_t *seq)
{
    static hcb_t     h;
    static cbuf_t    c;
    static uint64_t  handle;
    union hl_cb_args a = {0};

    if (!is_gaudi1()) {
        if (h.cb.p == NULL) {
            h = hcb_new(fd, 4096);
        }
        h.cb.len = 0;
        pkt_lin(&h.cb, src, dst, size, 0, 0);
        return submit(fd, h.va, h.cb.len, 0, HL_CS_CHUNK_FLAGS_USER_ALLOC_CB,
                      seq);
    }
    if (c.p == NULL) {
        a.in.op      = HL_CB_OP_CREATE;
        a.in.cb_size = 4096;
        CHECK_OK(cb_op(fd, &a), "CB create");
        handle = a.out.cb_handle;
        c.p    = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                      handle);
        CHECK(c.p != MAP_FAILED, "CB mmap");
    }
    c.len = 0;
    pkt_lin(&c, src, dst, size, 0, 1);
    return submit(fd, handle, c.len, 0, 0, seq);
}

/*
 * In a child holding the device: one DMA with HLSIM_TEST_FAULT
 * ("page_fault": to an unmapped address; "dma_error": the injected
 * engine error). Reports to @a wfd: 'p' if the first poll saw the CS busy,
 * then the outcome of a 5 s wait: 'c' completed, 'i' EIO, 't' ETIMEDOUT,
 * 'b' still busy, 'e' another error; then lives until it is killed.
 */
static void engine_fault_child(int wfd)
{
    const char *fault = getenv("HLSIM_TEST_FAULT");
    uint8_t    *buf = aligned_alloc(4096, 8192);
    uint64_t    va, src, dst, seq;
    uint32_t    status;
    char        r[2] = { 'x', 'x' };
    int         fd, rc;

    fd = open_dev(0);
    if ((fd < 0) || (buf == NULL) || map_host(fd, buf, 8192, &va)) {
        _exit(3);
    }
    src = is_gaudi1() ? 0x20000000ULL : va;
    dst = va + 4096;
    if (!strcmp(fault, "page_fault")) {
        dst = is_gaudi1() ? 0x2000000000000ULL : 0xFFF0000100000000ULL;
    } else {
        API(hlsim_fault_add)(fault, 1, EIO);
    }
    if (submit_dma(fd, src, dst, 4096, &seq)) {
        _exit(4);
    }
    if (!strcmp(fault, "dma_error")) {
        rc   = wait_cs(fd, seq, 0, &status, NULL);
        r[0] = ((rc == 0) && (status == HL_WAIT_CS_STATUS_BUSY)) ? 'p' : 'n';
    }
    rc   = wait_cs(fd, seq, 5000000, &status, NULL);
    r[1] = (rc == 0) ? ((status == HL_WAIT_CS_STATUS_COMPLETED) ? 'c' : 'b') :
           (errno == EIO) ? 'i' : (errno == ETIMEDOUT) ? 't' : 'e';
    if (write(wfd, r, 2) != 2) {
        _exit(3);
    }
    sleep(20);
    _exit(0);
}

static int page_fault_lines(void)
{
    char  path[4200], line[256];
    FILE *f;
    int   n = 0;

    snprintf(path, sizeof(path), "%s/page-faults", API(hlsim_root)());
    f = fopen(path, "r");
    while ((f != NULL) && fgets(line, sizeof(line), f)) {
        n++;
    }
    if (f != NULL) {
        fclose(f);
    }
    return n;
}

/*
 * HLSIM_TEST_EXPECT: "reset" (a hard reset aborts the CS, the child is
 * killed), "stall" (busy until the CS timeout, HLSIM_TIMEOUT_LOCKED=1,
 * then ETIMEDOUT, a hard reset and the kill), "drop" (the CS completes).
 * A page fault is counted in $HLSIM_ROOT/page-faults in every case.
 */
static void t_engine_fault(void)
{
    const char *expect = getenv("HLSIM_TEST_EXPECT");
    int         stall  = !strcmp(expect, "stall");
    int         drop   = !strcmp(expect, "drop");
    int         pf     = !strcmp(getenv("HLSIM_TEST_FAULT"), "page_fault");
    const char *pf_cs  = getenv("HLSIM_PAGE_FAULT_CS");
    /* a page fault's reset comes after its CS completed (default) */
    int         done   = drop || (pf && !stall && !((pf_cs != NULL) &&
                                                   !strcmp(pf_cs, "aborted")));
    int         pfd[2], st;
    char        r[2] = { 0, 0 };
    pid_t       pid;

    CHECK(pipe(pfd) == 0, "pipe");
    pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        engine_fault_child(pfd[1]);
    }
    close(pfd[1]);
    CHECK(read(pfd[0], r, 2) == 2, "child report");
    close(pfd[0]);
    if (!pf) {
        CHECK(r[0] == (stall ? 'p' : 'n'), "first poll: %c", r[0]);
    }
    /* a reset: the waiter sees its CS completed (a page fault's, whose
     * reset comes after) or aborted (EIO) or, if it came after the reset
     * began, the device in reset (EBUSY) */
    CHECK((r[1] == (done ? 'c' : stall ? 't' : 'i')) ||
          (!drop && !stall && (r[1] == 'e')), "outcome %c", r[1]);
    if (drop) {
        kill(pid, SIGTERM);
    }
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
    CHECK(WIFSIGNALED(st) && (WTERMSIG(st) == (drop ? SIGTERM : SIGKILL)),
          "child status 0x%x", st);
    CHECK(page_fault_lines() == pf, "page faults recorded: %d",
          page_fault_lines());
    CHECK(reset_count().hard_reset_cnt == !drop, "hard resets %u",
          reset_count().hard_reset_cnt);
}

/* REGISTER/UNREGISTER_EVENTFD take no return buffer */
static int info_eventfd(int fd, unsigned op, int efd)
{
    struct hl_info_args a = {0};

    a.op      = op;
    a.eventfd = efd;
    return ioctl(fd, hl_legacy_nodes() ? GAUDI_HL_LEGACY_IOCTL_INFO :
                 INFO_CODE, &a);
}

static uint64_t get_events(int fd)
{
    uint64_t mask = ~0ULL;

    CHECK_OK(info(fd, HL_INFO_GET_EVENTS, &mask, sizeof(mask)),
             "GET_EVENTS");
    return mask;
}

/* One page-faulting DMA on Gaudi2 (HLSIM_PAGE_FAULT=drop: it completes) */
static void notify_fault(int fd, hcb_t *cb, uint64_t va, uint64_t dst)
{
    uint32_t status;

    CHECK_OK(g2_dma(fd, cb, 0, va, dst, 4096, 0, &status), "faulting DMA");
    CHECK(status == HL_WAIT_CS_STATUS_COMPLETED, "the CS completes");
}

/*
 * The notifier (hlsim_notify.c) per flavour: GET_EVENTS reads and clears
 * the open file's events, with or without an eventfd; one eventfd per
 * file; PAGE_FAULT_EVENT (not on Linux 6.1) keeps the first fault since
 * the open, unchanged by reads. HLSIM_PAGE_FAULT_EVENT=after: the events
 * only HLSIM_PAGE_FAULT_EVENT_US after WAIT_CS reported the CS.
 */
static void t_notify(void)
{
    const uint64_t bad1 = 0xFFF0000100000000ULL, bad2 = bad1 + 0x200000;
    const char    *order = getenv("HLSIM_PAGE_FAULT_EVENT");
    int            after = (order == NULL) || strcmp(order, "before");
    int            legacy = hl_legacy_nodes();
    uint64_t       want  = HL_NOTIFIER_EVENT_USER_ENGINE_ERR |
                           (legacy ? 0 : GAUDI_HL_NOTIFIER_EVENT_PAGE_FAULT);
    struct gaudi_hl_page_fault_info pf;
    uint8_t       *buf = aligned_alloc(4096, 8192);
    uint64_t       va, n, mask;
    hcb_t          cb;
    int            fd, efd, pfd[2];

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_ERR(info(fd, HL_INFO_GET_EVENTS, &mask, 4), EINVAL, "4 bytes");
    CHECK(get_events(fd) == 0, "no events yet");
    CHECK(pipe(pfd) == 0, "pipe");
    CHECK_ERR(info_eventfd(fd, HL_INFO_REGISTER_EVENTFD, pfd[0]), EINVAL,
              "a pipe is no eventfd");
    CHECK_ERR(info_eventfd(fd, HL_INFO_REGISTER_EVENTFD, 1000), EBADF,
              "no such fd");
    CHECK_ERR(info_eventfd(fd, HL_INFO_UNREGISTER_EVENTFD, 0), EINVAL,
              "none to unregister");
    CHECK_OK(efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), "eventfd");
    CHECK_OK(info_eventfd(fd, HL_INFO_REGISTER_EVENTFD, efd), "register");
    CHECK_ERR(info_eventfd(fd, HL_INFO_REGISTER_EVENTFD, efd), EINVAL,
              "one eventfd per open file");
    memset(&pf, 0xab, sizeof(pf));
    if (legacy) {
        CHECK_ERR(info(fd, GAUDI_HL_INFO_PAGE_FAULT_EVENT, &pf, sizeof(pf)),
                  EINVAL, "Linux 6.1: no PAGE_FAULT_EVENT");
    } else {
        CHECK_OK(info(fd, GAUDI_HL_INFO_PAGE_FAULT_EVENT, &pf, sizeof(pf)),
                 "PAGE_FAULT_EVENT");
        CHECK(pf.addr == 0xababababababababULL, "none: buffer untouched");
    }
    if (!legacy) {   /* Linux 6.1 resets Gaudi2 on a page fault */
        cb = hcb_new(fd, 4096);
        CHECK_OK(map_host(fd, buf, 8192, &va), "map");
        notify_fault(fd, &cb, va, bad1);
        if (after) {
            CHECK(get_events(fd) == 0, "after: not yet");
            CHECK_OK(info(fd, GAUDI_HL_INFO_PAGE_FAULT_EVENT, &pf,
                          sizeof(pf)), "PAGE_FAULT_EVENT");
            CHECK(pf.addr == 0xababababababababULL, "not captured yet");
            usleep(20000);
        }
        CHECK((mask = get_events(fd)) == want, "events 0x%llx",
              (unsigned long long)mask);
        CHECK(get_events(fd) == 0, "cleared by the read");
        CHECK(read(efd, &n, sizeof(n)) == sizeof(n) && (n == 1),
              "eventfd signalled once");
        notify_fault(fd, &cb, va, bad2);
        usleep(20000);
        CHECK(get_events(fd) == want, "second fault");
        CHECK_OK(info(fd, GAUDI_HL_INFO_PAGE_FAULT_EVENT, &pf, sizeof(pf)),
                 "PAGE_FAULT_EVENT");
        CHECK((pf.addr == bad1) && (pf.timestamp != 0) &&
              (pf.engine_id == 0), "the first fault: 0x%llx",
              (unsigned long long)pf.addr);
        CHECK_OK(info(fd, GAUDI_HL_INFO_PAGE_FAULT_EVENT, &pf, sizeof(pf)),
                 "PAGE_FAULT_EVENT again");
        CHECK(pf.addr == bad1, "unchanged by reading");
        CHECK_OK(unmap(fd, va), "unmap");
        CHECK_OK(unmap(fd, cb.va), "unmap CB");
        free(cb.cb.p);
    }
    CHECK_OK(info_eventfd(fd, HL_INFO_UNREGISTER_EVENTFD, 0), "unregister");
    CHECK_ERR(info_eventfd(fd, HL_INFO_UNREGISTER_EVENTFD, 0), EINVAL,
              "unregistered");
    close(fd);
    if (!legacy) {
        /* a new open: nothing captured */
        CHECK_OK(fd = open_dev(0), "reopen");
        memset(&pf, 0, sizeof(pf));
        CHECK_OK(info(fd, GAUDI_HL_INFO_PAGE_FAULT_EVENT, &pf, sizeof(pf)),
                 "PAGE_FAULT_EVENT");
        CHECK(pf.timestamp == 0, "capture reset at open");
        close(fd);
    }
    close(efd);
    close(pfd[0]);
    close(pfd[1]);
    free(buf);
}

/* The per-process counter, and a dropped transfer writes nothing */
static void t_page_fault_drop(void)
{
    uint8_t *buf = aligned_alloc(4096, 8192);
    uint64_t va;
    uint32_t status;
    hcb_t    cb;
    int      fd;

    CHECK_OK(fd = open_dev(0), "open");
    cb = hcb_new(fd, 4096);
    CHECK_OK(map_host(fd, buf, 8192, &va), "map");
    memset(buf, 0x5a, 8192);
    CHECK_OK(g2_dma(fd, &cb, 0, va, 0xFFF0000100000000ULL, 4096, 0,
                    &status), "unmapped dst");
    CHECK(status == HL_WAIT_CS_STATUS_COMPLETED, "the CS completes");
    buf[0] = 0x11;
    CHECK_OK(g2_dma(fd, &cb, 0, va, va + 4096, 8192, 0, &status),
             "partly mapped dst");
    CHECK(buf[4096] == 0x5a, "dropped transfer wrote nothing");
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_PAGE_FAULTS, 0) == 2,
          "page faults counted: %lld", (long long)
          API(hlsim_get_counter)(HLSIM_COUNTER_PAGE_FAULTS, 0));
    CHECK(page_fault_lines() == 2, "recorded: %d", page_fault_lines());
    CHECK(reset_count().hard_reset_cnt == 0, "no reset");
    close(fd);
    free(buf);
}

/*
 * The last close with a CS in flight (HLSIM_DMA_GBPS keeps it running):
 * a hard reset on accel and Habana's driver (K612 common/device.c:
 * 618-622), only a notice on Linux 6.1 (K61 common/device.c:478-480)
 */
static void t_close_inflight(void)
{
    uint8_t *buf = aligned_alloc(4096, 2 * MB);
    uint64_t va, seq;
    int      fd, legacy = hl_legacy_nodes();

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(map_host(fd, buf, 2 * MB, &va), "map");
    CHECK_OK(submit_dma(fd, is_gaudi1() ? 0x20000000ULL : va, va + MB,
                        256 * 1024, &seq), "CS");
    close(fd);
    CHECK(reset_count().hard_reset_cnt == !legacy, "hard resets %u",
          reset_count().hard_reset_cnt);
    if (!legacy) {
        CHECK_ERR(open_dev(0), EAGAIN, "in the hard reset");
    }
    free(buf);
}

/*
 * The last close with a CB still mapped: the context stays referenced,
 * so accel and Habana's driver hard-reset and kill the closer with the
 * device's users after a second (K612 common/device.c:618-622, 1455-1468;
 * command_buffer.c:223); Linux 6.1 logs a notice
 */
static void t_close_cb_mapped(void)
{
    union hl_cb_args a = {0};
    int              legacy = hl_legacy_nodes(), st, fd;
    pid_t            pid;

    pid = fork();
    if (pid == 0) {
        fd = open_dev(0);
        a.in.op      = HL_CB_OP_CREATE;
        a.in.cb_size = 4096;
        if ((fd < 0) || cb_op(fd, &a) ||
            (mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                  a.out.cb_handle) == MAP_FAILED)) {
            _exit(3);
        }
        close(fd);
        sleep(legacy ? 2 : 20);
        _exit(0);
    }
    CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
    if (legacy) {
        CHECK(WIFEXITED(st) && (WEXITSTATUS(st) == 0), "status 0x%x", st);
    } else {
        CHECK(WIFSIGNALED(st) && (WTERMSIG(st) == SIGKILL),
              "closer not killed: status 0x%x", st);
    }
    CHECK(reset_count().hard_reset_cnt == !legacy, "hard resets %u",
          reset_count().hard_reset_cnt);
}

/* ================= stage 3: op 99 ================= */

static void importer(void *arg)
{
    int *sv = arg, fd, d;
    uint8_t *buf = calloc(1, 2 * MB), *pat = malloc(2 * MB);
    uint64_t va, hva;
    uint32_t status;
    hcb_t cb;

    fd = open_dev(1);
    if (fd < 0) {
        test_fail("importer open: %s", strerror(errno));
    }
    d = recv_fd(sv[1]);
    cb = hcb_new(fd, 4096);
    CHECK_OK(map_host(fd, buf, 2 * MB, &hva), "importer map");
    CHECK_ERR(reg_dmabuf(fd, d, 0, &va), EINVAL, "length 0");
    CHECK_ERR(reg_dmabuf(fd, d, 64 * MB + 4096, &va), EINVAL, "too long");
    CHECK_ERR(reg_dmabuf(fd, hva > 0 ? 0 : 0, 4096, &va), EINVAL,
              "not a dma-buf (stdin)");
    CHECK_ERR(reg_dmabuf(fd, 1000, 4096, &va), EBADF, "closed fd");
    CHECK_OK(reg_dmabuf(fd, d, 2 * MB, &va), "reg");
    CHECK(va >= 0xFFF0000000000000ULL && va < 0xFFF1000000000000ULL,
          "host range VA %llx", (unsigned long long)va);
    close(d);   /* the registration keeps its own reference */
    /* peer HBM -> local host */
    CHECK_OK(g2_dma(fd, &cb, 4, va, hva, 2 * MB, 0, &status), "read peer");
    fill(pat, 2 * MB, 9);
    CHECK(!memcmp(buf, pat, 2 * MB), "peer data");
    /* local memset -> peer HBM */
    CHECK_OK(g2_dma(fd, &cb, 0, 0x7777777777777777ULL, va + MB, 4096, 1,
                    &status), "write peer");
    /* past the import: a page fault (HLSIM_PAGE_FAULT=drop: dropped) */
    CHECK_OK(g2_dma(fd, &cb, 0, hva, va + 2 * MB - 4096, 8192, 0, &status),
             "past the import");
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_PAGE_FAULTS, 0) == 1,
          "the page fault counted");
    sync_byte(sv[1], 'w');
    sync_wait(sv[1]);
    CHECK_OK(unmap(fd, va), "unmap import");
    sync_byte(sv[1], 'u');
    close(fd);
    free(buf);
    free(pat);
}

static void t_op99_two_processes(void)
{
    uint8_t *buf = malloc(2 * MB), *chk = malloc(4096);
    uint64_t h, dva, hva;
    uint32_t status;
    hcb_t cb;
    int sv[2], fd, d, st;
    pid_t pid;

    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair");
    CHECK_OK(fd = open_dev(0), "open");
    cb = hcb_new(fd, 4096);
    fill(buf, 2 * MB, 9);
    CHECK_OK(map_host(fd, buf, 2 * MB, &hva), "map");
    CHECK_OK(mem_alloc(fd, 64 * MB, &h), "alloc");
    CHECK_OK(map_dev(fd, h, 0, 0, &dva), "map dram");
    CHECK_OK(g2_dma(fd, &cb, 0, hva, dva + 64 * MB - 2 * MB, 2 * MB, 0,
                    &status), "fill HBM");
    CHECK_OK(d = export_fd(fd, dva, 2 * MB, 64 * MB - 2 * MB,
                           O_RDWR | O_CLOEXEC), "export");
    pid = fork();
    if (pid == 0) {
        close(fd);
        importer(sv);
        _exit(0);
    }
    send_fd(sv[0], d);
    close(d);
    CHECK(sync_wait(sv[0]) == 'w', "importer wrote");
    CHECK_ERR(unmap(fd, dva), EINVAL, "imported elsewhere: still exported");
    CHECK_OK(g2_dma(fd, &cb, 0, dva + 64 * MB - MB, hva, 4096, 0, &status),
             "read back");
    memset(chk, 0x77, 4096);
    CHECK(!memcmp(buf, chk, 4096), "importer's write visible");
    sync_byte(sv[0], 'g');
    CHECK(sync_wait(sv[0]) == 'u', "importer unmapped");
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && !WEXITSTATUS(st), "importer status %d", st);
    CHECK_OK(unmap(fd, dva), "unmap after the importer let go");
    close(fd);
    free(buf);
    free(chk);
}

static void t_op99_upstream(void)
{
    uint64_t h, va;
    int fd, d;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(mem_alloc(fd, 1, &h), "alloc");
    CHECK_OK(map_dev(fd, h, 0, 0, &va), "map");
    CHECK_OK(d = export_fd(fd, va, 4096, 0, O_RDWR | O_CLOEXEC), "export");
    CHECK_ERR(reg_dmabuf(fd, d, 4096, &va), EINVAL, "op 99 upstream");
    CHECK_ERR(reg_dmabuf(fd, 1000, 4096, &va), EINVAL, "op 99 bad fd");
    close(d);
    close(fd);
}


/* dma_buf_get() of a bad fd: EBADF, whatever errno was before (facts 4.3) */
static void t_op99_bad_fd(void)
{
    uint64_t va;
    int fd, tmp;

    CHECK_OK(fd = open_dev(0), "open");
    errno = EAGAIN;
    CHECK_ERR(reg_dmabuf(fd, -1, 4096, &va), EBADF, "fd -1");
    errno = ENOMEM;
    CHECK_ERR(reg_dmabuf(fd, -12345, 4096, &va), EBADF, "fd -12345");
    CHECK_OK(tmp = dup(0), "dup");
    close(tmp);
    errno = 0;
    CHECK_ERR(reg_dmabuf(fd, tmp, 4096, &va), EBADF, "closed fd");
    CHECK_OK(tmp = open("/dev/null", O_RDONLY), "null");
    CHECK_ERR(reg_dmabuf(fd, tmp, 4096, &va), EINVAL, "not a dma-buf");
    close(tmp);
    close(fd);
}

/* boot id as another process with HLSIM_ROOT=@root (NULL: ours) sees it */
static void boot_id_of(const char *root, char *buf, size_t len)
{
    char  cmd[700];
    FILE *f;

    snprintf(cmd, sizeof(cmd), "%s%s%scat /proc/sys/kernel/random/boot_id",
             root ? "HLSIM_ROOT='" : "", root ? root : "", root ? "' " : "");
    f = popen(cmd, "r");
    CHECK(f != NULL, "popen");
    buf[0] = '\0';
    CHECK(fgets(buf, len, f) != NULL, "no boot id from '%s'", cmd);
    CHECK(pclose(f) == 0, "'%s' failed", cmd);
}

/* a random (version 4) UUID, as the kernel's boot_id */
static int is_uuid4(const char *s)
{
    unsigned i;

    for (i = 0; i < 36; i++) {
        if ((i == 8) || (i == 13) || (i == 18) || (i == 23)) {
            if (s[i] != '-') {
                return 0;
            }
        } else if (!strchr("0123456789abcdef", s[i])) {
            return 0;
        }
    }
    return (s[14] == '4') && strchr("89ab", s[19]) && !strcmp(s + 36, "\n");
}

/*
 * An emulated node has its own boot id (a machine's kernel identity, which
 * UCX takes as the system id): the same for every process of one root,
 * another for another root, not the real kernel's.
 */
static void t_two_nodes_boot_id(void)
{
    char own[64], again[64], peer[64], other[64], real[64], root2[600];
    int  fd;
    ssize_t n;

    CHECK_OK(read_file("/proc/sys/kernel/random/boot_id", own, sizeof(own)),
             "read boot_id");
    CHECK(is_uuid4(own), "not a UUID: '%s'", own);
    CHECK_OK(read_file("/proc/sys/kernel/random/boot_id", again,
                       sizeof(again)), "read boot_id again");
    CHECK(!strcmp(own, again), "boot id changed: %s / %s", own, again);
    boot_id_of(NULL, peer, sizeof(peer));
    CHECK(!strcmp(own, peer), "another process of this node: %s / %s", own,
          peer);
    snprintf(root2, sizeof(root2), "%s-node2", getenv("HLSIM_ROOT"));
    boot_id_of(root2, other, sizeof(other));
    CHECK(is_uuid4(other), "not a UUID: '%s'", other);
    CHECK(strcmp(own, other), "another node has our boot id %s", own);
    /* the kernel's own, read without the redirection */
    fd = syscall(SYS_openat, AT_FDCWD, "/proc/sys/kernel/random/boot_id",
                 O_RDONLY);
    CHECK_OK(fd, "real boot_id");
    n = read(fd, real, sizeof(real) - 1);
    close(fd);
    CHECK(n > 0, "read the real boot_id");
    real[n] = '\0';
    CHECK(strcmp(own, real) && strcmp(other, real),
          "a node shows the real boot id %s", real);
}

/*
 * A dma-buf of another emulated node cannot be imported (no machine hands
 * a dma-buf to another's driver): op 99 with a file of the same contents
 * under another root is EINVAL, never a mapping of our own HBM.
 */
static void t_op99_other_node(void)
{
    char     hdr[4096], path[700];
    uint64_t h, va, iva;
    ssize_t  n;
    int      fd, d, f;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_OK(mem_alloc(fd, 1, &h), "alloc");
    CHECK_OK(map_dev(fd, h, 0, 0, &va), "map");
    CHECK_OK(d = export_fd(fd, va, 4096, 0, O_RDWR | O_CLOEXEC), "export");
    n = pread(d, hdr, sizeof(hdr), 0);
    CHECK(n > 0, "read the dma-buf header");
    snprintf(path, sizeof(path), "%s-node2", getenv("HLSIM_ROOT"));
    CHECK(!mkdir(path, 0777) || (errno == EEXIST), "mkdir %s", path);
    strcat(path, "/dmabuf");
    CHECK(!mkdir(path, 0777) || (errno == EEXIST), "mkdir %s", path);
    snprintf(path, sizeof(path), "%s-node2/dmabuf/dev0.1",
             getenv("HLSIM_ROOT"));
    CHECK_OK(f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600), "create");
    CHECK(write(f, hdr, n) == n, "write");
    CHECK_ERR(reg_dmabuf(fd, f, 4096, &iva), EINVAL, "another node's dma-buf");
    CHECK_OK(reg_dmabuf(fd, d, 4096, &iva), "our own dma-buf");
    close(f);
    close(d);
    close(fd);
}

/*
 * Linux 6.1 (misc driver, HLSIM_NODES=legacy): no export on Gaudi2, which
 * has DRAM virtual memory, refused before any argument check; no op 99
 * (K61 common/memory.c:1852-1866).
 */
static void t_export_linux61_gaudi2(void)
{
    uint64_t h, va;
    int fd;

    CHECK_OK(fd = open_dev(0), "open hl0");
    CHECK_OK(mem_alloc(fd, 1, &h), "alloc");
    CHECK_OK(map_dev(fd, h, 0, 0, &va), "map");
    CHECK_ERR(export_fd(fd, va, 4096, 0, O_RDWR | O_CLOEXEC), EOPNOTSUPP,
              "export of a mapping");
    CHECK_ERR(export_fd(fd, 0, 0, 0, O_RDWR | O_CLOEXEC), EOPNOTSUPP,
              "export probe");
    CHECK_ERR(reg_dmabuf(fd, 1000, 4096, &va), EINVAL, "op 99");
    close(fd);
}

/* Gaudi1 on 6.1: {handle = physical address, mem_size}; offset not read */
static void t_export_linux61_gaudi1(void)
{
    int fd, d;

    CHECK_OK(fd = open_dev(0), "open hl0");
    CHECK_OK(d = export_fd(fd, 0x20000000, 2 * MB, 12345, O_RDWR |
                           O_CLOEXEC), "physical, offset ignored");
    close(d);
    CHECK_ERR(export_fd(fd, 0x20000000, 100, 0, O_RDWR), EINVAL,
              "less than a page");
    CHECK_ERR(export_fd(fd, 0x20000800, 2 * MB, 0, O_RDWR), EINVAL,
              "misaligned");
    CHECK_ERR(export_fd(fd, 0, 0, 0, O_RDWR), EINVAL, "probe");
    close(fd);
}

/* the export probe of the module: EINVAL where export exists */
static void t_export_probe_accel(void)
{
    int fd;

    CHECK_OK(fd = open_dev(0), "open");
    CHECK_ERR(export_fd(fd, 0, 0, 0, O_RDWR | O_CLOEXEC), EINVAL, "probe");
    close(fd);
}

/* A user-owned PDMA channel (hlsim_pdma_copy): through the context's
 * MMU, both ways between host and DRAM mappings */
static void t_pdma_copy(void)
{
    int (*pdma)(int, uint64_t, uint64_t, uint64_t) = API(hlsim_pdma_copy);
    int      fd = open_dev(0), ctl = open_ctl(0);
    uint8_t *a = calloc(1, 2 * MB), *b = calloc(1, 2 * MB);
    uint64_t handle, dram, va_a, va_b, i;

    CHECK(fd >= 0 && ctl >= 0 && a && b, "setup");
    for (i = 0; i < 2 * MB; i++) {
        a[i] = (uint8_t)(i * 31 + 7);
    }
    CHECK_OK(mem_alloc(fd, 64 * MB, &handle), "alloc");
    CHECK_OK(map_dev(fd, handle, 0, 0, &dram), "map dram");
    CHECK_OK(map_host(fd, a, 2 * MB, &va_a), "map a");
    CHECK_OK(map_host(fd, b, 2 * MB, &va_b), "map b");
    CHECK(pdma(fd, dram + 4096, va_a, 2 * MB) == 0, "host -> dram");
    CHECK(pdma(fd, va_b, dram + 4096, 2 * MB) == 0, "dram -> host");
    CHECK(!memcmp(a, b, 2 * MB), "data differs");
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_DMA_BYTES, 0) == 4 * MB,
          "DMA bytes counted");
    CHECK(pdma(fd, va_b, dram + hw_ip(fd).u61.dram_page_size, 64) ==
          -EFAULT, "past the map");
    CHECK(pdma(fd, 0x1000, va_a, 64) == -EFAULT, "unmapped dst");
    CHECK(pdma(ctl, va_b, va_a, 64) == -EBADF, "control fd");
    CHECK(pdma(1, va_b, va_a, 64) == -EBADF, "not emulated");
    CHECK_OK(API(hlsim_fault_add)("pdma", 1, EIO), "fault");
    CHECK(pdma(fd, va_b, va_a, 64) == -EIO, "injected");
    CHECK_OK(API(hlsim_set_device_status)(0,
             GAUDI_HL_DEVICE_STATUS_IN_RESET), "reset");
    CHECK(pdma(fd, va_b, va_a, 64) == -EIO, "in reset");
}

/* Another device's driver attaching to a dma-buf (hlsim_dmabuf_attach,
 * the emulated NIC's way in): reads and writes the exporter's pages at
 * the dma-buf's offsets, refuses what is not a dma-buf of this node and
 * ranges past it, and holds the dma-buf while attached */
static void t_dmabuf_attach(void)
{
    int (*attach)(int, uint64_t*) = API(hlsim_dmabuf_attach);
    int (*access_)(int, uint64_t, void*, uint64_t, int) =
            API(hlsim_dmabuf_access);
    int (*detach)(int) = API(hlsim_dmabuf_detach);
    int      fd = open_dev(0), d, h, nul;
    uint8_t *a = calloc(1, 2 * MB), *b = calloc(1, 2 * MB);
    uint64_t handle, dram, va_a, va_b, size = 0, i;

    CHECK(fd >= 0 && a && b, "setup");
    for (i = 0; i < 2 * MB; i++) {
        a[i] = (uint8_t)(i * 13 + 5);
    }
    CHECK_OK(mem_alloc(fd, 64 * MB, &handle), "alloc");
    CHECK_OK(map_dev(fd, handle, 0, 0, &dram), "map dram");
    CHECK_OK(map_host(fd, a, 2 * MB, &va_a), "map a");
    CHECK_OK(map_host(fd, b, 2 * MB, &va_b), "map b");
    /* the dma-buf starts 1 MiB into the allocation */
    CHECK_OK(d = export_fd(fd, dram, 4 * MB, MB, O_RDWR | O_CLOEXEC),
             "export");
    CHECK_OK(h = attach(d, &size), "attach");
    CHECK(size == 4 * MB, "size %llu", (unsigned long long)size);
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_DMABUF_ATTACHMENTS, 0) == 1,
          "attachment counted");
    /* write through the attachment, read with the device's DMA */
    CHECK_OK(access_(h, 4096, a, 2 * MB, 1), "p2p write");
    CHECK(API(hlsim_pdma_copy)(fd, va_b, dram + MB + 4096, 2 * MB) == 0,
          "dram -> host");
    CHECK(!memcmp(a, b, 2 * MB), "written data differs");
    /* and the other way */
    memset(b, 0, 2 * MB);
    CHECK_OK(access_(h, 4096, b, 2 * MB, 0), "p2p read");
    CHECK(!memcmp(a, b, 2 * MB), "read data differs");
    CHECK(access_(h, 4 * MB - 4096, b, 8192, 0) == -EINVAL, "past the end");
    CHECK(access_(h + 1, 0, b, 1, 0) == -EBADF, "no such handle");
    nul = open("/dev/null", O_RDONLY);
    CHECK(attach(nul, &size) == -EINVAL, "not a dma-buf");
    CHECK(attach(fd, &size) == -EINVAL, "compute fd");
    close(nul);
    CHECK(attach(nul, &size) == -EBADF, "closed fd");
    CHECK(attach(-1, &size) == -EBADF, "fd -1");
    CHECK_OK(API(hlsim_fault_add)("dmabuf_attach", 1, EIO), "fault");
    CHECK(attach(d, &size) == -EIO, "injected");
    /* the attachment holds the dma-buf: the exporter's close leaves the
     * memory mapped (UNMAP refused) until the attachment goes */
    close(d);
    CHECK_ERR(unmap(fd, dram), EINVAL, "unmap while attached");
    CHECK_OK(detach(h), "detach");
    CHECK(detach(h) == -EBADF, "detach twice");
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_DMABUF_ATTACHMENTS, 0) == 0,
          "attachment released");
    CHECK_OK(unmap(fd, dram), "unmap after detach");
    free(a);
    free(b);
    close(fd);
}

/* ================= runner ================= */

/* ---- pinned pages (hlsim_pin.c): a DMA through a USERPTR mapping whose
 * host pages changed after MAP is a counted stale-pin DMA that leaves the
 * new pages alone ---- */

static int64_t stale_dmas(void)
{
    return API(hlsim_get_counter)(HLSIM_COUNTER_STALE_PIN_DMAS, 0);
}

static void pin_need_check(void)
{
    if (API(hlsim_pin_check_active)() != 1) {
        test_skip("stale-pin check off (/proc/self/pagemap frames need "
                  "root)");
    }
}

typedef struct {
    int      fd;
    hcb_t    cb;
    uint64_t dram;     /* 64 MiB of device memory, mapped */
    uint8_t *ref;      /* 1 MiB host buffer, mapped at ref_va */
    uint64_t ref_va;
} pin_env_t;

static pin_env_t pin_env(void)
{
    pin_env_t e;
    uint64_t  h;

    pin_need_check();
    CHECK_OK(e.fd = open_dev(0), "open");
    e.cb  = hcb_new(e.fd, 4096);
    e.ref = aligned_alloc(4096, MB);
    CHECK(e.ref != NULL, "alloc");
    fill(e.ref, MB, 3);
    CHECK_OK(mem_alloc(e.fd, 64 * MB, &h), "alloc");
    CHECK_OK(map_dev(e.fd, h, 0, 0, &e.dram), "map dram");
    CHECK_OK(map_host(e.fd, e.ref, MB, &e.ref_va), "map ref");
    return e;
}

/* a LIN_DMA on a user queue, or on Gaudi3 (no user queue) a PDMA copy */
static void pin_dma(pin_env_t *e, uint64_t src, uint64_t dst, uint32_t size)
{
    const char *asic   = getenv("HLSIM_ASIC");
    uint32_t    status = 0;

    if ((asic != NULL) && !strcmp(asic, "gaudi3")) {
        CHECK(API(hlsim_pdma_copy)(e->fd, dst, src, size) == 0, "PDMA");
        return;
    }

    CHECK_OK(g2_dma(e->fd, &e->cb, 0, src, dst, size, 0, &status), "DMA");
    CHECK(status == HL_WAIT_CS_STATUS_COMPLETED, "DMA status %u", status);
}

static int all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (p[i] != v) {
            return 0;
        }
    }
    return 1;
}

/* the poison a stale read delivers, from the DMA's first byte */
static int is_poison(const uint8_t *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (p[i] != (uint8_t)"STALEPIN"[i % 8]) {
            return 0;
        }
    }
    return 1;
}

/* munmap + mmap(MAP_FIXED) at the registered address: new pages */
static void t_pin_remap(void)
{
    pin_env_t e = pin_env();
    uint8_t  *buf, *out = aligned_alloc(4096, 8192);
    uint64_t  va, va2;

    buf = mmap(NULL, MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
               -1, 0);
    CHECK(buf != MAP_FAILED && out != NULL, "mmap");
    memset(buf, 0xAB, MB);
    CHECK_OK(map_host(e.fd, buf, MB, &va), "map");
    CHECK(stale_dmas() == 0, "no stale DMA yet");
    pin_dma(&e, e.ref_va, e.dram, MB);             /* DRAM <- ref */
    pin_dma(&e, e.dram, va, 4096);                 /* fresh pin: fine */
    CHECK(!memcmp(buf, e.ref, 4096), "data through a live pin");
    CHECK(stale_dmas() == 0, "live pins are not stale");
    CHECK(munmap(buf, MB) == 0, "munmap");
    CHECK(mmap(buf, MB, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == buf,
          "mmap fixed");
    /* a write through the stale pin leaves the new pages alone */
    pin_dma(&e, e.dram, va + 8192, 4096);
    CHECK(stale_dmas() == 1, "write counted: %lld",
          (long long)stale_dmas());
    CHECK(all_bytes(buf, MB, 0), "the new pages were written");
    /* a read through it delivers the poison, not the new pages */
    memset(buf, 0x11, MB);
    pin_dma(&e, va + 100, e.dram, 4096);
    CHECK(stale_dmas() == 2, "read counted");
    CHECK_OK(map_host(e.fd, out, 8192, &va2), "map out");
    pin_dma(&e, e.dram, va2, 4096);
    CHECK(is_poison(out, 4096), "the read delivered the new pages' data");
    CHECK(stale_dmas() == 2, "live pins are not stale");
    /* registered again: the new pages are pinned and get the data */
    CHECK_OK(unmap(e.fd, va), "unmap");
    CHECK_OK(map_host(e.fd, buf, MB, &va), "map again");
    pin_dma(&e, e.ref_va, va, 4096);
    CHECK(!memcmp(buf, e.ref, 4096) && all_bytes(buf + 4096, 4096, 0x11),
          "data through the new pin");
    CHECK(stale_dmas() == 2, "new pin not stale");
    CHECK_OK(unmap(e.fd, va), "unmap");
    CHECK(munmap(buf, MB) == 0, "munmap");
    close(e.fd);
}

/* madvise(MADV_DONTNEED) drops the pinned pages of part of the range:
 * the stale pages take nothing, the live ones the data */
static void t_pin_dontneed(void)
{
    pin_env_t e = pin_env();
    uint8_t  *buf = aligned_alloc(4096, 4 * 4096);
    uint64_t  va;

    CHECK(buf != NULL, "alloc");
    memset(buf, 0x22, 4 * 4096);
    CHECK_OK(map_host(e.fd, buf, 4 * 4096, &va), "map");
    pin_dma(&e, e.ref_va, e.dram, MB);
    /* not touched again: a page refaulted at once may get the freed
     * frame back, which no check of frames can tell (docs/hlsim.md) */
    CHECK(madvise(buf + 4096, 4096, MADV_DONTNEED) == 0, "madvise");
    pin_dma(&e, e.dram, va, 3 * 4096);
    CHECK(stale_dmas() == 1, "counted once per DMA: %lld",
          (long long)stale_dmas());
    CHECK(!memcmp(buf, e.ref, 4096) &&
          !memcmp(buf + 8192, e.ref + 8192, 4096), "live pages written");
    CHECK(all_bytes(buf + 4096, 4096, 0), "the new page was written");
    CHECK(all_bytes(buf + 3 * 4096, 4096, 0x22), "past the DMA");
    CHECK_OK(unmap(e.fd, va), "unmap");
    free(buf);
    close(e.fd);
}

/* The process's pinned memory (VmPin of /proc/self/status), KiB */
static long vm_pin_kb(void)
{
    char  line[256];
    long  kb = -1;
    FILE *f  = fopen("/proc/self/status", "r");

    while ((f != NULL) && (fgets(line, sizeof(line), f) != NULL)) {
        if (sscanf(line, "VmPin: %ld kB", &kb) == 1) {
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kb;
}

/* The pages of a USERPTR mapping are held as the driver holds them (a
 * long-term pin) from MAP to UNMAP, so the kernel cannot migrate them:
 * pinned memory grows by the range and comes back at UNMAP, and a full
 * compaction of memory makes no pinned page stale */
static void t_pin_held(void)
{
    pin_env_t e = pin_env();
    uint8_t  *buf;
    uint64_t  va;
    long      before, held;
    int       fd;

    buf = mmap(NULL, MB, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(buf != MAP_FAILED, "mmap");
    memset(buf, 0x5A, MB);
    before = vm_pin_kb();
    CHECK(before >= 0, "VmPin readable");
    CHECK_OK(map_host(e.fd, buf, MB, &va), "map");
    held = vm_pin_kb();
    CHECK(held - before == MB / 1024, "pinned at MAP: %ld KiB more",
          held - before);
    fd = open("/proc/sys/vm/compact_memory", O_WRONLY);
    if (fd >= 0) {                       /* moves every movable page */
        CHECK(write(fd, "1", 1) == 1, "compact");
        close(fd);
    }
    pin_dma(&e, e.ref_va, e.dram, MB);
    pin_dma(&e, e.dram, va, MB);
    CHECK(stale_dmas() == 0, "no pinned page moved: %lld stale",
          (long long)stale_dmas());
    CHECK(!memcmp(buf, e.ref, MB), "data through the held pages");
    CHECK_OK(unmap(e.fd, va), "unmap");
    CHECK(vm_pin_kb() == before, "unpinned at UNMAP: %ld KiB",
          vm_pin_kb());
    CHECK(munmap(buf, MB) == 0, "munmap");
    close(e.fd);
}

/* mremap moves the pinned pages away: the old range is empty (a DMA there
 * is stale, not an emulator crash), a new mapping there is not pinned */
static void t_pin_mremap(void)
{
    pin_env_t e = pin_env();
    uint8_t  *buf, *dst, *moved;
    uint64_t  va;

    buf = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    dst = mmap(NULL, 4 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(buf != MAP_FAILED && dst != MAP_FAILED, "mmap");
    memset(buf, 0x44, 4 * 4096);
    CHECK_OK(map_host(e.fd, buf, 4 * 4096, &va), "map");
    pin_dma(&e, e.ref_va, e.dram, MB);
    moved = mremap(buf, 4 * 4096, 4 * 4096, MREMAP_MAYMOVE | MREMAP_FIXED,
                   dst);
    CHECK(moved == dst, "mremap");
    pin_dma(&e, e.dram, va, 4096);          /* the range is unmapped */
    CHECK(stale_dmas() == 1, "unmapped range counted");
    CHECK(all_bytes(moved, 4 * 4096, 0x44), "moved pages kept");
    CHECK(mmap(buf, 4 * 4096, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == buf,
          "mmap fixed");
    pin_dma(&e, e.dram, va + 4096, 2 * 4096);
    CHECK(stale_dmas() == 2, "remapped range counted");
    CHECK(all_bytes(buf, 4 * 4096, 0), "the new pages were written");
    /* PDMA copies are checked too */
    CHECK(API(hlsim_pdma_copy)(e.fd, va, e.dram, 4096) == 0, "pdma");
    CHECK(stale_dmas() == 3, "PDMA counted");
    CHECK(all_bytes(buf, 4096, 0), "PDMA wrote the new pages");
    CHECK_OK(unmap(e.fd, va), "unmap");
    munmap(buf, 4 * 4096);
    munmap(moved, 4 * 4096);
    close(e.fd);
}

/* No false alarms: free/malloc reuse of the same pages, a write after
 * fork() (copy-on-write in the parent: the kernel gives pinned pages to
 * the child as copies instead), a page written after MAP */
static void t_pin_no_false_stale(void)
{
    pin_env_t e = pin_env();
    uint8_t  *buf = aligned_alloc(4096, 8 * 4096);
    uint64_t  va;
    pid_t     pid;
    int       st;

    CHECK(buf != NULL, "alloc");
    CHECK_OK(map_host(e.fd, buf, 8 * 4096, &va), "map");
    pin_dma(&e, e.ref_va, e.dram, MB);
    pid = fork();
    if (pid == 0) {
        _exit(0);
    }
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork");
    memset(buf, 0x55, 8 * 4096);                   /* after the fork */
    pin_dma(&e, e.dram, va, 8 * 4096);
    CHECK(!memcmp(buf, e.ref, 8 * 4096), "data after fork");
    pin_dma(&e, va, e.dram + MB, 8 * 4096);
    CHECK(stale_dmas() == 0, "false stale pin: %lld",
          (long long)stale_dmas());
    CHECK_OK(unmap(e.fd, va), "unmap");
    close(e.fd);
}

/*
 * 32,768 host mappings: MAP, a DMA through the last one and UNMAP stay
 * fast (the mappings are indexed by VA, not scanned)
 */
static void t_map_many(void)
{
    const unsigned n = 32768;
    pin_env_t      e;
    uint8_t       *buf;
    uint64_t      *va = calloc(n, sizeof(*va)), t0;
    unsigned       i;

    memset(&e, 0, sizeof(e));
    CHECK_OK(e.fd = open_dev(0), "open");
    e.cb = hcb_new(e.fd, 4096);
    buf  = mmap(NULL, (size_t)n * 4096, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(buf != MAP_FAILED && va != NULL, "mmap");
    t0 = now_ns();
    for (i = 0; i < n; i++) {
        CHECK_OK(map_host(e.fd, buf + (size_t)i * 4096, 4096, &va[i]),
                 "map");
    }
    buf[(size_t)(n - 1) * 4096] = 0x66;
    pin_dma(&e, va[n - 1], va[0], 64);
    CHECK(buf[0] == 0x66, "data through the last mapping");
    for (i = 0; i < n; i++) {
        CHECK_OK(unmap(e.fd, va[n - 1 - i / 2 - (i % 2) * (n / 2)]),
                 "unmap");
    }
    t0 = now_ns() - t0;
    printf("map_many: %u MAP + UNMAP in %.2f s\n", n, t0 / 1e9);
    CHECK(t0 < 20 * 1000000000ULL, "%u MAP + UNMAP took %.1f s", n,
          t0 / 1e9);
    CHECK(API(hlsim_get_counter)(HLSIM_COUNTER_MAPPINGS, 0) == 1,
          "only the CB's mapping left");
    munmap(buf, (size_t)n * 4096);
    free(va);
    close(e.fd);
}

static const test_t tests[] = {
    { "nodes_accel", t_nodes_accel, "" },
    { "nodes_legacy", t_nodes_legacy, "HLSIM_NODES=legacy" },
    { "sysfs_values", t_sysfs_values, "HLSIM_MODULE_IDS=5,3" },
    { "sysfs_upstream", t_sysfs_upstream, "HLSIM_FLAVOUR=upstream" },
    { "sysfs_nodrm", t_sysfs_nodrm, "HLSIM_DRM=0" },
    { "sysfs_numa", t_sysfs_numa,
      "HLSIM_NUM_DEVICES=3 HLSIM_NUMA_NODE=0,1" },
    { "sysfs_types", t_sysfs_types,
      "HLSIM_NUM_DEVICES=3 HLSIM_ASIC_1=gaudi1 HLSIM_ASIC_2=gaudi3" },
    { "eight_devices", t_eight_devices, "HLSIM_NUM_DEVICES=8" },
    { "info_hw_ip", t_info_hw_ip, "" },
    { "info_models", t_info_models,
      "HLSIM_NUM_DEVICES=3 HLSIM_ASIC_1=gaudi1 HLSIM_ASIC_2=gaudi3" },
    { "info_errors", t_info_errors, "" },
    { "info_ops", t_info_ops, "" },
    { "control_node", t_control_node, "" },
    { "drm_version", t_drm_version, "" },
    { "drm_version_upstream", t_drm_version_upstream,
      "HLSIM_FLAVOUR=upstream" },
    { "drm_version_legacy", t_drm_version_legacy, "HLSIM_NODES=legacy" },
    { "drm_version_nodrm", t_drm_version_nodrm, "HLSIM_DRM=0" },
    { "drm_version_nodrm_upstream", t_drm_version_nodrm_upstream,
      "HLSIM_DRM=0 HLSIM_FLAVOUR=upstream" },
    { "size_tolerant", t_size_tolerant, "" },
    { "excl_same_process", t_excl_same_process, "" },
    { "excl_other_process", t_excl_other_process, "" },
    { "status_open", t_status_open, "" },
    { "reset_timer", t_reset_timer, "" },
    { "release_reset", t_release_reset_default, "HLSIM_RELEASE_RESET_MS=100" },
    { "close_during_reset", t_close_during_reset,
      "HLSIM_RELEASE_RESET_MS=300" },
    { "release_reset_default", t_release_reset_default,
      "HLSIM_RELEASE_RESET_MS=" },
    { "release_reset_gaudi3", t_release_reset_default,
      "HLSIM_RELEASE_RESET_MS= HLSIM_ASIC=gaudi3" },
    { "release_reset_gaudi1", t_release_reset_default,
      "HLSIM_RELEASE_RESET_MS= HLSIM_ASIC=gaudi1" },
    { "mem_alloc_free", t_mem_alloc_free, "" },
    /* a power-of-two page: VA blocks of whole 1 GiB DMMU pages, which
     * the real 768 MiB page (dram_page_768m) does not have */
    { "mem_map_device", t_mem_map_device, "HLSIM_DRAM_PAGE_SIZE=64M" },
    { "mem_map_host", t_mem_map_host, "" },
    { "mem_gaudi1", t_mem_gaudi1, "HLSIM_ASIC=gaudi1" },
    { "mem_gaudi3", t_mem_gaudi3, "HLSIM_ASIC=gaudi3" },
    { "mem_export", t_mem_export, "" },
    { "export_gaudi1", t_export_gaudi1, "HLSIM_ASIC=gaudi1" },
    { "dmabuf_other_process", t_dmabuf_other_process, "" },
    { "close_frees", t_close_frees, "" },
    { "faults_env", t_faults_env,
      "HLSIM_FAULTS=open:1:EIO,mem_alloc:2:ENOMEM,mem_free:1:123" },
    { "faults_api", t_faults_api, "" },
    { "fork", t_fork, "" },
    { "cb_basic", t_cb_basic, "" },
    { "cb_gaudi1_map", t_cb_gaudi1_map, "HLSIM_ASIC=gaudi1" },
    { "cb_raw_mmap", t_cb_raw_mmap, "HLSIM_ASIC=gaudi1" },
    { "cb_syscall_mmap", t_cb_syscall_mmap, "" },
    { "cb_mmap_len", t_cb_mmap_len, "" },
    { "cb_vmas", t_cb_vmas, "" },
    { "cb_vmas_legacy", t_cb_vmas, "HLSIM_NODES=legacy" },
    { "cb_vmas_memfd", t_cb_vmas_memfd, "" },
    { "fork_cb", t_fork_cb, "" },
    { "compute_fd_node", t_compute_fd_node, "" },
    { "compute_fd_node_legacy", t_compute_fd_node, "HLSIM_NODES=legacy" },
    { "dma_gaudi2", t_dma_gaudi2, "" },
    { "dma_gaudi1", t_dma_gaudi1, "HLSIM_ASIC=gaudi1" },
    { "cs_errors", t_cs_errors, "" },
    { "cs_gaudi3", t_cs_gaudi3, "HLSIM_ASIC=gaudi3" },
    { "cs_inflight", t_cs_inflight, "HLSIM_DMA_GBPS=0.001" },
    { "engine_order", t_engine_order, "" },
    { "poll_in_flight", t_poll_in_flight, "" },
    { "engine_clock_off", t_engine_clock, "" },
    { "engine_clock", t_engine_clock, "HLSIM_ENGINE_CLOCK=1" },
    { "engine_clock_model", t_engine_clock,
      "HLSIM_ENGINE_CLOCK=1 HLSIM_DMA_GBPS=1" },
    { "engine_streams", t_engine_streams, "HLSIM_DMA_GBPS=1" },
    { "engine_streams_gaudi1", t_engine_streams,
      "HLSIM_DMA_GBPS=1 HLSIM_ASIC=gaudi1" },
    { "wait_errors", t_wait_errors, "HLSIM_RESET_ON_LOCKUP=0" },
    { "wait_errors_upstream", t_wait_errors,
      "HLSIM_RESET_ON_LOCKUP=0 HLSIM_FLAVOUR=upstream" },
    { "wait_errors_linux61", t_wait_errors,
      "HLSIM_RESET_ON_LOCKUP=0 HLSIM_NODES=legacy" },
    { "wait_old_outcome", t_wait_old_outcome, "HLSIM_RESET_ON_LOCKUP=0" },
    { "dram_page_768m", t_dram_page_768m, "" },
    { "va_best_fit", t_va_best_fit, "" },
    { "hard_reset_dma_error", t_hard_reset, "HLSIM_TEST_FAULT=dma_error" },
    { "hard_reset_cs_timeout", t_hard_reset, "HLSIM_TEST_FAULT=cs_timeout" },
    { "hard_reset_fault", t_hard_reset, "HLSIM_TEST_FAULT=reset" },
    { "hard_reset_api", t_hard_reset, "HLSIM_TEST_FAULT=api" },
    { "hard_reset_gaudi1", t_hard_reset,
      "HLSIM_TEST_FAULT=cs_timeout HLSIM_ASIC=gaudi1" },
    { "page_fault_reset", t_engine_fault,
      "HLSIM_TEST_FAULT=page_fault HLSIM_TEST_EXPECT=reset" },
    { "page_fault_reset_aborted", t_engine_fault,
      "HLSIM_TEST_FAULT=page_fault HLSIM_TEST_EXPECT=reset "
      "HLSIM_PAGE_FAULT_CS=aborted" },
    { "page_fault_reset_gaudi1", t_engine_fault,
      "HLSIM_TEST_FAULT=page_fault HLSIM_TEST_EXPECT=reset HLSIM_ASIC=gaudi1" },
    { "page_fault_upstream", t_engine_fault, "HLSIM_FLAVOUR=upstream "
      "HLSIM_TEST_FAULT=page_fault HLSIM_TEST_EXPECT=reset" },
    { "page_fault_linux61", t_engine_fault, "HLSIM_NODES=legacy "
      "HLSIM_PAGE_FAULT=drop HLSIM_TEST_FAULT=page_fault "
      "HLSIM_TEST_EXPECT=reset" },
    { "page_fault_stall", t_engine_fault, "HLSIM_PAGE_FAULT=stall "
      "HLSIM_TIMEOUT_LOCKED=1 HLSIM_TEST_FAULT=page_fault "
      "HLSIM_TEST_EXPECT=stall" },
    { "page_fault_drop", t_page_fault_drop, "HLSIM_PAGE_FAULT=drop" },
    { "notify_after", t_notify, "HLSIM_PAGE_FAULT=drop" },
    { "notify_before", t_notify,
      "HLSIM_PAGE_FAULT=drop HLSIM_PAGE_FAULT_EVENT=before" },
    { "notify_upstream", t_notify,
      "HLSIM_PAGE_FAULT=drop HLSIM_FLAVOUR=upstream" },
    { "notify_linux61", t_notify, "HLSIM_NODES=legacy" },
    { "dma_error_gaudi1", t_engine_fault, "HLSIM_ASIC=gaudi1 "
      "HLSIM_TIMEOUT_LOCKED=1 HLSIM_TEST_FAULT=dma_error "
      "HLSIM_TEST_EXPECT=stall" },
    { "dma_error_gaudi1_linux61", t_engine_fault, "HLSIM_ASIC=gaudi1 "
      "HLSIM_NODES=legacy HLSIM_TIMEOUT_LOCKED=1 HLSIM_TEST_FAULT=dma_error "
      "HLSIM_TEST_EXPECT=stall" },
    { "dma_error_gaudi2_linux61", t_engine_fault, "HLSIM_NODES=legacy "
      "HLSIM_TIMEOUT_LOCKED=1 HLSIM_TEST_FAULT=dma_error "
      "HLSIM_TEST_EXPECT=stall" },
    { "dma_error_gaudi2", t_engine_fault,
      "HLSIM_TEST_FAULT=dma_error HLSIM_TEST_EXPECT=reset" },
    { "engine_model_clock", t_engine_model_clock,
      "HLSIM_DMA_GBPS=0.01 HLSIM_DMA_JOB_NS=1000" },
    { "pin_errnos", t_pin_errnos, "" },
    { "pin_errnos_linux61", t_pin_errnos, "HLSIM_NODES=legacy" },
    { "close_inflight", t_close_inflight, "HLSIM_DMA_GBPS=0.002" },
    { "close_inflight_gaudi1", t_close_inflight,
      "HLSIM_DMA_GBPS=0.002 HLSIM_ASIC=gaudi1" },
    { "close_inflight_linux61", t_close_inflight,
      "HLSIM_DMA_GBPS=0.002 HLSIM_NODES=legacy" },
    { "close_cb_mapped", t_close_cb_mapped, "HLSIM_ASIC=gaudi1" },
    { "close_cb_mapped_linux61", t_close_cb_mapped,
      "HLSIM_ASIC=gaudi1 HLSIM_NODES=legacy" },
    { "dma_bandwidth", t_dma_bandwidth, "HLSIM_DMA_GBPS=0.02" },
    { "op99_two_processes", t_op99_two_processes, "HLSIM_PAGE_FAULT=drop" },
    { "op99_upstream", t_op99_upstream, "HLSIM_FLAVOUR=upstream" },
    { "op99_bad_fd", t_op99_bad_fd, "" },
    { "op99_other_node", t_op99_other_node, "" },
    { "two_nodes_boot_id", t_two_nodes_boot_id, "" },
    { "exporter_lifetime", t_exporter_lifetime, "" },
    { "exporter_held_gaudi1", t_exporter_held_gaudi1, "HLSIM_ASIC=gaudi1" },
    { "exporter_held_gaudi1_linux61", t_exporter_held_gaudi1,
      "HLSIM_ASIC=gaudi1 HLSIM_NODES=legacy" },
    { "exporter_open_stats", t_exporter_open_stats, "HLSIM_ASIC=gaudi1" },
    { "exporter_open_stats_linux61", t_exporter_open_stats,
      "HLSIM_ASIC=gaudi1 HLSIM_NODES=legacy" },
    { "control_probe_order", t_control_probe_order, "HLSIM_ACCEL_BASE=1" },
    { "pin_shared_file", t_pin_shared_file, "" },
    { "export_bar", t_export_bar, "HLSIM_DRAM_BAR_SIZE=2G" },
    { "export_bar_gaudi1", t_export_bar,
      "HLSIM_DRAM_BAR_SIZE=1G HLSIM_ASIC=gaudi1" },
    { "pin_shared_file_linux61", t_pin_shared_file, "HLSIM_NODES=legacy" },
    { "export_linux61_gaudi2", t_export_linux61_gaudi2, "HLSIM_NODES=legacy" },
    { "export_linux61_gaudi1", t_export_linux61_gaudi1,
      "HLSIM_NODES=legacy HLSIM_ASIC=gaudi1" },
    { "export_probe_accel", t_export_probe_accel, "" },
    { "export_probe_upstream", t_export_probe_accel, "HLSIM_FLAVOUR=upstream" },
    { "pdma_copy", t_pdma_copy, "" },
    { "pdma_copy_gaudi3", t_pdma_copy, "HLSIM_ASIC=gaudi3" },
    { "dmabuf_attach", t_dmabuf_attach, "" },
    { "pin_remap", t_pin_remap, "" },
    { "pin_remap_gaudi3", t_pin_remap, "HLSIM_ASIC=gaudi3" },
    { "pin_remap_linux61", t_pin_remap, "HLSIM_NODES=legacy" },
    { "pin_dontneed", t_pin_dontneed, "" },
    { "pin_mremap", t_pin_mremap, "" },
    { "pin_no_false_stale", t_pin_no_false_stale, "" },
    { "pin_held", t_pin_held, "" },
    { "map_many", t_map_many, "" },
};

/* a fresh node: the defaults unless the test says otherwise; most tests
 * reopen a device at once: no release reset unless the test asks */
static const char *const test_unset[] = {
    "HLSIM_NUM_DEVICES", "HLSIM_ASIC", "HLSIM_FAULTS", "HLSIM_NODES",
    "HLSIM_FLAVOUR", "HLSIM_MODULE_IDS", "HLSIM_NUMA_NODE", "HLSIM_DRM",
    "HLSIM_HBM_SIZE", "HLSIM_DRAM_PAGE_SIZE", "HLSIM_DMA_GBPS",
    "HLSIM_ENGINE_CLOCK", "HLSIM_TOTALS_FILE", "HLSIM_TOTALS",
    "HLSIM_PAGE_FAULT_CS", "HLSIM_PAGE_FAULT_EVENT",
    "HLSIM_PAGE_FAULT_EVENT_US", NULL
};

static const test_env_t test_env = {test_unset, "HLSIM_RELEASE_RESET_MS=0"};

int main(int argc, char **argv)
{
    char        base[64] = "/dev/shm/hlsim-test-XXXXXX";
    struct statfs sfs;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (dlsym(RTLD_DEFAULT, "hlsim_fault_add") == NULL) {
        fprintf(stderr, "test_hlsim: run with LD_PRELOAD=libhlsim.so\n");
        return 2;
    }
    /* tmpfs roots let CBs be mapped by raw syscalls (cb_raw_mmap) */
    if (statfs("/dev/shm", &sfs) || (sfs.f_type != 0x01021994) ||
        access("/dev/shm", W_OK)) {
        snprintf(base, sizeof(base), "/tmp/hlsim-test-XXXXXX");
    }
    return test_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv,
                     base, &test_env);
}

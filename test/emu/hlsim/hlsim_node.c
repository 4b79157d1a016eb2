/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Node files, sysfs tree and the path redirection (facts 1.1-1.3).
 *
 * Layout under $HLSIM_ROOT (accel nodes; legacy in docs/hlsim.md):
 *   dev/accel/accelN, dev/accel/accel_controlDN      (empty regular files)
 *   sys/devices/pci0000:00/<BDF>/{pci_addr,module_id,device_type,status}
 *   sys/devices/pci0000:00/<BDF>/accel/accelN/{dev,device->BDF[,attrs]}
 *   sys/class/accel/accelN -> ../../devices/.../accel/accelN
 *   sys/dev/char/261:N -> ../../devices/.../accel/accelN
 *   hbm/devN (sparse, HBM size), locks, state, config
 *   proc/sys/kernel/random/boot_id                  (the node's boot id)
 */

#include "hlsim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/vfs.h>

/* The node's kernel identity, read by UCX as the system id */
#define HLSIM_BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"

static const char *hlsim_status_str[] = {
    "operational", "in reset", "disabled", "needs reset",
    "in device creation", "in reset after device release"
};

static int hlsim_mkdirs(const char *path)
{
    char buf[4200], *p;

    snprintf(buf, sizeof(buf), "%s", path);
    for (p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0777) && (errno != EEXIST)) {
                return -errno;
            }
            *p = '/';
        }
    }
    if (mkdir(buf, 0777) && (errno != EEXIST)) {
        return -errno;
    }
    return 0;
}

/* Write a whole small file atomically (readers never see it empty) */
static int hlsim_write_file(const char *path, const char *content)
{
    char tmp[4300];
    int  fd, len = strlen(content);

    snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
    fd = hlsim_real.open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                         0444);
    if (fd < 0) {
        return -errno;
    }
    if (write(fd, content, len) != len) {
        hlsim_real.close(fd);
        unlink(tmp);
        return -EIO;
    }
    hlsim_real.close(fd);
    return rename(tmp, path) ? -errno : 0;
}

static void hlsim_bdf(int dev, char *buf, size_t len)
{
    snprintf(buf, len, "0000:%02x:00.0", hlsim_cfg.dev[dev].bus);
}

static const char *hlsim_device_type(int dev)
{
    switch (hlsim_cfg.dev[dev].asic) {
    case HLSIM_GAUDI1: return "GAUDI";
    case HLSIM_GAUDI2: return "GAUDI2";
    default:           return "GAUDI3";
    }
}

/* The directories that carry the device attributes */
static int hlsim_attr_dirs(int dev, char dirs[2][4200])
{
    const char *r = hlsim_cfg.root;
    char        bdf[32];

    hlsim_bdf(dev, bdf, sizeof(bdf));
    if (hlsim_cfg.legacy) {
        snprintf(dirs[0], 4200, "%s/sys/devices/pci0000:00/%s/habanalabs/hl%d",
                 r, bdf, dev);
        return 1;
    }
    snprintf(dirs[0], 4200, "%s/sys/devices/pci0000:00/%s", r, bdf);
    /* on the PCI device only (K612 common/sysfs.c:528, hdev->dev is the
     * PCI device: habanalabs_drv.c:462), also in Habana's DRM build; only
     * its build without DRM accel adds them to the accel device too
     * (facts 1.1) */
    if (!hlsim_cfg.habana || !hlsim_cfg.no_drm) {
        return 1;
    }
    snprintf(dirs[1], 4200, "%s/sys/devices/pci0000:00/%s/accel/accel%d",
             r, bdf, hlsim_accel_idx(dev));
    return 2;
}

void hlsim_node_write_status(int dev, unsigned status)
{
    char dirs[2][4200], path[8500], val[64];
    int  n, i;

    n = hlsim_attr_dirs(dev, dirs);
    snprintf(val, sizeof(val), "%s\n",
             status < 6 ? hlsim_status_str[status] : "unknown");
    for (i = 0; i < n; i++) {
        snprintf(path, sizeof(path), "%s/status", dirs[i]);
        hlsim_write_file(path, val);
    }
}

static int hlsim_put(const char *dir, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int hlsim_put(const char *dir, const char *name, const char *fmt, ...)
{
    char    path[4300], val[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(val, sizeof(val), fmt, ap);
    va_end(ap);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return hlsim_write_file(path, val);
}

static int hlsim_link(const char *target, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int hlsim_link(const char *target, const char *fmt, ...)
{
    char    path[4300];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    unlink(path);
    return symlink(target, path) ? -errno : 0;
}

static int hlsim_touch(const char *fmt, int dev)
{
    char path[4300], name[64];
    int  fd;

    snprintf(name, sizeof(name), fmt, dev);
    snprintf(path, sizeof(path), "%s%s", hlsim_cfg.root, name);
    fd = hlsim_real.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        return -errno;
    }
    hlsim_real.close(fd);
    return 0;
}

/* On tmpfs, the compute node file is the CB store (HLSIM_CB_FILE_END) */
static void hlsim_cb_file(const char *fmt, int dev)
{
    char          path[4300], name[64];
    struct statfs sfs;
    int           fd;

    snprintf(name, sizeof(name), fmt, dev);
    snprintf(path, sizeof(path), "%s%s", hlsim_cfg.root, name);
    fd = hlsim_real.open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    if (!fstatfs(fd, &sfs) && (sfs.f_type == HLSIM_TMPFS_MAGIC)) {
        (void)ftruncate(fd, HLSIM_CB_FILE_END);
    }
    hlsim_real.close(fd);
}

static int hlsim_attrs(const char *dir, int dev)
{
    char bdf[32];
    int  rc = 0;

    hlsim_bdf(dev, bdf, sizeof(bdf));
    rc |= hlsim_put(dir, "pci_addr", "%s\n", bdf);
    rc |= hlsim_put(dir, "module_id", "%u\n", hlsim_cfg.dev[dev].module_id);
    rc |= hlsim_put(dir, "device_type", "%s\n", hlsim_device_type(dev));
    rc |= hlsim_put(dir, "status", "%s\n", hlsim_status_str[0]);
    return rc;
}

static int hlsim_node_create_dev(int dev)
{
    const char *r = hlsim_cfg.root;
    char        pci[4200], d[4300], bdf[32], hbm[4200], up[64];
    int         rc = 0, fd;

    hlsim_bdf(dev, bdf, sizeof(bdf));
    snprintf(up, sizeof(up), "../../../%s", bdf);
    snprintf(pci, sizeof(pci), "%s/sys/devices/pci0000:00/%s", r, bdf);
    if (hlsim_mkdirs(pci)) {
        return -errno;
    }
    /* the PCI bus view that UCX's topology resolves with realpath() */
    snprintf(d, sizeof(d), "%s/sys/bus/pci/devices", r);
    rc |= hlsim_mkdirs(d);
    snprintf(d, sizeof(d), "../../../devices/pci0000:00/%s", bdf);
    rc |= hlsim_link(d, "%s/sys/bus/pci/devices/%s", r, bdf);
    rc |= hlsim_put(pci, "numa_node", "%d\n", hlsim_cfg.dev[dev].numa_node);
    rc |= hlsim_put(pci, "vendor", "0x1da3\n");
    /* PCI resources: the DRAM BAR is BAR 4 on Gaudi1/2 (K612
     * include/gaudi/gaudi.h:13, include/gaudi2/gaudi2.h:13) */
    {
        uint64_t start = (uint64_t)(dev + 1) << 44;
        uint64_t end   = start + hlsim_dram_bar_size(dev) - 1;
        const char *z  = "0x0000000000000000 0x0000000000000000 "
                         "0x0000000000000000\n";

        rc |= hlsim_put(pci, "resource", "%s%s%s%s0x%016llx 0x%016llx "
                        "0x000000000014220c\n%s%s", z, z, z, z,
                        (unsigned long long)start, (unsigned long long)end,
                        z, z);
    }
    rc |= hlsim_put(pci, "device", "0x%04x\n",
                    hlsim_cfg.dev[dev].device_id);
    if (hlsim_cfg.legacy) {
        rc |= hlsim_touch("/dev/hl%d", dev);
        hlsim_cb_file("/dev/hl%d", dev);
        rc |= hlsim_touch("/dev/hl_controlD%d", dev);
        snprintf(d, sizeof(d), "%s/habanalabs/hl%d", pci, dev);
        rc |= hlsim_mkdirs(d);
        rc |= hlsim_attrs(d, dev);
        rc |= hlsim_put(d, "dev", "%d:%d\n", HLSIM_LEGACY_MAJOR, 2 * dev);
        rc |= hlsim_link(up, "%s/device", d);
        rc |= hlsim_link(d, "%s/sys/class/habanalabs/hl%d",
                         r, dev);
        snprintf(d, sizeof(d), "%s/habanalabs/hl_controlD%d", pci, dev);
        rc |= hlsim_mkdirs(d);
        rc |= hlsim_put(d, "dev", "%d:%d\n", HLSIM_LEGACY_MAJOR,
                        2 * dev + 1);
        rc |= hlsim_link(up, "%s/device", d);
        rc |= hlsim_link(d, "%s/sys/class/habanalabs/hl_controlD%d", r, dev);
        rc |= hlsim_link(d, "%s/sys/dev/char/%d:%d", r, HLSIM_LEGACY_MAJOR,
                         2 * dev + 1);
        snprintf(d, sizeof(d), "%s/habanalabs/hl%d", pci, dev);
        rc |= hlsim_link(d, "%s/sys/dev/char/%d:%d", r, HLSIM_LEGACY_MAJOR,
                         2 * dev);
    } else {
        int idx = hlsim_accel_idx(dev);

        rc |= hlsim_touch("/dev/accel/accel%d", idx);
        hlsim_cb_file("/dev/accel/accel%d", idx);
        rc |= hlsim_touch("/dev/accel/accel_controlD%d", idx);
        rc |= hlsim_attrs(pci, dev);
        snprintf(d, sizeof(d), "%s/accel/accel%d", pci, idx);
        rc |= hlsim_mkdirs(d);
        if (hlsim_cfg.habana && hlsim_cfg.no_drm) {
            rc |= hlsim_attrs(d, dev);
        }
        rc |= hlsim_put(d, "dev", "%d:%d\n", HLSIM_ACCEL_MAJOR, idx);
        rc |= hlsim_link(up, "%s/device", d);
        rc |= hlsim_link(d, "%s/sys/class/accel/accel%d", r, idx);
        rc |= hlsim_link(d, "%s/sys/dev/char/%d:%d", r, HLSIM_ACCEL_MAJOR,
                         idx);
        snprintf(d, sizeof(d), "%s/accel/accel_controlD%d", pci, idx);
        rc |= hlsim_mkdirs(d);
        rc |= hlsim_put(d, "dev", "%d:%d\n", HLSIM_CTL_MAJOR, idx);
        rc |= hlsim_link(up, "%s/device", d);
        rc |= hlsim_link(d, "%s/sys/class/accel/accel_controlD%d", r, idx);
        rc |= hlsim_link(d, "%s/sys/dev/char/%d:%d", r, HLSIM_CTL_MAJOR,
                         idx);
    }
    /* Sparse HBM backing file shared by every process on this node */
    snprintf(hbm, sizeof(hbm), "%s/hbm/dev%d", r, dev);
    fd = hlsim_real.open(hbm, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if ((fd < 0) || ftruncate(fd, hlsim_cfg.dev[dev].hbm_size)) {
        rc = -1;
    }
    if (fd >= 0) {
        hlsim_real.close(fd);
    }
    return rc ? -EIO : 0;
}

/*
 * An emulated node is a machine of its own: it has its own boot id, a
 * random UUID drawn once per boot, shared by every process of that kernel
 * whatever its namespaces (drivers/char/random.c, proc_do_uuid). UCX takes
 * it as the system id (ucs/sys/uid.c), and shared-memory transports and
 * gaudi_ipc reach only processes of the same one. Called under the node
 * lock: created once, also in a root made by an older emulator.
 */
int hlsim_node_boot_id(void)
{
    char     path[4300], dir[4300], val[64];
    uint8_t  u[16];
    unsigned i;
    size_t   n;
    int      rc;

    snprintf(path, sizeof(path), "%s%s", hlsim_cfg.root, HLSIM_BOOT_ID_PATH);
    if (access(path, F_OK) == 0) {
        return 0;
    }
    for (n = 0; n < sizeof(u); ) {
        ssize_t r = getrandom(u + n, sizeof(u) - n, 0);

        if (r < 0) {
            return -errno;
        }
        n += r;
    }
    u[6] = (u[6] & 0x0f) | 0x40;   /* version 4, variant 1, as the kernel */
    u[8] = (u[8] & 0x3f) | 0x80;
    n    = 0;
    for (i = 0; i < sizeof(u); i++) {
        n += snprintf(val + n, sizeof(val) - n, "%s%02x",
                      ((i == 4) || (i == 6) || (i == 8) || (i == 10)) ?
                      "-" : "", u[i]);
    }
    snprintf(val + n, sizeof(val) - n, "\n");
    snprintf(dir, sizeof(dir), "%s/proc/sys/kernel/random", hlsim_cfg.root);
    rc = hlsim_mkdirs(dir);
    return rc ? rc : hlsim_write_file(path, val);
}

int hlsim_node_create(void)
{
    const char *r = hlsim_cfg.root;
    char        d[4200];
    int         i, rc = 0;

    snprintf(d, sizeof(d), "%s/%s", r,
             hlsim_cfg.legacy ? "dev" : "dev/accel");
    rc |= hlsim_mkdirs(d);
    snprintf(d, sizeof(d), "%s/%s", r,
             hlsim_cfg.legacy ? "sys/class/habanalabs" : "sys/class/accel");
    rc |= hlsim_mkdirs(d);
    snprintf(d, sizeof(d), "%s/sys/dev/char", r);
    rc |= hlsim_mkdirs(d);
    snprintf(d, sizeof(d), "%s/hbm", r);
    rc |= hlsim_mkdirs(d);
    snprintf(d, sizeof(d), "%s/dmabuf", r);
    rc |= hlsim_mkdirs(d);
    /*
     * The loaded module's taint flags: 'O' for a module built out of the
     * kernel tree (Linux 6.12 kernel/module/main.c:2241-2245, shown by
     * /sys/module/<name>/taint, :1002-1013, letters kernel/panic.c:560),
     * i.e. Habana's driver; nothing for the in-kernel one, a module on
     * Debian (CONFIG_DRM_ACCEL_HABANALABS=m)
     */
    snprintf(d, sizeof(d), "%s/sys/module/habanalabs", r);
    rc |= hlsim_mkdirs(d);
    rc |= hlsim_put(d, "taint", "%s\n", hlsim_cfg.habana ? "O" : "");
    for (i = 0; (rc == 0) && (i < hlsim_cfg.num_dev); i++) {
        rc = hlsim_node_create_dev(i);
    }
    if (rc) {
        hlsim_log("cannot create the node tree in %s", r);
        return -EIO;
    }
    return 0;
}

static int hlsim_prefix(const char *path, const char *pfx)
{
    size_t n = strlen(pfx);

    return !strncmp(path, pfx, n) && ((path[n] == '\0') || (path[n] == '/'));
}

/* Is @path one of the emulated trees? (cheap: first byte checks first) */
/* @p starts with the PCI address of an emulated device ("0000:BB:00.0") */
static int hlsim_emulated_bdf(const char *p)
{
    char bdf[32];
    int  dev;

    if (hlsim_init()) {
        return 0;
    }
    for (dev = 0; dev < hlsim_cfg.num_dev; dev++) {
        hlsim_bdf(dev, bdf, sizeof(bdf));
        if (!strncmp(p, bdf, strlen(bdf)) &&
            ((p[strlen(bdf)] == '\0') || (p[strlen(bdf)] == '/'))) {
            return 1;
        }
    }
    return 0;
}

static int hlsim_redirected(const char *path)
{
    unsigned maj;

    if ((path == NULL) || (path[0] != '/')) {
        return 0;
    }
    if (path[1] == 'p') {
        return !strcmp(path, HLSIM_BOOT_ID_PATH);
    }
    if (path[1] == 'd') {
        if (!strncmp(path, "/dev/hl", 7)) {
            return ((path[7] >= '0') && (path[7] <= '9')) ||
                   !strncmp(path + 7, "_control", 8);
        }
        return hlsim_prefix(path, "/dev/accel");
    }
    if ((path[1] != 's') || strncmp(path, "/sys/", 5)) {
        return 0;
    }
    if (!strncmp(path, "/sys/bus/pci/devices/", 21)) {
        return hlsim_emulated_bdf(path + 21);
    }
    if (hlsim_prefix(path, "/sys/class/accel") ||
        hlsim_prefix(path, "/sys/class/habanalabs") ||
        hlsim_prefix(path, "/sys/module/habanalabs")) {
        return 1;
    }
    /* only our majors: other char devices must stay real */
    return !strncmp(path, "/sys/dev/char/", 14) &&
           (sscanf(path + 14, "%u:", &maj) == 1) &&
           ((maj == HLSIM_ACCEL_MAJOR) || (maj == HLSIM_CTL_MAJOR) ||
            (maj == HLSIM_LEGACY_MAJOR));
}

const char *hlsim_redirect(const char *path, char *buf, size_t len)
{
    if (!hlsim_redirected(path)) {
        return path;
    }
    if (hlsim_init()) {
        return path;   /* the error was logged; behave like no emulator */
    }
    snprintf(buf, len, "%s%s", hlsim_cfg.root, path);
    return buf;
}

/*
 * Which emulated node does @path (original or already under the root)
 * name? Returns 1 and fills dev/kind if so.
 */
int hlsim_node_match(const char *path, int *dev, hlsim_fkind_t *kind)
{
    size_t rl;
    int    n = -1, d;

    if ((path == NULL) || (path[0] != '/')) {
        return 0;
    }
    if (!hlsim_redirected(path)) {
        rl = strlen(hlsim_root_path());
        if (strncmp(path, hlsim_root_path(), rl) || (path[rl] != '/')) {
            return 0;
        }
        path += rl;
        if (strncmp(path, "/dev/", 5)) {
            return 0;
        }
    }
    if (hlsim_init()) {
        return 0;
    }
    if (!hlsim_cfg.legacy) {
        if ((sscanf(path, "/dev/accel/accel_controlD%d%n", &d, &n) == 1) &&
            (path[n] == '\0')) {
            /*
             * Named by accel index, but open looks the device up by the
             * minor in the driver's probe-order IDR (K612 common/device.c:
             * 744-749 vs habanalabs_drv.c:285-293): device d, if any
             */
            *kind = HLSIM_F_CONTROL;
            if ((d < hlsim_accel_idx(0)) ||
                (d >= hlsim_accel_idx(hlsim_cfg.num_dev))) {
                return 0;   /* no such node */
            }
            *dev = (d < hlsim_cfg.num_dev) ? d : -1;   /* -1: ENXIO */
            return 1;
        } else if ((sscanf(path, "/dev/accel/accel%d%n", &d, &n) == 1) &&
                   (path[n] == '\0')) {
            *kind = HLSIM_F_COMPUTE;
            d    -= hlsim_accel_idx(0);
        } else {
            return 0;
        }
    } else {
        if ((sscanf(path, "/dev/hl_controlD%d%n", &d, &n) == 1) &&
            (path[n] == '\0')) {
            *kind = HLSIM_F_CONTROL;
        } else if ((sscanf(path, "/dev/hl%d%n", &d, &n) == 1) &&
                   (path[n] == '\0')) {
            *kind = HLSIM_F_COMPUTE;
        } else {
            return 0;
        }
    }
    if ((d < 0) || (d >= hlsim_cfg.num_dev)) {
        return 0;
    }
    *dev = d;
    return 1;
}

/*
 * Open an emulated node: returns a real fd on the node file (a new open
 * file description, which holds the exclusivity flock) or -errno.
 */
/*
 * Whether some open file description holds device @a dev's compute node.
 * The flock is the truth: a process that died without closing its fd
 * leaves the shared counters stale, while the kernel drops its lock.
 */
int hlsim_node_compute_held(int dev)
{
    char path[4300], name[64];
    int  fd, held;

    snprintf(name, sizeof(name),
             hlsim_cfg.legacy ? "/dev/hl%d" : "/dev/accel/accel%d",
             hlsim_accel_idx(dev));
    snprintf(path, sizeof(path), "%s%s", hlsim_cfg.root, name);
    fd = hlsim_real.open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }

    held = (flock(fd, LOCK_EX | LOCK_NB) != 0);
    hlsim_real.close(fd); /* drops the probe's own lock, if it got one */
    if (!held) {
        __atomic_store_n(&hlsim_shm->dev[dev].compute_active, 0,
                         __ATOMIC_RELEASE);
    }
    return held;
}

/*
 * A previous context lives on while its dma-bufs do (facts 4.1, 9.4).
 * accel/Habana: the dma-buf holds the exporter's file, so the device is
 * still in use: EBUSY (K612 common/memory.c:1877-1885,
 * habanalabs_drv.c:232-237). Linux 6.1: it holds only the context; once
 * the exporter closed its file, compute_ctx_in_release stays set until the
 * last dma-buf goes: EAGAIN (K61 common/memory.c:1751, 1787;
 * common/device.c:476; habanalabs_drv.c:182-188). While the exporter still
 * has the file open, the busy check answers first: EBUSY (:190-196).
 */
static int hlsim_dmabuf_busy_errno(int dev)
{
    if (hlsim_cfg.legacy && !hlsim_node_compute_held(dev)) {
        return -EAGAIN;
    }
    return -EBUSY;
}

int hlsim_open_node(int dev, hlsim_fkind_t kind, const char *rpath,
                    int flags, mode_t mode)
{
    hlsim_shdev_t *sd;
    hlsim_file_t  *f;
    unsigned       st;
    int            fd, err;

    if ((err = hlsim_fault_hit("open"))) {
        return -err;
    }
    if (dev < 0) {
        return -ENXIO;   /* control node of no device (facts 7.2) */
    }
    sd = &hlsim_shm->dev[dev];
    st = hlsim_dev_status(dev);
    if (kind == HLSIM_F_CONTROL) {
        /* only a disabled device refuses control opens (facts 1.2) */
        if (st == GAUDI_HL_DEVICE_STATUS_MALFUNCTION) {
            return -EPERM;
        }
    } else {
        /* DRM refuses O_EXCL on accel nodes (facts 1.5) */
        if (!hlsim_cfg.legacy && (flags & O_EXCL)) {
            return -EBUSY;
        }
        /* facts 7.1/7.2: status checks come before the busy check */
        if ((st == GAUDI_HL_DEVICE_STATUS_MALFUNCTION) ||
            (st == GAUDI_HL_DEVICE_STATUS_NEEDS_RESET)) {
            return -EPERM;
        }
        /* IN_DEVICE_CREATION is operational (K612 common/device.c:
         * 397-417, habanalabs_drv.c:202-214): the open goes on */
        if ((st == GAUDI_HL_DEVICE_STATUS_IN_RESET) ||
            (st == GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE) ||
            __atomic_load_n(&sd->in_release, __ATOMIC_ACQUIRE)) {
            return -EAGAIN;
        }
    }

    flags &= ~(O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_DIRECTORY |
               O_TMPFILE);
    if ((kind == HLSIM_F_COMPUTE) && hlsim_dmabufs_alive(dev)) {
        return hlsim_dmabuf_busy_errno(dev);
    }
    fd = hlsim_real.open(rpath, flags, mode);
    if (fd < 0) {
        return -errno;
    }
    if (kind == HLSIM_F_COMPUTE) {
        /* One compute context per device, system-wide, even within one
         * process: flock is per open file description (facts 7.1) */
        if (flock(fd, LOCK_EX | LOCK_NB)) {
            hlsim_real.close(fd);
            return -EBUSY;
        }
    }
    if (fd >= HLSIM_FD_MAX) {
        hlsim_real.close(fd);
        return -EMFILE;
    }

    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        hlsim_real.close(fd);
        return -ENOMEM;
    }
    f->kind   = kind;
    f->dev    = dev;
    f->refcnt = 1;
    f->accel  = !hlsim_cfg.legacy;
    if (kind == HLSIM_F_COMPUTE) {
        f->ctx = hlsim_ctx_create(dev, fd);
        if (f->ctx == NULL) {
            free(f);
            hlsim_real.close(fd);
            return -ENOMEM;
        }
        __atomic_store_n(&sd->compute_active, 1, __ATOMIC_RELEASE);
        __atomic_store_n(&sd->owner_pid, (int32_t)getpid(),
                         __ATOMIC_RELEASE);
        __atomic_add_fetch(&sd->open_counter, 1, __ATOMIC_ACQ_REL);
        hlsim_notify_open(dev);
        __atomic_store_n(&sd->last_open_ns, hlsim_now_ns(),
                         __ATOMIC_RELEASE);
    }
    hlsim_fd_install(fd, f);
    return fd;
}

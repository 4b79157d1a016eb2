/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Emulated libSynapse: initialisation, device acquisition and release,
 * device info. A device is acquired by opening its compute node through
 * the ordinary open()/ioctl() calls, so the habanalabs emulator (hlsim)
 * sees it like any other user: one compute context per device, EBUSY for
 * a second open anywhere. One device per process, its id always 0, and
 * the calls ignore the id they are given (docs/synapse.md).
 */

#include "synsim_int.h"

#include <errno.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>

synsim_global_t synsim;
pthread_mutex_t synsim_lock = PTHREAD_MUTEX_INITIALIZER;

void synsim_log(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "synsim: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* How SynapseAI reports a failed driver call */
synStatus synsim_errno_status(int err)
{
    switch (err) {
    case ENOMEM:
        return synOutOfDeviceMemory;
    case EBUSY:
    case EAGAIN:
    case EIO:
    case ENODEV:
        return synDeviceReset;
    case EFAULT:
    case EINVAL:
        return synInvalidArgument;
    default:
        return synFail;
    }
}

/* The process's device whatever @id says (syn_singleton.cpp:579-582,
 * 1484-1491) */
synsim_dev_t *synsim_dev_get(synDeviceId id)
{
    return synsim.dev.acquired ? &synsim.dev : NULL;
}

static int synsim_ioctl(const synsim_dev_t *d, unsigned long accel_req,
                        unsigned long legacy_req, void *arg)
{
    int rc;

    do {
        rc = ioctl(d->fd, d->accel ? accel_req : legacy_req, arg);
    } while ((rc < 0) && (errno == EINTR));
    return (rc < 0) ? errno : 0;
}

int synsim_hl_mem(const synsim_dev_t *d, union hl_mem_args *args)
{
    return synsim_ioctl(d, GAUDI_HL_DRM_IOCTL_MEMORY,
                        GAUDI_HL_LEGACY_IOCTL_MEMORY, args);
}

static int synsim_hw_ip(synsim_dev_t *d)
{
    struct hl_info_args args;

    memset(&args, 0, sizeof(args));
    memset(&d->hw_ip, 0, sizeof(d->hw_ip));
    args.op             = HL_INFO_HW_IP_INFO;
    args.return_pointer = (uintptr_t)&d->hw_ip;
    args.return_size    = sizeof(d->hw_ip);
    return synsim_ioctl(d, GAUDI_HL_DRM_IOCTL_INFO, GAUDI_HL_LEGACY_IOCTL_INFO,
                        &args);
}

static synDeviceType synsim_type(uint32_t pci_id)
{
    switch (pci_id) {
    case GAUDI_HL_PCI_ID_GAUDI1:
    case GAUDI_HL_PCI_ID_GAUDI1_SEC:
    case GAUDI_HL_PCI_ID_GAUDI1_HL2000M:
    case GAUDI_HL_PCI_ID_GAUDI1_HL2000M_SEC:
        return synDeviceGaudi;
    case GAUDI_HL_PCI_ID_GAUDI2:
    case GAUDI_HL_PCI_ID_GAUDI2_HL288:
        return synDeviceGaudi2;
    case GAUDI_HL_PCI_ID_GAUDI3:
    case GAUDI_HL_PCI_ID_GAUDI3_HL338:
        return synDeviceGaudi3;
    default:
        return synDeviceTypeInvalid;
    }
}

/* Accel (DRM) compute nodes, else the legacy ones */
static int synsim_accel_nodes(void)
{
    char path[64];

    snprintf(path, sizeof(path), GAUDI_HL_ACCEL_NODE_FMT, 0);
    return access(path, F_OK) == 0;
}

/* A sysfs attribute of node @n, "" if absent: under device/, else on the
 * class device itself, as the 6.1 misc driver has it (docs/driver-facts.md
 * 1.1, HLT src/libhlthunk.c:137-201) */
static void synsim_sysfs(int accel, int n, const char *attr, char *buf,
                         size_t len)
{
    char  path[128];
    FILE *f;

    snprintf(path, sizeof(path), accel ? GAUDI_HL_SYSFS_ACCEL_FMT
             "/device/%s" : GAUDI_HL_SYSFS_LEGACY_FMT "/device/%s", n, attr);
    buf[0] = '\0';
    f = fopen(path, "r");
    if (f == NULL) {
        snprintf(path, sizeof(path), accel ? GAUDI_HL_SYSFS_ACCEL_FMT "/%s" :
                 GAUDI_HL_SYSFS_LEGACY_FMT "/%s", n, attr);
        f = fopen(path, "r");
    }
    if (f == NULL) {
        return;
    }
    if (fgets(buf, len, f) == NULL) {
        buf[0] = '\0';
    }
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
}

/* Status of the device on control node @cfd (hlthunk_get_device_status_info):
 * 0 and *st, or -errno */
static int synsim_ctrl_status(int cfd, int accel, unsigned *st)
{
    struct hl_info_device_status info;
    struct hl_info_args          args;
    int                          rc;

    memset(&args, 0, sizeof(args));
    memset(&info, 0, sizeof(info));
    args.op             = HL_INFO_DEVICE_STATUS;
    args.return_pointer = (uintptr_t)&info;
    args.return_size    = sizeof(info);
    do {
        rc = ioctl(cfd, accel ? GAUDI_HL_DRM_IOCTL_INFO :
                   GAUDI_HL_LEGACY_IOCTL_INFO, &args);
    } while ((rc < 0) && (errno == EINTR));
    if (rc < 0) {
        return -errno;
    }
    *st = info.status;
    return 0;
}

/*
 * Wait on node @n's control node while the device is in reset, as
 * _waitForCloseComputeDevice does (osal_linux.cpp:1457-1505): polls every
 * 500 ms for up to c_waitTimForReleaseTriesSec while the status is
 * IN_RESET or IN_RESET_AFTER_DEVICE_RELEASE; any other status that is not
 * OPERATIONAL ends the wait at once as a failure
 * (physical_device.cpp:82-110). 0, or -1 (synFail, osal_linux.cpp:
 * 275-280: even "any device" gives up then).
 */
static int synsim_wait_operational(int n, int accel)
{
    char     path[64];
    unsigned st = GAUDI_HL_DEVICE_STATUS_OPERATIONAL;
    int      cfd, rc, waited_ms;

    snprintf(path, sizeof(path), accel ? GAUDI_HL_ACCEL_CONTROL_FMT :
             GAUDI_HL_LEGACY_CONTROL_FMT, n);
    cfd = open(path, O_RDWR | O_CLOEXEC);
    if (cfd < 0) {
        synsim_log("%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    for (waited_ms = 0;; ) {
        rc = synsim_ctrl_status(cfd, accel, &st);
        if ((rc < 0) || (st == GAUDI_HL_DEVICE_STATUS_OPERATIONAL) ||
            ((st != GAUDI_HL_DEVICE_STATUS_IN_RESET) &&
             (st != GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE))) {
            break;
        }
        waited_ms += SYNSIM_RESET_POLL_MS;
        if (waited_ms >= SYNSIM_ACQUIRE_WAIT * 1000) {
            rc = -ETIMEDOUT;
            break;
        }
        usleep(SYNSIM_RESET_POLL_MS * 1000);
    }
    close(cfd);
    if ((rc < 0) || (st != GAUDI_HL_DEVICE_STATUS_OPERATIONAL)) {
        synsim_log("%s: device not operational (status %u%s)", path, st,
                   (rc == -ETIMEDOUT) ? ", still in reset after 60 s" : "");
        return -1;
    }
    return 0;
}

/*
 * Open the compute node of node @n once its reset is over: the fd, or
 * -ETIMEDOUT when the wait failed (synFail), or the open's -errno, e.g.
 * EAGAIN of a previous context still in release or EBUSY of a held
 * device, never retried (openAnyDevice / openComputeFD, osal_linux.cpp:
 * 286-292, 392-460)
 */
static int synsim_open_node(int n, int accel)
{
    char path[64];
    int  fd;

    if (synsim_wait_operational(n, accel) < 0) {
        return -ETIMEDOUT;
    }
    snprintf(path, sizeof(path), accel ? GAUDI_HL_ACCEL_NODE_FMT :
             GAUDI_HL_LEGACY_NODE_FMT, n);
    fd = open(path, O_RDWR | O_CLOEXEC);
    return (fd >= 0) ? fd : -errno;
}

/* Take node @n opened as @fd as the process's device */
static synStatus synsim_take(int n, int accel, int fd)
{
    synsim_dev_t *d = &synsim.dev;
    synStatus     status;
    char          path[64];
    int           err;

    snprintf(path, sizeof(path), accel ? GAUDI_HL_ACCEL_NODE_FMT :
             GAUDI_HL_LEGACY_NODE_FMT, n);
    memset(d, 0, sizeof(*d));
    d->fd    = fd;
    d->minor = n;
    d->accel = accel;
    err      = synsim_hw_ip(d);
    if (err) {
        synsim_log("%s: HW_IP_INFO failed: %s", path, strerror(err));
        close(fd);
        return synsim_errno_status(err);
    }

    d->type   = synsim_type(d->hw_ip.u61.device_id);
    d->gaudi1 = (d->type == synDeviceGaudi);
    if (d->type == synDeviceTypeInvalid) {
        synsim_log("%s: unknown PCI device id 0x%x", path,
                   d->hw_ip.u61.device_id);
        close(fd);
        return synDeviceTypeMismatch;
    }
    synsim_sysfs(accel, n, "pci_addr", d->pci_bus, sizeof(d->pci_bus));
    /* SCAL maps its pools at acquire (device_scal.cpp:99-121) */
    status = synsim_devmem_init(d);
    if (status != synSuccess) {
        close(fd);
        return status;
    }
    d->acquired = 1;
    return synSuccess;
}

static synStatus synsim_check_init(void)
{
    synStatus status = synsim_api_enter();

    if (status != synSuccess) {
        return status;
    }
    if (synsim.pdma_copy == NULL) {
        synsim_log("the habanalabs emulator (libhlsim.so) is not preloaded:"
                   " no device");
        return synNoDeviceFound;
    }
    return synSuccess;
}

synStatus synInitialize(void)
{
    const char *off = getenv("SYNSIM_INFO_FD_OFFSET");
    synStatus   status;

    pthread_mutex_lock(&synsim_lock);
    if (synsim.initialized) {
        status = synSuccess;    /* syn_singleton.cpp:327-360 */
        goto out;
    }
    synsim_queues_init();
    if (synsim_dfa_init() || synsim_imported_va_init()) {
        status = synInvalidArgument;
        goto out;
    }
    synsim.fd_offset = 48;
    if ((off != NULL) && (*off != '\0')) {
        if (strcmp(off, "48") && strcmp(off, "40")) {
            synsim_log("SYNSIM_INFO_FD_OFFSET=%s: only 48 (current "
                       "headers) or 40 (older ones)", off);
            status = synInvalidArgument;
            goto out;
        }
        synsim.fd_offset = atoi(off);
    }
    /* the DMA engine: a user-owned PDMA channel of the emulated device */
    synsim.pdma_copy   = (int (*)(int, uint64_t, uint64_t, uint64_t))
                         dlsym(RTLD_DEFAULT, "hlsim_pdma_copy");
    synsim.initialized = 1;
    status             = synSuccess;
out:
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

synStatus synDestroy(void)
{
    synStatus status;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    if (synsim.dev.acquired) {
        synDeviceRelease(0);
    }
    synsim.initialized = 0;
    return synSuccess;
}

synStatus synDeviceGetCount(uint32_t *pCount)
{
    int      accel = synsim_accel_nodes();
    char     path[64];
    uint32_t n;

    if (pCount == NULL) {
        return synInvalidArgument;
    }
    if (!synsim.initialized) {
        return synUninitialized;
    }
    for (n = 0; n < SYNSIM_MAX_DEV; n++) {
        snprintf(path, sizeof(path), accel ? GAUDI_HL_ACCEL_NODE_FMT :
                 GAUDI_HL_LEGACY_NODE_FMT, n);
        if (access(path, F_OK)) {
            break;
        }
    }
    *pCount = n;
    return synSuccess;
}

/* How a device is asked for (OSAL::acquireDevice, osal_linux.cpp:146-169) */
typedef enum {
    SYNSIM_BY_BUS,
    SYNSIM_BY_MODULE,
    SYNSIM_ANY
} synsim_by_t;

static int synsim_match(synsim_by_t by, int accel, int n, const void *arg)
{
    char value[32];

    switch (by) {
    case SYNSIM_BY_BUS:
        synsim_sysfs(accel, n, "pci_addr", value, sizeof(value));
        return !strcmp(value, (const char*)arg);
    case SYNSIM_BY_MODULE:
        synsim_sysfs(accel, n, "module_id", value, sizeof(value));
        return (value[0] != '\0') && (strtoul(value, NULL, 10) ==
                                       *(const synModuleId*)arg);
    default:
        return 1;
    }
}

/*
 * By bus or module id: the one node, its reset waited out; busy is synFail
 * by bus (openComputeFD(pciBus), osal_linux.cpp:392-405) and
 * synNoDeviceFound by module id (:377-389). Any device: each node in
 * turn, resets waited out, busy ones skipped, synNoDeviceFound if none
 * opens (openAnyDevice, :241-300).
 */
static synStatus synsim_acquire(synDeviceId *pDeviceId, synsim_by_t by,
                                const void *arg)
{
    int       accel = synsim_accel_nodes();
    synStatus status;
    char      path[64];
    int       n, fd;

    if (pDeviceId == NULL) {
        return synInvalidArgument;
    }
    status = synsim_check_init();
    if (status != synSuccess) {
        return status;
    }

    pthread_mutex_lock(&synsim_lock);
    if (synsim.dev.acquired) {
        status = synDeviceAlreadyAcquired;  /* osal_linux.cpp:148-150 */
        goto out;
    }
    status = synNoDeviceFound;
    for (n = 0; n < SYNSIM_MAX_DEV; n++) {
        snprintf(path, sizeof(path), accel ? GAUDI_HL_ACCEL_NODE_FMT :
                 GAUDI_HL_LEGACY_NODE_FMT, n);
        if (access(path, F_OK)) {
            break;                  /* the end of the devices */
        }
        if (!synsim_match(by, accel, n, arg)) {
            continue;
        }
        fd = synsim_open_node(n, accel);
        if (fd >= 0) {
            status = synsim_take(n, accel, fd);
        } else if (fd == -ETIMEDOUT) {
            status = synFail;       /* osal_linux.cpp:275-280, 1485-1489 */
        } else if (by == SYNSIM_ANY) {
            continue;               /* busy: the next one */
        } else {
            status = (by == SYNSIM_BY_BUS) ? synFail : synNoDeviceFound;
        }
        if ((status == synSuccess) || (by != SYNSIM_ANY)) {
            break;
        }
    }
    if (status == synSuccess) {
        *pDeviceId = 0;             /* device_manager.cpp:85 */
    }
out:
    pthread_mutex_unlock(&synsim_lock);
    return status;
}

synStatus synDeviceAcquire(synDeviceId *pDeviceId, const char *pciBus)
{
    return synsim_acquire(pDeviceId, ((pciBus == NULL) || (*pciBus == '\0')) ?
                          SYNSIM_ANY : SYNSIM_BY_BUS, pciBus);
}

synStatus synDeviceAcquireByModuleId(synDeviceId *pDeviceId,
                                     const synModuleId moduleId)
{
    return synsim_acquire(pDeviceId, SYNSIM_BY_MODULE, &moduleId);
}

synStatus synDeviceRelease(const synDeviceId deviceId)
{
    synsim_dev_t *d;
    synStatus     status;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(deviceId);
    pthread_mutex_unlock(&synsim_lock);
    if (d == NULL) {
        return synNoDeviceFound;        /* device_manager.cpp:90-98 */
    }

    synsim_streams_release();           /* waits for their copies */
    pthread_mutex_lock(&synsim_lock);
    synsim_host_release(d);
    synsim_devmem_release(d);           /* the pools: UNMAP + FREE */
    close(d->fd);
    d->acquired = 0;
    d->fd       = -1;
    pthread_mutex_unlock(&synsim_lock);
    return synSuccess;
}

/* The older public layout: uint16_t tpcEnabledMask, so fd at 40 */
static void synsim_info_old(const synDeviceInfo *info, void *buf)
{
    uint16_t mask = info->tpcEnabledMask;
    uint8_t *p    = (uint8_t*)buf;
    int32_t  type = info->deviceType;

    memcpy(p + 0, &info->sramBaseAddress, 8);
    memcpy(p + 8, &info->dramBaseAddress, 8);
    memcpy(p + 16, &info->sramSize, 4);
    memcpy(p + 24, &info->dramSize, 8);
    memcpy(p + 32, &mask, 2);
    memcpy(p + 34, &info->dramEnabled, 1);
    memcpy(p + 36, &info->deviceId, 4);
    memcpy(p + 40, &info->fd, 4);
    memcpy(p + 44, &type, 4);
}

/* The V2 info of the process's device; synFail without one
 * (device_manager.cpp:420-431) */
static synStatus synsim_info(synDeviceInfoV2 *pinfo)
{
    synDeviceInfoV2 info;
    synsim_dev_t   *d;
    synStatus       status;

    if ((status = synsim_api_enter()) != synSuccess) {
        return status;
    }
    pthread_mutex_lock(&synsim_lock);
    d = synsim_dev_get(0);
    if (d == NULL) {
        pthread_mutex_unlock(&synsim_lock);
        return synFail;
    }
    memset(&info, 0, sizeof(info));
    info.sramBaseAddress = d->hw_ip.u61.sram_base_address;
    info.dramBaseAddress = d->hw_ip.u61.dram_base_address;
    info.sramSize        = d->hw_ip.u61.sram_size;
    info.dramSize        = d->hw_ip.u61.dram_size;
    info.tpcEnabledMask  = d->hw_ip.u61.tpc_enabled_mask_ext ?
                           d->hw_ip.u61.tpc_enabled_mask_ext :
                           d->hw_ip.u61.tpc_enabled_mask;
    info.dramEnabled     = d->hw_ip.u61.dram_enabled;
    info.deviceId        = d->hw_ip.u61.device_id;
    info.fd              = d->fd;
    info.deviceType      = d->type;
    info.deviceIndex     = d->minor;
    info.globalHbmBaseAddress = synsim_devmem_map_base(d);
    pthread_mutex_unlock(&synsim_lock);
    *pinfo = info;
    return synSuccess;
}

synStatus synDeviceGetInfo(const synDeviceId deviceId,
                           synDeviceInfo *pDeviceInfo)
{
    synDeviceInfoV2 v2;
    synDeviceInfo   info;
    synStatus       status;

    if (pDeviceInfo == NULL) {
        return synInvalidArgument;
    }
    status = synsim_info(&v2);
    if (status != synSuccess) {
        return status;
    }
    memcpy(&info, &v2, sizeof(info));   /* V2 begins with the V1 layout */
    if (synsim.fd_offset == 40) {
        synsim_info_old(&info, pDeviceInfo);
    } else {
        *pDeviceInfo = info;
    }
    return synSuccess;
}

synStatus synDeviceGetInfoV2(const synDeviceId deviceId,
                             synDeviceInfoV2 *pDeviceInfo)
{
    return (pDeviceInfo != NULL) ? synsim_info(pDeviceInfo) :
           synInvalidArgument;
}

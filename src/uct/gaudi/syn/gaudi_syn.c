/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * SynapseAI at run time (docs/synapse.md): libSynapse.so is dlopen()ed,
 * never linked, and every entry point the module calls is resolved up
 * front, so a library that lacks one is refused at load, not at first use.
 */

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE   /* dlinfo() */
#endif

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/syn/gaudi_syn.h>
#include <uct/gaudi/hl/gaudi_hl.h>

#include <ucs/debug/log.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/string.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <string.h>


/* synStatus values, their UCS meaning and what they say */
typedef struct {
    ucs_status_t status;
    const char   *name;
    const char   *text;
} uct_gaudi_syn_status_desc_t;

static const uct_gaudi_syn_status_desc_t uct_gaudi_syn_statuses[] = {
    [0]  = {UCS_OK, "synSuccess", "success"},
    [1]  = {UCS_ERR_INVALID_PARAM, "synInvalidArgument",
            "invalid argument or unknown handle"},
    [2]  = {UCS_ERR_NO_RESOURCE, "synCbFull", "command buffer full"},
    [3]  = {UCS_ERR_NO_MEMORY, "synOutOfHostMemory", "out of host memory"},
    [4]  = {UCS_ERR_NO_MEMORY, "synOutOfDeviceMemory",
            "out of device memory"},
    [5]  = {UCS_ERR_ALREADY_EXISTS, "synObjectAlreadyInitialized",
            "already initialized"},
    [6]  = {UCS_ERR_NO_RESOURCE, "synObjectNotInitialized",
            "used before initialization"},
    [7]  = {UCS_ERR_IO_ERROR, "synCommandSubmissionFailure",
            "command submission to the device failed"},
    [8]  = {UCS_ERR_NO_DEVICE, "synNoDeviceFound", "no device found"},
    [9]  = {UCS_ERR_UNSUPPORTED, "synDeviceTypeMismatch",
            "not supported on this device type"},
    [10] = {UCS_ERR_IO_ERROR, "synFailedToInitializeCb",
            "command buffer creation failed"},
    [11] = {UCS_ERR_IO_ERROR, "synFailedToFreeCb",
            "command buffer release failed"},
    [12] = {UCS_ERR_IO_ERROR, "synFailedToMapCb",
            "command buffer mapping failed"},
    [13] = {UCS_ERR_IO_ERROR, "synFailedToUnmapCb",
            "command buffer unmapping failed"},
    [14] = {UCS_ERR_NO_MEMORY, "synFailedToAllocateDeviceMemory",
            "device memory allocation failed"},
    [15] = {UCS_ERR_IO_ERROR, "synFailedToFreeDeviceMemory",
            "device memory release failed"},
    [16] = {UCS_ERR_NO_DEVICE, "synFailedNotEnoughDevicesFound",
            "not enough free devices"},
    [17] = {UCS_ERR_IO_ERROR, "synDeviceReset", "the device was reset"},
    [18] = {UCS_ERR_UNSUPPORTED, "synUnsupported", "not supported"},
    [19] = {UCS_ERR_INVALID_PARAM, "synWrongParamsFile",
            "bad parameters file"},
    [20] = {UCS_ERR_BUSY, "synDeviceAlreadyAcquired",
            "the device is already acquired"},
    [21] = {UCS_ERR_ALREADY_EXISTS, "synNameIsAlreadyUsed",
            "the name is already used"},
    [22] = {UCS_ERR_BUSY, "synBusy", "work still in progress"},
    [23] = {UCS_ERR_NO_RESOURCE, "synAllResourcesTaken",
            "all resources are taken"},
    [24] = {UCS_ERR_NO_RESOURCE, "synUnavailable", "not available"},
    [25] = {UCS_ERR_INVALID_PARAM, "synInvalidTensorDimensions",
            "invalid tensor dimensions"},
    [26] = {UCS_ERR_IO_ERROR, "synFail", "the operation failed"},
    [27] = {UCS_ERR_NO_RESOURCE, "synOutOfResources", "out of resources"},
    [28] = {UCS_ERR_NO_RESOURCE, "synUninitialized",
            "SynapseAI is not initialized"},
    [29] = {UCS_ERR_ALREADY_EXISTS, "synAlreadyInitialized",
            "SynapseAI is already initialized"},
    [30] = {UCS_ERR_INVALID_PARAM, "synFailedSectionValidation",
            "section validation failed"},
    [31] = {UCS_ERR_CANCELED, "synSynapseTerminated",
            "SynapseAI has terminated"},
    [32] = {UCS_ERR_IO_ERROR, "synAssertAsync",
            "an assertion fired on the device"},
    [33] = {UCS_ERR_INVALID_PARAM, "synInvalidEventHandle",
            "unknown event handle"},
    [34] = {UCS_ERR_INVALID_ADDR, "synMappingNotFound",
            "host memory not mapped to the device (synHostMap)"},
    [35] = {UCS_ERR_IO_ERROR, "synFailedDynamicPatching",
            "dynamic patching failed"},
    [36] = {UCS_ERR_IO_ERROR, "synFailedStaticPatching",
            "static patching failed"},
    [37] = {UCS_ERR_IO_ERROR, "synFailedToSubmitWorkload",
            "workload submission failed"},
    [38] = {UCS_ERR_INVALID_PARAM, "synInvalidSectionsDefinition",
            "invalid sections definition"},
    [39] = {UCS_ERR_INVALID_PARAM, "synInvalidTensorProperties",
            "invalid tensor properties"},
    [40] = {UCS_ERR_IO_ERROR, "synFailHccl", "HCCL failure"},
    [41] = {UCS_ERR_IO_ERROR, "synFailedToCollectTime",
            "time collection failed"},
    [42] = {UCS_ERR_TIMED_OUT, "synTimeout", "timed out"},
    [43] = {UCS_ERR_INVALID_PARAM, "synResourceBadUsage",
            "resource used the wrong way"}
};

static const uct_gaudi_syn_status_desc_t uct_gaudi_syn_status_unknown = {
    UCS_ERR_IO_ERROR, "synStatus?", "unknown synStatus value"
};

/* Every entry point, resolved at load */
static const struct {
    const char *name;
    size_t     offset;
} uct_gaudi_syn_symbols[] = {
#define UCT_GAUDI_SYN_SYM(_name, _field) \
    {_name, ucs_offsetof(uct_gaudi_syn_ops_t, _field)}
    UCT_GAUDI_SYN_SYM("synInitialize", initialize),
    UCT_GAUDI_SYN_SYM("synDestroy", destroy),
    UCT_GAUDI_SYN_SYM("synDeviceAcquire", device_acquire),
    UCT_GAUDI_SYN_SYM("synDeviceRelease", device_release),
    UCT_GAUDI_SYN_SYM("synDeviceGetInfo", device_get_info),
    UCT_GAUDI_SYN_SYM("synDeviceMalloc", device_malloc),
    UCT_GAUDI_SYN_SYM("synDeviceFree", device_free),
    UCT_GAUDI_SYN_SYM("synHostMap", host_map),
    UCT_GAUDI_SYN_SYM("synHostUnmap", host_unmap),
    UCT_GAUDI_SYN_SYM("synStreamCreateGeneric", stream_create),
    UCT_GAUDI_SYN_SYM("synStreamDestroy", stream_destroy),
    UCT_GAUDI_SYN_SYM("synStreamSynchronize", stream_synchronize),
    UCT_GAUDI_SYN_SYM("synMemCopyAsync", memcpy_async),
    UCT_GAUDI_SYN_SYM("synMemCopyAsyncMultiple", memcpy_async_multiple),
    UCT_GAUDI_SYN_SYM("synEventCreate", event_create),
    UCT_GAUDI_SYN_SYM("synEventDestroy", event_destroy),
    UCT_GAUDI_SYN_SYM("synEventRecord", event_record),
    UCT_GAUDI_SYN_SYM("synEventQuery", event_query)
#undef UCT_GAUDI_SYN_SYM
};


static const uct_gaudi_syn_status_desc_t *
uct_gaudi_syn_desc(uct_gaudi_syn_status_t syn_status)
{
    if ((syn_status < 0) ||
        (syn_status >= ucs_static_array_size(uct_gaudi_syn_statuses))) {
        return &uct_gaudi_syn_status_unknown;
    }
    return &uct_gaudi_syn_statuses[syn_status];
}

ucs_status_t uct_gaudi_syn_status(uct_gaudi_syn_status_t syn_status)
{
    return uct_gaudi_syn_desc(syn_status)->status;
}

const char *uct_gaudi_syn_status_name(uct_gaudi_syn_status_t syn_status)
{
    return uct_gaudi_syn_desc(syn_status)->name;
}

const char *uct_gaudi_syn_status_str(uct_gaudi_syn_status_t syn_status)
{
    return uct_gaudi_syn_desc(syn_status)->text;
}

/* A failed call: logged with its synStatus, mapped */
static ucs_status_t uct_gaudi_syn_fail(const char *call,
                                       uct_gaudi_syn_status_t syn_status)
{
    ucs_status_t status = uct_gaudi_syn_status(syn_status);

    ucs_error("gaudi: %s failed: %s (%s, %d)", call,
              uct_gaudi_syn_status_str(syn_status),
              uct_gaudi_syn_status_name(syn_status), syn_status);
    return status;
}

/* Call entry point @_op, logging a failure under SynapseAI's @_name */
#define UCT_GAUDI_SYN_CALL(_syn, _name, _op, ...) \
    ({ \
        uct_gaudi_syn_status_t _ret = (_syn)->ops._op(__VA_ARGS__); \
        (_ret == UCT_GAUDI_SYN_SUCCESS) ? UCS_OK : \
        uct_gaudi_syn_fail(_name, _ret); \
    })


static int uct_gaudi_syn_loads_cb(struct dl_phdr_info *info, size_t size,
                                  void *arg)
{
    *(uint64_t*)arg = info->dlpi_adds;
    return 1;
}

/* How many objects the process has loaded so far (dlpi_adds) */
static uint64_t uct_gaudi_syn_loads(void)
{
    uint64_t loads = 0;

    dl_iterate_phdr(uct_gaudi_syn_loads_cb, &loads);
    return loads;
}

int uct_gaudi_syn_is_loaded(const char *libname, uint64_t *absent_at)
{
    /* counted before the search: a load during it makes the entry stale */
    uint64_t loads = uct_gaudi_syn_loads();
    void *handle;

    /* dlopen(RTLD_NOLOAD) of a bare name searches the library path each
     * time (about ten failed opens); a process with no device asks at
     * every registration */
    if ((loads != 0) && (__atomic_load_n(absent_at, __ATOMIC_RELAXED) ==
                         loads)) {
        return 0;
    }

    handle = dlopen((libname != NULL) ? libname : UCT_GAUDI_SYN_LIB_DEFAULT,
                    RTLD_NOW | RTLD_NOLOAD);
    if (handle == NULL) {
        __atomic_store_n(absent_at, loads, __ATOMIC_RELAXED);
        return 0;
    }
    dlclose(handle);
    return 1;
}

static void uct_gaudi_syn_set_path(uct_gaudi_syn_t *syn, const char *libname)
{
    struct link_map *map = NULL;

    if ((dlinfo(syn->handle, RTLD_DI_LINKMAP, &map) == 0) && (map != NULL) &&
        (map->l_name != NULL) && (map->l_name[0] != '\0')) {
        ucs_strncpy_zero(syn->path, map->l_name, sizeof(syn->path));
    } else {
        ucs_strncpy_zero(syn->path, libname, sizeof(syn->path));
    }
}

/* Resolve every entry point, or name the first one missing */
static ucs_status_t uct_gaudi_syn_resolve(uct_gaudi_syn_t *syn)
{
    void *sym;
    int i;

    for (i = 0; i < ucs_static_array_size(uct_gaudi_syn_symbols); ++i) {
        sym = dlsym(syn->handle, uct_gaudi_syn_symbols[i].name);
        if (sym == NULL) {
            ucs_diag("gaudi: %s has no %s: not a usable SynapseAI library",
                     syn->path, uct_gaudi_syn_symbols[i].name);
            return UCS_ERR_UNSUPPORTED;
        }
        *(void**)UCS_PTR_BYTE_OFFSET(&syn->ops,
                                     uct_gaudi_syn_symbols[i].offset) = sym;
    }

    return UCS_OK;
}

ucs_status_t uct_gaudi_syn_load(const char *libname,
                                uct_gaudi_syn_is_device_fn_t is_device,
                                uct_gaudi_syn_t *syn)
{
    ucs_status_t status;

    if (libname == NULL) {
        libname = UCT_GAUDI_SYN_LIB_DEFAULT;
    }

    memset(syn, 0, sizeof(*syn));
    syn->is_device = is_device;
    /* SynapseAI the application already uses, else our own reference; a
     * local one, so that it never preempts symbols of the application */
    syn->handle    = dlopen(libname, RTLD_NOW | RTLD_NOLOAD);
    syn->preloaded = (syn->handle != NULL);
    if (syn->handle == NULL) {
        syn->handle = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
    }
    if (syn->handle == NULL) {
        ucs_diag("gaudi: cannot load SynapseAI '%s': %s", libname,
                 dlerror());
        return UCS_ERR_UNSUPPORTED;
    }

    uct_gaudi_syn_set_path(syn, libname);
    status = uct_gaudi_syn_resolve(syn);
    if (status != UCS_OK) {
        dlclose(syn->handle);
        syn->handle = NULL;
        return status;
    }

    ucs_debug("gaudi: SynapseAI %s %s", syn->path,
              syn->preloaded ? "(loaded by the application)" : "loaded");
    return UCS_OK;
}

void uct_gaudi_syn_unload(uct_gaudi_syn_t *syn)
{
    if (syn->handle != NULL) {
        dlclose(syn->handle);
        syn->handle = NULL;
    }
}

ucs_status_t uct_gaudi_syn_acquire(const uct_gaudi_syn_t *syn,
                                   const char *pci_bus,
                                   uct_gaudi_syn_device_t *device_p)
{
    uct_gaudi_syn_status_t ret = syn->ops.initialize();
    int by_bus;

    /* initialized already, by the application or by us, is fine */
    if ((ret != UCT_GAUDI_SYN_SUCCESS) &&
        (ret != UCT_GAUDI_SYN_OBJECT_ALREADY_INITIALIZED) &&
        (ret != UCT_GAUDI_SYN_ALREADY_INITIALIZED)) {
        return uct_gaudi_syn_fail("synInitialize", ret);
    }

    /* SynapseAI waits out a reset inside the call (up to 60 s); by bus a
     * device held by another process is synFail (docs/synapse.md) */
    ret = syn->ops.device_acquire(device_p, pci_bus);
    if (ret == UCT_GAUDI_SYN_SUCCESS) {
        return UCS_OK;
    }

    by_bus = (pci_bus != NULL) && (*pci_bus != '\0');
    ucs_diag("gaudi: SynapseAI cannot acquire device %s: %s (%s)",
             by_bus ? pci_bus : "(any)", (by_bus &&
             (ret == UCT_GAUDI_SYN_FAIL)) ? "held by another process, or "
             "still in reset after SynapseAI's wait" :
             uct_gaudi_syn_status_str(ret), uct_gaudi_syn_status_name(ret));
    return (by_bus && (ret == UCT_GAUDI_SYN_FAIL)) ? UCS_ERR_BUSY :
           uct_gaudi_syn_status(ret);
}

ucs_status_t uct_gaudi_syn_release(const uct_gaudi_syn_t *syn,
                                   uct_gaudi_syn_device_t device)
{
    return UCT_GAUDI_SYN_CALL(syn, "synDeviceRelease", device_release,
                              device);
}

/* The layouts of synDeviceInfo: the fd and the deviceType (facts 9.7) */
static const struct {
    size_t fd_off;
    size_t type_off;
} uct_gaudi_syn_info_layouts[] = {
    {UCT_GAUDI_SYN_INFO_FD_OFFSET, UCT_GAUDI_SYN_INFO_TYPE_OFFSET},
    {UCT_GAUDI_SYN_INFO_OLD_FD_OFFSET, UCT_GAUDI_SYN_INFO_OLD_TYPE_OFFSET}
};

ucs_status_t
uct_gaudi_syn_info_fd(uct_gaudi_syn_device_get_info_fn_t get_info,
                      uct_gaudi_syn_is_device_fn_t is_device,
                      uct_gaudi_syn_device_t device, int *fd_p, int *type_p)
{
    uint8_t buf[UCT_GAUDI_SYN_INFO_BUF_SIZE];
    int32_t cand[2], type = -1;
    int found = -1, minor, i;

    /* bytes a layout does not write stay 0xff: no valid fd */
    memset(buf, 0xff, sizeof(buf));
    if (get_info(device, buf) != UCT_GAUDI_SYN_SUCCESS) {
        return UCS_ERR_NO_ELEM;
    }

    for (i = 0; i < ucs_static_array_size(uct_gaudi_syn_info_layouts); ++i) {
        memcpy(&cand[i], buf + uct_gaudi_syn_info_layouts[i].fd_off,
               sizeof(cand[i]));
        /* no ioctl on an unknown fd: its path or char device only */
        minor = uct_gaudi_hl_fd_compute_minor(cand[i]);
        if ((minor < 0) || !is_device(minor)) {
            continue;
        } else if ((found >= 0) && (found != cand[i])) {
            ucs_debug("gaudi: synDeviceInfo of device %u holds two Gaudi "
                      "fds (%d at %zu, %d at %zu)", device, cand[0],
                      uct_gaudi_syn_info_layouts[0].fd_off, cand[1],
                      uct_gaudi_syn_info_layouts[1].fd_off);
            return UCS_ERR_NO_DEVICE;
        }
        found = cand[i];
        memcpy(&type, buf + uct_gaudi_syn_info_layouts[i].type_off,
               sizeof(type));
    }

    if (found < 0) {
        ucs_debug("gaudi: synDeviceInfo of device %u has no Gaudi compute "
                  "fd (%d at %zu, %d at %zu)", device, cand[0],
                  uct_gaudi_syn_info_layouts[0].fd_off, cand[1],
                  uct_gaudi_syn_info_layouts[1].fd_off);
        return UCS_ERR_NO_DEVICE;
    }

    *fd_p = found;
    if (type_p != NULL) {
        *type_p = type;
    }
    return UCS_OK;
}

ucs_status_t uct_gaudi_syn_device_fd(const uct_gaudi_syn_t *syn,
                                     uct_gaudi_syn_device_t device,
                                     int *fd_p, int *type_p)
{
    ucs_status_t status;

    status = uct_gaudi_syn_info_fd(syn->ops.device_get_info, syn->is_device,
                                   device, fd_p, type_p);
    if (status != UCS_OK) {
        ucs_error("gaudi: synDeviceGetInfo of device %u %s", device,
                  (status == UCS_ERR_NO_ELEM) ? "failed" :
                  "gave no open Gaudi compute fd in either synDeviceInfo "
                  "layout, or two");
        return UCS_ERR_NO_DEVICE;
    }
    return UCS_OK;
}

/* The fd SynapseAI reports for @a device, quietly -1 if none */
static int uct_gaudi_syn_info_any_fd(const uct_gaudi_syn_t *syn,
                                     uct_gaudi_syn_device_t device)
{
    int fd;

    return (uct_gaudi_syn_info_fd(syn->ops.device_get_info, syn->is_device,
                                  device, &fd, NULL) == UCS_OK) ? fd : -1;
}

ucs_status_t uct_gaudi_syn_held_fd(const uct_gaudi_syn_t *syn, int *fd_p,
                                   uct_gaudi_syn_device_t *device_p)
{
    uct_gaudi_syn_device_t id;
    int fd;

    /* any failure means "no device acquired yet": not an error here */
    fd = uct_gaudi_syn_info_any_fd(syn, UCT_GAUDI_SYN_DEVICE_ANY);
    if (fd < 0) {
        return UCS_ERR_NO_DEVICE;
    }

    /* the calls that take a device need its id: the one with that fd
     * (SynapseAI numbers the devices it acquired from 0) */
    for (id = 0; id < UCT_GAUDI_SYN_MAX_DEVICES; id++) {
        if (uct_gaudi_syn_info_any_fd(syn, id) == fd) {
            *fd_p     = fd;
            *device_p = id;
            return UCS_OK;
        }
    }

    ucs_diag("gaudi: SynapseAI holds fd %d but no device id up to %u has "
             "it", fd, UCT_GAUDI_SYN_MAX_DEVICES - 1);
    return UCS_ERR_NO_DEVICE;
}

/*
 * SynapseAI says synFail when its pool is exhausted (SCAL, and the Gaudi1
 * heap alike; docs/synapse.md): with valid arguments, that is "no memory"
 */
ucs_status_t uct_gaudi_syn_device_malloc(const uct_gaudi_syn_t *syn,
                                         uct_gaudi_syn_device_t device,
                                         size_t size, uint64_t *addr_p)
{
    uct_gaudi_syn_status_t ret = syn->ops.device_malloc(device, size, 0, 0,
                                                        addr_p);

    if (ret == UCT_GAUDI_SYN_SUCCESS) {
        return UCS_OK;
    } else if (ret != UCT_GAUDI_SYN_FAIL) {
        return uct_gaudi_syn_fail("synDeviceMalloc", ret);
    }

    ucs_error("gaudi: synDeviceMalloc of %zu bytes on SynapseAI device %u "
              "failed: its device memory pool has no room (%s, %d)", size,
              device, uct_gaudi_syn_status_name(ret), ret);
    return UCS_ERR_NO_MEMORY;
}

ucs_status_t uct_gaudi_syn_device_free(const uct_gaudi_syn_t *syn,
                                       uct_gaudi_syn_device_t device,
                                       uint64_t addr)
{
    return UCT_GAUDI_SYN_CALL(syn, "synDeviceFree", device_free, device,
                              addr, 0);
}

ucs_status_t uct_gaudi_syn_host_map(const uct_gaudi_syn_t *syn,
                                    uct_gaudi_syn_device_t device,
                                    const void *buffer, size_t size)
{
    return UCT_GAUDI_SYN_CALL(syn, "synHostMap", host_map, device, size,
                              buffer);
}

ucs_status_t uct_gaudi_syn_host_unmap(const uct_gaudi_syn_t *syn,
                                      uct_gaudi_syn_device_t device,
                                      const void *buffer)
{
    return UCT_GAUDI_SYN_CALL(syn, "synHostUnmap", host_unmap, device,
                              buffer);
}

ucs_status_t uct_gaudi_syn_stream_create(const uct_gaudi_syn_t *syn,
                                         uct_gaudi_syn_device_t device,
                                         uct_gaudi_syn_stream_t *stream_p)
{
    return UCT_GAUDI_SYN_CALL(syn, "synStreamCreateGeneric", stream_create,
                              stream_p, device, 0);
}

ucs_status_t uct_gaudi_syn_stream_destroy(const uct_gaudi_syn_t *syn,
                                          uct_gaudi_syn_stream_t stream)
{
    return UCT_GAUDI_SYN_CALL(syn, "synStreamDestroy", stream_destroy,
                              stream);
}

ucs_status_t uct_gaudi_syn_stream_sync(const uct_gaudi_syn_t *syn,
                                       uct_gaudi_syn_stream_t stream)
{
    return UCT_GAUDI_SYN_CALL(syn, "synStreamSynchronize",
                              stream_synchronize, stream);
}

ucs_status_t uct_gaudi_syn_memcpy_async(const uct_gaudi_syn_t *syn,
                                        uct_gaudi_syn_stream_t stream,
                                        uint64_t dst, uint64_t src,
                                        size_t length,
                                        uct_gaudi_syn_dir_t dir)
{
    uct_gaudi_syn_status_t ret = syn->ops.memcpy_async(stream, src, length,
                                                       dst, dir);

    /* an untranslatable host side: the caller knows what to do */
    if (ret == UCT_GAUDI_SYN_MAPPING_NOT_FOUND) {
        return UCS_ERR_INVALID_ADDR;
    }
    return (ret == UCT_GAUDI_SYN_SUCCESS) ? UCS_OK :
           uct_gaudi_syn_fail("synMemCopyAsync", ret);
}

ucs_status_t uct_gaudi_syn_event_create(const uct_gaudi_syn_t *syn,
                                        uct_gaudi_syn_device_t device,
                                        uct_gaudi_syn_event_t *event_p)
{
    return UCT_GAUDI_SYN_CALL(syn, "synEventCreate", event_create, event_p,
                              device, 0);
}

ucs_status_t uct_gaudi_syn_event_destroy(const uct_gaudi_syn_t *syn,
                                         uct_gaudi_syn_event_t event)
{
    return UCT_GAUDI_SYN_CALL(syn, "synEventDestroy", event_destroy,
                              event);
}

ucs_status_t uct_gaudi_syn_event_record(const uct_gaudi_syn_t *syn,
                                        uct_gaudi_syn_event_t event,
                                        uct_gaudi_syn_stream_t stream)
{
    return UCT_GAUDI_SYN_CALL(syn, "synEventRecord", event_record, event,
                              stream);
}

ucs_status_t uct_gaudi_syn_event_query(const uct_gaudi_syn_t *syn,
                                       uct_gaudi_syn_event_t event)
{
    uct_gaudi_syn_status_t ret = syn->ops.event_query(event);

    /* synBusy is the normal "not yet", polled from progress */
    if (ret == UCT_GAUDI_SYN_BUSY) {
        return UCS_INPROGRESS;
    }
    return (ret == UCT_GAUDI_SYN_SUCCESS) ? UCS_OK :
           uct_gaudi_syn_fail("synEventQuery", ret);
}

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The part of SynapseAI's public C API (synapse_api.h and its type
 * headers) this module calls, declared here from the documented
 * signatures and values so that libSynapse is never a build dependency:
 * it is dlopen()ed at run time (gaudi_syn.c). docs/synapse.md lists the
 * public sources of every signature and value.
 */

#ifndef UCT_GAUDI_SYN_API_H_
#define UCT_GAUDI_SYN_API_H_

#include <stdint.h>


/* synStatus: 0 is success; the values the module tells apart */
typedef int uct_gaudi_syn_status_t;

enum {
    UCT_GAUDI_SYN_SUCCESS                  = 0,
    UCT_GAUDI_SYN_INVALID_ARGUMENT         = 1,
    UCT_GAUDI_SYN_OUT_OF_HOST_MEMORY       = 3,
    UCT_GAUDI_SYN_OUT_OF_DEVICE_MEMORY     = 4,
    UCT_GAUDI_SYN_OBJECT_ALREADY_INITIALIZED = 5,
    UCT_GAUDI_SYN_OBJECT_NOT_INITIALIZED   = 6,
    UCT_GAUDI_SYN_NO_DEVICE_FOUND          = 8,
    UCT_GAUDI_SYN_DEVICE_RESET             = 17,
    UCT_GAUDI_SYN_UNSUPPORTED              = 18,
    UCT_GAUDI_SYN_DEVICE_ALREADY_ACQUIRED  = 20,
    UCT_GAUDI_SYN_BUSY                     = 22,
    UCT_GAUDI_SYN_FAIL                     = 26,
    UCT_GAUDI_SYN_UNINITIALIZED            = 28,
    UCT_GAUDI_SYN_ALREADY_INITIALIZED      = 29,
    UCT_GAUDI_SYN_INVALID_EVENT_HANDLE     = 33,
    UCT_GAUDI_SYN_MAPPING_NOT_FOUND        = 34,
    UCT_GAUDI_SYN_TIMEOUT                  = 42,
    UCT_GAUDI_SYN_STATUS_LAST              = 43  /* synResourceBadUsage */
};

/* synDmaDir */
typedef enum {
    UCT_GAUDI_SYN_HOST_TO_DRAM = 0,
    UCT_GAUDI_SYN_DRAM_TO_HOST = 1,
    UCT_GAUDI_SYN_DRAM_TO_DRAM = 2
} uct_gaudi_syn_dir_t;

/*
 * synDeviceType (SynapseAI 1.x values; the older SynapseAI_Core headers
 * numbered Gaudi 0 and Gaudi2 1). Every value of either is below the
 * limit, which a PCI device id (synDeviceInfo.deviceId) is not.
 */
enum {
    UCT_GAUDI_SYN_DEVICE_GAUDI      = 2,
    UCT_GAUDI_SYN_DEVICE_GAUDI2     = 4,
    UCT_GAUDI_SYN_DEVICE_GAUDI3     = 5,
    UCT_GAUDI_SYN_DEVICE_TYPE_LIMIT = 16
};

/* synDeviceId; -1 asks for the device the process acquired */
typedef uint32_t uct_gaudi_syn_device_t;
#define UCT_GAUDI_SYN_DEVICE_ANY ((uct_gaudi_syn_device_t)-1)

/* synStreamHandle, synEventHandle: opaque pointers */
typedef struct uct_gaudi_syn_stream *uct_gaudi_syn_stream_t;
typedef struct uct_gaudi_syn_event  *uct_gaudi_syn_event_t;

/*
 * struct synDeviceInfo is read as bytes: its fd moved when
 * tpcEnabledMask grew from uint16_t (older headers: fd at 40, deviceType
 * at 44, 48 bytes) to uint64_t (current: fd at 48, deviceType at 52,
 * 56 bytes). The buffer handed to synDeviceGetInfo is larger than both.
 */
#define UCT_GAUDI_SYN_INFO_FD_OFFSET       48
#define UCT_GAUDI_SYN_INFO_TYPE_OFFSET     52
#define UCT_GAUDI_SYN_INFO_OLD_FD_OFFSET   40
#define UCT_GAUDI_SYN_INFO_OLD_TYPE_OFFSET 44
#define UCT_GAUDI_SYN_INFO_BUF_SIZE        256


/* The entry points, with SynapseAI's argument order */
typedef uct_gaudi_syn_status_t (*uct_gaudi_syn_initialize_fn_t)(void);
typedef uct_gaudi_syn_status_t (*uct_gaudi_syn_destroy_fn_t)(void);
typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_device_acquire_fn_t)(uct_gaudi_syn_device_t *device,
                                     const char *pci_bus);
typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_device_release_fn_t)(uct_gaudi_syn_device_t device);
typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_device_get_info_fn_t)(uct_gaudi_syn_device_t device,
                                      void *info);
typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_device_malloc_fn_t)(uct_gaudi_syn_device_t device,
                                    uint64_t size, uint64_t req_addr,
                                    uint32_t flags, uint64_t *buffer);
typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_device_free_fn_t)(uct_gaudi_syn_device_t device,
                                  uint64_t buffer, uint32_t flags);
typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_host_map_fn_t)(uct_gaudi_syn_device_t device, uint64_t size,
                               const void *buffer);
typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_host_unmap_fn_t)(uct_gaudi_syn_device_t device,
                                 const void *buffer);
typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_stream_create_fn_t)(uct_gaudi_syn_stream_t *stream,
                                    uct_gaudi_syn_device_t device,
                                    uint32_t flags);
typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_stream_fn_t)(uct_gaudi_syn_stream_t stream);
typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_memcpy_fn_t)(uct_gaudi_syn_stream_t stream, uint64_t src,
                             uint64_t size, uint64_t dst, int direction);
typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_memcpy_multiple_fn_t)(uct_gaudi_syn_stream_t stream,
                                      const uint64_t *src,
                                      const uint64_t *size,
                                      const uint64_t *dst, int direction,
                                      uint64_t count);
typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_event_create_fn_t)(uct_gaudi_syn_event_t *event,
                                   uct_gaudi_syn_device_t device,
                                   uint32_t flags);
typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_event_fn_t)(uct_gaudi_syn_event_t event);
typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_event_record_fn_t)(uct_gaudi_syn_event_t event,
                                   uct_gaudi_syn_stream_t stream);

/*
 * synDeviceInfoV2 (synDeviceGetInfoV2), read as bytes like synDeviceInfo:
 * fd at 48 as in the current synDeviceInfo, 72 bytes; newer headers end
 * it with globalHbmBaseAddress at 64, the device VA of the driver MAP that
 * holds SynapseAI's device memory pool (the 1.16 header has a reserved
 * word there, left 0 or, when not written, 0xff bytes).
 */
#define UCT_GAUDI_SYN_INFO2_DRAM_SIZE_OFFSET   24
#define UCT_GAUDI_SYN_INFO2_FD_OFFSET          48
#define UCT_GAUDI_SYN_INFO2_HBM_BASE_OFFSET    64

typedef uct_gaudi_syn_status_t
(*uct_gaudi_syn_device_get_info_v2_fn_t)(uct_gaudi_syn_device_t device,
                                         void *info);


/*
 * SCAL (libscal.so, which libSynapse.so links on Gaudi2/3): the subset of
 * scal.h that tells where the "global_hbm" pool, the memory of
 * synDeviceMalloc, lies. Return value 0 is success.
 */
#define UCT_GAUDI_SCAL_LIB             "libscal.so"
#define UCT_GAUDI_SCAL_GLOBAL_HBM_POOL "global_hbm"

typedef struct uct_gaudi_scal      *uct_gaudi_scal_handle_t;
typedef struct uct_gaudi_scal_pool *uct_gaudi_scal_pool_handle_t;

/* scal_memory_pool_infoV2 */
typedef struct uct_gaudi_scal_pool_info {
    uct_gaudi_scal_handle_t scal;
    const char              *name;
    unsigned                idx;
    uint64_t                device_base_address; /* first usable byte */
    void                    *host_base_address;
    uint32_t                core_base_address;
    uint64_t                total_size;
    uint64_t                free_size;
    uint64_t                device_base_allocated_address; /* MAP VA */
} uct_gaudi_scal_pool_info_t;

typedef int (*uct_gaudi_scal_get_handle_from_fd_fn_t)(
        int fd, uct_gaudi_scal_handle_t *scal);
typedef int (*uct_gaudi_scal_get_pool_handle_by_name_fn_t)(
        uct_gaudi_scal_handle_t scal, const char *name,
        uct_gaudi_scal_pool_handle_t *pool);
typedef int (*uct_gaudi_scal_pool_get_info_v2_fn_t)(
        uct_gaudi_scal_pool_handle_t pool, uct_gaudi_scal_pool_info_t *info);

#endif

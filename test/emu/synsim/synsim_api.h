/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The subset of SynapseAI's public C API (synapse_api.h,
 * synapse_common_types.h, synapse_api_types.h) that the emulated
 * libSynapse implements, declared from the documented signatures and
 * enum values (docs/synapse.md lists them and their public sources).
 * Names are SynapseAI's: this library stands in for libSynapse.so.
 *
 * Where a process finds the device memory pool (the contract exporters
 * such as the UCX module code against; docs/synapse.md "Device memory"):
 * - Gaudi2/3: synDeviceAcquire* makes SCAL (libscal.so, synsim_scal.h)
 *   ALLOC and MAP its HBM pools on the compute fd; "global_hbm" takes all
 *   DRAM the other pools leave, so the driver has no free DRAM afterwards.
 *   synDeviceMalloc hands out 128-byte aligned pieces of global_hbm.
 * - synDeviceGetInfoV2(any id, &info): info.globalHbmBaseAddress is the
 *   device VA returned by the driver's MAP of the mapping that holds
 *   global_hbm (the address HL_MEM_OP_EXPORT_DMABUF_FD takes), and
 *   info.dramSize the DRAM size: a piece at VA p exports as that mapping
 *   with offset p - globalHbmBaseAddress.
 * - The same through SCAL, as upstream UCX does: scal_get_handle_from_fd
 *   (info.fd), scal_get_pool_handle_by_name("global_hbm"),
 *   scal_pool_get_infoV2: device_base_allocated_address is that MAP VA,
 *   device_base_address the pool's first usable address (>= the MAP VA;
 *   on Gaudi2 the pools share one mapping of all DRAM, so it is larger),
 *   totalSize the pool's size.
 * - Gaudi1 (no SCAL, no DRAM MMU): no pool; synDeviceMalloc returns
 *   physical DRAM addresses; globalHbmBaseAddress is the DRAM base.
 */

#ifndef SYNSIM_API_H_
#define SYNSIM_API_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum synStatus {
    synSuccess                      = 0,
    synInvalidArgument              = 1,
    synCbFull                       = 2,
    synOutOfHostMemory              = 3,
    synOutOfDeviceMemory            = 4,
    synObjectAlreadyInitialized     = 5,
    synObjectNotInitialized         = 6,
    synCommandSubmissionFailure     = 7,
    synNoDeviceFound                = 8,
    synDeviceTypeMismatch           = 9,
    synFailedToInitializeCb         = 10,
    synFailedToFreeCb               = 11,
    synFailedToMapCb                = 12,
    synFailedToUnmapCb              = 13,
    synFailedToAllocateDeviceMemory = 14,
    synFailedToFreeDeviceMemory     = 15,
    synFailedNotEnoughDevicesFound  = 16,
    synDeviceReset                  = 17,
    synUnsupported                  = 18,
    synWrongParamsFile              = 19,
    synDeviceAlreadyAcquired        = 20,
    synNameIsAlreadyUsed            = 21,
    synBusy                         = 22,
    synAllResourcesTaken            = 23,
    synUnavailable                  = 24,
    synInvalidTensorDimensions      = 25,
    synFail                         = 26,
    synOutOfResources               = 27,
    synUninitialized                = 28,
    synAlreadyInitialized           = 29,
    synFailedSectionValidation      = 30,
    synSynapseTerminated            = 31,
    synAssertAsync                  = 32,
    synInvalidEventHandle           = 33,
    synMappingNotFound              = 34,
    synFailedDynamicPatching        = 35,
    synFailedStaticPatching         = 36,
    synFailedToSubmitWorkload       = 37,
    synInvalidSectionsDefinition    = 38,
    synInvalidTensorProperties      = 39,
    synFailHccl                     = 40,
    synFailedToCollectTime          = 41,
    synTimeout                      = 42,
    synResourceBadUsage             = 43
} synStatus;

typedef enum synDmaDir {
    HOST_TO_DRAM,
    DRAM_TO_HOST,
    DRAM_TO_DRAM,
    DIRECTION_ENUM_MAX
} synDmaDir;

/* Values of the SynapseAI 1.x headers (synDeviceGaudi2 = 4) */
typedef enum synDeviceType {
    synDeviceGaudi       = 2,
    synDeviceGaudi2      = 4,
    synDeviceGaudi3      = 5,
    synDeviceTypeInvalid = 7
} synDeviceType;

typedef uint32_t synDeviceId;
typedef uint32_t synModuleId;
typedef struct synsim_stream *synStreamHandle;
typedef struct synsim_event  *synEventHandle;

/* Current layout: uint64_t tpcEnabledMask, fd at offset 48 */
typedef struct synDeviceInfo {
    uint64_t      sramBaseAddress;
    uint64_t      dramBaseAddress;
    uint32_t      sramSize;
    uint64_t      dramSize;
    uint64_t      tpcEnabledMask;
    uint8_t       dramEnabled;
    uint32_t      deviceId;
    uint32_t      fd;
    synDeviceType deviceType;
} synDeviceInfo;

/*
 * Newer headers (not in the 1.16 source, which has "uint64_t reserved" at
 * this place): the V2 info ends with the global_hbm mapping's base
 */
typedef struct synDeviceInfoV2 {
    uint64_t      sramBaseAddress;
    uint64_t      dramBaseAddress;
    uint32_t      sramSize;
    uint64_t      dramSize;
    uint64_t      tpcEnabledMask;
    uint8_t       dramEnabled;
    uint32_t      deviceId;
    uint32_t      fd;
    synDeviceType deviceType;
    uint8_t       deviceIndex;
    uint64_t      globalHbmBaseAddress;
} synDeviceInfoV2;

synStatus synInitialize(void);
synStatus synDestroy(void);
synStatus synDeviceGetCount(uint32_t *pCount);
synStatus synDeviceAcquire(synDeviceId *pDeviceId, const char *pciBus);
synStatus synDeviceAcquireByModuleId(synDeviceId *pDeviceId,
                                     const synModuleId moduleId);
synStatus synDeviceRelease(const synDeviceId deviceId);
synStatus synDeviceGetInfo(const synDeviceId deviceId,
                           synDeviceInfo *pDeviceInfo);
synStatus synDeviceGetInfoV2(const synDeviceId deviceId,
                             synDeviceInfoV2 *pDeviceInfo);
synStatus synDeviceSynchronize(const synDeviceId deviceId);
synStatus synDeviceMalloc(const synDeviceId deviceId, const uint64_t size,
                          uint64_t reqAddr, const uint32_t flags,
                          uint64_t *buffer);
/* free: of the device's user pool; total: that pool less what SynapseAI
 * took for itself at acquire (synapse_api_impl.cpp:1030-1040,
 * scal_memory_pool.cpp:147-162; Gaudi1: device_mem_alloc.cpp:356-368) */
synStatus synDeviceGetMemoryInfo(const synDeviceId deviceId, uint64_t *free,
                                 uint64_t *total);
synStatus synDeviceFree(const synDeviceId deviceId, const uint64_t buffer,
                        const uint32_t flags);
synStatus synHostMap(const synDeviceId deviceId, const uint64_t size,
                     const void *buffer);
synStatus synHostUnmap(const synDeviceId deviceId, const void *buffer);
synStatus synHostMalloc(const synDeviceId deviceId, const uint64_t size,
                        const uint32_t flags, void **buffer);
synStatus synHostFree(const synDeviceId deviceId, const void *buffer,
                      const uint32_t flags);
synStatus synStreamCreateGeneric(synStreamHandle *pStreamHandle,
                                 const synDeviceId deviceId,
                                 const uint32_t flags);
synStatus synStreamDestroy(const synStreamHandle streamHandle);
synStatus synStreamSynchronize(const synStreamHandle streamHandle);
synStatus synStreamQuery(const synStreamHandle streamHandle);
synStatus synMemCopyAsync(const synStreamHandle streamHandle,
                          const uint64_t src, const uint64_t size,
                          const uint64_t dst, const synDmaDir direction);
synStatus synMemCopyAsyncMultiple(const synStreamHandle streamHandle,
                                  const uint64_t *src, const uint64_t *size,
                                  const uint64_t *dst,
                                  const synDmaDir direction,
                                  const uint64_t numCopies);
synStatus synEventCreate(synEventHandle *pEventHandler,
                         const synDeviceId deviceId, const uint32_t flags);
synStatus synEventDestroy(synEventHandle eventHandle);
synStatus synEventRecord(synEventHandle eventHandle,
                         const synStreamHandle streamHandle);
synStatus synEventQuery(const synEventHandle eventHandle);
synStatus synEventSynchronize(const synEventHandle eventHandle);

/*
 * Not SynapseAI: calls counted by this emulator, for tests (dlsym on the
 * library's handle): synMemCopyAsync[Multiple] copies queued, and
 * synEventRecord calls that recorded
 */
typedef enum {
    SYNSIM_COUNT_COPIES,
    SYNSIM_COUNT_EVENT_RECORDS,
    SYNSIM_COUNT_LAST
} synsim_count_t;

unsigned long synsim_count(synsim_count_t what);

#ifdef __cplusplus
}
#endif

#endif

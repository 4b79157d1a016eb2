/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The few HIP runtime calls that UCX's gtest mem_buffer makes for
 * UCS_MEMORY_TYPE_ROCM buffers, declared so that mem_buffer.cc compiles
 * with HAVE_ROCM; hip_gaudi.cc implements them over the Gaudi plugin's
 * public API. On UCX < 1.21 Gaudi memory is presented in the ROCM slot
 * (src/uct/gaudi/compat/gaudi_compat.h), so UCX's own suites then run on Gaudi
 * buffers. Not a HIP implementation: nothing else is provided.
 */

#ifndef UCX_GAUDI_TEST_HIP_RUNTIME_H_
#define UCX_GAUDI_TEST_HIP_RUNTIME_H_

#include <stddef.h>

typedef enum {
    hipSuccess           = 0,
    hipErrorNoDevice     = 100,
    hipErrorNotSupported = 801,
    hipErrorUnknown      = 999
} hipError_t;

typedef enum {
    hipMemcpyDefault = 4
} hipMemcpyKind;

typedef enum {
    hipMemoryTypeHost,
    hipMemoryTypeDevice,
    hipMemoryTypeUnified
} hipMemoryType;

typedef struct {
    hipMemoryType memoryType;
} hipPointerAttribute_t;

/* what UCX's mem_buffer asks of a device (1.12: managed memory; 1.16+:
 * image support, for pitched allocations) */
typedef enum {
    hipDeviceAttributeManagedMemory,
    hipDeviceAttributeImageSupport
} hipDeviceAttribute_t;

#define hipMemAttachGlobal 1

hipError_t hipGetDeviceCount(int *count);
hipError_t hipSetDevice(int device);
hipError_t hipGetDevice(int *device);
hipError_t hipDeviceGetAttribute(int *value, hipDeviceAttribute_t attr,
                                 int device);
hipError_t hipMalloc(void **ptr, size_t size);
hipError_t hipMallocManaged(void **ptr, size_t size,
                            unsigned flags = hipMemAttachGlobal);
hipError_t hipFree(void *ptr);
hipError_t hipMemset(void *dst, int value, size_t size);
hipError_t hipMemcpy(void *dst, const void *src, size_t size,
                     hipMemcpyKind kind);
hipError_t hipDeviceSynchronize(void);
hipError_t hipPointerGetAttributes(hipPointerAttribute_t *attr,
                                   const void *ptr);

#endif

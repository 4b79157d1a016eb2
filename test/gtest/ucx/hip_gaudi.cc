/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * hip_runtime.h calls over the Gaudi plugin's public API (see the header).
 * The plugin is preloaded into the test, so its functions are looked up at
 * run time; without it there is no device and mem_buffer sticks to host.
 */

#include "hip_gaudi/hip_runtime.h"

#include <ucs/type/status.h>
#include <dlfcn.h>


namespace {

template <typename F> F lookup(const char *name)
{
    return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

struct gaudi_api {
    ucs_status_t (*alloc)(size_t, void**);
    ucs_status_t (*free)(void*);
    ucs_status_t (*memcpy)(void*, const void*, size_t);
    ucs_status_t (*memset)(void*, int, size_t);

    gaudi_api() :
        alloc(lookup<ucs_status_t (*)(size_t, void**)>("uct_gaudi_mem_alloc")),
        free(lookup<ucs_status_t (*)(void*)>("uct_gaudi_mem_free")),
        memcpy(lookup<ucs_status_t (*)(void*, const void*, size_t)>(
                "uct_gaudi_memcpy")),
        memset(lookup<ucs_status_t (*)(void*, int, size_t)>(
                "uct_gaudi_memset"))
    {
    }

    bool usable() const
    {
        return alloc && free && memcpy && memset;
    }
};

const gaudi_api &api()
{
    static gaudi_api instance;
    return instance;
}

hipError_t hip_status(ucs_status_t status)
{
    return (status == UCS_OK) ? hipSuccess : hipErrorUnknown;
}

}


hipError_t hipGetDeviceCount(int *count)
{
    void *probe;

    /* One device: the one the plugin selected for this process */
    *count = 0;
    if (!api().usable() || (api().alloc(1, &probe) != UCS_OK)) {
        return hipErrorNoDevice;
    }

    api().free(probe);
    *count = 1;
    return hipSuccess;
}

hipError_t hipSetDevice(int device)
{
    return (device == 0) ? hipSuccess : hipErrorNoDevice;
}

hipError_t hipGetDevice(int *device)
{
    *device = 0;
    return hipSuccess;
}

hipError_t hipDeviceGetAttribute(int *value, hipDeviceAttribute_t attr,
                                 int device)
{
    if (device != 0) {
        return hipErrorNoDevice;
    }

    /* Gaudi memory is device memory only: no managed memory, no images */
    *value = 0;
    return hipSuccess;
}

hipError_t hipMalloc(void **ptr, size_t size)
{
    return api().usable() ? hip_status(api().alloc(size, ptr)) :
                            hipErrorNoDevice;
}

hipError_t hipMallocManaged(void **ptr, size_t size, unsigned flags)
{
    return hipErrorNotSupported; /* Gaudi memory is never CPU-accessible */
}

hipError_t hipFree(void *ptr)
{
    return hip_status(api().free(ptr));
}

hipError_t hipMemset(void *dst, int value, size_t size)
{
    return hip_status(api().memset(dst, value, size));
}

hipError_t hipMemcpy(void *dst, const void *src, size_t size,
                     hipMemcpyKind kind)
{
    return hip_status(api().memcpy(dst, src, size));
}

hipError_t hipDeviceSynchronize(void)
{
    return hipSuccess; /* uct_gaudi_memcpy/memset complete before return */
}

hipError_t hipPointerGetAttributes(hipPointerAttribute_t *attr,
                                   const void *ptr)
{
    return hipErrorNotSupported;
}

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * See gaudi_mem_buffer.h. Linked with the module (-luct_gaudi): the same
 * library UCX loads, so one heap serves the test and the transports.
 */

#include "gaudi_mem_buffer.h"

#include <uct/gaudi/api/uct_gaudi.h>
#include <common/test.h>


#define UCX_GAUDI_TEST_CALL(_call) \
    do { \
        ucs_status_t _status = (_call); \
        if (_status != UCS_OK) { \
            UCS_TEST_ABORT(#_call << " failed: " \
                           << ucs_status_string(_status)); \
        } \
    } while (0)


bool ucx_gaudi_test_mem_supported()
{
    static int supported = -1;
    void *probe;

    if (supported < 0) {
        supported = (uct_gaudi_mem_alloc(1, &probe) == UCS_OK);
        if (supported) {
            uct_gaudi_mem_free(probe);
        }
    }
    return supported;
}

ucs_memory_type_t ucx_gaudi_test_mem_type()
{
    return uct_gaudi_memory_type();
}

bool ucx_gaudi_test_is_gaudi(ucs_memory_type_t mem_type)
{
    return mem_type == ucx_gaudi_test_mem_type();
}

void *ucx_gaudi_test_alloc(size_t size)
{
    void *ptr;

    UCX_GAUDI_TEST_CALL(uct_gaudi_mem_alloc(size, &ptr));
    return ptr;
}

void ucx_gaudi_test_free(void *ptr)
{
    UCX_GAUDI_TEST_CALL(uct_gaudi_mem_free(ptr));
}

void ucx_gaudi_test_memset(void *ptr, int c, size_t length)
{
    UCX_GAUDI_TEST_CALL(uct_gaudi_memset(ptr, c, length));
}

bool ucx_gaudi_test_copy(void *dst, const void *src, size_t length,
                         ucs_memory_type_t dst_mem_type,
                         ucs_memory_type_t src_mem_type)
{
    bool dst_ok = (dst_mem_type == UCS_MEMORY_TYPE_HOST) ||
                  ucx_gaudi_test_is_gaudi(dst_mem_type);
    bool src_ok = (src_mem_type == UCS_MEMORY_TYPE_HOST) ||
                  ucx_gaudi_test_is_gaudi(src_mem_type);

    if (!dst_ok || !src_ok ||
        ((dst_mem_type == UCS_MEMORY_TYPE_HOST) &&
         (src_mem_type == UCS_MEMORY_TYPE_HOST))) {
        return false;
    }

    if (length > 0) {
        UCX_GAUDI_TEST_CALL(uct_gaudi_memcpy(dst, src, length));
    }
    return true;
}

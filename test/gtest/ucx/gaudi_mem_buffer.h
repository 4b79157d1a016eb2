/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The Gaudi path of UCX's gtest test allocator (mem_buffer) where UCX has a
 * Gaudi memory type of its own or its ROCm path cannot serve Gaudi memory:
 * gaudi_mem_buffer.sh inserts calls to these into the release's
 * mem_buffer.cc at build time. Gaudi memory is the module's memory type
 * (uct_gaudi_memory_type(): UCS_MEMORY_TYPE_GAUDI from UCX 1.21, else the
 * ROCM slot), allocated, filled and copied through the public API
 * (uct_gaudi.h), never touched by the CPU.
 */

#ifndef UCX_GAUDI_TEST_MEM_BUFFER_H_
#define UCX_GAUDI_TEST_MEM_BUFFER_H_

#include <ucs/memory/memory_type.h>
#include <stddef.h>

/* Whether this process has a usable Gaudi device */
bool ucx_gaudi_test_mem_supported();

/* The memory type Gaudi buffers have */
ucs_memory_type_t ucx_gaudi_test_mem_type();

bool ucx_gaudi_test_is_gaudi(ucs_memory_type_t mem_type);

void *ucx_gaudi_test_alloc(size_t size);

void ucx_gaudi_test_free(void *ptr);

void ucx_gaudi_test_memset(void *ptr, int c, size_t length);

/* A copy between Gaudi memory and host or Gaudi memory: done, true; any
 * other pair: false, for mem_buffer's own paths */
bool ucx_gaudi_test_copy(void *dst, const void *src, size_t length,
                         ucs_memory_type_t dst_mem_type,
                         ucs_memory_type_t src_mem_type);

#endif

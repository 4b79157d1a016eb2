/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Every UCX-version difference lives here; nothing else tests versions.
 */

#ifndef UCT_GAUDI_COMPAT_H_
#define UCT_GAUDI_COMPAT_H_

#include <uct/api/version.h>
#include <uct/base/uct_component.h>
#include <ucs/memory/memory_type.h>


#if UCT_API >= UCT_VERSION(1, 21)
/* UCX >= 1.21 has a memory type of its own for Gaudi */
#  define UCT_GAUDI_MEMORY_TYPE          UCS_MEMORY_TYPE_GAUDI
#  define UCT_GAUDI_MEMORY_TYPE_BORROWED 0
#else
/*
 * Older UCX has no Gaudi memory type. Gaudi memory is presented in the ROCM
 * slot, which stock Debian UCX never uses (no rocm module is built). ROCM,
 * not ROCM_MANAGED: UCP must never access it with the CPU
 * (UCS_MEMORY_TYPES_CPU_ACCESSIBLE, ucs/memory/memory_type.h).
 * docs/ucx-loading.md section 4.
 */
#  define UCT_GAUDI_MEMORY_TYPE          UCS_MEMORY_TYPE_ROCM
#  define UCT_GAUDI_MEMORY_TYPE_BORROWED 1
#endif

/*
 * DMA-BUF fields of uct_md_mem_attr_t (UCT_MD_MEM_ATTR_FIELD_DMABUF_FD /
 * _OFFSET) exist from UCX 1.14; 1.13.1 has no dma-buf API at all
 * (docs/ucx-loading.md section 6).
 */
#if UCT_API >= UCT_VERSION(1, 14)
#  define UCT_GAUDI_HAVE_MEM_ATTR_DMABUF 1
#else
#  define UCT_GAUDI_HAVE_MEM_ATTR_DMABUF 0
#endif

/* "rocm" on UCX < 1.21: what users pass to ucx_perftest -m */
#define UCT_GAUDI_MEMORY_TYPE_NAME ucs_memory_type_names[UCT_GAUDI_MEMORY_TYPE]


/*
 * Whether the borrowed memory-type slot is free in this process: a real ROCm
 * component would own it, and the two cannot share it (UCP keeps one
 * memtype EP and one detect order per type). Call after UCX has loaded its
 * modules, i.e. from query_md_resources. Logs why when it is not free.
 */
int uct_gaudi_memory_type_available(void);

#endif

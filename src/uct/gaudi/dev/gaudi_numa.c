/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * NUMA placement of device-visible host buffers (declared in gaudi_dev.h).
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dev/gaudi_dev.h>

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>
#include <ucs/sys/math.h>

#include <numa.h>
#include <numaif.h>
#include <errno.h>
#include <limits.h>
#include <string.h>


int uct_gaudi_numa_node(const uct_gaudi_dev_info_t *info)
{
    long node;

    if ((info->pci_addr[0] == '\0') ||
        (ucs_read_file_number(&node, 1, "/sys/bus/pci/devices/%s/numa_node",
                              info->pci_addr) != UCS_OK) ||
        (node < 0) || (node > INT_MAX)) {
        return -1;
    }

    return (int)node;
}

int uct_gaudi_numa_target(const uct_gaudi_dev_info_t *info,
                          const char **reason)
{
    int node, mode;

    if (numa_available() < 0) {
        *reason = "the kernel has no NUMA support";
        return -1;
    }

    node = uct_gaudi_numa_node(info);
    if (node < 0) {
        *reason = "its PCI device reports no NUMA node";
        return -1;
    }

    /* numactl --membind/--interleave/--preferred: the user's choice wins */
    if ((get_mempolicy(&mode, NULL, 0, NULL, 0) != 0) ||
        (mode != MPOL_DEFAULT)) {
        *reason = "the process has a memory policy of its own";
        return -1;
    }

    if (numa_num_configured_nodes() <= 1) {
        *reason = "the host has a single NUMA node";
        return -1;
    }

    if ((node > numa_max_node()) ||
        !numa_bitmask_isbitset(numa_all_nodes_ptr, node)) {
        *reason = "its NUMA node is not available to this process";
        return -1;
    }

    *reason = NULL;
    return node;
}

ucs_status_t uct_gaudi_numa_bind(void *ptr, size_t size, int node)
{
    struct bitmask *mask;
    int ret, err;

    if (((uintptr_t)ptr % ucs_get_page_size()) != 0) {
        return UCS_ERR_INVALID_PARAM;
    }

    mask = numa_allocate_nodemask();
    if (mask == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    /* preferred, not bound: a full node falls back instead of failing;
     * MOVE: pages the allocator had already touched follow */
    numa_bitmask_setbit(mask, node);
    ret = mbind(ptr, size, MPOL_PREFERRED, mask->maskp, mask->size + 1,
                MPOL_MF_MOVE);
    err = errno;
    numa_free_nodemask(mask);
    errno = err;
    return (ret == 0) ? UCS_OK : UCS_ERR_IO_ERROR;
}

void uct_gaudi_numa_place(const uct_gaudi_ctx_t *ctx, void *ptr, size_t size,
                          const char *what)
{
    const uct_gaudi_dev_info_t *info = ctx->info;
    ucs_status_t status;
    const char *reason;
    int node;

    node = uct_gaudi_numa_target(info, &reason);
    if (node < 0) {
        ucs_debug("gaudi %s: %s (%zu bytes) not placed: %s", info->name,
                  what, size, reason);
        return;
    }

    status = uct_gaudi_numa_bind(ptr, size, node);
    if (status != UCS_OK) {
        ucs_diag("gaudi %s: failed to place %s (%zu bytes at %p) on NUMA "
                 "node %d: %s", info->name, what, size, ptr, node,
                 (status == UCS_ERR_IO_ERROR) ? strerror(errno) :
                                                ucs_status_string(status));
        return;
    }

    ucs_debug("gaudi %s: %s (%zu bytes) placed on NUMA node %d", info->name,
              what, size, node);
}

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * NUMA placement of the host buffers a device reads and writes (command
 * buffers, bounce buffers): on multi-socket hosts they go to the NUMA node
 * of the device's PCI function, so its DMA does not cross the socket
 * interconnect. Placement is best effort and never fails an allocation.
 * Design notes: docs/base.md.
 */

#ifndef UCT_GAUDI_NUMA_H_
#define UCT_GAUDI_NUMA_H_

#include <uct/gaudi/dev/gaudi_base.h>

BEGIN_C_DECLS

/* The device's NUMA node from sysfs (PCI numa_node), -1 if none/unknown */
int uct_gaudi_numa_node(const uct_gaudi_dev_info_t *info);

/**
 * The node to place the device's host buffers on, or -1 and @a reason
 * (checked in this order): no NUMA support, no node reported, a memory
 * policy of the process's own (e.g. numactl --membind), which is
 * respected, a single-node host, a node this process may not allocate on.
 */
int uct_gaudi_numa_target(const uct_gaudi_dev_info_t *info,
                          const char **reason);

/* Prefer @a node for the page-aligned [ptr, +size) and move pages there */
ucs_status_t uct_gaudi_numa_bind(void *ptr, size_t size, int node);

/* Place a page-aligned host buffer of @a ctx's device; logs, never fails */
void uct_gaudi_numa_place(const uct_gaudi_ctx_t *ctx, void *ptr, size_t size,
                          const char *what);

END_C_DECLS

#endif

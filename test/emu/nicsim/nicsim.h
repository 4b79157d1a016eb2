/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The emulated RDMA NIC (test/emu/nicsim, libuct_nicsim.so): what a test can
 * read of it. Tests reach it with dlsym(RTLD_DEFAULT,
 * "uct_nicsim_counters_get") when the NIC is preloaded. docs/gdr.md.
 */

#ifndef UCT_NICSIM_H_
#define UCT_NICSIM_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Process-wide counters of the NIC (every MD and interface) */
typedef struct {
    uint64_t host_regs;        /* host memory registrations made */
    uint64_t dmabuf_regs;      /* dma-buf registrations made */
    uint64_t regs_refused;     /* registrations refused */
    uint64_t live_regs;        /* registrations not yet deregistered */
    uint64_t dmabuf_read;      /* bytes the NIC read from dma-buf MRs */
    uint64_t dmabuf_written;   /* bytes the NIC wrote into dma-buf MRs */
    uint64_t host_read;        /* bytes read from host MRs */
    uint64_t host_written;     /* bytes written into host MRs */
    uint64_t remote_refused;   /* remote accesses refused (bad key/range) */
} uct_nicsim_counters_t;

void uct_nicsim_counters_get(uct_nicsim_counters_t *counters);

#ifdef __cplusplus
}
#endif

#endif

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * hlsim public control API. libhlsim.so is an LD_PRELOAD emulator of the
 * habanalabs driver; tests reach these functions with
 * dlsym(RTLD_DEFAULT, "hlsim_...") so that they need not link it.
 * Every function returns 0 (or a value) on success and -errno on failure.
 * See docs/hlsim.md.
 */

#ifndef HLSIM_H_
#define HLSIM_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Fail the nth (1-based) call of @op from now on in this process with
 * @err. Ops: open info cb cs wait_cs mem_alloc mem_free mem_map mem_unmap
 * mem_export mem_reg_dmabuf dma_error cs_timeout reset pdma dmabuf_attach.
 */
int hlsim_fault_add(const char *op, unsigned nth, int err);

/* Remove every pending fault of this process (env ones included) */
int hlsim_fault_clear(void);

/*
 * Set a device status (GAUDI_HL_DEVICE_STATUS_*), system-wide. Status
 * IN_RESET set this way stays until set back; see hlsim_reset_device().
 */
int hlsim_set_device_status(int dev, unsigned status);

/* Current status of a device (or -errno) */
int hlsim_get_device_status(int dev);

/*
 * Hard-reset a device: status IN_RESET, every in-flight CS on it aborted,
 * back to OPERATIONAL after @ms milliseconds (0: HLSIM_RESET_MS).
 */
int hlsim_reset_device(int dev, unsigned ms);

typedef enum {
    HLSIM_COUNTER_OPEN_FDS,      /* emulated fds open in this process */
    HLSIM_COUNTER_CONTEXTS,      /* live compute contexts (process) */
    HLSIM_COUNTER_CS_SUBMITTED,  /* CS accepted (process) */
    HLSIM_COUNTER_CS_COMPLETED,  /* CS finished OK (process) */
    HLSIM_COUNTER_CS_ABORTED,    /* CS aborted or timed out (process) */
    HLSIM_COUNTER_DMA_BYTES,     /* bytes moved by LIN_DMA (process) */
    HLSIM_COUNTER_MAPPINGS,      /* live MAP results (process) */
    HLSIM_COUNTER_ALLOCS,        /* live ALLOC handles (process) */
    HLSIM_COUNTER_DMABUFS,       /* dma-buf fds exported here, open */
    HLSIM_COUNTER_DRAM_USED,     /* device-wide bytes, @dev required */
    HLSIM_COUNTER_CS_IOCTLS,     /* CS ioctls, refused ones too (process) */
    HLSIM_COUNTER_WAIT_CS_IOCTLS, /* WAIT_CS ioctls (process) */
    HLSIM_COUNTER_ENGINE_NS,     /* ns spent running jobs, all engines,
                                    HLSIM_ENGINE_CLOCK=1 only (process) */
    HLSIM_COUNTER_WAITER_NS,     /* the part of it run by WAIT_CS callers */
    HLSIM_COUNTER_JOBS,          /* jobs run: one per queue a CS used */
    HLSIM_COUNTER_PAGE_FAULTS,   /* MMU page faults of this process's
                                    DMAs (LIN_DMA, CB fetch, PDMA copy) */
    HLSIM_COUNTER_DMABUF_ATTACHMENTS, /* live hlsim_dmabuf_attach()
                                         handles (process) */
    HLSIM_COUNTER_STALE_PIN_DMAS, /* DMAs through a USERPTR mapping whose
                                     host pages are no longer the ones
                                     pinned at MAP (process) */
    HLSIM_COUNTER_POLLS_IN_FLIGHT, /* WAIT_CS polls (timeout 0) that found
                                      their CS still running (process) */
    HLSIM_COUNTER_ENGINE0_JOBS,  /* jobs run by DMA engine 0 (queues 0-3:
                                    Gaudi2 PDMA0, Gaudi1 DMA_0; process) */
    HLSIM_COUNTER_ENGINE1_JOBS,  /* by engine 1 (queues 4-7: PDMA1, DMA_1) */
    HLSIM_COUNTER_ENGINE0_BYTES, /* LIN_DMA bytes moved by engine 0 */
    HLSIM_COUNTER_ENGINE1_BYTES, /* by engine 1 */
    HLSIM_COUNTER_LAST
} hlsim_counter_t;

/* Read a counter; @dev is used by per-device counters only */
int64_t hlsim_get_counter(hlsim_counter_t counter, int dev);

/*
 * Copy @size bytes from device address @src to @dst on a user-owned PDMA
 * channel of the compute context behind @fd (the channels Gaudi2/3 list
 * in pdma_user_owned_ch_mask, which SynapseAI programs from user space
 * instead of submitting a CS). Both ranges translate through the context
 * like LIN_DMA addresses; synchronous. -EBADF: not a compute fd; -EFAULT:
 * a range is not mapped (an MMU page fault, logged); -EIO: the device is
 * not operational; fault op "pdma" fails the call with its errno.
 */
int hlsim_pdma_copy(int fd, uint64_t dst, uint64_t src, uint64_t size);

/*
 * Whether [@va, +@len) lies in a mapping of the compute context behind
 * @fd that an op-99 import (HL_MEM_OP_REG_DMABUF_FD) made: 1 yes, 0 no,
 * -EBADF not a compute fd. For the emulated libSynapse, which lets a test
 * choose what its engines do with such an address (docs/synapse.md).
 */
int hlsim_va_imported(int fd, uint64_t va, uint64_t len);

/*
 * Record an MMU page fault of a PDMA copy at [@va, +@len) on the device
 * behind compute fd @fd, as hlsim_pdma_copy does for an unmapped range
 * (HLSIM_COUNTER_PAGE_FAULTS, $HLSIM_ROOT/page-faults): for the emulated
 * libSynapse when its engine is not to reach an imported VA. 0 or -EBADF.
 */
int hlsim_pdma_fault(int fd, uint64_t va, uint64_t len);

/*
 * Dma-buf importers other than the habanalabs driver (test entry points
 * for the emulated RDMA NIC, test/emu/nicsim): attach to the dma-buf @fd as
 * another device's driver does (dma_buf_get + attach + map: the exporter's
 * pages as a scatter list), holding its own reference to it. Returns a
 * handle >= 0 and the dma-buf's size in @size_p; -EBADF: @fd is not open;
 * -EINVAL: not an exported dma-buf of this node; fault op
 * "dmabuf_attach" fails the call with its errno.
 */
int hlsim_dmabuf_attach(int fd, uint64_t *size_p);

/*
 * Peer-to-peer DMA of @len bytes between @buf and @offset of an attached
 * dma-buf (@write: into the exporter's device memory). -EBADF: no such
 * handle; -EINVAL: the range is not inside the dma-buf; -EIO: the
 * exporter's device is not operational.
 */
int hlsim_dmabuf_access(int handle, uint64_t offset, void *buf,
                        uint64_t len, int write);

/* Unmap, detach and drop the reference of hlsim_dmabuf_attach() */
int hlsim_dmabuf_detach(int handle);

/*
 * Whether DMAs are checked for stale pins (HLSIM_COUNTER_STALE_PIN_DMAS):
 * 1, or 0 when /proc/self/pagemap shows no page frames (not root)
 */
int hlsim_pin_check_active(void);

/* The node directory this process uses (HLSIM_ROOT) */
const char *hlsim_root(void);

#ifdef __cplusplus
}
#endif

#endif

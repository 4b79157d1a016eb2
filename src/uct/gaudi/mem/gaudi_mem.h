/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Device memory of the memory layer: the process-wide heap of the selected
 * device (driver chunks, sub-allocation, the allocation table, Gaudi
 * pointer window), the registry of live memory handles, DMA-BUF export and
 * the process counters. Both components (gaudi_copy, gaudi_ipc) and the
 * public API (api/uct_gaudi.h) share one heap, so a buffer allocated
 * through one UCX context is known to every other. Host registration and
 * address resolution: gaudi_reg.h. Design: docs/md.md.
 */

#ifndef UCT_GAUDI_MEM_H_
#define UCT_GAUDI_MEM_H_

#include <uct/gaudi/api/uct_gaudi.h>
#include <uct/gaudi/dev/gaudi_dev.h>
#include <uct/gaudi/dma/gaudi_dma.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/pgtable.h>
#include <ucs/type/status.h>
#include <sys/types.h>

BEGIN_C_DECLS

/*
 * Addresses.
 * - A "Gaudi pointer" is what the MD hands out for device memory
 *   (mem_alloc) and what applications pass to UCX: a device address that is
 *   never dereferenced by the CPU. On Gaudi2/3 it is the DRAM VA returned by
 *   MAP (facts 3.3); on Gaudi1, whose DRAM is not virtualized (facts 3.2),
 *   it is a synthetic non-canonical window over the physical user range, so
 *   it can never alias a host address.
 * - A "DMA address" is what a LIN_DMA packet takes (facts 5.3, 5.4): the
 *   DRAM VA (Gaudi2), the physical DRAM address (Gaudi1), or the device VA of
 *   a host mapping (MAP USERPTR).
 */

/* Alignment (and granularity) of every sub-allocated buffer */
#define UCT_GAUDI_MEM_ALLOC_ALIGN   256

/*
 * Gaudi1 has no DRAM MMU (facts 3.2, 3.4): its pointers are
 * UCT_GAUDI_MEM_G1_WINDOW + physical address, a non-canonical x86-64
 * address that can never alias host memory. DMA address = pointer - window.
 */
#define UCT_GAUDI_MEM_G1_WINDOW     0x4000000000000000ull

/* Gaudi1 chunks from SynapseAI's allocator: the cap of
 * UCX_GAUDI_SYN_HEAP_CHUNK there (Gaudi1 has no DRAM page of the MMU) */
#define UCT_GAUDI_MEM_G1_SYN_CHUNK  (32ull << 20)

/* End of the DRAM VA range (VA_HBM_SPACE_END, facts 3.4) */
#define UCT_GAUDI_MEM_G2_VA_END     0x1002000000000000ull
#define UCT_GAUDI_MEM_G3_VA_END     0x0202000000000000ull

/* Tag of a valid memory handle (the registry is authoritative) */
#define UCT_GAUDI_MEMH_TAG      0x47434d48u  /* "GCMH" */


typedef enum {
    UCT_GAUDI_MEMH_ALLOC = 1,   /* device memory from mem_alloc */
    UCT_GAUDI_MEMH_DEVICE_REG,  /* registration of device memory */
    UCT_GAUDI_MEMH_HOST_REG,    /* MAP USERPTR, owned by the memh */
    UCT_GAUDI_MEMH_HOST_RCACHE  /* MAP USERPTR, in an rcache region */
} uct_gaudi_memh_kind_t;


struct uct_gaudi_buf;

/* What a uct_mem_h of gaudi_copy points to; also a resolved local buffer */
typedef struct uct_gaudi_memh {
    uint32_t                  tag;       /* UCT_GAUDI_MEMH_TAG */
    uint32_t                  kind;      /* uct_gaudi_memh_kind_t */
    uint64_t                  address;   /* first byte, as the user sees it */
    uint64_t                  length;
    uint64_t                  dma_base;  /* DMA address of @address */
    uint64_t                  map_va;    /* HOST_*: VA returned by MAP */
    struct uct_gaudi_buf      *buf;      /* ALLOC/DEVICE_REG, or NULL */
    uint32_t                  user_refs; /* HOST_RCACHE: handed out, not
                                            deregistered yet */
    uint32_t                  deferred;  /* HOST_REG made before the device
                                            was taken: not mapped, its
                                            copies register on the fly */
} uct_gaudi_memh_t;


/* Process-wide counters (plain: UCS stats are compiled out in Debian) */
#define UCT_GAUDI_MEM_COUNTER_ADD(_heap, _name, _delta) \
    __atomic_add_fetch(&(_heap)->counters._name, (_delta), __ATOMIC_RELAXED)


/* A driver allocation sub-divided into buffers */
typedef struct uct_gaudi_chunk {
    ucs_list_link_t list;       /* in heap->chunks, or heap->deferred */
    uint64_t        handle;     /* ALLOC handle (Gaudi2/3) */
    int             mapped;     /* MAP not undone yet (Gaudi2/3) */
    int             syn;        /* from synDeviceMalloc, not the driver */
    int             exported;   /* a dma-buf of it was ever exported */
    uint64_t        *export_ids; /* SynapseAI chunk: st_dev, st_ino of
                                    each dma-buf file exported from it */
    unsigned        num_exports;
    int             export_lost; /* an export not noted: kept for good */
    unsigned        release_tries; /* failed releases (deferred) */
    uint64_t        ptr;        /* Gaudi pointer of byte 0 = MAP VA */
    uint64_t        dma;        /* DMA address of byte 0 */
    uint64_t        size;
    uint64_t        used;       /* bytes in buffers */
    unsigned        nbufs;
    int             dedicated;  /* one large buffer, released with it */
    ucs_list_link_t free_list;  /* uct_gaudi_extent_t by offset */
} uct_gaudi_chunk_t;


/* A device buffer handed out by mem_alloc; its own memh is embedded */
typedef struct uct_gaudi_buf {
    ucs_pgt_region_t       super;     /* [ptr, ptr + size): table key */
    uct_gaudi_memh_t       memh;
    uct_gaudi_chunk_t      *chunk;
    uint64_t               offset;    /* in the chunk */
    uint64_t               size;      /* rounded, as reported to the user */
    int                    dmabuf_fd; /* kept export, or -1 */
    uint64_t               dmabuf_offset; /* of the buffer in the export */
    unsigned               regs;      /* DEVICE_REG memhs on the buffer */
} uct_gaudi_buf_t;


/* A range of device memory resolved through the heap */
typedef struct uct_gaudi_dev_range {
    uint64_t             base;     /* allocation base (Gaudi pointer) */
    uint64_t             length;   /* allocation length */
    uint64_t             dma_base; /* DMA address of base */
    uct_gaudi_buf_t      *buf;     /* NULL: not allocated by the plugin */
} uct_gaudi_dev_range_t;


/*
 * The process's heap on its device. It exists before the device is taken
 * (UCX init, ucx_info: no compute node is opened then): @a info is the
 * device expected (discovery), @a ctx is NULL until the first operation
 * that needs the device takes it (uct_gaudi_heap_take), then @a info is
 * the device taken; both stay for the life of the heap.
 */
typedef struct uct_gaudi_heap {
    uct_gaudi_ctx_t           *ctx;      /* our own device reference, or
                                            NULL: not taken yet */
    const uct_gaudi_dev_info_t *info;    /* expected, then taken device */
    pthread_mutex_t           lock;      /* chunks, table, registry; taken
                                            by mem/ only, inside its
                                            functions */
    ucs_status_t              open_status; /* of our own open (UCS_OK:
                                              not tried or succeeded) */
    int                       take_logged; /* a take failure was logged */
    uint64_t                  uuid;      /* identity of this device context */
    uint64_t                  win_start; /* Gaudi pointer window */
    uint64_t                  win_end;
    uint64_t                  chunk_size;   /* dram_page_size (facts 2.3),
                                               SynapseAI's memory:
                                               UCX_GAUDI_SYN_HEAP_CHUNK */
    size_t                    host_page;
    ucs_list_link_t           chunks;
    ucs_list_link_t           deferred; /* empty chunks the driver did not
                                           release yet (exported) */
    ucs_list_link_t           retained; /* empty exported chunks of
                                           SynapseAI, kept (see below) */
    int                       device_mem; /* uct_gaudi_device_mem_t:
                                             DRIVER, SYNAPSE or AUTO */
    struct uct_gaudi_syn      *syn;      /* SYNAPSE: allocator, the ctx's
                                            or (kernel backend on
                                            SynapseAI's fd) our own */
    uint32_t                  syn_device; /* its synDeviceId */
    int                       syn_own;   /* syn loaded by the heap */
    uint64_t                  syn_absent_at; /* uct_gaudi_syn_is_loaded */
    ucs_pgtable_t             bufs;     /* uct_gaudi_buf_t */
    void                      *registry; /* live memh set (khash) */
    unsigned                  refcount;  /* MDs + public API */
    uct_gaudi_counters_t      counters;
} uct_gaudi_heap_t;


/* Take/drop a reference on the process heap: of @a ctx, or with NULL of
 * the expected device, not taken until an operation needs it */
ucs_status_t uct_gaudi_heap_get(uct_gaudi_ctx_t *ctx,
                                uct_gaudi_heap_t **heap_p);

/**
 * The heap reference of a new MD, on the process's device
 * (uct_gaudi_device_info): the device is not taken, unless the
 * application holds it already (its fd or SynapseAI's: borrowed).
 */
ucs_status_t uct_gaudi_heap_md_get(uct_gaudi_heap_t **heap_p);

/* The heap's device context, or NULL while the device is not taken */
static inline uct_gaudi_ctx_t *uct_gaudi_heap_ctx(uct_gaudi_heap_t *heap)
{
    return __atomic_load_n(&heap->ctx, __ATOMIC_ACQUIRE);
}

/**
 * Take the device for @a op if it is not taken yet: borrow the one the
 * application holds (UCX_GAUDI_DEVICE_FD, SynapseAI's), re-checked at
 * every call; with @a may_open (allocations of device memory through UCX)
 * open or acquire it when nobody holds one, once per process. Call
 * without heap->lock (an open may wait for a device in reset). Failure:
 * UCS_ERR_NO_DEVICE (nobody holds one, and @a op does not open one) or
 * the open's status; one message per process names the device and @a op
 * (none with @a quiet).
 */
ucs_status_t uct_gaudi_heap_take(uct_gaudi_heap_t *heap, int may_open,
                                 int quiet, const char *op);

void uct_gaudi_heap_put(uct_gaudi_heap_t *heap);

/* The heap if one exists (public API, counters), else NULL */
uct_gaudi_heap_t *uct_gaudi_heap_peek(void);

/* Device name for messages: "GAUDI_0 (accel0)" */
const char *uct_gaudi_heap_name(const uct_gaudi_heap_t *heap);

/*
 * Whether the device may be used from the calling process: after fork()
 * the child inherits the fd, but the device context (and every mapping in
 * it) belongs to the parent (facts 7.1), so the child must not issue
 * MEMORY ioctls. Logs @a op when not.
 */
int uct_gaudi_heap_owned(uct_gaudi_heap_t *heap, const char *op);

/**
 * Whether the heap may hand out device memory. Not on Gaudi1 with a
 * borrowed fd (UCX_GAUDI_DEVICE_FD, SynapseAI) and driver memory: its
 * ALLOC is accounting only (facts 3.2, 9.5), so nothing tells which DRAM
 * the fd's owner uses; SynapseAI's allocator does (UCX_GAUDI_DEVICE_MEM).
 */
int uct_gaudi_heap_can_alloc(const uct_gaudi_heap_t *heap);

/* Whether [addr, addr+len) lies wholly in the device pointer window */
static inline int
uct_gaudi_heap_in_window(const uct_gaudi_heap_t *heap,
                         uint64_t addr, size_t len)
{
    return (addr >= heap->win_start) && (addr < heap->win_end) &&
           (len <= heap->win_end - addr);
}

/* Whether any byte of [addr, addr+len) lies in the window */
static inline int
uct_gaudi_heap_touches_window(const uct_gaudi_heap_t *heap,
                              uint64_t addr, size_t len)
{
    uint64_t end = (len > UINT64_MAX - addr) ? UINT64_MAX : addr + len;

    return (addr < heap->win_end) && (end > heap->win_start);
}


/* Allocation */

/* Allocate *length_p bytes (rounded up, updated); memh is &buf->memh */
ucs_status_t uct_gaudi_heap_alloc(uct_gaudi_heap_t *heap,
                                  size_t *length_p,
                                  uct_gaudi_buf_t **buf_p);

/*
 * Release of empty chunks (Gaudi2/3). The driver refuses to UNMAP a mapping
 * while a dma-buf exported from it is alive anywhere (facts 3.3): e.g. a
 * peer process imported the buffer (gaudi_ipc, op 99) and has not dropped
 * it yet, or the application still holds a uct_gaudi_dmabuf_get() fd. Such
 * a chunk moves to heap->deferred: its range is never handed out again
 * (the driver keeps the mapping) and its release is retried on every heap
 * alloc and free, by uct_gaudi_heap_progress(), and at heap teardown
 * (with a short grace period; still exported then: one warning, the driver
 * frees it when the device is closed, facts 3.2).
 *
 * Chunks from SynapseAI's allocator (UCX_GAUDI_DEVICE_MEM) are pieces of
 * SynapseAI's pool mapping and go back with synDeviceFree, which hands a
 * freed piece out again at once; the pool's mapping is never unmapped, so
 * the driver's refusal above does not protect them. An empty chunk that
 * was exported goes back only when no fd of any dma-buf file exported
 * from it is open in this process any more (/proc/self/fd): a gaudi_ipc
 * peer's transfers need the exporter to hold the file (its per-transfer
 * check, docs/ipc.md), so none starts after that. Until then it stays on
 * heap->retained, serves the heap's next chunks that fit in it (smallest
 * first), and is checked again at every heap alloc and free; what is left
 * at heap teardown goes with SynapseAI's release of the device.
 */

/* Retry deferred releases now; cheap when there are none. Takes the lock */
void uct_gaudi_heap_progress(uct_gaudi_heap_t *heap);

/* Free the buffer of @a memh, a live handle of mem_alloc; *length_p: its
 * length. UCS_ERR_INVALID_PARAM (not logged) when @a memh is not one */
ucs_status_t uct_gaudi_heap_free_memh(uct_gaudi_heap_t *heap, void *memh,
                                      size_t *length_p);

/* Free the buffer whose first byte is @a ptr (public API);
 * UCS_ERR_INVALID_ADDR (not logged) when no live buffer starts there */
ucs_status_t uct_gaudi_heap_free_ptr(uct_gaudi_heap_t *heap, uint64_t ptr);

/* Size of the live buffer whose first byte is @a ptr, or 0 */
size_t uct_gaudi_heap_buf_size(uct_gaudi_heap_t *heap, uint64_t ptr);

/*
 * Resolve device memory [addr, addr+len) (must be in the window):
 * plugin buffers by the table (the range must be inside one buffer,
 * else UCS_ERR_INVALID_ADDR); other pointers of the window (e.g.
 * SynapseAI's, on a shared fd) as a range of their own.
 */
ucs_status_t uct_gaudi_heap_resolve(uct_gaudi_heap_t *heap,
                                    uint64_t addr, size_t len,
                                    uct_gaudi_dev_range_t *range);

/* DMA address of device memory [ptr, +len) (in the window): resolved,
 * else UCS_ERR_INVALID_ADDR with one message */
ucs_status_t uct_gaudi_heap_dma_addr(uct_gaudi_heap_t *heap, const void *ptr,
                                     size_t len, uint64_t *dma_addr_p);

/**
 * [ptr, +len) as a side of a synchronous copy (uct_gaudi_dma_copy_sync):
 * host memory as it is, device memory by its DMA address. A range that is
 * only partly device memory is an error: the CPU must never touch it.
 */
ucs_status_t uct_gaudi_heap_dma_end(uct_gaudi_heap_t *heap, const void *ptr,
                                    size_t len, const char *op,
                                    uct_gaudi_dma_end_t *end);

/* DMA address of a window pointer not allocated by the plugin */
uint64_t uct_gaudi_heap_dma_of(const uct_gaudi_heap_t *heap,
                               uint64_t ptr);


/* Registry of live memory handles */

/* Whether @a memh is live; then *copy is what it holds now */
int uct_gaudi_heap_memh_get(uct_gaudi_heap_t *heap, const void *memh,
                            uct_gaudi_memh_t *copy);


/* DMA-BUF export (facts 4.1) */

/*
 * A dma-buf fd of device memory [addr, addr+len) and the offset of @a addr
 * in it; the caller closes the fd.
 * - The module's buffers: a dup of the export made once per buffer (by
 *   the exact MAP VA of its chunk, page-aligned offset and size; for a
 *   chunk from synDeviceMalloc, as below) and closed when it is freed.
 * - SynapseAI's memory on the shared fd (Gaudi2/3): a new export of the
 *   pages around the range in SynapseAI's pool mapping (docs/md.md,
 *   "Export"). UCS_ERR_UNSUPPORTED, logged at debug level only, when
 *   nothing tells where that pool lies (memory of unknown origin).
 * A freed or stale address of the module's is UCS_ERR_INVALID_ADDR.
 */
ucs_status_t uct_gaudi_heap_dmabuf(uct_gaudi_heap_t *heap,
                                   uint64_t addr, size_t len,
                                   int *fd_p, uint64_t *offset_p);

END_C_DECLS

#endif

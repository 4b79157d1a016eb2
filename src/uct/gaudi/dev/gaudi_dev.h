/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The device layer (dev/): device discovery (control nodes + sysfs), the
 * process's device selection config (UCX_GAUDI_*) and the refcounted
 * per-process device context that every MD and iface shares. Design: docs/base.md.
 */

#ifndef UCT_GAUDI_DEV_H_
#define UCT_GAUDI_DEV_H_

#include <uct/gaudi/hl/gaudi_hl.h>
#include <uct/gaudi/hl/gaudi_driver.h>

#include <uct/gaudi/compat/gaudi_compat.h>
#include <ucs/time/time_def.h>
#include <ucs/type/spinlock.h>
#include <pthread.h>
#include <sys/types.h>

BEGIN_C_DECLS

#define UCT_GAUDI_PCI_ADDR_MAX    16   /* "dddd:bb:ss.f" + '\0' */
#define UCT_GAUDI_DEV_NAME_MAX    16   /* "GAUDI_<n>" */
#define UCT_GAUDI_SYSFS_VALUE_MAX 32


typedef enum {
    UCT_GAUDI_ASIC_UNKNOWN,
    UCT_GAUDI_ASIC_GAUDI1,
    UCT_GAUDI_ASIC_GAUDI2,
    UCT_GAUDI_ASIC_GAUDI3,
    UCT_GAUDI_ASIC_LAST
} uct_gaudi_asic_t;


/* A device found by discovery; immutable after discovery */
typedef struct uct_gaudi_dev_info {
    int                        index;     /* logical index (user selects) */
    int                        minor;     /* N of the node names */
    gaudi_hl_abi_t             abi;       /* ioctl code set of the driver */
    uct_gaudi_asic_t           asic;
    uint32_t                   module_id; /* hw_ip.module_id (OAM slot) */
    uint32_t                   status;    /* GAUDI_HL_DEVICE_STATUS_* */
    int                        has_bus_id;
    ucs_sys_bus_id_t           bus_id;
    ucs_sys_device_t           sys_dev;   /* UCS_SYS_DEVICE_ID_UNKNOWN if none */
    char                       name[UCT_GAUDI_DEV_NAME_MAX]; /* "GAUDI_0" */
    char                       node_name[UCT_GAUDI_HL_NAME_MAX]; /* "accel0" */
    char                       pci_addr[UCT_GAUDI_PCI_ADDR_MAX];
    char                       device_type[UCT_GAUDI_SYSFS_VALUE_MAX];
    char                       sysfs_status[UCT_GAUDI_SYSFS_VALUE_MAX];
    struct gaudi_hl_hw_ip_info hw_ip;     /* dram base/size/page sizes... */
    uint64_t                   dram_bar_size; /* DRAM PCI BAR, 0: unknown */
    int                        out_of_tree; /* Habana's driver: 1, in-kernel:
                                               0, unknown: -1 (sysfs) */
} uct_gaudi_dev_info_t;


/* The discovered devices, sorted by logical index; cached per process */
typedef struct uct_gaudi_devices {
    unsigned             count;
    uct_gaudi_dev_info_t dev[GAUDI_HL_MAX_MINOR];
    /* nodes that exist but could not be probed: the devices after them
     * got lower logical indices than their minors */
    uint8_t              skipped[GAUDI_HL_MAX_MINOR];
    /* index of the minor set by GAUDI_MAPPING_TABLE, not by order */
    uint8_t              mapped[GAUDI_HL_MAX_MINOR];
} uct_gaudi_devices_t;


/* The engine that copies for a device (UCX_GAUDI_COPY_BACKEND) */
typedef enum {
    UCT_GAUDI_BACKEND_AUTO,
    UCT_GAUDI_BACKEND_KERNEL,   /* kernel command submission (Gaudi1/2) */
    UCT_GAUDI_BACKEND_SYNAPSE,  /* SynapseAI streams and events */
    UCT_GAUDI_BACKEND_LAST
} uct_gaudi_backend_t;

extern const char *uct_gaudi_backend_names[];


/* Where the heap gets device memory (UCX_GAUDI_DEVICE_MEM) */
typedef enum {
    UCT_GAUDI_DEVICE_MEM_AUTO,
    UCT_GAUDI_DEVICE_MEM_DRIVER,   /* ALLOC + MAP on the device fd */
    UCT_GAUDI_DEVICE_MEM_SYNAPSE,  /* synDeviceMalloc */
    UCT_GAUDI_DEVICE_MEM_LAST
} uct_gaudi_device_mem_t;

extern const char *uct_gaudi_device_mem_names[];


/* UCX_GAUDI_* global configuration (prefix "GAUDI_") */
typedef struct uct_gaudi_global_config {
    char             *device;        /* auto | <index> | module:<id> */
    int              device_fd;      /* -1: none */
    ucs_ternary_auto_value_t synapse; /* try (auto) | yes | no */
    double           open_timeout;   /* seconds of EAGAIN back-off */
    int              copy_backend;   /* uct_gaudi_backend_t */
    char             *synapse_lib;   /* libSynapse name or path */
    int              device_mem;     /* uct_gaudi_device_mem_t */
    size_t           syn_heap_chunk; /* chunk of SynapseAI memory */
    ucs_ternary_auto_value_t alloc_acquire; /* allocation may take the
                                               device: try | yes | no */
} uct_gaudi_global_config_t;


/*
 * Device faults the driver tells through its notifier (facts 2.4): the DMA
 * engines ask after reaping CSs whether one happened since their last
 * check, since a CS whose copy page-faults may still complete
 * (docs/base.md, "Device faults told by events").
 */
/* Where the faults are learnt from */
typedef enum {
    UCT_GAUDI_EVENTS_UNSET,
    UCT_GAUDI_EVENTS_GET,      /* our own fd: GET_EVENTS (read and clear) */
    UCT_GAUDI_EVENTS_PF_INFO,  /* a borrowed fd: PAGE_FAULT_EVENT only */
    UCT_GAUDI_EVENTS_NONE      /* a borrowed fd on Linux 6.1: nothing */
} uct_gaudi_events_source_t;


/* Per device context; every field but lock guarded by lock, a leaf taken
 * only by gaudi_events.c around one poll or read of the record */
typedef struct uct_gaudi_events {
    pthread_mutex_t           lock;
    uct_gaudi_events_source_t source;
    uint64_t                  gen;     /* faults seen so far */
    int64_t                   pf_seen; /* PAGE_FAULT_EVENT timestamp seen */
    uint64_t                  events;  /* notifier events of the last one */
    uint64_t                  addr;    /* its address, if addr_known */
    int                       addr_known;
} uct_gaudi_events_t;


/* The process's device context, shared by every MD and iface */
typedef struct uct_gaudi_ctx {
    uct_gaudi_hl_t              hl;       /* compute node handle */
    const uct_gaudi_dev_info_t  *info;    /* from discovery */
    unsigned                    refcount; /* guarded by the table's lock,
                                             uct_gaudi_process.ctx.lock */
    pid_t                       pid;      /* process that opened/attached it */
    const char                  *source;  /* for messages: "opened",
                                             "UCX_GAUDI_DEVICE_FD", "SynapseAI" */
    uct_gaudi_driver_t          driver;   /* who drives it (DRM identity) */
    uct_gaudi_backend_t         backend;  /* KERNEL or SYNAPSE, for good */
    char                        backend_why[160]; /* how it was chosen */
    struct uct_gaudi_syn        *syn;     /* SYNAPSE: the loaded library */
    uint32_t                    syn_device; /* SYNAPSE: synDeviceId */
    int                         syn_acquired; /* we acquired: we release */
    uct_gaudi_events_t          events;   /* device faults (events.lock) */
} uct_gaudi_ctx_t;


/* Discovery */

/* Discover once per process (thread-safe); never fails, may return 0 devs */
const uct_gaudi_devices_t *uct_gaudi_devices(void);

/* Device by logical index, or NULL */
const uct_gaudi_dev_info_t *uct_gaudi_device_by_index(int index);

/* Device by hw module id, or NULL */
const uct_gaudi_dev_info_t *uct_gaudi_device_by_module_id(uint32_t module_id);

/* Device by node minor, or NULL */
const uct_gaudi_dev_info_t *uct_gaudi_device_by_minor(int minor);

/* Whether @a minor is a discovered device's (uct_gaudi_syn_is_device_fn_t) */
int uct_gaudi_device_minor_known(int minor);

/* "Gaudi2" etc. */
const char *uct_gaudi_asic_name(uct_gaudi_asic_t asic);

/**
 * Whether @a asic has kernel command-submission DMA queues, i.e. the
 * kernel copy backend (Gaudi1/2, facts 5.3, 5.4); UCS_ERR_UNSUPPORTED with
 * a sentence that says why if not (Gaudi3: none user-visible, facts 6)
 */
ucs_status_t uct_gaudi_asic_kernel_dma(uct_gaudi_asic_t asic,
                                       const char **reason_p);

/* ASIC from a PCI device id (facts 1.3) */
uct_gaudi_asic_t uct_gaudi_asic_from_device_id(uint32_t device_id);

/* Parse "dddd:bb:ss.f" strictly; UCS_ERR_INVALID_PARAM if malformed */
ucs_status_t uct_gaudi_parse_bus_id(const char *str, ucs_sys_bus_id_t *bus_id);

/* Forget the cached discovery (tests only; no context may be open) */
void uct_gaudi_devices_reset(void);


/* Process */

/**
 * The fork rule, the one place it is decided: an object made by process
 * @a pid (a device context, the context table, its buffers, mappings and
 * engines, the gaudi_ipc fd server) is used and released only by that
 * process. A fork() child never uses nor releases its parent's objects;
 * it forgets them and makes its own.
 */
int uct_gaudi_process_owns(pid_t pid);


/* Configuration */

/* UCX_GAUDI_* read once per process at first use */
const uct_gaudi_global_config_t *uct_gaudi_global_config(void);

/* Re-read UCX_GAUDI_* (tests only; no context may be open) */
void uct_gaudi_global_config_reset(void);


/* Selection and ownership */

/**
 * Get (open on first use) the context of the device with logical index
 * @a index, or with -1 the process's selected device: the device of
 * UCX_GAUDI_DEVICE_FD or of SynapseAI's fd, else UCX_GAUDI_DEVICE, else the
 * launcher's local rank modulo the device count, else the first free
 * device (docs/base.md "Selection"). Selection and opening are one step:
 * a device is only known to be free once its compute node is open, and
 * closing it again could reset it (facts 7.1). Pair every get with a put.
 * No lock is held while the device is opened: a get of a device another
 * thread is taking or closing waits for that device only, at most
 * UCX_GAUDI_OPEN_TIMEOUT and 1 s, then fails with UCS_ERR_TIMED_OUT
 * (docs/base.md "The context table").
 */
ucs_status_t uct_gaudi_ctx_get(int index, uct_gaudi_ctx_t **ctx_p);

/**
 * The process's device only if the application already holds it (its
 * UCX_GAUDI_DEVICE_FD, or the device SynapseAI acquired), or if this
 * process took it already; never opens a compute node or acquires a
 * device. UCS_ERR_NO_DEVICE, without a message, when there is none yet.
 */
ucs_status_t uct_gaudi_ctx_borrow(uct_gaudi_ctx_t **ctx_p);

/**
 * The device uct_gaudi_ctx_get(-1) is expected to take, found without
 * opening a compute node (discovery, the application's fd, configuration,
 * rank, OPEN_STATS); the device actually taken may differ when the
 * application acquires another one later.
 */
ucs_status_t uct_gaudi_ctx_expected(const uct_gaudi_dev_info_t **info_p);

/**
 * Whether the application itself loaded SynapseAI (a framework process:
 * it acquires its device at its own init), as opposed to the module's own
 * reference (uct_gaudi_ctx_expected_backend) or no SynapseAI at all.
 */
int uct_gaudi_ctx_app_synapse(void);

/* The copy backend a device of @a asic is expected to get */
uct_gaudi_backend_t uct_gaudi_ctx_expected_backend(uct_gaudi_asic_t asic);

/* Drop a reference; the last one closes the compute node if we opened it
 * (with no lock held; a get of the device meanwhile waits for the close) */
void uct_gaudi_ctx_put(uct_gaudi_ctx_t *ctx);

/**
 * Whether @a ctx belongs to the calling process. After fork() the child
 * inherits the fd, but the device context (and every mapping in it)
 * belongs to the parent (facts 7.1): the child must not issue MEMORY
 * ioctls on it. The one fork check of the plugin.
 */
int uct_gaudi_ctx_owned(const uct_gaudi_ctx_t *ctx);

/*
 * Whether @a ctx's device is still there for it: always for a node we
 * opened or a device we acquired; for a borrowed one, while its fd is
 * still that device's compute node and, on SynapseAI, the application's
 * SynapseAI still holds the device on it. A framework may release its
 * device (and SynapseAI close the fd) before the module's objects are
 * torn down at exit; they went with the device then.
 */
int uct_gaudi_ctx_present(const uct_gaudi_ctx_t *ctx);


/* Device faults (gaudi_events.c) */

/* Choose the source; once per context, before its first poll */
void uct_gaudi_events_init(struct uct_gaudi_ctx *ctx);

/* The number of faults seen so far on the device, after asking the driver
 * (one ioctl; two when there is a new page fault) */
uint64_t uct_gaudi_events_poll(struct uct_gaudi_ctx *ctx);

/* "an MMU page fault at 0x..." etc.: the last fault, for messages */
void uct_gaudi_events_describe(struct uct_gaudi_ctx *ctx, char *buf,
                               size_t max);


/*
 * NUMA placement of the host buffers a device reads and writes (command
 * buffers, bounce buffers): on multi-socket hosts they go to the NUMA node
 * of the device's PCI function, so its DMA does not cross the socket
 * interconnect. Placement is best effort and never fails an allocation.
 * Design notes: docs/base.md.
 */

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

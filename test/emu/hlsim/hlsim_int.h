/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * hlsim internals. "facts N.M" = docs/driver-facts.md
 * section N.M, the spec of the driver behaviour reproduced here.
 */

#ifndef HLSIM_INT_H_
#define HLSIM_INT_H_

#define _GNU_SOURCE
#include <uct/gaudi/hl/gaudi_hl_abi.h>
#include "hlsim.h"

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <dirent.h>

#define HLSIM_MAX_DEV        32
#define HLSIM_FD_MAX         65536
#define HLSIM_TMPFS_MAGIC    0x01021994
#define HLSIM_ACCEL_MAJOR    261  /* DRM accel major (facts 1.1) */
#define HLSIM_CTL_MAJOR      511  /* habanalabs' own chrdev (model) */
#define HLSIM_LEGACY_MAJOR   510  /* misc era hlN/hl_controlDN (model) */
#define HLSIM_SHM_MAGIC      0x484c534d33ULL
#define HLSIM_DMABUF_MAGIC   0x48444d4142554631ULL
#define HLSIM_MAX_QUEUES     8
/* queues 0-3 / 4-7 are the streams of DMA engine 0 / 1 (docs/hlsim.md) */
#define HLSIM_ENGINE_STREAMS 4
#define HLSIM_MAX_ENGINES    (HLSIM_MAX_QUEUES / HLSIM_ENGINE_STREAMS)

#define HLSIM_PAGE_SIZE      4096ULL
/*
 * When the root is on tmpfs, the compute node file holds the CB memory at
 * file offset == CB handle (facts 5.1: the handle is the mmap offset), so
 * a raw mmap syscall that bypasses the interposers maps the right memory.
 * The (sparse) file covers every handle: (2 << 59) + (2^32 ids << 12) +
 * one CB.
 */
#define HLSIM_CB_FILE_END    ((2ULL << 59) + (1ULL << 44) + (4ULL << 20))
/* The emulator sees a context's CBs through windows of this many pages
 * on their store, mapped as needed (hlsim_cb.c) */
#define HLSIM_CB_SLICE_PAGES (1U << 18)
#define HLSIM_CB_SLICES      64
#define HLSIM_HUGE_PAGE      (2ULL << 20)

/* What an MMU page fault of a DMA does (HLSIM_PAGE_FAULT, docs/hlsim.md) */
typedef enum {
    HLSIM_PF_RESET = 0,   /* hard reset at once (6.1 Gaudi2, always) */
    HLSIM_PF_STALL,       /* the engine stops until the CS timeout */
    HLSIM_PF_DROP         /* the transfer is dropped, the CS completes */
} hlsim_pf_mode_t;

typedef enum {
    HLSIM_GAUDI1 = 1,
    HLSIM_GAUDI2 = 2,
    HLSIM_GAUDI3 = 3
} hlsim_asic_t;

/* Per-device model, derived from the recorded config (facts 2.3, 3.4) */
typedef struct {
    int      asic;
    uint64_t hbm_size;       /* bytes of the HBM file */
    uint64_t page_size;      /* dram_page_size = default alloc page */
    uint32_t module_id;
    int      numa_node;      /* sysfs numa_node at node creation, -1 none */
    unsigned bus;
    uint32_t device_id;
    uint64_t dram_user_off;  /* HBM offset of the first user byte */
    uint64_t dram_size;      /* reported user DRAM size */
    uint64_t dram_base;      /* reported dram_base_address */
    uint64_t dram_phys_base; /* physical base of HBM offset 0 */
    uint64_t dram_va_start;  /* Gaudi2/3 DMMU range */
    uint64_t dram_va_end;
    uint64_t dmmu_page;
    uint64_t host_va_start;  /* PMMU 4K range */
    uint64_t host_va_end;
    uint64_t huge_va_start;  /* PMMU 2M range */
    uint64_t huge_va_end;
    uint64_t sram_base;
    uint32_t sram_size;
    unsigned max_pending;    /* in-flight CS window (facts 5.2) */
} hlsim_devcfg_t;

typedef struct {
    char           root[4096];
    int            num_dev;
    int            legacy;     /* /dev/hlN nodes and 'H' ioctl codes */
    int            habana;     /* Habana out-of-tree flavour */
    uint64_t       dram_bar;   /* DRAM PCI BAR size, 0: covers the HBM */
    int            accel_base; /* accel index of device 0 (accel nodes) */
    hlsim_devcfg_t dev[HLSIM_MAX_DEV];
    /* per process, not recorded */
    unsigned       reset_ms;
    unsigned       release_reset_ms;
    unsigned       kill_delay_ms;  /* hard reset: SIGKILL of fd holders */
    double         dma_gbps;
    uint64_t       dma_job_ns; /* engine model: fixed cost of a job */
    int            engine_clock; /* count the time jobs run (a measure) */
    int            no_drm;     /* Habana build without DRM accel (HLSIM_DRM=0) */
    int            page_fault; /* HLSIM_PAGE_FAULT: hlsim_pf_mode_t */
    int            pf_cs_aborted; /* HLSIM_PAGE_FAULT_CS=aborted */
    int            pf_event_after; /* HLSIM_PAGE_FAULT_EVENT=after */
    unsigned       pf_event_us;    /* ... that many us after the CS */
    unsigned       timeout_locked; /* HLSIM_TIMEOUT_LOCKED s, 0: default */
    int            verbose;
} hlsim_config_t;

/* System-wide device state, a MAP_SHARED file under the root */
typedef struct {
    uint32_t status;
    uint32_t compute_active;
    uint32_t in_release;
    uint32_t hard_reset_cnt;
    uint32_t soft_reset_cnt;
    int32_t  owner_pid;       /* opener of the compute context, 0: none */
    uint64_t open_counter;
    uint64_t last_open_ns;
    uint64_t last_session_ms;
    uint64_t dram_used;
    uint64_t reset_until_ns;  /* 0: no automatic end of reset */
    uint64_t reset_gen;       /* bumped by every reset: aborts CSs */
    uint64_t next_dmabuf_id;
    uint64_t drop_in_flight;
    uint64_t drop_validation;
    uint64_t drop_parsing;
    uint64_t drop_in_reset;
    uint64_t page_faults;     /* MMU page faults of DMAs, every process */
    uint64_t stale_pin_dmas;  /* DMAs through stale USERPTR pins, every
                                 process (HLSIM_COUNTER_STALE_PIN_DMAS) */
    uint64_t polls_in_flight; /* WAIT_CS polls that found the CS running,
                                 every process */
    /* the first page fault since the last compute open (hlsim_notify.c) */
    uint32_t pf_captured;
    uint64_t pf_timestamp;
    uint64_t pf_addr;
} hlsim_shdev_t;

typedef struct {
    uint64_t      magic;
    uint32_t      num_dev;
    uint32_t      pad;
    hlsim_shdev_t dev[HLSIM_MAX_DEV];
} hlsim_shm_t;

/* Emulated file kinds */
typedef enum {
    HLSIM_F_COMPUTE = 1,
    HLSIM_F_CONTROL,
    HLSIM_F_DMABUF
} hlsim_fkind_t;

struct hlsim_ctx;
struct hlsim_cs;

/* What an exported dma-buf fd holds at offset 0 (facts 4.1) */
#define HLSIM_DMABUF_MAX_SEGS 512
typedef struct {
    uint64_t magic;
    uint64_t id;
    uint32_t dev;
    uint32_t nseg;
    uint64_t length;
    pid_t    exporter;
    uint32_t pad;
    struct {
        uint64_t hbm_off;
        uint64_t len;
    } seg[];
} hlsim_dmabuf_hdr_t;

typedef struct {
    int                 dev;
    uint64_t            length;
    uint32_t            nseg;
    struct {
        uint64_t hbm_off;
        uint64_t len;
    }                  *seg;
} hlsim_hbm_range_t;

typedef struct hlsim_file {
    int               kind;
    int               dev;
    int               refcnt;
    int               accel;   /* accel (DRM) vs legacy ioctl set */
    struct hlsim_ctx *ctx;     /* HLSIM_F_COMPUTE */
    uint64_t          dmabuf_id;
    /* notifier (hlsim_notify.c): the driver's hpriv->notifier_event */
    uint64_t          events_mask;
    int               eventfd1;    /* registered eventfd's copy + 1; 0: none */
    uint64_t          ev_pending;  /* HLSIM_PAGE_FAULT_EVENT=after: */
    uint64_t          ev_seq;      /* ... events of this CS, */
    uint64_t          ev_addr;     /* ... the capture of its fault, */
    uint64_t          ev_due_ns;   /* ... published then (0: not yet due) */
} hlsim_file_t;

/* Device memory allocation (Gaudi2/3 ALLOC handle, facts 3.2) */
typedef struct hlsim_alloc {
    struct hlsim_alloc *next;
    uint32_t            handle;
    uint32_t            npages;
    uint32_t           *pages;    /* HBM page indices */
    uint64_t            size;     /* npages * page_size */
    uint32_t            flags;
    int                 map_cnt;
} hlsim_alloc_t;

typedef enum {
    HLSIM_MAP_HOST = 1,   /* MAP USERPTR */
    HLSIM_MAP_DRAM,       /* MAP of an ALLOC handle */
    HLSIM_MAP_IMPORT,     /* op 99 */
    HLSIM_MAP_CB          /* CB created with HL_CB_FLAGS_MAP */
} hlsim_mkind_t;

/* Liveness probe of an exported dma-buf (see hlsim_mem.c) */
typedef struct hlsim_export {
    struct hlsim_export *next;
    int                  probe_fd;
} hlsim_export_t;

typedef struct hlsim_map {
    struct hlsim_map  *next;
    int                kind;
    uint64_t           va;        /* returned VA (keeps host offset) */
    uint64_t           blk_va;    /* aligned start of the VA block */
    uint64_t           blk_size;  /* size of the VA block */
    uint64_t           size;      /* usable bytes from va */
    uint8_t           *host;      /* HOST/CB: host pointer of va */
    hlsim_alloc_t     *alloc;     /* DRAM */
    hlsim_hbm_range_t  import;    /* IMPORT */
    int                import_fd; /* IMPORT: our reference to the fd */
    hlsim_export_t    *exports;   /* DRAM: exported dma-bufs */
    uint64_t          *pfn;       /* HOST: frames pinned at MAP, one a
                                     page from host's page (hlsim_pin.c) */
    uint64_t           npfn;
    uint32_t          *slots;     /* HOST: io_uring buffers holding the
                                     pages (hlsim_pin.c), or NULL */
    uint32_t           nslots;
    pid_t              slots_pid; /* the process whose ring holds them */
} hlsim_map_t;

/* An entry of a context's mapping index: the block inline, for scans */
typedef struct {
    uint64_t     blk_va;
    uint64_t     blk_end;
    hlsim_map_t *m;
} hlsim_map_ent_t;

typedef struct hlsim_cb {
    struct hlsim_cb *next;
    uint32_t         id;
    uint32_t         size;     /* rounded to pages */
    uint8_t         *mem;      /* in the emulator's window */
    uint64_t         off;      /* offset in the store (node file: handle) */
    uint8_t         *user;     /* user mmap address, if mapped */
    int              mmapped;  /* ever mmapped (only once, facts 5.1) */
    int              destroyed;
    int              zombie;   /* destroyed, waiting for a raw munmap */
    int              cs_cnt;
    uint64_t         dev_va;   /* HL_CB_FLAGS_MAP */
} hlsim_cb_t;

typedef enum {
    HLSIM_CS_FREE = 0,
    HLSIM_CS_PENDING,
    HLSIM_CS_DONE,
    HLSIM_CS_ABORTED,
    HLSIM_CS_TIMEDOUT,
    HLSIM_CS_STALL,       /* job outcome: the engine stopped on it */
    HLSIM_CS_RESET_AFTER  /* job outcome: completes, a hard reset follows */
} hlsim_cs_state_t;

/* Why an injected fault stops the engine on a CS (hlsim_cs_t.stall) */
enum {
    HLSIM_STALL_ERROR = 1,   /* DMA error (fault dma_error) */
    HLSIM_STALL_HANG         /* hangs: its TDR soon after (cs_timeout) */
};

typedef struct hlsim_cs {
    uint64_t seq;
    int      state;
    int      jobs_left;
    int      fail;        /* fault to apply at completion */
    uint64_t gen;         /* device reset generation at submit */
    int64_t  done_ns;
    int      timestamp;   /* submitted with HL_CS_FLAGS_TIMESTAMP */
    int      stall;       /* injected: the engine stops (HLSIM_STALL_*) */
    uint64_t submit_ns;   /* start of the CS timeout (TDR) */
    uint64_t tdr_ns;      /* when its TDR fires if its engine stopped */
} hlsim_cs_t;

/* Outcomes of timestamped CSs that left the window (facts 9.11) */
#define HLSIM_CS_OUTCOMES 256
typedef struct {
    uint64_t seq;
    int64_t  done_ns;
    int      state;       /* 0: free slot */
} hlsim_cs_outcome_t;

typedef struct hlsim_job {
    struct hlsim_job *next;
    hlsim_cs_t       *cs;
    uint64_t          seq;
    uint64_t          cb_va;   /* Gaudi2: CB device address */
    uint8_t          *cb_copy; /* Gaudi1: CB copied at submit */
    uint32_t          cb_size;
    hlsim_cb_t       *cb;      /* Gaudi1: CB whose cs_cnt we hold */
    uint64_t          bytes;   /* moved by its LIN_DMAs */
    uint64_t          arrive_ns; /* submitted */
    uint64_t          end_ns;  /* engine model: when it completes */
    int               abort;   /* engine model: its outcome */
} hlsim_job_t;

/* A queue: one stream of a DMA engine's QMAN, its jobs in order */
typedef struct hlsim_queue {
    hlsim_job_t    *head, *tail;
} hlsim_queue_t;

/* A DMA engine: one job at a time, taken from its streams in turn */
typedef struct hlsim_engine {
    pthread_t      thread;
    pthread_cond_t cond;      /* the worker waits for jobs here */
    int            started;
    int            stop;
    int            busy;      /* a job of this engine is running */
    struct hlsim_job *held;   /* stopped on this job (error, page fault) */
    uint64_t       held_gen;  /* reset generation it stopped in */
    int            tdr_done;  /* its CS timed out already */
    uint64_t       free_ns;   /* engine model: its clock, free from then */
    hlsim_queue_t  done;      /* engine model: moved, not yet reported */
    unsigned       next;      /* stream to look at first (round robin) */
} hlsim_engine_t;

typedef struct hlsim_ctx {
    int              dev;
    int              inherited;  /* copy seen in a fork child */
    int              released;
    int              cb_node;    /* CBs live in the node file (tmpfs) */
    dev_t            mem_dev;    /* node file st_dev/st_ino, for */
    ino_t            mem_ino;    /* /proc/self/maps */
    int              cb_zombies; /* destroyed CBs still mapped raw */
    int              cb_memfd;   /* -1, or (node not on tmpfs) CB store */
    struct {
        uint32_t     idx;        /* slice number + 1; 0: unused */
        uint8_t     *p;
    }                cb_win[HLSIM_CB_SLICES]; /* emulator's windows */
    uint32_t         cb_id_base; /* CB ids from here (fork child: its own) */
    uint8_t         *page_used;  /* HBM page bitmap (one byte a page) */
    uint32_t         npages;
    hlsim_alloc_t   *allocs;
    uint32_t         next_handle;
    hlsim_map_t     *maps;       /* sorted by blk_va */
    hlsim_map_ent_t *map_idx;    /* the same, an array: binary search */
    uint32_t         map_cnt;
    uint32_t         map_cap;
    uint64_t         ctx_dram;
    hlsim_cb_t      *cbs;
    /* CS */
    uint64_t         next_seq;
    hlsim_cs_t      *cs_ring;    /* max_pending slots */
    hlsim_cs_outcome_t outcomes[HLSIM_CS_OUTCOMES];
    unsigned         outcome_next; /* ring: the oldest is overwritten */
    hlsim_queue_t    queues[HLSIM_MAX_QUEUES];
    hlsim_engine_t   engines[HLSIM_MAX_ENGINES];
    int              in_flight;
    uint64_t         drop_in_flight;
    uint64_t         drop_validation;
    uint64_t         drop_parsing;
    uint64_t         drop_in_reset;
} hlsim_ctx_t;

/* Real libc entry points (lazy dlsym RTLD_NEXT) */
typedef struct {
    int     (*open)(const char *, int, ...);
    int     (*openat)(int, const char *, int, ...);
    int     (*close)(int);
    int     (*ioctl)(int, unsigned long, ...);
    int     (*dup)(int);
    int     (*dup2)(int, int);
    int     (*dup3)(int, int, int);
    int     (*fcntl)(int, int, ...);
    /* the emulator's own mappings: raw syscalls, which neither UCM's hooks
     * nor our interposers see (no re-entry under hlsim_lock) */
    void   *(*mmap)(void *, size_t, int, int, int, off_t);
    int     (*munmap)(void *, size_t);
    /* the next mmap/munmap: pass-through and user CB mappings */
    void   *(*libc_mmap)(void *, size_t, int, int, int, off_t);
    int     (*libc_munmap)(void *, size_t);
    int     (*fstat)(int, struct stat *);
    ssize_t (*readlink)(const char *, char *, size_t);
    long    (*syscall)(long, ...);
} hlsim_real_t;

/* Globals */
extern hlsim_config_t  hlsim_cfg;
extern hlsim_shm_t    *hlsim_shm;
extern hlsim_real_t    hlsim_real;
extern pthread_mutex_t hlsim_lock;      /* fd table + all contexts */
extern pthread_cond_t  hlsim_cond;      /* CS completion */
extern int64_t         hlsim_counters[HLSIM_COUNTER_LAST];

/* hlsim_state.c */
int  hlsim_init(void);                 /* 0 or -errno; idempotent */
const char *hlsim_root_path(void);     /* no init needed */
void hlsim_real_init(void);
uint64_t hlsim_now_ns(void);
unsigned hlsim_dev_status(int dev);    /* with lazy end of reset */
void hlsim_dev_set_status(int dev, unsigned status, uint64_t until_ns);
void hlsim_dev_reset(int dev, unsigned ms, unsigned status);
void hlsim_dev_reset_kill(int dev, unsigned ms, pid_t pid);
int hlsim_dev_in_reset(int dev);
unsigned hlsim_timeout_locked_s(int dev);
int hlsim_reset_on_lockup(void);
void hlsim_dev_needs_reset(int dev);

/* Accel index (accelN, accel_controlDN, minor) of device @a dev: devices
 * are numbered by probe order, accel indices may start later (facts 9.9) */
static inline int hlsim_accel_idx(int dev)
{
    extern hlsim_config_t hlsim_cfg;

    return dev + (hlsim_cfg.legacy ? 0 : hlsim_cfg.accel_base);
}
uint64_t hlsim_dram_bar_size(int dev);
int  hlsim_dev_operational(int dev);
uint8_t *hlsim_hbm(int dev);           /* HBM file mapping or NULL */
void hlsim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int  hlsim_parse_size(const char *s, uint64_t *out);

/* hlsim_node.c */
int  hlsim_node_create(void);
int  hlsim_node_boot_id(void);
void hlsim_node_write_status(int dev, unsigned status);
int hlsim_node_compute_held(int dev);
int hlsim_dmabufs_alive(int dev);
int  hlsim_node_match(const char *path, int *dev, hlsim_fkind_t *kind);
int  hlsim_open_node(int dev, hlsim_fkind_t kind, const char *rpath,
                     int flags, mode_t mode);
const char *hlsim_redirect(const char *path, char *buf, size_t len);

/* hlsim_intercept.c */
hlsim_file_t *hlsim_fd_get(int fd);    /* with lock held */
int  hlsim_fd_install(int fd, hlsim_file_t *f);
void hlsim_fd_install_locked(int fd, hlsim_file_t *f);
void hlsim_file_unref(hlsim_file_t *f);   /* with lock held */
int  hlsim_copy_from_user(void *dst, uint64_t src, size_t len);
int  hlsim_copy_to_user(uint64_t dst, const void *src, size_t len);

/* hlsim_ioctl.c */
int  hlsim_ioctl(hlsim_file_t *f, int fd, unsigned long req, void *arg);

/* hlsim_info.c */
int  hlsim_info(hlsim_file_t *f, struct hl_info_args *a);

/* hlsim_mem.c */
int  hlsim_mem(hlsim_file_t *f, union hl_mem_args *a);
int  hlsim_is_dmabuf_fd(int fd);
hlsim_map_t *hlsim_map_find(hlsim_ctx_t *ctx, uint64_t va, uint64_t len);
void hlsim_mem_prune_exports(int dev);   /* lock held */
void hlsim_mem_ctx_fini(hlsim_ctx_t *ctx);
uint64_t hlsim_va_alloc(hlsim_ctx_t *ctx, uint64_t start, uint64_t end,
                        uint64_t size, uint64_t align, uint64_t hint,
                        int force, int *err);
int  hlsim_map_insert(hlsim_ctx_t *ctx, hlsim_map_t *m); /* 0, -ENOMEM */
void hlsim_map_remove(hlsim_ctx_t *ctx, hlsim_map_t *m);
int  hlsim_map_exported(hlsim_map_t *m);

/* hlsim_cs.c */
int  hlsim_cb(hlsim_file_t *f, union hl_cb_args *a);
int  hlsim_cs(hlsim_file_t *f, union hl_cs_args *a);
int  hlsim_wait_cs(hlsim_file_t *f, union hl_wait_cs_args *a);
void *hlsim_cb_mmap(hlsim_ctx_t *ctx, void *addr, size_t len, int prot,
                    int flags, int fd, uint64_t off, int *err);
void hlsim_cb_sweep(hlsim_ctx_t *ctx);       /* lock held */
void hlsim_cb_ctx_fini(hlsim_ctx_t *ctx);    /* lock held */
void hlsim_cb_atfork_child(hlsim_ctx_t *ctx);
int  hlsim_cb_munmap(void *addr, size_t len);
void hlsim_cs_ctx_fini(hlsim_ctx_t *ctx);  /* called without the lock */
void hlsim_cs_abort_dev(int dev);
void hlsim_cs_atfork_child(void);
void hlsim_ctx_register(hlsim_ctx_t *ctx, int add);   /* lock held */
#define HLSIM_MAX_CTX (HLSIM_MAX_DEV * 4)
extern hlsim_ctx_t *hlsim_ctx_list[HLSIM_MAX_CTX];
void hlsim_cond_init(void);
extern int hlsim_cb_user_maps;

/* hlsim_dma.c */
void hlsim_dma_run_job(hlsim_ctx_t *ctx, hlsim_job_t *job, int *abort);
uint64_t hlsim_engine_model_end(uint64_t *free_ns, uint64_t now_ns,
                                uint64_t bytes);
int  hlsim_page_fault(int dev, const char *what, uint64_t addr,
                      uint64_t size, uint64_t seq);

/* hlsim_pin.c (lock held) */
typedef int (*hlsim_pin_add_t)(void *v, uint8_t *p, uint64_t len);
void hlsim_pin_init(void);   /* at load, no lock */
int  hlsim_pin_record(hlsim_map_t *m);
void hlsim_pin_release(hlsim_map_t *m);
int  hlsim_pin_segs(hlsim_map_t *m, uint8_t *host, uint64_t len, int write,
                    hlsim_pin_add_t add, void *v, uint64_t *stale_p);
void hlsim_pin_stale_dma(int dev, const char *what, uint64_t va,
                         uint64_t host, uint64_t size, int write);
void hlsim_pin_atfork_parent(void);

/* hlsim_notify.c */
void hlsim_notify_fault(int dev, uint64_t addr, uint64_t seq);
void hlsim_notify_reported(hlsim_file_t *f, uint64_t seq); /* lock held */
void hlsim_notify_due(hlsim_file_t *f);                    /* lock held */
int  hlsim_notify_info(hlsim_file_t *f, struct hl_info_args *a,
                       int operational);
void hlsim_notify_open(int dev);
void hlsim_notify_release(hlsim_file_t *f);

/* hlsim_fault.c */
void hlsim_fault_env(const char *spec);
int  hlsim_fault_hit(const char *op);  /* errno to fail with, or 0 */
int  hlsim_errno_parse(const char *s);

/* hlsim_ctx lifetime (hlsim_ioctl.c) */
hlsim_ctx_t *hlsim_ctx_create(int dev, int fd);
void hlsim_ctx_release(hlsim_ctx_t *ctx);  /* called without the lock */

#define HLSIM_ALIGN_UP(_x, _a)   ((((_x) + (_a) - 1) / (_a)) * (_a))
#define HLSIM_ALIGN_DOWN(_x, _a) (((_x) / (_a)) * (_a))
#define HLSIM_MIN(_a, _b)        ((_a) < (_b) ? (_a) : (_b))
#define HLSIM_MAX(_a, _b)        ((_a) > (_b) ? (_a) : (_b))

#endif

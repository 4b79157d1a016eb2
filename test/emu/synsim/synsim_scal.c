/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Emulated libscal.so: SCAL's HBM memory pools (docs/synapse.md). At
 * scal_init the pools of SCAL's default configuration are ALLOCated and
 * MAPped through the driver's memory ioctl on the compute fd, "global_hbm"
 * taking all DRAM the others leave, as scal_init_gaudi2.cpp /
 * scal_init_gaudi3.cpp do; buffers are 128-byte aligned pieces of a pool.
 * Gaudi2: one mapping of all DRAM, the pools carved from it; Gaudi3: one
 * mapping per pool. SCAL does not run Gaudi1.
 */

#define _GNU_SOURCE
#include "synsim_scal.h"
#include "synsim_heap.h"
#include <uct/gaudi/hl/gaudi_hl_abi.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#define SCAL_MB              (1ULL << 20)
#define SCAL_ZERO_POOL_GAP   4096    /* left free after global_hbm */
#define SCAL_MAX_POOLS       4

/* The HBM pools of scal/configs/gaudi{2,3}/default.json, in MB (0: all
 * the rest); Gaudi2 in the order they are carved from the full mapping */
typedef struct {
    const char *name;
    uint64_t    mb;
} synsim_scal_pool_cfg_t;

static const synsim_scal_pool_cfg_t synsim_scal_gaudi2[] = {
    {"hbm_binary", 32}, {"hbm_shared", 128}, {"global_hbm", 0}, {NULL, 0}
};

static const synsim_scal_pool_cfg_t synsim_scal_gaudi3[] = {
    {"global_hbm", 0}, {"hbm_binary", 32}, {"hbm_pdma", 72},
    {"hbm_shared", 128}, {NULL, 0}
};

struct synsim_scal;

typedef struct synsim_scal_pool {
    struct synsim_scal *scal;
    char                name[16];
    unsigned            idx;
    uint64_t            base;       /* first usable address */
    uint64_t            map_va;     /* MAP VA of the mapping it lies in */
    uint64_t            handle;     /* ALLOC handle of its own mapping */
    synsim_heap_t       heap;
} synsim_scal_pool_t;

typedef struct synsim_scal {
    struct synsim_scal *next;
    int                 fd;
    int                 legacy;     /* legacy ioctl codes (/dev/hlN) */
    uint64_t            full_va;    /* Gaudi2 mapping of all DRAM */
    uint64_t            full_handle;
    unsigned            npools;
    synsim_scal_pool_t  pools[SCAL_MAX_POOLS];
} synsim_scal_t;

typedef struct {
    synsim_scal_pool_t *pool;
    uint64_t            addr;
} synsim_scal_buf_t;

static synsim_scal_t   *synsim_scal_list;
static pthread_mutex_t  synsim_scal_lock = PTHREAD_MUTEX_INITIALIZER;

static int synsim_scal_ioctl(synsim_scal_t *s, unsigned long accel_req,
                             unsigned long legacy_req, void *arg)
{
    int rc;

    do {
        rc = ioctl(s->fd, s->legacy ? legacy_req : accel_req, arg);
    } while ((rc < 0) && (errno == EINTR));
    return (rc < 0) ? errno : 0;
}

static int synsim_scal_mem(synsim_scal_t *s, union hl_mem_args *args)
{
    return synsim_scal_ioctl(s, GAUDI_HL_DRM_IOCTL_MEMORY,
                             GAUDI_HL_LEGACY_IOCTL_MEMORY, args);
}

/* HW_IP_INFO, learning which ioctl codes the node takes */
static int synsim_scal_hw_ip(synsim_scal_t *s, struct gaudi_hl_hw_ip_info *hw)
{
    struct hl_info_args args;
    int                 err;

    memset(&args, 0, sizeof(args));
    memset(hw, 0, sizeof(*hw));
    args.op             = HL_INFO_HW_IP_INFO;
    args.return_pointer = (uintptr_t)hw;
    args.return_size    = sizeof(*hw);
    err = synsim_scal_ioctl(s, GAUDI_HL_DRM_IOCTL_INFO,
                            GAUDI_HL_LEGACY_IOCTL_INFO, &args);
    if (err == ENOTTY) {
        s->legacy = 1;
        err = synsim_scal_ioctl(s, GAUDI_HL_DRM_IOCTL_INFO,
                                GAUDI_HL_LEGACY_IOCTL_INFO, &args);
    }
    return err;
}

/* ALLOC + MAP of @size bytes of DRAM: its handle and VA */
static int synsim_scal_map(synsim_scal_t *s, uint64_t size, uint64_t *handle,
                           uint64_t *va)
{
    union hl_mem_args args;
    int               err;

    memset(&args, 0, sizeof(args));
    args.in.op             = HL_MEM_OP_ALLOC;
    args.in.alloc.mem_size = size;
    err = synsim_scal_mem(s, &args);
    if (err) {
        return err;
    }
    *handle = args.out.handle;

    memset(&args, 0, sizeof(args));
    args.in.op                = HL_MEM_OP_MAP;
    args.in.map_device.handle = *handle;
    err = synsim_scal_mem(s, &args);
    if (err) {
        memset(&args, 0, sizeof(args));
        args.in.op          = HL_MEM_OP_FREE;
        args.in.free.handle = *handle;
        synsim_scal_mem(s, &args);
        return err;
    }
    *va = args.out.device_virt_addr;
    return 0;
}

static void synsim_scal_unmap(synsim_scal_t *s, uint64_t handle, uint64_t va)
{
    union hl_mem_args args;

    memset(&args, 0, sizeof(args));
    args.in.op                     = HL_MEM_OP_UNMAP;
    args.in.unmap.device_virt_addr = va;
    synsim_scal_mem(s, &args);
    memset(&args, 0, sizeof(args));
    args.in.op          = HL_MEM_OP_FREE;
    args.in.free.handle = handle;
    synsim_scal_mem(s, &args);
}

static void synsim_scal_free_all(synsim_scal_t *s)
{
    unsigned i;

    for (i = 0; i < s->npools; i++) {
        if (s->pools[i].handle != 0) {
            synsim_scal_unmap(s, s->pools[i].handle, s->pools[i].map_va);
        }
        synsim_heap_fini(&s->pools[i].heap);
    }
    if (s->full_handle != 0) {
        synsim_scal_unmap(s, s->full_handle, s->full_va);
    }
    s->npools = 0;
}

static int synsim_scal_pool_add(synsim_scal_t *s, const char *name,
                                uint64_t base, uint64_t map_va,
                                uint64_t handle, uint64_t size)
{
    synsim_scal_pool_t *p = &s->pools[s->npools];

    memset(p, 0, sizeof(*p));
    if (synsim_heap_init(&p->heap, base, size)) {
        if (handle != 0) {
            synsim_scal_unmap(s, handle, map_va);
        }
        return SCAL_FAILURE;
    }
    strncpy(p->name, name, sizeof(p->name) - 1);
    p->scal   = s;
    p->idx    = s->npools++;
    p->base   = base;
    p->map_va = map_va;
    p->handle = handle;
    return SCAL_SUCCESS;
}

/* Sizes of the pools of @cfg: the zero one gets the rest of @total less
 * the gap (SW-112283), the others rounded up to @round */
static int synsim_scal_sizes(const synsim_scal_pool_cfg_t *cfg,
                             uint64_t total, uint64_t round, uint64_t *size)
{
    uint64_t used = 0;
    int      i, zero = -1;

    for (i = 0; cfg[i].name != NULL; i++) {
        size[i] = ((cfg[i].mb * SCAL_MB + round - 1) / round) * round;
        used   += size[i];
        if (cfg[i].mb == 0) {
            zero = i;
        }
    }
    if (used + SCAL_ZERO_POOL_GAP > total) {
        return SCAL_OUT_OF_MEMORY;
    }
    size[zero] = total - used - SCAL_ZERO_POOL_GAP;
    return SCAL_SUCCESS;
}

/* Gaudi2: one mapping of all DRAM (FullPool), pools carved in order */
static int synsim_scal_pools_gaudi2(synsim_scal_t *s,
                                    const struct gaudi_hl_hw_ip_info *hw)
{
    uint64_t size[SCAL_MAX_POOLS], off = 0;
    int      i, rc;

    rc = synsim_scal_sizes(synsim_scal_gaudi2, hw->u61.dram_size, 1, size);
    if (rc != SCAL_SUCCESS) {
        return rc;
    }
    if (synsim_scal_map(s, hw->u61.dram_size, &s->full_handle, &s->full_va)) {
        s->full_handle = 0;
        return SCAL_OUT_OF_MEMORY;
    }
    for (i = 0; synsim_scal_gaudi2[i].name != NULL; i++) {
        rc = synsim_scal_pool_add(s, synsim_scal_gaudi2[i].name,
                                  s->full_va + off, s->full_va, 0, size[i]);
        if (rc != SCAL_SUCCESS) {
            return rc;
        }
        off += size[i];
    }
    return SCAL_SUCCESS;
}

/* Gaudi3: whole pages per pool, each its own mapping */
static int synsim_scal_pools_gaudi3(synsim_scal_t *s,
                                    const struct gaudi_hl_hw_ip_info *hw)
{
    uint64_t page = hw->u61.device_mem_alloc_default_page_size;
    uint64_t size[SCAL_MAX_POOLS], total, handle, va;
    int      i, rc;

    if (page == 0) {
        return SCAL_FAILURE;
    }
    total = (hw->u61.dram_size / page) * page;
    rc    = synsim_scal_sizes(synsim_scal_gaudi3, total, page, size);
    if (rc != SCAL_SUCCESS) {
        return rc;
    }
    for (i = 0; synsim_scal_gaudi3[i].name != NULL; i++) {
        if (synsim_scal_map(s, size[i], &handle, &va)) {
            return SCAL_OUT_OF_MEMORY;
        }
        rc = synsim_scal_pool_add(s, synsim_scal_gaudi3[i].name, va, va,
                                  handle, size[i]);
        if (rc != SCAL_SUCCESS) {
            return rc;
        }
    }
    return SCAL_SUCCESS;
}

int scal_init(int fd, const char *config_file_path, scal_handle_t *scal,
              scal_arc_fw_config_handle_t fwCfg)
{
    struct gaudi_hl_hw_ip_info hw;
    synsim_scal_t             *s;
    int                        rc;

    if ((fd < 0) || (scal == NULL)) {
        return SCAL_INVALID_PARAM;
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return SCAL_OUT_OF_MEMORY;
    }
    s->fd = fd;
    if (synsim_scal_hw_ip(s, &hw)) {
        free(s);
        return SCAL_FAILURE;
    }
    switch (hw.u61.device_id) {
    case GAUDI_HL_PCI_ID_GAUDI2:
    case GAUDI_HL_PCI_ID_GAUDI2_HL288:
        rc = synsim_scal_pools_gaudi2(s, &hw);
        break;
    case GAUDI_HL_PCI_ID_GAUDI3:
    case GAUDI_HL_PCI_ID_GAUDI3_HL338:
        rc = synsim_scal_pools_gaudi3(s, &hw);
        break;
    default:
        rc = SCAL_FAILURE;  /* no SCAL on Gaudi1 */
        break;
    }
    if (rc != SCAL_SUCCESS) {
        synsim_scal_free_all(s);
        free(s);
        return rc;
    }
    pthread_mutex_lock(&synsim_scal_lock);
    s->next          = synsim_scal_list;
    synsim_scal_list = s;
    pthread_mutex_unlock(&synsim_scal_lock);
    *scal = (scal_handle_t)s;
    return SCAL_SUCCESS;
}

void scal_destroy(const scal_handle_t scal)
{
    synsim_scal_t **p, *s = (synsim_scal_t*)scal;

    pthread_mutex_lock(&synsim_scal_lock);
    for (p = &synsim_scal_list; (*p != NULL) && (*p != s); p = &(*p)->next) {
    }
    if (*p != NULL) {
        *p = s->next;
    }
    pthread_mutex_unlock(&synsim_scal_lock);
    if (s != NULL) {
        synsim_scal_free_all(s);
        free(s);
    }
}

int scal_get_fd(const scal_handle_t scal)
{
    return (scal != NULL) ? ((synsim_scal_t*)scal)->fd : -1;
}

int scal_get_handle_from_fd(int fd, scal_handle_t *scal)
{
    synsim_scal_t *s;

    if (scal == NULL) {
        return SCAL_INVALID_PARAM;
    }
    pthread_mutex_lock(&synsim_scal_lock);
    for (s = synsim_scal_list; (s != NULL) && (s->fd != fd); s = s->next) {
    }
    pthread_mutex_unlock(&synsim_scal_lock);
    if (s == NULL) {
        return SCAL_FAILURE;
    }
    *scal = (scal_handle_t)s;
    return SCAL_SUCCESS;
}

int scal_get_pool_handle_by_name(const scal_handle_t scal,
                                 const char *pool_name,
                                 scal_pool_handle_t *pool)
{
    synsim_scal_t *s = (synsim_scal_t*)scal;
    unsigned       i;

    if ((s == NULL) || (pool_name == NULL) || (pool == NULL)) {
        return SCAL_INVALID_PARAM;
    }
    for (i = 0; i < s->npools; i++) {
        if (!strcmp(s->pools[i].name, pool_name)) {
            *pool = (scal_pool_handle_t)&s->pools[i];
            return SCAL_SUCCESS;
        }
    }
    return SCAL_NOT_FOUND;
}

int scal_pool_get_infoV2(const scal_pool_handle_t pool,
                         scal_memory_pool_infoV2 *info)
{
    synsim_scal_pool_t *p = (synsim_scal_pool_t*)pool;

    if ((p == NULL) || (info == NULL)) {
        return SCAL_INVALID_PARAM;
    }
    memset(info, 0, sizeof(*info));
    info->scal                          = (scal_handle_t)p->scal;
    info->name                          = p->name;
    info->idx                           = p->idx;
    info->device_base_address           = p->base;
    info->device_base_allocated_address = p->map_va;
    pthread_mutex_lock(&synsim_scal_lock);
    info->totalSize                     = p->heap.size;
    info->freeSize                      = p->heap.free;
    pthread_mutex_unlock(&synsim_scal_lock);
    return SCAL_SUCCESS;
}

int scal_pool_get_info(const scal_pool_handle_t pool,
                       scal_memory_pool_info *info)
{
    scal_memory_pool_infoV2 v2;
    int                     rc;

    if (info == NULL) {
        return SCAL_INVALID_PARAM;
    }
    rc = scal_pool_get_infoV2(pool, &v2);
    if (rc == SCAL_SUCCESS) {
        memcpy(info, &v2, sizeof(*info));
    }
    return rc;
}

int scal_allocate_aligned_buffer(const scal_pool_handle_t pool,
                                 const uint64_t size,
                                 const uint64_t alignment,
                                 scal_buffer_handle_t *buff)
{
    synsim_scal_pool_t *p = (synsim_scal_pool_t*)pool;
    synsim_scal_buf_t  *b;
    uint64_t            addr;

    if ((p == NULL) || (size == 0) || (buff == NULL) || (alignment == 0)) {
        return SCAL_INVALID_PARAM;
    }
    b = calloc(1, sizeof(*b));
    if (b == NULL) {
        return SCAL_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&synsim_scal_lock);
    addr = synsim_heap_alloc(&p->heap, size, alignment);
    pthread_mutex_unlock(&synsim_scal_lock);
    if (addr == 0) {
        free(b);
        return SCAL_OUT_OF_MEMORY;
    }
    b->pool = p;
    b->addr = addr;
    *buff   = (scal_buffer_handle_t)b;
    return SCAL_SUCCESS;
}

int scal_allocate_buffer(const scal_pool_handle_t pool, const uint64_t size,
                         scal_buffer_handle_t *buff)
{
    return scal_allocate_aligned_buffer(pool, size, 128, buff);
}

int scal_free_buffer(const scal_buffer_handle_t buff)
{
    synsim_scal_buf_t *b = (synsim_scal_buf_t*)buff;

    if (b == NULL) {
        return SCAL_INVALID_PARAM;
    }
    pthread_mutex_lock(&synsim_scal_lock);
    synsim_heap_free(&b->pool->heap, b->addr);
    pthread_mutex_unlock(&synsim_scal_lock);
    free(b);
    return SCAL_SUCCESS;
}

int scal_buffer_get_info(const scal_buffer_handle_t buff,
                         scal_buffer_info_t *info)
{
    synsim_scal_buf_t *b = (synsim_scal_buf_t*)buff;

    if ((b == NULL) || (info == NULL)) {
        return SCAL_INVALID_PARAM;
    }
    memset(info, 0, sizeof(*info));
    info->pool           = (scal_pool_handle_t)b->pool;
    info->device_address = b->addr;
    return SCAL_SUCCESS;
}

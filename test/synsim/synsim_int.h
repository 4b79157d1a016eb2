/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Internals of the emulated libSynapse (docs/synapse.md). One global lock
 * guards the device table and every handle registry; each stream has its
 * own lock and worker thread for the copies queued on it.
 */

#ifndef SYNSIM_INT_H_
#define SYNSIM_INT_H_

#define _GNU_SOURCE
#include "synsim_api.h"
#include <uct/gaudi/hl/gaudi_hl_abi.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define SYNSIM_MAX_DEV      32
#define SYNSIM_ALIGN        128     /* synDeviceMalloc result alignment */
#define SYNSIM_G1_PAGE      (2ULL << 20) /* Gaudi1 DRAM page (facts 3) */

/* A block of one device memory region (sorted, adjacent, cover it) */
typedef struct synsim_block {
    struct synsim_block *next;
    uint64_t             addr;
    uint64_t             size;
    int                  used;
} synsim_block_t;

/*
 * Device memory obtained from the driver: Gaudi2/3 an ALLOC handle mapped
 * at a DRAM VA; Gaudi1 (no DRAM MMU) the user DRAM range itself
 */
typedef struct synsim_region {
    struct synsim_region *next;
    uint64_t              base;
    uint64_t              size;
    uint64_t              handle;   /* Gaudi2/3 ALLOC handle */
    synsim_block_t       *blocks;
} synsim_region_t;

/* An entry of the host-address table (synHostMap or synHostMalloc): MAP
 * USERPTR on the device; the list is in start order */
typedef struct synsim_hostmap {
    struct synsim_hostmap *next;
    uintptr_t              addr;
    uint64_t               size;
    uint64_t               va;
    uint64_t               alloc;   /* synHostMalloc: bytes to munmap */
} synsim_hostmap_t;

typedef struct synsim_dev {
    int                    acquired;
    int                    fd;
    int                    minor;
    int                    accel;      /* DRM accel node vs legacy */
    int                    gaudi1;
    synDeviceType          type;
    struct gaudi_hl_hw_ip_info hw_ip;
    char                   pci_bus[32];
    synsim_region_t       *regions;
    synsim_hostmap_t      *hostmaps;
} synsim_dev_t;

typedef struct synsim_copy {
    uint64_t src;   /* device VAs (host buffers translated) */
    uint64_t dst;
    uint64_t size;
} synsim_copy_t;

/* One queued operation: a synMemCopyAsync[Multiple] call */
typedef struct synsim_op {
    struct synsim_op *next;
    uint64_t          seq;
    uint64_t          count;
    synsim_copy_t     copy[];
} synsim_op_t;

struct synsim_stream {
    struct synsim_stream *next;     /* registry */
    synDeviceId           dev;
    int                   fd;
    pthread_t             thread;
    pthread_mutex_t       lock;
    pthread_cond_t        cond;     /* work queued / work done */
    synsim_op_t          *head, *tail;
    uint64_t              last_seq; /* of the last queued op */
    uint64_t              done_seq; /* of the last finished op */
    uint64_t              err_seq;  /* first failed op, 0: none */
    synStatus             err;
    int                   stop;
};

struct synsim_event {
    struct synsim_event  *next;     /* registry */
    synDeviceId           dev;
    struct synsim_stream *stream;   /* NULL: never recorded */
    uint64_t              seq;
};

typedef struct {
    int                   initialized;
    int                   fd_offset;          /* 48 or 40 */
    int                 (*pdma_copy)(int, uint64_t, uint64_t, uint64_t);
    synsim_dev_t          dev[SYNSIM_MAX_DEV];
    struct synsim_stream *streams;
    struct synsim_event  *events;
} synsim_global_t;

extern synsim_global_t synsim;
extern pthread_mutex_t synsim_lock;

/* synsim_device.c */
synsim_dev_t *synsim_dev_get(synDeviceId id);       /* lock held */
int synsim_hl_mem(const synsim_dev_t *d, union hl_mem_args *args);
synStatus synsim_errno_status(int err);
void synsim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* synsim_mem.c */
int synsim_unmap(const synsim_dev_t *d, uint64_t va);   /* HL_MEM_OP_UNMAP */
void synsim_mem_release(synsim_dev_t *d);           /* lock held */

/* synsim_host.c */
synStatus synsim_host_translate(synsim_dev_t *d, uint64_t addr,
                                uint64_t size, uint64_t *va);
void synsim_host_release(synsim_dev_t *d);          /* lock held */

/* synsim_stream.c */
void synsim_streams_release(synDeviceId id);        /* lock not held */

#endif

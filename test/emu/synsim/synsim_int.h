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
#include "synsim_heap.h"
#include "synsim_scal.h"
#include <uct/gaudi/hl/gaudi_hl_abi.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define SYNSIM_MAX_DEV      32      /* device nodes looked at */
#define SYNSIM_ALIGN        128     /* synDeviceMalloc result alignment */
#define SYNSIM_ACQUIRE_WAIT 60      /* s, osal.hpp:208 */
#define SYNSIM_RESET_POLL_MS 500    /* physical_device.cpp:85 */
#define SYNSIM_FAILS        16      /* failed ops a stream remembers */
#define SYNSIM_DFA_KILL_S   5       /* dfa_base.cpp:41 */

/* A synDeviceMalloc piece: its SCAL buffer (Gaudi2/3) */
typedef struct synsim_devbuf {
    struct synsim_devbuf *next;
    uint64_t              addr;
    scal_buffer_handle_t  scal_buf;
} synsim_devbuf_t;

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
    scal_handle_t          scal;       /* Gaudi2/3: SCAL's pools */
    scal_pool_handle_t     pool;       /* global_hbm */
    uint64_t               pool_reserved; /* in use when SynapseAI took
                                             the pool (its own) */
    synsim_heap_t          g1_heap;    /* Gaudi1: the user DRAM */
    synsim_devbuf_t       *bufs;
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
    struct synsim_queue *queue;     /* the engine queue it runs on */
    uint64_t          ticket;       /* its place in that queue */
    synsim_copy_t     copy[];
} synsim_op_t;

/*
 * A physical engine queue: SynapseAI gives each stream, at its first copy,
 * one of SYNSIM_AFFINITIES queue sets (one queue per direction) by round
 * robin per direction, and streams of one set share its queues
 * (synsim_stream.c, docs/synapse.md "Streams and queues"). Copies of one
 * queue run in the order they were queued, whatever their stream.
 */
#define SYNSIM_AFFINITIES   3
#define SYNSIM_DIRECTIONS   3       /* H2D, D2H, D2D */
typedef struct synsim_queue {
    pthread_mutex_t       lock;
    pthread_cond_t        cond;
    uint64_t              next;     /* ticket of the next queued copy */
    uint64_t              serving;  /* ticket running or next to run */
} synsim_queue_t;

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
    uint64_t              rec_seq;  /* last op of the last event record */
    uint64_t              sync_seq; /* last op a synchronize reported */
    uint64_t              fail[SYNSIM_FAILS]; /* recent failed ops */
    unsigned              nfail;
    int                   stop;
    int                   affinity; /* queue set, -1 before its 1st copy */
};

struct synsim_event {
    struct synsim_event  *next;     /* registry */
    synDeviceId           dev;
    struct synsim_stream *stream;   /* NULL: never recorded */
    uint64_t              from;     /* covers the ops (from, seq] */
    uint64_t              seq;
};

typedef struct {
    int                   initialized;
    int                   dfa_mode;           /* TERMINATE_SYNAPSE_UPON_DFA */
    int                   terminated;         /* DFA started: API refused */
    int                   fd_offset;          /* 48 or 40 */
    int                 (*pdma_copy)(int, uint64_t, uint64_t, uint64_t);
    int                 (*va_imported)(int, uint64_t, uint64_t);
    int                 (*pdma_fault)(int, uint64_t, uint64_t);
    int                   imported_va;        /* SYNSIM_IMPORTED_VA */
    synsim_queue_t        queues[SYNSIM_AFFINITIES][SYNSIM_DIRECTIONS];
    unsigned              type_usage[SYNSIM_DIRECTIONS]; /* round robin */
    synsim_dev_t          dev;        /* one device per process */
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

/* synsim_stream.c */
int synsim_imported_va_init(void);
void synsim_queues_init(void);

/* synsim_dfa.c */
synStatus synsim_api_enter(void);   /* synUninitialized / Terminated */
int synsim_dfa_init(void);
int synsim_dfa_begin(const char *why);  /* 1: the process terminates */
void synsim_dfa_end(void);

/* synsim_devmem.c */
synStatus synsim_devmem_init(synsim_dev_t *d);
void synsim_devmem_release(synsim_dev_t *d);        /* lock held */
uint64_t synsim_devmem_map_base(const synsim_dev_t *d);


/* synsim_host.c */
synStatus synsim_host_translate(synsim_dev_t *d, uint64_t addr,
                                uint64_t size, uint64_t *va);
void synsim_host_release(synsim_dev_t *d);          /* lock held */

/* synsim_stream.c */
void synsim_streams_release(void);                  /* lock not held */

#endif

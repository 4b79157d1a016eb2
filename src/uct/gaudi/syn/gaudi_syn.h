/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * SynapseAI at run time: the loader of libSynapse.so (dlopen, never a
 * link dependency), synStatus -> ucs_status_t, and thin wrappers of the
 * calls a SynapseAI copy backend needs (docs/synapse.md).
 */

#ifndef UCT_GAUDI_SYN_H_
#define UCT_GAUDI_SYN_H_

#include <uct/gaudi/syn/gaudi_syn_api.h>

#include <ucs/type/status.h>

#include <stddef.h>
#include <stdint.h>


/* Default library name, looked up like any dlopen() name */
#define UCT_GAUDI_SYN_LIB_DEFAULT "libSynapse.so"

/* Device ids looked at for the application's device */
#define UCT_GAUDI_SYN_MAX_DEVICES 64


/* The resolved entry points */
typedef struct uct_gaudi_syn_ops {
    uct_gaudi_syn_initialize_fn_t      initialize;
    uct_gaudi_syn_destroy_fn_t         destroy;
    uct_gaudi_syn_device_acquire_fn_t  device_acquire;
    uct_gaudi_syn_device_release_fn_t  device_release;
    uct_gaudi_syn_device_get_info_fn_t device_get_info;
    uct_gaudi_syn_device_malloc_fn_t   device_malloc;
    uct_gaudi_syn_device_free_fn_t     device_free;
    uct_gaudi_syn_host_map_fn_t        host_map;
    uct_gaudi_syn_host_unmap_fn_t      host_unmap;
    uct_gaudi_syn_stream_create_fn_t   stream_create;
    uct_gaudi_syn_stream_fn_t          stream_destroy;
    uct_gaudi_syn_stream_fn_t          stream_synchronize;
    uct_gaudi_syn_memcpy_fn_t          memcpy_async;
    uct_gaudi_syn_memcpy_multiple_fn_t memcpy_async_multiple;
    uct_gaudi_syn_event_create_fn_t    event_create;
    uct_gaudi_syn_event_fn_t           event_destroy;
    uct_gaudi_syn_event_record_fn_t    event_record;
    uct_gaudi_syn_event_fn_t           event_query;
} uct_gaudi_syn_ops_t;


/*
 * Whether a compute node minor is one of the module's Gaudi devices: the
 * caller's discovery answers, the loader knows no device of its own
 */
typedef int (*uct_gaudi_syn_is_device_fn_t)(int minor);


/* A loaded libSynapse */
typedef struct uct_gaudi_syn {
    void                *handle;     /* our dlopen() reference */
    int                 preloaded;   /* the process had loaded it before */
    char                path[256];   /* where it was found */
    uct_gaudi_syn_ops_t ops;
    uct_gaudi_syn_is_device_fn_t is_device; /* of the load */
} uct_gaudi_syn_t;


/*
 * Whether the process has already loaded @a libname (RTLD_NOLOAD).
 * @a absent_at, the caller's and read and written atomically, remembers
 * how many objects the process had loaded when the library was last
 * found absent (0: never): while none has been loaded since, the answer
 * stands without a search of the library path.
 */
int uct_gaudi_syn_is_loaded(const char *libname, uint64_t *absent_at);

/*
 * Load @a libname (NULL: UCT_GAUDI_SYN_LIB_DEFAULT): the copy the process
 * already has, else a new one, and resolve every entry point. A library
 * that cannot be loaded or lacks an entry point is refused with a
 * diagnostic naming what is missing (UCS_ERR_UNSUPPORTED). @a is_device
 * tells the fds of Gaudi devices in what the library reports.
 */
ucs_status_t uct_gaudi_syn_load(const char *libname,
                                uct_gaudi_syn_is_device_fn_t is_device,
                                uct_gaudi_syn_t *syn);

/* Drop the reference taken by uct_gaudi_syn_load() */
void uct_gaudi_syn_unload(uct_gaudi_syn_t *syn);


/* synStatus -> ucs_status_t, and the status's name and meaning */
ucs_status_t uct_gaudi_syn_status(uct_gaudi_syn_status_t syn_status);
const char *uct_gaudi_syn_status_name(uct_gaudi_syn_status_t syn_status);
const char *uct_gaudi_syn_status_str(uct_gaudi_syn_status_t syn_status);


/* Device: acquire (initializing SynapseAI if needed; UCS_ERR_NO_RESOURCE
 * while the device resets, UCS_ERR_BUSY if someone holds it), release */
ucs_status_t uct_gaudi_syn_acquire(const uct_gaudi_syn_t *syn,
                                   const char *pci_bus,
                                   uct_gaudi_syn_device_t *device_p);
ucs_status_t uct_gaudi_syn_release(const uct_gaudi_syn_t *syn,
                                   uct_gaudi_syn_device_t device);

/*
 * The compute node fd (and synDeviceType value, @a type_p may be NULL) in
 * the synDeviceInfo that @a get_info gives for @a device. Which layout the
 * library was built with is not known (facts 9.7), so both are read and a
 * candidate counts only if it is an open compute node whose minor
 * @a is_device accepts. UCS_ERR_NO_ELEM: the call failed (e.g. nothing
 * acquired); UCS_ERR_NO_DEVICE: no candidate, or two different ones.
 * Quiet (debug).
 */
ucs_status_t
uct_gaudi_syn_info_fd(uct_gaudi_syn_device_get_info_fn_t get_info,
                      uct_gaudi_syn_is_device_fn_t is_device,
                      uct_gaudi_syn_device_t device, int *fd_p, int *type_p);

/* The same through the loaded library, logging a failure */
ucs_status_t uct_gaudi_syn_device_fd(const uct_gaudi_syn_t *syn,
                                     uct_gaudi_syn_device_t device,
                                     int *fd_p, int *type_p);

/* The fd and id of the device the process already acquired (the
 * application's SynapseAI), quietly UCS_ERR_NO_DEVICE if none */
ucs_status_t uct_gaudi_syn_held_fd(const uct_gaudi_syn_t *syn, int *fd_p,
                                   uct_gaudi_syn_device_t *device_p);

/*
 * SynapseAI's device memory pool on Gaudi2/3 (gaudi_syn_pool.c): the VA
 * of the driver mapping that holds it (what a dma-buf export takes) and
 * the pool's extent inside it.
 */
typedef struct uct_gaudi_syn_pool {
    uint64_t   map_va;  /* MAP VA of the mapping */
    uint64_t   start;   /* first byte of the pool (>= map_va) */
    uint64_t   end;     /* first byte past it */
    const char *source; /* how it was learned, for messages */
} uct_gaudi_syn_pool_t;

/*
 * The pool of the device on @a fd if [addr, +length) lies in it: from
 * libscal if loaded, else synDeviceGetInfoV2 of the loaded libSynapse
 * (@a syn, or the default name if NULL). UCS_ERR_NO_ELEM quietly (debug)
 * if neither tells, or the range is outside.
 */
ucs_status_t uct_gaudi_syn_pool_find(const uct_gaudi_syn_t *syn, int fd,
                                     uint64_t addr, size_t length,
                                     uct_gaudi_syn_pool_t *pool);

/* Device memory and host registration */
ucs_status_t uct_gaudi_syn_device_malloc(const uct_gaudi_syn_t *syn,
                                         uct_gaudi_syn_device_t device,
                                         size_t size, uint64_t *addr_p);
ucs_status_t uct_gaudi_syn_device_free(const uct_gaudi_syn_t *syn,
                                       uct_gaudi_syn_device_t device,
                                       uint64_t addr);
ucs_status_t uct_gaudi_syn_host_map(const uct_gaudi_syn_t *syn,
                                    uct_gaudi_syn_device_t device,
                                    const void *buffer, size_t size);
ucs_status_t uct_gaudi_syn_host_unmap(const uct_gaudi_syn_t *syn,
                                      uct_gaudi_syn_device_t device,
                                      const void *buffer);


/* Streams and copies: queued, in order per stream. A host side SynapseAI
 * cannot translate (synMappingNotFound) is UCS_ERR_INVALID_ADDR without a
 * log line: the caller reports it or stages the copy */
ucs_status_t uct_gaudi_syn_stream_create(const uct_gaudi_syn_t *syn,
                                         uct_gaudi_syn_device_t device,
                                         uct_gaudi_syn_stream_t *stream_p);
ucs_status_t uct_gaudi_syn_stream_destroy(const uct_gaudi_syn_t *syn,
                                          uct_gaudi_syn_stream_t stream);
ucs_status_t uct_gaudi_syn_stream_sync(const uct_gaudi_syn_t *syn,
                                       uct_gaudi_syn_stream_t stream);
ucs_status_t uct_gaudi_syn_memcpy_async(const uct_gaudi_syn_t *syn,
                                        uct_gaudi_syn_stream_t stream,
                                        uint64_t dst, uint64_t src,
                                        size_t length,
                                        uct_gaudi_syn_dir_t dir);

/* Events: completion of what a stream had queued when recorded */
ucs_status_t uct_gaudi_syn_event_create(const uct_gaudi_syn_t *syn,
                                        uct_gaudi_syn_device_t device,
                                        uct_gaudi_syn_event_t *event_p);
ucs_status_t uct_gaudi_syn_event_destroy(const uct_gaudi_syn_t *syn,
                                         uct_gaudi_syn_event_t event);
ucs_status_t uct_gaudi_syn_event_record(const uct_gaudi_syn_t *syn,
                                        uct_gaudi_syn_event_t event,
                                        uct_gaudi_syn_stream_t stream);

/* UCS_OK when complete, UCS_INPROGRESS while not, or the copy's error */
ucs_status_t uct_gaudi_syn_event_query(const uct_gaudi_syn_t *syn,
                                       uct_gaudi_syn_event_t event);

#endif

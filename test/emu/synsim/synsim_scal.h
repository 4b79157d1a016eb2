/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The subset of SCAL's public C API (scal/include/scal.h of SynapseAI)
 * that the emulated libscal.so implements: the HBM memory pools that
 * SynapseAI's device memory comes from on Gaudi2/3. libSynapse.so is
 * linked against libscal.so, so once libSynapse is loaded
 * dlopen("libscal.so", RTLD_NOLOAD) finds it, as on a real node.
 *
 * scal_init(fd) ALLOCates and MAPs the pools on the compute fd (done by
 * synDeviceAcquire*); scal_get_handle_from_fd(fd) finds that instance;
 * scal_get_pool_handle_by_name(h, "global_hbm") the user pool;
 * scal_pool_get_infoV2: device_base_allocated_address = the driver MAP VA
 * of the mapping that holds the pool (what EXPORT_DMABUF_FD takes as
 * addr), device_base_address = the pool's first usable address,
 * totalSize / freeSize its size and what is left. docs/synapse.md.
 */

#ifndef SYNSIM_SCAL_H_
#define SYNSIM_SCAL_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SCAL_SUCCESS        0
#define SCAL_FAILURE        -1
#define SCAL_INVALID_PARAM  -4
#define SCAL_OUT_OF_MEMORY  -5
#define SCAL_NOT_FOUND      -11

#define SYNSIM_SCAL_HANDLE(_name) \
    struct _name##__ { int unused; }; typedef struct _name##__ *_name

SYNSIM_SCAL_HANDLE(scal_handle_t);
SYNSIM_SCAL_HANDLE(scal_pool_handle_t);
SYNSIM_SCAL_HANDLE(scal_buffer_handle_t);
SYNSIM_SCAL_HANDLE(scal_arc_fw_config_handle_t);

typedef struct _scal_memory_pool_info {
    scal_handle_t scal;
    const char   *name;
    unsigned      idx;
    uint64_t      device_base_address;
    void         *host_base_address;
    uint32_t      core_base_address;
    uint64_t      totalSize;
    uint64_t      freeSize;
} scal_memory_pool_info;

typedef struct _scal_memory_pool_infoV2 {
    scal_handle_t scal;
    const char   *name;
    unsigned      idx;
    uint64_t      device_base_address;
    void         *host_base_address;
    uint32_t      core_base_address;
    uint64_t      totalSize;
    uint64_t      freeSize;
    uint64_t      device_base_allocated_address;
} scal_memory_pool_infoV2;

typedef struct _scal_buffer_info_t {
    scal_pool_handle_t pool;
    uint32_t           core_address;
    void              *host_address;
    uint64_t           device_address;
} scal_buffer_info_t;

int scal_init(int fd, const char *config_file_path, scal_handle_t *scal,
              scal_arc_fw_config_handle_t fwCfg);
void scal_destroy(const scal_handle_t scal);
int scal_get_fd(const scal_handle_t scal);
int scal_get_handle_from_fd(int fd, scal_handle_t *scal);
int scal_get_pool_handle_by_name(const scal_handle_t scal,
                                 const char *pool_name,
                                 scal_pool_handle_t *pool);
int scal_pool_get_info(const scal_pool_handle_t pool,
                       scal_memory_pool_info *info);
int scal_pool_get_infoV2(const scal_pool_handle_t pool,
                         scal_memory_pool_infoV2 *info);
int scal_allocate_buffer(const scal_pool_handle_t pool, const uint64_t size,
                         scal_buffer_handle_t *buff);
int scal_allocate_aligned_buffer(const scal_pool_handle_t pool,
                                 const uint64_t size,
                                 const uint64_t alignment,
                                 scal_buffer_handle_t *buff);
int scal_free_buffer(const scal_buffer_handle_t buff);
int scal_buffer_get_info(const scal_buffer_handle_t buff,
                         scal_buffer_info_t *info);

#ifdef __cplusplus
}
#endif

#endif

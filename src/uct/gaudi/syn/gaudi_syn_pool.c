/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Where SynapseAI's device memory lies (docs/synapse.md, "Device memory"):
 * on Gaudi2/3 synDeviceMalloc hands out pieces of SCAL's "global_hbm"
 * pool, which SCAL ALLOCated and MAPped once at synDeviceAcquire. A dma-buf
 * of such a piece is an export of that one mapping (its MAP VA) at the
 * piece's offset, so an exporter needs the mapping's VA: from SCAL when
 * libscal is loaded (the pool's MAP VA and extent), else from
 * synDeviceGetInfoV2's globalHbmBaseAddress. Both are looked up by dlsym
 * in libraries the process already loaded: never a build dependency.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_syn.h"

#include <ucs/debug/log.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <string.h>


/* The pool from SCAL's instance on @a fd, if libscal is loaded */
static ucs_status_t uct_gaudi_syn_pool_scal(int fd, uct_gaudi_syn_pool_t *pool)
{
    uct_gaudi_scal_get_handle_from_fd_fn_t get_handle;
    uct_gaudi_scal_get_pool_handle_by_name_fn_t get_pool;
    uct_gaudi_scal_pool_get_info_v2_fn_t get_info;
    uct_gaudi_scal_pool_handle_t pool_handle;
    uct_gaudi_scal_pool_info_t info;
    uct_gaudi_scal_handle_t scal;
    ucs_status_t status = UCS_ERR_NO_ELEM;
    void *lib;
    int rc;

    lib = dlopen(UCT_GAUDI_SCAL_LIB, RTLD_NOW | RTLD_NOLOAD);
    if (lib == NULL) {
        return UCS_ERR_NO_ELEM;
    }

    get_handle = (uct_gaudi_scal_get_handle_from_fd_fn_t)
                 dlsym(lib, "scal_get_handle_from_fd");
    get_pool   = (uct_gaudi_scal_get_pool_handle_by_name_fn_t)
                 dlsym(lib, "scal_get_pool_handle_by_name");
    get_info   = (uct_gaudi_scal_pool_get_info_v2_fn_t)
                 dlsym(lib, "scal_pool_get_infoV2");
    if ((get_handle == NULL) || (get_pool == NULL) || (get_info == NULL)) {
        ucs_debug("gaudi: %s lacks the pool calls", UCT_GAUDI_SCAL_LIB);
        goto out;
    }

    rc = get_handle(fd, &scal);
    if (rc != 0) {
        ucs_debug("gaudi: no SCAL instance on fd %d (%d)", fd, rc);
        goto out;
    }

    rc = get_pool(scal, UCT_GAUDI_SCAL_GLOBAL_HBM_POOL, &pool_handle);
    if (rc == 0) {
        memset(&info, 0, sizeof(info));
        rc = get_info(pool_handle, &info);
    }
    if (rc != 0) {
        ucs_debug("gaudi: SCAL on fd %d has no readable \"%s\" pool (%d)",
                  fd, UCT_GAUDI_SCAL_GLOBAL_HBM_POOL, rc);
        goto out;
    }

    if ((info.device_base_allocated_address == 0) ||
        (info.device_base_address < info.device_base_allocated_address) ||
        (info.total_size == 0) ||
        (info.device_base_address + info.total_size <
         info.device_base_address)) {
        ucs_debug("gaudi: SCAL pool \"%s\" on fd %d has an unusable layout "
                  "(map 0x%" PRIx64 ", base 0x%" PRIx64 ", size %" PRIu64
                  ")", UCT_GAUDI_SCAL_GLOBAL_HBM_POOL, fd,
                  info.device_base_allocated_address,
                  info.device_base_address, info.total_size);
        goto out;
    }

    pool->map_va = info.device_base_allocated_address;
    pool->start  = info.device_base_address;
    pool->end    = info.device_base_address + info.total_size;
    pool->source = "SCAL global_hbm";
    status       = UCS_OK;
out:
    dlclose(lib);
    return status;
}

/* The pool from synDeviceGetInfoV2 of the device whose fd is @a fd */
static ucs_status_t uct_gaudi_syn_pool_info_v2(const uct_gaudi_syn_t *syn,
                                               int fd,
                                               uct_gaudi_syn_pool_t *pool)
{
    uct_gaudi_syn_device_get_info_v2_fn_t get_info;
    uint8_t buf[UCT_GAUDI_SYN_INFO_BUF_SIZE];
    ucs_status_t status = UCS_ERR_NO_ELEM;
    uint64_t base, dram_size;
    int32_t info_fd;
    void *lib;

    /* the module's libSynapse, else the application's: never loaded here */
    lib = (syn != NULL) ? syn->handle :
          dlopen(UCT_GAUDI_SYN_LIB_DEFAULT, RTLD_NOW | RTLD_NOLOAD);
    if (lib == NULL) {
        return UCS_ERR_NO_ELEM;
    }

    get_info = (uct_gaudi_syn_device_get_info_v2_fn_t)
               dlsym(lib, "synDeviceGetInfoV2");
    memset(buf, 0xff, sizeof(buf));
    if ((get_info == NULL) ||
        (get_info(UCT_GAUDI_SYN_DEVICE_ANY, buf) != UCT_GAUDI_SYN_SUCCESS)) {
        goto out;
    }

    memcpy(&info_fd, buf + UCT_GAUDI_SYN_INFO2_FD_OFFSET, sizeof(info_fd));
    memcpy(&base, buf + UCT_GAUDI_SYN_INFO2_HBM_BASE_OFFSET, sizeof(base));
    memcpy(&dram_size, buf + UCT_GAUDI_SYN_INFO2_DRAM_SIZE_OFFSET,
           sizeof(dram_size));
    if (info_fd != fd) {
        ucs_debug("gaudi: synDeviceGetInfoV2 describes fd %d, not %d",
                  info_fd, fd);
        goto out;
    }
    if ((base == 0) || (base == UINT64_MAX) || (dram_size == 0) ||
        (base + dram_size < base)) {
        ucs_debug("gaudi: synDeviceGetInfoV2 has no globalHbmBaseAddress "
                  "(0x%" PRIx64 ", DRAM %" PRIu64 " bytes)", base, dram_size);
        goto out;
    }

    /* the pool's extent is not reported: the mapping holds at most all
     * DRAM; the driver checks the exported range against the mapping */
    pool->map_va = base;
    pool->start  = base;
    pool->end    = base + dram_size;
    pool->source = "synDeviceGetInfoV2";
    status       = UCS_OK;
out:
    if (syn == NULL) {
        dlclose(lib);
    }
    return status;
}

ucs_status_t uct_gaudi_syn_pool_find(const uct_gaudi_syn_t *syn, int fd,
                                     uint64_t addr, size_t length,
                                     uct_gaudi_syn_pool_t *pool)
{
    ucs_status_t status;

    status = uct_gaudi_syn_pool_scal(fd, pool);
    if (status != UCS_OK) {
        status = uct_gaudi_syn_pool_info_v2(syn, fd, pool);
    }
    if (status != UCS_OK) {
        return status;
    }

    if ((addr < pool->start) || (addr >= pool->end) ||
        (length > pool->end - addr)) {
        ucs_debug("gaudi: 0x%" PRIx64 "+%zu is outside SynapseAI's pool "
                  "[0x%" PRIx64 ", 0x%" PRIx64 ") (%s)", addr, length,
                  pool->start, pool->end, pool->source);
        return UCS_ERR_NO_ELEM;
    }
    return UCS_OK;
}

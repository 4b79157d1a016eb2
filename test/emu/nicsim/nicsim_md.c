/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The emulated NIC's memory domain: registration of host memory (pinned
 * where it is mapped) and of device memory by dma-buf only, as an RDMA
 * NIC's ibv_reg_mr / ibv_reg_dmabuf_mr; remote keys; counters.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "nicsim_int.h"

#include <ucs/datastruct/khash.h>
#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if !UCT_GAUDI_HAVE_MEM_REG_PARAMS || !UCT_GAUDI_HAVE_MD_QUERY_V2
#  error "the emulated NIC needs UCX's dma-buf registration (UCX >= 1.14)"
#endif


KHASH_MAP_INIT_INT64(uct_nicsim_mr, uct_nicsim_mr_t*)

/* The process's MRs by key id: the engines read them, registration and
 * deregistration write them */
static struct {
    pthread_rwlock_t      lock;
    khash_t(uct_nicsim_mr) hash;
} uct_nicsim_mrs = {
    .lock = PTHREAD_RWLOCK_INITIALIZER
};

static uct_nicsim_counters_t uct_nicsim_counters;

/* The driver emulator's importer entry points (docs/hlsim.md) */
static struct {
    int (*attach)(int fd, uint64_t *size_p);
    int (*access)(int handle, uint64_t offset, void *buf, uint64_t len,
                  int write);
    int (*detach)(int handle);
} uct_nicsim_hlsim;

static const char *uct_nicsim_fault_names[] = {
    [UCT_NICSIM_FAULT_NONE]   = "none",
    [UCT_NICSIM_FAULT_FD]     = "fd",
    [UCT_NICSIM_FAULT_OFFSET] = "offset",
    [UCT_NICSIM_FAULT_LENGTH] = "length",
    [UCT_NICSIM_FAULT_LAST]   = NULL
};

static ucs_config_field_t uct_nicsim_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_nicsim_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"DMABUF_FAULT", "none",
     "Test fault: what the NIC does wrong with each dma-buf it registers:\n"
     " none   - registers the fd and offset it is given\n"
     " fd     - attaches another file (refused: not a dma-buf)\n"
     " offset - one page past the offset given (the wrong bytes move)\n"
     " length - claims a range past the dma-buf's end (refused)",
     ucs_offsetof(uct_nicsim_md_config_t, fault),
     UCS_CONFIG_TYPE_ENUM(uct_nicsim_fault_names)},

    {"PRINT_COUNTERS", "n",
     "Print the NIC's counters to stderr when an MD closes:\n"
     "\"nicsim counters pid N: dmabuf_regs=... dmabuf_read=... ...\"",
     ucs_offsetof(uct_nicsim_md_config_t, print_counters),
     UCS_CONFIG_TYPE_BOOL},

    {NULL}
};


void uct_nicsim_counters_get(uct_nicsim_counters_t *counters)
{
    uint64_t *dst = (uint64_t*)counters;
    uint64_t *src = (uint64_t*)&uct_nicsim_counters;
    size_t i;

    for (i = 0; i < sizeof(*counters) / sizeof(uint64_t); ++i) {
        dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
    }
}

#define UCT_NICSIM_COUNT(_field, _n) \
    __atomic_add_fetch(&uct_nicsim_counters._field, (_n), __ATOMIC_RELAXED)

void uct_nicsim_count_remote_refused(void)
{
    UCT_NICSIM_COUNT(remote_refused, 1);
}

static void uct_nicsim_counters_print(void)
{
    uct_nicsim_counters_t c;

    uct_nicsim_counters_get(&c);
    fprintf(stderr, "nicsim counters pid %d: host_regs=%" PRIu64
            " dmabuf_regs=%" PRIu64 " regs_refused=%" PRIu64
            " live_regs=%" PRIu64 " dmabuf_read=%" PRIu64
            " dmabuf_written=%" PRIu64 " host_read=%" PRIu64
            " host_written=%" PRIu64 " remote_refused=%" PRIu64 "\n",
            getpid(), c.host_regs, c.dmabuf_regs, c.regs_refused,
            c.live_regs, c.dmabuf_read, c.dmabuf_written, c.host_read,
            c.host_written, c.remote_refused);
}


void uct_nicsim_mr_table_rdlock(void)
{
    pthread_rwlock_rdlock(&uct_nicsim_mrs.lock);
}

void uct_nicsim_mr_table_unlock(void)
{
    pthread_rwlock_unlock(&uct_nicsim_mrs.lock);
}

uct_nicsim_mr_t *uct_nicsim_mr_find(uint64_t id)
{
    khiter_t it = kh_get(uct_nicsim_mr, &uct_nicsim_mrs.hash, id);

    return (it == kh_end(&uct_nicsim_mrs.hash)) ? NULL :
           kh_value(&uct_nicsim_mrs.hash, it);
}

int uct_nicsim_mr_covers(const uct_nicsim_mr_t *mr, uint64_t address,
                         size_t length)
{
    return (address >= mr->address) && (length <= mr->length) &&
           (address - mr->address <= mr->length - length);
}

ucs_status_t uct_nicsim_mr_access(const uct_nicsim_mr_t *mr,
                                  uint64_t address, void *buf,
                                  size_t length, int write,
                                  const char *what)
{
    int rc;

    if (!uct_nicsim_mr_covers(mr, address, length)) {
        ucs_error("nicsim: %s of [0x%" PRIx64 ", +%zu) outside its memory "
                  "region [0x%" PRIx64 ", +%zu)", what, address, length,
                  mr->address, mr->length);
        return UCS_ERR_INVALID_PARAM;
    }

    if (mr->attach < 0) {
        if (write) {
            memcpy((void*)address, buf, length);
            UCT_NICSIM_COUNT(host_written, length);
        } else {
            memcpy(buf, (const void*)address, length);
            UCT_NICSIM_COUNT(host_read, length);
        }
        return UCS_OK;
    }

    /* peer-to-peer DMA to the exporter's pages behind the dma-buf */
    rc = uct_nicsim_hlsim.access(mr->attach,
                                 mr->dmabuf_off + (address - mr->address),
                                 buf, length, write);
    if (rc < 0) {
        ucs_error("nicsim: %s of %zu bytes at dma-buf offset %" PRIu64
                  " failed: %s", what, length,
                  mr->dmabuf_off + (address - mr->address), strerror(-rc));
        return UCS_ERR_IO_ERROR;
    }
    if (write) {
        UCT_NICSIM_COUNT(dmabuf_written, length);
    } else {
        UCT_NICSIM_COUNT(dmabuf_read, length);
    }
    return UCS_OK;
}


static ucs_status_t uct_nicsim_md_query(uct_md_h md, uct_md_attr_t *md_attr)
{
    /* device memory registers by dma-buf (REG_DMABUF), whatever its type:
     * reg_mem_types also names Gaudi, as UCX's IB MD does where it sees
     * a Gaudi driver (uct_ib_check_gpudirect_driver, /dev/accel/accel0) */
    md_attr->cap.flags            = UCT_MD_FLAG_REG | UCT_MD_FLAG_NEED_MEMH |
                                    UCT_MD_FLAG_NEED_RKEY |
                                    UCT_MD_FLAG_REG_DMABUF |
                                    UCT_GAUDI_MD_FLAGS_INVALIDATE;
    md_attr->cap.reg_mem_types    = UCS_BIT(UCS_MEMORY_TYPE_HOST) |
                                    UCS_BIT(UCT_GAUDI_MEMORY_TYPE);
    md_attr->cap.alloc_mem_types  = 0;
    md_attr->cap.access_mem_types = UCS_BIT(UCS_MEMORY_TYPE_HOST);
    md_attr->cap.detect_mem_types = 0;
    md_attr->cap.max_alloc        = 0;
    md_attr->cap.max_reg          = ULONG_MAX;
    md_attr->rkey_packed_size     = sizeof(uct_nicsim_rkey_t);
    md_attr->reg_cost             = ucs_linear_func_make(2e-6, 1e-10);
    memset(&md_attr->local_cpus, 0xff, sizeof(md_attr->local_cpus));
    return UCS_OK;
}

static void uct_nicsim_md_query_ext(uct_md_h md, uct_gaudi_md_ext_attr_t *ext)
{
    ext->access_mem_types = 0;
    ext->cache_mem_types  = 0;
    /* a consumer of dma-bufs: it provides none (that is gaudi_copy) */
    ext->dmabuf_mem_types = 0;
    ext->reg_alignment    = 1;
}

/* Host memory is pinned where it is mapped: a device address (a Gaudi
 * pointer, never a CPU mapping) fails as ibv_reg_mr does (EFAULT) */
static int uct_nicsim_host_mapped(void *address, size_t length)
{
    size_t page  = ucs_get_page_size();
    uintptr_t s  = ucs_align_down((uintptr_t)address, page);
    uintptr_t e  = ucs_align_up((uintptr_t)address + length, page);
    unsigned char vec[256];
    size_t n;

    for (; s < e; s += n * page) {
        n = ucs_min((e - s) / page, sizeof(vec));
        if (mincore((void*)s, n * page, vec) != 0) {
            return 0;
        }
    }
    return 1;
}

static ucs_status_t uct_nicsim_hlsim_get(void)
{
    if (uct_nicsim_hlsim.attach != NULL) {
        return UCS_OK;
    }

    uct_nicsim_hlsim.access = dlsym(RTLD_DEFAULT, "hlsim_dmabuf_access");
    uct_nicsim_hlsim.detach = dlsym(RTLD_DEFAULT, "hlsim_dmabuf_detach");
    uct_nicsim_hlsim.attach = dlsym(RTLD_DEFAULT, "hlsim_dmabuf_attach");
    return ((uct_nicsim_hlsim.attach != NULL) &&
            (uct_nicsim_hlsim.access != NULL) &&
            (uct_nicsim_hlsim.detach != NULL)) ? UCS_OK : UCS_ERR_UNSUPPORTED;
}

/* Attach to the dma-buf @fd and map [offset, +length) of it, as a NIC
 * driver's ibv_reg_dmabuf_mr (Linux drivers/infiniband/core/
 * umem_dmabuf.c, ib_umem_dmabuf_get: the range must lie inside the
 * dma-buf, else EINVAL) */
static ucs_status_t
uct_nicsim_mr_attach(uct_nicsim_md_t *md, uct_nicsim_mr_t *mr, int fd,
                     uint64_t offset, size_t length, ucs_log_level_t level)
{
    uint64_t size = 0;
    int wrong_fd  = -1;
    int rc;

    if (uct_nicsim_hlsim_get() != UCS_OK) {
        ucs_log(level, "nicsim: cannot register dma-buf fd %d: no dma-buf "
                "importer (the driver emulator, libhlsim.so, is not loaded)",
                fd);
        return UCS_ERR_UNSUPPORTED;
    }

    switch (md->fault) {
    case UCT_NICSIM_FAULT_FD:
        wrong_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        fd       = wrong_fd;
        break;
    case UCT_NICSIM_FAULT_OFFSET:
        offset  += ucs_get_page_size();
        break;
    default:
        break;
    }

    rc = uct_nicsim_hlsim.attach(fd, &size);
    if (wrong_fd >= 0) {
        close(wrong_fd);
    }
    if (rc < 0) {
        ucs_log(level, "nicsim: dma-buf fd %d refused: %s", fd,
                strerror(-rc));
        return UCS_ERR_INVALID_PARAM;
    }

    if (md->fault == UCT_NICSIM_FAULT_LENGTH) {
        length += size;
    }

    if ((offset > size) || (length > size - offset)) {
        ucs_log(level, "nicsim: dma-buf fd %d range [%" PRIu64 ", +%zu) "
                "outside the dma-buf's %" PRIu64 " bytes", fd, offset,
                length, size);
        uct_nicsim_hlsim.detach(rc);
        return UCS_ERR_INVALID_PARAM;
    }

    mr->attach     = rc;
    mr->dmabuf_off = offset;
    return UCS_OK;
}

static ucs_status_t
uct_nicsim_mem_reg(uct_md_h tl_md, void *address, size_t length,
                   const uct_md_mem_reg_params_t *params, uct_mem_h *memh_p)
{
    uct_nicsim_md_t *md = ucs_derived_of(tl_md, uct_nicsim_md_t);
    unsigned flags      = UCS_PARAM_VALUE(UCT_MD_MEM_REG_FIELD, params, flags,
                                          FLAGS, 0);
    int fd              = UCS_PARAM_VALUE(UCT_MD_MEM_REG_FIELD, params,
                                          dmabuf_fd, DMABUF_FD,
                                          UCT_DMABUF_FD_INVALID);
    uint64_t offset     = UCS_PARAM_VALUE(UCT_MD_MEM_REG_FIELD, params,
                                          dmabuf_offset, DMABUF_OFFSET, 0);
#if UCT_GAUDI_HAVE_MEM_REG_MEM_TYPE
    ucs_memory_type_t mem_type = UCS_PARAM_VALUE(UCT_MD_MEM_REG_FIELD,
                                                 params, mem_type, MEM_TYPE,
                                                 UCS_MEMORY_TYPE_UNKNOWN);
#else
    /* UCX 1.16 does not say: the address tells (host memory is mapped) */
    ucs_memory_type_t mem_type = UCS_MEMORY_TYPE_UNKNOWN;
#endif
    ucs_log_level_t level = (flags & UCT_MD_MEM_FLAG_HIDE_ERRORS) ?
                            UCS_LOG_LEVEL_DEBUG : UCS_LOG_LEVEL_ERROR;
    uct_nicsim_mr_t *mr;
    ucs_status_t status;
    khiter_t it;
    int ret;

    if (length == 0) {
        ucs_log(level, "nicsim: registration of 0 bytes at %p", address);
        status = UCS_ERR_INVALID_PARAM;
        goto err;
    }

    mr = ucs_malloc(sizeof(*mr), "nicsim_mr");
    if (mr == NULL) {
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }

    mr->md      = tl_md;
    mr->address = (uintptr_t)address;
    mr->length  = length;
    mr->attach  = -1;

    if (fd != UCT_DMABUF_FD_INVALID) {
        /* the dma-buf is all the NIC gets of device memory */
        status = uct_nicsim_mr_attach(md, mr, fd, offset, length, level);
    } else if ((mem_type != UCS_MEMORY_TYPE_UNKNOWN) &&
               !(UCS_BIT(mem_type) & UCS_MEMORY_TYPES_CPU_ACCESSIBLE)) {
        ucs_log(level, "nicsim: %s memory at %p+%zu registers by dma-buf "
                "only, and none was given", ucs_memory_type_names[mem_type],
                address, length);
        status = UCS_ERR_UNSUPPORTED;
    } else if (!uct_nicsim_host_mapped(address, length)) {
        ucs_log(level, "nicsim: cannot register %p+%zu: not mapped host "
                "memory (device memory registers by dma-buf only)", address,
                length);
        status = UCS_ERR_INVALID_ADDR;
    } else {
        status = UCS_OK;
    }
    if (status != UCS_OK) {
        goto err_free;
    }

    pthread_rwlock_wrlock(&uct_nicsim_mrs.lock);
    do {
        mr->id = ucs_generate_uuid((uintptr_t)mr);
        it     = kh_put(uct_nicsim_mr, &uct_nicsim_mrs.hash, mr->id, &ret);
    } while (ret == 0);   /* never reuse a live key */
    if (ret > 0) {
        kh_value(&uct_nicsim_mrs.hash, it) = mr;
    }
    pthread_rwlock_unlock(&uct_nicsim_mrs.lock);
    if (ret < 0) {
        status = UCS_ERR_NO_MEMORY;
        goto err_detach;
    }

    if (mr->attach >= 0) {
        UCT_NICSIM_COUNT(dmabuf_regs, 1);
    } else {
        UCT_NICSIM_COUNT(host_regs, 1);
    }
    UCT_NICSIM_COUNT(live_regs, 1);
    ucs_trace("nicsim: registered %p+%zu %s%d offset %" PRIu64 " key %"
              PRIx64, address, length, (mr->attach >= 0) ? "dma-buf fd " :
              "host", (mr->attach >= 0) ? fd : 0, mr->dmabuf_off, mr->id);
    *memh_p = mr;
    return UCS_OK;

err_detach:
    if (mr->attach >= 0) {
        uct_nicsim_hlsim.detach(mr->attach);
    }
err_free:
    ucs_free(mr);
err:
    UCT_NICSIM_COUNT(regs_refused, 1);
    return status;
}

static void uct_nicsim_mr_free(uct_nicsim_mr_t *mr)
{
    if (mr->attach >= 0) {
        uct_nicsim_hlsim.detach(mr->attach);
    }
    ucs_free(mr);
    UCT_NICSIM_COUNT(live_regs, -1);
}

/* Once the MR is out of the table no engine reaches it: an engine holds
 * the table's read lock for the whole of a remote access */
static ucs_status_t
uct_nicsim_mem_dereg(uct_md_h tl_md, const uct_md_mem_dereg_params_t *params)
{
    uct_nicsim_mr_t *mr;
    unsigned flags;
    khiter_t it;

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 1);
    flags = UCT_MD_MEM_DEREG_FIELD_VALUE(params, flags, FIELD_FLAGS, 0);
    mr    = params->memh;

    pthread_rwlock_wrlock(&uct_nicsim_mrs.lock);
    it = kh_get(uct_nicsim_mr, &uct_nicsim_mrs.hash, mr->id);
    if ((it == kh_end(&uct_nicsim_mrs.hash)) ||
        (kh_value(&uct_nicsim_mrs.hash, it) != mr)) {
        pthread_rwlock_unlock(&uct_nicsim_mrs.lock);
        ucs_error("nicsim: deregistration of an unknown memory handle %p",
                  mr);
        return UCS_ERR_INVALID_PARAM;
    }
    kh_del(uct_nicsim_mr, &uct_nicsim_mrs.hash, it);
    pthread_rwlock_unlock(&uct_nicsim_mrs.lock);
    uct_nicsim_mr_free(mr);

    /* invalidated: remote keys of it are refused from now on */
    if (flags & UCT_MD_MEM_DEREG_FLAG_INVALIDATE) {
        uct_invoke_completion(params->comp, UCS_OK);
    }
    return UCS_OK;
}

static ucs_status_t
uct_nicsim_mkey_pack(uct_md_h md, uct_mem_h memh,
                     const uct_md_mkey_pack_params_t *params, void *buffer)
{
    const uct_nicsim_mr_t *mr = memh;
    uct_nicsim_rkey_t *key    = buffer;

    key->magic   = UCT_NICSIM_RKEY_MAGIC;
    key->pid     = getpid();
    key->id      = mr->id;
    key->address = mr->address;
    key->length  = mr->length;
    return UCS_OK;
}

/*
 * Registrations still in the table at close are released: UCX 1.22 never
 * deregisters the own registration of a buffer that ucp_mem_map allocated
 * once an rcache entry became its parent (ucp_memh_cleanup, as for
 * gaudi_ipc, docs/ipc.md), and the attachment would keep the Gaudi memory
 * exported
 */
static void uct_nicsim_md_release_mrs(uct_md_h tl_md)
{
    uct_nicsim_mr_t *mr;
    unsigned count = 0;
    khiter_t it;

    pthread_rwlock_wrlock(&uct_nicsim_mrs.lock);
    for (it = kh_begin(&uct_nicsim_mrs.hash);
         it != kh_end(&uct_nicsim_mrs.hash); ++it) {
        if (!kh_exist(&uct_nicsim_mrs.hash, it) ||
            (kh_value(&uct_nicsim_mrs.hash, it)->md != tl_md)) {
            continue;
        }
        mr = kh_value(&uct_nicsim_mrs.hash, it);
        kh_del(uct_nicsim_mr, &uct_nicsim_mrs.hash, it);
        uct_nicsim_mr_free(mr);
        ++count;
    }
    pthread_rwlock_unlock(&uct_nicsim_mrs.lock);
    if (count > 0) {
        ucs_diag("nicsim: %u registration(s) still live when the MD was "
                 "closed: released", count);
    }
}

static void uct_nicsim_md_close(uct_md_h tl_md)
{
    uct_nicsim_md_t *md = ucs_derived_of(tl_md, uct_nicsim_md_t);

    uct_nicsim_md_release_mrs(tl_md);

    if (md->print_counters) {
        uct_nicsim_counters_print();
    }
    ucs_free(md);
}

static ucs_status_t
uct_nicsim_mem_reg_compat(uct_md_h md, void *address, size_t length,
                          const uct_md_mem_reg_params_t *params,
                          uct_mem_h *memh_p)
{
    return uct_nicsim_mem_reg(md, address, length, params, memh_p);
}

UCT_GAUDI_MD_QUERY_ADAPTER(uct_nicsim_md_query_compat, uct_nicsim_md_query,
                           uct_nicsim_md_query_ext)
UCT_GAUDI_MKEY_PACK_ADAPTER(uct_nicsim_mkey_pack_compat, uct_nicsim_mkey_pack)

static uct_md_ops_t uct_nicsim_md_ops = {
    .close              = uct_nicsim_md_close,
    .query              = uct_nicsim_md_query_compat,
    .mem_alloc          = (uct_md_mem_alloc_func_t)
                              ucs_empty_function_return_unsupported,
    .mem_free           = (uct_md_mem_free_func_t)
                              ucs_empty_function_return_unsupported,
    .mem_advise         = (uct_md_mem_advise_func_t)
                              ucs_empty_function_return_unsupported,
    .mem_reg            = uct_nicsim_mem_reg_compat,
    .mem_dereg          = uct_nicsim_mem_dereg,
    .mem_query          = (uct_md_mem_query_func_t)
                              ucs_empty_function_return_unsupported,
    .mkey_pack          = uct_nicsim_mkey_pack_compat,
    .detect_memory_type = (uct_md_detect_memory_type_func_t)
                              ucs_empty_function_return_unsupported,
    UCT_GAUDI_MD_OPTIONAL_OPS
};

static ucs_status_t
uct_nicsim_md_open(uct_component_t *component, const char *md_name,
                   const uct_md_config_t *uct_config, uct_md_h *md_p)
{
    const uct_nicsim_md_config_t *config =
            ucs_derived_of(uct_config, uct_nicsim_md_config_t);
    uct_nicsim_md_t *md;

    md = ucs_calloc(1, sizeof(*md), "nicsim_md");
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    md->super.ops       = &uct_nicsim_md_ops;
    md->super.component = &uct_nicsim_component;
    md->fault           = (uct_nicsim_fault_t)config->fault;
    md->print_counters  = config->print_counters;
    if (md->fault != UCT_NICSIM_FAULT_NONE) {
        ucs_diag("nicsim: test fault: dma-buf %s made wrong",
                 uct_nicsim_fault_names[md->fault]);
    }
    *md_p = &md->super;
    return UCS_OK;
}

static ucs_status_t
uct_nicsim_rkey_unpack(uct_component_t *component, const void *rkey_buffer,
                       uct_rkey_t *rkey_p, void **handle_p)
{
    const uct_nicsim_rkey_t *packed = rkey_buffer;
    uct_nicsim_rkey_t *key;

    *rkey_p   = UCT_INVALID_RKEY;
    *handle_p = NULL;
    if (packed->magic != UCT_NICSIM_RKEY_MAGIC) {
        ucs_error("nicsim: not a nicsim remote key (magic 0x%x)",
                  packed->magic);
        return UCS_ERR_INVALID_PARAM;
    }

    key = ucs_malloc(sizeof(*key), "nicsim_rkey");
    if (key == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    memcpy(key, packed, sizeof(*key));
    *rkey_p = (uintptr_t)key;
    return UCS_OK;
}

static ucs_status_t uct_nicsim_rkey_release(uct_component_t *component,
                                            uct_rkey_t rkey, void *handle)
{
    if (rkey != UCT_INVALID_RKEY) {
        ucs_free((void*)rkey);
    }
    return UCS_OK;
}

UCT_GAUDI_RKEY_UNPACK_ADAPTER(uct_nicsim_rkey_unpack_compat,
                              uct_nicsim_rkey_unpack)
UCT_GAUDI_RKEY_COMPARE_ADAPTER(uct_nicsim_rkey_compare_compat,
                               uct_nicsim_rkey_t)

uct_component_t uct_nicsim_component = {
    .query_md_resources = uct_md_query_single_md_resource,
    .md_open            = uct_nicsim_md_open,
    .cm_open            = (uct_component_cm_open_func_t)
                              ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_nicsim_rkey_unpack_compat,
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)
                              ucs_empty_function_return_unsupported,
    .rkey_release       = uct_nicsim_rkey_release,
    UCT_GAUDI_RKEY_COMPARE_OP(uct_nicsim_rkey_compare_compat)
    .name               = UCT_NICSIM_NAME,
    .md_config          = {
        .name           = "Emulated RDMA NIC memory domain",
        .prefix         = "NICSIM_",
        .table          = uct_nicsim_md_config_table,
        .size           = sizeof(uct_nicsim_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                              &uct_nicsim_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)
                              ucs_empty_function
};
UCT_COMPONENT_REGISTER(&uct_nicsim_component);

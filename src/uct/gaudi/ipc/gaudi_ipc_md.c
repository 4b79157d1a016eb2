/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifndef _GNU_SOURCE
#  define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#endif

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_ipc_md.h"
#include "gaudi_ipc_fd.h"

#include <uct/gaudi/base/gaudi_uct_compat.h>
#include <uct/gaudi/dev/gaudi_device.h>
#include <uct/gaudi/base/gaudi_resource.h>
#include <ucs/debug/log.h>
#include <inttypes.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <ucs/sys/uid.h>
#include <ucs/type/class.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>


static ucs_config_field_t uct_gaudi_ipc_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_gaudi_ipc_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {NULL}
};


/*
 * The process's exports: one list for every MD, because the fd server
 * answers for all of them and because registrations of one allocation
 * through several MDs must share one identity.
 */
static struct {
    pthread_mutex_t lock;
    ucs_list_link_t list;
    unsigned        count;
    unsigned long   tokens;  /* created so far */
} uct_gaudi_ipc_exports = {
    .lock   = PTHREAD_MUTEX_INITIALIZER,
    .list   = UCS_LIST_INITIALIZER(&uct_gaudi_ipc_exports.list,
                                   &uct_gaudi_ipc_exports.list),
    .count  = 0,
    .tokens = 0
};


uint64_t uct_gaudi_ipc_pidns(void)
{
    struct stat st;

    return (stat("/proc/self/ns/pid", &st) == 0) ? (uint64_t)st.st_ino : 0;
}

/* Whether a request's (identity, fd numbers) is the live generation */
static int uct_gaudi_ipc_export_names(const uct_gaudi_ipc_export_t *exp,
                                      const uct_gaudi_ipc_buf_id_t *id,
                                      int fd, int token)
{
    return (exp->fd == fd) && (exp->token.fd == token) && (token >= 0) &&
           (exp->ino == id->ino) && (exp->dev == id->dev) &&
           (exp->token.id == id->uid);
}

ucs_status_t uct_gaudi_ipc_export_dup(const uct_gaudi_ipc_buf_id_t *id,
                                      int fd, int token, int *fd_p,
                                      int *token_p)
{
    ucs_status_t status = UCS_ERR_NO_ELEM;
    uct_gaudi_ipc_export_t *exp;

    pthread_mutex_lock(&uct_gaudi_ipc_exports.lock);
    ucs_list_for_each(exp, &uct_gaudi_ipc_exports.list, list) {
        if (!uct_gaudi_ipc_export_names(exp, id, fd, token)) {
            continue;
        }
        *fd_p    = fcntl(exp->fd, F_DUPFD_CLOEXEC, 0);
        *token_p = fcntl(exp->token.fd, F_DUPFD_CLOEXEC, 0);
        if ((*fd_p >= 0) && (*token_p >= 0)) {
            status = UCS_OK;
        } else {
            ucs_error("gaudi_ipc: fd server: dup of export fd %d / token "
                      "fd %d failed: %m", fd, token);
            if (*fd_p >= 0) {
                close(*fd_p);
            }
            if (*token_p >= 0) {
                close(*token_p);
            }
            status = UCS_ERR_IO_ERROR;
        }
        break;
    }
    pthread_mutex_unlock(&uct_gaudi_ipc_exports.lock);
    return status;
}

unsigned uct_gaudi_ipc_export_count(void)
{
    return uct_gaudi_ipc_exports.count;
}

unsigned long uct_gaudi_ipc_token_count(void)
{
    return uct_gaudi_ipc_exports.tokens;
}


static ucs_status_t
uct_gaudi_ipc_md_query(uct_md_h tl_md, uct_md_attr_t *md_attr)
{
    uct_gaudi_ipc_md_t *md = ucs_derived_of(tl_md, uct_gaudi_ipc_md_t);

    /* without export a registration gives keys no peer can use: UCP
     * need not register here */
    md_attr->cap.flags            = md->export_ok ?
                                    (UCT_MD_FLAG_REG |
                                     UCT_MD_FLAG_NEED_RKEY |
                                     UCT_GAUDI_MD_FLAGS_INVALIDATE) : 0;
    md_attr->cap.reg_mem_types    = md->export_ok ?
                                    UCS_BIT(UCT_GAUDI_MEMORY_TYPE) : 0;
    md_attr->cap.alloc_mem_types  = 0;
    md_attr->cap.access_mem_types = UCS_BIT(UCT_GAUDI_MEMORY_TYPE);
    md_attr->cap.detect_mem_types = 0;
    md_attr->cap.max_alloc        = 0;
    md_attr->cap.max_reg          = ULONG_MAX;
    md_attr->rkey_packed_size     = sizeof(uct_gaudi_ipc_rkey_t);
    /* one dup + fstat; the export itself is kept by the heap; a key
     * adds a token (memfd) */
    md_attr->reg_cost             = ucs_linear_func_make(1e-6, 0);
    memset(&md_attr->local_cpus, 0xff, sizeof(md_attr->local_cpus));
    return UCS_OK;
}

/* An export of the allocation behind [address, +length): shared if one
 * of the same dma-buf file exists, else a new identity */
static ucs_status_t
uct_gaudi_ipc_export_get(uct_gaudi_ipc_md_t *md,
                         const uct_gaudi_dev_range_t *range,
                         uct_gaudi_ipc_export_t **exp_p)
{
    uct_gaudi_ipc_export_t *exp;
    ucs_status_t status;
    uint64_t offset;
    struct stat st;
    int fd;

    /* the heap exports once per allocation (facts 4.1) and gives a dup */
    status = uct_gaudi_heap_dmabuf(md->heap, range->base, range->length,
                                        &fd, &offset);
    if (status != UCS_OK) {
        return status;
    }

    if (fstat(fd, &st) < 0) {
        ucs_error("gaudi_ipc: fstat of dma-buf fd %d failed: %m", fd);
        close(fd);
        return UCS_ERR_IO_ERROR;
    }

    pthread_mutex_lock(&uct_gaudi_ipc_exports.lock);
    ucs_list_for_each(exp, &uct_gaudi_ipc_exports.list, list) {
        if ((exp->base == range->base) &&
            (exp->ino == (uint64_t)st.st_ino) &&
            (exp->dev == (uint64_t)st.st_dev)) {
            ++exp->refcount;
            pthread_mutex_unlock(&uct_gaudi_ipc_exports.lock);
            close(fd);
            *exp_p = exp;
            return UCS_OK;
        }
    }

    exp = ucs_calloc(1, sizeof(*exp), "gaudi_ipc_export");
    if (exp == NULL) {
        pthread_mutex_unlock(&uct_gaudi_ipc_exports.lock);
        close(fd);
        return UCS_ERR_NO_MEMORY;
    }

    exp->ino        = st.st_ino;
    exp->dev        = st.st_dev;
    exp->fd         = fd;
    exp->token.fd   = -1;   /* drawn by the first mkey_pack */
    exp->base       = range->base;
    exp->length     = range->length;
    exp->offset     = offset;
    exp->import_len = ucs_align_up(offset + range->length,
                                   md->heap->host_page);
    exp->refcount   = 1;
    ucs_list_add_tail(&uct_gaudi_ipc_exports.list, &exp->list);
    ++uct_gaudi_ipc_exports.count;
    pthread_mutex_unlock(&uct_gaudi_ipc_exports.lock);

    ucs_debug("gaudi_ipc: exported 0x%" PRIx64 "+%" PRIu64 " as fd %d "
              "(ino %" PRIu64 ", offset %" PRIu64 ")", exp->base,
              exp->length, fd, exp->ino, offset);
    *exp_p = exp;
    return UCS_OK;
}

/* Close the current key generation: its keys are dead (lock held) */
static void uct_gaudi_ipc_token_close(uct_gaudi_ipc_export_t *exp)
{
    if (exp->token.fd >= 0) {
        close(exp->token.fd);
        exp->token.fd = -1;
    }
}

/*
 * A new key generation: a sealed memfd holding its random id. Sealed, so
 * that no process holding a dup (every importer does) can rewrite the id
 * that other importers check. Lock held.
 */
static ucs_status_t uct_gaudi_ipc_token_open(uct_gaudi_ipc_export_t *exp)
{
    const unsigned seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
                           F_SEAL_SEAL;
    uint64_t id;
    int fd;

    fd = memfd_create("ucx-gaudi-ipc-key", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        ucs_error("gaudi_ipc: memfd_create for a key of 0x%" PRIx64
                  " failed: %m", exp->base);
        return UCS_ERR_IO_ERROR;
    }

    id = ucs_generate_uuid((uintptr_t)exp ^ exp->ino ^
                           uct_gaudi_ipc_exports.tokens);
    if ((pwrite(fd, &id, sizeof(id), 0) != sizeof(id)) ||
        (fcntl(fd, F_ADD_SEALS, seals) < 0)) {
        ucs_error("gaudi_ipc: cannot write and seal the key token of 0x%"
                  PRIx64 " (memfd %d): %m", exp->base, fd);
        close(fd);
        return UCS_ERR_IO_ERROR;
    }

    exp->token.fd = fd;
    exp->token.id = id;
    ++uct_gaudi_ipc_exports.tokens;
    return UCS_OK;
}

static void uct_gaudi_ipc_export_put(uct_gaudi_ipc_export_t *exp)
{
    pthread_mutex_lock(&uct_gaudi_ipc_exports.lock);
    if (--exp->refcount > 0) {
        pthread_mutex_unlock(&uct_gaudi_ipc_exports.lock);
        return;
    }
    ucs_list_del(&exp->list);
    --uct_gaudi_ipc_exports.count;
    uct_gaudi_ipc_token_close(exp);
    pthread_mutex_unlock(&uct_gaudi_ipc_exports.lock);

    ucs_debug("gaudi_ipc: closed export 0x%" PRIx64 " fd %d", exp->base,
              exp->fd);
    close(exp->fd);
    ucs_free(exp);
}

/*
 * Invalidation: what an exporter can take back of a dma-buf it handed out
 * (docs/ipc.md, "Invalidation"). The key generation's token is closed:
 * pidfd_getfd finds nothing or a newer token whose id differs (a new
 * import fails), the fd server refuses it, and an importer's per-transfer
 * kcmp of the token fails every later transfer of those keys. The dma-buf
 * stays exported: the next key of any registration sharing it draws a new
 * token, so a failed send costs no driver call.
 */
static void uct_gaudi_ipc_export_revoke(uct_gaudi_ipc_export_t *exp)
{
    int token;

    pthread_mutex_lock(&uct_gaudi_ipc_exports.lock);
    token = exp->token.fd;
    uct_gaudi_ipc_token_close(exp);
    pthread_mutex_unlock(&uct_gaudi_ipc_exports.lock);

    ucs_debug("gaudi_ipc: invalidated the keys of 0x%" PRIx64 "+%" PRIu64
              " (token fd %d)", exp->base, exp->length, token);
}

static void uct_gaudi_ipc_memh_release(uct_gaudi_ipc_memh_t *memh)
{
    if (memh->exp != NULL) {
        uct_gaudi_ipc_export_put(memh->exp);
    }
    ucs_free(memh);
}

/*
 * Whether a failed export leaves a registration that peers cannot use
 * (driver without export, memory of unknown origin, a range the driver
 * refuses) rather than a failed one: a stale address, a fork child or no
 * memory fail.
 */
static int uct_gaudi_ipc_export_optional(ucs_status_t status)
{
    return (status != UCS_ERR_INVALID_ADDR) &&
           (status != UCS_ERR_NO_DEVICE) && (status != UCS_ERR_NO_MEMORY);
}

static ucs_status_t uct_gaudi_ipc_mem_reg(uct_md_h tl_md, void *address,
                                          size_t length, unsigned flags,
                                          uct_mem_h *memh_p)
{
    uct_gaudi_ipc_md_t *md = ucs_derived_of(tl_md, uct_gaudi_ipc_md_t);
    uct_gaudi_dev_range_t range;
    uct_gaudi_ipc_memh_t *memh;
    ucs_status_t status;

    if ((length == 0) ||
        !uct_gaudi_heap_in_window(md->heap, (uintptr_t)address, length)) {
        ucs_debug("gaudi_ipc: %p+%zu is not Gaudi memory", address, length);
        return UCS_ERR_INVALID_ADDR;
    }

    /* takes the device the memory belongs to, if not yet */
    status = uct_gaudi_heap_resolve(md->heap, (uintptr_t)address, length,
                                    &range);
    if (status != UCS_OK) {
        ucs_error("gaudi_ipc: %s: cannot register %p+%zu: not inside one "
                  "live device allocation (freed, or runs past it): %s",
                  uct_gaudi_heap_name(md->heap), address, length,
                  ucs_status_string(status));
        return status;
    }

    memh = ucs_calloc(1, sizeof(*memh), "gaudi_ipc_memh");
    if (memh == NULL) {
        ucs_error("gaudi_ipc: no memory for a registration of %p+%zu",
                  address, length);
        return UCS_ERR_NO_MEMORY;
    }

    memh->address = (uintptr_t)address;
    memh->length  = length;
    if (!uct_gaudi_ipc_md_export_ok(md)) {
        status = UCS_ERR_UNSUPPORTED;   /* said once at the probe */
    } else {
        status = uct_gaudi_ipc_export_get(md, &range, &memh->exp);
    }
    if ((status != UCS_OK) && !uct_gaudi_ipc_export_optional(status)) {
        ucs_free(memh);
        return status;
    } else if (status != UCS_OK) {
        /* peers get an unreachable key and use other transports */
        ucs_debug("gaudi_ipc: %p+%zu registered without export (%s)",
                  address, length, ucs_status_string(status));
        memh->exp = NULL;
    }

    pthread_mutex_lock(&md->lock);
    ucs_list_add_tail(&md->regs, &memh->list);
    pthread_mutex_unlock(&md->lock);
    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t
uct_gaudi_ipc_mem_dereg(uct_md_h tl_md,
                        const uct_md_mem_dereg_params_t *params)
{
    uct_gaudi_ipc_md_t *md     = ucs_derived_of(tl_md, uct_gaudi_ipc_md_t);
    uct_gaudi_ipc_memh_t *memh = params->memh;
    unsigned flags;

    UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 1);
    flags = UCT_MD_MEM_DEREG_FIELD_VALUE(params, flags, FIELD_FLAGS, 0);

    pthread_mutex_lock(&md->lock);
    ucs_list_del(&memh->list);
    pthread_mutex_unlock(&md->lock);
    if ((flags & UCT_MD_MEM_DEREG_FLAG_INVALIDATE) && (memh->exp != NULL)) {
        uct_gaudi_ipc_export_revoke(memh->exp);
    }
    uct_gaudi_ipc_memh_release(memh);

    /* done before returning: UCX >= 1.16 passes a completion on its stack
     * and checks it was called (ucp_memh_dereg, ucp_mm.c) */
    if (flags & UCT_MD_MEM_DEREG_FLAG_INVALIDATE) {
        uct_invoke_completion(params->comp, UCS_OK);
    }
    return UCS_OK;
}

/* The key fields of @a exp's live generation (a new one if revoked) */
static ucs_status_t
uct_gaudi_ipc_export_pack(uct_gaudi_ipc_export_t *exp,
                          uct_gaudi_ipc_rkey_t *key)
{
    ucs_status_t status = UCS_OK;

    pthread_mutex_lock(&uct_gaudi_ipc_exports.lock);
    if (exp->token.fd < 0) {
        status = uct_gaudi_ipc_token_open(exp);
    }
    if (status == UCS_OK) {
        key->fd         = exp->fd;
        key->token      = exp->token.fd;
        key->id.ino     = exp->ino;
        key->id.dev     = exp->dev;
        key->id.uid     = exp->token.id;
        key->base       = exp->base;
        key->length     = exp->length;
        key->offset     = exp->offset;
        key->import_len = exp->import_len;
    }
    pthread_mutex_unlock(&uct_gaudi_ipc_exports.lock);
    return status;
}

static ucs_status_t
uct_gaudi_ipc_mkey_pack(uct_md_h tl_md, uct_mem_h memh,
                        const uct_md_mkey_pack_params_t *params,
                        void *rkey_buffer)
{
    uct_gaudi_ipc_md_t *md = ucs_derived_of(tl_md, uct_gaudi_ipc_md_t);
    uct_gaudi_ipc_memh_t *ipc_memh = memh;
    uct_gaudi_ipc_rkey_t key;
    ucs_status_t status;

    memset(&key, 0, sizeof(key));
    key.version    = UCT_GAUDI_IPC_RKEY_VERSION;
    key.module_id  = md->heap->info->module_id;
    key.system_id  = ucs_get_system_id();
    key.pidns      = uct_gaudi_ipc_pidns();
    key.pid        = getpid();
    key.server     = uct_gaudi_ipc_fd_server_name();
    if (ipc_memh->exp == NULL) {
        key.flags  = UCT_GAUDI_IPC_RKEY_FLAG_NO_EXPORT;
        key.fd     = -1;
        key.token  = -1;
        key.base   = ipc_memh->address;
        key.length = ipc_memh->length;
    } else {
        status = uct_gaudi_ipc_export_pack(ipc_memh->exp, &key);
        if (status != UCS_OK) {
            return status;
        }
    }
    memcpy(rkey_buffer, &key, sizeof(key));
    return UCS_OK;
}

/* Registrations UCX did not release before closing the MD: their exports
 * would keep the dma-bufs, and with them the device memory, alive */
static void uct_gaudi_ipc_md_release_leftovers(uct_gaudi_ipc_md_t *md)
{
    uct_gaudi_ipc_memh_t *memh, *tmp;
    unsigned count = 0;

    ucs_list_for_each_safe(memh, tmp, &md->regs, list) {
        ucs_list_del(&memh->list);
        uct_gaudi_ipc_memh_release(memh);
        ++count;
    }

    if (count > 0) {
        ucs_diag("gaudi_ipc: %u registration(s) still live when the MD was "
                 "closed: released", count);
    }
    pthread_mutex_destroy(&md->lock);
}

static void uct_gaudi_ipc_md_close(uct_md_h tl_md)
{
    uct_gaudi_ipc_md_t *md = ucs_derived_of(tl_md, uct_gaudi_ipc_md_t);

    uct_gaudi_ipc_md_release_leftovers(md);
    uct_gaudi_ipc_fd_server_put();
    uct_gaudi_heap_put(md->heap);
    ucs_free(md);
}

/* Attributes only the v2 query reports */
static void uct_gaudi_ipc_md_query_ext(uct_md_h tl_md,
                                       uct_gaudi_md_ext_attr_t *ext)
{
    ext->access_mem_types = 0;
    ext->cache_mem_types  = 0; /* exports are kept by the heap, not cached */
    ext->dmabuf_mem_types = 0; /* gaudi_copy gives the dma-bufs */
    ext->reg_alignment    = 1;
}

UCT_GAUDI_MD_QUERY_ADAPTER(uct_gaudi_compat_ipc_md_query,
                           uct_gaudi_ipc_md_query,
                           uct_gaudi_ipc_md_query_ext)
UCT_GAUDI_MEM_REG_ADAPTER(uct_gaudi_compat_ipc_mem_reg,
                          uct_gaudi_ipc_mem_reg)
UCT_GAUDI_MKEY_PACK_ADAPTER(uct_gaudi_compat_ipc_mkey_pack,
                            uct_gaudi_ipc_mkey_pack)

static uct_md_ops_t uct_gaudi_ipc_md_ops = {
    .close                  = uct_gaudi_ipc_md_close,
    .query                  = uct_gaudi_compat_ipc_md_query,
    .mem_alloc              = (uct_md_mem_alloc_func_t)
                                  ucs_empty_function_return_unsupported,
    .mem_free               = (uct_md_mem_free_func_t)
                                  ucs_empty_function_return_unsupported,
    .mem_advise             = (uct_md_mem_advise_func_t)
                                  ucs_empty_function_return_unsupported,
    .mem_reg                = uct_gaudi_compat_ipc_mem_reg,
    .mem_dereg              = uct_gaudi_ipc_mem_dereg,
    .mem_query              = (uct_md_mem_query_func_t)
                                  ucs_empty_function_return_unsupported,
    .mkey_pack              = uct_gaudi_compat_ipc_mkey_pack,
    .detect_memory_type     = (uct_md_detect_memory_type_func_t)
                                  ucs_empty_function_return_unsupported,
    UCT_GAUDI_MD_OPTIONAL_OPS
};

/*
 * Whether the driver exports DMA-BUF: Linux 6.1 does not on Gaudi2 (facts
 * 4.1). Probed once per process (one device context per process); the
 * reason is logged once at DIAG level (UCX_LOG_LEVEL=diag ucx_info -d).
 */
static int uct_gaudi_ipc_md_probe_export(uct_gaudi_ctx_t *ctx)
{
    static int result = -1;
    ucs_status_t status;
    int supported;

    if (result >= 0) {
        return result;
    }

    /* the driver serializes its ioctls itself */
    status = uct_gaudi_hl_probe_export(&ctx->hl, &supported);
    if (status != UCS_OK) {
        return 0;   /* e.g. device in reset: not cached, asked again */
    }

    if (!supported) {
        ucs_diag("gaudi_ipc: %s (%s): registration disabled: the driver "
                 "cannot export DMA-BUF of %s memory (EXPORT_DMABUF_FD not "
                 "supported; Linux 6.1/6.2 export only without DRAM "
                 "virtual memory, i.e. Gaudi1); UCP uses host-staged "
                 "rendezvous instead", ctx->info->name,
                 ctx->info->node_name, uct_gaudi_asic_name(ctx->info->asic));
    }

    if (supported && (ctx->info->dram_bar_size != 0) &&
        (ctx->info->dram_bar_size < ctx->info->hw_ip.u61.dram_size)) {
        ucs_diag("gaudi_ipc: %s (%s): the DRAM PCI BAR is %" PRIu64 " MiB "
                 "of %" PRIu64 " MiB of DRAM: device buffers with a page "
                 "beyond it cannot be exported (registration fails)",
                 ctx->info->name, ctx->info->node_name,
                 ctx->info->dram_bar_size >> 20,
                 (uint64_t)ctx->info->hw_ip.u61.dram_size >> 20);
    }

    result = supported;
    return result;
}

/*
 * Export before the device is taken, when probing would take it: only the
 * upstream Linux 6.1/6.2 driver (misc-era codes, found by discovery) does
 * not export memory of an ASIC with DRAM virtual memory (facts 4.1)
 */
static int uct_gaudi_ipc_md_expect_export(const uct_gaudi_dev_info_t *info)
{
    static int logged = 0;

    if ((info->abi != GAUDI_HL_ABI_LEGACY) ||
        (info->asic == UCT_GAUDI_ASIC_GAUDI1)) {
        return 1;
    }

    if (!logged) {
        logged = 1;
        ucs_diag("gaudi_ipc: %s (%s): registration disabled: the driver "
                 "cannot export DMA-BUF of %s memory (the Linux 6.1/6.2 "
                 "driver exports only without DRAM virtual memory, i.e. "
                 "Gaudi1); UCP uses host-staged rendezvous instead",
                 info->name, info->node_name, uct_gaudi_asic_name(info->asic));
    }
    return 0;
}

int uct_gaudi_ipc_md_export_ok(uct_gaudi_ipc_md_t *md)
{
    uct_gaudi_ctx_t *ctx = uct_gaudi_heap_ctx(md->heap);

    if ((ctx != NULL) && (md->export_ok != 0)) {
        /* the probe, now that it is possible, has the last word */
        md->export_ok = uct_gaudi_ipc_md_probe_export(ctx);
    }
    return md->export_ok;
}

static ucs_status_t
uct_gaudi_ipc_md_open(uct_component_t *component, const char *md_name,
                      const uct_md_config_t *config, uct_md_h *md_p)
{
    uct_gaudi_ipc_md_t *md;
    uct_gaudi_ctx_t *ctx;
    ucs_status_t status;

    md = ucs_calloc(1, sizeof(*md), "gaudi_ipc_md");
    if (md == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    md->super.ops       = &uct_gaudi_ipc_md_ops;
    md->super.component = &uct_gaudi_ipc_component;
    pthread_mutex_init(&md->lock, NULL);
    ucs_list_head_init(&md->regs);

    /* The MD's one reference: on the memory layer, which takes the device
     * when Gaudi memory first needs it */
    status = uct_gaudi_heap_md_get(&md->heap);
    if (status != UCS_OK) {
        goto err_free;
    }

    ctx           = uct_gaudi_heap_ctx(md->heap);
    md->export_ok = (ctx != NULL) ? uct_gaudi_ipc_md_probe_export(ctx) :
                    uct_gaudi_ipc_md_expect_export(md->heap->info);

    /* importers that may not pidfd_getfd our fds ask this socket */
    status = uct_gaudi_ipc_fd_server_get();
    if (status != UCS_OK) {
        goto err_heap;
    }

    *md_p = &md->super;
    return UCS_OK;

err_heap:
    uct_gaudi_heap_put(md->heap);
err_free:
    pthread_mutex_destroy(&md->lock);
    ucs_free(md);
    return status;
}

/*
 * A key is the peer's word only: refuse one whose geometry is not that of
 * a buffer inside its own import (base inside the dma-buf at offset, the
 * whole allocation inside the bytes mapped), so that no address computed
 * from it can leave the mapping (docs/ipc.md, "Trust model").
 */
ucs_status_t uct_gaudi_ipc_rkey_check(const uct_gaudi_ipc_rkey_t *key)
{
    const char *why;

    if (key->flags & ~UCT_GAUDI_IPC_RKEY_FLAG_NO_EXPORT) {
        why = "unknown flags";
    } else if ((key->pid <= 0) || (key->fd < 0) || (key->token < 0)) {
        why = "no exporter pid, fd or token";
    } else if (key->length == 0) {
        why = "empty buffer";
    } else if (key->base + key->length < key->base) {
        why = "buffer wraps around the address space";
    } else if ((key->offset > key->import_len) ||
               (key->length > key->import_len - key->offset)) {
        why = "buffer exceeds the bytes to import";
    } else {
        return UCS_OK;
    }

    ucs_error("gaudi_ipc: invalid rkey from pid %d (buffer 0x%" PRIx64
              "+%" PRIu64 ", offset %" PRIu64 ", import %" PRIu64 "): %s",
              key->pid, key->base, key->length, key->offset,
              key->import_len, why);
    return UCS_ERR_INVALID_PARAM;
}

static ucs_status_t
uct_gaudi_ipc_rkey_unpack(uct_component_t *component,
                          const void *rkey_buffer, uct_rkey_t *rkey_p,
                          void **handle_p)
{
    const uct_gaudi_ipc_rkey_t *packed = rkey_buffer;
    uct_gaudi_ipc_rkey_t *key;
    ucs_status_t status;

    /* UCX 1.13 releases the key of every MD in the packed key when one
     * fails to unpack, this one included: leave nothing to release (else
     * the slot's stale key, already freed, is freed again) */
    *rkey_p   = UCT_INVALID_RKEY;
    *handle_p = NULL;

    if (packed->version != UCT_GAUDI_IPC_RKEY_VERSION) {
        /* version 3 keys name the dma-buf itself, whose revocation this
         * module no longer makes (docs/ipc.md, "rkey") */
        ucs_error("gaudi_ipc: rkey version %u, this module takes only "
                  "version %u: the peer runs %s ucx-gaudi module; run one "
                  "module version on a node", packed->version,
                  UCT_GAUDI_IPC_RKEY_VERSION,
                  (packed->version < UCT_GAUDI_IPC_RKEY_VERSION) ?
                  "an older" : "a newer");
        return UCS_ERR_UNSUPPORTED;
    }

    if (packed->flags == UCT_GAUDI_IPC_RKEY_FLAG_NO_EXPORT) {
        /* a registration without export: not an error (as cuda_ipc) */
        ucs_trace("gaudi_ipc: rkey of 0x%" PRIx64 "+%" PRIu64 " from pid %d "
                  "has no export: unreachable", packed->base, packed->length,
                  packed->pid);
        return UCS_ERR_UNREACHABLE;
    }

    status = uct_gaudi_ipc_rkey_check(packed);
    if (status != UCS_OK) {
        return status;
    }

    key = ucs_malloc(sizeof(*key), "gaudi_ipc_rkey");
    if (key == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    memcpy(key, packed, sizeof(*key));
    *rkey_p   = (uintptr_t)key;
    *handle_p = NULL;
    return UCS_OK;
}

static ucs_status_t uct_gaudi_ipc_rkey_release(uct_component_t *component,
                                               uct_rkey_t rkey, void *handle)
{
    if (rkey != UCT_INVALID_RKEY) {    /* a key that did not unpack */
        ucs_free((void*)rkey);
    }
    return UCS_OK;
}

UCT_GAUDI_RKEY_UNPACK_ADAPTER(uct_gaudi_compat_ipc_rkey_unpack,
                              uct_gaudi_ipc_rkey_unpack)
UCT_GAUDI_RKEY_COMPARE_ADAPTER(uct_gaudi_compat_ipc_rkey_compare,
                               uct_gaudi_ipc_rkey_t)

uct_component_t uct_gaudi_ipc_component = {
    .query_md_resources = uct_gaudi_query_md_resources,
    .md_open            = uct_gaudi_ipc_md_open,
    .cm_open            = (uct_component_cm_open_func_t)
                              ucs_empty_function_return_unsupported,
    .rkey_unpack        = uct_gaudi_compat_ipc_rkey_unpack,
    .rkey_ptr           = (uct_component_rkey_ptr_func_t)
                              ucs_empty_function_return_unsupported,
    .rkey_release       = uct_gaudi_ipc_rkey_release,
    UCT_GAUDI_RKEY_COMPARE_OP(uct_gaudi_compat_ipc_rkey_compare)
    .name               = UCT_GAUDI_IPC_COMPONENT_NAME,
    .md_config          = {
        .name           = "Gaudi-IPC memory domain",
        .prefix         = "GAUDI_IPC_",
        .table          = uct_gaudi_ipc_md_config_table,
        .size           = sizeof(uct_gaudi_ipc_md_config_t),
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(
                              &uct_gaudi_ipc_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)
                              ucs_empty_function
};
UCT_COMPONENT_REGISTER(&uct_gaudi_ipc_component);

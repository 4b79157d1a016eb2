/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_copy's mem_query as a network MD's registration uses it (UCX >=
 * 1.14: UCT_MD_MEM_ATTR_FIELD_DMABUF_FD/OFFSET): for a slice of a Gaudi
 * buffer, the dma-buf fd and offset describe exactly that slice. Checked
 * against the export the public API gives for the same slice (the same
 * dma-buf object, the same offset), and the fd is the caller's own (a dup:
 * closing it leaves the next query working). On a UCX without the fields,
 * the memory type, base and length are checked. With the SynapseAI copy
 * backend (UCX_GAUDI_SYNAPSE_LIB), the application's synDeviceMalloc
 * tensors too: their dma-buf is the pages around them in SynapseAI's pool
 * mapping (synDeviceGetInfoV2.globalHbmBaseAddress), at their offset.
 * Prints PASS/FAIL lines and "N passed, N failed".
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct_gaudi_ucx_features.h>
#include <uct/api/uct.h>
#include <uct/base/uct_component.h>
#include <uct/gaudi/api/uct_gaudi.h>
#include <ucs/sys/compiler_def.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


static unsigned npass, nfail;

static void check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    if (ok) {
        ++npass;
    } else {
        ++nfail;
    }
}

static uct_md_h open_gaudi_copy(uct_component_h **components_p)
{
    uct_component_h *components;
    uct_md_config_t *config;
    unsigned i, num;
    uct_md_h md;

    if (uct_query_components(&components, &num) != UCS_OK) {
        return NULL;
    }
    *components_p = components;
    for (i = 0; i < num; ++i) {
        if (strcmp(components[i]->name, "gaudi_copy") != 0) {
            continue;
        }
        if (uct_md_config_read(components[i], NULL, NULL, &config) !=
            UCS_OK) {
            return NULL;
        }
        if (uct_md_open(components[i], "gaudi_copy", config, &md) !=
            UCS_OK) {
            md = NULL;
        }
        uct_config_release(config);
        return md;
    }
    return NULL;
}

static void check_slice(uct_md_h md, char *buf, size_t offset, size_t len)
{
    uct_md_mem_attr_t attr;
    char what[128];
    ucs_status_t status;

    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE |
                      UCT_MD_MEM_ATTR_FIELD_BASE_ADDRESS |
                      UCT_MD_MEM_ATTR_FIELD_ALLOC_LENGTH;
#if UCT_GAUDI_HAVE_MEM_ATTR_DMABUF
    attr.field_mask |= UCT_MD_MEM_ATTR_FIELD_DMABUF_FD |
                       UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET;
#endif
    status = uct_md_mem_query(md, buf + offset, len, &attr);
    snprintf(what, sizeof(what), "[+%zu, %zu bytes]", offset, len);
    printf("slice %s\n", what);
    check(status == UCS_OK, "mem_query succeeds");
    if (status != UCS_OK) {
        return;
    }
    check(attr.mem_type == uct_gaudi_memory_type(), "Gaudi memory type");
    check(attr.base_address == buf, "base is the allocation's");

#if UCT_GAUDI_HAVE_MEM_ATTR_DMABUF
    {
        struct stat st_query, st_api;
        uint64_t api_offset;
        int api_fd;

        check(attr.dmabuf_fd >= 0, "dma-buf fd given");
        if (attr.dmabuf_fd < 0) {
            return;
        }
        status = uct_gaudi_dmabuf_get(buf + offset, len, &api_fd,
                                      &api_offset);
        check(status == UCS_OK, "public API export of the same slice");
        if (status == UCS_OK) {
            check(api_fd != attr.dmabuf_fd, "fds are separate dups");
            check((fstat(attr.dmabuf_fd, &st_query) == 0) &&
                  (fstat(api_fd, &st_api) == 0) &&
                  (st_query.st_ino == st_api.st_ino) &&
                  (st_query.st_dev == st_api.st_dev),
                  "same dma-buf object as the public API's");
            check(attr.dmabuf_offset == api_offset,
                  "offset of the slice in the dma-buf");
            close(api_fd);
        }
        check(close(attr.dmabuf_fd) == 0, "fd is the caller's to close");
    }
#else
    printf("SKIP dma-buf fields: not in this UCX (< 1.14)\n");
#endif
}

/* synDeviceMalloc, synDeviceFree, synDeviceGetInfoV2 (synapse_api.h) */
typedef int (*syn_malloc_fn_t)(uint32_t, uint64_t, uint64_t, uint32_t,
                               uint64_t*);
typedef int (*syn_free_fn_t)(uint32_t, uint64_t, uint32_t);
typedef int (*syn_info_v2_fn_t)(uint32_t, void*);

/* A tensor of @a len bytes after @a pad bytes of another one, queried
 * at +@a offset for @a qlen bytes */
static void check_tensor(uct_md_h md, void *lib, size_t pad, size_t len,
                         size_t offset, size_t qlen)
{
    syn_malloc_fn_t syn_malloc = (syn_malloc_fn_t)dlsym(lib,
                                                        "synDeviceMalloc");
    syn_free_fn_t syn_free     = (syn_free_fn_t)dlsym(lib, "synDeviceFree");
    syn_info_v2_fn_t info_v2   = (syn_info_v2_fn_t)dlsym(lib,
                                                         "synDeviceGetInfoV2");
    uint64_t t = 0, p = 0, base, addr;
    uint8_t info[256];
    uct_md_mem_attr_t attr;

    printf("tensor of %zu bytes after %zu, [+%zu, %zu bytes]\n", len, pad,
           offset, qlen);
    if ((syn_malloc == NULL) || (syn_free == NULL) || (info_v2 == NULL) ||
        ((pad > 0) && (syn_malloc(0, pad, 0, 0, &p) != 0)) ||
        (syn_malloc(0, len, 0, 0, &t) != 0) || (info_v2(0, info) != 0)) {
        check(0, "synDeviceMalloc and synDeviceGetInfoV2");
        return;
    }
    memcpy(&base, info + 64, sizeof(base));   /* globalHbmBaseAddress */
    addr = t + offset;

    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE;
#if UCT_GAUDI_HAVE_MEM_ATTR_DMABUF
    attr.field_mask |= UCT_MD_MEM_ATTR_FIELD_DMABUF_FD |
                       UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET;
#endif
    check(uct_md_mem_query(md, (void*)addr, qlen, &attr) == UCS_OK,
          "mem_query of the tensor succeeds");
    check(attr.mem_type == uct_gaudi_memory_type(), "Gaudi memory type");
    if (pad > 0) {
        check(t != base, "the tensor is not the pool mapping's start");
    }
#if UCT_GAUDI_HAVE_MEM_ATTR_DMABUF
    check(attr.dmabuf_fd >= 0, "dma-buf fd given");
    if (attr.dmabuf_fd >= 0) {
        uint64_t page = sysconf(_SC_PAGESIZE);

        check(attr.dmabuf_offset == (addr - base) % page,
              "offset of the tensor in its pages of the pool mapping");
        check(close(attr.dmabuf_fd) == 0, "fd is the caller's to close");
    }
#else
    printf("SKIP dma-buf fields: not in this UCX (< 1.14)\n");
#endif
    check((syn_free(0, t, 0) == 0) && ((p == 0) || (syn_free(0, p, 0) == 0)),
          "synDeviceFree");
}

/* The application's SynapseAI, when the module drives the device with it */
static void check_tensors(uct_md_h md)
{
    const char *path = getenv("UCX_GAUDI_SYNAPSE_LIB");
    const char *backend = getenv("UCX_GAUDI_COPY_BACKEND");
    void *lib;

    if ((path == NULL) || (backend == NULL) || strcmp(backend, "synapse")) {
        return;
    }
    lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    check(lib != NULL, "the module's libSynapse is loaded");
    if (lib == NULL) {
        return;
    }
    check_tensor(md, lib, 0, 1000, 0, 1000);
    check_tensor(md, lib, 384, 100000, 5000, 4096);
    check_tensor(md, lib, 4096 + 128, 3 << 20, 4097, (2 << 20) + 3);
    dlclose(lib);
}

int main(int argc, char **argv)
{
    const size_t size = 4 * 1024 * 1024;
    uct_component_h *components = NULL;
    uct_md_h md;
    void *buf;

    md = open_gaudi_copy(&components);
    check(md != NULL, "gaudi_copy MD opened");
    if (md == NULL) {
        goto out;
    }

    if (uct_gaudi_mem_alloc(size, &buf) != UCS_OK) {
        check(0, "Gaudi allocation");
        goto out_close;
    }

    check_slice(md, buf, 0, size);
    check_slice(md, buf, 65536, 4096);
    check_slice(md, buf, size - 100, 100);
    /* again after the first fds were closed: the export is still there */
    check_slice(md, buf, 12345, 1000);

    uct_gaudi_mem_free(buf);
    check_tensors(md);
out_close:
    uct_md_close(md);
out:
    if (components != NULL) {
        uct_release_component_list(components);
    }
    printf("%u passed, %u failed\n", npass, nfail);
    return nfail ? 1 : 0;
}

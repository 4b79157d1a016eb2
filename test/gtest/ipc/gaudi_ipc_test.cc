/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_ipc tests on the habanalabs emulator (test/emu/hlsim): two processes,
 * each on its own emulated device. This program is the importer (gtest);
 * it starts itself again with --exporter as the peer that allocates,
 * registers, fills and checks buffers on command (stdin/stdout lines).
 * Data is always written and read back by DMA (gaudi_cpy), never by the
 * CPU. Run by test/suites/70-ipc.sh (habana and upstream flavours).
 */

#include "common/gaudi_gtest.h"

#include <gtest/gtest.h>

extern "C" {
#include <uct/gaudi/ipc/gaudi_ipc_iface.h>
#include <uct/gaudi/ipc/gaudi_ipc_md.h>
#include <uct/gaudi/syn/gaudi_syn_api.h>
#include <uct/gaudi/dma/gaudi_dma_ops.h>
#include <uct/gaudi/api/uct_gaudi.h>
#include <uct/api/uct.h>
#include <uct/api/v2/uct_v2.h>
#include <ucs/async/async.h>
#include <ucs/time/time.h>
#include "../../emu/hlsim/hlsim.h"
}

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <functional>
#include <set>
#include <map>
#include <string>
#include <vector>


/* fd counting and emulator control: test/gtest/common */
using gaudi_gtest::hlsim_counter;

static int open_fds()
{
    return gaudi_gtest::count_fds();
}

/* An upstream driver: no op 99 (facts 4.3); HLSIM_NODES=legacy is the
 * upstream Linux 6.1 driver */
static bool upstream_flavour()
{
    const char *f = getenv("HLSIM_FLAVOUR");
    return ((f != NULL) && !strcmp(f, "upstream")) ||
           (getenv("HLSIM_NODES") != NULL);
}

/* Linux 6.1 with Gaudi2: no DMA-BUF export at all (facts 4.1) */
static bool no_export()
{
    const char *a = getenv("HLSIM_ASIC");
    return (getenv("HLSIM_NODES") != NULL) &&
           ((a == NULL) || strcmp(a, "gaudi1"));
}

static std::string hex(const void *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    const uint8_t *b = (const uint8_t*)p;
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        s += digits[b[i] >> 4];
        s += digits[b[i] & 15];
    }
    return s;
}

static std::vector<uint8_t> unhex(const std::string &s)
{
    std::vector<uint8_t> v;
    for (size_t i = 0; i + 1 < s.size(); i += 2) {
        v.push_back((uint8_t)strtoul(s.substr(i, 2).c_str(), NULL, 16));
    }
    return v;
}

static void pattern(std::vector<uint8_t> &buf, unsigned seed)
{
    for (size_t i = 0; i < buf.size(); ++i) {
        buf[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 12)) ^ seed);
    }
}


/* One process's UCT objects: gaudi_cpy (self) for DMA to/from device
 * memory, gaudi_ipc MD and iface */
struct uct_side {
    ucs_async_context_t *async;
    uct_worker_h        worker;
    uct_component_h     copy_comp, ipc_comp;
    uct_md_h            copy_md, ipc_md;
    uct_iface_h         copy_if, ipc_if;
    uct_ep_h            copy_ep;

    static void comp_cb(uct_completion_t *comp) {}

    uct_component_h component(const char *name)
    {
        uct_component_h *comps, found = NULL;
        unsigned n;
        EXPECT_EQ(UCS_OK, uct_query_components(&comps, &n));
        for (unsigned i = 0; i < n; ++i) {
            uct_component_attr_t attr;
            attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
            uct_component_query(comps[i], &attr);
            if (!strcmp(attr.name, name)) {
                found = comps[i];
            }
        }
        uct_release_component_list(comps);
        return found;
    }

    uct_md_h open_md(uct_component_h comp, const char *name)
    {
        uct_md_config_t *config;
        uct_md_h md = NULL;
        if (comp == NULL) {
            return NULL;
        }
        uct_md_config_read(comp, NULL, NULL, &config);
        uct_md_open(comp, name, config, &md);
        uct_config_release(config);
        return md;
    }

    uct_iface_h open_iface(uct_md_h md, const char *tl,
                           const std::map<std::string, std::string> &cfg,
                           uct_error_handler_t err_cb = NULL,
                           void *err_arg = NULL)
    {
        uct_iface_config_t *config;
        uct_iface_params_t params;
        uct_iface_h iface = NULL;

        if (md == NULL) {
            return NULL;
        }
        uct_md_iface_config_read(md, tl, NULL, NULL, &config);
        for (auto &kv : cfg) {
            uct_config_modify(config, kv.first.c_str(), kv.second.c_str());
        }
        memset(&params, 0, sizeof(params));
        params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                      UCT_IFACE_PARAM_FIELD_DEVICE;
        params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
        params.mode.device.tl_name  = tl;
        params.mode.device.dev_name = "gaudi_0";
        if (err_cb != NULL) {
            params.field_mask     |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                                     UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                                     UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
            params.err_handler       = err_cb;
            params.err_handler_arg   = err_arg;
            params.err_handler_flags = 0;
        }
        if (uct_iface_open(md, worker, &params, config, &iface) != UCS_OK) {
            iface = NULL;
        }
        uct_config_release(config);
        return iface;
    }

    bool init(const std::map<std::string, std::string> &ipc_cfg = {})
    {
        memset(this, 0, sizeof(*this));
        if ((ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                      &async) != UCS_OK) ||
            (uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) !=
             UCS_OK)) {
            return false;
        }
        copy_comp = component("gaudi_copy");
        ipc_comp  = component("gaudi_ipc");
        copy_md   = open_md(copy_comp, "gaudi_copy");
        ipc_md    = open_md(ipc_comp, "gaudi_ipc");
        /* the process uses Gaudi memory from the start, as every side of
         * these tests does: its first allocation takes the device (the
         * MDs do not, docs/base.md "Ownership") */
        void *first;
        if ((copy_md == NULL) || (uct_gaudi_mem_alloc(4096, &first) != UCS_OK) ||
            (uct_gaudi_mem_free(first) != UCS_OK)) {
            return false;
        }
        copy_if   = open_iface(copy_md, "gaudi_cpy", {});
        ipc_if    = open_iface(ipc_md, "gaudi_ipc", ipc_cfg);
        if ((copy_if == NULL) || (ipc_if == NULL)) {
            return false;
        }

        /* gaudi_cpy: an ep to itself */
        uct_iface_attr_t attr;
        uct_iface_query(copy_if, &attr);
        std::vector<uint8_t> dev(attr.device_addr_len + 1),
                             ifa(attr.iface_addr_len + 1);
        uct_iface_get_device_address(copy_if, (uct_device_addr_t*)dev.data());
        uct_iface_get_address(copy_if, (uct_iface_addr_t*)ifa.data());
        uct_ep_params_t ep_params;
        ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                               UCT_EP_PARAM_FIELD_DEV_ADDR |
                               UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep_params.iface      = copy_if;
        ep_params.dev_addr   = (uct_device_addr_t*)dev.data();
        ep_params.iface_addr = (uct_iface_addr_t*)ifa.data();
        return uct_ep_create(&ep_params, &copy_ep) == UCS_OK;
    }

    void close_ipc_iface()
    {
        if (ipc_if != NULL) {
            uct_iface_close(ipc_if);
            ipc_if = NULL;
        }
    }

    void fini()
    {
        if (copy_ep) uct_ep_destroy(copy_ep);
        if (copy_if) uct_iface_close(copy_if);
        close_ipc_iface();
        if (copy_md) uct_md_close(copy_md);
        if (ipc_md) uct_md_close(ipc_md);
        if (worker) uct_worker_destroy(worker);
        if (async) ucs_async_context_destroy(async);
        memset(this, 0, sizeof(*this));
    }

    /* Wait for @a status (INPROGRESS: until @a comp completes) */
    ucs_status_t wait(uct_iface_h iface, ucs_status_t status,
                      uct_completion_t *comp)
    {
        if (status != UCS_INPROGRESS) {
            return status;
        }
        for (int i = 0; (comp->count > 0) && (i < 20000000); ++i) {
            uct_iface_progress(iface);
        }
        return (comp->count > 0) ? UCS_ERR_TIMED_OUT : comp->status;
    }

    /* host <-> device through gaudi_cpy zcopy (DMA) */
    ucs_status_t dev_copy(void *dev, void *host, size_t len, bool to_dev)
    {
        uct_mem_h memh;
        uint8_t rkey_buf[256];
        uct_rkey_bundle_t rkey;
        ucs_status_t status;

        status = uct_md_mem_reg(copy_md, dev, len, UCT_MD_MEM_ACCESS_ALL, &memh);
        if (status != UCS_OK) {
            return status;
        }
        uct_md_mkey_pack(copy_md, memh, rkey_buf);
        uct_rkey_unpack(copy_comp, rkey_buf, &rkey);

        uct_iov_t iov = {host, len, UCT_MEM_HANDLE_NULL, len, 1};
        uct_completion_t comp = {comp_cb, 1, UCS_OK};
        status = to_dev ?
                 uct_ep_put_zcopy(copy_ep, &iov, 1, (uintptr_t)dev, rkey.rkey,
                                  &comp) :
                 uct_ep_get_zcopy(copy_ep, &iov, 1, (uintptr_t)dev, rkey.rkey,
                                  &comp);
        status = wait(copy_if, status, &comp);
        uct_rkey_release(copy_comp, &rkey);
        uct_md_mem_dereg(copy_md, memh);
        return status;
    }

    ucs_status_t fill(void *dev, size_t len, unsigned seed)
    {
        std::vector<uint8_t> buf(len);
        pattern(buf, seed);
        return dev_copy(dev, buf.data(), len, true);
    }

    /* -1: equal, else the first differing offset (or -2 on error) */
    long check(void *dev, size_t len, unsigned seed)
    {
        std::vector<uint8_t> buf(len, 0xee), exp(len);
        pattern(exp, seed);
        if (dev_copy(dev, buf.data(), len, false) != UCS_OK) {
            return -2;
        }
        for (size_t i = 0; i < len; ++i) {
            if (buf[i] != exp[i]) {
                return i;
            }
        }
        return -1;
    }
};


/* ---- exporter process ---- */

static unsigned inval_calls;
static ucs_status_t inval_status = UCS_INPROGRESS;

static void inval_cb(uct_completion_t *comp)
{
    ++inval_calls;
    inval_status = comp->status;
}

/* Deregister with invalidation; "ok <callbacks> <status>" */
static void exporter_invalidate(uct_md_h md, uct_mem_h memh)
{
    uct_completion_t comp = {inval_cb, 1, UCS_OK};
    uct_md_mem_dereg_params_t params;
    ucs_status_t status;

    params.field_mask = UCT_MD_MEM_DEREG_FIELD_MEMH |
                        UCT_MD_MEM_DEREG_FIELD_FLAGS |
                        UCT_MD_MEM_DEREG_FIELD_COMPLETION;
    params.memh       = memh;
    params.flags      = UCT_MD_MEM_DEREG_FLAG_INVALIDATE;
    params.comp       = &comp;
    inval_calls       = 0;
    status            = uct_md_mem_dereg_v2(md, &params);
    printf("ok %u %d %d\n", inval_calls, (int)status, (int)inval_status);
}

/*
 * The exporter as a framework application: its own SynapseAI calls (the
 * library the module loaded, UCX_GAUDI_SYNAPSE_LIB), tensors from
 * synDeviceMalloc and copies on its own stream. Signatures as in
 * src/uct/gaudi/syn/gaudi_syn_api.h.
 */
struct app_syn {
    void *lib = NULL;
    uct_gaudi_syn_device_malloc_fn_t malloc_fn;
    uct_gaudi_syn_device_free_fn_t   free_fn;
    uct_gaudi_syn_host_map_fn_t      map_fn;
    uct_gaudi_syn_host_unmap_fn_t    unmap_fn;
    uct_gaudi_syn_stream_create_fn_t stream_create_fn;
    uct_gaudi_syn_stream_fn_t        stream_sync_fn, stream_destroy_fn;
    uct_gaudi_syn_memcpy_fn_t        memcpy_fn;

    bool load()
    {
        const char *path = getenv("UCX_GAUDI_SYNAPSE_LIB");
        if (lib != NULL) {
            return true;
        }
        lib = (path == NULL) ? NULL : dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        if (lib == NULL) {
            return false;
        }
        malloc_fn = (uct_gaudi_syn_device_malloc_fn_t)dlsym(lib,
                                                           "synDeviceMalloc");
        free_fn   = (uct_gaudi_syn_device_free_fn_t)dlsym(lib, "synDeviceFree");
        map_fn    = (uct_gaudi_syn_host_map_fn_t)dlsym(lib, "synHostMap");
        unmap_fn  = (uct_gaudi_syn_host_unmap_fn_t)dlsym(lib, "synHostUnmap");
        stream_create_fn = (uct_gaudi_syn_stream_create_fn_t)
                           dlsym(lib, "synStreamCreateGeneric");
        stream_sync_fn    = (uct_gaudi_syn_stream_fn_t)
                            dlsym(lib, "synStreamSynchronize");
        stream_destroy_fn = (uct_gaudi_syn_stream_fn_t)
                            dlsym(lib, "synStreamDestroy");
        memcpy_fn = (uct_gaudi_syn_memcpy_fn_t)dlsym(lib, "synMemCopyAsync");
        return malloc_fn && free_fn && map_fn && unmap_fn &&
               stream_create_fn && stream_sync_fn && stream_destroy_fn &&
               memcpy_fn;
    }

    /* H2D (@a to_dev) or D2H of @a len bytes on a stream of its own */
    bool copy(uint64_t dev, std::vector<uint8_t> &host, bool to_dev)
    {
        uct_gaudi_syn_stream_t stream;
        bool ok;

        if ((map_fn(0, host.size(), host.data()) != 0) ||
            (stream_create_fn(&stream, 0, 0) != 0)) {
            return false;
        }
        ok = (to_dev ?
              memcpy_fn(stream, (uintptr_t)host.data(), host.size(), dev,
                        UCT_GAUDI_SYN_HOST_TO_DRAM) :
              memcpy_fn(stream, dev, host.size(), (uintptr_t)host.data(),
                        UCT_GAUDI_SYN_DRAM_TO_HOST)) == 0;
        ok = (stream_sync_fn(stream) == 0) && ok;
        stream_destroy_fn(stream);
        unmap_fn(0, host.data());
        return ok;
    }
};


static int exporter_main()
{
    std::map<uint64_t, uct_mem_h> regs, syn_regs;
    std::map<uint64_t, uint64_t> syn_pads;
    app_syn app;
    std::map<uint64_t, uct_mem_h> regs2; /* second registrations */
    uct_side s;
    char line[512];

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!s.init()) {
        printf("err init\n");
        return 1;
    }
    printf("ready\n");

    while (fgets(line, sizeof(line), stdin) != NULL) {
        char cmd[32] = "";
        unsigned long long a = 0, b = 0, c = 0;
        sscanf(line, "%31s %llx %llx %llx", cmd, &a, &b, &c);
        std::string op = cmd;

        if (op == "addr") {
            uct_iface_attr_t attr;
            uct_iface_query(s.ipc_if, &attr);
            std::vector<uint8_t> dev(attr.device_addr_len),
                                 ifa(attr.iface_addr_len);
            uct_iface_get_device_address(s.ipc_if,
                                         (uct_device_addr_t*)dev.data());
            uct_iface_get_address(s.ipc_if, (uct_iface_addr_t*)ifa.data());
            printf("ok %s %s\n", hex(dev.data(), dev.size()).c_str(),
                   hex(ifa.data(), ifa.size()).c_str());
        } else if (op == "alloc") {
            void *ptr;
            uct_mem_h memh;
            uint8_t rkey[sizeof(uct_gaudi_ipc_rkey_t)];
            if ((uct_gaudi_mem_alloc(a, &ptr) != UCS_OK) ||
                (uct_md_mem_reg(s.ipc_md, ptr, a, UCT_MD_MEM_ACCESS_ALL, &memh) != UCS_OK)) {
                printf("err alloc\n");
                continue;
            }
            uct_md_mkey_pack(s.ipc_md, memh, rkey);
            regs[(uintptr_t)ptr] = memh;
            printf("ok %llx %s\n", (unsigned long long)(uintptr_t)ptr,
                   hex(rkey, sizeof(rkey)).c_str());
        } else if (op == "syntensor") {
            /* a tensor of the application: synDeviceMalloc of @a b bytes
             * after a piece of @a a bytes (so it starts inside the pool,
             * at no MAP start), registered on both MDs */
            uint64_t pad = 0, t = 0;
            uct_mem_h memh, cmemh;
            uint8_t rkey[sizeof(uct_gaudi_ipc_rkey_t)];
            if (!app.load() ||
                ((a > 0) && (app.malloc_fn(0, a, 0, 0, &pad) != 0)) ||
                (app.malloc_fn(0, b, 0, 0, &t) != 0) ||
                (uct_md_mem_reg(s.copy_md, (void*)t, b, UCT_MD_MEM_ACCESS_ALL,
                                &cmemh) != UCS_OK) ||
                (uct_md_mem_reg(s.ipc_md, (void*)t, b, UCT_MD_MEM_ACCESS_ALL,
                                &memh) != UCS_OK)) {
                printf("err syntensor\n");
                continue;
            }
            uct_md_mkey_pack(s.ipc_md, memh, rkey);
            regs[t]     = memh;
            syn_regs[t] = cmemh;
            syn_pads[t] = pad;
            printf("ok %llx %s\n", (unsigned long long)t,
                   hex(rkey, sizeof(rkey)).c_str());
        } else if (op == "synfree") {
            uct_md_mem_dereg(s.ipc_md, regs[a]);
            uct_md_mem_dereg(s.copy_md, syn_regs[a]);
            regs.erase(a);
            syn_regs.erase(a);
            bool ok = (app.free_fn(0, a, 0) == 0) &&
                      ((syn_pads[a] == 0) ||
                       (app.free_fn(0, syn_pads[a], 0) == 0));
            syn_pads.erase(a);
            printf(ok ? "ok\n" : "err synfree\n");
        } else if (op == "synfill") {
            std::vector<uint8_t> buf(b);
            pattern(buf, c);
            printf(app.copy(a, buf, true) ? "ok\n" : "err synfill\n");
        } else if (op == "syncheck") {
            std::vector<uint8_t> buf(b, 0xee), exp(b);
            pattern(exp, c);
            long first = -1;
            if (!app.copy(a, buf, false)) {
                first = -2;
            }
            for (size_t i = 0; (first == -1) && (i < b); ++i) {
                if (buf[i] != exp[i]) {
                    first = i;
                }
            }
            printf("ok %ld\n", first);
        } else if (op == "fill") {
            printf(s.fill((void*)a, b, c) == UCS_OK ? "ok\n" : "err fill\n");
        } else if (op == "check") {
            printf("ok %ld\n", s.check((void*)a, b, c));
        } else if ((op == "reg2") || (op == "pack2")) {
            /* another registration of (or a new key for) buffer a */
            uint8_t rkey[sizeof(uct_gaudi_ipc_rkey_t)];
            if ((op == "reg2") &&
                (uct_md_mem_reg(s.ipc_md, (void*)a, b, UCT_MD_MEM_ACCESS_ALL,
                                &regs2[a]) != UCS_OK)) {
                regs2.erase(a);
                printf("err reg2\n");
                continue;
            }
            if (uct_md_mkey_pack(s.ipc_md, regs2[a], rkey) != UCS_OK) {
                printf("err pack2\n");
                continue;
            }
            printf("ok %s\n", hex(rkey, sizeof(rkey)).c_str());
        } else if (op == "inval") {
            exporter_invalidate(s.ipc_md, regs[a]);
            regs.erase(a);
        } else if (op == "inval2") {
            exporter_invalidate(s.ipc_md, regs2[a]);
            regs2.erase(a);
        } else if (op == "cycle") {
            /* what UCP does per failed rendezvous send in PEER mode
             * (ucp_request_dt_invalidate): b times register buffer a,
             * pack a key, deregister with INVALIDATE; prints the number
             * of distinct dma-buf files the keys named and of tokens */
            std::set<uint64_t> inos;
            unsigned long tokens0 = uct_gaudi_ipc_token_count();
            bool ok = true;
            for (unsigned long long i = 0; ok && (i < b); ++i) {
                uct_gaudi_ipc_rkey_t key;
                uct_mem_h memh;
                ok = (uct_md_mem_reg(s.ipc_md, (void*)a, 4096,
                                     UCT_MD_MEM_ACCESS_ALL, &memh) == UCS_OK) &&
                     (uct_md_mkey_pack(s.ipc_md, memh, &key) == UCS_OK);
                inos.insert(key.id.ino);
                uct_completion_t comp = {inval_cb, 1, UCS_OK};
                uct_md_mem_dereg_params_t params;
                params.field_mask = UCT_MD_MEM_DEREG_FIELD_MEMH |
                                    UCT_MD_MEM_DEREG_FIELD_FLAGS |
                                    UCT_MD_MEM_DEREG_FIELD_COMPLETION;
                params.memh       = memh;
                params.flags      = UCT_MD_MEM_DEREG_FLAG_INVALIDATE;
                params.comp       = &comp;
                ok = ok && (uct_md_mem_dereg_v2(s.ipc_md, &params) == UCS_OK);
            }
            printf(ok ? "ok %zx %lx\n" : "err cycle\n", inos.size(),
                   uct_gaudi_ipc_token_count() - tokens0);
        } else if (op == "dereg") {
            uct_md_mem_dereg(s.ipc_md, regs[a]);
            regs.erase(a);
            printf("ok\n");
        } else if (op == "free") {
            if (regs.count(a)) {
                uct_md_mem_dereg(s.ipc_md, regs[a]);
                regs.erase(a);
            }
            printf(uct_gaudi_mem_free((void*)a) == UCS_OK ? "ok\n" :
                                                            "err free\n");
        } else if (op == "stat") {
            printf("ok %x %x\n", uct_gaudi_ipc_export_count(), open_fds());
        } else if (op == "nodump") {
            /* pidfd_getfd needs PTRACE_MODE_ATTACH: refused for a
             * non-dumpable target without CAP_SYS_PTRACE */
            prctl(PR_SET_DUMPABLE, 0);
            printf("ok\n");
        } else if (op == "quit") {
            break;
        } else {
            printf("err %s\n", cmd);
        }
    }

    for (auto &r : regs2) {
        uct_md_mem_dereg(s.ipc_md, r.second);
    }
    for (auto &r : syn_regs) {
        uct_md_mem_dereg(s.ipc_md, regs[r.first]);
        uct_md_mem_dereg(s.copy_md, r.second);
        regs.erase(r.first);
        app.free_fn(0, r.first, 0);
        if (syn_pads[r.first] != 0) {
            app.free_fn(0, syn_pads[r.first], 0);
        }
    }
    for (auto &r : regs) {
        uct_md_mem_dereg(s.ipc_md, r.second);
        uct_gaudi_mem_free((void*)r.first);
    }
    s.fini();
    return 0;
}


/* ---- importer (gtest) ---- */

/* The exporter as seen by the test */
class peer {
public:
    pid_t pid = -1;

    ~peer()
    {
        stop();
    }

    bool start(const char *device = "1")
    {
        return spawn(device) && (read_line() == "ready");
    }

    /* Wait for "ready", calling @a idle meanwhile (the test keeps
     * progressing while the exporter starts) */
    bool wait_ready(const std::function<void()> &idle)
    {
        struct pollfd p = {fileno(m_out), POLLIN, 0};

        for (int i = 0; i < 20000; ++i) {
            if (poll(&p, 1, 1) > 0) {
                return read_line() == "ready";
            }
            idle();
        }
        return false;
    }

    /* Start the exporter process; "ready" is not read yet */
    bool spawn(const char *device = "1")
    {
        int in[2], out[2];
        if ((pipe(in) < 0) || (pipe(out) < 0)) {
            return false;
        }
        pid = fork();
        if (pid == 0) {
            dup2(in[0], 0);
            dup2(out[1], 1);
            close(in[1]);
            close(out[0]);
            setenv("UCX_GAUDI_DEVICE", device, 1);
            setenv("UCX_LOG_FILE", "stderr", 1); /* stdout is the pipe */
            execl("/proc/self/exe", "gaudi_ipc_test", "--exporter",
                  (char*)NULL);
            _exit(127);
        }
        close(in[0]);
        close(out[1]);
        m_in  = fdopen(in[1], "w");
        m_out = fdopen(out[0], "r");
        setvbuf(m_in, NULL, _IOLBF, 0);
        return true;
    }

    std::string cmd(const char *fmt, ...)
    {
        va_list ap;
        va_start(ap, fmt);
        vfprintf(m_in, fmt, ap);
        va_end(ap);
        fputc('\n', m_in);
        fflush(m_in);
        return read_line();
    }

    void kill_now()
    {
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            pid = -1;
        }
    }

    void stop()
    {
        if (pid > 0) {
            fprintf(m_in, "quit\n");
            fflush(m_in);
            int st;
            waitpid(pid, &st, 0);
            pid = -1;
        }
        if (m_in) fclose(m_in);
        if (m_out) fclose(m_out);
        m_in = m_out = NULL;
    }

private:
    FILE *m_in = NULL, *m_out = NULL;

    std::string read_line()
    {
        char line[1024];
        if (fgets(line, sizeof(line), m_out) == NULL) {
            return "eof";
        }
        line[strcspn(line, "\n")] = 0;
        return line;
    }
};


/* A remote buffer: its address and unpacked rkey */
struct remote_buf {
    uint64_t          addr = 0;
    uct_rkey_bundle_t rkey = {};
};


class gaudi_ipc : public ::testing::Test {
public:
    uct_side m_uct;
    peer     m_peer;
    uct_ep_h m_ep = NULL;
    std::vector<remote_buf> m_rbufs;

    virtual std::map<std::string, std::string> ipc_config()
    {
        return {{"PEER_CHECK_INTERVAL", "0"}};
    }

    void SetUp() override
    {
        ASSERT_TRUE(m_peer.start()) << "exporter did not start";
        ASSERT_TRUE(m_uct.init(ipc_config()));
    }

    void TearDown() override
    {
        if (m_ep != NULL) {
            uct_ep_destroy(m_ep);
        }
        for (auto &r : m_rbufs) {
            uct_rkey_release(m_uct.ipc_comp, &r.rkey);
        }
        m_uct.fini();
        m_peer.stop();
    }

    void peer_addr(std::vector<uint8_t> &dev, std::vector<uint8_t> &ifa)
    {
        char d[256], i[256];
        std::string r = m_peer.cmd("addr");
        ASSERT_EQ(2, sscanf(r.c_str(), "ok %255s %255s", d, i)) << r;
        dev = unhex(d);
        ifa = unhex(i);
    }

    bool reachable()
    {
        std::vector<uint8_t> dev, ifa;
        peer_addr(dev, ifa);
        return uct_iface_is_reachable(m_uct.ipc_if,
                                      (uct_device_addr_t*)dev.data(),
                                      (uct_iface_addr_t*)ifa.data());
    }

    void connect()
    {
        std::vector<uint8_t> dev, ifa;
        peer_addr(dev, ifa);
        uct_ep_params_t p;
        p.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                       UCT_EP_PARAM_FIELD_DEV_ADDR |
                       UCT_EP_PARAM_FIELD_IFACE_ADDR;
        p.iface      = m_uct.ipc_if;
        p.dev_addr   = (uct_device_addr_t*)dev.data();
        p.iface_addr = (uct_iface_addr_t*)ifa.data();
        ASSERT_EQ(UCS_OK, uct_ep_create(&p, &m_ep));
    }

    remote_buf ralloc(size_t len)
    {
        return ralloc_from(m_peer, len);
    }

    /* A buffer of @a owner, its key unpacked here */
    remote_buf ralloc_from(peer &owner, size_t len)
    {
        remote_buf rb;
        char rkey[512];
        unsigned long long addr;
        std::string r = owner.cmd("alloc %zx", len);
        EXPECT_EQ(2, sscanf(r.c_str(), "ok %llx %511s", &addr, rkey)) << r;
        std::vector<uint8_t> packed = unhex(rkey);
        EXPECT_EQ(sizeof(uct_gaudi_ipc_rkey_t), packed.size());
        EXPECT_EQ(UCS_OK, uct_rkey_unpack(m_uct.ipc_comp, packed.data(),
                                          &rb.rkey));
        rb.addr = addr;
        m_rbufs.push_back(rb);
        return rb;
    }

    /* Free a remote buffer. With @a sweep, the way a well-behaved peer
     * does it: deregister, let our idle progress notice (kcmp) and drop
     * the import, then free - so the exporter can unmap (facts 3.3) */
    void rfree(const remote_buf &rb, bool sweep = true)
    {
        if (sweep) {
            EXPECT_EQ("ok", m_peer.cmd("dereg %llx",
                                       (unsigned long long)rb.addr));
            for (int i = 0; i < 3; ++i) {
                uct_iface_progress(m_uct.ipc_if);
            }
        }
        EXPECT_EQ("ok", m_peer.cmd("free %llx",
                                   (unsigned long long)rb.addr));
    }

    std::string rfill(uint64_t addr, size_t len, unsigned seed)
    {
        return m_peer.cmd("fill %llx %zx %x", (unsigned long long)addr, len,
                          seed);
    }

    long rcheck(uint64_t addr, size_t len, unsigned seed)
    {
        long off = -3;
        std::string r = m_peer.cmd("check %llx %zx %x",
                                   (unsigned long long)addr, len, seed);
        sscanf(r.c_str(), "ok %ld", &off);
        return off;
    }

    ucs_status_t xfer(bool put, void *local, size_t len, uint64_t raddr,
                      const remote_buf &rb)
    {
        uct_iov_t iov = {local, len, UCT_MEM_HANDLE_NULL, len, 1};
        uct_completion_t comp = {uct_side::comp_cb, 1, UCS_OK};
        ucs_status_t status;
        do {
            status = put ? uct_ep_put_zcopy(m_ep, &iov, 1, raddr,
                                            rb.rkey.rkey, &comp) :
                           uct_ep_get_zcopy(m_ep, &iov, 1, raddr,
                                            rb.rkey.rkey, &comp);
            if (status == UCS_ERR_NO_RESOURCE) {
                uct_iface_progress(m_uct.ipc_if);
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        return m_uct.wait(m_uct.ipc_if, status, &comp);
    }

    uct_gaudi_ipc_cache_t *cache()
    {
        return &ucs_derived_of(m_uct.ipc_if, uct_gaudi_ipc_iface_t)->cache;
    }

    /* get from the peer into local device memory, put back: all sizes */
    void put_get_roundtrip(size_t len, size_t roff, unsigned seed)
    {
        remote_buf rb = ralloc(len + roff);
        void *local;
        ASSERT_EQ(UCS_OK, uct_gaudi_mem_alloc(len, &local));

        ASSERT_EQ("ok", rfill(rb.addr, len + roff, seed));
        ASSERT_EQ(UCS_OK, xfer(false, local, len, rb.addr + roff, rb))
                << "get_zcopy " << len;
        std::vector<uint8_t> exp(len + roff), got(len);
        pattern(exp, seed);
        ASSERT_EQ(UCS_OK, m_uct.dev_copy(local, got.data(), len, false));
        EXPECT_EQ(0, memcmp(exp.data() + roff, got.data(), len))
                << "get_zcopy data, " << len << " bytes at +" << roff;

        ASSERT_EQ(UCS_OK, m_uct.fill(local, len, seed + 1));
        ASSERT_EQ(UCS_OK, xfer(true, local, len, rb.addr, rb))
                << "put_zcopy " << len;
        EXPECT_EQ(-1, rcheck(rb.addr, len, seed + 1))
                << "put_zcopy data, " << len << " bytes";

        uct_gaudi_mem_free(local);
        rfree(rb);
    }
};


/* Whether both processes drive the device through SynapseAI (70-ipc's
 * synapse runs; Gaudi3 picks it by itself) */
static bool synapse_backend()
{
    const char *b = getenv("UCX_GAUDI_COPY_BACKEND");
    return (getenv("UCX_GAUDI_SYNAPSE_LIB") != NULL) &&
           ((b == NULL) || strcmp(b, "kernel"));
}

/*
 * Tensors of the exporter's application (synDeviceMalloc: 128-byte
 * aligned pieces of SynapseAI's pool, at no MAP start, some at odd
 * offsets): both of its MDs register them, and the importer puts and gets
 * through gaudi_ipc, the data checked on the application's own stream
 */
TEST_F(gaudi_ipc, synapse_tensors)
{
    const char *asic = getenv("HLSIM_ASIC");
    if (!synapse_backend() || upstream_flavour()) {
        GTEST_SKIP() << "needs the SynapseAI backend and op 99";
    }
    if ((asic != NULL) && !strcmp(asic, "gaudi1")) {
        GTEST_SKIP() << "Gaudi1: SynapseAI's pointers are physical DRAM "
                        "addresses, outside the module's pointer window";
    }
    connect();
    static const struct { size_t pad, len, roff; } tensors[] = {
        {0, 1000, 0}, {384, 5000, 3}, {4096 + 128, 65539, 129},
        {(1ul << 20) + 640, 1ul << 20, 4097}, {128, 3ul << 20, 0}
    };
    unsigned seed = 40;
    for (const auto &t : tensors) {
        char rkey[512];
        unsigned long long addr;
        std::string r = m_peer.cmd("syntensor %zx %zx", t.pad, t.len);
        ASSERT_EQ(2, sscanf(r.c_str(), "ok %llx %511s", &addr, rkey)) << r;
        std::vector<uint8_t> packed = unhex(rkey);
        const uct_gaudi_ipc_rkey_t *key =
                (const uct_gaudi_ipc_rkey_t*)packed.data();
        EXPECT_EQ(0, key->flags) << "not exported";
        EXPECT_EQ(addr, key->base);
        EXPECT_EQ(t.len, key->length);
        EXPECT_EQ(0u, addr % 128);
        remote_buf rb;
        rb.addr = addr;
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_uct.ipc_comp, packed.data(),
                                          &rb.rkey));
        m_rbufs.push_back(rb);

        size_t len = t.len - t.roff;
        void *local;
        ASSERT_EQ(UCS_OK, uct_gaudi_mem_alloc(len, &local));
        ASSERT_EQ("ok", m_peer.cmd("synfill %llx %zx %x", addr, t.len,
                                   seed));
        ASSERT_EQ(UCS_OK, xfer(false, local, len, addr + t.roff, rb))
                << "get_zcopy " << len;
        std::vector<uint8_t> exp(t.len), got(len);
        pattern(exp, seed);
        ASSERT_EQ(UCS_OK, m_uct.dev_copy(local, got.data(), len, false));
        EXPECT_EQ(0, memcmp(exp.data() + t.roff, got.data(), len))
                << "get_zcopy data, " << len << " bytes at +" << t.roff;

        ASSERT_EQ(UCS_OK, m_uct.fill(local, len, seed + 1));
        ASSERT_EQ(UCS_OK, xfer(true, local, len, addr, rb))
                << "put_zcopy " << len;
        EXPECT_EQ("ok -1", m_peer.cmd("syncheck %llx %zx %x", addr, len,
                                      seed + 1))
                << "put_zcopy data, " << len << " bytes";
        uct_gaudi_mem_free(local);
        seed += 2;
    }
}

TEST_F(gaudi_ipc, reachability)
{
    std::vector<uint8_t> dev, ifa;
    peer_addr(dev, ifa);
    EXPECT_EQ(!upstream_flavour(), reachable());

    /* our own address: same process */
    std::vector<uint8_t> own(ifa.size());
    uct_iface_get_address(m_uct.ipc_if, (uct_iface_addr_t*)own.data());
    EXPECT_FALSE(uct_iface_is_reachable(m_uct.ipc_if,
                                        (uct_device_addr_t*)dev.data(),
                                        (uct_iface_addr_t*)own.data()));
    /* another boot / node */
    std::vector<uint8_t> other_dev = dev;
    other_dev[0] ^= 1;
    EXPECT_FALSE(uct_iface_is_reachable(m_uct.ipc_if,
                                        (uct_device_addr_t*)other_dev.data(),
                                        (uct_iface_addr_t*)ifa.data()));
    /* a peer whose device cannot import: unreachable from both sides */
    std::vector<uint8_t> no_import = ifa;
    ASSERT_EQ(sizeof(uct_gaudi_ipc_iface_addr_t), no_import.size());
    ((uct_gaudi_ipc_iface_addr_t*)no_import.data())->caps &=
            ~UCT_GAUDI_IPC_ADDR_IMPORT;
    EXPECT_FALSE(uct_iface_is_reachable(m_uct.ipc_if,
                                        (uct_device_addr_t*)dev.data(),
                                        (uct_iface_addr_t*)no_import.data()));
    /* a peer that cannot export (its MD does not register): the same */
    std::vector<uint8_t> no_export = ifa;
    ((uct_gaudi_ipc_iface_addr_t*)no_export.data())->caps &=
            ~UCT_GAUDI_IPC_ADDR_EXPORT;
    EXPECT_FALSE(uct_iface_is_reachable(m_uct.ipc_if,
                                        (uct_device_addr_t*)dev.data(),
                                        (uct_iface_addr_t*)no_export.data()));
    /* another pid namespace */
    std::vector<uint8_t> other_ns = ifa;
    other_ns[0] ^= 1;
    EXPECT_FALSE(uct_iface_is_reachable(m_uct.ipc_if,
                                        (uct_device_addr_t*)dev.data(),
                                        (uct_iface_addr_t*)other_ns.data()));
}

TEST_F(gaudi_ipc, rkey_layout)
{
    if (no_export()) {
        GTEST_SKIP() << "no DMA-BUF export (Linux 6.1, Gaudi2): no rkey";
    }
    remote_buf rb = ralloc(10000);
    const uct_gaudi_ipc_rkey_t *key =
            (const uct_gaudi_ipc_rkey_t*)rb.rkey.rkey;
    uct_md_attr_t attr;

    uct_md_query(m_uct.ipc_md, &attr);
    EXPECT_EQ(sizeof(uct_gaudi_ipc_rkey_t), attr.rkey_packed_size);
    EXPECT_EQ(104u, sizeof(uct_gaudi_ipc_rkey_t));
    EXPECT_TRUE(attr.cap.reg_mem_types & UCS_BIT(uct_gaudi_memory_type()));
    EXPECT_EQ(UCT_GAUDI_IPC_RKEY_VERSION, key->version);
    EXPECT_EQ(m_peer.pid, key->pid);
    EXPECT_EQ(uct_gaudi_ipc_pidns(), key->pidns);
    EXPECT_EQ(rb.addr, key->base);
    EXPECT_GE(key->length, 10000u);
    EXPECT_GE(key->import_len, key->offset + key->length);
    EXPECT_NE(0u, key->id.uid);
    EXPECT_NE(0u, key->id.ino);
    EXPECT_GE(key->fd, 0);
    EXPECT_GE(key->token, 0);
    EXPECT_NE(key->fd, key->token);

    /* a second registration of the same allocation shares the export */
    remote_buf rb2 = ralloc(10000);
    EXPECT_NE(rb.addr, rb2.addr);
    std::string st = m_peer.cmd("stat");
    unsigned exports = 0, fds = 0;
    sscanf(st.c_str(), "ok %x %x", &exports, &fds);
    EXPECT_EQ(2u, exports);
}

TEST_F(gaudi_ipc, put_get_sizes)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    for (size_t len : {1ul, 7ul, 256ul, 4096ul, 65539ul, 1ul << 20,
                       (3ul << 20) + 5, 16ul << 20}) {
        put_get_roundtrip(len, 0, (unsigned)len);
    }
    /* unaligned offsets into the remote buffer */
    put_get_roundtrip(1000, 1, 3);
    put_get_roundtrip(100000, 4097, 4);
}

TEST_F(gaudi_ipc, host_local_buffer)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    const size_t len = 300000;
    remote_buf rb    = ralloc(len);
    std::vector<uint8_t> host(len, 0), exp(len);

    ASSERT_EQ("ok", rfill(rb.addr, len, 9));
    ASSERT_EQ(UCS_OK, xfer(false, host.data(), len, rb.addr, rb));
    pattern(exp, 9);
    EXPECT_EQ(exp, host);

    pattern(host, 10);
    ASSERT_EQ(UCS_OK, xfer(true, host.data(), len, rb.addr, rb));
    EXPECT_EQ(-1, rcheck(rb.addr, len, 10));
}

/*
 * Synchronous short and bcopy (what UCP needs of an RMA lane): from/to a
 * host buffer and from/to this process's Gaudi memory, data checked on
 * the exporter's side (put) or after a D2H copy (get)
 */
TEST_F(gaudi_ipc, short_bcopy)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    uct_iface_attr_t attr;
    ASSERT_EQ(UCS_OK, uct_iface_query(m_uct.ipc_if, &attr));
    const uint64_t need = UCT_IFACE_FLAG_PUT_SHORT | UCT_IFACE_FLAG_GET_SHORT |
                          UCT_IFACE_FLAG_PUT_BCOPY | UCT_IFACE_FLAG_GET_BCOPY;
    ASSERT_EQ(need, attr.cap.flags & need);
    /* up to UCP's default zcopy threshold, RMA goes by put_short */
    ASSERT_GE(attr.cap.put.max_short, 16384u);

    const size_t max = attr.cap.put.max_bcopy;
    remote_buf rb    = ralloc(max + 64);
    void *dev;
    ASSERT_EQ(UCS_OK, uct_gaudi_mem_alloc(max, &dev));

    for (size_t len : {1ul, 100ul, 4099ul, max}) {
        std::vector<uint8_t> host(len), back(len), exp(len + 3);
        unsigned seed = (unsigned)len;

        /* put_short from host memory, at an unaligned remote offset */
        pattern(host, seed);
        ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep, host.data(), len,
                                           rb.addr + 3, rb.rkey.rkey));
        EXPECT_EQ(-1, rcheck(rb.addr + 3, len, seed)) << "put_short " << len;

        /* get_short into Gaudi memory (a device-to-device copy) */
        ASSERT_EQ(UCS_OK, uct_ep_get_short(m_ep, dev, len, rb.addr + 3,
                                           rb.rkey.rkey));
        ASSERT_EQ(UCS_OK, m_uct.dev_copy(dev, back.data(), len, false));
        EXPECT_EQ(host, back) << "get_short to Gaudi memory " << len;

        /* put_short from Gaudi memory, get_short into host memory */
        ASSERT_EQ(UCS_OK, m_uct.fill(dev, len, seed + 1));
        ASSERT_EQ(UCS_OK, uct_ep_put_short(m_ep, dev, len, rb.addr,
                                           rb.rkey.rkey));
        EXPECT_EQ(-1, rcheck(rb.addr, len, seed + 1)) << "put_short dev";
        std::fill(back.begin(), back.end(), 0);
        ASSERT_EQ(UCS_OK, uct_ep_get_short(m_ep, back.data(), len, rb.addr,
                                           rb.rkey.rkey));
        pattern(exp, seed + 1);
        EXPECT_EQ(0, memcmp(exp.data(), back.data(), len))
                << "get_short to host " << len;

        /* bcopy both ways */
        pattern(host, seed + 2);
        ssize_t packed = uct_ep_put_bcopy(m_ep, [](void *dest, void *arg)
                                          -> size_t {
            auto *v = (std::vector<uint8_t>*)arg;
            memcpy(dest, v->data(), v->size());
            return v->size();
        }, &host, rb.addr, rb.rkey.rkey);
        ASSERT_EQ((ssize_t)len, packed);
        EXPECT_EQ(-1, rcheck(rb.addr, len, seed + 2)) << "put_bcopy " << len;
        std::fill(back.begin(), back.end(), 0);
        ASSERT_EQ(UCS_OK, uct_ep_get_bcopy(m_ep, [](void *arg,
                                                    const void *data,
                                                    size_t length) {
            memcpy(arg, data, length);
        }, back.data(), len, rb.addr, rb.rkey.rkey, NULL));
        EXPECT_EQ(host, back) << "get_bcopy " << len;
    }

    /* out of the registration: refused, nothing copied */
    std::vector<uint8_t> host(16);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_put_short(m_ep, host.data(), 16, rb.addr - 16,
                               rb.rkey.rkey));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_get_bcopy(m_ep, [](void*, const void*, size_t) {
                  ADD_FAILURE() << "unpacked data of a refused get";
              }, host.data(), 16,
              rb.addr + ((const uct_gaudi_ipc_rkey_t*)rb.rkey.rkey)->length,
              rb.rkey.rkey, NULL));

    uct_gaudi_mem_free(dev);
    rfree(rb);
}

/* Without a remote key (UCT_INVALID_RKEY, what UCT users pass for memory
 * that has none) every op is refused with an error, nothing copied; an
 * empty op has nothing to refuse */
TEST_F(gaudi_ipc, invalid_rkey_refused)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour: every op is "
                        "refused as unsupported first";
    }
    connect();
    std::vector<uint8_t> host(64, 0x5a);
    const uint64_t raddr = 0x1000;
    uct_iov_t iov        = {host.data(), host.size(), UCT_MEM_HANDLE_NULL,
                            host.size(), 1};
    auto pack   = [](void *dest, void *arg) -> size_t {
        memcpy(dest, arg, 64);
        return 64;
    };
    auto unpack = [](void*, const void*, size_t) {
        ADD_FAILURE() << "unpacked data of a get without a key";
    };

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_put_short(m_ep, host.data(), host.size(), raddr,
                               UCT_INVALID_RKEY));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_get_short(m_ep, host.data(), host.size(), raddr,
                               UCT_INVALID_RKEY));
    EXPECT_EQ((ssize_t)UCS_ERR_INVALID_PARAM,
              uct_ep_put_bcopy(m_ep, pack, host.data(), raddr,
                               UCT_INVALID_RKEY));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_get_bcopy(m_ep, unpack, NULL, host.size(), raddr,
                               UCT_INVALID_RKEY, NULL));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_put_zcopy(m_ep, &iov, 1, raddr, UCT_INVALID_RKEY,
                               NULL));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_get_zcopy(m_ep, &iov, 1, raddr, UCT_INVALID_RKEY,
                               NULL));
    EXPECT_EQ(std::vector<uint8_t>(64, 0x5a), host) << "nothing copied";

    /* with a completion, a get reports it there (UCX 1.13's get
     * protocols cannot take a synchronous failure) */
    uct_completion_t comp = {uct_side::comp_cb, 1, UCS_OK};
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              m_uct.wait(m_uct.ipc_if,
                         uct_ep_get_zcopy(m_ep, &iov, 1, raddr,
                                          UCT_INVALID_RKEY, &comp),
                         &comp));

    iov.length = 0;
    EXPECT_EQ(UCS_OK, uct_ep_put_short(m_ep, NULL, 0, raddr,
                                       UCT_INVALID_RKEY));
    EXPECT_EQ(UCS_OK, uct_ep_put_zcopy(m_ep, &iov, 1, raddr,
                                       UCT_INVALID_RKEY, NULL));
    EXPECT_EQ(UCS_OK, uct_ep_get_bcopy(m_ep, unpack, NULL, 0, raddr,
                                       UCT_INVALID_RKEY, NULL));
}

TEST_F(gaudi_ipc, out_of_range)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    remote_buf rb = ralloc(4096);
    const uct_gaudi_ipc_rkey_t *key =
            (const uct_gaudi_ipc_rkey_t*)rb.rkey.rkey;
    std::vector<uint8_t> host(8192);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              xfer(false, host.data(), key->length + 1, rb.addr, rb));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              xfer(false, host.data(), 1, rb.addr - 1, rb));
}

/*
 * Trust boundary: a peer's key grants exactly the buffer it exported.
 * Forged keys (what a hostile peer can send) are refused before any DMA,
 * and nothing lands in or comes from memory outside the export.
 */
static uct_gaudi_ipc_rkey_t packed_key(const remote_buf &rb)
{
    return *(const uct_gaudi_ipc_rkey_t*)rb.rkey.rkey;
}

TEST_F(gaudi_ipc, forged_rkey_unpack)
{
    if (no_export()) {
        GTEST_SKIP() << "no DMA-BUF export (Linux 6.1, Gaudi2): no rkey";
    }
    remote_buf rb                = ralloc(16384);
    const uct_gaudi_ipc_rkey_t k = packed_key(rb);
    std::vector<uct_gaudi_ipc_rkey_t> forged(5, k);
    uct_rkey_bundle_t bundle;

    forged[0].length += 1ul << 20;             /* past the import */
    forged[1].offset  = k.import_len;          /* base past the import */
    forged[2].offset  = ~0ull - 100;           /* offset + length wraps */
    forged[3].length  = 0;
    forged[4].base    = ~0ull - 10;            /* base + length wraps */
    forged.push_back(k);
    forged.back().flags = 0x80;                /* unknown flag */
    forged.push_back(k);
    forged.back().token = -1;                  /* no token */
    forged.push_back(k);                       /* "no export", but more */
    forged.back().flags = UCT_GAUDI_IPC_RKEY_FLAG_NO_EXPORT | 0x2;
    for (size_t i = 0; i < forged.size(); ++i) {
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_rkey_unpack(m_uct.ipc_comp, &forged[i], &bundle))
                << "forged key " << i;
    }

    /* keys of the previous layouts (version 3: no token, from an older
     * module; version 2) are refused */
    for (uint8_t version : {2, 3}) {
        uct_gaudi_ipc_rkey_t old = k;
        old.version = version;
        EXPECT_EQ(UCS_ERR_UNSUPPORTED,
                  uct_rkey_unpack(m_uct.ipc_comp, &old, &bundle))
                << "version " << (int)version;
    }
}

TEST_F(gaudi_ipc, forged_rkey_cached_geometry)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    const size_t len = 16384;
    remote_buf rb    = ralloc(len);
    ASSERT_EQ("ok", rfill(rb.addr, len, 51));
    std::vector<uint8_t> host(len, 0), exp(len);
    ASSERT_EQ(UCS_OK, xfer(false, host.data(), len, rb.addr, rb));
    pattern(exp, 51);
    ASSERT_EQ(exp, host);

    /* the same identity with a larger geometry: self-consistent, so it
     * unpacks, but it contradicts what was imported */
    const uct_gaudi_ipc_rkey_t k = packed_key(rb);
    std::vector<uct_gaudi_ipc_rkey_t> forged(3, k);
    forged[0].length     = k.import_len * 64;
    forged[0].import_len = k.offset + forged[0].length;
    forged[1].offset     = k.offset + 4096;
    forged[1].import_len = k.import_len + 4096;
    forged[2].base       = k.base - 65536;
    forged[2].length     = k.length + 65536;
    forged[2].import_len = k.import_len + 65536;
    for (size_t i = 0; i < forged.size(); ++i) {
        remote_buf fb;
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_uct.ipc_comp, &forged[i],
                                          &fb.rkey)) << "forged key " << i;
        m_rbufs.push_back(fb);
        uint64_t outside = (i == 2) ? k.base - 4096 :
                           k.base + k.import_len;
        std::vector<uint8_t> back(4096, 0x5a), mine(4096, 0xa5);

        /* outside the export, inside the forged range */
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  xfer(false, back.data(), 4096, outside, fb))
                << "get outside, forged key " << i;
        EXPECT_EQ(std::vector<uint8_t>(4096, 0x5a), back)
                << "a refused get wrote our buffer, forged key " << i;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  xfer(true, mine.data(), 4096, outside, fb))
                << "put outside, forged key " << i;
        /* a key that contradicts the import is refused as a whole */
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  xfer(false, back.data(), 4096, k.base, fb))
                << "get inside, forged key " << i;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_ep_get_short(m_ep, back.data(), 64, outside,
                                   fb.rkey.rkey))
                << "get_short outside, forged key " << i;
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_ep_put_short(m_ep, mine.data(), 64, outside,
                                   fb.rkey.rkey))
                << "put_short outside, forged key " << i;
        EXPECT_EQ(std::vector<uint8_t>(4096, 0x5a), back);
    }
    EXPECT_GE(cache()->stats.refused, 3u);

    /* the genuine key still works and the buffer is untouched */
    std::fill(host.begin(), host.end(), 0);
    ASSERT_EQ(UCS_OK, xfer(false, host.data(), len, rb.addr, rb));
    EXPECT_EQ(exp, host);
    EXPECT_EQ(-1, rcheck(rb.addr, len, 51));
}

/* A key is honoured only on the endpoint to the process that packed it */
TEST_F(gaudi_ipc, rkey_of_another_peer)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    peer other;
    if (!other.start("2")) {
        GTEST_SKIP() << "no third device for a second exporter";
    }
    remote_buf theirs = ralloc_from(other, 8192);
    ASSERT_EQ("ok", other.cmd("fill %llx %x %x",
                              (unsigned long long)theirs.addr, 8192, 61));
    std::vector<uint8_t> host(8192, 0x5a), mine(8192, 0xa5);

    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              xfer(false, host.data(), 8192, theirs.addr, theirs));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              xfer(true, mine.data(), 8192, theirs.addr, theirs));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_get_short(m_ep, host.data(), 64, theirs.addr,
                               theirs.rkey.rkey));
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_ep_get_bcopy(m_ep, [](void*, const void*, size_t) {
                  ADD_FAILURE() << "unpacked data of a refused get";
              }, host.data(), 64, theirs.addr, theirs.rkey.rkey, NULL));
    EXPECT_EQ(std::vector<uint8_t>(8192, 0x5a), host);
    EXPECT_EQ(0u, cache()->count) << "nothing imported";
    uct_rkey_release(m_uct.ipc_comp, &theirs.rkey);
    m_rbufs.pop_back();
    EXPECT_EQ(-1, (long)[&]() {
        long off = -3;
        sscanf(other.cmd("check %llx %x %x",
                         (unsigned long long)theirs.addr, 8192, 61).c_str(),
               "ok %ld", &off);
        return off;
    }()) << "the other peer's buffer is untouched";
    other.stop();
}

TEST_F(gaudi_ipc, cache_hits)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    remote_buf rb = ralloc(65536);
    std::vector<uint8_t> host(65536);
    for (int i = 0; i < 10; ++i) {
        ASSERT_EQ(UCS_OK, xfer(i & 1, host.data(), 4096, rb.addr + i * 4096,
                               rb));
    }
    EXPECT_EQ(1u, cache()->stats.misses);
    EXPECT_EQ(9u, cache()->stats.hits);
    EXPECT_EQ(1u, cache()->count);
}

class gaudi_ipc_small_cache : public gaudi_ipc {
protected:
    std::map<std::string, std::string> ipc_config() override
    {
        return {{"CACHE_MAX_REGIONS", "2"}, {"PEER_CHECK_INTERVAL", "0"}};
    }
};

TEST_F(gaudi_ipc_small_cache, eviction)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    remote_buf rb[3] = {ralloc(8192), ralloc(8192), ralloc(8192)};
    std::vector<uint8_t> host(8192);
    int64_t maps0 = 0;

    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ("ok", rfill(rb[i].addr, 8192, 20 + i));
    }
    for (int round = 0; round < 2; ++round) {
        for (int i = 0; i < 3; ++i) {
            std::vector<uint8_t> exp(8192);
            pattern(exp, 20 + i);
            ASSERT_EQ(UCS_OK, xfer(false, host.data(), 8192, rb[i].addr,
                                   rb[i]));
            EXPECT_EQ(exp, host) << "buffer " << i;
            EXPECT_LE(cache()->count, 2u);
        }
        if (round == 0) {
            maps0 = hlsim_counter(HLSIM_COUNTER_MAPPINGS);
        }
    }
    /* LRU with 2 slots and 3 buffers in a cycle: every access misses */
    EXPECT_EQ(6u, cache()->stats.misses);
    EXPECT_EQ(4u, cache()->stats.evictions);
    EXPECT_EQ(maps0, hlsim_counter(HLSIM_COUNTER_MAPPINGS))
            << "evicted imports are unmapped (steady state)";

    /* the most recent one hits */
    ASSERT_EQ(UCS_OK, xfer(false, host.data(), 8192, rb[2].addr, rb[2]));
    EXPECT_EQ(1u, cache()->stats.hits);
}

/* gaudi_ipc with UCX_GAUDI_IPC_DMA_QUEUES=1 */
class gaudi_ipc_one_queue : public gaudi_ipc {
protected:
    std::map<std::string, std::string> ipc_config() override
    {
        return {{"DMA_QUEUES", "1"}};
    }
};

/* Every submission runs on one queue: one emulated job per CS (by default
 * a 4 MiB copy is split over one queue per engine) */
TEST_F(gaudi_ipc_one_queue, dma_queues)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    uct_gaudi_dma_t *dma = ucs_derived_of(m_uct.ipc_if,
                                          uct_gaudi_ipc_iface_t)->super.dma;
    if (dma->ops != &uct_gaudi_dma_cs_ops) {
        GTEST_SKIP() << "the SynapseAI backend has no DMA queues to choose";
    }
    const size_t len = 4ul << 20;
    remote_buf rb    = ralloc(len);
    std::vector<uint8_t> host(len), exp(len);

    ASSERT_EQ("ok", rfill(rb.addr, len, 31));
    pattern(exp, 31);
    int64_t cs0   = hlsim_counter(HLSIM_COUNTER_CS_SUBMITTED);
    int64_t jobs0 = hlsim_counter(HLSIM_COUNTER_JOBS);
    ASSERT_EQ(UCS_OK, xfer(false, host.data(), len, rb.addr, rb));
    EXPECT_EQ(exp, host);
    EXPECT_EQ(1, hlsim_counter(HLSIM_COUNTER_CS_SUBMITTED) - cs0);
    EXPECT_EQ(1, hlsim_counter(HLSIM_COUNTER_JOBS) - jobs0)
            << "one queue, one job";
}

TEST_F(gaudi_ipc, free_realloc_same_address)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    std::vector<uint8_t> host(16384), exp(16384);
    remote_buf rb1 = ralloc(16384);
    ASSERT_EQ("ok", rfill(rb1.addr, 16384, 31));
    ASSERT_EQ(UCS_OK, xfer(false, host.data(), 16384, rb1.addr, rb1));
    pattern(exp, 31);
    ASSERT_EQ(exp, host);

    /* keep a second buffer so the chunk stays; free without letting us
     * notice the dereg: the new key must be told apart by identity */
    remote_buf keep = ralloc(16384);
    (void)keep;
    rfree(rb1, false);
    remote_buf rb2 = ralloc(16384);
    if (rb2.addr != rb1.addr) {
        GTEST_SKIP() << "the heap did not reuse the address";
    }
    const uct_gaudi_ipc_rkey_t *k1 = (const uct_gaudi_ipc_rkey_t*)rb1.rkey.rkey;
    const uct_gaudi_ipc_rkey_t *k2 = (const uct_gaudi_ipc_rkey_t*)rb2.rkey.rkey;
    EXPECT_NE(k1->id.uid, k2->id.uid) << "a new allocation, a new identity";

    ASSERT_EQ("ok", rfill(rb2.addr, 16384, 32));
    ASSERT_EQ(UCS_OK, xfer(false, host.data(), 16384, rb2.addr, rb2));
    pattern(exp, 32);
    EXPECT_EQ(exp, host) << "data of the new allocation";
    EXPECT_EQ(1u, cache()->stats.remaps);
    EXPECT_EQ(1u, cache()->count);

    pattern(host, 33);
    ASSERT_EQ(UCS_OK, xfer(true, host.data(), 16384, rb2.addr, rb2));
    EXPECT_EQ(-1, rcheck(rb2.addr, 16384, 33));
}

/* No sweep: only the per-transfer check can notice an invalidation */
class gaudi_ipc_invalidate : public gaudi_ipc {
protected:
    std::map<std::string, std::string> ipc_config() override
    {
        return {{"PEER_CHECK_INTERVAL", "1000s"}};
    }

    remote_buf unpack(const std::string &reply)
    {
        remote_buf rb;
        char rkey[512];
        EXPECT_EQ(1, sscanf(reply.c_str(), "ok %511s", rkey)) << reply;
        std::vector<uint8_t> packed = unhex(rkey);
        EXPECT_EQ(UCS_OK, uct_rkey_unpack(m_uct.ipc_comp, packed.data(),
                                          &rb.rkey));
        m_rbufs.push_back(rb);
        return rb;
    }
};

/*
 * Deregistration with UCT_MD_MEM_DEREG_FLAG_INVALIDATE (docs/ipc.md,
 * "Invalidation"): the completion runs once, before dereg returns; every
 * key of the buffer packed before it (of every registration sharing the
 * export) fails its next transfer, through a cached import and through a
 * new one, before any DMA; the exporter's data is untouched; a key packed
 * after it names the same dma-buf (no new export) under a new token, and
 * works; the new token took the old one's fd number, and the old key,
 * which names that number, stays refused (the token's id differs).
 */
TEST_F(gaudi_ipc_invalidate, stale_keys_fail)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    const size_t len = 65536;
    connect();
    remote_buf rb   = ralloc(len);
    remote_buf rb2  = unpack(m_peer.cmd("reg2 %llx %zx",
                                        (unsigned long long)rb.addr, 4096));
    rb2.addr        = rb.addr;
    unsigned exports0;
    int fds0;
    ASSERT_EQ(2, sscanf(m_peer.cmd("stat").c_str(), "ok %x %x", &exports0,
                        &fds0));

    std::vector<uint8_t> host(len), exp(len);
    ASSERT_EQ("ok", rfill(rb.addr, len, 41));
    ASSERT_EQ(UCS_OK, xfer(false, host.data(), len, rb.addr, rb));
    pattern(exp, 41);
    ASSERT_EQ(exp, host);
    ASSERT_EQ(1u, cache()->count);

    EXPECT_EQ("ok 1 0 0", /* callbacks, dereg status, completion status */
              m_peer.cmd("inval %llx", (unsigned long long)rb.addr))
            << "completion called once, synchronously, with UCS_OK";

    unsigned exports1;
    int fds1;
    ASSERT_EQ(2, sscanf(m_peer.cmd("stat").c_str(), "ok %x %x", &exports1,
                        &fds1));
    EXPECT_EQ(exports0, exports1) << "the dma-buf stays exported";

    /* the cached import: refused before any DMA, and dropped */
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              xfer(false, host.data(), len, rb.addr, rb));
    EXPECT_EQ(1u, cache()->stats.released);
    EXPECT_EQ(0u, cache()->count);
    int64_t maps = hlsim_counter(HLSIM_COUNTER_MAPPINGS);

    /* a new import of a stale key: refused, nothing mapped */
    pattern(host, 42);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR, xfer(true, host.data(), len, rb.addr, rb));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              xfer(true, host.data(), 4096, rb2.addr, rb2))
            << "the other registration's old key shares the export";
    EXPECT_EQ(0u, cache()->count);
    EXPECT_EQ(maps, hlsim_counter(HLSIM_COUNTER_MAPPINGS));
    EXPECT_EQ(-1, rcheck(rb.addr, len, 41)) << "exporter's data changed";

    /* the registration left packs a key of a new generation: the same
     * dma-buf, a new token, in the closed token's fd number */
    remote_buf rb3 = unpack(m_peer.cmd("pack2 %llx",
                                       (unsigned long long)rb.addr));
    rb3.addr = rb.addr;
    const uct_gaudi_ipc_rkey_t *k1 = (const uct_gaudi_ipc_rkey_t*)rb.rkey.rkey;
    const uct_gaudi_ipc_rkey_t *k3 = (const uct_gaudi_ipc_rkey_t*)rb3.rkey.rkey;
    EXPECT_EQ(k1->id.ino, k3->id.ino) << "no new dma-buf export";
    EXPECT_EQ(k1->fd, k3->fd);
    EXPECT_NE(k1->id.uid, k3->id.uid) << "a new key generation";
    ASSERT_EQ(k1->token, k3->token) << "the token number was not reused: "
                                       "this test needs it";
    ASSERT_EQ(UCS_OK, xfer(false, host.data(), 4096, rb3.addr, rb3));
    EXPECT_EQ(0, memcmp(exp.data(), host.data(), 4096));
    maps = hlsim_counter(HLSIM_COUNTER_MAPPINGS);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              xfer(false, host.data(), len, rb.addr, rb))
            << "the stale key stays stale: its token number now holds "
               "another token";
    EXPECT_EQ(maps - 1, hlsim_counter(HLSIM_COUNTER_MAPPINGS))
            << "the stale key took the cached buffer's place and was "
               "refused before op 99";
    EXPECT_EQ(-1, rcheck(rb.addr, len, 41)) << "exporter's data changed";
}

/*
 * A key whose token id is not the id its token holds (the exporter's
 * word, forged or corrupt) is refused at import, nothing mapped; through
 * the fd server too, which answers only the live generation.
 */
TEST_F(gaudi_ipc_invalidate, token_id_mismatch)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    remote_buf rb = ralloc(8192);
    ASSERT_EQ("ok", rfill(rb.addr, 8192, 61));
    uct_gaudi_ipc_rkey_t k = packed_key(rb);
    k.id.uid ^= 1;
    remote_buf forged;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_uct.ipc_comp, &k, &forged.rkey));
    forged.addr = rb.addr;
    m_rbufs.push_back(forged);

    std::vector<uint8_t> host(8192, 0x5a), exp(8192);
    int64_t maps = hlsim_counter(HLSIM_COUNTER_MAPPINGS);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              xfer(false, host.data(), 8192, rb.addr, forged));
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              xfer(true, host.data(), 8192, rb.addr, forged));
    EXPECT_EQ(maps, hlsim_counter(HLSIM_COUNTER_MAPPINGS));
    EXPECT_EQ(0u, cache()->count);
    EXPECT_EQ(std::vector<uint8_t>(8192, 0x5a), host);
    EXPECT_EQ(-1, rcheck(rb.addr, 8192, 61)) << "exporter's data changed";

    /* the genuine key still works */
    ASSERT_EQ(UCS_OK, xfer(false, host.data(), 8192, rb.addr, rb));
    pattern(exp, 61);
    EXPECT_EQ(exp, host);
}

/*
 * What a failed rendezvous send costs the exporter (docs/ipc.md,
 * "Limits"): register, pack, deregister with INVALIDATE, 2000 times. No
 * new dma-buf: every key names the one file, each under a new token; and
 * the keys of the last round are dead while the buffer still exports.
 */
TEST_F(gaudi_ipc_invalidate, no_export_per_revocation)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    remote_buf rb = ralloc(4096);
    unsigned exports0, exports1;
    int fds0, fds1;
    ASSERT_EQ(2, sscanf(m_peer.cmd("stat").c_str(), "ok %x %x", &exports0,
                        &fds0));
    unsigned long files = 0, tokens = 0;
    std::string r = m_peer.cmd("cycle %llx %x", (unsigned long long)rb.addr,
                               2000);
    ASSERT_EQ(2, sscanf(r.c_str(), "ok %lx %lx", &files, &tokens)) << r;
    EXPECT_EQ(1ul, files) << "a dma-buf export per revocation";
    EXPECT_EQ(1999ul, tokens) << "the first round used the key alloc packed";
    ASSERT_EQ(2, sscanf(m_peer.cmd("stat").c_str(), "ok %x %x", &exports1,
                        &fds1));
    EXPECT_EQ(exports0, exports1);
    EXPECT_EQ(fds0 - 1, fds1) << "exporter leaks fds (one fewer: the "
                                 "token of the key alloc packed is closed)";

    /* the revocations shared the buffer's export: its first key is dead
     * too, and a key packed now works */
    ASSERT_EQ("ok", rfill(rb.addr, 4096, 71));
    std::vector<uint8_t> host(4096, 0x5a), exp(4096);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              xfer(false, host.data(), 4096, rb.addr, rb));
    EXPECT_EQ(std::vector<uint8_t>(4096, 0x5a), host);
    remote_buf rb2 = unpack(m_peer.cmd("reg2 %llx %zx",
                                       (unsigned long long)rb.addr, 4096));
    rb2.addr       = rb.addr;
    EXPECT_EQ(packed_key(rb).id.ino, packed_key(rb2).id.ino);
    ASSERT_EQ(UCS_OK, xfer(false, host.data(), 4096, rb2.addr, rb2));
    pattern(exp, 71);
    EXPECT_EQ(exp, host);
}

class gaudi_ipc_socket : public gaudi_ipc {
protected:
    std::map<std::string, std::string> ipc_config() override
    {
        return {{"FD_METHOD", "socket"}, {"PEER_CHECK_INTERVAL", "0"}};
    }
};

TEST_F(gaudi_ipc_socket, scm_rights)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    remote_buf rb = ralloc(50000);
    ASSERT_EQ("ok", rfill(rb.addr, 50000, 41));
    EXPECT_EQ(0, (int)0);
    put_get_roundtrip(50000, 0, 42);

    /* a deregistered buffer is refused by the server */
    remote_buf gone = ralloc(4096);
    rfree(gone, false);
    std::vector<uint8_t> host(4096);
    EXPECT_EQ(UCS_ERR_INVALID_ADDR,
              xfer(false, host.data(), 4096, gone.addr, gone));
}

/* Run @a fn in a forked child (no device use there: fd plumbing only) */
template <typename F> static int in_child(F fn)
{
    pid_t child = fork();
    if (child == 0) {
        _exit(fn());
    }
    int status = -1;
    waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void drop_cap_sys_ptrace()
{
    struct { uint32_t version; int pid; } hdr = {0x20080522, 0};
    struct { uint32_t eff, perm, inh; } data[2];
    syscall(SYS_capget, &hdr, data);
    data[0].eff  &= ~(1u << 19); /* CAP_SYS_PTRACE */
    data[0].perm &= ~(1u << 19);
    syscall(SYS_capset, &hdr, data);
}

/*
 * The fd hand-over keeps the kernel's permission model: pidfd_getfd's
 * refusal (ptrace access mode) is final, the socket applies the same rule,
 * a refusal says "permission denied" (UCS_ERR_REJECTED).
 */
TEST_F(gaudi_ipc, pidfd_eperm_refused)
{
    if (no_export()) {
        GTEST_SKIP() << "no DMA-BUF export (Linux 6.1, Gaudi2): no fd to get";
    }
    remote_buf rb = ralloc(4096);
    ASSERT_EQ("ok", m_peer.cmd("nodump"));
    const uct_gaudi_ipc_rkey_t *key = (const uct_gaudi_ipc_rkey_t*)rb.rkey.rkey;

    /* same user, no CAP_SYS_PTRACE, non-dumpable exporter: refused */
    int rc = in_child([key]() {
        int pidfd, fd = -1, tok = -1;
        drop_cap_sys_ptrace();
        if (uct_gaudi_ipc_pidfd_open(key->pid, &pidfd) != UCS_OK) {
            return 10;
        }
        if (uct_gaudi_ipc_fd_fetch(pidfd, key, UCT_GAUDI_IPC_FD_PIDFD, 1.0,
                                   &fd, &tok) == UCS_OK) {
            return 11; /* not refused here: cannot test */
        }
        for (auto m : {UCT_GAUDI_IPC_FD_AUTO, UCT_GAUDI_IPC_FD_SOCKET}) {
            ucs_status_t st = uct_gaudi_ipc_fd_fetch(pidfd, key, m, 1.0, &fd,
                                                     &tok);
            if (st == UCS_OK) {
                return 12 + m * 2; /* the kernel's refusal bypassed */
            } else if (st != UCS_ERR_REJECTED) {
                return 13 + m * 2;
            }
        }
        return 0;
    });
    if (rc == 11) {
        GTEST_SKIP() << "pidfd_getfd was not refused here";
    }
    EXPECT_EQ(0, rc) << "10: pidfd_open, 12/16: fd handed over (auto/socket),"
                        " 13/17: not 'permission denied'";

    /* with CAP_SYS_PTRACE both ways serve the same files */
    rc = in_child([key]() {
        int pidfd, fd = -1, tok = -1;
        if (uct_gaudi_ipc_pidfd_open(key->pid, &pidfd) != UCS_OK) {
            return 10;
        }
        for (auto m : {UCT_GAUDI_IPC_FD_PIDFD, UCT_GAUDI_IPC_FD_SOCKET}) {
            if ((uct_gaudi_ipc_fd_fetch(pidfd, key, m, 1.0, &fd, &tok) !=
                 UCS_OK) || !uct_gaudi_ipc_fd_check(fd, &key->id) ||
                !uct_gaudi_ipc_token_check(tok, &key->id)) {
                return 11 + m;
            }
            close(fd);
            close(tok);
        }
        return 0;
    });
    EXPECT_EQ(0, rc) << "CAP_SYS_PTRACE: 12 pidfd, 13 socket failed";

    /* another user: refused both ways, as permission denied */
    rc = in_child([key]() {
        int pidfd, fd = -1, tok = -1;
        if ((uct_gaudi_ipc_pidfd_open(key->pid, &pidfd) != UCS_OK) ||
            (setuid(65534) < 0)) {
            return 10;
        }
        for (auto m : {UCT_GAUDI_IPC_FD_AUTO, UCT_GAUDI_IPC_FD_SOCKET}) {
            ucs_status_t st = uct_gaudi_ipc_fd_fetch(pidfd, key, m, 1.0, &fd,
                                                     &tok);
            if (st == UCS_OK) {
                return 11 + m * 2;
            } else if (st != UCS_ERR_REJECTED) {
                return 12 + m * 2;
            }
        }
        return 0;
    });
    EXPECT_EQ(0, rc) << "another user: 11/15 got the fd, 12/16 not "
                        "'permission denied'";
}

/* A user's connections to the exporter's socket (another user who got a
 * key) must not stall its async thread: legitimate importers are served
 * within their timeout */
TEST_F(gaudi_ipc, fd_server_not_blocked_by_other_user)
{
    if (no_export()) {
        GTEST_SKIP() << "no DMA-BUF export (Linux 6.1, Gaudi2): no rkey";
    }
    remote_buf rb = ralloc(4096);
    const uct_gaudi_ipc_rkey_t *key = (const uct_gaudi_ipc_rkey_t*)rb.rkey.rkey;
    int ready[2];
    ASSERT_EQ(0, pipe(ready));

    pid_t attacker = fork();
    if (attacker == 0) {
        struct sockaddr_un sa;
        socklen_t len;
        if (setuid(65534) < 0) {
            _exit(1);
        }
        uct_gaudi_ipc_fd_sockaddr(key, &sa, &len);
        for (int i = 0; i < 40; ++i) {
            int sock = socket(AF_UNIX, SOCK_SEQPACKET, 0);
            ::connect(sock, (struct sockaddr*)&sa, len); /* say nothing */
        }
        (void)!write(ready[1], "r", 1);
        sleep(10);
        _exit(0);
    }
    char c;
    ASSERT_EQ(1, read(ready[0], &c, 1));

    int pidfd, fd = -1, tok = -1;
    ASSERT_EQ(UCS_OK, uct_gaudi_ipc_pidfd_open(key->pid, &pidfd));
    double t0 = ucs_get_accurate_time();
    EXPECT_EQ(UCS_OK, uct_gaudi_ipc_fd_fetch(pidfd, key,
                                             UCT_GAUDI_IPC_FD_SOCKET, 1.0,
                                             &fd, &tok));
    EXPECT_LT(ucs_get_accurate_time() - t0, 1.0);
    EXPECT_TRUE((fd >= 0) && uct_gaudi_ipc_fd_check(fd, &key->id));
    EXPECT_TRUE((tok >= 0) && uct_gaudi_ipc_token_check(tok, &key->id));
    if (fd >= 0) {
        close(fd);
        close(tok);
    }
    close(pidfd);
    kill(attacker, SIGKILL);
    waitpid(attacker, NULL, 0);
    close(ready[0]);
    close(ready[1]);
}

/* Another user binds the names an exporter would have used if they were
 * derived from its pid alone: the exporter still starts and serves */
TEST_F(gaudi_ipc, fd_server_name_squat)
{
    if (no_export()) {
        GTEST_SKIP() << "no DMA-BUF export (Linux 6.1, Gaudi2): no rkey";
    }
    int ready[2];
    ASSERT_EQ(0, pipe(ready));
    FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "r");
    ASSERT_TRUE(f != NULL);
    int last = 0;
    ASSERT_EQ(1, fscanf(f, "%d", &last));
    fclose(f);

    pid_t squatter = fork();
    if (squatter == 0) {
        uint64_t pidns = uct_gaudi_ipc_pidns();
        if (setuid(65534) < 0) {
            _exit(1);
        }
        for (int pid = last + 1; pid < last + 400; ++pid) {
            struct sockaddr_un sa = {};
            sa.sun_family = AF_UNIX;
            int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1,
                             "ucx-gaudi-ipc.%llu.%d",
                             (unsigned long long)pidns, pid);
            int sock = socket(AF_UNIX, SOCK_SEQPACKET, 0);
            bind(sock, (struct sockaddr*)&sa,
                 offsetof(struct sockaddr_un, sun_path) + 1 + n);
            listen(sock, 1);
        }
        (void)!write(ready[1], "r", 1);
        sleep(20);
        _exit(0);
    }
    char c;
    ASSERT_EQ(1, read(ready[0], &c, 1));

    peer other;
    bool started = other.start("2");
    kill(squatter, SIGKILL);
    waitpid(squatter, NULL, 0);
    close(ready[0]);
    close(ready[1]);
    ASSERT_TRUE(started) << "the exporter did not start";
    ASSERT_LT(other.pid, last + 400) << "pids moved too fast to test";

    remote_buf rb = ralloc_from(other, 4096);
    const uct_gaudi_ipc_rkey_t *key = (const uct_gaudi_ipc_rkey_t*)rb.rkey.rkey;
    int pidfd, fd = -1, tok = -1;
    ASSERT_EQ(UCS_OK, uct_gaudi_ipc_pidfd_open(key->pid, &pidfd));
    EXPECT_EQ(UCS_OK, uct_gaudi_ipc_fd_fetch(pidfd, key,
                                             UCT_GAUDI_IPC_FD_SOCKET, 1.0,
                                             &fd, &tok));
    EXPECT_TRUE((fd >= 0) && uct_gaudi_ipc_fd_check(fd, &key->id));
    EXPECT_TRUE((tok >= 0) && uct_gaudi_ipc_token_check(tok, &key->id));
    if (fd >= 0) {
        close(fd);
        close(tok);
    }
    close(pidfd);
    uct_rkey_release(m_uct.ipc_comp, &rb.rkey);
    m_rbufs.pop_back();
    other.stop();
}

TEST_F(gaudi_ipc, peer_killed_mid_transfer)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    const size_t len = 32ul << 20;
    remote_buf rb = ralloc(len);
    void *local;
    ASSERT_EQ(UCS_OK, uct_gaudi_mem_alloc(len, &local));

    /* a transfer in flight when the exporter dies */
    uct_iov_t iov = {local, len, UCT_MEM_HANDLE_NULL, len, 1};
    uct_completion_t comp = {uct_side::comp_cb, 1, UCS_OK};
    ucs_status_t status = uct_ep_get_zcopy(m_ep, &iov, 1, rb.addr,
                                           rb.rkey.rkey, &comp);
    ASSERT_EQ(UCS_INPROGRESS, status);
    m_peer.kill_now();
    status = m_uct.wait(m_uct.ipc_if, status, &comp);
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, status) << "error completion";

    /* new transfers fail at once, no hang */
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, xfer(false, local, 4096, rb.addr, rb));
    EXPECT_EQ(0u, cache()->count) << "the dead peer's imports are unmapped";
    uct_gaudi_mem_free(local);
}

/*
 * A rank restarts while its peer keeps running. Our import of the dead
 * exporter's buffer keeps its device context alive, so the restarted
 * exporter's open gets EBUSY (facts 4.1) until our progress notices the
 * exit and drops the import; its open waits for that (UCX_GAUDI_DEVICE
 * names the device) and the transfers go on with the new process.
 */
/*
 * Completions under peer death: every zcopy posted on the ep completes,
 * and every pending request is either dispatched or handed back by the
 * purge. The exporter dies with the engine's ring full and requests
 * pending; then either progress alone drains it all, or the ep is
 * flushed with UCT_FLUSH_FLAG_CANCEL, purged and destroyed.
 */
class gaudi_ipc_peer_death : public gaudi_ipc {
public:
    struct op {
        uct_completion_t   comp;
        uct_pending_req_t  pend;
        gaudi_ipc_peer_death *test;
        bool               posted, done, purged;
        ucs_status_t       status;
    };

    static const size_t len = 1ul << 20;
    std::vector<op>     m_ops;

    /* one CS per copy: the ring fills after max_inflight posts */
    std::map<std::string, std::string> ipc_config() override
    {
        return {{"PEER_CHECK_INTERVAL", "0"}, {"MAX_BATCH", "1"}};
    }

    remote_buf          m_rb;
    void                *m_local = NULL;
    size_t              m_errors = 0;

    static void op_done(uct_completion_t *comp)
    {
        op *o = ucs_container_of(comp, op, comp);
        o->done   = true;
        o->status = comp->status;
        o->test->m_errors += (comp->status != UCS_OK);
    }

    /* post op @a o: UCS_ERR_NO_RESOURCE, or it is posted or failed */
    ucs_status_t post(op &o)
    {
        uct_iov_t iov = {m_local, len, UCT_MEM_HANDLE_NULL, len, 1};
        ucs_status_t status;

        o.comp   = {op_done, 1, UCS_OK};
        status   = uct_ep_get_zcopy(m_ep, &iov, 1, m_rb.addr, m_rb.rkey.rkey,
                                    &o.comp);
        if (status == UCS_ERR_NO_RESOURCE) {
            return status;
        }
        o.posted = true;
        if (status != UCS_INPROGRESS) {   /* completed or failed at once */
            o.done   = true;
            o.status = status;
            m_errors += (status != UCS_OK);
        }
        return UCS_OK;
    }

    static ucs_status_t pending_cb(uct_pending_req_t *self)
    {
        op *o = ucs_container_of(self, op, pend);
        return o->test->post(*o);
    }

    static void purge_cb(uct_pending_req_t *self, void *arg)
    {
        ucs_container_of(self, op, pend)->purged = true;
    }

    /* fill the ring, then queue @a npending requests */
    void load(size_t npending)
    {
        connect();
        m_rb = ralloc(len);
        ASSERT_EQ(UCS_OK, uct_gaudi_mem_alloc(len, &m_local));
        m_ops.resize(4096 + npending);
        size_t i, queued = 0;
        for (i = 0; i < m_ops.size(); ++i) {
            m_ops[i] = {};
            m_ops[i].test = this;
            if (post(m_ops[i]) == UCS_ERR_NO_RESOURCE) {
                break;
            }
        }
        ASSERT_LT(i, 4096u) << "the engine's ring never filled";
        for (; (i < m_ops.size()) && (queued < npending); ++i) {
            m_ops[i].test      = this;
            m_ops[i].pend.func = pending_cb;
            ucs_status_t status = uct_ep_pending_add(m_ep, &m_ops[i].pend,
                                                     0);
            if (status == UCS_ERR_BUSY) {   /* room again: post it */
                ASSERT_EQ(UCS_OK, post(m_ops[i]));
            } else {
                ASSERT_EQ(UCS_OK, status);
                ++queued;
            }
        }
        m_ops.resize(i);
        ASSERT_GT(queued, 0u);
    }

    /* every op is done, or was never posted and came back by the purge */
    void check_all_accounted()
    {
        size_t posted = 0, done = 0, purged = 0;
        for (auto &o : m_ops) {
            posted += o.posted;
            done   += o.done;
            purged += o.purged;
            EXPECT_TRUE(o.done || o.purged) << "op " << (&o - &m_ops[0])
                                            << " lost";
            EXPECT_FALSE(o.done && o.purged);
            EXPECT_EQ(o.posted, o.done);
        }
        EXPECT_EQ(posted, done) << "completions of posted zcopies";
        EXPECT_EQ(m_ops.size(), done + purged);
        EXPECT_GT(m_errors, 0u) << "the peer's death failed no transfer";
    }

    /* kill the exporter with the ring full, then flush(CANCEL) the ep,
     * purge its pending requests (before or after) and destroy it */
    void kill_and_cancel(bool purge_first)
    {
        uct_completion_t flush = {uct_side::comp_cb, 1, UCS_OK};
        ucs_status_t status;

        load(16);
        m_peer.kill_now();
        if (purge_first) {
            uct_ep_pending_purge(m_ep, purge_cb, NULL);
        }
        status = uct_ep_flush(m_ep, UCT_FLUSH_FLAG_CANCEL, &flush);
        ASSERT_TRUE((status == UCS_OK) || (status == UCS_INPROGRESS))
                << ucs_status_string(status);
        if (!purge_first) {
            uct_ep_pending_purge(m_ep, purge_cb, NULL);
        }
        m_uct.wait(m_uct.ipc_if, status, &flush);
        EXPECT_EQ(0, flush.count) << "flush(CANCEL) did not complete";
        uct_ep_destroy(m_ep);
        m_ep = NULL;
        check_all_accounted();
    }

    void TearDown() override
    {
        if (m_local != NULL) {
            uct_gaudi_mem_free(m_local);
        }
        gaudi_ipc::TearDown();
    }
};

TEST_F(gaudi_ipc_peer_death, progress_completes_every_zcopy)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    load(16);
    m_peer.kill_now();
    for (int i = 0; i < 20000000; ++i) {
        bool idle = true;
        for (auto &o : m_ops) {
            idle = idle && o.done;
        }
        if (idle) {
            break;
        }
        uct_iface_progress(m_uct.ipc_if);
    }
    check_all_accounted();
}

TEST_F(gaudi_ipc_peer_death, flush_cancel_completes_every_zcopy)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    /* UCP's order (ucp_worker_discard_uct_ep): purge, then flush(CANCEL) */
    kill_and_cancel(true);
}

TEST_F(gaudi_ipc_peer_death, cancel_leaves_pending_to_the_purge)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    /* flush(CANCEL) first: it covers the posted copies; the pending
     * requests stay for the owner's purge, never dropped unseen */
    kill_and_cancel(false);
}

TEST_F(gaudi_ipc, exporter_restart)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    const size_t len = 1ul << 20;
    std::vector<uint8_t> host(len), exp(len);

    connect();
    remote_buf rb = ralloc(len);
    ASSERT_EQ("ok", rfill(rb.addr, len, 3));
    ASSERT_EQ(UCS_OK, xfer(false, host.data(), len, rb.addr, rb));
    ASSERT_EQ(1u, cache()->count);

    m_peer.kill_now();
    m_peer.stop();
    uct_ep_destroy(m_ep);
    m_ep = NULL;
    /* the import holds the dead exporter's device */
    EXPECT_EQ(-1, open("/dev/accel/accel1", O_RDWR | O_CLOEXEC));
    EXPECT_EQ(EBUSY, errno);

    /* we progress only once the new exporter surely tried its open */
    ucs_time_t start = ucs_get_time();
    ASSERT_TRUE(m_peer.spawn());
    ASSERT_TRUE(m_peer.wait_ready([this, start]() {
        if (ucs_time_to_msec(ucs_get_time() - start) > 700.0) {
            uct_iface_progress(m_uct.ipc_if);
        }
    })) << "the restarted exporter could not open its device";
    EXPECT_EQ(0u, cache()->count) << "the dead exporter's import is gone";

    connect();
    remote_buf rb2 = ralloc(len);
    ASSERT_EQ("ok", rfill(rb2.addr, len, 4));
    ASSERT_EQ(UCS_OK, xfer(false, host.data(), len, rb2.addr, rb2));
    pattern(exp, 4);
    EXPECT_EQ(0, memcmp(exp.data(), host.data(), len)) << "new exporter data";
    rfree(rb2);
}

/*
 * Peer failure as UCP's error handling uses it: both transports offer
 * ERRHANDLE_PEER_FAILURE and ep_check; an exited peer is reported once
 * through the iface's error handler (ep_check, or the first operation
 * that finds it gone), with CONNECTION_RESET.
 */
typedef std::vector<std::pair<uct_ep_h, ucs_status_t>> ep_errors_t;

static ucs_status_t record_ep_error(void *arg, uct_ep_h ep,
                                    ucs_status_t status)
{
    ((ep_errors_t*)arg)->push_back({ep, status});
    return UCS_OK;
}

class gaudi_ipc_errhandle : public gaudi_ipc {
public:
    ep_errors_t m_errors;

    void SetUp() override
    {
        gaudi_ipc::SetUp();
        m_uct.close_ipc_iface();
        m_uct.ipc_if = m_uct.open_iface(m_uct.ipc_md, "gaudi_ipc",
                                        ipc_config(), record_ep_error,
                                        &m_errors);
        ASSERT_TRUE(m_uct.ipc_if != NULL);
    }

    void progress(int n = 1000)
    {
        for (int i = 0; (i < n) && m_errors.empty(); ++i) {
            uct_worker_progress(m_uct.worker);
        }
    }
};

TEST_F(gaudi_ipc_errhandle, ep_check_reports_exited_peer)
{
    const uint64_t need = UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE |
                          UCT_IFACE_FLAG_EP_CHECK;
    uct_iface_attr_t attr;
    ASSERT_EQ(UCS_OK, uct_iface_query(m_uct.ipc_if, &attr));
    EXPECT_EQ(need, attr.cap.flags & need) << "gaudi_ipc";
    ASSERT_EQ(UCS_OK, uct_iface_query(m_uct.copy_if, &attr));
    EXPECT_EQ(need, attr.cap.flags & need) << "gaudi_cpy";
    EXPECT_EQ(UCS_OK, uct_ep_check(m_uct.copy_ep, 0, NULL));

    connect();
    EXPECT_EQ(UCS_OK, uct_ep_check(m_ep, 0, NULL));
    progress();
    EXPECT_TRUE(m_errors.empty()) << "a live peer reported as failed";

    m_peer.kill_now();
    EXPECT_EQ(UCS_OK, uct_ep_check(m_ep, 0, NULL));
    progress();
    ASSERT_EQ(1u, m_errors.size());
    EXPECT_EQ(m_ep, m_errors[0].first);
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, m_errors[0].second);
}

TEST_F(gaudi_ipc_errhandle, operation_reports_exited_peer)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    connect();
    remote_buf rb = ralloc(8192);
    std::vector<uint8_t> host(8192);
    ASSERT_EQ(UCS_OK, xfer(false, host.data(), 8192, rb.addr, rb));
    m_peer.kill_now();

    EXPECT_EQ(UCS_ERR_CONNECTION_RESET,
              uct_ep_get_short(m_ep, host.data(), 64, rb.addr,
                               rb.rkey.rkey));
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET,
              xfer(true, host.data(), 8192, rb.addr, rb));
    progress();
    ASSERT_EQ(1u, m_errors.size()) << "reported once";
    EXPECT_EQ(m_ep, m_errors[0].first);
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, m_errors[0].second);
}

TEST_F(gaudi_ipc, no_leaks)
{
    if (upstream_flavour()) {
        GTEST_SKIP() << "no op 99 in the upstream flavour";
    }
    unsigned exports0, fds0, exports1, fds1;
    ASSERT_EQ(2, sscanf(m_peer.cmd("stat").c_str(), "ok %x %x", &exports0,
                        &fds0));
    /* our side: the ipc iface is reopened around the transfers */
    m_uct.close_ipc_iface();
    int my_fds0    = open_fds();
    int64_t maps0  = hlsim_counter(HLSIM_COUNTER_MAPPINGS);
    m_uct.ipc_if   = m_uct.open_iface(m_uct.ipc_md, "gaudi_ipc",
                                      ipc_config());
    ASSERT_TRUE(m_uct.ipc_if != NULL);
    connect();

    std::vector<uint8_t> host(100000);
    for (int i = 0; i < 5; ++i) {
        remote_buf rb = ralloc(100000);
        ASSERT_EQ(UCS_OK, xfer(false, host.data(), 100000, rb.addr, rb));
        ASSERT_EQ(UCS_OK, xfer(true, host.data(), 100000, rb.addr, rb));
        rfree(rb);
    }
    EXPECT_GT(hlsim_counter(HLSIM_COUNTER_MAPPINGS), maps0);

    uct_ep_destroy(m_ep);
    m_ep = NULL;
    m_uct.close_ipc_iface();
    EXPECT_EQ(my_fds0, open_fds()) << "importer fds";
    EXPECT_EQ(maps0, hlsim_counter(HLSIM_COUNTER_MAPPINGS))
            << "importer op 99 mappings";

    ASSERT_EQ(2, sscanf(m_peer.cmd("stat").c_str(), "ok %x %x", &exports1,
                        &fds1));
    EXPECT_EQ(exports0, exports1) << "exporter exports";
    EXPECT_EQ(fds0, fds1) << "exporter fds";
}

/* UCX 1.22 can close the MD with a registration it lost track of (a user
 * memh that got an rcache parent): close releases it, so the export fd,
 * and with it the device memory, are not kept alive */
TEST_F(gaudi_ipc, md_close_releases_leftover_registrations)
{
    if (no_export()) {
        GTEST_SKIP() << "the driver does not export DMA-BUF";
    }
    unsigned exports0 = uct_gaudi_ipc_export_count();
    int fds0          = open_fds();
    uct_md_h md       = m_uct.open_md(m_uct.ipc_comp, "gaudi_ipc");
    ASSERT_TRUE(md != NULL);

    void *ptr;
    uct_mem_h memh1, memh2;
    ASSERT_EQ(UCS_OK, uct_gaudi_mem_alloc(1 << 20, &ptr));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(md, ptr, 1 << 20,
                                     UCT_MD_MEM_ACCESS_ALL, &memh1));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(md, ptr, 4096,
                                     UCT_MD_MEM_ACCESS_ALL, &memh2));
    EXPECT_EQ(exports0 + 1, uct_gaudi_ipc_export_count());
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, memh2));
    EXPECT_EQ(exports0 + 1, uct_gaudi_ipc_export_count()) << "memh1 holds it";

    uct_md_close(md);   /* memh1 never deregistered */
    EXPECT_EQ(exports0, uct_gaudi_ipc_export_count());
    EXPECT_EQ(UCS_OK, uct_gaudi_mem_free(ptr));
    EXPECT_EQ(fds0, open_fds()) << "export fd left open";
}

/* UCX's own tests in one process: a buffer exported by one entity's
 * gaudi_ipc MD, imported by another's iface and freed while imported. Its
 * device chunk cannot go yet (the driver keeps an exported mapping, facts
 * 3.3). The exporter's MD closes first, then the importer's iface and MDs:
 * once the last MD is closed the chunk is released, and the process is
 * back at its fds and driver allocations from before, though the public
 * API's heap lives on */
TEST_F(gaudi_ipc, last_md_close_releases_freed_chunk)
{
    if (upstream_flavour() || no_export()) {
        GTEST_SKIP() << "no import of a DMA-BUF here (op 99 / export)";
    }
    const size_t len = 1 << 20;
    uct_gaudi_counters_t c0, c1;
    void *ptr;

    m_uct.fini();
    int fds0 = open_fds();
    ASSERT_EQ(UCS_OK, uct_gaudi_counters_get(&c0));
    ASSERT_TRUE(m_uct.init(ipc_config()));

    /* an ep of the ipc iface to itself, as UCX's tests connect */
    uct_iface_attr_t attr;
    ASSERT_EQ(UCS_OK, uct_iface_query(m_uct.ipc_if, &attr));
    std::vector<uint8_t> dev(attr.device_addr_len), ifa(attr.iface_addr_len);
    ASSERT_EQ(UCS_OK, uct_iface_get_device_address(m_uct.ipc_if,
                                                   (uct_device_addr_t*)
                                                   dev.data()));
    ASSERT_EQ(UCS_OK, uct_iface_get_address(m_uct.ipc_if,
                                            (uct_iface_addr_t*)ifa.data()));
    uct_ep_params_t p;
    p.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                   UCT_EP_PARAM_FIELD_IFACE_ADDR;
    p.iface      = m_uct.ipc_if;
    p.dev_addr   = (uct_device_addr_t*)dev.data();
    p.iface_addr = (uct_iface_addr_t*)ifa.data();
    ASSERT_EQ(UCS_OK, uct_ep_create(&p, &m_ep));

    ASSERT_EQ(UCS_OK, uct_gaudi_mem_alloc(len, &ptr));
    ASSERT_EQ(UCS_OK, m_uct.fill(ptr, len, 7));
    uct_mem_h memh;
    uint8_t packed[sizeof(uct_gaudi_ipc_rkey_t)];
    uct_rkey_bundle_t rkey;
    /* exported by an MD of its own, as by UCX's receiver entity */
    uct_md_h exp_md = m_uct.open_md(m_uct.ipc_comp, "gaudi_ipc");
    ASSERT_TRUE(exp_md != NULL);
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(exp_md, ptr, len,
                                     UCT_MD_MEM_ACCESS_ALL, &memh));
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(exp_md, memh, packed));
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_uct.ipc_comp, packed, &rkey));

    /* the import: data read back through it */
    std::vector<uint8_t> got(4096), exp(len);
    ASSERT_EQ(UCS_OK, uct_ep_get_short(m_ep, got.data(), got.size(),
                                       (uintptr_t)ptr, rkey.rkey));
    pattern(exp, 7);
    EXPECT_EQ(0, memcmp(exp.data(), got.data(), got.size()));

    uct_rkey_release(m_uct.ipc_comp, &rkey);
    ASSERT_EQ(UCS_OK, uct_md_mem_dereg(exp_md, memh));
    ASSERT_EQ(UCS_OK, uct_gaudi_mem_free(ptr));
    ASSERT_EQ(UCS_OK, uct_gaudi_counters_get(&c1));
    EXPECT_EQ(c0.alloc_bytes, c1.alloc_bytes);
    /* a driver chunk of Gaudi2/3 waits; Gaudi1's DRAM range and
     * SynapseAI's chunks are never released to the driver here */
    const bool deferred = (c1.deferred_chunks == 1);
    uct_md_close(exp_md);    /* the exporter's entity goes first */

    uct_ep_destroy(m_ep);
    m_ep = NULL;
    /* gaudi_cpy's objects (for the fill) first: UCX's gaudi_ipc suites
     * have none */
    uct_ep_destroy(m_uct.copy_ep);
    uct_iface_close(m_uct.copy_if);
    uct_md_close(m_uct.copy_md);
    m_uct.copy_ep = NULL;
    m_uct.copy_if = NULL;
    m_uct.copy_md = NULL;
    ASSERT_EQ(UCS_OK, uct_gaudi_counters_get(&c1));
    EXPECT_EQ(deferred ? 1u : 0u, c1.deferred_chunks)
            << "the import still keeps it";

    m_uct.fini();           /* the importer's iface, then the last MD */
    ASSERT_EQ(UCS_OK, uct_gaudi_counters_get(&c1));
    EXPECT_EQ(0u, c1.deferred_chunks) << "freed chunk still waiting";
    EXPECT_EQ(c0.dmabuf_open, c1.dmabuf_open) << "exports kept open";
    if (deferred) {
        /* (an exported SynapseAI chunk stays reserved, with its export:
         * gaudi_mem.h) */
        EXPECT_EQ(c0.chunk_count, c1.chunk_count) << "driver allocations";
        EXPECT_EQ(fds0, open_fds()) << "fds after the last MD closed";
    }
}

TEST_F(gaudi_ipc, upstream_unreachable)
{
    if (!upstream_flavour()) {
        EXPECT_TRUE(reachable());
        return;
    }
    /* no op 99: never reachable, and a forced transfer fails cleanly */
    EXPECT_FALSE(reachable());
    if (no_export()) {
        /* registration succeeds without export; its key is unreachable
         * here, quietly, so UCP uses another transport */
        std::string r = m_peer.cmd("alloc %zx", (size_t)4096);
        unsigned long long addr;
        char rkey[512];
        ASSERT_EQ(2, sscanf(r.c_str(), "ok %llx %511s", &addr, rkey)) << r;
        std::vector<uint8_t> packed = unhex(rkey);
        const uct_gaudi_ipc_rkey_t *key =
                (const uct_gaudi_ipc_rkey_t*)packed.data();
        EXPECT_EQ(UCT_GAUDI_IPC_RKEY_FLAG_NO_EXPORT, key->flags);
        EXPECT_EQ(-1, key->fd);
        EXPECT_EQ(addr, key->base);
        uct_rkey_bundle_t bundle;
        gaudi_gtest::log_capture log(UCS_LOG_LEVEL_DIAG);
        EXPECT_EQ(UCS_ERR_UNREACHABLE,
                  uct_rkey_unpack(m_uct.ipc_comp, packed.data(), &bundle));
        EXPECT_EQ(0u, log.count(UCS_LOG_LEVEL_WARN)) << log.dump();
        return;
    }
    connect();
    remote_buf rb = ralloc(4096);
    std::vector<uint8_t> host(4096);
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, xfer(false, host.data(), 4096, rb.addr,
                                        rb));
}


/* ---- bandwidth benchmark (bench/ipc/run.sh) ---- */

static double now_sec()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* put/get zcopy bandwidth of @a len bytes, @a depth in flight, against a
 * memcpy of the same size in the same run */
static int bench_main(size_t len, int iters, int depth)
{
    struct bench : public gaudi_ipc {
        void TestBody() override {}
        using gaudi_ipc::SetUp;
        using gaudi_ipc::TearDown;
    } b;
    b.SetUp();
    if (::testing::Test::HasFatalFailure()) {
        return 1;
    }
    if (upstream_flavour()) {
        printf("gaudi_ipc unreachable (upstream flavour): nothing to measure\n");
        b.TearDown();
        return 0;
    }
    b.connect();
    remote_buf rb = b.ralloc(len);
    void *local;
    if (uct_gaudi_mem_alloc(len, &local) != UCS_OK) {
        return 1;
    }

    std::vector<uct_completion_t> comps(depth);
    double bw[2];
    for (int put = 0; put < 2; ++put) {
        for (int warm = 0; warm < 2; ++warm) {
            int n      = warm ? iters : 2;
            double t0  = now_sec();
            int posted = 0;
            while (posted < n) {
                for (int d = 0; (d < depth) && (posted < n); ++d, ++posted) {
                    uct_iov_t iov = {local, len, UCT_MEM_HANDLE_NULL, len, 1};
                    comps[d] = {uct_side::comp_cb, 1, UCS_OK};
                    ucs_status_t st;
                    while ((st = put ?
                            uct_ep_put_zcopy(b.m_ep, &iov, 1, rb.addr,
                                             rb.rkey.rkey, &comps[d]) :
                            uct_ep_get_zcopy(b.m_ep, &iov, 1, rb.addr,
                                             rb.rkey.rkey, &comps[d])) ==
                           UCS_ERR_NO_RESOURCE) {
                        uct_iface_progress(b.m_uct.ipc_if);
                    }
                    if (st != UCS_INPROGRESS) {
                        comps[d].count = 0;
                    }
                }
                for (int d = 0; d < depth; ++d) {
                    while (comps[d].count > 0) {
                        uct_iface_progress(b.m_uct.ipc_if);
                    }
                }
            }
            bw[put] = (double)len * n / (now_sec() - t0);
        }
    }

    std::vector<uint8_t> src(len, 1), dst(len, 0);
    memcpy(dst.data(), src.data(), len); /* fault the pages in */
    double t0 = now_sec();
    for (int i = 0; i < iters; ++i) {
        src[i % len] = (uint8_t)i;
        memcpy(dst.data(), src.data(), len);
    }
    double mbw = (double)len * iters / (now_sec() - t0);

    printf("size %zu iters %d depth %d\n", len, iters, depth);
    printf("memcpy     %10.1f MB/s\n", mbw / 1e6);
    printf("get_zcopy  %10.1f MB/s  ratio %.2f\n", bw[0] / 1e6, bw[0] / mbw);
    printf("put_zcopy  %10.1f MB/s  ratio %.2f\n", bw[1] / 1e6, bw[1] / mbw);

    uct_gaudi_mem_free(local);
    b.TearDown();
    return 0;
}


int main(int argc, char **argv)
{
    if ((argc > 1) && !strcmp(argv[1], "--exporter")) {
        return exporter_main();
    }
    setenv("UCX_GAUDI_DEVICE", "0", 1);
    if ((argc > 1) && !strcmp(argv[1], "--bench")) {
        return bench_main((argc > 2) ? strtoul(argv[2], NULL, 0) : 16 << 20,
                          (argc > 3) ? atoi(argv[3]) : 40,
                          (argc > 4) ? atoi(argv[4]) : 8);
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}

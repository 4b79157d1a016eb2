/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * GPUDirect RDMA at the UCT level, on the emulated NIC (docs/gdr.md): the
 * NIC registers Gaudi memory by the dma-buf fd and offset gaudi_copy's
 * mem_query gives (as UCP does on UCX >= 1.14), and moves it with put and
 * get zcopy through its own engine (an endpoint to its own interface),
 * never through the module's copies. Data written and read back byte by
 * byte through the module's public API; the NIC's counters show the bytes
 * it moved from and to dma-buf registrations. Negative cases: Gaudi
 * memory without a dma-buf, a file that is not a dma-buf, a range past
 * the dma-buf, a wrong offset (the wrong bytes move: caught by the data
 * check), remote access outside a key and with a deregistered key.
 * Prints PASS/FAIL lines and "N passed, N failed".
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "nicsim.h"
#include <hlsim.h>

#include <uct_gaudi_ucx_features.h>
#include <uct/api/uct.h>
#include <uct/api/v2/uct_v2.h>
#include <uct/base/uct_component.h>
#include <uct/gaudi/api/uct_gaudi.h>
#include <ucs/async/async.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIZE (4ul << 20)   /* each buffer */
#define PAGE 4096ul

static unsigned npass, nfail;

static int check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
    ok ? ++npass : ++nfail;
    return ok;
}

typedef struct {
    uct_component_h    comp;
    uct_md_h           md;
} md_t;

static int md_open(const char *name, md_t *md)
{
    uct_component_h *components;
    uct_md_config_t *config;
    unsigned i, num;
    int found = 0;

    if (uct_query_components(&components, &num) != UCS_OK) {
        return 0;
    }
    for (i = 0; (i < num) && !found; ++i) {
        if (strcmp(components[i]->name, name) ||
            (uct_md_config_read(components[i], NULL, NULL, &config) !=
             UCS_OK)) {
            continue;
        }
        md->comp = components[i];
        found    = (uct_md_open(components[i], name, config, &md->md) ==
                    UCS_OK);
        uct_config_release(config);
    }
    uct_release_component_list(components);
    return found;
}

/* what UCP does for a network MD: the dma-buf of the range from the MD
 * that provides it */
static int dmabuf_of(uct_md_h gaudi_md, void *addr, size_t len, int *fd,
                     uint64_t *offset)
{
    uct_md_mem_attr_t attr;

    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCT_MD_MEM_ATTR_FIELD_DMABUF_FD |
                      UCT_MD_MEM_ATTR_FIELD_DMABUF_OFFSET;
    if ((uct_md_mem_query(gaudi_md, addr, len, &attr) != UCS_OK) ||
        (attr.dmabuf_fd < 0)) {
        return 0;
    }
    *fd     = attr.dmabuf_fd;
    *offset = attr.dmabuf_offset;
    return 1;
}

static ucs_status_t reg(uct_md_h md, void *addr, size_t len, int fd,
                        uint64_t offset, int gaudi, uct_mem_h *memh)
{
    uct_md_mem_reg_params_t params;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_MD_MEM_REG_FIELD_FLAGS;
    params.flags      = UCT_MD_MEM_ACCESS_ALL | UCT_MD_MEM_FLAG_HIDE_ERRORS;
#if UCT_GAUDI_HAVE_MEM_REG_MEM_TYPE
    if (gaudi) {
        params.field_mask |= UCT_MD_MEM_REG_FIELD_MEM_TYPE;
        params.mem_type    = uct_gaudi_memory_type();
    }
#else
    (void)gaudi;   /* UCX 1.16 passes no memory type */
#endif
    if (fd >= 0) {
        params.field_mask   |= UCT_MD_MEM_REG_FIELD_DMABUF_FD |
                               UCT_MD_MEM_REG_FIELD_DMABUF_OFFSET;
        params.dmabuf_fd     = fd;
        params.dmabuf_offset = offset;
    }
    return uct_md_mem_reg_v2(md, addr, len, &params, memh);
}

static int unpack(md_t *md, uct_mem_h memh, void *addr, size_t len,
                  uct_rkey_bundle_t *rkey)
{
    uint8_t packed[256];

    return (uct_md_mkey_pack(md->md, memh, packed) == UCS_OK) &&
           (uct_rkey_unpack(md->comp, packed, rkey) == UCS_OK);
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        p[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 12));
    }
}

static ucs_status_t rma(uct_ep_h ep, int put, void *local, size_t len,
                        uct_mem_h memh, void *remote, uct_rkey_t rkey)
{
    uct_iov_t iov = {.buffer = local, .length = len, .memh = memh,
                     .stride = 0, .count = 1};

    return put ? uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)remote, rkey,
                                  NULL) :
                 uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)remote, rkey,
                                  NULL);
}

static uint64_t counter(size_t field)
{
    uct_nicsim_counters_t c;

    uct_nicsim_counters_get(&c);
    return ((uint64_t*)&c)[field / sizeof(uint64_t)];
}

#define COUNTER(_f) counter(offsetof(uct_nicsim_counters_t, _f))

static int64_t attachments(void)
{
    int64_t (*get)(hlsim_counter_t, int) = (int64_t (*)(hlsim_counter_t,
                                                        int))
            dlsym(RTLD_DEFAULT, "hlsim_get_counter");

    return (get == NULL) ? -1 : get(HLSIM_COUNTER_DMABUF_ATTACHMENTS, 0);
}

int main(void)
{
    uct_iface_params_t iface_params;
    uct_iface_config_t *iface_config;
    uct_ep_params_t ep_params;
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_iface_h iface;
    uct_ep_h ep;
    md_t gmd, nic;
    uint8_t *host, *check_buf;
    void *g1, *g2;
    uct_mem_h hmemh, g1memh, g2memh, bad;
    uct_rkey_bundle_t g1key, g2key;
    uint8_t dev_addr[64], iface_addr[64];
    uint64_t off1 = 0, off2 = 0, rd0, wr0;
    int fd1 = -1, fd2 = -1, nul;
    char what[160];

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!check(md_open("gaudi_copy", &gmd) && md_open("nicsim", &nic),
               "gaudi_copy and nicsim MDs open")) {
        goto out;
    }

    host      = aligned_alloc(PAGE, SIZE);
    check_buf = aligned_alloc(PAGE, SIZE);
    check((host != NULL) && (check_buf != NULL) &&
          (uct_gaudi_mem_alloc(SIZE, &g1) == UCS_OK) &&
          (uct_gaudi_mem_alloc(SIZE, &g2) == UCS_OK),
          "host and two Gaudi buffers allocated (module memory)");

    /* registrations: host memory as is; Gaudi memory by dma-buf only */
    check(reg(nic.md, host, SIZE, -1, 0, 0, &hmemh) == UCS_OK,
          "host buffer registers");
    check(reg(nic.md, g1, SIZE, -1, 0, 1, &bad) != UCS_OK,
          "Gaudi memory without a dma-buf is refused");
    check(reg(nic.md, g1, SIZE, -1, 0, 0, &bad) != UCS_OK,
          "a Gaudi pointer as host memory is refused (nothing mapped)");
    check(dmabuf_of(gmd.md, g1, SIZE, &fd1, &off1) &&
          dmabuf_of(gmd.md, (char*)g2 + PAGE, SIZE - PAGE, &fd2, &off2),
          "gaudi_copy mem_query gives dma-buf fds and offsets");
    check(reg(nic.md, g1, SIZE, fd1, off1, 1, &g1memh) == UCS_OK,
          "Gaudi buffer 1 registers by its dma-buf");
    /* UCX 1.16 gives no memory type with the dma-buf: registers alike */
    check(reg(nic.md, (char*)g2 + PAGE, SIZE - PAGE, fd2, off2, 0,
              &g2memh) == UCS_OK,
          "a slice of Gaudi buffer 2 registers by its dma-buf (no type)");
    nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
    check(reg(nic.md, g1, SIZE, nul, off1, 1, &bad) != UCS_OK,
          "a file that is not a dma-buf is refused");
    close(nul);
    check(reg(nic.md, g1, SIZE, fd1, off1 + (1ul << 40), 1, &bad) != UCS_OK,
          "a range past the dma-buf's end is refused");
    check(unpack(&nic, g1memh, g1, SIZE, &g1key) &&
          unpack(&nic, g2memh, (char*)g2 + PAGE, SIZE - PAGE, &g2key),
          "remote keys pack and unpack");

    /* an interface and an endpoint to itself: its engine serves the keys */
    async = NULL;
    check((ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                    &async) == UCS_OK) &&
          (uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) ==
           UCS_OK) &&
          (uct_md_iface_config_read(nic.md, "nicsim", NULL, NULL,
                                    &iface_config) == UCS_OK),
          "worker and interface config");
    memset(&iface_params, 0, sizeof(iface_params));
    iface_params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                        UCT_IFACE_PARAM_FIELD_DEVICE;
    iface_params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    iface_params.mode.device.tl_name  = "nicsim";
    iface_params.mode.device.dev_name = "nic0";
    if (!check(uct_iface_open(nic.md, worker, &iface_params, iface_config,
                              &iface) == UCS_OK, "nicsim interface opens")) {
        goto out;
    }
    uct_config_release(iface_config);
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                           UCT_EP_PARAM_FIELD_DEV_ADDR |
                           UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep_params.iface      = iface;
    ep_params.dev_addr   = (uct_device_addr_t*)dev_addr;
    ep_params.iface_addr = (uct_iface_addr_t*)iface_addr;
    check((uct_iface_get_device_address(iface, (uct_device_addr_t*)dev_addr)
           == UCS_OK) &&
          (uct_iface_get_address(iface, (uct_iface_addr_t*)iface_addr) ==
           UCS_OK) &&
          (uct_ep_create(&ep_params, &ep) == UCS_OK),
          "endpoint to the interface's own NIC");

    /* get: Gaudi 1 (written by the module's DMA) -> host */
    fill(check_buf, SIZE, 1);
    check(uct_gaudi_memcpy(g1, check_buf, SIZE) == UCS_OK,
          "Gaudi buffer 1 filled through the module");
    rd0 = COUNTER(dmabuf_read);
    wr0 = COUNTER(dmabuf_written);
    memset(host, 0, SIZE);
    check(rma(ep, 0, host, SIZE, hmemh, g1, g1key.rkey) == UCS_OK,
          "get_zcopy Gaudi -> host");
    check(!memcmp(host, check_buf, SIZE), "get: every byte as written");
    check(COUNTER(dmabuf_read) - rd0 == SIZE,
          "the NIC read the 4 MiB from the dma-buf");

    /* put: host -> Gaudi 1 at an odd offset, read back by the module */
    fill(host, SIZE, 2);
    check(rma(ep, 1, host + 3, SIZE - 4099, hmemh, (char*)g1 + 4099,
              g1key.rkey) == UCS_OK, "put_zcopy host -> Gaudi (odd offset)");
    memset(check_buf, 0, SIZE);
    check(uct_gaudi_memcpy(check_buf, g1, SIZE) == UCS_OK, "read back");
    fill(host, SIZE, 1);   /* what stays before the put's range */
    check(!memcmp(check_buf, host, 4099), "put: bytes before untouched");
    fill(host, SIZE, 2);
    check(!memcmp(check_buf + 4099, host + 3, SIZE - 4099),
          "put: every byte as sent");

    /* Gaudi -> Gaudi, both sides through dma-bufs */
    fill(host, SIZE, 3);
    check(uct_gaudi_memcpy(g1, host, SIZE) == UCS_OK, "refill Gaudi 1");
    check(rma(ep, 1, g1, SIZE - PAGE, g1memh, (char*)g2 + PAGE, g2key.rkey)
          == UCS_OK, "put_zcopy Gaudi -> Gaudi");
    check(uct_gaudi_memcpy(check_buf, (char*)g2 + PAGE, SIZE - PAGE) ==
          UCS_OK && !memcmp(check_buf, host, SIZE - PAGE),
          "Gaudi -> Gaudi put: every byte");
    check(rma(ep, 0, (char*)g1 + 100, 5000, g1memh, (char*)g2 + 2 * PAGE,
              g2key.rkey) == UCS_OK, "get_zcopy Gaudi -> Gaudi");
    check(uct_gaudi_memcpy(check_buf, (char*)g1 + 100, 5000) == UCS_OK &&
          !memcmp(check_buf, host + PAGE, 5000),
          "Gaudi -> Gaudi get: every byte");
    snprintf(what, sizeof(what), "counters: %llu B read from and %llu B "
             "written to dma-buf registrations",
             (unsigned long long)(COUNTER(dmabuf_read) - rd0),
             (unsigned long long)(COUNTER(dmabuf_written) - wr0));
    /* read: the get, the source of the Gaudi put, the source of the Gaudi
     * get; written: the put, the target of each Gaudi transfer */
    check((COUNTER(dmabuf_read) - rd0 == SIZE + (SIZE - PAGE) + 5000) &&
          (COUNTER(dmabuf_written) - wr0 == (SIZE - 4099) + (SIZE - PAGE) +
           5000), what);

    /* remote access outside the key: refused by the initiator */
    check(rma(ep, 0, host, 2 * PAGE, hmemh, (char*)g2 + SIZE - PAGE,
              g2key.rkey) == UCS_ERR_INVALID_PARAM,
          "get past the remote key refused");

    /* a wrong offset: the wrong bytes move, and the data check sees it */
    {
        uct_rkey_bundle_t wkey;
        uct_mem_h wmemh;

        fill(host, SIZE, 4);
        check(uct_gaudi_memcpy(g1, host, SIZE) == UCS_OK, "refill Gaudi 1");
        check((reg(nic.md, g1, SIZE - PAGE, fd1, off1 + PAGE, 1, &wmemh) ==
               UCS_OK) && unpack(&nic, wmemh, g1, SIZE - PAGE, &wkey),
              "registration with the offset one page off (accepted)");
        memset(check_buf, 0, SIZE);
        check(rma(ep, 0, check_buf, PAGE, hmemh, g1, wkey.rkey) ==
              UCS_ERR_INVALID_PARAM,
              "local buffer outside its registration refused");
        check(rma(ep, 0, host, PAGE, hmemh, g1, wkey.rkey) == UCS_OK,
              "get through it");
        fill(check_buf, SIZE, 4);
        check(memcmp(host, check_buf, PAGE) != 0 &&
              !memcmp(host, check_buf + PAGE, PAGE),
              "wrong offset: the data check fails (the next page came)");
        uct_rkey_release(nic.comp, &wkey);
        uct_md_mem_dereg(nic.md, wmemh);
    }

    /* a deregistered key: the engine refuses it */
    {
        uint64_t refused = COUNTER(remote_refused);

        check(uct_md_mem_dereg(nic.md, g2memh) == UCS_OK,
              "dereg Gaudi buffer 2");
        check(rma(ep, 0, host, PAGE, hmemh, (char*)g2 + PAGE, g2key.rkey) ==
              UCS_ERR_INVALID_ADDR, "get with a deregistered key refused");
        check(COUNTER(remote_refused) == refused + 1,
              "refusal counted by the responder");
    }

    uct_ep_destroy(ep);
    uct_iface_close(iface);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    uct_rkey_release(nic.comp, &g1key);
    uct_rkey_release(nic.comp, &g2key);
    check(uct_md_mem_dereg(nic.md, g1memh) == UCS_OK &&
          uct_md_mem_dereg(nic.md, hmemh) == UCS_OK, "dereg");
    check(COUNTER(live_regs) == 0, "no registration left");
    check(attachments() == 0, "no dma-buf attachment left (hlsim)");
    close(fd1);
    close(fd2);
    check(uct_gaudi_mem_free(g1) == UCS_OK &&
          uct_gaudi_mem_free(g2) == UCS_OK, "Gaudi buffers freed");
    free(host);
    free(check_buf);
    uct_md_close(nic.md);
    uct_md_close(gmd.md);
out:
    printf("%u passed, %u failed\n", npass, nfail);
    return nfail ? 1 : 0;
}

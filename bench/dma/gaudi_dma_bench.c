/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_cpy benchmark: zcopy bandwidth H2D (put_zcopy host -> Gaudi), D2H
 * (get_zcopy Gaudi -> host) and D2D (put_zcopy Gaudi -> Gaudi) at several
 * sizes, each as a ratio to a plain memcpy of the same size measured in
 * the same run (on the emulator memcpy is the physical limit), and
 * put_short latency. On the emulator (libhlsim preloaded) also the CS and
 * WAIT_CS ioctls per zcopy, from its counters.
 * Usage: gaudi_dma_bench [total_mib [window]]
 *        gaudi_dma_bench count [size [window [n]]]: n H2D put_zcopies of
 *        size, then n put_shorts of 8 B, and the operation counts (for
 *        instruction counts per operation under callgrind).
 * Run by bench/dma/run.sh. Reports only, asserts nothing.
 */

#include <uct/api/uct.h>
#include <ucs/async/async.h>
#include <ucs/time/time.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_MAX_SIZE (16ul << 20)

typedef struct {
    uct_component_h comp;
    uct_md_h        md;
    ucs_async_context_t *async;
    uct_worker_h    worker;
    uct_iface_h     iface;
    uct_ep_h        ep;
    uct_allocated_memory_t dev[2];
    uct_rkey_bundle_t rkey[2];
    void            *host[2];
    uct_mem_h       host_memh[2];
    unsigned        outstanding;
    unsigned long   progress_calls;
} bench_t;

/* The emulator's counters (test/emu/hlsim/hlsim.h), when it is preloaded */
enum {
    BENCH_COUNTER_CS_IOCTLS      = 10, /* HLSIM_COUNTER_CS_IOCTLS */
    BENCH_COUNTER_WAIT_CS_IOCTLS = 11, /* HLSIM_COUNTER_WAIT_CS_IOCTLS */
    BENCH_COUNTER_ENGINE_NS      = 12  /* HLSIM_COUNTER_ENGINE_NS */
};

typedef int64_t (*bench_counter_func_t)(int counter, int dev);

static int64_t bench_counter(int counter)
{
    static bench_counter_func_t func;
    static int looked_up;

    if (!looked_up) {
        func      = (bench_counter_func_t)dlsym(RTLD_DEFAULT,
                                                "hlsim_get_counter");
        looked_up = 1;
    }
    return (func != NULL) ? func(counter, 0) : -1;
}

static void bench_progress(bench_t *b)
{
    uct_worker_progress(b->worker);
    ++b->progress_calls;
}

typedef struct {
    uct_completion_t uct;
    unsigned         *outstanding;
} bench_comp_t;

static void bench_done(uct_completion_t *self)
{
    bench_comp_t *c = (bench_comp_t*)self;
    --*c->outstanding;
}

/*
 * GAUDI_BENCH_HOST=pinned: the host buffers are mapped by the application
 * through SynapseAI (synHostMap on device 0, the module's SynapseAI
 * library), as a framework pins its host tensors; copies of them go direct
 * on the SynapseAI backend. Default: pageable memory, which the SynapseAI
 * backend stages (docs/synapse.md, "Host maps").
 */
static int (*bench_syn_host_map)(uint32_t, uint64_t, const void*);
static int (*bench_syn_host_unmap)(uint32_t, const void*);

static int bench_host_pin(void *p, size_t size)
{
    const char *mode = getenv("GAUDI_BENCH_HOST");
    const char *lib  = getenv("UCX_GAUDI_SYNAPSE_LIB");
    void *h;
    int rc;

    if ((mode == NULL) || strcmp(mode, "pinned")) {
        return 0;
    }
    h = (lib != NULL) ? dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (h == NULL) {
        fprintf(stderr, "GAUDI_BENCH_HOST=pinned: SynapseAI (%s) is not "
                "loaded (the SynapseAI backend only)\n", lib ? lib : "unset");
        return -1;
    }
    bench_syn_host_map   = (int (*)(uint32_t, uint64_t, const void*))
                           dlsym(h, "synHostMap");
    bench_syn_host_unmap = (int (*)(uint32_t, const void*))
                           dlsym(h, "synHostUnmap");
    rc = (bench_syn_host_map != NULL) ? bench_syn_host_map(0, size, p) : -1;
    if (rc != 0) {
        fprintf(stderr, "GAUDI_BENCH_HOST=pinned: synHostMap failed (%d)\n",
                rc);
        return -1;
    }
    return 0;
}

static void bench_host_unpin(void *p)
{
    if (bench_syn_host_unmap != NULL) {
        (void)bench_syn_host_unmap(0, p);
    }
}

static int bench_open(bench_t *b)
{
    uct_component_h *comps;
    uct_component_attr_t cattr;
    uct_md_config_t *mdc;
    uct_iface_config_t *ifc;
    uct_iface_params_t ip;
    uct_ep_params_t ep;
    uct_md_attr_t md_attr;
    uint64_t addr;
    unsigned i, n;

    uct_query_components(&comps, &n);
    for (i = 0; i < n; ++i) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        uct_component_query(comps[i], &cattr);
        if (!strcmp(cattr.name, "gaudi_copy")) {
            b->comp = comps[i];
        }
    }
    uct_release_component_list(comps);
    if (b->comp == NULL) {
        fprintf(stderr, "gaudi_copy component not loaded\n");
        return -1;
    }
    if ((uct_md_config_read(b->comp, NULL, NULL, &mdc) != UCS_OK) ||
        (uct_md_open(b->comp, "gaudi_copy", mdc, &b->md) != UCS_OK)) {
        return -1;
    }
    uct_config_release(mdc);
    uct_md_query(b->md, &md_attr);

    if ((ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                  &b->async) != UCS_OK) ||
        (uct_worker_create(b->async, UCS_THREAD_MODE_SINGLE,
                           &b->worker) != UCS_OK) ||
        (uct_md_iface_config_read(b->md, "gaudi_cpy", NULL, NULL,
                                  &ifc) != UCS_OK)) {
        return -1;
    }
    memset(&ip, 0, sizeof(ip));
    ip.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                              UCT_IFACE_PARAM_FIELD_DEVICE;
    ip.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    ip.mode.device.tl_name  = "gaudi_cpy";
    ip.mode.device.dev_name = "gaudi_0";
    if (uct_iface_open(b->md, b->worker, &ip, ifc, &b->iface) != UCS_OK) {
        return -1;
    }
    uct_config_release(ifc);
    uct_iface_progress_enable(b->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    uct_iface_get_address(b->iface, (uct_iface_addr_t*)&addr);
    memset(&ep, 0, sizeof(ep));
    ep.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                    UCT_EP_PARAM_FIELD_IFACE_ADDR;
    ep.iface      = b->iface;
    ep.iface_addr = (uct_iface_addr_t*)&addr;
    if (uct_ep_create(&ep, &b->ep) != UCS_OK) {
        return -1;
    }

    for (i = 0; i < 2; ++i) {
        uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
        uct_mem_alloc_params_t ap;
        char packed[256];

        memset(&ap, 0, sizeof(ap));
        ap.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS |
                        UCT_MEM_ALLOC_PARAM_FIELD_MEM_TYPE |
                        UCT_MEM_ALLOC_PARAM_FIELD_MDS;
        ap.flags      = UCT_MD_MEM_ACCESS_ALL;
        ap.mem_type   = (ucs_memory_type_t)
                        ucs_ffs64(md_attr.cap.alloc_mem_types);
        ap.mds.mds    = &b->md;
        ap.mds.count  = 1;
        if ((uct_mem_alloc(BENCH_MAX_SIZE, &method, 1, &ap,
                           &b->dev[i]) != UCS_OK) ||
            (uct_md_mkey_pack(b->md, b->dev[i].memh, packed) != UCS_OK) ||
            (uct_rkey_unpack(b->comp, packed, &b->rkey[i]) != UCS_OK)) {
            return -1;
        }
        if (posix_memalign(&b->host[i], 4096, BENCH_MAX_SIZE) != 0) {
            return -1;
        }
        if (bench_host_pin(b->host[i], BENCH_MAX_SIZE) != 0) {
            return -1;
        }
        memset(b->host[i], i + 1, BENCH_MAX_SIZE);
        if (uct_md_mem_reg(b->md, b->host[i], BENCH_MAX_SIZE,
                           UCT_MD_MEM_ACCESS_ALL, &b->host_memh[i]) != UCS_OK) {
            return -1;
        }
    }
    return 0;
}

static void bench_close(bench_t *b)
{
    int i;

    for (i = 0; i < 2; ++i) {
        uct_md_mem_dereg(b->md, b->host_memh[i]);
        bench_host_unpin(b->host[i]);
        free(b->host[i]);
        uct_rkey_release(b->comp, &b->rkey[i]);
        uct_mem_free(&b->dev[i]);
    }
    uct_ep_destroy(b->ep);
    uct_iface_close(b->iface);
    uct_worker_destroy(b->worker);
    ucs_async_context_destroy(b->async);
    uct_md_close(b->md);
}

typedef enum { DIR_H2D, DIR_D2H, DIR_D2D } bench_dir_t;
static const char *bench_dir_name[] = { "H2D", "D2H", "D2D" };

/* Bytes per second of @a iters zcopies of @a size, @a window in flight */
static double bench_zcopy(bench_t *b, bench_dir_t dir, size_t size,
                          unsigned iters, unsigned window)
{
    bench_comp_t *comps = calloc(window, sizeof(*comps));
    ucs_time_t start;
    ucs_status_t status;
    unsigned i, posted = 0;
    uct_iov_t iov;
    uint64_t raddr;
    uct_rkey_t rkey;

    b->outstanding = 0;
    for (i = 0; i < window; ++i) {
        comps[i].outstanding = &b->outstanding;
    }
    iov.stride = 0;
    iov.count  = 1;
    iov.length = size;
    if (dir == DIR_D2D) {
        iov.buffer = b->dev[0].address;
        iov.memh   = b->dev[0].memh;
    } else {
        iov.buffer = b->host[0];
        iov.memh   = b->host_memh[0];
    }
    raddr = (uintptr_t)b->dev[1].address;
    rkey  = b->rkey[1].rkey;

    start = ucs_get_time();
    while (posted < iters) {
        bench_comp_t *c = &comps[posted % window];

        if (b->outstanding >= window) {
            bench_progress(b);
            continue;
        }
        c->uct.func   = bench_done;
        c->uct.count  = 1;
        c->uct.status = UCS_OK;
        ++b->outstanding;
        status = (dir == DIR_D2H) ?
                 uct_ep_get_zcopy(b->ep, &iov, 1, raddr, rkey, &c->uct) :
                 uct_ep_put_zcopy(b->ep, &iov, 1, raddr, rkey, &c->uct);
        if (status == UCS_INPROGRESS) {
            ++posted;
        } else {
            --b->outstanding;
            if (status == UCS_OK) {
                ++posted;
            } else if (status == UCS_ERR_NO_RESOURCE) {
                bench_progress(b);
            } else {
                fprintf(stderr, "zcopy failed: %s\n",
                        ucs_status_string(status));
                free(comps);
                return 0;
            }
        }
    }
    while (b->outstanding > 0) {
        bench_progress(b);
    }
    free(comps);
    return (double)size * iters / ucs_time_to_sec(ucs_get_time() - start);
}

static double bench_memcpy(bench_t *b, size_t size, unsigned iters)
{
    ucs_time_t start = ucs_get_time();
    unsigned i;

    for (i = 0; i < iters; ++i) {
        memcpy(b->host[1], b->host[0], size);
        __asm__ __volatile__("" ::: "memory");
    }
    return (double)size * iters / ucs_time_to_sec(ucs_get_time() - start);
}

static double bench_put_short_usec(bench_t *b, unsigned size, unsigned iters)
{
    ucs_time_t start;
    unsigned i;

    start = ucs_get_time();
    for (i = 0; i < iters; ++i) {
        if (uct_ep_put_short(b->ep, b->host[0], size,
                             (uintptr_t)b->dev[1].address,
                             b->rkey[1].rkey) != UCS_OK) {
            return -1;
        }
    }
    return ucs_time_to_usec(ucs_get_time() - start) / iters;
}

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

#define BENCH_ROUNDS 5

/* Ioctls of the emulator since @a cs0 / @a wait0, per operation */
static void bench_print_ioctls(int64_t cs0, int64_t wait0, double ops)
{
    if (cs0 < 0) {
        printf(" %7s %7s", "-", "-");
        return;
    }
    printf(" %7.2f %7.2f",
           (bench_counter(BENCH_COUNTER_CS_IOCTLS) - cs0) / ops,
           (bench_counter(BENCH_COUNTER_WAIT_CS_IOCTLS) - wait0) / ops);
}

/*
 * What the emulated engines delivered since @a eng0 (HLSIM_ENGINE_CLOCK=1):
 * how many were copying on average over @a sec of zcopies, and how fast one
 * copies while it does. The zcopy bandwidth is their product.
 */
static void bench_print_engines(int64_t eng0, double bytes, double sec)
{
    int64_t ns = bench_counter(BENCH_COUNTER_ENGINE_NS) - eng0;

    if ((eng0 < 0) || (ns <= 0)) {
        printf(" %6s %9s\n", "-", "-");
        return;
    }
    printf(" %6.2f %9.0f\n", ns / (sec * 1e9), bytes / ns * 1e9 / UCS_MBYTE);
}

/* A fixed number of operations, for instruction counts per operation */
static int bench_count(bench_t *b, int argc, char **argv)
{
    size_t size  = (argc > 2) ? strtoul(argv[2], NULL, 0) : 65536;
    unsigned win = (argc > 3) ? strtoul(argv[3], NULL, 0) : 16;
    unsigned n   = (argc > 4) ? strtoul(argv[4], NULL, 0) : 2048;
    int64_t cs0  = bench_counter(BENCH_COUNTER_CS_IOCTLS);
    int64_t w0   = bench_counter(BENCH_COUNTER_WAIT_CS_IOCTLS);

    double bw;

    b->progress_calls = 0;
    bw                = bench_zcopy(b, DIR_H2D, size, n, win);
    if (bw == 0) {
        return 1;
    }
    printf("put_zcopy %u of %zu B, window %u: %.0f MB/s, %lu progress calls\n",
           n, size, win, bw / UCS_MBYTE, b->progress_calls);
    printf("ioctls per zcopy: CS, WAIT_CS:");
    bench_print_ioctls(cs0, w0, n);
    printf("\n");
    cs0 = bench_counter(BENCH_COUNTER_CS_IOCTLS);
    w0  = bench_counter(BENCH_COUNTER_WAIT_CS_IOCTLS);
    if (bench_put_short_usec(b, 8, n) < 0) {
        return 1;
    }
    printf("put_short %u of 8 B\n", n);
    printf("ioctls per put_short: CS, WAIT_CS:");
    bench_print_ioctls(cs0, w0, n);
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 64ul << 10, 1ul << 20, 4ul << 20,
                                    16ul << 20 };
    int count     = (argc > 1) && !strcmp(argv[1], "count");
    size_t total  = ((argc > 1) && !count ?
                     strtoul(argv[1], NULL, 0) : 256) << 20;
    unsigned win  = (argc > 2) ? strtoul(argv[2], NULL, 0) : 16;
    bench_t b;
    unsigned s, d, r, iters;
    double bw[BENCH_ROUNDS], mbw[BENCH_ROUNDS], ratio[BENCH_ROUNDS];
    int64_t cs0, wait0, eng0;
    double sec;
    int ret;

    memset(&b, 0, sizeof(b));
    if (bench_open(&b) != 0) {
        fprintf(stderr, "failed to open gaudi_cpy\n");
        return 1;
    }

    if (count) {
        ret = bench_count(&b, argc, argv);
        bench_close(&b);
        return ret;
    }

    printf("# zcopy bandwidth vs memcpy, %zu MiB per point, window %u,\n"
           "# median of %d rounds of (memcpy, zcopy) measured back to back;\n"
           "# CS, WAIT: ioctls per zcopy (emulator counters, all rounds);\n"
           "# busy: emulated engines copying on average, eng MB/s: the\n"
           "# speed of one while it copies (HLSIM_ENGINE_CLOCK=1)\n",
           total >> 20, win, BENCH_ROUNDS);
    printf("%-4s %10s %12s %12s %7s %7s %7s %6s %9s\n", "dir", "size",
           "dma MB/s", "memcpy MB/s", "ratio", "CS", "WAIT", "busy",
           "eng MB/s");
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s) {
        iters = ucs_max(8, total / sizes[s]);
        for (d = DIR_H2D; d <= DIR_D2D; ++d) {
            bench_zcopy(&b, d, sizes[s], ucs_max(2, iters / 8), win); /* warm */
            cs0   = bench_counter(BENCH_COUNTER_CS_IOCTLS);
            wait0 = bench_counter(BENCH_COUNTER_WAIT_CS_IOCTLS);
            eng0  = bench_counter(BENCH_COUNTER_ENGINE_NS);
            sec   = 0;
            for (r = 0; r < BENCH_ROUNDS; ++r) {
                mbw[r]   = bench_memcpy(&b, sizes[s], iters);
                bw[r]    = bench_zcopy(&b, d, sizes[s], iters, win);
                ratio[r] = bw[r] / mbw[r];
                sec     += (double)sizes[s] * iters / bw[r];
            }
            qsort(bw, BENCH_ROUNDS, sizeof(double), bench_cmp_double);
            qsort(mbw, BENCH_ROUNDS, sizeof(double), bench_cmp_double);
            qsort(ratio, BENCH_ROUNDS, sizeof(double), bench_cmp_double);
            printf("%-4s %9zuK %12.0f %12.0f %7.2f", bench_dir_name[d],
                   sizes[s] >> 10, bw[BENCH_ROUNDS / 2] / UCS_MBYTE,
                   mbw[BENCH_ROUNDS / 2] / UCS_MBYTE,
                   ratio[BENCH_ROUNDS / 2]);
            bench_print_ioctls(cs0, wait0, (double)iters * BENCH_ROUNDS);
            bench_print_engines(eng0, (double)sizes[s] * iters * BENCH_ROUNDS,
                                sec);
        }
    }

    printf("# put_short latency (synchronous: submit + wait for completion)\n");
    printf("%-10s %10s\n", "size", "usec");
    printf("%-10u %10.2f\n", 8, bench_put_short_usec(&b, 8, 2000));
    printf("%-10u %10.2f\n", 4096, bench_put_short_usec(&b, 4096, 2000));

    bench_close(&b);
    return 0;
}

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * gaudi_copy registration cost: uct_md_mem_reg + uct_md_mem_dereg of host
 * memory with a registration-cache hit, with a miss, and with the cache
 * off, in one run, in a process that uses a Gaudi device (it allocates
 * device memory first, as an application does); and, before that, the
 * same with no device in use yet, where a registration only records the
 * range (docs/md.md). Usage: gaudi_md_bench [iterations [buffer_bytes]].
 * Run on the emulator by bench/md/run.sh. No assertions: it reports.
 */

#include <uct/api/uct.h>
#include <uct/gaudi/api/uct_gaudi.h>
#include <ucs/time/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static uct_component_h bench_component(void)
{
    uct_component_h *comps, found = NULL;
    uct_component_attr_t attr;
    unsigned num, i;

    if (uct_query_components(&comps, &num) != UCS_OK) {
        return NULL;
    }
    for (i = 0; i < num; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(comps[i], &attr) == UCS_OK) &&
            !strcmp(attr.name, "gaudi_copy")) {
            found = comps[i];
        }
    }
    uct_release_component_list(comps);
    return found;
}

/* An MD with config NAME=VALUE pairs (NULL-terminated) */
static uct_md_h bench_md_open(uct_component_h comp, const char **kv)
{
    uct_md_config_t *config;
    uct_md_h md = NULL;

    if (uct_md_config_read(comp, NULL, NULL, &config) != UCS_OK) {
        return NULL;
    }
    for (; *kv != NULL; kv += 2) {
        uct_config_modify(config, kv[0], kv[1]);
    }
    if (uct_md_open(comp, "gaudi_copy", config, &md) != UCS_OK) {
        md = NULL;
    }
    uct_config_release(config);
    return md;
}

/* ns per reg+dereg, alternating over @a nbufs buffers */
static double bench_run(uct_md_h md, char **bufs, int nbufs, size_t size,
                        long iters)
{
    ucs_time_t start;
    uct_mem_h memh;
    long i;

    for (i = 0; i < 100; ++i) {   /* warm up */
        uct_md_mem_reg(md, bufs[i % nbufs], size, UCT_MD_MEM_ACCESS_ALL,
                       &memh);
        uct_md_mem_dereg(md, memh);
    }

    start = ucs_get_time();
    for (i = 0; i < iters; ++i) {
        if (uct_md_mem_reg(md, bufs[i % nbufs], size, UCT_MD_MEM_ACCESS_ALL,
                       &memh) != UCS_OK) {
            fprintf(stderr, "mem_reg failed\n");
            return -1;
        }
        uct_md_mem_dereg(md, memh);
    }
    return ucs_time_to_nsec(ucs_get_time() - start) / iters;
}

int main(int argc, char **argv)
{
    long iters  = (argc > 1) ? atol(argv[1]) : 20000;
    size_t size = (argc > 2) ? strtoul(argv[2], NULL, 0) : 65536;
    const char *hit_kv[]  = {"RCACHE", "yes", NULL};
    /* one cached region: alternating two buffers misses every time, and
     * the eviction unmaps, so a miss pays MAP + UNMAP like "off" */
    const char *miss_kv[] = {"RCACHE", "yes", "RCACHE_MAX_REGIONS", "1",
                             NULL};
    const char *off_kv[]  = {"RCACHE", "no", NULL};
    uct_component_h comp;
    double nodev, hit, miss, off;
    char *bufs[2];
    void *dev;
    uct_md_h md;

    comp = bench_component();
    if (comp == NULL) {
        fprintf(stderr, "gaudi_copy component not found (module loaded? "
                "emulator preloaded?)\n");
        return 1;
    }
    bufs[0] = aligned_alloc(4096, size);
    bufs[1] = aligned_alloc(4096, size);
    memset(bufs[0], 1, size);
    memset(bufs[1], 1, size);

    /* no device in use: each registration looks for the application's */
    md    = bench_md_open(comp, hit_kv);
    nodev = md ? bench_run(md, bufs, 1, size, iters / 10) : -1;
    if (md) uct_md_close(md);

    /* the process takes its device, as an application of Gaudi memory */
    if (uct_gaudi_mem_alloc(4096, &dev) != UCS_OK) {
        fprintf(stderr, "device memory allocation failed\n");
        return 1;
    }
    md   = bench_md_open(comp, hit_kv);
    hit  = md ? bench_run(md, bufs, 1, size, iters) : -1;
    if (md) uct_md_close(md);
    md   = bench_md_open(comp, miss_kv);
    miss = md ? bench_run(md, bufs, 2, size, iters / 10) : -1;
    if (md) uct_md_close(md);
    md   = bench_md_open(comp, off_kv);
    off  = md ? bench_run(md, bufs, 1, size, iters / 10) : -1;
    if (md) uct_md_close(md);

    printf("%-24s %12s\n", "mem_reg+mem_dereg", "ns/op");
    printf("%-24s %12.1f\n", "rcache hit", hit);
    printf("%-24s %12.1f\n", "rcache miss", miss);
    printf("%-24s %12.1f\n", "rcache off", off);
    printf("%-24s %12.1f\n", "no device in use yet", nodev);
    printf("hit/miss ratio: %.2f%% (goal <= 5%%), buffer %zu bytes, "
           "%ld iterations\n", 100.0 * hit / miss, size, iters);
    uct_gaudi_mem_free(dev);
    free(bufs[0]);
    free(bufs[1]);
    return 0;
}

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The module's copies beside the framework's own traffic on SynapseAI
 * (bench/syn/run.sh, docs/performance.md "Shared SynapseAI queues"). A
 * framework acquires the device, creates F streams and gives each its
 * first host-to-device copy, then the module's synchronous copies
 * (uct_gaudi_memcpy of SIZE bytes, host to device, on the module's own
 * stream) are timed twice in the same run: with the framework idle, and
 * with every framework stream busy with back-to-back BUSY-byte
 * host-to-device copies. SynapseAI gives streams their queue set by round
 * robin per direction (3 sets): with F = 1 or 2 the module's stream has a
 * set of its own, with F = 3 it shares the first framework stream's queue.
 *
 * usage: gaudi_syn_queue_bench [F [SIZE [N [BUSY]]]]
 */

#include <uct/gaudi/api/uct_gaudi.h>
#include <synsim_api.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_FW 8

typedef struct {
    synStreamHandle stream[MAX_FW];
    unsigned        nstreams;
    uint64_t        dev, host;
    size_t          busy;
    volatile int    stop;
    unsigned long   copies;
} fw_t;

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void syn_check(synStatus st, const char *what)
{
    if (st != synSuccess) {
        fprintf(stderr, "%s failed: synStatus %d\n", what, st);
        exit(1);
    }
}

/* every framework stream keeps one BUSY-byte copy queued */
static void *fw_busy(void *arg)
{
    fw_t    *fw = arg;
    unsigned i;

    while (!fw->stop) {
        for (i = 0; i < fw->nstreams; i++) {
            syn_check(synMemCopyAsync(fw->stream[i], fw->host, fw->busy,
                                      fw->dev + i * fw->busy, HOST_TO_DRAM),
                      "framework synMemCopyAsync");
        }
        for (i = 0; i < fw->nstreams; i++) {
            syn_check(synStreamSynchronize(fw->stream[i]),
                      "framework synStreamSynchronize");
        }
        fw->copies += fw->nstreams;
    }
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

typedef struct {
    double mean, med, p90, p99;
} lat_t;

/* latency of N module copies, in us */
static void module_copies(void *dev, void *host, size_t size, unsigned n,
                          lat_t *l)
{
    double  *t = malloc(n * sizeof(*t)), t0, sum = 0;
    unsigned i;

    for (i = 0; i < n; i++) {
        t0 = now_us();
        if (uct_gaudi_memcpy(dev, host, size) != UCS_OK) {
            fprintf(stderr, "uct_gaudi_memcpy failed\n");
            exit(1);
        }
        t[i] = now_us() - t0;
        sum += t[i];
    }
    qsort(t, n, sizeof(*t), cmp);
    l->mean = sum / n;
    l->med  = t[n / 2];
    l->p90  = t[(n * 9) / 10];
    l->p99  = t[(n * 99) / 100];
    free(t);
}

static void report(const char *what, const lat_t *l)
{
    printf("%s: mean %.1f us, median %.1f, p90 %.1f, p99 %.1f\n", what,
           l->mean, l->med, l->p90, l->p99);
}

int main(int argc, char **argv)
{
    unsigned    nfw  = (argc > 1) ? atoi(argv[1]) : 3;
    size_t      size = (argc > 2) ? strtoul(argv[2], NULL, 0) : 4096;
    unsigned    n    = (argc > 3) ? atoi(argv[3]) : 200;
    size_t      busy = (argc > 4) ? strtoul(argv[4], NULL, 0) : 16 << 20;
    lat_t       idle, loaded;
    fw_t        fw   = { .nstreams = nfw, .busy = busy };
    synDeviceId id;
    pthread_t   thread;
    void       *host, *hostbuf;
    unsigned    i;

    if ((nfw < 1) || (nfw > MAX_FW) || (n < 10)) {
        fprintf(stderr, "usage: %s [F (1-%d) [SIZE [N>=10 [BUSY]]]]\n",
                argv[0], MAX_FW);
        return 2;
    }

    /* the framework: device, tensors, pinned memory, streams */
    syn_check(synInitialize(), "synInitialize");
    syn_check(synDeviceAcquire(&id, NULL), "synDeviceAcquire");
    syn_check(synDeviceMalloc(id, nfw * busy + size, 0, 0, &fw.dev),
              "synDeviceMalloc");
    syn_check(synHostMalloc(id, busy, 0, &hostbuf), "synHostMalloc");
    fw.host = (uintptr_t)hostbuf;
    memset(hostbuf, 0x5a, busy);
    for (i = 0; i < nfw; i++) {
        syn_check(synStreamCreateGeneric(&fw.stream[i], id, 0),
                  "synStreamCreateGeneric");
        /* its first copy gives the stream its queue set */
        syn_check(synMemCopyAsync(fw.stream[i], fw.host, 4096,
                                  fw.dev + i * busy, HOST_TO_DRAM),
                  "synMemCopyAsync");
        syn_check(synStreamSynchronize(fw.stream[i]), "synStreamSynchronize");
    }

    /* the module: its first copy makes its engine and streams */
    host = malloc(size);
    memset(host, 0xa5, size);
    for (i = 0; i < 10; i++) {
        if (uct_gaudi_memcpy((void*)(fw.dev + nfw * busy), host, size) !=
            UCS_OK) {
            fprintf(stderr, "uct_gaudi_memcpy failed\n");
            return 1;
        }
    }

    module_copies((void*)(fw.dev + nfw * busy), host, size, n, &idle);
    if (pthread_create(&thread, NULL, fw_busy, &fw) != 0) {
        return 1;
    }
    module_copies((void*)(fw.dev + nfw * busy), host, size, n, &loaded);
    fw.stop = 1;
    pthread_join(thread, NULL);

    printf("framework streams %u, module copy %zu B host->device, "
           "framework copies %zu B host->device (%lu during the run)\n",
           nfw, size, busy, fw.copies);
    report("idle framework", &idle);
    report("busy framework", &loaded);
    printf("ratio busy/idle: mean %.2f, median %.2f, p90 %.2f, p99 %.2f\n",
           loaded.mean / idle.mean, loaded.med / idle.med,
           loaded.p90 / idle.p90, loaded.p99 / idle.p99);

    for (i = 0; i < nfw; i++) {
        syn_check(synStreamDestroy(fw.stream[i]), "synStreamDestroy");
    }
    free(host);
    /* the device stays the process's until exit: the module's engine
     * (the public API's) is torn down after main returns */
    return 0;
}

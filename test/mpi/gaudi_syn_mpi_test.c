/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * A process that uses SynapseAI itself and MPI at once, as a PyTorch job
 * does: it links libSynapse (the emulated one, test/emu/synsim), acquires a
 * device, allocates with synDeviceMalloc and copies on its own stream;
 * then MPI (pml ucx) moves those buffers between two ranks while its own
 * stream keeps copying. The module finds SynapseAI loaded, takes its
 * backend (UCX_GAUDI_COPY_BACKEND=auto) and borrows the device. Every byte
 * is checked on the device side through the application's own stream.
 * Prints "N passed, N failed".
 */

#include <synsim_api.h>

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN      (4u << 20)
#define SCRATCH  (8u << 20)

static int npass, nfail;

static void check(int ok, int rank, const char *what)
{
    printf("%s rank %d: %s\n", ok ? "PASS" : "FAIL", rank, what);
    fflush(stdout);
    ok ? ++npass : ++nfail;
}

static int syn_ok(synStatus st, const char *call)
{
    if (st != synSuccess) {
        fprintf(stderr, "%s failed: synStatus %d\n", call, st);
    }
    return st == synSuccess;
}

static void pattern(uint8_t *p, size_t len, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        p[i] = (uint8_t)(i * 7 + seed);
    }
}

static int matches(const uint8_t *p, size_t len, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        if (p[i] != (uint8_t)(i * 7 + seed)) {
            fprintf(stderr, "byte %zu: 0x%x, expected 0x%x\n", i, p[i],
                    (uint8_t)(i * 7 + seed));
            return 0;
        }
    }
    return 1;
}

/* Device -> host on the application's stream, then compare */
static int dev_matches(synStreamHandle s, uint64_t dev, uint8_t *host,
                       size_t len, unsigned seed)
{
    memset(host, 0, len);
    return syn_ok(synMemCopyAsync(s, dev, len, (uintptr_t)host,
                                  DRAM_TO_HOST), "synMemCopyAsync D2H") &&
           syn_ok(synStreamSynchronize(s), "synStreamSynchronize") &&
           matches(host, len, seed);
}

int main(int argc, char **argv)
{
    int counts[2], totals[2] = {0, 0};
    uint64_t sbuf, rbuf, scratch;
    synStreamHandle stream;
    synDeviceId dev;
    uint8_t *host, *src;  /* src: only the queued copy reads it */
    int rank, peer;

    /* the application's SynapseAI: device, memory, stream, before MPI */
    if (!syn_ok(synInitialize(), "synInitialize") ||
        !syn_ok(synDeviceAcquire(&dev, NULL), "synDeviceAcquire") ||
        !syn_ok(synStreamCreateGeneric(&stream, dev, 0),
                "synStreamCreateGeneric") ||
        !syn_ok(synDeviceMalloc(dev, LEN, 0, 0, &sbuf), "synDeviceMalloc") ||
        !syn_ok(synDeviceMalloc(dev, LEN, 0, 0, &rbuf), "synDeviceMalloc") ||
        !syn_ok(synDeviceMalloc(dev, SCRATCH, 0, 0, &scratch),
                "synDeviceMalloc")) {
        printf("0 passed, 1 failed\n");
        return 1;
    }

    host = malloc(SCRATCH);
    src  = malloc(SCRATCH);
    if ((host == NULL) || (src == NULL) ||
        !syn_ok(synHostMap(dev, SCRATCH, host), "synHostMap") ||
        !syn_ok(synHostMap(dev, SCRATCH, src), "synHostMap")) {
        printf("0 passed, 1 failed\n");
        return 1;
    }

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = !rank;

    /* its own data on its own stream */
    pattern(host, LEN, 10 + rank);
    check(syn_ok(synMemCopyAsync(stream, (uintptr_t)host, LEN, sbuf,
                                 HOST_TO_DRAM), "synMemCopyAsync H2D") &&
          syn_ok(synStreamSynchronize(stream), "synStreamSynchronize"),
          rank, "the application's own host-to-device copy");

    /* its stream keeps working while MPI moves its buffers: a copy it
     * queued before the exchange, checked after it */
    pattern(src, SCRATCH, 50 + rank);
    check(syn_ok(synMemCopyAsync(stream, (uintptr_t)src, SCRATCH, scratch,
                                 HOST_TO_DRAM), "synMemCopyAsync H2D"),
          rank, "a copy queued on the application's stream");

    /* synDeviceMalloc'ed buffers straight through Open MPI, both ways */
    MPI_Sendrecv((void*)(uintptr_t)sbuf, LEN, MPI_BYTE, peer, 1,
                 (void*)(uintptr_t)rbuf, LEN, MPI_BYTE, peer, 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    check(dev_matches(stream, scratch, host, SCRATCH, 50 + rank), rank,
          "the application's stream copy ran beside MPI");
    check(dev_matches(stream, rbuf, host, LEN, 10 + peer), rank,
          "Sendrecv of synDeviceMalloc buffers (4 MiB, rendezvous)");

    /* small messages (eager, staged) and a device buffer offset */
    if (rank == 0) {
        MPI_Send((void*)(uintptr_t)(sbuf + 100), 1000, MPI_BYTE, 1, 2,
                 MPI_COMM_WORLD);
    } else {
        MPI_Recv((void*)(uintptr_t)(rbuf + 8), 1000, MPI_BYTE, 0, 2,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank == 1) {
        /* rank 0's pattern from offset 100, read back on our stream */
        uint8_t *want = malloc(LEN);

        pattern(want, LEN, 10);
        memset(host, 0, 1000);
        check((want != NULL) &&
              syn_ok(synMemCopyAsync(stream, rbuf + 8, 1000,
                                     (uintptr_t)host, DRAM_TO_HOST),
                     "synMemCopyAsync D2H") &&
              syn_ok(synStreamSynchronize(stream), "synStreamSynchronize") &&
              (memcmp(host, want + 100, 1000) == 0), rank,
              "Recv of 1000 B at a device-buffer offset");
        free(want);
    }

    /* the application's stream after all MPI traffic */
    check(dev_matches(stream, sbuf, host, LEN, 10 + rank), rank,
          "the application's source buffer is intact after MPI");

    counts[0] = npass;
    counts[1] = nfail;
    MPI_Reduce(counts, totals, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Finalize();

    synHostUnmap(dev, src);
    synHostUnmap(dev, host);
    synDeviceFree(dev, scratch, 0);
    synDeviceFree(dev, rbuf, 0);
    synDeviceFree(dev, sbuf, 0);
    synStreamDestroy(stream);
    synDeviceRelease(dev);
    synDestroy();
    free(src);
    free(host);
    if (rank == 0) {
        printf("%d passed, %d failed\n", totals[0], totals[1]);
    }
    return nfail != 0;
}

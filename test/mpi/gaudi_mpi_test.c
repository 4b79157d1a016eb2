/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Two MPI ranks exchange Gaudi device buffers (allocated through the
 * plugin's public API) with blocking and non-blocking send/receive, from
 * 1 byte to 64 MiB. Data goes in through a host-to-device copy and is
 * checked after a device-to-host copy: the CPU never touches the device
 * buffers, MPI and UCX move them. Rank 0 prints one line per check and
 * "N passed, N failed".
 *
 * --loop SECONDS: after the checks, keep exchanging 16 MiB buffers (data
 * checked) for that long, so that a test can kill a rank mid-transfer;
 * rank 0 prints "LOOP started" first.
 */

#include <uct/gaudi/api/uct_gaudi.h>

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SIZE   (64ul << 20)
#define TAG_PING   11
#define TAG_PONG   12
#define LOOP_SIZE  (16ul << 20)

static int rank;
static int npass, nfail;


static void pattern_fill(uint8_t *buf, size_t size, unsigned seed)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        buf[i] = (uint8_t)((i * 131u) ^ (seed * 7u) ^ (i >> 9));
    }
}

/* First mismatching offset, or -1 */
static long pattern_check(const uint8_t *buf, size_t size, unsigned seed)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        if (buf[i] != (uint8_t)((i * 131u) ^ (seed * 7u) ^ (i >> 9))) {
            return (long)i;
        }
    }
    return -1;
}

static void check(int ok, const char *what, size_t size, const char *why)
{
    int all_ok;

    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank != 0) {
        return;
    }
    if (all_ok) {
        printf("PASS %s %zu\n", what, size);
        npass++;
    } else {
        printf("FAIL %s %zu: %s\n", what, size, why);
        nfail++;
    }
    fflush(stdout);
}

static void die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "rank %d: %s failed: %s\n", rank, what,
            ucs_status_string(status));
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* Load @a dev with the pattern, through a host-to-device copy */
static void device_fill(void *dev, uint8_t *host, size_t size, unsigned seed)
{
    ucs_status_t status;

    pattern_fill(host, size, seed);
    status = uct_gaudi_memcpy(dev, host, size);
    if (status != UCS_OK) {
        die("uct_gaudi_memcpy H2D", status);
    }
}

/* Whether @a dev holds the pattern, read back with a device-to-host copy */
static int device_check(void *dev, uint8_t *host, size_t size, unsigned seed,
                        char *why, size_t why_len)
{
    ucs_status_t status;
    long bad;

    memset(host, 0xee, size);
    status = uct_gaudi_memcpy(host, dev, size);
    if (status != UCS_OK) {
        snprintf(why, why_len, "D2H copy failed: %s",
                 ucs_status_string(status));
        return 0;
    }

    bad = pattern_check(host, size, seed);
    if (bad >= 0) {
        snprintf(why, why_len, "rank %d: byte %ld differs", rank, bad);
        return 0;
    }
    return 1;
}

static void device_clear(void *dev, size_t size)
{
    ucs_status_t status = uct_gaudi_memset(dev, 0, size);

    if (status != UCS_OK) {
        die("uct_gaudi_memset", status);
    }
}

static void test_blocking(void *sdev, void *rdev, uint8_t *host, size_t size)
{
    unsigned seed = (unsigned)size;
    char why[128] = "";
    int ok        = 1;
    int peer      = 1 - rank;

    device_clear(rdev, size);
    if (rank == 0) {
        device_fill(sdev, host, size, seed);
        MPI_Send(sdev, (int)size, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD);
        MPI_Recv(rdev, (int)size, MPI_BYTE, peer, TAG_PONG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(rdev, (int)size, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        /* echo what arrived, device to device through MPI */
        MPI_Send(rdev, (int)size, MPI_BYTE, peer, TAG_PONG, MPI_COMM_WORLD);
    }
    ok = device_check(rdev, host, size, seed, why, sizeof(why));
    check(ok, "blocking send/recv", size, why);
}

static void test_nonblocking(void *sdev, void *rdev, uint8_t *host,
                             size_t size)
{
    unsigned my_seed   = (unsigned)size + 1000u * (rank + 1);
    unsigned peer_seed = (unsigned)size + 1000u * (2 - rank);
    MPI_Request reqs[2];
    char why[128]      = "";
    int peer           = 1 - rank;
    int ok;

    device_clear(rdev, size);
    device_fill(sdev, host, size, my_seed);
    MPI_Irecv(rdev, (int)size, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD,
              &reqs[0]);
    MPI_Isend(sdev, (int)size, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD,
              &reqs[1]);
    MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);

    ok = device_check(rdev, host, size, peer_seed, why, sizeof(why));
    check(ok, "non-blocking isend/irecv", size, why);
}

/* Exchange LOOP_SIZE buffers for @a seconds (a peer may die meanwhile) */
static void test_loop(void *sdev, void *rdev, uint8_t *host, double seconds)
{
    struct timespec t0, t;
    int more;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (rank == 0) {
        printf("LOOP started\n");
        fflush(stdout);
    }
    do {
        test_nonblocking(sdev, rdev, host, LOOP_SIZE);
        /* rank 0's clock decides, so both ranks stop together */
        clock_gettime(CLOCK_MONOTONIC, &t);
        more = (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 <
               seconds;
        MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
    } while (more);
}

int main(int argc, char **argv)
{
    void *sdev, *rdev;
    ucs_status_t status;
    uint8_t *host;
    size_t size;
    int nranks;
    double loop = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if ((argc == 3) && !strcmp(argv[1], "--loop")) {
        loop = atof(argv[2]);
    }
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks != 2) {
        if (rank == 0) {
            fprintf(stderr, "run with exactly 2 ranks\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    status = uct_gaudi_mem_alloc(MAX_SIZE, &sdev);
    if (status != UCS_OK) {
        die("uct_gaudi_mem_alloc", status);
    }
    status = uct_gaudi_mem_alloc(MAX_SIZE, &rdev);
    if (status != UCS_OK) {
        die("uct_gaudi_mem_alloc", status);
    }
    host = malloc(MAX_SIZE);
    if (host == NULL) {
        die("malloc", UCS_ERR_NO_MEMORY);
    }

    for (size = 1; size <= MAX_SIZE; size *= 8) {
        test_blocking(sdev, rdev, host, size);
        test_nonblocking(sdev, rdev, host, size);
    }
    /* odd sizes around the eager/rendezvous switch and the top */
    test_blocking(sdev, rdev, host, 8191);
    test_nonblocking(sdev, rdev, host, 65537);
    test_blocking(sdev, rdev, host, MAX_SIZE);
    test_nonblocking(sdev, rdev, host, MAX_SIZE);
    if (loop > 0) {
        test_loop(sdev, rdev, host, loop);
    }

    free(host);
    uct_gaudi_mem_free(rdev);
    uct_gaudi_mem_free(sdev);

    if (rank == 0) {
        printf("%d passed, %d failed\n", npass, nfail);
    }
    MPI_Finalize();
    return (nfail == 0) ? 0 : 1;
}

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * All-to-all of Gaudi buffers on N ranks, built from point-to-point only:
 * what works with Open MPI 4.1 (pml ucx), whose MPI_Alltoall copies the
 * rank's own block with the CPU and so cannot take device memory
 * (README, "Using with MPI"). Every rank sends block p of its device
 * buffer to rank p and receives rank p's block for it into block p of
 * another device buffer; its own block is a device-to-device copy. Two
 * schedules: every isend/irecv posted at once, and pairwise
 * MPI_Sendrecv with rank +/- k (Open MPI's pairwise algorithm). Then
 * MPI_Bcast from every root, a collective that moves the user's buffer
 * with point-to-point only (no CPU copy, no reduction). Data
 * goes in through host-to-device copies and is checked after a
 * device-to-host copy: the CPU never touches the device buffers.
 *
 * --ipc yes|no: also check that gaudi_ipc was (yes: DMA-BUF exports on
 * every rank) or was not (no: none on any rank) used.
 * --mpi-alltoall: call MPI_Alltoall on the device buffers instead, to
 * show what Open MPI 4.1 does with them (it crashes; not run by the
 * suites).
 * Rank 0 prints one line per check and "N passed, N failed".
 */

#include <uct/gaudi/api/uct_gaudi.h>

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BLOCK (1ul << 20)
#define TAG_A2A   21

static int rank, nranks;
static int npass, nfail;


/* The byte @a i of the block that rank @a from sends to rank @a to */
static uint8_t pattern(size_t i, int from, int to, size_t block)
{
    return (uint8_t)((i * 131u) ^ (from * 31u) ^ (to * 7u) ^ block ^
                     (i >> 9));
}

static void check(int ok, const char *what, size_t block, const char *why)
{
    int all_ok;

    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank != 0) {
        return;
    }
    if (all_ok) {
        printf("PASS %s, %d ranks, %zu B\n", what, nranks, block);
        npass++;
    } else {
        printf("FAIL %s, %d ranks, %zu B: %s\n", what, nranks, block, why);
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

static void copy(void *dst, const void *src, size_t size, const char *what)
{
    ucs_status_t status = uct_gaudi_memcpy(dst, src, size);

    if (status != UCS_OK) {
        die(what, status);
    }
}

/* Fill the send buffer (block p for rank p) and clear the receive one */
static void prepare(uint8_t *sdev, uint8_t *rdev, uint8_t *host, size_t block)
{
    size_t i;
    int p;

    for (p = 0; p < nranks; ++p) {
        for (i = 0; i < block; ++i) {
            host[p * block + i] = pattern(i, rank, p, block);
        }
    }
    copy(sdev, host, nranks * block, "H2D copy");
    if (uct_gaudi_memset(rdev, 0xee, nranks * block) != UCS_OK) {
        die("uct_gaudi_memset", UCS_ERR_IO_ERROR);
    }
}

/* Whether block p of the receive buffer is what rank p sent us */
static int verify(uint8_t *rdev, uint8_t *host, size_t block, char *why,
                  size_t max)
{
    size_t i;
    int p;

    memset(host, 0, nranks * block);
    copy(host, rdev, nranks * block, "D2H copy");
    for (p = 0; p < nranks; ++p) {
        for (i = 0; i < block; ++i) {
            if (host[p * block + i] != pattern(i, p, rank, block)) {
                snprintf(why, max, "rank %d: byte %zu of rank %d's block "
                         "differs", rank, i, p);
                return 0;
            }
        }
    }
    return 1;
}

/* Every isend and irecv posted at once; the own block copied on device */
static void a2a_posted(uint8_t *sdev, uint8_t *rdev, size_t block)
{
    MPI_Request *reqs = calloc(2 * nranks, sizeof(*reqs));
    int p, n = 0;

    if (reqs == NULL) {
        die("calloc", UCS_ERR_NO_MEMORY);
    }
    for (p = 0; p < nranks; ++p) {
        if (p != rank) {
            MPI_Irecv(rdev + p * block, (int)block, MPI_BYTE, p, TAG_A2A,
                      MPI_COMM_WORLD, &reqs[n++]);
        }
    }
    for (p = 0; p < nranks; ++p) {
        if (p != rank) {
            MPI_Isend(sdev + p * block, (int)block, MPI_BYTE, p, TAG_A2A,
                      MPI_COMM_WORLD, &reqs[n++]);
        }
    }
    copy(rdev + rank * block, sdev + rank * block, block, "D2D copy");
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    free(reqs);
}

/* Step k: send to rank + k, receive from rank - k */
static void a2a_pairwise(uint8_t *sdev, uint8_t *rdev, size_t block)
{
    int k, to, from;

    copy(rdev + rank * block, sdev + rank * block, block, "D2D copy");
    for (k = 1; k < nranks; ++k) {
        to   = (rank + k) % nranks;
        from = (rank - k + nranks) % nranks;
        MPI_Sendrecv(sdev + to * block, (int)block, MPI_BYTE, to, TAG_A2A,
                     rdev + from * block, (int)block, MPI_BYTE, from,
                     TAG_A2A, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

/* MPI_Bcast of @a size bytes of a device buffer from @a root */
static void bcast(uint8_t *dev, uint8_t *host, size_t size, int root)
{
    char why[128] = "";
    int ok        = 1;
    size_t i;

    for (i = 0; i < size; ++i) {
        host[i] = pattern(i, root, nranks, size);
    }
    if (rank == root) {
        copy(dev, host, size, "H2D copy");
    } else if (uct_gaudi_memset(dev, 0xee, size) != UCS_OK) {
        die("uct_gaudi_memset", UCS_ERR_IO_ERROR);
    }
    MPI_Bcast(dev, (int)size, MPI_BYTE, root, MPI_COMM_WORLD);

    memset(host, 0, size);
    copy(host, dev, size, "D2H copy");
    for (i = 0; (i < size) && ok; ++i) {
        if (host[i] != pattern(i, root, nranks, size)) {
            snprintf(why, sizeof(why), "rank %d: byte %zu from root %d "
                     "differs", rank, i, root);
            ok = 0;
        }
    }
    check(ok, root ? "MPI_Bcast, last root" : "MPI_Bcast, root 0", size,
          why);
}

/* Whether gaudi_ipc carried data: it exports a DMA-BUF of each buffer a
 * peer imports; without it nothing is exported */
static void check_ipc(const char *expect)
{
    uct_gaudi_counters_t counters;
    int exported, all, any;
    char why[96];

    uct_gaudi_counters_get(&counters);
    exported = counters.dmabuf_exports > 0;
    MPI_Allreduce(&exported, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    MPI_Allreduce(&exported, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    snprintf(why, sizeof(why), "DMA-BUF exports on %s rank",
             any ? (all ? "every" : "some") : "no");
    if (!strcmp(expect, "yes")) {
        check(all, "gaudi_ipc used", MAX_BLOCK, why);
    } else {
        check(!any, "gaudi_ipc not used", MAX_BLOCK, why);
    }
}

int main(int argc, char **argv)
{
    static const size_t blocks[] = {1, 8191, 65536, MAX_BLOCK};
    uint8_t *sdev, *rdev, *host;
    const char *ipc = NULL;
    ucs_status_t status;
    char why[128];
    int alltoall;
    unsigned i;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if ((argc == 3) && !strcmp(argv[1], "--ipc")) {
        ipc = argv[2];
    }
    alltoall = (argc == 2) && !strcmp(argv[1], "--mpi-alltoall");

    status = uct_gaudi_mem_alloc(nranks * MAX_BLOCK, (void**)&sdev);
    if (status != UCS_OK) {
        die("uct_gaudi_mem_alloc", status);
    }
    status = uct_gaudi_mem_alloc(nranks * MAX_BLOCK, (void**)&rdev);
    if (status != UCS_OK) {
        die("uct_gaudi_mem_alloc", status);
    }
    host = malloc(nranks * MAX_BLOCK);
    if (host == NULL) {
        die("malloc", UCS_ERR_NO_MEMORY);
    }

    for (i = 0; i < sizeof(blocks) / sizeof(blocks[0]); ++i) {
        if (alltoall) {
            prepare(sdev, rdev, host, blocks[i]);
            MPI_Alltoall(sdev, (int)blocks[i], MPI_BYTE, rdev,
                         (int)blocks[i], MPI_BYTE, MPI_COMM_WORLD);
            check(verify(rdev, host, blocks[i], why, sizeof(why)),
                  "MPI_Alltoall", blocks[i], why);
            continue;
        }

        why[0] = '\0';
        prepare(sdev, rdev, host, blocks[i]);
        a2a_posted(sdev, rdev, blocks[i]);
        check(verify(rdev, host, blocks[i], why, sizeof(why)),
              "all-to-all (B a block), isend/irecv", blocks[i], why);

        why[0] = '\0';
        prepare(sdev, rdev, host, blocks[i]);
        a2a_pairwise(sdev, rdev, blocks[i]);
        check(verify(rdev, host, blocks[i], why, sizeof(why)),
              "all-to-all (B a block), pairwise sendrecv", blocks[i], why);
    }
    for (i = 0; !alltoall && (i < sizeof(blocks) / sizeof(blocks[0]));
         ++i) {
        /* the whole buffer: bcast's segmented algorithms at large sizes */
        bcast(sdev, host, blocks[i] * nranks, 0);
        bcast(rdev, host, blocks[i] * nranks, nranks - 1);
    }
    if (ipc != NULL) {
        check_ipc(ipc);
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

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * UCP RMA (ucp_put_nbx / ucp_get_nbx) between two ranks on Gaudi and host
 * buffers, data verified. MPI only bootstraps (worker addresses, rkeys,
 * barriers). Rank 0 initiates; rank 1 owns the remote buffers and checks
 * what a put left there after a D2H copy.
 *
 * usage: gaudi_ucp_rma_test [COMBOS [--faults]]
 *   COMBOS: comma list of <local><remote> pairs, g = Gaudi, h = host
 *           (default "gg,hg,gh"); prints "N passed, M failed" (rank 0).
 *   --faults: the emulator injects device faults (HLSIM_FAULTS) into rank
 *           0: an operation may fail, but only as a failed request or a
 *           failed copy ("ERROR request ..." / "ERROR copy ..."), never by
 *           aborting or with wrong data; an op passes if its data arrived
 *           intact or it reported an error.
 */

#include <uct/gaudi/api/uct_gaudi.h>
#include <ucp/api/ucp.h>

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZE (4ul << 20)

static const size_t sizes[] = { 1, 8, 100, 4096, 65536, (1ul << 20) + 3,
                                MAX_SIZE };

typedef struct {
    void      *buf[2];          /* [0] host, [1] Gaudi */
    ucp_mem_h memh[2];
    uint64_t  remote_addr[2];   /* the peer's buffers */
    ucp_rkey_h rkey[2];
} bufs_t;

static int rank;
static int faults;        /* --faults: errors are outcomes, not deaths */
static ucs_status_t op_status;  /* first error of the current op */

static void die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "rank %d: %s: %s\n", rank, what,
            ucs_status_string(status));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static uint8_t pattern(size_t i, size_t size, int op)
{
    return (uint8_t)(i * 7 + size * 13 + op * 101 + (i >> 9));
}

/* host <-> either kind of buffer, through the plugin for Gaudi memory */
static void copy(void *dst, const void *src, size_t size, int gaudi)
{
    ucs_status_t status;

    if (!gaudi) {
        memcpy(dst, src, size);
        return;
    }
    status = uct_gaudi_memcpy(dst, src, size);
    if ((status != UCS_OK) && faults) {
        fprintf(stderr, "rank %d: ERROR copy of %zu B: %s\n", rank, size,
                ucs_status_string(status));
        if (op_status == UCS_OK) {
            op_status = status;
        }
    } else if (status != UCS_OK) {
        die("uct_gaudi_memcpy", status);
    }
}

static void wait_req(ucp_worker_h worker, ucs_status_ptr_t req,
                     const char *what)
{
    ucs_status_t status;

    if (UCS_PTR_IS_ERR(req)) {
        status = UCS_PTR_STATUS(req);
    } else if (req == NULL) {
        return;
    } else {
        do {
            ucp_worker_progress(worker);
            status = ucp_request_check_status(req);
        } while (status == UCS_INPROGRESS);
        ucp_request_free(req);
    }
    if ((status != UCS_OK) && faults) {
        printf("ERROR request %s: %s\n", what, ucs_status_string(status));
        fflush(stdout);
        if (op_status == UCS_OK) {
            op_status = status;
        }
    } else if (status != UCS_OK) {
        die(what, status);
    }
}

static ucp_worker_h g_worker;

/* Wait for a non-blocking MPI call while progressing UCP: RMA that UCX
 * emulates with active messages needs the target's worker to progress */
static void mpi_wait(MPI_Request *req)
{
    int done = 0;

    while (!done) {
        if (g_worker != NULL) {
            ucp_worker_progress(g_worker);
        }
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
    }
}

static void barrier(void)
{
    MPI_Request req;

    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    mpi_wait(&req);
}

static int all_true(int mine)
{
    MPI_Request req;
    int         all;

    MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD, &req);
    mpi_wait(&req);
    return all;
}

/* Allgather of a variable-size blob; returns the peer's copy */
static void *exchange(const void *mine, size_t len, size_t *peer_len)
{
    int   lens[2], mylen = (int)len;
    int   displs[2];
    char *all;
    void *peer;

    MPI_Allgather(&mylen, 1, MPI_INT, lens, 1, MPI_INT, MPI_COMM_WORLD);
    displs[0] = 0;
    displs[1] = lens[0];
    all       = malloc(lens[0] + lens[1]);
    MPI_Allgatherv(mine, mylen, MPI_BYTE, all, lens, displs, MPI_BYTE,
                   MPI_COMM_WORLD);
    *peer_len = lens[1 - rank];
    peer      = malloc(*peer_len);
    memcpy(peer, all + displs[1 - rank], *peer_len);
    free(all);
    return peer;
}

static void map_and_share(ucp_context_h ctx, ucp_ep_h ep, bufs_t *b)
{
    ucp_mem_map_params_t mp;
    void *rkey_buf, *peer_rkey;
    size_t rkey_size, peer_size;
    uint64_t addr, peer_addr;
    ucs_status_t status;
    int k;

    for (k = 0; k < 2; k++) {
        mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                        UCP_MEM_MAP_PARAM_FIELD_LENGTH;
        mp.address    = b->buf[k];
        mp.length     = MAX_SIZE;
        status = ucp_mem_map(ctx, &mp, &b->memh[k]);
        if (status != UCS_OK) {
            die("ucp_mem_map", status);
        }
        status = ucp_rkey_pack(ctx, b->memh[k], &rkey_buf, &rkey_size);
        if (status != UCS_OK) {
            die("ucp_rkey_pack", status);
        }
        peer_rkey = exchange(rkey_buf, rkey_size, &peer_size);
        ucp_rkey_buffer_release(rkey_buf);
        status = ucp_ep_rkey_unpack(ep, peer_rkey, &b->rkey[k]);
        if (status != UCS_OK) {
            die("ucp_ep_rkey_unpack", status);
        }
        free(peer_rkey);

        addr = (uintptr_t)b->buf[k];
        MPI_Sendrecv(&addr, 1, MPI_UINT64_T, 1 - rank, 0, &peer_addr, 1,
                     MPI_UINT64_T, 1 - rank, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        b->remote_addr[k] = peer_addr;
    }
}

/*
 * One put or get of @a size between rank 0's @a local buffer and rank 1's
 * @a remote buffer (0 host, 1 Gaudi). Returns 1 if the data arrived intact
 * (same answer on both ranks).
 */
static int one(ucp_worker_h worker, ucp_ep_h ep, bufs_t *b, int local,
               int remote, size_t size, int is_put)
{
    ucp_request_param_t param = { .op_attr_mask = 0 };
    uint8_t *host = malloc(size), *back = malloc(size);
    size_t i, bad = SIZE_MAX;
    int ok, all_ok, errored;

    op_status = UCS_OK;
    for (i = 0; i < size; i++) {
        host[i] = pattern(i, size, is_put);
    }

    if (is_put) {
        if (rank == 0) {
            copy(b->buf[local], host, size, local);
            wait_req(worker, ucp_put_nbx(ep, b->buf[local], size,
                                         b->remote_addr[remote],
                                         b->rkey[remote], &param), "put");
            wait_req(worker, ucp_ep_flush_nbx(ep, &param), "flush");
        }
        barrier();
        if (rank == 1) {
            copy(back, b->buf[remote], size, remote);
        }
    } else {
        if (rank == 1) {
            copy(b->buf[remote], host, size, remote);
        }
        barrier();
        if (rank == 0) {
            memset(back, 0, size);
            copy(b->buf[local], back, size, local);
            wait_req(worker, ucp_get_nbx(ep, b->buf[local], size,
                                         b->remote_addr[remote],
                                         b->rkey[remote], &param), "get");
            copy(back, b->buf[local], size, local);
        }
    }

    /* with --faults an op that reported an error is not checked */
    errored = all_true(op_status == UCS_OK) ? 0 : 1;
    ok      = 1;
    if (!errored &&
        ((is_put && (rank == 1)) || (!is_put && (rank == 0)))) {
        for (i = 0; i < size; i++) {
            if (back[i] != host[i]) {
                bad = i;
                ok  = 0;
                break;
            }
        }
        if (!ok) {
            fprintf(stderr, "rank %d: %s %zu B: byte %zu is 0x%02x, "
                    "expected 0x%02x\n", rank, is_put ? "put" : "get", size,
                    bad, back[bad], host[bad]);
        }
    }
    all_ok = all_true(ok);
    free(host);
    free(back);
    return all_ok;
}

int main(int argc, char **argv)
{
    const char *combos = (argc > 1) ? argv[1] : "gg,hg,gh";
    ucp_params_t params = { 0 };
    ucp_worker_params_t wparams = { 0 };
    ucp_ep_params_t eparams = { 0 };
    ucp_request_param_t cparam = { 0 };
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_address_t *addr;
    size_t addr_len, peer_len, s;
    void *peer_addr;
    ucp_ep_h ep;
    bufs_t b;
    ucs_status_t status;
    const char *c;
    int passed = 0, failed = 0, local, remote, is_put, ok, k;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    faults = (argc > 2) && !strcmp(argv[2], "--faults");

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA;
    status = ucp_init(&params, NULL, &ctx);
    if (status != UCS_OK) {
        die("ucp_init", status);
    }
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(ctx, &wparams, &worker);
    if (status != UCS_OK) {
        die("ucp_worker_create", status);
    }
    g_worker = worker;
    status   = ucp_worker_get_address(worker, &addr, &addr_len);
    if (status != UCS_OK) {
        die("ucp_worker_get_address", status);
    }
    peer_addr = exchange(addr, addr_len, &peer_len);
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = peer_addr;
    status = ucp_ep_create(worker, &eparams, &ep);
    if (status != UCS_OK) {
        die("ucp_ep_create", status);
    }

    b.buf[0] = malloc(MAX_SIZE);
    status   = uct_gaudi_mem_alloc(MAX_SIZE, &b.buf[1]);
    if (status != UCS_OK) {
        die("uct_gaudi_mem_alloc", status);
    }
    map_and_share(ctx, ep, &b);

    for (c = combos; *c != '\0'; c += (c[2] == ',') ? 3 : 2) {
        local  = (c[0] == 'g');
        remote = (c[1] == 'g');
        for (is_put = 1; is_put >= 0; is_put--) {
            for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
                ok      = one(worker, ep, &b, local, remote, sizes[s],
                              is_put);
                passed += ok;
                failed += !ok;
                if (rank == 0) {
                    printf("%s %s local %s, remote %s, %zu B\n",
                           ok ? "PASS" : "FAIL", is_put ? "put" : "get",
                           local ? "Gaudi" : "host",
                           remote ? "Gaudi" : "host", sizes[s]);
                    fflush(stdout);
                }
            }
        }
        if (c[2] == '\0') {
            break;
        }
    }

    barrier();
    for (k = 0; k < 2; k++) {
        ucp_rkey_destroy(b.rkey[k]);
        ucp_mem_unmap(ctx, b.memh[k]);
    }
    /* flush mode: both ranks close at once and progress meanwhile */
    wait_req(worker, ucp_ep_close_nbx(ep, &cparam), "ep close");
    barrier();
    g_worker = NULL;
    uct_gaudi_mem_free(b.buf[1]);
    free(b.buf[0]);
    free(peer_addr);
    ucp_worker_release_address(worker, addr);
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);

    if (rank == 0) {
        printf("%d passed, %d failed\n", passed, failed);
    }
    MPI_Finalize();
    return failed != 0;
}

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * UCP between processes that misbehave: a peer that dies mid-transfer, a
 * peer that sends forged rkeys, device faults during tag and stream
 * traffic. No MPI: a rank may die, which mpirun would turn into a job
 * abort. The launcher (no role argument) starts each role as a separate
 * process (this program again, on device <role>, with HLSIM_FAULTS from
 * FAULTS_ROLE<role>), bootstraps them over unix socket pairs, waits at
 * most TIMEOUT seconds (env PEER_TEST_TIMEOUT, default 30) and prints
 * "PASS <case>" or "FAIL <case>: why", then "N passed, N failed".
 *
 * usage: gaudi_ucp_peer_test CASE [peer|none] [ipc|staged] [mid]
 *   kill-sender, kill-receiver: 16 MiB Gaudi -> Gaudi tag message; role 0
 *       sends, role 1 receives. The named side SIGKILLs itself once the
 *       receiver has the rendezvous request (kill-sender: before the
 *       receiver posts its receive; kill-receiver: before it does), or,
 *       with "mid", 0.2 s into the transfer (the receive posted first).
 *       The survivor must see its request fail and return (ep close,
 *       worker and context destroyed) within the timeout. "peer" / "none": the
 *       endpoints' error handling mode. "ipc" / "staged": the suite's
 *       UCX_TLS decides; the argument only names the case.
 *   kill-exporter-rma: role 0 exports a Gaudi buffer, role 1 posts puts
 *       and gets to it, role 0 dies with them in flight; every posted
 *       request of role 1 must complete (with an error or not) and its
 *       endpoint, worker and context close (a request UCX never gave
 *       back is reported at cleanup; the suite greps for that).
 *   dead-exporter [zombie|reaped]: NIXL's pattern (ucp_mem_map, packed
 *       rkeys exchanged, ucp_put_nbx/ucp_get_nbx, a progress thread):
 *       role 1 gets role 0's buffer once (the import is cached), role 0
 *       dies, then role 1's first get must fail with a connection error
 *       (CONNECTION_RESET or ENDPOINT_TIMEOUT, never INVALID_ADDR from
 *       the cache's identity check) and the ep's error callback run. "zombie": the launcher reaps
 *       role 0 only after role 1 is done (its fd table is gone, its pid
 *       still there); "reaped": at once.
 *   forged: role 0 (attacker) exports a Gaudi buffer and sends role 1
 *       (victim) its packed key, the key with a grown buffer, and a key
 *       that does not hold together; role 2 (a bystander) sends its own
 *       key. The victim's get/put through anything but the genuine key
 *       must fail (or the key must not unpack) with its buffers intact;
 *       the genuine key must still move the right data.
 *   faults-tag, faults-stream: role 0 sends Gaudi buffers of growing size
 *       to role 1 by tag or stream messages; with faults injected, an
 *       operation either fails (a failed request, "ERROR request ...") or
 *       its data arrives intact. Either role exits normally (no abort).
 *       After a failed receive, the sender's rendezvous request may never
 *       end (UCX 1.13 does not tell it); it is then reported as "LIMIT"
 *       and left to the process's exit (docs/ipc.md).
 */

#include <uct/gaudi/api/uct_gaudi.h>
#include <ucp/api/ucp.h>

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KILL_SIZE    (16ul << 20)
#define FORGE_SIZE   (1ul << 20)
#define MAX_ROLES    3
#define TAG          0x5a
#define CANARY       0xc3
/* wait_req: the request did not complete in time (not a UCX status) */
#define REQ_HUNG     UCS_ERR_LAST

static int          role = -1;
static const char  *test_case;
static int          peer_mode;        /* UCP_ERR_HANDLING_MODE_PEER */
static int          sock[MAX_ROLES];  /* role 1: to roles 0 and 2 */
static ucs_status_t ep_error = UCS_OK;  /* set by the progress thread */
static int          mt_worker;        /* a progress thread drives it */
static int          dead_zombie;      /* dead-exporter: a zombie exporter */

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "role %d: %s: %s\n", role, what,
            ucs_status_string(status));
    exit(2);
}

/* ------------------------------------------------------------------ */
/* bootstrap over the socket pairs                                     */

static void send_blob(int fd, const void *buf, uint32_t len)
{
    if ((write(fd, &len, sizeof(len)) != sizeof(len)) ||
        ((len > 0) && (write(fd, buf, len) != (ssize_t)len))) {
        fprintf(stderr, "role %d: write to peer: %m\n", role);
        exit(2);
    }
}

static int read_full(int fd, void *buf, size_t len)
{
    size_t  done = 0;
    ssize_t ret;

    while (done < len) {
        ret = read(fd, (char*)buf + done, len - done);
        if (ret <= 0) {
            return -1;
        }
        done += ret;
    }
    return 0;
}

/* returns a malloc'ed copy, or NULL when the peer is gone */
static void *recv_blob(int fd, uint32_t *len_p)
{
    uint32_t len;
    void    *buf;

    if (read_full(fd, &len, sizeof(len)) != 0) {
        return NULL;
    }
    buf = malloc(len ? len : 1);
    if (read_full(fd, buf, len) != 0) {
        free(buf);
        return NULL;
    }
    if (len_p != NULL) {
        *len_p = len;
    }
    return buf;
}

static void *must_recv(int fd, uint32_t *len_p)
{
    void *buf = recv_blob(fd, len_p);

    if (buf == NULL) {
        fprintf(stderr, "role %d: the peer closed the bootstrap socket\n",
                role);
        exit(2);
    }
    return buf;
}

static void send_u64(int fd, uint64_t v)
{
    send_blob(fd, &v, sizeof(v));
}

static uint64_t recv_u64(int fd)
{
    uint64_t *p = must_recv(fd, NULL), v = *p;

    free(p);
    return v;
}

/* wait until the peer's end of @a fd is closed (the peer died) */
static void wait_peer_gone(int fd)
{
    char c;

    while (read(fd, &c, 1) > 0) {
    }
}

/* ------------------------------------------------------------------ */
/* UCP                                                                 */

typedef struct {
    ucp_context_h ctx;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
} node_t;

static void ep_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    fprintf(stderr, "role %d: ep error callback: %s\n", role,
            ucs_status_string(status));
    __atomic_store_n(&ep_error, status, __ATOMIC_RELEASE);
}

static void node_init(node_t *n, int peer_fd)
{
    ucp_params_t        params  = { 0 };
    ucp_worker_params_t wparams = { 0 };
    ucp_ep_params_t     eparams = { 0 };
    ucp_address_t      *addr;
    size_t              addr_len;
    void               *peer_addr;
    ucs_status_t        status;

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG | UCP_FEATURE_STREAM |
                        UCP_FEATURE_RMA;
    status = ucp_init(&params, NULL, &n->ctx);
    if (status != UCS_OK) {
        die("ucp_init", status);
    }
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = mt_worker ? UCS_THREAD_MODE_MULTI :
                                      UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(n->ctx, &wparams, &n->worker);
    if (status != UCS_OK) {
        die("ucp_worker_create", status);
    }
    n->ep = NULL;
    if (peer_fd < 0) {
        return;
    }

    status = ucp_worker_get_address(n->worker, &addr, &addr_len);
    if (status != UCS_OK) {
        die("ucp_worker_get_address", status);
    }
    send_blob(peer_fd, addr, addr_len);
    ucp_worker_release_address(n->worker, addr);
    peer_addr = must_recv(peer_fd, NULL);

    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                         UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    eparams.address    = peer_addr;
    eparams.err_mode   = peer_mode ? UCP_ERR_HANDLING_MODE_PEER :
                                     UCP_ERR_HANDLING_MODE_NONE;
    if (peer_mode) {
        eparams.field_mask      |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        eparams.err_handler.cb  = ep_err_cb;
        eparams.err_handler.arg = NULL;
    }
    status = ucp_ep_create(n->worker, &eparams, &n->ep);
    if (status != UCS_OK) {
        die("ucp_ep_create", status);
    }
    free(peer_addr);
}

/* Progress until @a req completes; REQ_HUNG after @a seconds */
static ucs_status_t wait_req(node_t *n, ucs_status_ptr_t req, double seconds)
{
    double       deadline = now() + seconds;
    ucs_status_t status;

    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    do {
        ucp_worker_progress(n->worker);
        status = ucp_request_check_status(req);
    } while ((status == UCS_INPROGRESS) && (now() < deadline));
    if (status == UCS_INPROGRESS) {
        /* left to the process's exit: freeing it would complete nothing */
        return REQ_HUNG;
    }
    ucp_request_free(req);
    return status;
}

/* The survivor's way out: close the ep (force after a failure), free
 * everything; each step bounded */
static int node_fini(node_t *n, int force)
{
    ucp_request_param_t param = { 0 };
    ucs_status_t        status;

    if (n->ep != NULL) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
        status = wait_req(n, ucp_ep_close_nbx(n->ep, &param), 10);
        if (status == REQ_HUNG) {
            fprintf(stderr, "role %d: ep close did not complete\n", role);
            return 0;
        }
    }
    ucp_worker_destroy(n->worker);
    ucp_cleanup(n->ctx);
    return 1;
}

static uint8_t pattern(size_t i, size_t salt)
{
    return (uint8_t)(i * 7 + salt * 13 + (i >> 11));
}

static void *gaudi_alloc_fill(size_t size, size_t salt)
{
    uint8_t     *host = malloc(size);
    void        *buf;
    ucs_status_t status;
    size_t       i;

    status = uct_gaudi_mem_alloc(size, &buf);
    if (status != UCS_OK) {
        die("uct_gaudi_mem_alloc", status);
    }
    for (i = 0; i < size; i++) {
        host[i] = pattern(i, salt);
    }
    status = uct_gaudi_memcpy(buf, host, size);
    if (status != UCS_OK) {
        die("uct_gaudi_memcpy", status);
    }
    free(host);
    return buf;
}

/* the first index where the Gaudi buffer differs from the pattern, or -1;
 * -2 when it cannot be read back */
static long gaudi_check(const void *buf, size_t size, size_t salt)
{
    uint8_t *host = malloc(size);
    long     bad  = -1;
    size_t   i;

    if (uct_gaudi_memcpy(host, buf, size) != UCS_OK) {
        free(host);
        return -2;
    }
    for (i = 0; i < size; i++) {
        if (host[i] != pattern(i, salt)) {
            bad = i;
            break;
        }
    }
    free(host);
    return bad;
}

/* ------------------------------------------------------------------ */
/* kill-sender / kill-receiver                                         */

static int wait_rts(node_t *n, double seconds)
{
    ucp_tag_recv_info_t info;
    double              deadline = now() + seconds;

    while (now() < deadline) {
        ucp_worker_progress(n->worker);
        if (ucp_tag_probe_nb(n->worker, TAG, (ucp_tag_t)-1, 0, &info) !=
            NULL) {
            return 1;
        }
    }
    return 0;
}

/* one message each way so that wireup is over before the kill */
static void warm_up(node_t *n, void *buf)
{
    ucp_request_param_t param = { 0 };
    ucs_status_t        status;

    if (role == 0) {
        status = wait_req(n, ucp_tag_send_nbx(n->ep, buf, 4096, TAG + 1,
                                              &param), 10);
    } else {
        status = wait_req(n, ucp_tag_recv_nbx(n->worker, buf, 4096, TAG + 1,
                                              (ucp_tag_t)-1, &param), 10);
    }
    if (status != UCS_OK) {
        die("warm-up", status);
    }
}

/*
 * Before the receive is posted: the sender posts, the receiver sees the
 * rendezvous request; then the victim dies, and a surviving receiver
 * posts its receive once the sender is gone. Returns the survivor's
 * request (NULL for the receiver: posted later).
 */
static ucs_status_ptr_t kill_before_recv(node_t *n, void *buf, int victim)
{
    ucp_request_param_t param = { 0 };
    struct pollfd       pfd   = { .fd = sock[0], .events = POLLIN };
    ucs_status_ptr_t    req   = NULL;

    if (role == 0) {
        req = ucp_tag_send_nbx(n->ep, buf, KILL_SIZE, TAG, &param);
        if (UCS_PTR_IS_ERR(req)) {
            die("tag_send_nbx", UCS_PTR_STATUS(req));
        }
        /* progress until the receiver has the rendezvous request */
        while (poll(&pfd, 1, 0) <= 0) {
            ucp_worker_progress(n->worker);
        }
        free(must_recv(sock[0], NULL));
    } else {
        if (!wait_rts(n, 10)) {
            fprintf(stderr, "role 1: no rendezvous request in 10 s\n");
            exit(1);
        }
        send_u64(sock[0], 1);
    }
    if (role == victim) {
        raise(SIGKILL);
    }
    wait_peer_gone(sock[0]);
    if (role == 1) {
        req = ucp_tag_recv_nbx(n->worker, buf, KILL_SIZE, TAG, (ucp_tag_t)-1,
                               &param);
    }
    return req;
}

/*
 * Mid-transfer: the receive is posted first, then the message; the victim
 * progresses for MID_DELAY (the suite slows the emulated DMA so that the
 * copy of 16 MiB takes longer) and dies with the transfer under way.
 */
#define MID_DELAY 0.2

static ucs_status_ptr_t kill_mid(node_t *n, void *buf, int victim)
{
    ucp_request_param_t param = { 0 };
    ucs_status_ptr_t    req;
    double              deadline;

    if (role == 1) {
        req = ucp_tag_recv_nbx(n->worker, buf, KILL_SIZE, TAG, (ucp_tag_t)-1,
                               &param);
        send_u64(sock[0], 1);
    } else {
        free(must_recv(sock[0], NULL));
        req = ucp_tag_send_nbx(n->ep, buf, KILL_SIZE, TAG, &param);
    }
    if (UCS_PTR_IS_ERR(req)) {
        die("posting the message", UCS_PTR_STATUS(req));
    }
    if (role == victim) {
        deadline = now() + MID_DELAY;
        while (now() < deadline) {
            ucp_worker_progress(n->worker);
        }
        /* our request may be over (a sender's, once its data left), the
         * transfer is not: the receiver's copies run at the slowed DMA */
        raise(SIGKILL);
    }
    return req;
}

static int run_kill(int kill_sender, int mid)
{
    ucs_status_ptr_t req;
    ucs_status_t     status;
    node_t           n;
    void            *buf;
    double           t0;
    int              victim = kill_sender ? 0 : 1;

    node_init(&n, sock[0]);
    buf = gaudi_alloc_fill(KILL_SIZE, role);
    warm_up(&n, buf);

    req    = mid ? kill_mid(&n, buf, victim) :
                   kill_before_recv(&n, buf, victim);
    t0     = now();
    status = wait_req(&n, req, 20);
    fprintf(stderr, "role %d: %s completed with '%s' after %.2f s\n", role,
            role ? "receive" : "send", ucs_status_string(status),
            now() - t0);
    if (status == REQ_HUNG) {
        fprintf(stderr, "role %d: request still in progress after 20 s\n",
                role);
        return 1;
    }
    if ((status == UCS_OK) && !mid) {
        fprintf(stderr, "role %d: request succeeded although its peer "
                "died before the data moved\n", role);
        return 1;
    }
    if ((status == UCS_OK) && (role == 1) &&
        (gaudi_check(buf, KILL_SIZE, 0) != -1)) {
        fprintf(stderr, "role 1: receive succeeded with wrong data\n");
        return 1;
    }
    if (status == UCS_OK) {
        /* all the data had left the sender before its death */
        fprintf(stderr, "role %d: the transfer completed, data intact\n",
                role);
    }
    uct_gaudi_mem_free(buf);
    if (!node_fini(&n, 1)) {
        return 1;
    }
    fprintf(stderr, "role %d: returned %.2f s after the peer's death\n",
            role, now() - t0);
    return 0;
}

/* Map @a buf for UCP and send its address and packed key on @a fd; the
 * caller releases *packed_p (ucp_rkey_buffer_release) */
static ucp_mem_h export_buffer(node_t *n, void *buf, size_t size, int fd,
                               void **packed_p, size_t *len_p)
{
    ucp_mem_map_params_t mp = { 0 };
    ucp_mem_h            memh;
    ucs_status_t         status;

    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                    UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mp.address    = buf;
    mp.length     = size;
    status        = ucp_mem_map(n->ctx, &mp, &memh);
    if (status != UCS_OK) {
        die("ucp_mem_map", status);
    }
    status = ucp_rkey_pack(n->ctx, memh, packed_p, len_p);
    if (status != UCS_OK) {
        die("ucp_rkey_pack", status);
    }
    send_u64(fd, (uintptr_t)buf);
    send_blob(fd, *packed_p, *len_p);
    return memh;
}

/* ------------------------------------------------------------------ */
/* RMA in flight when the exporter dies                                 */

#define RMA_OPS  8
#define RMA_SIZE (4ul << 20)

typedef struct {
    int done;
    int errors;
} rma_count_t;

static void rma_done(void *request, ucs_status_t status, void *user_data)
{
    rma_count_t *c = user_data;

    ++c->done;
    c->errors += (status != UCS_OK);
}

/* Role 0 exports a Gaudi buffer and dies 0.2 s after role 1 posted its
 * puts and gets to it (slowed DMA: they are still copying). Role 1 counts
 * the completions of its posted requests: every one must complete, and
 * its worker must close without a leaked request */
static int run_kill_rma(void)
{
    ucp_request_param_t  param = { 0 };
    rma_count_t          count = { 0, 0 };
    ucs_status_ptr_t     req[RMA_OPS];
    int                  posted = 0, i;
    ucp_rkey_h           rkey;
    void                *buf, *packed;
    uint64_t             remote;
    double               deadline, t0;
    ucs_status_t         status;
    size_t               len;
    node_t               n;

    node_init(&n, sock[0]);
    buf = gaudi_alloc_fill(RMA_SIZE, role);
    if (role == 0) {
        (void)export_buffer(&n, buf, RMA_SIZE, sock[0], &packed, &len);
        free(must_recv(sock[0], NULL));       /* posted */
        deadline = now() + MID_DELAY;
        while (now() < deadline) {
            ucp_worker_progress(n.worker);
        }
        raise(SIGKILL);
    }

    remote = recv_u64(sock[0]);
    packed = must_recv(sock[0], NULL);
    status = ucp_ep_rkey_unpack(n.ep, packed, &rkey);
    if (status != UCS_OK) {
        die("ucp_ep_rkey_unpack", status);
    }
    free(packed);

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = rma_done;
    param.user_data    = &count;
    for (i = 0; i < RMA_OPS; i++) {
        req[i] = (i & 1) ?
                 ucp_get_nbx(n.ep, buf, RMA_SIZE, remote, rkey, &param) :
                 ucp_put_nbx(n.ep, buf, RMA_SIZE, remote, rkey, &param);
        if (UCS_PTR_IS_PTR(req[i])) {
            ++posted;
        } else if (UCS_PTR_IS_ERR(req[i])) {
            ++count.errors;
        }
    }
    send_u64(sock[0], 1);
    wait_peer_gone(sock[0]);

    t0       = now();
    deadline = t0 + 20;
    while ((count.done < posted) && (now() < deadline)) {
        ucp_worker_progress(n.worker);
    }
    fprintf(stderr, "role 1: %d requests posted, %d completed (%d failed "
            "in all) %.2f s after the exporter's death\n", posted,
            count.done, count.errors, now() - t0);
    if (count.done < posted) {
        fprintf(stderr, "role 1: %d request(s) never completed\n",
                posted - count.done);
        return 1;
    }
    for (i = 0; i < RMA_OPS; i++) {
        if (UCS_PTR_IS_PTR(req[i])) {
            ucp_request_free(req[i]);
        }
    }
    ucp_rkey_destroy(rkey);
    uct_gaudi_mem_free(buf);
    return node_fini(&n, 1) ? 0 : 1;
}

/* ------------------------------------------------------------------ */
/* a dead exporter, NIXL's pattern                                      */

#define DEAD_OPS  8
#define DEAD_SIZE (1ul << 20)

typedef struct {
    node_t       *n;
    int           stop;
    int           pause;     /* asked: the thread stops progressing */
    int           paused;    /* and says so */
    ucs_status_t  status[DEAD_OPS];
} dead_ctx_t;

static void *dead_progress(void *arg)
{
    dead_ctx_t *d = arg;

    while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
        if (__atomic_load_n(&d->pause, __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&d->paused, 1, __ATOMIC_RELEASE);
            usleep(100);
            continue;
        }
        __atomic_store_n(&d->paused, 0, __ATOMIC_RELEASE);
        ucp_worker_progress(d->n->worker);
    }
    return NULL;
}

static void dead_pause(dead_ctx_t *d, int pause)
{
    __atomic_store_n(&d->pause, pause, __ATOMIC_RELEASE);
    while (pause && !__atomic_load_n(&d->paused, __ATOMIC_ACQUIRE)) {
        usleep(100);
    }
}

static void dead_done(void *request, ucs_status_t status, void *user_data)
{
    ucs_status_t *slot = user_data;

    __atomic_store_n(slot, status, __ATOMIC_RELEASE);
}

/* the state letter of @a pid in /proc, '?' if none */
static char proc_state(pid_t pid)
{
    char  path[64], buf[256], *p;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return '?';
    }
    p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
    fclose(f);
    return ((p != NULL) && (p[1] == ' ')) ? p[2] : '?';
}

static int dead_connection_error(ucs_status_t status)
{
    return (status == UCS_ERR_CONNECTION_RESET) ||
           (status == UCS_ERR_ENDPOINT_TIMEOUT);
}

static int run_dead_exporter(void)
{
    ucp_request_param_t param = { 0 };
    dead_ctx_t          d     = { 0 };
    ucs_status_ptr_t    req[DEAD_OPS];
    int                 i, nops, good;
    ucp_rkey_h          rkey;
    pthread_t           thread;
    void               *buf, *packed;
    uint64_t            remote;
    pid_t               exporter;
    double              deadline;
    ucs_status_t        status;
    size_t              len;
    long                bad;
    node_t              n;

    mt_worker = 1;
    node_init(&n, sock[0]);
    buf = gaudi_alloc_fill(DEAD_SIZE, role);
    if (role == 0) {
        send_u64(sock[0], getpid());
        (void)export_buffer(&n, buf, DEAD_SIZE, sock[0], &packed, &len);
        free(must_recv(sock[0], NULL));       /* imported */
        raise(SIGKILL);
    }

    exporter = (pid_t)recv_u64(sock[0]);
    remote   = recv_u64(sock[0]);
    packed   = must_recv(sock[0], NULL);
    status   = ucp_ep_rkey_unpack(n.ep, packed, &rkey);
    if (status != UCS_OK) {
        die("ucp_ep_rkey_unpack", status);
    }
    free(packed);

    d.n = &n;
    if (pthread_create(&thread, NULL, dead_progress, &d) != 0) {
        die("pthread_create", UCS_ERR_NO_RESOURCE);
    }

    /* one get while the exporter lives: its import is cached */
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = dead_done;
    d.status[0]        = UCS_INPROGRESS;
    param.user_data    = &d.status[0];
    req[0] = ucp_get_nbx(n.ep, buf, DEAD_SIZE, remote, rkey, &param);
    if (UCS_PTR_IS_ERR(req[0])) {
        die("first ucp_get_nbx", UCS_PTR_STATUS(req[0]));
    } else if (UCS_PTR_IS_PTR(req[0])) {
        deadline = now() + 20;
        while ((__atomic_load_n(&d.status[0], __ATOMIC_ACQUIRE) ==
                UCS_INPROGRESS) && (now() < deadline)) {
            usleep(1000);
        }
        if (d.status[0] != UCS_OK) {
            die("first ucp_get_nbx", d.status[0]);
        }
        ucp_request_free(req[0]);
    }
    bad = gaudi_check(buf, DEAD_SIZE, 0);
    if (bad != -1) {
        fprintf(stderr, "role 1: first get: data differ at %ld\n", bad);
        return 1;
    }
    /* the progress thread falls behind (as a busy one does): the get
     * below, not tcp's disconnect, is the first to meet the death */
    dead_pause(&d, 1);
    send_u64(sock[0], 1);
    wait_peer_gone(sock[0]);
    deadline = now() + 5;
    while ((dead_zombie ? (proc_state(exporter) != 'Z') :
                          (proc_state(exporter) != '?')) &&
           (now() < deadline)) {
        usleep(1000);
    }
    fprintf(stderr, "role 1: exporter pid %d gone, state %c\n",
            (int)exporter, proc_state(exporter));

    /* as NIXL: transfers until one fails, then the endpoint is done for
     * (UCX 1.13 asserts on a get posted to a failed endpoint) */
    for (i = 0, nops = 0; (i < DEAD_OPS) && (ep_error == UCS_OK);
         i++, nops++) {
        d.status[i]     = UCS_INPROGRESS;
        param.user_data = &d.status[i];
        req[i] = (i & 1) ?
                 ucp_put_nbx(n.ep, buf, DEAD_SIZE, remote, rkey, &param) :
                 ucp_get_nbx(n.ep, buf, DEAD_SIZE, remote, rkey, &param);
        if (!UCS_PTR_IS_PTR(req[i])) {
            d.status[i] = UCS_PTR_STATUS(req[i]);
        }
        dead_pause(&d, 0);
        deadline = now() + 20;
        while ((__atomic_load_n(&d.status[i], __ATOMIC_ACQUIRE) ==
                UCS_INPROGRESS) && (now() < deadline)) {
            usleep(1000);
        }
        fprintf(stderr, "role 1: %s %d after the exporter's death: %s\n",
                (i & 1) ? "put" : "get", i,
                (d.status[i] == UCS_INPROGRESS) ? "never completed" :
                ucs_status_string(d.status[i]));
        if (d.status[i] != UCS_OK) {
            nops++;
            break;
        }
    }
    /* the ep's error callback may follow the failed request */
    deadline = now() + 5;
    while ((__atomic_load_n(&ep_error, __ATOMIC_ACQUIRE) == UCS_OK) &&
           (now() < deadline)) {
        usleep(1000);
    }
    dead_pause(&d, 0);
    __atomic_store_n(&d.stop, 1, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);

    for (i = 0; i < nops; i++) {
        if (UCS_PTR_IS_PTR(req[i]) && (d.status[i] != UCS_INPROGRESS)) {
            ucp_request_free(req[i]);
        }
    }
    good = (nops == 1) && dead_connection_error(d.status[0]);
    fprintf(stderr, "role 1: dead exporter: first transfer %s; ep error "
            "callback %s\n", good ? "failed with a connection error" :
            "did not fail with a connection error",
            (ep_error != UCS_OK) ? ucs_status_string(ep_error) : "none");
    ucp_rkey_destroy(rkey);
    uct_gaudi_mem_free(buf);
    return (node_fini(&n, 1) && good &&
            dead_connection_error(ep_error)) ? 0 : 1;
}

/* ------------------------------------------------------------------ */
/* forged keys                                                          */

/* The gaudi_ipc key inside a UCP packed key: 104 bytes, version 4, our
 * pid at 24, the buffer's base at 56 (docs/ipc.md, "rkey") */
#define IPC_RKEY_VER    4
#define IPC_RKEY_SIZE   104
#define IPC_OFF_PID     24
#define IPC_OFF_BASE    56
#define IPC_OFF_LENGTH  64
#define IPC_OFF_OFFSET  72
#define IPC_OFF_IMPORT  80

static uint8_t *find_ipc_rkey(uint8_t *packed, size_t len, uint64_t base)
{
    uint32_t pid = getpid(), kpid;
    uint64_t kbase;
    size_t   i;

    for (i = 0; i + IPC_RKEY_SIZE <= len; i++) {
        if (packed[i] != IPC_RKEY_VER) {
            continue;
        }
        memcpy(&kpid, packed + i + IPC_OFF_PID, sizeof(kpid));
        memcpy(&kbase, packed + i + IPC_OFF_BASE, sizeof(kbase));
        if ((kpid == pid) && (kbase == base)) {
            return packed + i;
        }
    }
    return NULL;
}

static void add_u64(uint8_t *p, int64_t delta)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    v += delta;
    memcpy(p, &v, sizeof(v));
}

/* attacker (0) and bystander (2): export, send the keys, wait */
static int forge_exporter(void)
{
    node_t               n;
    ucp_mem_h            memh;
    void                *buf, *packed;
    uint8_t             *copy, *ipc;
    size_t               len;
    int                  fd = sock[role];

    node_init(&n, (role == 0) ? fd : -1);
    buf  = gaudi_alloc_fill(FORGE_SIZE, 100 + role);
    memh = export_buffer(&n, buf, FORGE_SIZE, fd, &packed, &len); /* genuine */
    if (role == 0) {
        copy = malloc(len);
        memcpy(copy, packed, len);
        ipc = find_ipc_rkey(copy, len, (uintptr_t)buf);
        if (ipc == NULL) {
            fprintf(stderr, "role 0: no gaudi_ipc key in the packed key\n");
            send_blob(fd, NULL, 0);
            return 1;
        }
        /* grown: a larger buffer and import, still self-consistent */
        add_u64(ipc + IPC_OFF_LENGTH, 64ul << 20);
        add_u64(ipc + IPC_OFF_IMPORT, 64ul << 20);
        send_blob(fd, copy, len);
        /* inconsistent: the buffer ends past what the key imports */
        memcpy(copy, packed, len);
        add_u64(ipc + IPC_OFF_LENGTH, 4096);
        send_blob(fd, copy, len);
        free(copy);
    }
    ucp_rkey_buffer_release(packed);

    /* keep the export alive until the victim is done */
    wait_peer_gone(fd);
    ucp_mem_unmap(n.ctx, memh);
    uct_gaudi_mem_free(buf);
    node_fini(&n, 1);
    return 0;
}

typedef struct {
    node_t  *n;
    uint64_t remote;     /* attacker's buffer */
    void    *gaudi;      /* victim's buffers, FORGE_SIZE each */
    uint8_t *host;
    int      failures;
} victim_t;

static void canary_fill(victim_t *v)
{
    memset(v->host, CANARY, FORGE_SIZE);
    if (uct_gaudi_memset(v->gaudi, CANARY, FORGE_SIZE) != UCS_OK) {
        die("uct_gaudi_memset", UCS_ERR_IO_ERROR);
    }
}

static int canary_intact(victim_t *v)
{
    uint8_t *back = malloc(FORGE_SIZE);
    size_t   i;
    int      ok = 1;

    if (uct_gaudi_memcpy(back, v->gaudi, FORGE_SIZE) != UCS_OK) {
        die("uct_gaudi_memcpy", UCS_ERR_IO_ERROR);
    }
    for (i = 0; i < FORGE_SIZE; i++) {
        if ((back[i] != CANARY) || (v->host[i] != CANARY)) {
            ok = 0;
            break;
        }
    }
    free(back);
    return ok;
}

/* one refused access: unpack fails, or get and put fail, our memory
 * untouched */
static void expect_refused(victim_t *v, const char *name, void *packed,
                           uint64_t remote)
{
    ucp_request_param_t param = { 0 };
    ucs_status_t        st_get, st_put;
    ucp_rkey_h          rkey;
    int                 k;

    canary_fill(v);
    if (ucp_ep_rkey_unpack(v->n->ep, packed, &rkey) != UCS_OK) {
        printf("PASS %s: the key does not unpack\n", name);
        return;
    }
    for (k = 0; k < 2; k++) {
        void *local = k ? (void*)v->host : v->gaudi;

        st_get = wait_req(v->n, ucp_get_nbx(v->n->ep, local, 65536, remote,
                                            rkey, &param), 10);
        st_put = wait_req(v->n, ucp_put_nbx(v->n->ep, local, 65536, remote,
                                            rkey, &param), 10);
        if (st_put == UCS_OK) {
            st_put = wait_req(v->n, ucp_ep_flush_nbx(v->n->ep, &param), 10);
        }
        if ((st_get == UCS_OK) || (st_put == UCS_OK) ||
            (st_get == REQ_HUNG) || (st_put == REQ_HUNG)) {
            printf("FAIL %s, %s buffer: get '%s', put '%s'\n", name,
                   k ? "host" : "Gaudi", ucs_status_string(st_get),
                   ucs_status_string(st_put));
            v->failures++;
        } else {
            printf("PASS %s, %s buffer: get '%s', put '%s'\n", name,
                   k ? "host" : "Gaudi", ucs_status_string(st_get),
                   ucs_status_string(st_put));
        }
    }
    if (!canary_intact(v)) {
        printf("FAIL %s: the victim's own buffers changed\n", name);
        v->failures++;
    }
    ucp_rkey_destroy(rkey);
}

static void expect_genuine(victim_t *v, void *packed)
{
    ucp_request_param_t param = { 0 };
    ucp_rkey_h          rkey;
    ucs_status_t        status;
    long                bad;

    status = ucp_ep_rkey_unpack(v->n->ep, packed, &rkey);
    if (status != UCS_OK) {
        die("ucp_ep_rkey_unpack of the genuine key", status);
    }
    status = wait_req(v->n, ucp_get_nbx(v->n->ep, v->gaudi, FORGE_SIZE,
                                        v->remote, rkey, &param), 10);
    bad    = (status == UCS_OK) ? gaudi_check(v->gaudi, FORGE_SIZE, 100) :
                                  -3;
    if (bad != -1) {
        printf("FAIL genuine key: get '%s', first bad byte %ld\n",
               ucs_status_string(status), bad);
        v->failures++;
    } else {
        printf("PASS genuine key: %lu bytes read back intact\n",
               FORGE_SIZE);
    }
    ucp_rkey_destroy(rkey);
}

static int forge_victim(void)
{
    void    *genuine, *grown, *broken, *other;
    uint64_t other_remote;
    victim_t v = { 0 };
    node_t   n;

    node_init(&n, sock[0]);
    v.n      = &n;
    v.remote = recv_u64(sock[0]);
    genuine  = must_recv(sock[0], NULL);
    grown    = must_recv(sock[0], NULL);
    broken   = must_recv(sock[0], NULL);
    other_remote = recv_u64(sock[2]);
    other        = must_recv(sock[2], NULL);
    if (uct_gaudi_mem_alloc(FORGE_SIZE, &v.gaudi) != UCS_OK) {
        die("uct_gaudi_mem_alloc", UCS_ERR_NO_MEMORY);
    }
    v.host = malloc(FORGE_SIZE);

    /* past the export, through a key that claims more: first uncached,
     * then once the genuine key has the buffer imported */
    expect_refused(&v, "grown key, not yet imported", grown,
                   v.remote + FORGE_SIZE + 4096);
    expect_genuine(&v, genuine);
    expect_refused(&v, "grown key, buffer imported", grown,
                   v.remote + FORGE_SIZE + 4096);
    expect_refused(&v, "grown key inside the genuine range", grown,
                   v.remote);
    expect_refused(&v, "inconsistent key", broken, v.remote);
    expect_refused(&v, "another process's key", other, other_remote);
    expect_genuine(&v, genuine);

    free(genuine);
    free(grown);
    free(broken);
    free(other);
    free(v.host);
    uct_gaudi_mem_free(v.gaudi);
    /* role 0's ep goes with it: no force needed, but no flush either */
    if (!node_fini(&n, 1)) {
        v.failures++;
    }
    return v.failures != 0;
}

/* ------------------------------------------------------------------ */
/* faults during tag and stream traffic                                 */

static const size_t fault_sizes[] = { 8, 4096, 65536, 300000, 1ul << 20,
                                      4ul << 20, 16ul << 20 };

static ucs_status_t stream_recv_all(node_t *n, void *buf, size_t size)
{
    ucp_request_param_t param = { 0 };
    ucs_status_ptr_t    req;
    size_t              len;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
    req = ucp_stream_recv_nbx(n->ep, buf, size, &len, &param);
    return wait_req(n, req, 20);
}

/* both sides' verdict on a step: go on only if both succeeded */
static int both_ok(int peer, int mine_ok)
{
    send_u64(peer, mine_ok);
    return (int)recv_u64(peer) && mine_ok;
}

/* fill (sender) or clear (receiver) the Gaudi buffer: the app's own copy,
 * which a fault may fail as well */
static ucs_status_t faults_prepare(void *buf, size_t size, size_t salt)
{
    uint8_t     *host;
    ucs_status_t status;
    size_t       i;

    if (role == 1) {
        return uct_gaudi_memset(buf, 0, size);
    }
    host = malloc(size);
    for (i = 0; i < size; i++) {
        host[i] = pattern(i, salt);
    }
    status = uct_gaudi_memcpy(buf, host, size);
    free(host);
    return status;
}

/*
 * The sender's side of one message. UCX 1.13 does not tell a sender that
 * the receiver's rendezvous get failed (ucp_rndv_get_completion sends no
 * ATS then), so the receiver tells it over the bootstrap socket; the
 * sender then closes the ep (force), which must end its request with an
 * error. *peer_verdict_p: the receiver's verdict, if it came early.
 */
static ucs_status_t faults_send(node_t *n, void *buf, size_t size,
                                int stream, int *peer_verdict_p)
{
    ucp_request_param_t param = { 0 };
    struct pollfd       pfd   = { .fd = sock[0], .events = POLLIN };
    double              deadline = now() + 20;
    ucs_status_ptr_t    req;
    ucs_status_t        status;

    req = stream ? ucp_stream_send_nbx(n->ep, buf, size, &param) :
                   ucp_tag_send_nbx(n->ep, buf, size, TAG, &param);
    if (UCS_PTR_IS_ERR(req) || (req == NULL)) {
        return UCS_PTR_STATUS(req);
    }
    do {
        ucp_worker_progress(n->worker);
        status = ucp_request_check_status(req);
        if ((status == UCS_INPROGRESS) && (*peer_verdict_p < 0) &&
            (poll(&pfd, 1, 0) > 0)) {
            *peer_verdict_p = (int)recv_u64(sock[0]);
            if (!*peer_verdict_p) {
                printf("the receiver failed, our send is in progress: "
                       "closing the ep\n");
                param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
                param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
                wait_req(n, ucp_ep_close_nbx(n->ep, &param), 10);
                n->ep    = NULL;
                deadline = now() + 1;
            }
        }
    } while ((status == UCS_INPROGRESS) && (now() < deadline));
    if ((status == UCS_INPROGRESS) && (n->ep == NULL)) {
        /* left to the process's exit (docs/ipc.md, "Faults") */
        printf("LIMIT send of %zu B: still in progress after the receiver "
               "failed and the ep was closed\n", size);
        return UCS_ERR_CANCELED;
    }
    if (status == UCS_INPROGRESS) {
        return REQ_HUNG;
    }
    ucp_request_free(req);
    return status;
}

static ucs_status_t faults_transfer(node_t *n, void *buf, size_t size,
                                    int stream, int *peer_verdict_p)
{
    ucp_request_param_t param = { 0 };

    if (role == 0) {
        return faults_send(n, buf, size, stream, peer_verdict_p);
    }
    return stream ? stream_recv_all(n, buf, size) :
           wait_req(n, ucp_tag_recv_nbx(n->worker, buf, size, TAG,
                                        (ucp_tag_t)-1, &param), 20);
}

/*
 * Each size: prepare, transfer, check. A failed preparation (the app's own
 * copy) skips the size; a failed transfer ends the traffic (the ep may be
 * unusable after it). Returns 1 on corruption or a hang.
 */
static int run_faults(int stream)
{
    const char  *what = stream ? "stream" : "tag";
    int          peer = sock[0], failed = 0, bad_data = 0, peer_verdict;
    ucs_status_t status;
    node_t       n;
    void        *buf;
    size_t       s, size;
    long         bad;

    node_init(&n, peer);
    status = uct_gaudi_mem_alloc(16ul << 20, &buf);
    if (status != UCS_OK) {
        die("uct_gaudi_mem_alloc", status);
    }
    for (s = 0; !failed && (s < sizeof(fault_sizes) / sizeof(fault_sizes[0]));
         s++) {
        size   = fault_sizes[s];
        status = faults_prepare(buf, size, s);
        if (status != UCS_OK) {
            printf("ERROR copy %s of %zu B: %s\n", role ? "clear" : "fill",
                   size, ucs_status_string(status));
        }
        if (!both_ok(peer, status == UCS_OK)) {
            continue;
        }

        peer_verdict = -1;
        status       = faults_transfer(&n, buf, size, stream, &peer_verdict);
        if (status == REQ_HUNG) {
            printf("FAIL %s %zu B: request still in progress after 20 s\n",
                   what, size);
            return 1;
        }
        if (status != UCS_OK) {
            printf("ERROR request %s %s of %zu B: %s\n", what,
                   role ? "receive" : "send", size,
                   ucs_status_string(status));
        } else if (role == 1) {
            bad = gaudi_check(buf, size, s);
            if (bad == -2) {
                printf("ERROR copy check of %zu B\n", size);
            } else if (bad >= 0) {
                printf("FAIL %s %zu B: byte %ld differs after a successful "
                       "receive\n", what, size, bad);
                bad_data = 1;
            } else {
                printf("PASS %s %zu B\n", what, size);
            }
        }
        if (role == 1) {
            send_u64(peer, status == UCS_OK);   /* early, for faults_send */
            failed = !recv_u64(peer) || (status != UCS_OK);
        } else {
            if (peer_verdict < 0) {
                peer_verdict = (int)recv_u64(peer);
            }
            send_u64(peer, status == UCS_OK);
            failed = (status != UCS_OK) || !peer_verdict;
        }
    }
    uct_gaudi_mem_free(buf);
    /* after a failure the peer may be stuck in a half-done protocol */
    if (!node_fini(&n, failed)) {
        return 1;
    }
    return bad_data;
}

/* ------------------------------------------------------------------ */
/* launcher                                                             */

static int num_roles(const char *c)
{
    return strcmp(c, "forged") ? 2 : 3;
}

static void dump_stacks(pid_t pid)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "gdb -p %d -batch -ex 'thread apply all bt' "
             "2>/dev/null | grep '^#' | head -40 >&2", (int)pid);
    if (system(cmd) != 0) {
        fprintf(stderr, "(no stack of pid %d)\n", (int)pid);
    }
}

static int launch(int argc, char **argv)
{
    int    nroles = num_roles(argv[1]), pair[MAX_ROLES][2], r, i;
    pid_t  pid[MAX_ROLES];
    int    status[MAX_ROLES], done[MAX_ROLES] = { 0 }, left;
    char   env[32], name[256], fdarg[3][16], rolearg[16];
    const char *faults, *t;
    double deadline, timeout;
    char  *args[16];
    int    killed = -1, ok = 1, hold = -1;

    t       = getenv("PEER_TEST_TIMEOUT");
    timeout = t ? atof(t) : 30;
    snprintf(name, sizeof(name), "%s", argv[1]);
    for (i = 2; i < argc; i++) {
        snprintf(name + strlen(name), sizeof(name) - strlen(name), " %s",
                 argv[i]);
    }
    if (!strcmp(argv[1], "kill-sender") ||
        !strcmp(argv[1], "kill-exporter-rma") ||
        !strcmp(argv[1], "dead-exporter")) {
        killed = 0;
    } else if (!strcmp(argv[1], "kill-receiver")) {
        killed = 1;
    }

    /* a zombie exporter: reaped only once role 1 is done */
    if (!strcmp(argv[1], "dead-exporter") && (argc > 4) &&
        !strcmp(argv[4], "zombie")) {
        hold = 0;
    }

    /* pair[r]: role 1 <-> role r (r = 0, 2) */
    for (r = 0; r < nroles; r++) {
        if ((r != 1) && (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
                                    pair[r]) != 0)) {
            perror("socketpair");
            return 1;
        }
    }
    for (r = 0; r < nroles; r++) {
        pid[r] = fork();
        if (pid[r] < 0) {
            perror("fork");
            return 1;
        }
        if (pid[r] > 0) {
            continue;
        }
        for (i = 0; i < nroles; i++) {
            int fd = -1;

            if (i == 1) {
                snprintf(fdarg[i], sizeof(fdarg[i]), "-1");
                continue;
            }
            if (r == 1) {
                fd = dup(pair[i][1]);         /* without CLOEXEC */
            } else if (r == i) {
                fd = dup(pair[i][0]);
            }
            snprintf(fdarg[i], sizeof(fdarg[i]), "%d", fd);
        }
        snprintf(env, sizeof(env), "FAULTS_ROLE%d", r);
        faults = getenv(env);
        if ((faults != NULL) && (*faults != '\0')) {
            setenv("HLSIM_FAULTS", faults, 1);
        } else {
            unsetenv("HLSIM_FAULTS");
        }
        snprintf(env, sizeof(env), "%d", r);
        setenv("UCX_GAUDI_DEVICE", env, 1);
        snprintf(rolearg, sizeof(rolearg), "%d", r);
        i         = 0;
        args[i++] = argv[0];
        args[i++] = "--role";
        args[i++] = rolearg;
        args[i++] = fdarg[0];
        args[i++] = fdarg[1];
        args[i++] = fdarg[2];
        for (r = 1; (r < argc) && (i < 15); r++) {
            args[i++] = argv[r];
        }
        args[i] = NULL;
        execv("/proc/self/exe", args);
        perror("execv");
        _exit(127);
    }
    for (r = 0; r < nroles; r++) {
        if (r != 1) {
            close(pair[r][0]);
            close(pair[r][1]);
        }
    }

    deadline = now() + timeout;
    left     = nroles;
    while ((left > 0) && (now() < deadline)) {
        for (r = 0; r < nroles; r++) {
            if ((r == hold) && !done[1]) {
                continue;
            }
            if (!done[r] && (waitpid(pid[r], &status[r], WNOHANG) ==
                             pid[r])) {
                done[r] = 1;
                left--;
            }
        }
        usleep(20000);
    }
    for (r = 0; r < nroles; r++) {
        if (done[r]) {
            continue;
        }
        printf("FAIL %s: role %d still running after %.0f s\n", name, r,
               timeout);
        dump_stacks(pid[r]);
        kill(pid[r], SIGKILL);
        waitpid(pid[r], &status[r], 0);
        ok = 0;
    }
    for (r = 0; ok && (r < nroles); r++) {
        if (r == killed) {
            if (!WIFSIGNALED(status[r]) || (WTERMSIG(status[r]) != SIGKILL)) {
                printf("FAIL %s: role %d was to be killed\n", name, r);
                ok = 0;
            }
        } else if (WIFSIGNALED(status[r])) {
            printf("FAIL %s: role %d died of signal %d\n", name, r,
                   WTERMSIG(status[r]));
            ok = 0;
        } else if (WEXITSTATUS(status[r]) != 0) {
            printf("FAIL %s: role %d exited with %d\n", name, r,
                   WEXITSTATUS(status[r]));
            ok = 0;
        }
    }
    if (ok) {
        printf("PASS %s\n", name);
    }
    printf("%d passed, %d failed\n", ok, !ok);
    return !ok;
}

int main(int argc, char **argv)
{
    int i;

    if ((argc < 2) || !strcmp(argv[1], "-h")) {
        fprintf(stderr, "usage: %s kill-sender|kill-receiver|"
                "kill-exporter-rma|dead-exporter|forged|faults-tag|"
                "faults-stream [peer|none] [ipc|staged] [mid|zombie]\n",
                argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "--role")) {
        return launch(argc, argv);
    }
    if (argc < 7) {
        return 2;
    }
    role = atoi(argv[2]);
    for (i = 0; i < MAX_ROLES; i++) {
        sock[i] = atoi(argv[3 + i]);
    }
    test_case = argv[6];
    peer_mode = (argc > 7) && !strcmp(argv[7], "peer");
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);   /* a dead peer is an outcome, not a death */

    if (!strcmp(test_case, "kill-sender")) {
        return run_kill(1, (argc > 9) && !strcmp(argv[9], "mid"));
    } else if (!strcmp(test_case, "kill-receiver")) {
        return run_kill(0, (argc > 9) && !strcmp(argv[9], "mid"));
    } else if (!strcmp(test_case, "kill-exporter-rma")) {
        return run_kill_rma();
    } else if (!strcmp(test_case, "dead-exporter")) {
        dead_zombie = (argc > 9) && !strcmp(argv[9], "zombie");
        return run_dead_exporter();
    } else if (!strcmp(test_case, "forged")) {
        return (role == 1) ? forge_victim() : forge_exporter();
    } else if (!strcmp(test_case, "faults-tag")) {
        return run_faults(0);
    } else if (!strcmp(test_case, "faults-stream")) {
        return run_faults(1);
    }
    fprintf(stderr, "unknown case %s\n", test_case);
    return 2;
}

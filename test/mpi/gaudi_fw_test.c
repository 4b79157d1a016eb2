/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Two ranks that behave as framework processes (PyTorch with vLLM's NIXL
 * connector): UCX starts first (MPI_Init with pml ucx, then a UCP context
 * of NIXL's kind), and only then does the framework load SynapseAI
 * (dlopen, as the Habana PyTorch bridge does), acquire its device and
 * allocate its tensors with synDeviceMalloc and its pinned host memory
 * with synHostMalloc. The tensors then move:
 * - by MPI tag messages (pml ucx), each tensor to the peer's;
 * - in NIXL's pattern: its own UCP context with RMA and AM, endpoints in
 *   PEER error mode, ucp_mem_map(address, length) without flags, packed
 *   rkeys exchanged, ucp_put_nbx / ucp_get_nbx of 64 KiB and 4 MiB
 *   tensors with their memh, ep flush; optionally with a progress thread
 *   (worker in UCS_THREAD_MODE_MULTI).
 * Every byte is written and checked through the application's own stream
 * (synMemCopyAsync + synStreamSynchronize through its pinned buffers).
 * After UCX has deregistered everything and is gone (MPI_Finalize), the
 * pinned buffers must still be mapped and usable by the application, and
 * the device still its own.
 *
 * usage: gaudi_fw_test [--progress-thread]
 *   env FW_SYNAPSE_LIB: the libSynapse to dlopen (default libSynapse.so)
 * Each rank prints "PASS rank R: ..." / "FAIL rank R: ..." per check and
 * ends with "rank R: N passed, N failed".
 */

#include <synsim_api.h>
#include <uct_gaudi_ucx_features.h>
#include <ucp/api/ucp.h>

#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL     (64ul << 10)
#define LARGE     (4ul << 20)
#define NSMALL    32
#define NLARGE    3
#define NTENSORS  (NSMALL + NLARGE)
#define SPACER    384   /* between tensors: not page aligned to each other */
#define HOST_SIZE (1ul << 20)

/* SynapseAI as the framework sees it: resolved with dlsym */
typedef struct {
    void      *handle;
    synStatus (*initialize)(void);
    synStatus (*destroy)(void);
    synStatus (*acquire_by_type)(synDeviceId*, synDeviceType);
    synStatus (*acquire)(synDeviceId*, const char*);
    synStatus (*release)(synDeviceId);
    synStatus (*get_info)(synDeviceId, synDeviceInfo*);
    synStatus (*dev_malloc)(synDeviceId, uint64_t, uint64_t, uint32_t,
                            uint64_t*);
    synStatus (*dev_free)(synDeviceId, uint64_t, uint32_t);
    synStatus (*host_malloc)(synDeviceId, uint64_t, uint32_t, void**);
    synStatus (*host_free)(synDeviceId, const void*, uint32_t);
    synStatus (*stream_create)(synStreamHandle*, synDeviceId, uint32_t);
    synStatus (*stream_destroy)(synStreamHandle);
    synStatus (*stream_sync)(synStreamHandle);
    synStatus (*copy)(synStreamHandle, uint64_t, uint64_t, uint64_t,
                      synDmaDir);
    synStatus (*mem_info)(synDeviceId, uint64_t*, uint64_t*);
} syn_t;

typedef struct {
    uint64_t  addr;
    size_t    size;
    ucp_mem_h memh;
} tensor_t;

/* what a rank shares with its peer about one registered buffer */
typedef struct {
    uint64_t addr;
    uint32_t rkey_len;
    uint8_t  rkey[256];
} remote_t;

static syn_t            syn;
static synDeviceId      dev;
static synStreamHandle  stream;
static int              rank, peer, npass, nfail;
static tensor_t         a[NTENSORS], b[NTENSORS];
static uint64_t         spacers[NTENSORS];
static uint8_t         *stage_in, *stage_out, *host_tensor;
static size_t           total;          /* bytes of all tensors */
static ucp_context_h    nctx;
static ucp_worker_h     nworker;
static ucp_ep_h         nep;
static ucp_mem_h        host_memh;
static ucp_rkey_h       rkey_a[NTENSORS], rkey_b[NTENSORS], rkey_host;
static remote_t         peer_a[NTENSORS], peer_b[NTENSORS], peer_host;
static ucs_status_t     ep_error = UCS_OK;
static int              progress_thread;
static volatile int     stop_progress;

static void check(int ok, const char *what)
{
    printf("%s rank %d: %s\n", ok ? "PASS" : "FAIL", rank, what);
    fflush(stdout);
    ok ? ++npass : ++nfail;
}

static int syn_ok(synStatus st, const char *call)
{
    if (st != synSuccess) {
        fprintf(stderr, "rank %d: %s failed: synStatus %d\n", rank, call, st);
    }
    return st == synSuccess;
}

static int ucs_ok(ucs_status_t st, const char *call)
{
    if (st != UCS_OK) {
        fprintf(stderr, "rank %d: %s failed: %s\n", rank, call,
                ucs_status_string(st));
    }
    return st == UCS_OK;
}

static uint8_t pattern(size_t i, unsigned tensor, unsigned seed)
{
    return (uint8_t)(i * 7 + tensor * 31 + seed * 101 + (i >> 12));
}

/* ------------------------------------------------------------------ */
/* the framework's SynapseAI                                           */

static int syn_load(void)
{
    const char *lib = getenv("FW_SYNAPSE_LIB");
    struct { const char *name; void **fn; int optional; } syms[] = {
        {"synInitialize",                (void**)&syn.initialize,      0},
        {"synDestroy",                   (void**)&syn.destroy,         0},
        {"synDeviceAcquireByDeviceType", (void**)&syn.acquire_by_type, 1},
        {"synDeviceAcquire",             (void**)&syn.acquire,         0},
        {"synDeviceRelease",             (void**)&syn.release,         0},
        {"synDeviceGetInfo",             (void**)&syn.get_info,        0},
        {"synDeviceMalloc",              (void**)&syn.dev_malloc,      0},
        {"synDeviceFree",                (void**)&syn.dev_free,        0},
        {"synHostMalloc",                (void**)&syn.host_malloc,     0},
        {"synHostFree",                  (void**)&syn.host_free,       0},
        {"synStreamCreateGeneric",       (void**)&syn.stream_create,   0},
        {"synStreamDestroy",             (void**)&syn.stream_destroy,  0},
        {"synStreamSynchronize",         (void**)&syn.stream_sync,     0},
        {"synMemCopyAsync",              (void**)&syn.copy,            0},
        {"synDeviceGetMemoryInfo",       (void**)&syn.mem_info,        1},
    };
    size_t i;
    int ok = 1;

    syn.handle = dlopen((lib != NULL) ? lib : "libSynapse.so",
                        RTLD_NOW | RTLD_GLOBAL);
    if (syn.handle == NULL) {
        fprintf(stderr, "rank %d: dlopen: %s\n", rank, dlerror());
        return 0;
    }
    for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        *syms[i].fn = dlsym(syn.handle, syms[i].name);
        if ((*syms[i].fn == NULL) && !syms[i].optional) {
            fprintf(stderr, "rank %d: libSynapse has no %s\n", rank,
                    syms[i].name);
            ok = 0;
        }
    }
    return ok;
}

/* as the PyTorch bridge: the first device type that can be acquired */
static int syn_acquire(void)
{
    static const synDeviceType types[] = { synDeviceGaudi3, synDeviceGaudi2,
                                           synDeviceGaudi };
    synStatus st = synFail;
    size_t i;

    if (!syn_ok(syn.initialize(), "synInitialize")) {
        return 0;
    }
    if (syn.acquire_by_type == NULL) {
        printf("rank %d: no synDeviceAcquireByDeviceType, "
               "synDeviceAcquire(NULL bus)\n", rank);
        return syn_ok(syn.acquire(&dev, NULL), "synDeviceAcquire");
    }
    for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        st = syn.acquire_by_type(&dev, types[i]);
        if (st == synSuccess) {
            return 1;
        }
        fprintf(stderr, "rank %d: synDeviceAcquireByDeviceType(%d): "
                "synStatus %d\n", rank, types[i], st);
    }
    return 0;
}

/* tensors A (data) and B (landing), interleaved with odd spacers */
static int syn_alloc(void)
{
    int i;

    for (i = 0; i < NTENSORS; i++) {
        a[i].size = b[i].size = (i < NSMALL) ? SMALL : LARGE;
        total    += a[i].size;
        if (!syn_ok(syn.dev_malloc(dev, a[i].size, 0, 0, &a[i].addr),
                    "synDeviceMalloc") ||
            !syn_ok(syn.dev_malloc(dev, SPACER, 0, 0, &spacers[i]),
                    "synDeviceMalloc") ||
            !syn_ok(syn.dev_malloc(dev, b[i].size, 0, 0, &b[i].addr),
                    "synDeviceMalloc")) {
            return 0;
        }
    }
    return syn_ok(syn.host_malloc(dev, total, 0, (void**)&stage_in),
                  "synHostMalloc") &&
           syn_ok(syn.host_malloc(dev, total, 0, (void**)&stage_out),
                  "synHostMalloc") &&
           syn_ok(syn.host_malloc(dev, HOST_SIZE, 0, (void**)&host_tensor),
                  "synHostMalloc");
}

/* write every tensor of @t with @seed through the application's stream
 * (zeros when @seed < 0) */
static int fill(tensor_t *t, int seed)
{
    size_t off = 0, i;
    int k;

    for (k = 0; k < NTENSORS; off += t[k].size, k++) {
        for (i = 0; i < t[k].size; i++) {
            stage_in[off + i] = (seed < 0) ? 0 : pattern(i, k, seed);
        }
        if (!syn_ok(syn.copy(stream, (uintptr_t)stage_in + off, t[k].size,
                             t[k].addr, HOST_TO_DRAM), "synMemCopyAsync")) {
            return 0;
        }
    }
    return syn_ok(syn.stream_sync(stream), "synStreamSynchronize");
}

/* read every tensor of @t back through the stream and compare */
static int verify(tensor_t *t, unsigned seed)
{
    size_t off = 0, i;
    int k;

    memset(stage_out, 0, total);
    for (k = 0; k < NTENSORS; off += t[k].size, k++) {
        if (!syn_ok(syn.copy(stream, t[k].addr, t[k].size,
                             (uintptr_t)stage_out + off, DRAM_TO_HOST),
                    "synMemCopyAsync")) {
            return 0;
        }
    }
    if (!syn_ok(syn.stream_sync(stream), "synStreamSynchronize")) {
        return 0;
    }
    for (off = 0, k = 0; k < NTENSORS; off += t[k].size, k++) {
        for (i = 0; i < t[k].size; i++) {
            if (stage_out[off + i] != pattern(i, k, seed)) {
                fprintf(stderr, "rank %d: tensor %d (%zu B) byte %zu: 0x%x, "
                        "expected 0x%x\n", rank, k, t[k].size, i,
                        stage_out[off + i], pattern(i, k, seed));
                return 0;
            }
        }
    }
    return 1;
}

/* host -> device -> host through the stream and the pinned buffers */
/*
 * The module's public C API, as a framework calls it beside UCX: a device
 * allocation and copies both ways through its engine, which lives until
 * the process exits, after the framework released its device (at exit
 * the engine's SynapseAI objects are gone with the device).
 */
static int api_round_trip(size_t size)
{
    void *h = dlopen("libuct_gaudi.so.0", RTLD_NOW | RTLD_NOLOAD);
    int (*alloc)(size_t, void**), (*release)(void*);
    int (*copy)(void*, const void*, size_t);
    uint8_t *in = malloc(size), *out = malloc(size);
    void *dev   = NULL;
    size_t i;
    int ok;

    alloc   = (h != NULL) ? (int (*)(size_t, void**))
                            dlsym(h, "uct_gaudi_mem_alloc") : NULL;
    release = (h != NULL) ? (int (*)(void*))
                            dlsym(h, "uct_gaudi_mem_free") : NULL;
    copy    = (h != NULL) ? (int (*)(void*, const void*, size_t))
                            dlsym(h, "uct_gaudi_memcpy") : NULL;
    ok = (alloc != NULL) && (release != NULL) && (copy != NULL) &&
         (in != NULL) && (out != NULL) && (alloc(size, &dev) == 0);
    for (i = 0; ok && (i < size); i++) {
        in[i] = (uint8_t)(i * 13 + 5);
    }
    ok = ok && (copy(dev, in, size) == 0) && (copy(out, dev, size) == 0) &&
         !memcmp(in, out, size);
    if (dev != NULL) {
        ok &= (release(dev) == 0);
    }
    free(in);
    free(out);
    if (h != NULL) {
        dlclose(h);
    }
    return ok;
}

static int round_trip(uint8_t *src, size_t size, uint64_t dev_addr,
                      unsigned seed)
{
    size_t i;

    for (i = 0; i < size; i++) {
        src[i] = pattern(i, 0, seed);
    }
    memset(stage_out, 0, size);
    if (!syn_ok(syn.copy(stream, (uintptr_t)src, size, dev_addr,
                         HOST_TO_DRAM), "synMemCopyAsync H2D") ||
        !syn_ok(syn.copy(stream, dev_addr, size, (uintptr_t)stage_out,
                         DRAM_TO_HOST), "synMemCopyAsync D2H") ||
        !syn_ok(syn.stream_sync(stream), "synStreamSynchronize")) {
        return 0;
    }
    return memcmp(src, stage_out, size) == 0;
}

/* ------------------------------------------------------------------ */
/* NIXL's UCP                                                          */

static void *progress_loop(void *arg)
{
    while (!stop_progress) {
        if (ucp_worker_progress(nworker) == 0) {
            sched_yield();
        }
    }
    return NULL;
}

static void nixl_progress(void)
{
    if (!progress_thread) {
        ucp_worker_progress(nworker);
    } else {
        sched_yield();
    }
}

static ucs_status_t wait_req(ucs_status_ptr_t req)
{
    ucs_status_t status;

    if (req == NULL) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        nixl_progress();
    }
    ucp_request_free(req);
    return status;
}

/* an MPI wait that keeps NIXL's worker going: RMA that UCX emulates with
 * active messages needs the target to progress */
static void mpi_wait(MPI_Request *req)
{
    int done = 0;

    while (!done) {
        if (nworker != NULL) {
            nixl_progress();
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

static int all_ok(int mine)
{
    MPI_Request req;
    int all;

    MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD, &req);
    mpi_wait(&req);
    return all;
}

static void ep_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    fprintf(stderr, "rank %d: ep error callback: %s\n", rank,
            ucs_status_string(status));
    ep_error = status;
}

/* whether this UCP has the setting @name */
static int config_has(const ucp_config_t *config, const char *name)
{
    char *text = NULL, key[64];
    size_t len = 0;
    FILE *f    = open_memstream(&text, &len);
    int found;

    if (f == NULL) {
        return 0;
    }
    ucp_config_print(config, f, NULL, UCS_CONFIG_PRINT_CONFIG);
    fclose(f);
    snprintf(key, sizeof(key), "UCX_%s=", name);
    found = (text != NULL) && (strstr(text, key) != NULL);
    free(text);
    return found;
}

/* context, worker and endpoint as NIXL's UCX backend makes them */
static int nixl_init(void)
{
    ucp_params_t params = { 0 };
    ucp_worker_params_t wparams = { 0 };
    ucp_ep_params_t eparams = { 0 };
    ucp_lib_attr_t lattr;
    ucp_config_t *config;
    ucp_address_t *addr;
    size_t addr_len;
    char peer_addr[4096];
    uint32_t len, peer_len;
    ucs_status_t st;

    if (progress_thread) {
        lattr.field_mask = UCP_LIB_ATTR_FIELD_MAX_THREAD_LEVEL;
        if (!ucs_ok(ucp_lib_query(&lattr), "ucp_lib_query")) {
            return 0;
        }
        if (lattr.max_thread_level < UCS_THREAD_MODE_MULTI) {
            fprintf(stderr, "rank %d: this UCX has no UCS_THREAD_MODE_MULTI\n",
                    rank);
            return 0;
        }
    }

    /* NIXL's settings; MAX_RMA_RAILS only where UCP has it (an unknown
     * name would be warned about as an unused setting) */
    if (!ucs_ok(ucp_config_read(NULL, NULL, &config), "ucp_config_read") ||
        !ucs_ok(ucp_config_modify(config, "RNDV_THRESH", "inf"),
                "ucp_config_modify(RNDV_THRESH)") ||
        (config_has(config, "MAX_RMA_RAILS") &&
         !ucs_ok(ucp_config_modify(config, "MAX_RMA_RAILS", "2"),
                 "ucp_config_modify(MAX_RMA_RAILS)"))) {
        return 0;
    }
    params.field_mask        = UCP_PARAM_FIELD_FEATURES |
                               UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features          = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 |
                               UCP_FEATURE_AMO64 | UCP_FEATURE_AM;
    params.mt_workers_shared = 0;
    st = ucp_init(&params, config, &nctx);
    ucp_config_release(config);
    if (!ucs_ok(st, "ucp_init")) {
        return 0;
    }

    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = progress_thread ? UCS_THREAD_MODE_MULTI :
                                            UCS_THREAD_MODE_SERIALIZED;
    if (!ucs_ok(ucp_worker_create(nctx, &wparams, &nworker),
                "ucp_worker_create") ||
        !ucs_ok(ucp_worker_get_address(nworker, &addr, &addr_len),
                "ucp_worker_get_address")) {
        return 0;
    }
    len = addr_len;
    if (len > sizeof(peer_addr)) {
        fprintf(stderr, "rank %d: worker address of %u B\n", rank, len);
        return 0;
    }
    MPI_Sendrecv(&len, 1, MPI_UINT32_T, peer, 0, &peer_len, 1, MPI_UINT32_T,
                 peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(addr, len, MPI_BYTE, peer, 0, peer_addr, sizeof(peer_addr),
                 MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ucp_worker_release_address(nworker, addr);

    eparams.field_mask      = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                              UCP_EP_PARAM_FIELD_ERR_HANDLER |
                              UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    eparams.address         = (ucp_address_t*)peer_addr;
    eparams.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
    eparams.err_handler.cb  = ep_err_cb;
    eparams.err_handler.arg = NULL;
    return ucs_ok(ucp_ep_create(nworker, &eparams, &nep), "ucp_ep_create");
}

/* ucp_mem_map(address, length), no flags, as NIXL's registerMem */
static int nixl_reg(void *address, size_t length, ucp_mem_h *memh_p)
{
    ucp_mem_map_params_t mp = { 0 };

    mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_FLAGS |
                    UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                    UCP_MEM_MAP_PARAM_FIELD_ADDRESS;
    mp.address    = address;
    mp.length     = length;
    mp.flags      = 0;
    return ucs_ok(ucp_mem_map(nctx, &mp, memh_p), "ucp_mem_map");
}

/* memory type UCP found for a registration (NIXL refuses device memory
 * that UCP takes for host memory) */
static ucs_memory_type_t nixl_mem_type(ucp_mem_h memh)
{
    ucp_mem_attr_t attr;

    attr.field_mask = UCP_MEM_ATTR_FIELD_MEM_TYPE;
    if (!ucs_ok(ucp_mem_query(memh, &attr), "ucp_mem_query")) {
        return UCS_MEMORY_TYPE_UNKNOWN;
    }
    return attr.mem_type;
}

static int pack(ucp_mem_h memh, uint64_t addr, remote_t *r)
{
    void *buf;
    size_t len;

    if (!ucs_ok(ucp_rkey_pack(nctx, memh, &buf, &len), "ucp_rkey_pack")) {
        return 0;
    }
    if (len > sizeof(r->rkey)) {
        fprintf(stderr, "rank %d: packed rkey of %zu B\n", rank, len);
        ucp_rkey_buffer_release(buf);
        return 0;
    }
    r->addr     = addr;
    r->rkey_len = len;
    memcpy(r->rkey, buf, len);
    ucp_rkey_buffer_release(buf);
    return 1;
}

/* register every tensor and the pinned host tensor; swap keys */
static int nixl_register(void)
{
    remote_t mine_a[NTENSORS], mine_b[NTENSORS], mine_host;
    int k, ok = 1, gaudi_type = 1;
    ucs_memory_type_t mt = UCS_MEMORY_TYPE_UNKNOWN;
    char what[160];

    for (k = 0; ok && (k < NTENSORS); k++) {
        ok = nixl_reg((void*)(uintptr_t)a[k].addr, a[k].size, &a[k].memh) &&
             nixl_reg((void*)(uintptr_t)b[k].addr, b[k].size, &b[k].memh) &&
             pack(a[k].memh, a[k].addr, &mine_a[k]) &&
             pack(b[k].memh, b[k].addr, &mine_b[k]);
        if (ok) {
            mt = nixl_mem_type(a[k].memh);
            gaudi_type &= (mt != UCS_MEMORY_TYPE_HOST) &&
                          (mt != UCS_MEMORY_TYPE_UNKNOWN) &&
                          (nixl_mem_type(b[k].memh) == mt);
        }
    }
    check(ok, "ucp_mem_map(address, length) of 70 synDeviceMalloc tensors "
          "(64 KiB and 4 MiB), rkeys packed");
    if (!all_ok(ok)) {
        return 0;
    }
    snprintf(what, sizeof(what), "UCP detects every tensor as device "
             "memory (%s)", ucs_memory_type_names[mt]);
    check(gaudi_type, what);

    ok = nixl_reg(host_tensor, HOST_SIZE, &host_memh) &&
         pack(host_memh, (uintptr_t)host_tensor, &mine_host);
    check(ok && (nixl_mem_type(host_memh) == UCS_MEMORY_TYPE_HOST),
          "ucp_mem_map of synHostMalloc memory (host)");
    if (!all_ok(ok)) {
        return 0;
    }

    MPI_Sendrecv(mine_a, sizeof(mine_a), MPI_BYTE, peer, 1, peer_a,
                 sizeof(peer_a), MPI_BYTE, peer, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(mine_b, sizeof(mine_b), MPI_BYTE, peer, 2, peer_b,
                 sizeof(peer_b), MPI_BYTE, peer, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(&mine_host, sizeof(mine_host), MPI_BYTE, peer, 3,
                 &peer_host, sizeof(peer_host), MPI_BYTE, peer, 3,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (k = 0, ok = 1; ok && (k < NTENSORS); k++) {
        ok = ucs_ok(ucp_ep_rkey_unpack(nep, peer_a[k].rkey, &rkey_a[k]),
                    "ucp_ep_rkey_unpack") &&
             ucs_ok(ucp_ep_rkey_unpack(nep, peer_b[k].rkey, &rkey_b[k]),
                    "ucp_ep_rkey_unpack");
    }
    ok = ok && ucs_ok(ucp_ep_rkey_unpack(nep, peer_host.rkey, &rkey_host),
                      "ucp_ep_rkey_unpack");
    check(ok, "the peer's rkeys unpack");
    return all_ok(ok);
}

static void rma_param(ucp_request_param_t *param, ucp_mem_h memh)
{
    memset(param, 0, sizeof(*param));
    param->op_attr_mask = UCP_OP_ATTR_FLAG_MULTI_SEND;
#if UCT_GAUDI_HAVE_UCP_PARAM_MEMH
    param->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    param->memh          = memh;
#endif
}

/* all puts (or gets) of the tensors posted at once, then the ep flush */
static int nixl_xfer(int is_put)
{
    ucs_status_ptr_t reqs[NTENSORS + 1];
    ucp_request_param_t param;
    ucs_status_t st;
    int k, ok = 1;

    for (k = 0; k < NTENSORS; k++) {
        if (is_put) {
            /* our A[k] -> the peer's B[k] */
            rma_param(&param, a[k].memh);
            reqs[k] = ucp_put_nbx(nep, (void*)(uintptr_t)a[k].addr,
                                  a[k].size, peer_b[k].addr, rkey_b[k],
                                  &param);
        } else {
            /* the peer's A[k] -> our B[k] */
            rma_param(&param, b[k].memh);
            reqs[k] = ucp_get_nbx(nep, (void*)(uintptr_t)b[k].addr,
                                  b[k].size, peer_a[k].addr, rkey_a[k],
                                  &param);
        }
    }
    memset(&param, 0, sizeof(param));
    reqs[NTENSORS] = ucp_ep_flush_nbx(nep, &param);
    for (k = 0; k <= NTENSORS; k++) {
        st = wait_req(reqs[k]);
        if (st != UCS_OK) {
            fprintf(stderr, "rank %d: %s %d: %s\n", rank,
                    (k == NTENSORS) ? "flush" : is_put ? "put" : "get", k,
                    ucs_status_string(st));
            ok = 0;
        }
    }
    return ok;
}

/* 64 KiB: our device A[0] -> the peer's pinned host tensor, and back */
static int nixl_host(void)
{
    ucp_request_param_t param;
    int ok;

    rma_param(&param, a[0].memh);
    ok = (wait_req(ucp_put_nbx(nep, (void*)(uintptr_t)a[0].addr, SMALL,
                               peer_host.addr, rkey_host, &param)) == UCS_OK);
    memset(&param, 0, sizeof(param));
    ok = ok && (wait_req(ucp_ep_flush_nbx(nep, &param)) == UCS_OK);
    barrier();
    return ok;
}

static void rkey_destroy(ucp_rkey_h rkey)
{
    if (rkey != NULL) {
        ucp_rkey_destroy(rkey);
    }
}

static void mem_unmap(ucp_mem_h memh)
{
    if (memh != NULL) {
        ucp_mem_unmap(nctx, memh);
    }
}

/* the framework's free HBM as its memory statistics read it */
static uint64_t free_hbm(void)
{
    uint64_t free = 0, total = 0;

    (void)syn_ok(syn.mem_info(dev, &free, &total), "synDeviceGetMemoryInfo");
    return free;
}

/*
 * A 4 KiB device allocation through UCX (ucp_mem_map ALLOCATE, memory
 * type @a mt) takes at most UCX_GAUDI_SYN_HEAP_CHUNK (2 MiB) + 4 KiB of
 * the framework's free HBM, not a device page (768 MiB on Gaudi2), holds
 * data, and the unmap gives it back (docs/md.md, "Device memory")
 */
static void hbm_alloc(ucs_memory_type_t mt)
{
    const uint64_t bound = (2ul << 20) + 4096;
    ucp_mem_map_params_t mp = { 0 };
    ucp_mem_attr_t attr;
    uint64_t free0, free1, free2;
    ucp_mem_h memh;
    char what[200];
    int ok;

    if (syn.mem_info == NULL) {
        printf("rank %d: SKIP HBM economy: libSynapse has no "
               "synDeviceGetMemoryInfo\n", rank);
        return;
    }
    free0            = free_hbm();
    mp.field_mask    = UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                       UCP_MEM_MAP_PARAM_FIELD_FLAGS |
                       UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    mp.length        = 4096;
    mp.flags         = UCP_MEM_MAP_ALLOCATE;
    mp.memory_type   = mt;
    attr.field_mask  = UCP_MEM_ATTR_FIELD_ADDRESS;
    ok = ucs_ok(ucp_mem_map(nctx, &mp, &memh), "ucp_mem_map(ALLOCATE)");
    if (!ok) {
        check(0, "ucp_mem_map(ALLOCATE) of 4 KiB of device memory");
        return;
    }
    free1 = free_hbm();
    ok    = ucs_ok(ucp_mem_query(memh, &attr), "ucp_mem_query") &&
            round_trip(stage_in, 4096, (uintptr_t)attr.address, 11);
    mem_unmap(memh);
    free2 = free_hbm();
    snprintf(what, sizeof(what), "a 4 KiB ucp_mem_map(ALLOCATE) takes %llu "
             "bytes of the framework's free HBM (at most %llu) and holds "
             "data", (unsigned long long)(free0 - free1),
             (unsigned long long)bound);
    check(ok && (free1 < free0) && (free0 - free1 <= bound), what);
    snprintf(what, sizeof(what), "ucp_mem_unmap gives the framework its "
             "HBM back (%lld bytes still taken)",
             (long long)(free0 - free2));
    check(free2 == free0, what);
}

static void nixl_fini(void)
{
    ucp_request_param_t param = { 0 };
    int k;

    for (k = 0; k < NTENSORS; k++) {
        rkey_destroy(rkey_a[k]);
        rkey_destroy(rkey_b[k]);
    }
    rkey_destroy(rkey_host);
    barrier();
    for (k = 0; k < NTENSORS; k++) {
        mem_unmap(a[k].memh);
        mem_unmap(b[k].memh);
    }
    mem_unmap(host_memh);
    check(wait_req(ucp_ep_close_nbx(nep, &param)) == UCS_OK,
          "endpoint closed");
    barrier();
    if (progress_thread) {
        stop_progress = 1;
    }
}

/* ------------------------------------------------------------------ */

static int mpi_tensors(void)
{
    MPI_Request reqs[2 * NTENSORS];
    int k;

    for (k = 0; k < NTENSORS; k++) {
        MPI_Irecv((void*)(uintptr_t)b[k].addr, b[k].size, MPI_BYTE, peer, k,
                  MPI_COMM_WORLD, &reqs[2 * k]);
        MPI_Isend((void*)(uintptr_t)a[k].addr, a[k].size, MPI_BYTE, peer, k,
                  MPI_COMM_WORLD, &reqs[2 * k + 1]);
    }
    return MPI_Waitall(2 * NTENSORS, reqs, MPI_STATUSES_IGNORE) ==
           MPI_SUCCESS;
}

/* the framework: SynapseAI, its device, tensors, pinned memory, stream */
static int framework_start(int after_ucx)
{
    synDeviceInfo info;
    char what[160];
    int ok;

    ok = syn_load();
    check(ok, "the framework dlopen()s libSynapse and finds its API");
    ok = ok && syn_acquire();
    check(ok, after_ucx ? "the framework acquires its device after UCX "
          "started" : "the framework acquires its device before UCX starts");
    if (!ok) {
        return 0;
    }
    ok = syn_ok(syn.get_info(dev, &info), "synDeviceGetInfo");
    snprintf(what, sizeof(what), "synDeviceGetInfo: device type %d",
             ok ? (int)info.deviceType : -1);
    check(ok, what);
    ok = syn_ok(syn.stream_create(&stream, dev, 0),
                "synStreamCreateGeneric") && syn_alloc();
    check(ok, "70 synDeviceMalloc tensors, synHostMalloc pinned buffers, "
          "a stream");
    return ok;
}

int main(int argc, char **argv)
{
    const char *env_rank = getenv("OMPI_COMM_WORLD_RANK");
    int syn_first = 0, fw_ok = 0;
    pthread_t thread;
    synDeviceInfo info;
    uint64_t extra;
    size_t i;
    int ok, k;

    for (k = 1; k < argc; k++) {
        progress_thread |= !strcmp(argv[k], "--progress-thread");
        syn_first       |= !strcmp(argv[k], "--framework-first");
    }

    /* the order PyTorch + MPI launchers take is UCX first; the framework
     * first (--framework-first) is the order of a job that initialises
     * its HPU before MPI */
    if (syn_first) {
        rank  = (env_rank != NULL) ? atoi(env_rank) : 0;
        fw_ok = framework_start(0);
    }

    /* UCX: MPI (pml ucx) and NIXL's UCP context, worker, ep */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = !rank;
    ok   = nixl_init();
    check(ok, progress_thread ?
          "NIXL's UCP context (RMA, AM), worker (MULTI, progress thread) "
          "and PEER-mode endpoint" :
          "NIXL's UCP context (RMA, AM), worker and PEER-mode endpoint");
    if (!all_ok(ok)) {
        goto out;
    }
    if (progress_thread && (pthread_create(&thread, NULL, progress_loop,
                                           NULL) != 0)) {
        check(0, "progress thread started");
        goto out;
    }

    if (!syn_first) {
        fw_ok = framework_start(1);
    }
    if (!all_ok(fw_ok)) {
        goto out_thread;
    }
    check(fill(a, rank) && fill(b, -1), "tensors written through the "
          "application's stream");

    /* 3. MPI tag messages of the tensors (pml ucx) */
    ok = mpi_tensors();
    check(ok && verify(b, peer), "MPI tag messages of 35 synDeviceMalloc "
          "tensors (64 KiB and 4 MiB), checked on the device");
    for (i = 0; i < SMALL; i++) {
        host_tensor[i] = pattern(i, 0, 40 + rank);
    }
    MPI_Sendrecv(host_tensor, SMALL, MPI_BYTE, peer, 90,
                 (void*)(uintptr_t)b[0].addr, SMALL, MPI_BYTE, peer, 90,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ok = syn_ok(syn.copy(stream, b[0].addr, SMALL, (uintptr_t)stage_out,
                         DRAM_TO_HOST), "synMemCopyAsync") &&
         syn_ok(syn.stream_sync(stream), "synStreamSynchronize");
    for (i = 0; ok && (i < SMALL); i++) {
        ok = (stage_out[i] == pattern(i, 0, 40 + peer));
    }
    check(ok, "MPI message from pinned host memory into the peer's tensor");

    /* 4. NIXL's pattern */
    if (!nixl_register()) {
        goto out_fini;
    }
    ok = fill(a, 100 + rank) && fill(b, -1);
    barrier();
    ok = nixl_xfer(1) && ok;
    barrier();
    check(all_ok(ok) && verify(b, 100 + peer),
          "ucp_put_nbx of every tensor with its memh, ep flush, checked "
          "on the peer's device");
    ok = fill(a, 200 + rank) && fill(b, -1);
    barrier();
    ok = nixl_xfer(0) && ok;
    check(ok && verify(b, 200 + peer),
          "ucp_get_nbx of every tensor of the peer with its memh");
    barrier();
    ok = nixl_host();
    for (i = 0; ok && (i < SMALL); i++) {
        ok = (host_tensor[i] == pattern(i, 0, 200 + peer));
    }
    check(ok, "ucp_put_nbx from a tensor into the peer's pinned host "
          "memory");
    check(ep_error == UCS_OK, "no endpoint error");
    hbm_alloc(nixl_mem_type(a[0].memh));

out_fini:
    nixl_fini();
out_thread:
    if (progress_thread) {
        stop_progress = 1;
        pthread_join(thread, NULL);
    }
out:
    if (nworker != NULL) {
        ucp_worker_destroy(nworker);
        nworker = NULL;
    }
    if (nctx != NULL) {
        ucp_cleanup(nctx);
    }
    MPI_Finalize();

    /* 5. UCX is gone: the application's pinned memory and device remain */
    if (stream != NULL) {
        check(round_trip(stage_in, total, a[NSMALL].addr, 7) &&
              round_trip(host_tensor, HOST_SIZE, b[1].addr, 8),
              "after deregistration the pinned buffers are still mapped: "
              "a copy through the application's stream");
        ok = syn_ok(syn.get_info(dev, &info), "synDeviceGetInfo") &&
             syn_ok(syn.dev_malloc(dev, SMALL, 0, 0, &extra),
                    "synDeviceMalloc") &&
             round_trip(host_tensor, SMALL, extra, 9) &&
             syn_ok(syn.dev_free(dev, extra, 0), "synDeviceFree");
        check(ok, "the device is still the application's (info, "
              "allocation, copy)");
        check(api_round_trip(SMALL), "the module's public API copies "
              "through its engine (kept until exit, after the release)");
        ok = 1;
        for (k = 0; k < NTENSORS; k++) {
            ok &= syn_ok(syn.dev_free(dev, a[k].addr, 0), "synDeviceFree") &
                  syn_ok(syn.dev_free(dev, spacers[k], 0), "synDeviceFree") &
                  syn_ok(syn.dev_free(dev, b[k].addr, 0), "synDeviceFree");
        }
        ok &= syn_ok(syn.host_free(dev, host_tensor, 0), "synHostFree") &
              syn_ok(syn.host_free(dev, stage_out, 0), "synHostFree") &
              syn_ok(syn.host_free(dev, stage_in, 0), "synHostFree") &
              syn_ok(syn.stream_destroy(stream), "synStreamDestroy") &
              syn_ok(syn.release(dev), "synDeviceRelease") &
              syn_ok(syn.destroy(), "synDestroy");
        check(ok, "the application frees its tensors and pinned buffers, "
              "releases its device");
    }
    if (syn.handle != NULL) {
        dlclose(syn.handle);
    }
    printf("rank %d: %d passed, %d failed\n", rank, npass, nfail);
    return nfail != 0;
}

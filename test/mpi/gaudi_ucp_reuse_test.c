/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * UCP with freed and reused host buffers: one process, an endpoint to its
 * own worker, tag messages and RMA between host buffers and Gaudi memory
 * (uct_gaudi_mem_alloc). Each case moves data through a host buffer, frees
 * it, gets new pages at the same address (munmap + mmap, free + malloc,
 * heap trim, mremap, madvise(MADV_DONTNEED)) and moves data through them
 * again: the data must arrive, and the emulator must count no DMA through a
 * stale pin (HLSIM_COUNTER_STALE_PIN_DMAS, docs/hlsim.md "Pinned pages"):
 * UCP's and the module's registration caches must have let the old pins go.
 * Needs the emulator's page-frame check (root): "SKIP" otherwise.
 *
 * usage: gaudi_ucp_reuse_test [CASE...]  (all without any)
 * Prints "PASS case", "FAIL case: why" or "SKIP case: why", then
 * "N passed, N failed".
 */

#define _GNU_SOURCE
#include <uct/gaudi/api/uct_gaudi.h>
#include <ucp/api/ucp.h>
#include "hlsim.h"    /* the emulator's counters; reached through dlsym */

#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BIG    (4ul << 20)    /* rendezvous: registered */
#define SMALL  (8ul << 10)    /* eager */
#define ROUNDS 3

typedef struct {
    ucp_context_h ctx;
    ucp_worker_h  worker;
    ucp_ep_h      ep;
    void         *dev;       /* Gaudi memory, BIG */
    ucp_mem_h     dev_memh;
    ucp_rkey_h    rkey;
} node_t;

static char why[256];

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            snprintf(why, sizeof(why), __VA_ARGS__); \
            return -1; \
        } \
    } while (0)

static int64_t stale_dmas(void)
{
    int64_t (*get)(hlsim_counter_t, int) =
        (int64_t (*)(hlsim_counter_t, int))dlsym(RTLD_DEFAULT,
                                                 "hlsim_get_counter");

    return (get != NULL) ? get(HLSIM_COUNTER_STALE_PIN_DMAS, 0) : -1;
}

static ucs_status_t wait_req(node_t *n, ucs_status_ptr_t req)
{
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
    } while (status == UCS_INPROGRESS);
    ucp_request_free(req);
    return status;
}

static int node_init(node_t *n)
{
    ucp_params_t        params  = { 0 };
    ucp_worker_params_t wparams = { 0 };
    ucp_ep_params_t     eparams = { 0 };
    ucp_mem_map_params_t mparams = { 0 };
    ucp_address_t      *addr;
    size_t              addr_len, rkey_len;
    void               *rkey_buf;

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG | UCP_FEATURE_RMA;
    CHECK(ucp_init(&params, NULL, &n->ctx) == UCS_OK, "ucp_init");
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    CHECK(ucp_worker_create(n->ctx, &wparams, &n->worker) == UCS_OK,
          "ucp_worker_create");
    CHECK(ucp_worker_get_address(n->worker, &addr, &addr_len) == UCS_OK,
          "ucp_worker_get_address");
    eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address    = addr;
    CHECK(ucp_ep_create(n->worker, &eparams, &n->ep) == UCS_OK,
          "ucp_ep_create");
    ucp_worker_release_address(n->worker, addr);

    CHECK(uct_gaudi_mem_alloc(BIG, &n->dev) == UCS_OK, "uct_gaudi_mem_alloc");
    mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
                         UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    mparams.address    = n->dev;
    mparams.length     = BIG;
    CHECK(ucp_mem_map(n->ctx, &mparams, &n->dev_memh) == UCS_OK,
          "ucp_mem_map of Gaudi memory");
    CHECK(ucp_rkey_pack(n->ctx, n->dev_memh, &rkey_buf, &rkey_len) == UCS_OK,
          "ucp_rkey_pack");
    CHECK(ucp_ep_rkey_unpack(n->ep, rkey_buf, &n->rkey) == UCS_OK,
          "ucp_ep_rkey_unpack");
    ucp_rkey_buffer_release(rkey_buf);
    return 0;
}

static void node_fini(node_t *n)
{
    ucp_request_param_t param = { 0 };

    if (n->rkey != NULL) {
        ucp_rkey_destroy(n->rkey);
    }
    if (n->dev_memh != NULL) {
        ucp_mem_unmap(n->ctx, n->dev_memh);
    }
    if (n->dev != NULL) {
        uct_gaudi_mem_free(n->dev);
    }
    if (n->ep != NULL) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        (void)wait_req(n, ucp_ep_close_nbx(n->ep, &param));
    }
    if (n->worker != NULL) {
        ucp_worker_destroy(n->worker);
    }
    if (n->ctx != NULL) {
        ucp_cleanup(n->ctx);
    }
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        p[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 11));
    }
}

/* A tag message from @a src to @a dst (both on this worker) */
static int tag_move(node_t *n, void *dst, const void *src, size_t len)
{
    ucp_request_param_t param = { 0 };
    ucs_status_ptr_t    rreq, sreq;

    rreq = ucp_tag_recv_nbx(n->worker, dst, len, 0x77, (ucp_tag_t)-1,
                            &param);
    sreq = ucp_tag_send_nbx(n->ep, src, len, 0x77, &param);
    CHECK(wait_req(n, sreq) == UCS_OK, "tag send of %zu bytes", len);
    CHECK(wait_req(n, rreq) == UCS_OK, "tag receive of %zu bytes", len);
    return 0;
}

/*
 * Through [p, +len), a host buffer at an address UCX has seen before:
 * host -> Gaudi -> host by tag messages, then by RMA (put, get); the data
 * read back compared each time
 */
static int move_all(node_t *n, uint8_t *p, size_t len, unsigned seed)
{
    ucp_request_param_t param = { 0 };
    uint8_t            *want  = malloc(len);
    int                 rc    = -1;

    if (want == NULL) {
        snprintf(why, sizeof(why), "malloc");
        return -1;
    }
    fill(want, len, seed);
    memcpy(p, want, len);
    if (tag_move(n, n->dev, p, len)) {
        goto out;
    }
    memset(p, 0, len);
    if (tag_move(n, p, n->dev, len)) {
        goto out;
    }
    if (memcmp(want, p, len)) {
        snprintf(why, sizeof(why), "tag round trip of %zu bytes, seed %u: "
                 "data differs", len, seed);
        goto out;
    }

    if (getenv("GAUDI_UCP_REUSE_NO_RMA") != NULL) {
        rc = 0;   /* the suite says why this UCX cannot */
        goto out;
    }
    fill(want, len, seed + 100);
    memcpy(p, want, len);
    if (wait_req(n, ucp_put_nbx(n->ep, p, len, (uintptr_t)n->dev, n->rkey,
                                &param)) != UCS_OK ||
        wait_req(n, ucp_worker_flush_nbx(n->worker, &param)) != UCS_OK) {
        snprintf(why, sizeof(why), "ucp_put_nbx of %zu bytes", len);
        goto out;
    }
    memset(p, 0, len);
    if (wait_req(n, ucp_get_nbx(n->ep, p, len, (uintptr_t)n->dev, n->rkey,
                                &param)) != UCS_OK) {
        snprintf(why, sizeof(why), "ucp_get_nbx of %zu bytes", len);
        goto out;
    }
    if (memcmp(want, p, len)) {
        snprintf(why, sizeof(why), "RMA round trip of %zu bytes, seed %u: "
                 "data differs", len, seed);
        goto out;
    }
    rc = 0;
out:
    free(want);
    return rc;
}

static int move_both(node_t *n, uint8_t *p, size_t len, unsigned seed)
{
    return move_all(n, p, len, seed) || move_all(n, p, SMALL, seed + 50);
}

static uint8_t *map_at(void *at, size_t len)
{
    void *p = mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE |
                   MAP_ANONYMOUS | (at ? MAP_FIXED_NOREPLACE : 0), -1, 0);

    return (p == MAP_FAILED) ? NULL : p;
}

static int case_munmap_mmap(node_t *n)
{
    uint8_t *p = map_at(NULL, BIG);
    unsigned r;

    CHECK(p != NULL, "mmap");
    for (r = 0; r < ROUNDS; r++) {
        if (move_both(n, p, BIG, r)) {
            return -1;
        }
        CHECK(munmap(p, BIG) == 0, "munmap");
        CHECK(map_at(p, BIG) == p, "address taken meanwhile");
    }
    munmap(p, BIG);
    return 0;
}

/* @a heap: from the heap's top (trimmed on free), else glibc's own mmap */
static int malloc_case(node_t *n, int heap)
{
    uint8_t  *p;
    uintptr_t was = 0;
    unsigned  r, reused = 0;

    if (heap) {
        CHECK(mallopt(M_MMAP_THRESHOLD, 64 << 20) == 1, "mallopt");
        CHECK(mallopt(M_TRIM_THRESHOLD, 0) == 1, "mallopt");
        CHECK(mallopt(M_TOP_PAD, 0) == 1, "mallopt");
    } else {
        CHECK(mallopt(M_MMAP_THRESHOLD, 256 << 10) == 1, "mallopt");
    }
    /* a thread of UCX or of the emulator may map memory between a free
     * and the next malloc and take the freed range: every round moves
     * data, and at least one must have got the old address back */
    for (r = 0; r < 2 * ROUNDS; r++) {
        p = malloc(BIG);
        CHECK(p != NULL, "malloc");
        reused += (r > 0) && ((uintptr_t)p == was);
        was = (uintptr_t)p;
        if (move_both(n, p, BIG, r)) {
            free(p);
            return -1;
        }
        free(p);
    }
    CHECK(reused > 0, "glibc never gave the same address back");
    return 0;
}

static int case_free_malloc(node_t *n)
{
    return malloc_case(n, 0);
}

static int case_heap_trim(node_t *n)
{
    return malloc_case(n, 1);
}

static int case_mremap(node_t *n)
{
    uint8_t *p = map_at(NULL, 2 * BIG), *q;

    CHECK(p != NULL, "mmap");
    CHECK(munmap(p + BIG, BIG) == 0, "munmap");
    CHECK(mmap(p + BIG, BIG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
               MAP_FIXED, -1, 0) == p + BIG, "a wall");
    if (move_both(n, p, BIG, 1)) {
        return -1;
    }
    q = mremap(p, BIG, 2 * BIG, MREMAP_MAYMOVE);
    CHECK((q != MAP_FAILED) && (q != p), "mremap did not move");
    CHECK(map_at(p, BIG) == p, "address taken meanwhile");
    if (move_both(n, p, BIG, 2) || move_both(n, q, BIG, 3)) {
        return -1;
    }
    munmap(p, 2 * BIG);
    munmap(q, 2 * BIG);
    return 0;
}

static int case_madvise(node_t *n)
{
    uint8_t *p = map_at(NULL, BIG);
    unsigned r;

    CHECK(p != NULL, "mmap");
    for (r = 0; r < ROUNDS; r++) {
        if (move_both(n, p, BIG, r)) {
            return -1;
        }
        CHECK(madvise(p + 4096 * r, BIG / 2, MADV_DONTNEED) == 0, "madvise");
    }
    munmap(p, BIG);
    return 0;
}

static const struct {
    const char *name;
    int       (*fn)(node_t*);
} cases[] = {
    { "munmap_mmap", case_munmap_mmap },
    { "free_malloc", case_free_malloc },
    { "heap_trim",   case_heap_trim },
    { "mremap",      case_mremap },
    { "madvise",     case_madvise },
};

static int selected(const char *name, int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], name)) {
            return 1;
        }
    }
    return argc < 2;
}

int main(int argc, char **argv)
{
    int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT,
                                               "hlsim_pin_check_active");
    unsigned i, pass = 0, failed = 0;
    int64_t  stale0;
    node_t   n;

    setvbuf(stdout, NULL, _IOLBF, 0);
    memset(&n, 0, sizeof(n));
    if ((active != NULL) && (active() == 1) && node_init(&n)) {
        printf("FAIL setup: %s\n", why);
        node_fini(&n);
        printf("0 passed, 1 failed\n");
        return 1;
    }
    /* one context for every case, as an application has */
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (!selected(cases[i].name, argc, argv)) {
            continue;
        }
        if ((active == NULL) || (active() != 1)) {
            printf("SKIP %s: %s\n", cases[i].name, (active == NULL) ?
                   "not on the emulator" : "the emulator cannot see page "
                   "frames (not root): stale pins are not detected");
            continue;
        }
        why[0] = '\0';
        stale0 = stale_dmas();
        if (cases[i].fn(&n) == 0) {
            if (stale_dmas() != stale0) {
                snprintf(why, sizeof(why), "%lld DMA(s) through stale pins "
                         "(see the emulator's log)",
                         (long long)(stale_dmas() - stale0));
            }
        } else if (why[0] == '\0') {
            snprintf(why, sizeof(why), "failed");
        }
        if (why[0] == '\0') {
            printf("PASS %s\n", cases[i].name);
            pass++;
        } else {
            printf("FAIL %s: %s\n", cases[i].name, why);
            failed++;
        }
    }
    node_fini(&n);
    printf("%u passed, %u failed\n", pass, failed);
    return failed ? 1 : 0;
}

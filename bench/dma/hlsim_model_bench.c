/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The emulator's engine model alone (docs/performance.md): one DMA engine
 * of the emulated Gaudi2 (queue 0), kept busy with raw CS ioctls of one
 * LIN_DMA each (host to host), a window of CSs in flight (default 64,
 * Gaudi2's whole window); prints the rate
 * reached as a ratio to HLSIM_DMA_GBPS. No module involved: this is what
 * the instrument can deliver to the module at best.
 * Usage: LD_PRELOAD=libhlsim.so HLSIM_DMA_GBPS=4 hlsim_model_bench
 *        [total_mib [window]]
 * Run by bench/dma/run.sh --model. Reports only, asserts nothing.
 */

#define _GNU_SOURCE
#include <uct/gaudi/hl/gaudi_hl_abi.h>
#include "hlsim_packets.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>

#define MODEL_CB_SIZE 4096

static uint64_t model_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int model_map_host(int fd, void *p, uint64_t size, uint64_t *va)
{
    union hl_mem_args a;

    memset(&a, 0, sizeof(a));
    a.in.op                      = HL_MEM_OP_MAP;
    a.in.flags                   = HL_MEM_USERPTR;
    a.in.map_host.host_virt_addr = (uintptr_t)p;
    a.in.map_host.mem_size       = size;
    if (ioctl(fd, GAUDI_HL_DRM_IOCTL_MEMORY, &a)) {
        return -1;
    }
    *va = a.out.device_virt_addr;
    return 0;
}

/* One CS of one LIN_DMA on queue 0; the CB at @a cb / @a cb_va */
static int model_submit(int fd, uint8_t *cb, uint64_t cb_va, uint64_t src,
                        uint64_t dst, uint32_t size, uint64_t *seq)
{
    struct hlsim_pkt_lin_dma p;
    struct hl_cs_chunk       ch;
    union hl_cs_args         a;
    int                      rc;

    p.tsize    = size;
    p.ctl      = (HLSIM_PKT_LIN_DMA << HLSIM_PKT_CTL_OPCODE_SHIFT) |
                 HLSIM_PKT_CTL_MB | HLSIM_PKT_CTL_EB;
    p.src_addr = src;
    p.dst_addr = dst;
    memcpy(cb, &p, sizeof(p));
    memset(&ch, 0, sizeof(ch));
    memset(&a, 0, sizeof(a));
    ch.cb_handle            = cb_va;
    ch.queue_index          = 0;
    ch.cb_size              = sizeof(p);
    ch.cs_chunk_flags       = HL_CS_CHUNK_FLAGS_USER_ALLOC_CB;
    a.in.chunks_execute     = (uintptr_t)&ch;
    a.in.num_chunks_execute = 1;
    do {
        rc = ioctl(fd, GAUDI_HL_DRM_IOCTL_CS, &a);
    } while ((rc != 0) && (errno == EAGAIN));
    *seq = a.out.seq;
    return rc;
}

static int model_wait(int fd, uint64_t seq)
{
    union hl_wait_cs_args a;

    memset(&a, 0, sizeof(a));
    a.in.seq        = seq;
    a.in.timeout_us = 10000000;
    if (ioctl(fd, GAUDI_HL_DRM_IOCTL_WAIT_CS, &a) ||
        (a.out.status != HL_WAIT_CS_STATUS_COMPLETED)) {
        fprintf(stderr, "WAIT_CS of seq %llu: %s, status %u\n",
                (unsigned long long)seq, strerror(errno), a.out.status);
        return -1;
    }
    return 0;
}

/* @a n CSs of @a size, at most @a win in flight: bytes per second */
static double model_run(int fd, uint8_t *cbs, uint64_t cbs_va, uint64_t buf_va,
                        uint32_t size, unsigned n, unsigned win)
{
    uint64_t seq[64], t0, i;

    t0 = model_now_ns();
    for (i = 0; i < n + win; i++) {
        if ((i >= win) && model_wait(fd, seq[(i - win) % win])) {
            return -1;
        }
        if ((i < n) &&
            model_submit(fd, cbs + (i % win) * MODEL_CB_SIZE,
                         cbs_va + (i % win) * MODEL_CB_SIZE, buf_va,
                         buf_va + size, size, &seq[i % win])) {
            perror("CS");
            return -1;
        }
    }
    return (double)size * n * 1e9 / (model_now_ns() - t0);
}

int main(int argc, char **argv)
{
    static const uint32_t sizes[] = { 64 << 10, 1 << 20 };
    uint64_t    total = ((argc > 1) ? strtoul(argv[1], NULL, 0) : 256) << 20;
    unsigned    win   = (argc > 2) ? strtoul(argv[2], NULL, 0) : 64;
    const char *g     = getenv("HLSIM_DMA_GBPS");
    double      gbps  = g ? strtod(g, NULL) : 0, rate;
    uint64_t    cbs_va, buf_va;
    uint8_t    *cbs, *buf;
    unsigned    i;
    int         fd;

    if ((gbps <= 0) || (win == 0) || (win > 64)) {
        fprintf(stderr, "set HLSIM_DMA_GBPS > 0; window 1..64\n");
        return 2;
    }
    fd  = open("/dev/accel/accel0", O_RDWR | O_CLOEXEC);
    cbs = aligned_alloc(4096, 64 * MODEL_CB_SIZE);
    buf = aligned_alloc(4096, 2u << 20);
    if ((fd < 0) || (cbs == NULL) || (buf == NULL) ||
        model_map_host(fd, cbs, 64 * MODEL_CB_SIZE, &cbs_va) ||
        model_map_host(fd, buf, 2u << 20, &buf_va)) {
        perror("hlsim_model_bench: device (is libhlsim.so preloaded?)");
        return 1;
    }
    memset(buf, 1, 2u << 20);
    printf("# engine model alone: 1 engine, HLSIM_DMA_GBPS=%g, window %u, "
           "%llu MiB per size\n", gbps, win, (unsigned long long)(total >> 20));
    printf("%-8s %10s %7s\n", "size", "MB/s", "model");
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        rate = model_run(fd, cbs, cbs_va, buf_va, sizes[i],
                         total / sizes[i], win);
        if (rate < 0) {
            return 1;
        }
        printf("%-8u %10.0f %7.3f\n", sizes[i], rate / 1e6,
               rate / (gbps * 1e9));
    }
    close(fd);
    free(cbs);
    free(buf);
    return 0;
}

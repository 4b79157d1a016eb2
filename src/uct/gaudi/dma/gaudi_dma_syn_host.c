/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Host sides of the SynapseAI DMA engine (docs/synapse.md, "Host maps").
 * The module never puts an entry over the application's memory into
 * SynapseAI's host-address table, which it shares with the application:
 * a copy goes direct when the application's own entry holds its host
 * side, else it is staged through the engine's bounce buffer, the one
 * entry the module makes (over memory of its own).
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dma/gaudi_dma_syn.h>

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/sys/sys.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>


/* The hint holding [host, +length), or NULL */
static uct_gaudi_dma_syn_hint_t *
uct_gaudi_dma_syn_hint_find(uct_gaudi_dma_syn_t *dma, uintptr_t host,
                            size_t length)
{
    unsigned i;

    for (i = 0; i < UCT_GAUDI_DMA_SYN_HINTS; i++) {
        if ((dma->hints[i].start <= host) &&
            (host + length <= dma->hints[i].end)) {
            return &dma->hints[i];
        }
    }
    return NULL;
}

/* Remember that SynapseAI could not translate [host, +length) */
static void uct_gaudi_dma_syn_hint_add(uct_gaudi_dma_syn_t *dma,
                                       uintptr_t host, size_t length)
{
    uct_gaudi_dma_syn_hint_t *hint;

    hint = uct_gaudi_dma_syn_hint_find(dma, host, length);
    if (hint == NULL) {
        hint           = &dma->hints[dma->hint_next];
        dma->hint_next = (dma->hint_next + 1) % UCT_GAUDI_DMA_SYN_HINTS;
        hint->start    = host;
        hint->end      = host + length;
    }
    hint->skip = UCT_GAUDI_DMA_SYN_RETRY;
}

/* Whether every page of [addr, +length) is mapped in the process: the
 * one case where staging must not touch the user's buffer is a buffer
 * already gone (the application's synHostUnmap of a synHostMalloc buffer
 * munmaps it), where the CPU would fault instead of failing the copy */
static int uct_gaudi_dma_syn_host_mapped(uintptr_t addr, size_t length)
{
    size_t page    = ucs_get_page_size();
    uintptr_t pos  = ucs_align_down(addr, page);
    uintptr_t end  = ucs_align_up(addr + length, page);
    unsigned char vec[64];
    size_t len;

    for (; pos < end; pos += len) {
        len = ucs_min(end - pos, sizeof(vec) * page);
        if (mincore((void*)pos, len, vec) != 0) {
            return 0;   /* ENOMEM: a page of it is not mapped */
        }
    }
    return 1;
}

/*
 * A transfer whose host side SynapseAI cannot translate (no entry of the
 * application's holds it, docs/synapse.md "Host maps"): once @a stream's
 * earlier copies are done, copy it through the engine's own mapped
 * buffer, in steps on the same stream. The user passed the buffer to a
 * UCT operation: the CPU may touch it, once it is known to be there.
 */
static ucs_status_t uct_gaudi_dma_syn_stage(uct_gaudi_dma_syn_t *dma,
                                            uct_gaudi_syn_stream_t stream,
                                            const uct_gaudi_dma_xfer_t *xfer,
                                            uct_gaudi_syn_dir_t dir,
                                            const char *name)
{
    int to_device       = (dir == UCT_GAUDI_SYN_HOST_TO_DRAM);
    uint64_t host       = to_device ? xfer->src : xfer->dst;
    uint64_t bounce     = (uintptr_t)dma->super.bounce;
    size_t step         = dma->super.params.bounce_size;
    size_t off, len;
    ucs_status_t status;

    if (!uct_gaudi_dma_syn_host_mapped(host, xfer->length)) {
        ucs_error("%s: %s of %zu bytes: host memory 0x%" PRIx64 " is not "
                  "mapped in the process (freed while registered?)",
                  dma->super.name, name, xfer->length, host);
        return UCS_ERR_INVALID_ADDR;
    }

    status = uct_gaudi_syn_stream_sync(dma->syn, stream);
    for (off = 0; (status == UCS_OK) && (off < xfer->length); off += len) {
        len = ucs_min(xfer->length - off, step);
        if (to_device) {
            memcpy((void*)bounce, (void*)(uintptr_t)(xfer->src + off), len);
            status = uct_gaudi_syn_memcpy_async(dma->syn, stream,
                                                xfer->dst + off, bounce,
                                                len, dir);
        } else {
            status = uct_gaudi_syn_memcpy_async(dma->syn, stream, bounce,
                                                xfer->src + off, len, dir);
        }
        if (status == UCS_OK) {
            status = uct_gaudi_syn_stream_sync(dma->syn, stream);
        }
        if ((status == UCS_OK) && !to_device) {
            memcpy((void*)(uintptr_t)(xfer->dst + off), (void*)bounce, len);
        }
    }

    if (status != UCS_OK) {
        ucs_error("%s: staged %s of %zu bytes failed: %s", dma->super.name,
                  name, xfer->length, ucs_status_string(status));
    }
    /* a failed step is reported: an event recorded after the steps keeps
     * the next one on the stream, which covers the copies since the
     * previous record, from reporting it again */
    if ((status != UCS_OK) &&
        (dma->syn->ops.event_record(dma->stage_event, stream) !=
         UCT_GAUDI_SYN_SUCCESS)) {
        ucs_debug("%s: synEventRecord after a staged copy failed",
                  dma->super.name);
    }
    return status;
}

ucs_status_t uct_gaudi_dma_syn_direct(uct_gaudi_dma_syn_t *dma,
                                      uct_gaudi_syn_stream_t stream,
                                      const uct_gaudi_dma_xfer_t *xfer,
                                      uct_gaudi_syn_dir_t dir,
                                      const char *name)
{
    ucs_status_t status;

    status = uct_gaudi_syn_memcpy_async(dma->syn, stream, xfer->dst,
                                        xfer->src, xfer->length, dir);
    if ((status != UCS_OK) && ((status != UCS_ERR_INVALID_ADDR) ||
                               (dir == UCT_GAUDI_SYN_DRAM_TO_DRAM))) {
        ucs_error("%s: %s of %zu bytes not queued: %s", dma->super.name,
                  name, xfer->length, ucs_status_string(status));
    }
    return status;
}

/* Direct first (the application's pinned memory stays zero-copy):
 * SynapseAI refuses an untranslatable host side at the call, before
 * queueing anything (docs/synapse.md) */
ucs_status_t uct_gaudi_dma_syn_host_xfer(uct_gaudi_dma_syn_t *dma,
                                         uct_gaudi_syn_stream_t stream,
                                         const uct_gaudi_dma_xfer_t *xfer,
                                         uct_gaudi_syn_dir_t dir,
                                         const char *name)
{
    uintptr_t host = (dir == UCT_GAUDI_SYN_HOST_TO_DRAM) ? xfer->src :
                     xfer->dst;
    uct_gaudi_dma_syn_hint_t *hint;
    ucs_status_t status;

    hint = uct_gaudi_dma_syn_hint_find(dma, host, xfer->length);
    if ((hint != NULL) && (hint->skip > 0)) {
        --hint->skip;
        return uct_gaudi_dma_syn_stage(dma, stream, xfer, dir, name);
    }

    status = uct_gaudi_dma_syn_direct(dma, stream, xfer, dir, name);
    if (status == UCS_ERR_INVALID_ADDR) {
        uct_gaudi_dma_syn_hint_add(dma, host, xfer->length);
        return uct_gaudi_dma_syn_stage(dma, stream, xfer, dir, name);
    }
    if ((status == UCS_OK) && (hint != NULL)) {
        hint->start = hint->end = 0;   /* translatable now */
    }
    return status;
}

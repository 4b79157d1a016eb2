/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * A best-fit heap over one address range, aligned pieces: SCAL's pool
 * allocator (libscal.so) and SynapseAI's Gaudi1 DRAM heap (libSynapse.so)
 * both hand out memory this way. Compiled into each library, hidden.
 */

#ifndef SYNSIM_HEAP_H_
#define SYNSIM_HEAP_H_

#include <stdint.h>

#define SYNSIM_HIDDEN __attribute__((visibility("hidden")))

typedef struct synsim_block {
    struct synsim_block *next;
    uint64_t             addr;
    uint64_t             size;
    int                  used;
} synsim_block_t;

typedef struct {
    synsim_block_t *blocks;     /* sorted, adjacent, cover the range */
    uint64_t        size;
    uint64_t        free;
} synsim_heap_t;

SYNSIM_HIDDEN int synsim_heap_init(synsim_heap_t *h, uint64_t base,
                                   uint64_t size);
SYNSIM_HIDDEN void synsim_heap_fini(synsim_heap_t *h);
/* address of a piece of @size aligned to @align; 0 if none fits */
SYNSIM_HIDDEN uint64_t synsim_heap_alloc(synsim_heap_t *h, uint64_t size,
                                         uint64_t align);
/* size of the piece at @addr, freed; 0 if @addr is no piece */
SYNSIM_HIDDEN uint64_t synsim_heap_free(synsim_heap_t *h, uint64_t addr);

#endif

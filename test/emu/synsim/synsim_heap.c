/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Best-fit heap of the emulated SCAL pools and Gaudi1 DRAM heap.
 */

#include "synsim_heap.h"

#include <stdlib.h>

int synsim_heap_init(synsim_heap_t *h, uint64_t base, uint64_t size)
{
    h->blocks = calloc(1, sizeof(*h->blocks));
    if (h->blocks == NULL) {
        return -1;
    }
    h->blocks->addr = base;
    h->blocks->size = size;
    h->size         = size;
    h->free         = size;
    return 0;
}

void synsim_heap_fini(synsim_heap_t *h)
{
    synsim_block_t *b;

    while ((b = h->blocks) != NULL) {
        h->blocks = b->next;
        free(b);
    }
}

/* Split @b at @off bytes: @b keeps the first part; 0 on success */
static int synsim_heap_split(synsim_block_t *b, uint64_t off)
{
    synsim_block_t *rest;

    if ((off == 0) || (off == b->size)) {
        return 0;
    }
    rest = calloc(1, sizeof(*rest));
    if (rest == NULL) {
        return -1;
    }
    rest->addr = b->addr + off;
    rest->size = b->size - off;
    rest->next = b->next;
    b->next    = rest;
    b->size    = off;
    return 0;
}

static uint64_t synsim_heap_pad(const synsim_block_t *b, uint64_t align)
{
    return (align - (b->addr % align)) % align;
}

uint64_t synsim_heap_alloc(synsim_heap_t *h, uint64_t size, uint64_t align)
{
    synsim_block_t *b, *best = NULL;
    uint64_t        pad;

    if ((size == 0) || (align == 0)) {
        return 0;
    }
    for (b = h->blocks; b != NULL; b = b->next) {
        pad = synsim_heap_pad(b, align);
        if (!b->used && (b->size >= pad) && (b->size - pad >= size) &&
            ((best == NULL) || (b->size < best->size))) {
            best = b;
        }
    }
    if (best == NULL) {
        return 0;
    }
    pad = synsim_heap_pad(best, align);
    if (synsim_heap_split(best, pad)) {
        return 0;
    }
    if (pad != 0) {
        best = best->next;
    }
    if (synsim_heap_split(best, size)) {
        return 0;
    }
    best->used = 1;
    h->free   -= size;
    return best->addr;
}

uint64_t synsim_heap_free(synsim_heap_t *h, uint64_t addr)
{
    synsim_block_t *b, *prev = NULL, *next;
    uint64_t        size;

    for (b = h->blocks; (b != NULL) && (b->addr != addr); b = b->next) {
        prev = b;
    }
    if ((b == NULL) || !b->used) {
        return 0;
    }
    size     = b->size;
    b->used  = 0;
    h->free += size;
    next     = b->next;
    if ((next != NULL) && !next->used) {
        b->size += next->size;
        b->next  = next->next;
        free(next);
    }
    if ((prev != NULL) && !prev->used) {
        prev->size += b->size;
        prev->next  = b->next;
        free(b);
    }
    return size;
}

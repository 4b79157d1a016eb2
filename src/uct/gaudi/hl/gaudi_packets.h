/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * QMAN packet encodings used by the DMA engine: LIN_DMA and NOP. The one
 * place in the plugin that knows packet bits (the emulator keeps its own
 * parser-side copy, test/emu/hlsim/hlsim_packets.h, derived independently from
 * the facts so that a mistake in one is caught by the other). No UCX
 * dependency.
 *
 * Facts: docs/driver-facts.md 5.5 (K612 include/gaudi/gaudi_packets.h,
 * include/gaudi2/gaudi2_packets.h).
 */

#ifndef UCT_GAUDI_PACKETS_H_
#define UCT_GAUDI_PACKETS_H_

#include <stdint.h>
#include <string.h>
#include <assert.h>


/* Opcodes (ctl bits 24-28; header bits 56-60 of the first u64; facts 5.5) */
#define GAUDI_PKT_WREG_32           0x1
#define GAUDI_PKT_WREG_BULK         0x2
#define GAUDI_PKT_MSG_LONG          0x3
#define GAUDI_PKT_MSG_SHORT         0x4
#define GAUDI_PKT_CP_DMA            0x5
#define GAUDI_PKT_REPEAT            0x6
#define GAUDI_PKT_MSG_PROT          0x7
#define GAUDI_PKT_FENCE             0x8
#define GAUDI_PKT_LIN_DMA           0x9
#define GAUDI_PKT_NOP               0xA
#define GAUDI_PKT_STOP              0xB
#define GAUDI_PKT_ARB_POINT         0xC
#define GAUDI_PKT_WAIT              0xD
#define GAUDI_PKT_LOAD_AND_EXE      0xF

/* Packet sizes in bytes (K612 gaudi_packets.h) */
#define GAUDI_PKT_SIZE_SHORT        8   /* NOP, MSG_SHORT, WREG_32, FENCE... */
#define GAUDI_PKT_SIZE_MSG_LONG     16
#define GAUDI_PKT_SIZE_LOAD_AND_EXE 16
#define GAUDI_PKT_SIZE_LIN_DMA      24

/* ctl word fields common to Gaudi1 and Gaudi2 (facts 5.5 table) */
#define GAUDI_PKT_CTL_OPCODE_SHIFT  24
#define GAUDI_PKT_CTL_OPCODE_MASK   0x1F000000u
#define GAUDI_PKT_CTL_EB            (1u << 29)  /* engine barrier */
#define GAUDI_PKT_CTL_RB            (1u << 30)  /* register barrier */
#define GAUDI_PKT_CTL_MB            (1u << 31)  /* message barrier */

/* LIN_DMA ctl bits */
#define GAUDI_PKT_LIN_DMA_WRCOMP    (1u << 0)
#define GAUDI_PKT_LIN_DMA_MEMSET    (1u << 4)
/* Gaudi1 only: must be 1 for a linear DMA (bit 3 is reserved on Gaudi2) */
#define GAUDI_PKT_LIN_DMA_LIN       (1u << 3)

/* Gaudi1 dst_addr: bits 0-55 address, 56-63 context_id_high */
#define GAUDI1_PKT_LIN_DMA_DST_ADDR_MASK 0x00FFFFFFFFFFFFFFull

/* Largest tsize of one packet: tsize is a u32 (facts 5.5) */
#define GAUDI_PKT_LIN_DMA_MAX_TSIZE 0xFFFFFFFFull


/* LIN_DMA: 24 bytes, little-endian (facts 5.5) */
struct gaudi_pkt_lin_dma {
    uint32_t tsize;
    uint32_t ctl;
    uint64_t src_addr;
    uint64_t dst_addr;
};
typedef struct gaudi_pkt_lin_dma gaudi_pkt_lin_dma_t;

/* NOP: 8 bytes, {reserved, ctl} */
struct gaudi_pkt_nop {
    uint32_t reserved;
    uint32_t ctl;
};
typedef struct gaudi_pkt_nop gaudi_pkt_nop_t;

static_assert(sizeof(gaudi_pkt_lin_dma_t) == GAUDI_PKT_SIZE_LIN_DMA, "LIN_DMA packet size");
static_assert(sizeof(gaudi_pkt_nop_t) == GAUDI_PKT_SIZE_SHORT, "NOP packet size");


/* Packet generation: the packet bits differ between Gaudi1 and Gaudi2 */
typedef enum {
    GAUDI_PKT_GEN_GAUDI1 = 1,
    GAUDI_PKT_GEN_GAUDI2 = 2
} gaudi_pkt_gen_t;


/* Opcode of the packet whose ctl word is @a ctl */
static inline unsigned gaudi_pkt_opcode(uint32_t ctl)
{
    return (ctl & GAUDI_PKT_CTL_OPCODE_MASK) >> GAUDI_PKT_CTL_OPCODE_SHIFT;
}

/*
 * Encode a LIN_DMA of @a size bytes from @a src to @a dst (DMA addresses).
 * Gaudi1: LIN and RB set as hltests do (facts 5.5: gaudi_add_dma_pkt);
 * Gaudi2: no LIN bit, no RB ("swtc" in HLT). MB always, EB on request.
 * Written with memcpy: a CB in device-mapped host memory may be unaligned
 * for u64 stores when packets of different sizes are mixed.
 */
static inline void gaudi_pkt_lin_dma_encode(void *dest, gaudi_pkt_gen_t gen,
                                            uint64_t src, uint64_t dst,
                                            uint32_t size, int eb)
{
    gaudi_pkt_lin_dma_t pkt;

    pkt.tsize    = size;
    pkt.ctl      = ((uint32_t)GAUDI_PKT_LIN_DMA <<
                    GAUDI_PKT_CTL_OPCODE_SHIFT) | GAUDI_PKT_CTL_MB |
                   (eb ? GAUDI_PKT_CTL_EB : 0);
    pkt.src_addr = src;
    pkt.dst_addr = dst;
    if (gen == GAUDI_PKT_GEN_GAUDI1) {
        pkt.ctl      |= GAUDI_PKT_LIN_DMA_LIN | GAUDI_PKT_CTL_RB;
        pkt.dst_addr &= GAUDI1_PKT_LIN_DMA_DST_ADDR_MASK;
    }
    memcpy(dest, &pkt, sizeof(pkt));
}

/* Encode a LIN_DMA memset: @a size bytes at @a dst get the pattern that
 * src_addr carries (@a value, the byte repeated) */
static inline void gaudi_pkt_lin_dma_memset_encode(void *dest,
                                                   gaudi_pkt_gen_t gen,
                                                   uint64_t value,
                                                   uint64_t dst,
                                                   uint32_t size, int eb)
{
    gaudi_pkt_lin_dma_t pkt;

    gaudi_pkt_lin_dma_encode(&pkt, gen, value, dst, size, eb);
    pkt.ctl |= GAUDI_PKT_LIN_DMA_MEMSET;
    memcpy(dest, &pkt, sizeof(pkt));
}

/*
 * Encode a NOP. With @a eb set it is the conservative trailing barrier of
 * a CB: the queue waits for the DMA engine to drain before the CB is
 * reported complete (facts 5.4, "a conservative shim puts EB=1 on a
 * trailing NOP").
 */
static inline void gaudi_pkt_nop_encode(void *dest, int eb)
{
    gaudi_pkt_nop_t pkt;

    pkt.reserved = 0;
    pkt.ctl      = ((uint32_t)GAUDI_PKT_NOP <<
                    GAUDI_PKT_CTL_OPCODE_SHIFT) | GAUDI_PKT_CTL_MB |
                   (eb ? GAUDI_PKT_CTL_EB : 0);
    memcpy(dest, &pkt, sizeof(pkt));
}

#endif

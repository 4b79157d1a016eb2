/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Packet encodings the emulator parses (facts 5.3, 5.5: K612
 * include/gaudi/gaudi_packets.h, gaudi2_packets.h). Kept self-contained on
 * purpose: the plugin's src/uct/gaudi/hl/gaudi_packets.h is the
 * builder side; the emulator re-derives the bits from the facts so that a
 * mistake in one is caught by the other.
 */

#ifndef HLSIM_PACKETS_H_
#define HLSIM_PACKETS_H_

#include <stdint.h>

#define HLSIM_PKT_WREG_32        0x1
#define HLSIM_PKT_WREG_BULK      0x2
#define HLSIM_PKT_MSG_LONG       0x3
#define HLSIM_PKT_MSG_SHORT      0x4
#define HLSIM_PKT_CP_DMA         0x5
#define HLSIM_PKT_REPEAT         0x6
#define HLSIM_PKT_MSG_PROT       0x7
#define HLSIM_PKT_FENCE          0x8
#define HLSIM_PKT_LIN_DMA        0x9
#define HLSIM_PKT_NOP            0xA
#define HLSIM_PKT_STOP           0xB
#define HLSIM_PKT_ARB_POINT      0xC
#define HLSIM_PKT_WAIT           0xD
#define HLSIM_PKT_LOAD_AND_EXE   0xF

#define HLSIM_PKT_CTL_OPCODE_SHIFT 24
#define HLSIM_PKT_CTL_OPCODE_MASK  0x1F000000u
#define HLSIM_PKT_CTL_EB           (1u << 29)
#define HLSIM_PKT_CTL_RB           (1u << 30)
#define HLSIM_PKT_CTL_MB           (1u << 31)

#define HLSIM_PKT_LIN_DMA_MEMSET   (1u << 4)   /* src_addr = fill value */
#define HLSIM_PKT_LIN_DMA_LIN      (1u << 3)   /* Gaudi1: linear */
#define HLSIM_PKT_G1_DST_ADDR_MASK 0x00FFFFFFFFFFFFFFULL  /* bits 56-63:
                                                             context id */

/* Sizes in bytes; WREG_BULK: header only (Gaudi1 refuses it anyway) */
#define HLSIM_PKT_SIZE_LIN_DMA   24
#define HLSIM_PKT_SIZE_LONG      16   /* MSG_LONG, MSG_PROT, CP_DMA, L&E */
#define HLSIM_PKT_SIZE_SHORT     8    /* everything else */

struct hlsim_pkt_lin_dma {
    uint32_t tsize;
    uint32_t ctl;
    uint64_t src_addr;
    uint64_t dst_addr;
};

static inline unsigned hlsim_pkt_opcode(uint32_t ctl)
{
    return (ctl & HLSIM_PKT_CTL_OPCODE_MASK) >> HLSIM_PKT_CTL_OPCODE_SHIFT;
}

#endif

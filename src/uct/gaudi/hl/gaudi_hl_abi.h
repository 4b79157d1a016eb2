/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * habanalabs driver ABI: the one place that knows ioctl request codes,
 * node names and the struct forms newer than the installed 6.1 uapi header.
 * Shared by the ioctl shim (src/uct/gaudi/hl) and the emulator
 * (test/emu/hlsim); it has no UCX dependency on purpose.
 *
 * Facts: docs/driver-facts.md ("facts N.M" below = its section N.M);
 * upstream Linux 6.12 include/uapi/drm/habanalabs_accel.h (UAPI) and
 * Linux 6.1 include/uapi/misc/habanalabs.h (U61, installed here).
 */

#ifndef UCT_GAUDI_HL_ABI_H_
#define UCT_GAUDI_HL_ABI_H_

#include <misc/habanalabs.h>
#include <linux/ioctl.h>
#include <stdint.h>
#include <assert.h>


/* Node names (facts 1.1; hl-thunk include/uapi/hlthunk.h:23-28) */
#define GAUDI_HL_ACCEL_DIR              "/dev/accel"
#define GAUDI_HL_ACCEL_NODE_FMT         "/dev/accel/accel%d"
#define GAUDI_HL_ACCEL_CONTROL_FMT      "/dev/accel/accel_controlD%d"
#define GAUDI_HL_LEGACY_NODE_FMT        "/dev/hl%d"
#define GAUDI_HL_LEGACY_CONTROL_FMT     "/dev/hl_controlD%d"
#define GAUDI_HL_MAX_MINOR              256

/* sysfs attribute directories, in lookup order (facts 1.1, 1.3) */
#define GAUDI_HL_SYSFS_ACCEL_PCI_FMT    "/sys/class/accel/accel%d/device"

/* PCI BAR of the DRAM on Gaudi1/Gaudi2 (Linux 6.12
 * include/gaudi/gaudi.h:13, include/gaudi2/gaudi2.h:13) */
#define GAUDI_HL_DRAM_BAR_ID            4
#define GAUDI_HL_SYSFS_ACCEL_FMT        "/sys/class/accel/accel%d"
#define GAUDI_HL_SYSFS_LEGACY_FMT       "/sys/class/habanalabs/hl%d"

/* The loaded module's taint letters, 'O' for one built outside the kernel
 * tree (Linux 6.12 kernel/module/main.c:1002-1013, 2241-2245) */
#define GAUDI_HL_SYSFS_MODULE_TAINT     "/sys/module/habanalabs/taint"

/* PCI device ids (facts 1.3: K612 common/habanalabs_drv.c:62-75, HAB) */
#define GAUDI_HL_PCI_ID_GAUDI1          0x1000
#define GAUDI_HL_PCI_ID_GAUDI1_SEC      0x1010
#define GAUDI_HL_PCI_ID_GAUDI1_HL2000M  0x1001
#define GAUDI_HL_PCI_ID_GAUDI1_HL2000M_SEC 0x1011
#define GAUDI_HL_PCI_ID_GAUDI2          0x1020
#define GAUDI_HL_PCI_ID_GAUDI2_HL288    0x1021
#define GAUDI_HL_PCI_ID_GAUDI3          0x1060
#define GAUDI_HL_PCI_ID_GAUDI3_HL338    0x1063


/*
 * ioctl request codes (facts 1.6). DRM accel era (kernel >= 6.3, and Habana's
 * driver with CONFIG_DRM_ACCEL): DRM_IOWR(0x40 + n) with type 'd'
 * (UAPI:2194-2366). Legacy misc era: _IOWR('H', n + 1) from U61:1993-2151.
 */
#define GAUDI_HL_DRM_COMMAND_BASE       0x40
#define GAUDI_HL_DRM_IOWR(_n, _type) \
    _IOWR('d', GAUDI_HL_DRM_COMMAND_BASE + (_n), _type)

#define GAUDI_HL_DRM_IOCTL_INFO    GAUDI_HL_DRM_IOWR(0, struct hl_info_args)
#define GAUDI_HL_DRM_IOCTL_CB      GAUDI_HL_DRM_IOWR(1, union hl_cb_args)
#define GAUDI_HL_DRM_IOCTL_CS      GAUDI_HL_DRM_IOWR(2, union hl_cs_args)
#define GAUDI_HL_DRM_IOCTL_WAIT_CS GAUDI_HL_DRM_IOWR(3, union hl_wait_cs_args)
#define GAUDI_HL_DRM_IOCTL_MEMORY  GAUDI_HL_DRM_IOWR(4, union hl_mem_args)
#define GAUDI_HL_DRM_IOCTL_DEBUG   GAUDI_HL_DRM_IOWR(5, struct hl_debug_args)

#define GAUDI_HL_LEGACY_IOCTL_INFO    HL_IOCTL_INFO
#define GAUDI_HL_LEGACY_IOCTL_CB      HL_IOCTL_CB
#define GAUDI_HL_LEGACY_IOCTL_CS      HL_IOCTL_CS
#define GAUDI_HL_LEGACY_IOCTL_WAIT_CS HL_IOCTL_WAIT_CS
#define GAUDI_HL_LEGACY_IOCTL_MEMORY  HL_IOCTL_MEMORY
#define GAUDI_HL_LEGACY_IOCTL_DEBUG   HL_IOCTL_DEBUG

/* The ioctl "kind", independent of the ABI generation */
typedef enum {
    GAUDI_HL_OP_INFO,
    GAUDI_HL_OP_CB,
    GAUDI_HL_OP_CS,
    GAUDI_HL_OP_WAIT_CS,
    GAUDI_HL_OP_MEMORY,
    GAUDI_HL_OP_DEBUG,
    GAUDI_HL_OP_LAST
} gaudi_hl_op_t;

typedef enum {
    GAUDI_HL_ABI_ACCEL,   /* DRM accel request codes */
    GAUDI_HL_ABI_LEGACY,  /* misc-era request codes */
    GAUDI_HL_ABI_LAST
} gaudi_hl_abi_t;


/*
 * Memory ops newer than U61 (facts 3.1, 4.1, 4.3).
 * EXPORT_DMABUF_FD takes {addr, mem_size, offset} since Linux 6.2
 * (UAPI:1998-2019); U61 has {handle, mem_size}: the first two u64 are at
 * the same offsets, so this form is always filled.
 * REG_DMABUF_FD (op 99) exists only in Habana's out-of-tree driver
 * (HAB include/uapi/drm/habanalabs_accel.h@1646573d).
 */
#define GAUDI_HL_MEM_OP_REG_DMABUF_FD   99

struct gaudi_hl_mem_export_dmabuf_in {
    __u64 addr;
    __u64 mem_size;
    __u64 offset;
};

struct gaudi_hl_mem_reg_dmabuf_in {
    __u64 fd;
    __u64 length;
};

/* The "in" part of union hl_mem_args with the newer union members */
struct gaudi_hl_mem_in {
    union {
        struct gaudi_hl_mem_export_dmabuf_in export_dmabuf_fd;
        struct gaudi_hl_mem_reg_dmabuf_in    reg_dmabuf_fd;
        __u64                                raw[3];
    };
    __u32 op;
    __u32 flags;
    __u32 ctx_id;
    __u32 num_of_elements;
};

/*
 * HW IP info as of Linux 6.12 (304 bytes, UAPI:908-948; U61 has 256).
 * The driver copies min(return_size, sizeof) (facts 2.1), so the larger
 * form works on both: fields past byte 256 stay zero on old kernels.
 */
struct gaudi_hl_hw_ip_info {
    struct hl_info_hw_ip_info u61;   /* bytes 0..255, U61 layout */
    __u64 reserved4_nic_ports;       /* 256: HAB nic_ports_mask */
    __u64 reserved5;                 /* 264 */
    __u32 reserved6;                 /* 272 */
    __u8  reserved7_odp;             /* 276 */
    __u8  revision_id;               /* 277 */
    __u16 tpc_interrupt_id;          /* 278 */
    __u32 rotator_enabled_mask;      /* 280 */
    __u32 reserved9;                 /* 284 */
    __u64 engine_core_interrupt_reg_addr; /* 288 */
    __u64 reserved_dram_size;        /* 296 */
};

/* The HAB name for hw_ip.reserved4 at offset 240 (facts 2.3) */
#define gaudi_hl_pdma_user_owned_ch_mask(_hw_ip) ((_hw_ip)->u61.reserved4)

/* Device status values (facts 2.2; UAPI:682-702) */
#define GAUDI_HL_DEVICE_STATUS_OPERATIONAL                   0
#define GAUDI_HL_DEVICE_STATUS_IN_RESET                      1
#define GAUDI_HL_DEVICE_STATUS_MALFUNCTION                   2
#define GAUDI_HL_DEVICE_STATUS_NEEDS_RESET                   3
#define GAUDI_HL_DEVICE_STATUS_IN_DEVICE_CREATION            4
#define GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE 5

/*
 * Notifier events (facts 2.4). U61 has GET_EVENTS (op 30), REGISTER/
 * UNREGISTER_EVENTFD (28/29) and event bits 0-6 (U61:711-727); Linux 6.12
 * and Habana's driver add bits 7-10 (UAPI:715-741) and
 * HL_INFO_PAGE_FAULT_EVENT (op 33, UAPI:800, 843), which Linux 6.1 does
 * not have (K61 common/habanalabs_ioctl.c:800-910: EINVAL).
 */
#define GAUDI_HL_INFO_PAGE_FAULT_EVENT      33
#define GAUDI_HL_NOTIFIER_EVENT_RAZWI       (1ULL << 7)
#define GAUDI_HL_NOTIFIER_EVENT_PAGE_FAULT  (1ULL << 8)
#define GAUDI_HL_NOTIFIER_EVENT_CRITICAL_HW (1ULL << 9)
#define GAUDI_HL_NOTIFIER_EVENT_CRITICAL_FW (1ULL << 10)

/* HL_INFO_PAGE_FAULT_EVENT answer (UAPI:1321-1332) */
struct gaudi_hl_page_fault_info {
    __s64 timestamp;   /* ktime_get() ns: CLOCK_MONOTONIC */
    __u64 addr;
    __u16 engine_id;   /* Gaudi3 only; 0 on Gaudi1/2 */
    __u8  pad[6];
};

/* CB handle encoding (facts 5.1: K612 common/habanalabs.h:44-58) */
#define GAUDI_HL_MMAP_TYPE_SHIFT        59
#define GAUDI_HL_MMAP_TYPE_CB           0x2ULL

/* In-flight CS limits (facts 5.2 step 4) */
#define GAUDI_HL_GAUDI1_MAX_PENDING_CS  16384
#define GAUDI_HL_GAUDI2_MAX_PENDING_CS  64


/* ABI sizes computed from the uapi (facts 1.6, 2.3, 3.1) */
static_assert(sizeof(struct hl_info_args) == 24, "hl_info_args");
static_assert(sizeof(union hl_cb_args) == 24, "hl_cb_args");
static_assert(sizeof(union hl_cs_args) == 48, "hl_cs_args");
static_assert(sizeof(union hl_wait_cs_args) == 56, "hl_wait_cs_args");
static_assert(sizeof(union hl_mem_args) == 40, "hl_mem_args");
static_assert(sizeof(struct hl_cs_chunk) == 64, "hl_cs_chunk");
static_assert(sizeof(struct hl_info_hw_ip_info) == 256, "U61 hw_ip_info");
static_assert(sizeof(struct gaudi_hl_hw_ip_info) == 304, "hw_ip_info 6.12");
static_assert(sizeof(struct gaudi_hl_page_fault_info) == 24, "page fault");
static_assert(sizeof(struct gaudi_hl_mem_in) == sizeof(struct hl_mem_in),
              "gaudi_hl_mem_in");
static_assert(GAUDI_HL_DRM_IOCTL_INFO == 0xc0186440, "DRM INFO code");
static_assert(GAUDI_HL_DRM_IOCTL_CB == 0xc0186441, "DRM CB code");
static_assert(GAUDI_HL_DRM_IOCTL_CS == 0xc0306442, "DRM CS code");
static_assert(GAUDI_HL_DRM_IOCTL_WAIT_CS == 0xc0386443, "DRM WAIT_CS code");
static_assert(GAUDI_HL_DRM_IOCTL_MEMORY == 0xc0286444, "DRM MEMORY code");
static_assert(GAUDI_HL_LEGACY_IOCTL_INFO == 0xc0184801, "legacy INFO code");
static_assert(GAUDI_HL_LEGACY_IOCTL_MEMORY == 0xc0284805, "legacy MEM code");

#endif

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * NUMA placement of device-visible host buffers: the device's node from
 * the (emulated) PCI sysfs, the decision whether to place, the binding
 * itself checked with get_mempolicy, and the DMA engine's host area.
 */

#include "common/gaudi_unit.h"

extern "C" {
#include <uct/gaudi/dev/gaudi_dev.h>
#include <uct/gaudi/dma/gaudi_dma.h>
#include <uct/gaudi/dma/gaudi_dma_cs.h>
}

#include <numa.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

namespace {

typedef gaudi_test numa;

/* mode and whether @a node is in the policy of the page at @a ptr */
int policy_of(void *ptr, int node, bool *has_node)
{
    unsigned long mask[16] = {0};
    int mode = -1;

    if (get_mempolicy(&mode, mask, sizeof(mask) * 8, ptr, MPOL_F_ADDR)) {
        return -1;
    }
    *has_node = (mask[node / 64] >> (node % 64)) & 1;
    return mode;
}

int node_of(void *ptr)
{
    int node = -1;

    return get_mempolicy(&node, NULL, 0, ptr, MPOL_F_NODE | MPOL_F_ADDR) ?
           -1 : node;
}

} // namespace


TEST_F(numa, node_from_pci_sysfs)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "3"},
                      {"HLSIM_NUMA_NODE", "0,1"}});
    const uct_gaudi_devices_t *devs = uct_gaudi_devices();

    ASSERT_EQ(3u, devs->count);
    EXPECT_EQ(0, uct_gaudi_numa_node(&devs->dev[0]));
    EXPECT_EQ(1, uct_gaudi_numa_node(&devs->dev[1]));
    EXPECT_EQ(1, uct_gaudi_numa_node(&devs->dev[2])); /* the last repeats */
}

TEST_F(numa, no_node_by_default)
{
    GAUDI_UNIT_CHILD();
    const uct_gaudi_devices_t *devs = uct_gaudi_devices();
    const char *reason = NULL;

    ASSERT_EQ(2u, devs->count);
    EXPECT_EQ(-1, uct_gaudi_numa_node(&devs->dev[0]));
    if (numa_available() < 0) {
        GTEST_SKIP() << "no NUMA support in this kernel";
    }
    EXPECT_EQ(-1, uct_gaudi_numa_target(&devs->dev[0], &reason));
    ASSERT_NE(nullptr, reason);
    EXPECT_NE(nullptr, strstr(reason, "no NUMA node")) << reason;
}

TEST_F(numa, target_follows_the_host)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUMA_NODE", "0"}});
    const uct_gaudi_dev_info_t *dev = uct_gaudi_device_by_index(0);
    const char *reason = NULL;
    unsigned long node0 = 1;
    int target;

    ASSERT_NE(nullptr, dev);
    if (numa_available() < 0) {
        GTEST_SKIP() << "no NUMA support in this kernel";
    }

    target = uct_gaudi_numa_target(dev, &reason);
    if (numa_num_configured_nodes() <= 1) {
        EXPECT_EQ(-1, target);
        ASSERT_NE(nullptr, reason);
        EXPECT_NE(nullptr, strstr(reason, "single NUMA node")) << reason;
    } else {
        EXPECT_EQ(0, target) << reason;
    }

    /* a policy of the process's own (numactl --membind) is respected */
    ASSERT_EQ(0, set_mempolicy(MPOL_BIND, &node0, 64));
    EXPECT_EQ(-1, uct_gaudi_numa_target(dev, &reason));
    ASSERT_NE(nullptr, reason);
    EXPECT_NE(nullptr, strstr(reason, "memory policy of its own")) << reason;
    ASSERT_EQ(0, set_mempolicy(MPOL_DEFAULT, NULL, 0));
}

TEST(numa_bind, prefers_the_node_and_moves_touched_pages)
{
    size_t page = sysconf(_SC_PAGESIZE), size = 8 * page;
    bool has_node = false;
    void *ptr = NULL;

    if (numa_available() < 0) {
        GTEST_SKIP() << "no NUMA support in this kernel";
    }
    ASSERT_EQ(0, posix_memalign(&ptr, page, size));
    memset(ptr, 1, page); /* one page already faulted in */
    EXPECT_EQ(MPOL_DEFAULT, policy_of(ptr, 0, &has_node));

    /* node 0 exists on every Linux host */
    ASSERT_EQ(UCS_OK, uct_gaudi_numa_bind(ptr, size, 0));
    memset(ptr, 2, size);
    for (size_t off = 0; off < size; off += page) {
        void *p = UCS_PTR_BYTE_OFFSET(ptr, off);
        EXPECT_EQ(MPOL_PREFERRED, policy_of(p, 0, &has_node)) << off;
        EXPECT_TRUE(has_node) << off;
        EXPECT_EQ(0, node_of(p)) << off;
    }

    /* only page-aligned buffers: a neighbour's policy must not change */
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_gaudi_numa_bind(UCS_PTR_BYTE_OFFSET(ptr, 8), page, 0));
    free(ptr);
}

/* The DMA engine's command and bounce buffers: placed exactly when the
 * decision says so (on this project's single-node VM: left alone) */
TEST_F(numa, dma_host_area_placement)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUMA_NODE", "0"}});
    uct_gaudi_dma_params_t params;
    uct_gaudi_ctx_t *ctx;
    uct_gaudi_dma_t *dma;
    const char *reason;
    void *area;
    bool has_node = false;
    int target;

    if (numa_available() < 0) {
        GTEST_SKIP() << "no NUMA support in this kernel";
    }
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(0, &ctx));
    uct_gaudi_dma_params_default(ctx, &params);
    ASSERT_EQ(UCS_OK, uct_gaudi_dma_create(ctx, &params, &dma));

    area   = ucs_derived_of(dma, uct_gaudi_dma_cs_t)->host_area;
    target = uct_gaudi_numa_target(ctx->info, &reason);
    if (target >= 0) {
        EXPECT_EQ(MPOL_PREFERRED, policy_of(area, target,
                                            &has_node));
        EXPECT_TRUE(has_node);
        EXPECT_EQ(target, node_of(area));
    } else {
        EXPECT_EQ(MPOL_DEFAULT, policy_of(area, 0, &has_node))
                << reason;
    }

    uct_gaudi_dma_destroy(dma);
    uct_gaudi_ctx_put(ctx);
}

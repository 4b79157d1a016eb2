/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Discovery, GAUDI_MAPPING_TABLE from the environment, selection
 * (UCX_GAUDI_*), ownership and sharing of the device context.
 */

#include "common/gaudi_unit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <dlfcn.h>
#include <unistd.h>

using gaudi_unit::log_capture;

namespace {
typedef gaudi_test discover;
typedef gaudi_test select_dev;
typedef gaudi_test ownership;
}


TEST_F(discover, no_devices)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "0"}});
    uct_gaudi_ctx_t *ctx;
    log_capture log;

    EXPECT_EQ(0u, uct_gaudi_devices()->count);
    EXPECT_EQ(UCS_ERR_NO_DEVICE, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_EQ(UCS_ERR_NO_DEVICE, uct_gaudi_ctx_get(0, &ctx));
    EXPECT_EQ(NULL, uct_gaudi_device_by_index(0));
}

TEST_F(discover, one_device)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "1"}});
    const uct_gaudi_devices_t *devs = uct_gaudi_devices();

    ASSERT_EQ(1u, devs->count);
    const uct_gaudi_dev_info_t &d = devs->dev[0];
    EXPECT_EQ(0, d.index);
    EXPECT_EQ(0, d.minor);
    EXPECT_STREQ("GAUDI_0", d.name);
    EXPECT_STREQ("accel0", d.node_name);
    EXPECT_EQ(UCT_GAUDI_ASIC_GAUDI2, d.asic);
    EXPECT_EQ(GAUDI_HL_ABI_ACCEL, d.abi);
    EXPECT_EQ((uint32_t)GAUDI_HL_DEVICE_STATUS_OPERATIONAL, d.status);
    EXPECT_TRUE(d.has_bus_id);
    EXPECT_STREQ("GAUDI2", d.device_type);
    EXPECT_STREQ("operational", d.sysfs_status);
    EXPECT_NE(0u, d.hw_ip.u61.dram_size);
    EXPECT_NE(0u, d.hw_ip.u61.device_mem_alloc_default_page_size);
    ASSERT_NE(UCS_SYS_DEVICE_ID_UNKNOWN, d.sys_dev);
    EXPECT_STREQ("GAUDI_0", ucs_topo_sys_device_get_name(d.sys_dev));
    /* cached: the same table every time */
    EXPECT_EQ(devs, uct_gaudi_devices());
}

TEST_F(discover, eight_devices_mixed_asics)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "8"},
                      {"HLSIM_MODULE_IDS", "3,2,1,0,7,6,5,4"},
                      {"HLSIM_ASIC_2", "gaudi1"},
                      {"HLSIM_ASIC_5", "gaudi3"}});
    const uct_gaudi_devices_t *devs = uct_gaudi_devices();
    static const uint32_t modules[] = {3, 2, 1, 0, 7, 6, 5, 4};
    char name[16];

    ASSERT_EQ(8u, devs->count);
    for (int i = 0; i < 8; ++i) {
        const uct_gaudi_dev_info_t &d = devs->dev[i];
        snprintf(name, sizeof(name), "GAUDI_%d", i);
        EXPECT_EQ(i, d.index);
        EXPECT_EQ(i, d.minor);
        EXPECT_EQ(modules[i], d.module_id);
        EXPECT_STREQ(name, d.name);
        EXPECT_STREQ(name, ucs_topo_sys_device_get_name(d.sys_dev));
        for (int j = 0; j < i; ++j) {
            EXPECT_STRNE(devs->dev[j].pci_addr, d.pci_addr);
        }
    }
    EXPECT_EQ(UCT_GAUDI_ASIC_GAUDI1, devs->dev[2].asic);
    EXPECT_EQ(UCT_GAUDI_ASIC_GAUDI3, devs->dev[5].asic);
    EXPECT_EQ(UCT_GAUDI_ASIC_GAUDI2, devs->dev[7].asic);
    EXPECT_EQ(&devs->dev[4], uct_gaudi_device_by_module_id(7));
    EXPECT_EQ(&devs->dev[6], uct_gaudi_device_by_minor(6));
}

TEST_F(discover, legacy_nodes)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NODES", "legacy"}});
    const uct_gaudi_devices_t *devs = uct_gaudi_devices();
    uct_gaudi_ctx_t *ctx;

    ASSERT_EQ(2u, devs->count);
    EXPECT_STREQ("hl1", devs->dev[1].node_name);
    EXPECT_EQ(GAUDI_HL_ABI_LEGACY, devs->dev[1].abi);
    EXPECT_TRUE(devs->dev[1].has_bus_id);
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(1, &ctx));
    EXPECT_STREQ("hl1", ctx->hl.name);
    uct_gaudi_ctx_put(ctx);
}

/*
 * Accel indices that differ from the driver's probe order (another accel
 * driver took accel0): accel_controlD1 answers for the device probed
 * second, accel_controlD2 for none (facts 9.9). Neither device is paired
 * with another's data: both are skipped, with the reason.
 */
TEST_F(discover, control_node_probe_order)
{
    GAUDI_UNIT_CHILD({{"HLSIM_ACCEL_BASE", "1"}});
    log_capture log;

    EXPECT_EQ(0u, uct_gaudi_devices()->count);
    EXPECT_NE("", log.find({"accel1", "answers for module 1",
                            "probe order"})) << log.dump();
    EXPECT_NE("", log.find({"accel_controlD2", "has no device",
                            "probe order"})) << log.dump();
}

TEST_F(discover, disabled_device_skipped)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "3"}});
    ASSERT_EQ(0, gaudi_unit::hlsim_set_device_status(
                      1, GAUDI_HL_DEVICE_STATUS_MALFUNCTION));
    log_capture log;

    /* control open of a disabled device fails with EPERM (facts 1.2) */
    const uct_gaudi_devices_t *devs = uct_gaudi_devices();
    ASSERT_EQ(2u, devs->count);
    EXPECT_EQ(0, devs->dev[0].minor);
    EXPECT_EQ(2, devs->dev[1].minor);
    EXPECT_EQ(1, devs->dev[1].index);
    EXPECT_NE("", log.find({"accel_controlD1", "skipped"})) << log.dump();
}

TEST_F(discover, mapping_table_from_env)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "3"}, {"HLSIM_MODULE_IDS",
                                                   "10,11,12"}});
    const uct_gaudi_dev_info_t *d;
    const uct_gaudi_devices_t *devs;
    char table[512];

    /* learn the bus ids, then renumber with a table in a fresh discovery */
    devs = uct_gaudi_devices();
    ASSERT_EQ(3u, devs->count);
    snprintf(table, sizeof(table),
             "[{\"index\": 0, \"module_id\": 12, \"bus_id\": \"%s\"},"
             " {\"index\": 2, \"module_id\": 10, \"bus_id\": \"%s\"},"
             " {\"index\": 1, \"module_id\": 99, \"bus_id\": \"0000:ff:00.0\"}]",
             devs->dev[2].pci_addr, devs->dev[0].pci_addr);
    setenv("GAUDI_MAPPING_TABLE", table, 1);
    uct_gaudi_devices_reset();

    log_capture log;
    devs = uct_gaudi_devices();
    EXPECT_NE("", log.find({"GAUDI_MAPPING_TABLE", "entry 2", "no device"}))
            << log.dump();
    EXPECT_EQ(1u, log.count(UCS_LOG_LEVEL_WARN)) << log.dump();
    ASSERT_EQ(3u, devs->count);
    d = uct_gaudi_device_by_index(0);
    ASSERT_NE(nullptr, d);
    EXPECT_EQ(2, d->minor);
    EXPECT_STREQ("GAUDI_0", d->name);
    EXPECT_STREQ("GAUDI_0", ucs_topo_sys_device_get_name(d->sys_dev));
    d = uct_gaudi_device_by_index(2);
    ASSERT_NE(nullptr, d);
    EXPECT_EQ(0, d->minor);
    d = uct_gaudi_device_by_index(1); /* not in the valid part: next free */
    ASSERT_NE(nullptr, d);
    EXPECT_EQ(1, d->minor);

    /* and the device selected by index 0 is the remapped one */
    uct_gaudi_ctx_t *ctx;
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(0, &ctx));
    EXPECT_STREQ("accel2", ctx->hl.name);
    uct_gaudi_ctx_put(ctx);
}

TEST_F(discover, malformed_mapping_table_ignored)
{
    GAUDI_UNIT_CHILD({{"GAUDI_MAPPING_TABLE", "[{\"index\": 1,"}});
    log_capture log;
    const uct_gaudi_devices_t *devs = uct_gaudi_devices();

    ASSERT_EQ(2u, devs->count);
    EXPECT_EQ(0, devs->dev[0].minor);
    EXPECT_EQ(1, devs->dev[1].minor);
    EXPECT_NE("", log.find({"GAUDI_MAPPING_TABLE", "malformed JSON",
                            "whole table is ignored"})) << log.dump();
}


TEST_F(select_dev, by_index)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "3"}, {"UCX_GAUDI_DEVICE", "2"}});
    uct_gaudi_ctx_t *ctx;

    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_EQ(2, ctx->info->index);
    EXPECT_STREQ("accel2", ctx->hl.name);
    EXPECT_STREQ("opened", ctx->source);
    uct_gaudi_ctx_put(ctx);
}

/* An explicit index never lands on another physical device: with accel0
 * skipped by discovery, index 0 would be accel1 */
TEST_F(select_dev, index_after_skipped_device_refused)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "3"}, {"UCX_GAUDI_DEVICE", "0"}});
    ASSERT_EQ(0, gaudi_unit::hlsim_set_device_status(
                      0, GAUDI_HL_DEVICE_STATUS_MALFUNCTION));
    uct_gaudi_ctx_t *ctx;
    log_capture log;

    ASSERT_EQ(2u, uct_gaudi_devices()->count);
    EXPECT_EQ(UCS_ERR_NO_DEVICE, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_NE("", log.find({"UCX_GAUDI_DEVICE=0 would select GAUDI_0 "
                            "(accel1)", "node 0 before it was skipped"}))
            << log.dump();

    /* by module id it is unambiguous */
    const uct_gaudi_dev_info_t *d = uct_gaudi_device_by_index(0);
    ASSERT_NE(nullptr, d);
    char value[32];
    snprintf(value, sizeof(value), "module:%u", d->module_id);
    setenv("UCX_GAUDI_DEVICE", value, 1);
    uct_gaudi_global_config_reset();
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_STREQ("accel1", ctx->hl.name);
    uct_gaudi_ctx_put(ctx);
}

TEST_F(select_dev, by_module_id)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "3"},
                      {"HLSIM_MODULE_IDS", "5,9,7"},
                      {"UCX_GAUDI_DEVICE", "module:7"}});
    uct_gaudi_ctx_t *ctx;

    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_EQ(7u, ctx->info->module_id);
    EXPECT_EQ(2, ctx->info->minor);
    uct_gaudi_ctx_put(ctx);
}

TEST_F(select_dev, by_local_rank)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "3"},
                      {"OMPI_COMM_WORLD_LOCAL_RANK", "4"}});
    uct_gaudi_ctx_t *ctx;

    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_EQ(1, ctx->info->index); /* 4 % 3 */
    uct_gaudi_ctx_put(ctx);
}

TEST_F(select_dev, by_local_rank_slurm_and_order)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "4"}, {"SLURM_LOCALID", "2"},
                      {"LOCAL_RANK", "3"}});
    uct_gaudi_ctx_t *ctx;

    /* SLURM_LOCALID comes before LOCAL_RANK */
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_EQ(2, ctx->info->index);
    uct_gaudi_ctx_put(ctx);
}

TEST_F(select_dev, bad_values)
{
    GAUDI_UNIT_CHILD();
    uct_gaudi_ctx_t *ctx;

    for (const char *value : {"x", "-1", "1x", "module:", "module:-2", ""}) {
        log_capture log;
        setenv("UCX_GAUDI_DEVICE", value, 1);
        uct_gaudi_global_config_reset();
        EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_gaudi_ctx_get(-1, &ctx))
                << value;
        EXPECT_NE("", log.find({"invalid UCX_GAUDI_DEVICE"})) << log.dump();
    }
    for (const char *value : {"7", "module:42"}) {
        log_capture log;
        setenv("UCX_GAUDI_DEVICE", value, 1);
        uct_gaudi_global_config_reset();
        EXPECT_EQ(UCS_ERR_NO_DEVICE, uct_gaudi_ctx_get(-1, &ctx)) << value;
        EXPECT_NE("", log.find({"UCX_GAUDI_DEVICE", value, "no such device"}))
                << log.dump();
    }
}

TEST_F(select_dev, busy_device_auto_picks_next_free)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "3"}});
    gaudi_unit::node_holder other(0);
    uct_gaudi_ctx_t *ctx;
    log_capture log;

    ASSERT_TRUE(other.ok());
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_EQ(1, ctx->info->minor);
    EXPECT_EQ(0u, log.count(UCS_LOG_LEVEL_WARN)) << log.dump();
    uct_gaudi_ctx_put(ctx);
}

/* a named busy device is waited for (a previous user's context may live
 * on while importers hold its dma-bufs, facts 4.1), then refused */
TEST_F(select_dev, busy_device_explicit_gives_clear_error)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_DEVICE", "0"},
                      {"UCX_GAUDI_OPEN_TIMEOUT", "200ms"}});
    gaudi_unit::node_holder other(0);
    uct_gaudi_ctx_t *ctx;
    log_capture log;
    ucs_time_t start;

    ASSERT_TRUE(other.ok());
    const uct_gaudi_dev_info_t *d = uct_gaudi_device_by_index(0);
    ASSERT_NE(nullptr, d);
    start = ucs_get_time();
    EXPECT_EQ(UCS_ERR_BUSY, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_GE(ucs_time_to_msec(ucs_get_time() - start), 150.0);
    std::string expect = std::string("gaudi GAUDI_0 (accel0, ") + d->pci_addr +
                         "): device is busy after 0.2 s "
                         "(UCX_GAUDI_OPEN_TIMEOUT): another process owns its "
                         "compute context, or importers still hold dma-bufs "
                         "of its previous user; set UCX_GAUDI_DEVICE or "
                         "UCX_GAUDI_DEVICE_FD";
    EXPECT_NE("", log.find({expect})) << log.dump();
}

/*
 * Linux 6.1: a device whose user holds it open while a dma-buf of it lives
 * is busy, EBUSY (K61 common/habanalabs_drv.c:190-196); EAGAIN, the
 * answer of a reset or of a release still pending, comes only after that
 * user closed it (:182-188). The choice gives up at once, without waiting
 * UCX_GAUDI_OPEN_TIMEOUT as for a device in reset.
 */
TEST_F(select_dev, linux61_exporter_holding_is_busy)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NODES", "legacy"}, {"HLSIM_ASIC", "gaudi1"},
                      {"HLSIM_NUM_DEVICES", "1"},
                      {"UCX_GAUDI_OPEN_TIMEOUT", "5s"}});
    int to_child[2], to_parent[2], status, dmabuf;
    uct_gaudi_ctx_t *ctx;
    uct_gaudi_hl_t hl;
    log_capture log;
    ucs_time_t start;
    char c = 'n';
    pid_t pid;

    ASSERT_EQ(0, pipe(to_child));
    ASSERT_EQ(0, pipe(to_parent));
    pid = fork();
    if (pid == 0) {
        /* the exporter: Gaudi1 exports physical user DRAM (facts 4.1) */
        close(to_child[1]);
        close(to_parent[0]);
        if ((uct_gaudi_hl_open(0, 0, 0, &hl) == UCS_OK) &&
            (uct_gaudi_hl_export_dmabuf(&hl, 0x20000000, 2 << 20, 0,
                                        O_RDWR | O_CLOEXEC, &dmabuf) ==
             UCS_OK)) {
            c = 'y';
        }
        (void)!write(to_parent[1], &c, 1);
        (void)!read(to_child[0], &c, 1);
        _exit(0);
    }
    close(to_child[0]);
    close(to_parent[1]);
    ASSERT_EQ(1, read(to_parent[0], &c, 1));
    close(to_parent[0]);
    EXPECT_EQ('y', c);
    start = ucs_get_time();
    EXPECT_EQ(UCS_ERR_BUSY, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_LT(ucs_time_to_msec(ucs_get_time() - start), 2000.0);
    EXPECT_NE("", log.find({"no free Gaudi device", "1 of 1 busy"}))
            << log.dump();
    close(to_child[1]);
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0));
}

TEST_F(select_dev, all_busy)
{
    GAUDI_UNIT_CHILD();
    gaudi_unit::node_holder other0(0), other1(1);
    uct_gaudi_ctx_t *ctx;
    log_capture log;

    ASSERT_TRUE(other0.ok() && other1.ok());
    EXPECT_EQ(UCS_ERR_BUSY, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_NE("", log.find({"no free Gaudi device", "2 of 2 busy"}))
            << log.dump();
}

TEST_F(select_dev, eagain_backoff_during_reset)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_DEVICE", "1"},
                      {"UCX_GAUDI_OPEN_TIMEOUT", "5s"}});
    uct_gaudi_ctx_t *ctx;
    ucs_time_t start;

    ASSERT_EQ(2u, uct_gaudi_devices()->count);
    ASSERT_EQ(0, gaudi_unit::hlsim_reset_device(1, 300));
    start = ucs_get_time();
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_GE(ucs_time_to_msec(ucs_get_time() - start), 200.0);
    EXPECT_EQ(1, ctx->info->minor);
    uct_gaudi_ctx_put(ctx);
}

/*
 * Gaudi2 resets after every release of the compute node, inside the
 * closer's close() (facts 7.1, 9.8): a second process opening meanwhile
 * waits through the EAGAIN and succeeds; a restart right after a close
 * finds the device operational
 */
TEST_F(select_dev, reopen_after_release_reset)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_DEVICE", "0"},
                      {"UCX_GAUDI_OPEN_TIMEOUT", "5s"},
                      {"HLSIM_RELEASE_RESET_MS", "300"}});
    uct_gaudi_ctx_t *ctx;
    int status;
    pid_t pid;

    auto get_status = (int (*)(int))dlsym(RTLD_DEFAULT,
                                          "hlsim_get_device_status");
    ASSERT_TRUE(get_status != NULL);
    /* forked first: a child holding an inherited fd would keep the
     * device open through the parent's close */
    pid = fork();
    if (pid == 0) {
        /* another process opens while this one's close resets the device */
        for (int i = 0; (i < 5000) &&
             (get_status(0) !=
              GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE); ++i) {
            usleep(1000);
        }
        if (get_status(0) !=
            GAUDI_HL_DEVICE_STATUS_IN_RESET_AFTER_DEVICE_RELEASE) {
            _exit(3);
        }
        if (uct_gaudi_ctx_get(-1, &ctx) != UCS_OK) {
            _exit(1);
        }
        status = (ctx->info->minor == 0);
        uct_gaudi_ctx_put(ctx);
        _exit(status ? 0 : 2);
    }
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    uct_gaudi_ctx_put(ctx);   /* the release reset runs inside the close */
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0))
        << "second process: status 0x" << std::hex << status;
    /* the other process's close reset the device before it returned */
    EXPECT_EQ(GAUDI_HL_DEVICE_STATUS_OPERATIONAL, get_status(0));
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_EQ(0, ctx->info->minor);
    uct_gaudi_ctx_put(ctx);
}

/* IN_DEVICE_CREATION counts as operational (facts 9.12): selected first */
TEST_F(select_dev, device_creation_is_operational)
{
    GAUDI_UNIT_CHILD();
    uct_gaudi_ctx_t *ctx;

    ASSERT_EQ(0, gaudi_unit::hlsim_set_device_status(
                      0, GAUDI_HL_DEVICE_STATUS_IN_DEVICE_CREATION));
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_EQ(0, ctx->info->minor);
    uct_gaudi_ctx_put(ctx);
}

TEST_F(select_dev, eagain_timeout)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_DEVICE", "0"},
                      {"UCX_GAUDI_OPEN_TIMEOUT", "100ms"}});
    uct_gaudi_ctx_t *ctx;
    log_capture log;

    ASSERT_EQ(2u, uct_gaudi_devices()->count);
    ASSERT_EQ(0, gaudi_unit::hlsim_reset_device(0, 3000));
    EXPECT_EQ(UCS_ERR_NO_RESOURCE, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_NE("", log.find({"gaudi GAUDI_0 (accel0", "still in reset",
                            "UCX_GAUDI_OPEN_TIMEOUT"})) << log.dump();
}

TEST_F(select_dev, needs_reset_is_rejected)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_DEVICE", "0"}});
    uct_gaudi_ctx_t *ctx;

    ASSERT_EQ(2u, uct_gaudi_devices()->count);
    ASSERT_EQ(0, gaudi_unit::hlsim_set_device_status(
                      0, GAUDI_HL_DEVICE_STATUS_NEEDS_RESET));
    log_capture log;
    EXPECT_EQ(UCS_ERR_REJECTED, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_NE("", log.find({"GAUDI_0", "disabled or needs a reset"}))
            << log.dump();
}


TEST_F(ownership, shared_refcounted_context)
{
    GAUDI_UNIT_CHILD();
    uct_gaudi_ctx_t *a, *b, *c;
    int fds = gaudi_unit::count_fds();

    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &a));
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &b));
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(a->info->index, &c));
    EXPECT_EQ(a, b);
    EXPECT_EQ(a, c);
    EXPECT_EQ(3u, a->refcount);
    EXPECT_EQ(fds + 1, gaudi_unit::count_fds()) << "one fd per device";
    uct_gaudi_ctx_put(c);
    uct_gaudi_ctx_put(b);
    EXPECT_EQ(fds + 1, gaudi_unit::count_fds());
    uct_gaudi_ctx_put(a);
    EXPECT_EQ(fds, gaudi_unit::count_fds()) << "last put closes the node";

    /* opened again after the last put */
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &a));
    uct_gaudi_ctx_put(a);
}

TEST_F(ownership, device_fd)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "3"}});
    uct_gaudi_ctx_t *ctx, *ctx2;
    char value[16];
    int fd;

    fd = open("/dev/accel/accel2", O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    snprintf(value, sizeof(value), "%d", fd);
    setenv("UCX_GAUDI_DEVICE_FD", value, 1);
    uct_gaudi_global_config_reset();

    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_EQ(fd, ctx->hl.fd);
    EXPECT_EQ(0, ctx->hl.owns_fd);
    EXPECT_EQ(2, ctx->info->minor);
    EXPECT_STREQ("UCX_GAUDI_DEVICE_FD", ctx->source);
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(2, &ctx2)); /* same device: shared */
    EXPECT_EQ(ctx, ctx2);
    uct_gaudi_ctx_put(ctx2);
    uct_gaudi_ctx_put(ctx);
    EXPECT_NE(-1, fcntl(fd, F_GETFD)) << "the application's fd was closed";
    close(fd);
}

/* The application closes its fd and the number is reused for another
 * device: the context must not drive that device */
TEST_F(ownership, device_fd_reused_for_another_device)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "3"}});
    uct_gaudi_ctx_t *ctx;
    char value[16];
    log_capture log;
    uint32_t st;
    int fd, other;

    fd = open("/dev/accel/accel2", O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    snprintf(value, sizeof(value), "%d", fd);
    setenv("UCX_GAUDI_DEVICE_FD", value, 1);
    uct_gaudi_global_config_reset();
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_EQ(UCS_OK, uct_gaudi_hl_device_status(&ctx->hl, &st));

    close(fd);
    other = open("/dev/accel/accel1", O_RDWR | O_CLOEXEC);
    ASSERT_GE(other, 0);
    if (other != fd) {
        ASSERT_EQ(fd, dup2(other, fd));
        close(other);
    }
    EXPECT_EQ(UCS_ERR_NO_DEVICE, uct_gaudi_hl_device_status(&ctx->hl, &st));
    EXPECT_NE("", log.find({"borrowed fd", "no longer that device"}))
            << log.dump();
    uct_gaudi_ctx_put(ctx);
    close(fd);
}

TEST_F(ownership, device_fd_conflicts_with_device)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_DEVICE", "0"}});
    uct_gaudi_ctx_t *ctx;
    char value[16];
    log_capture log;
    int fd;

    fd = open("/dev/accel/accel1", O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    snprintf(value, sizeof(value), "%d", fd);
    setenv("UCX_GAUDI_DEVICE_FD", value, 1);
    uct_gaudi_global_config_reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_NE("", log.find({"UCX_GAUDI_DEVICE=0 selects GAUDI_0",
                            "belongs to GAUDI_1"})) << log.dump();
    close(fd);
}

TEST_F(ownership, device_fd_not_a_device)
{
    GAUDI_UNIT_CHILD();
    uct_gaudi_ctx_t *ctx;
    char value[16];
    log_capture log;
    int fd;

    /* refused once when the settings are read; UCX opens a device */
    fd = open("/dev/accel/accel_controlD0", O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    snprintf(value, sizeof(value), "%d", fd);
    setenv("UCX_GAUDI_DEVICE_FD", value, 1);
    uct_gaudi_global_config_reset();
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_STREQ("opened", ctx->source);
    uct_gaudi_ctx_put(ctx);
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    uct_gaudi_ctx_put(ctx);
    EXPECT_NE("", log.find({std::string("UCX_GAUDI_DEVICE_FD=") + value +
                            " is invalid (fd " + value + " is not a Gaudi "
                            "compute node", "using -1"})) << log.dump();
    EXPECT_EQ(1u, log.count(UCS_LOG_LEVEL_ERROR)) << log.dump();
    close(fd);
}

/*
 * Each bad UCX_GAUDI_* value is refused on its own, once, naming the
 * variable, the value and what is used instead; the other settings stay
 * (UCX's own fill would drop them all).
 */
TEST_F(ownership, bad_settings_refused_one_by_one)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NUM_DEVICES", "3"}});
    struct {
        const char *var, *value, *why, *used;
    } cases[] = {
        {"UCX_GAUDI_DEVICE_FD", "abc", "expected integer", "-1"},
        {"UCX_GAUDI_DEVICE_FD", "-5", "not -1 or an fd number", "-1"},
        {"UCX_GAUDI_DEVICE_FD", "99999999999", "not -1 or an fd number",
         "-1"},
        {"UCX_GAUDI_DEVICE_FD", "1000", "is not open", "-1"},
        {"UCX_GAUDI_OPEN_TIMEOUT", "-5s", "a negative time", "5s"},
        {"UCX_GAUDI_COPY_BACKEND", "fast", "expected [auto|kernel|synapse]",
         "auto"},
        {"UCX_GAUDI_SYNAPSE", "perhaps", "expected", "try"},
    };
    char path[] = "/tmp/gaudi_cfg_XXXXXX";
    int file = mkstemp(path);
    uct_gaudi_ctx_t *ctx;
    char value[16];

    ASSERT_GE(file, 0);
    unlink(path);
    for (const auto &c : cases) {
        log_capture log;
        setenv("UCX_GAUDI_DEVICE", "2", 1);
        setenv(c.var, c.value, 1);
        uct_gaudi_global_config_reset();
        ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx)) << c.var;
        /* the valid setting beside the bad one still applies */
        EXPECT_EQ(2, ctx->info->index) << c.var << "=" << c.value;
        uct_gaudi_ctx_put(ctx);
        EXPECT_NE("", log.find({std::string(c.var) + "=" + c.value +
                                " is invalid (", c.why,
                                std::string("); using ") + c.used}))
                << log.dump();
        EXPECT_EQ(1u, log.count(UCS_LOG_LEVEL_ERROR)) << log.dump();
        unsetenv(c.var);
    }

    /* a regular file is no device node */
    snprintf(value, sizeof(value), "%d", file);
    log_capture log;
    setenv("UCX_GAUDI_DEVICE_FD", value, 1);
    uct_gaudi_global_config_reset();
    EXPECT_EQ(-1, uct_gaudi_global_config()->device_fd);
    EXPECT_NE("", log.find({"not a Gaudi compute node", "using -1"}))
            << log.dump();
    EXPECT_EQ(1u, log.count(UCS_LOG_LEVEL_ERROR)) << log.dump();
    unsetenv("UCX_GAUDI_DEVICE_FD");
    close(file);

    /* "maybe" is UCX's own synonym of "try" for every ternary setting */
    log_capture quiet;
    setenv("UCX_GAUDI_SYNAPSE", "maybe", 1);
    uct_gaudi_global_config_reset();
    EXPECT_EQ(UCS_TRY, uct_gaudi_global_config()->synapse);
    EXPECT_EQ(0u, quiet.count(UCS_LOG_LEVEL_ERROR)) << quiet.dump();
    unsetenv("UCX_GAUDI_SYNAPSE");
    uct_gaudi_global_config_reset();
}

TEST_F(ownership, synapse_fd_reused)
{
    GAUDI_UNIT_CHILD();
    uct_gaudi_ctx_t *ctx;
    int fd;

    fd = open("/dev/accel/accel1", O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    gaudi_unit::fake_synapse_fd = fd;
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_GT(gaudi_unit::fake_synapse_calls, 0);
    EXPECT_EQ(fd, ctx->hl.fd);
    EXPECT_EQ(1, ctx->info->minor);
    EXPECT_STREQ("SynapseAI", ctx->source);
    uct_gaudi_ctx_put(ctx);
    EXPECT_NE(-1, fcntl(fd, F_GETFD));
    gaudi_unit::fake_synapse_fd = -1;
    close(fd);
}

/*
 * synDeviceInfo layouts differ between SynapseAI releases (facts 9.7): the
 * fd is found at 40 (older headers, uint16_t tpcEnabledMask) as at 48,
 * and only if it is an open compute node of a discovered device
 */
TEST_F(ownership, synapse_fd_older_layout)
{
    GAUDI_UNIT_CHILD();
    uct_gaudi_ctx_t *ctx;
    int fd;

    fd = open("/dev/accel/accel1", O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    gaudi_unit::fake_synapse_fd     = fd;
    gaudi_unit::fake_synapse_offset = 40;
    gaudi_unit::fake_synapse_other  = 0;   /* stdin: not a Gaudi node */
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_EQ(fd, ctx->hl.fd);
    EXPECT_EQ(1, ctx->info->minor);
    EXPECT_STREQ("SynapseAI", ctx->source);
    uct_gaudi_ctx_put(ctx);
    close(fd);
}

TEST_F(ownership, synapse_fd_not_a_gaudi_node)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_SYNAPSE", "yes"}});
    uct_gaudi_ctx_t *ctx;
    log_capture log;
    int fd, cfd;

    /* a wrong layout would read some other fd: never used */
    fd  = open("/dev/null", O_RDWR | O_CLOEXEC);
    cfd = open("/dev/accel/accel_controlD1", O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_GE(cfd, 0);
    gaudi_unit::fake_synapse_fd    = fd;
    gaudi_unit::fake_synapse_other = cfd;
    EXPECT_EQ(UCS_ERR_NO_DEVICE, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_NE("", log.find({"synDeviceInfo", "unknown layout"}))
            << log.dump();
    close(fd);
    close(cfd);
}

TEST_F(ownership, synapse_no_and_yes)
{
    GAUDI_UNIT_CHILD({{"UCX_GAUDI_SYNAPSE", "no"}});
    uct_gaudi_ctx_t *ctx;
    int fd;

    fd = open("/dev/accel/accel1", O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    gaudi_unit::fake_synapse_fd = fd;
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx)); /* opens its own */
    EXPECT_EQ(0, gaudi_unit::fake_synapse_calls);
    EXPECT_EQ(0, ctx->info->minor);
    uct_gaudi_ctx_put(ctx);
    close(fd);

    /* yes, but Synapse holds no device: a clear error */
    gaudi_unit::fake_synapse_fd = -1;
    setenv("UCX_GAUDI_SYNAPSE", "yes", 1);
    uct_gaudi_global_config_reset();
    log_capture log;
    EXPECT_EQ(UCS_ERR_NO_DEVICE, uct_gaudi_ctx_get(-1, &ctx));
    EXPECT_NE("", log.find({"UCX_GAUDI_SYNAPSE=yes"})) << log.dump();
}

TEST_F(ownership, forked_child_does_not_reuse_parent_context)
{
    GAUDI_UNIT_CHILD();
    uct_gaudi_ctx_t *ctx;
    int status;
    pid_t pid;

    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(-1, &ctx));
    ASSERT_EQ(0, ctx->info->minor);
    pid = fork();
    if (pid == 0) {
        uct_gaudi_ctx_t *child_ctx;
        /* the parent owns accel0: the child selects the next free one */
        int ok = (uct_gaudi_ctx_get(-1, &child_ctx) == UCS_OK) &&
                 (child_ctx != ctx) && (child_ctx->info->minor == 1);
        _exit(ok ? 0 : 1);
    }
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0)) << status;
    uct_gaudi_ctx_put(ctx);
}

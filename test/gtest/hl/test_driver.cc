/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Driver identity: DRM_IOCTL_VERSION through libdrm on accel nodes, per
 * emulated flavour; none on legacy and control nodes; the classification
 * and its use next to the op 99 probe.
 */

#include "common/gaudi_unit.h"

#include <errno.h>
#include <string.h>
#include <sys/utsname.h>

using gaudi_unit::log_capture;

namespace {

typedef gaudi_test driver;

/* DIAG-level messages (the child runs with UCX_LOG_LEVEL=diag) */
std::vector<std::string> diag_lines;

ucs_log_func_rc_t
diag_handler(const char *file, unsigned line, const char *function,
             ucs_log_level_t level, const ucs_log_component_config_t *comp,
             const char *message, va_list ap)
{
    char buf[512];
    va_list aq;

    if (level == UCS_LOG_LEVEL_DIAG) {
        va_copy(aq, ap);
        vsnprintf(buf, sizeof(buf), message, aq);
        va_end(aq);
        diag_lines.push_back(buf);
    }
    return UCS_LOG_FUNC_RC_CONTINUE;
}

std::string diag_find(const std::string &word)
{
    for (const std::string &l : diag_lines) {
        if (l.find(word) != std::string::npos) {
            return l;
        }
    }
    return "";
}

uct_gaudi_hl_drm_version_t make_version(const char *name, int major,
                                        int minor)
{
    uct_gaudi_hl_drm_version_t v;

    memset(&v, 0, sizeof(v));
    snprintf(v.name, sizeof(v.name), "%s", name);
    v.major = major;
    v.minor = minor;
    return v;
}

int kernel_version(int *major, int *minor)
{
    struct utsname uts;

    return (uname(&uts) == 0) &&
           (sscanf(uts.release, "%d.%d", major, minor) == 2);
}

} // namespace


TEST(driver_classify, by_name_and_version)
{
    uct_gaudi_hl_drm_version_t v;

    v = make_version("habanalabs", 6, 1);
    EXPECT_EQ(UCT_GAUDI_DRIVER_UPSTREAM,
              uct_gaudi_driver_classify(&v, "6.1.0-28-amd64"));
    /* the kernel's sublevel and suffix do not matter, major.minor do */
    v = make_version("habanalabs", 6, 12);
    EXPECT_EQ(UCT_GAUDI_DRIVER_UPSTREAM,
              uct_gaudi_driver_classify(&v, "6.12.57+deb13-amd64"));
    EXPECT_EQ(UCT_GAUDI_DRIVER_HABANA,
              uct_gaudi_driver_classify(&v, "6.1.0-28-amd64"));
    v = make_version("habanalabs", 1, 24);
    EXPECT_EQ(UCT_GAUDI_DRIVER_HABANA,
              uct_gaudi_driver_classify(&v, "6.8.0-45-generic"));
    EXPECT_EQ(UCT_GAUDI_DRIVER_HABANA, uct_gaudi_driver_classify(&v, ""));
    v = make_version("i915", 6, 8);
    EXPECT_EQ(UCT_GAUDI_DRIVER_OTHER,
              uct_gaudi_driver_classify(&v, "6.8.0-45-generic"));
}

TEST(driver_classify, expectations_of_op99)
{
    uct_gaudi_driver_t d;

    memset(&d, 0, sizeof(d));
    d.kind = UCT_GAUDI_DRIVER_HABANA;
    EXPECT_EQ(1, uct_gaudi_driver_expects_reg_dmabuf(&d));
    d.kind = UCT_GAUDI_DRIVER_UPSTREAM;
    EXPECT_EQ(0, uct_gaudi_driver_expects_reg_dmabuf(&d));
    d.kind = UCT_GAUDI_DRIVER_HABANA_NO_DRM;
    EXPECT_EQ(1, uct_gaudi_driver_expects_reg_dmabuf(&d));
    d.kind = UCT_GAUDI_DRIVER_NO_DRM;
    EXPECT_EQ(-1, uct_gaudi_driver_expects_reg_dmabuf(&d));
    d.kind = UCT_GAUDI_DRIVER_OTHER;
    EXPECT_EQ(-1, uct_gaudi_driver_expects_reg_dmabuf(&d));
}

TEST_F(driver, version_habana_flavour)
{
    GAUDI_UNIT_CHILD({{"HLSIM_FLAVOUR", "habana"}});
    uct_gaudi_hl_drm_version_t v;
    uct_gaudi_ctx_t *ctx;
    uct_gaudi_hl_t h;
    int supported = -1;

    ASSERT_EQ(UCS_OK, uct_gaudi_hl_open(0, 0, 0, &h));
    ASSERT_EQ(UCS_OK, uct_gaudi_hl_drm_version(&h, &v));
    EXPECT_STREQ("habanalabs", v.name);
    EXPECT_EQ(1, v.major);
    EXPECT_EQ(24, v.minor);
    EXPECT_EQ(1, v.patchlevel);
    EXPECT_STREQ("20260305", v.date);
    EXPECT_STREQ("Driver for HabanaLabs's AI Accelerators", v.desc);
    uct_gaudi_hl_close(&h);

    /* the device context records it */
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(0, &ctx));
    EXPECT_EQ(UCT_GAUDI_DRIVER_HABANA, ctx->driver.kind);
    EXPECT_EQ(24, ctx->driver.version.minor);
    EXPECT_EQ(1, uct_gaudi_driver_expects_reg_dmabuf(&ctx->driver));
    /* and agrees with the probe of the emulated Habana driver */
    ASSERT_EQ(UCS_OK, uct_gaudi_hl_probe_reg_dmabuf(&ctx->hl, &supported));
    EXPECT_EQ(1, supported);
    uct_gaudi_ctx_put(ctx);
}

TEST_F(driver, version_upstream_flavour)
{
    GAUDI_UNIT_CHILD({{"HLSIM_FLAVOUR", "upstream"}});
    uct_gaudi_ctx_t *ctx;
    char str[UCT_GAUDI_DRIVER_STR_MAX];
    int major, minor, supported = -1;

    ASSERT_TRUE(kernel_version(&major, &minor));
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(0, &ctx));
    EXPECT_EQ(UCT_GAUDI_DRIVER_UPSTREAM, ctx->driver.kind);
    EXPECT_STREQ("habanalabs", ctx->driver.version.name);
    EXPECT_EQ(major, ctx->driver.version.major);
    EXPECT_EQ(minor, ctx->driver.version.minor);
    EXPECT_STREQ("20190505", ctx->driver.version.date);
    EXPECT_NE(nullptr, strstr(uct_gaudi_driver_str(&ctx->driver, str,
                                                   sizeof(str)),
                              "in-kernel"))
            << str;

    /* the identity agrees with the probe of the emulated upstream driver */
    ASSERT_EQ(UCS_OK, uct_gaudi_hl_probe_reg_dmabuf(&ctx->hl, &supported));
    EXPECT_EQ(uct_gaudi_driver_expects_reg_dmabuf(&ctx->driver), supported);
    uct_gaudi_ctx_put(ctx);
}

TEST_F(driver, no_version_on_legacy_and_control_nodes)
{
    GAUDI_UNIT_CHILD({{"HLSIM_NODES", "legacy"}});
    uct_gaudi_hl_drm_version_t v;
    uct_gaudi_ctx_t *ctx;
    uct_gaudi_hl_t h;
    log_capture log;

    /* the misc-era driver has no DRM: ENOTTY, quietly */
    ASSERT_EQ(UCS_OK, uct_gaudi_hl_open(0, 0, 0, &h));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_gaudi_hl_drm_version(&h, &v));
    EXPECT_EQ(ENOTTY, errno);
    uct_gaudi_hl_close(&h);
    ASSERT_EQ(UCS_OK, uct_gaudi_hl_open(0, 1, 0, &h));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_gaudi_hl_drm_version(&h, &v));
    uct_gaudi_hl_close(&h);

    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(0, &ctx));
    EXPECT_EQ(UCT_GAUDI_DRIVER_NO_DRM, ctx->driver.kind);
    EXPECT_EQ(-1, uct_gaudi_driver_expects_reg_dmabuf(&ctx->driver));
    uct_gaudi_ctx_put(ctx);
    EXPECT_EQ(0u, log.count(UCS_LOG_LEVEL_WARN)) << log.dump();
}

/* Habana's build without DRM accel: DRM ioctl codes, no DRM core */
TEST_F(driver, habana_without_drm_accel)
{
    GAUDI_UNIT_CHILD({{"HLSIM_FLAVOUR", "habana"}, {"HLSIM_DRM", "0"}});
    uct_gaudi_hl_drm_version_t v;
    uct_gaudi_ctx_t *ctx;
    uct_gaudi_hl_t h;
    log_capture log;
    int supported = -1;

    ASSERT_EQ(UCS_OK, uct_gaudi_hl_open(0, 0, 0, &h));
    EXPECT_EQ(GAUDI_HL_ABI_ACCEL, h.abi);
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_gaudi_hl_drm_version(&h, &v));
    EXPECT_EQ(ENOTTY, errno);
    uct_gaudi_hl_close(&h);

    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(0, &ctx));
    EXPECT_EQ(UCT_GAUDI_DRIVER_HABANA_NO_DRM, ctx->driver.kind);
    EXPECT_STREQ("", ctx->driver.version.name);
    EXPECT_EQ(1, uct_gaudi_driver_expects_reg_dmabuf(&ctx->driver));
    ASSERT_EQ(UCS_OK, uct_gaudi_hl_probe_reg_dmabuf(&ctx->hl, &supported));
    EXPECT_EQ(1, supported);
    uct_gaudi_ctx_put(ctx);
    EXPECT_EQ(0u, log.count(UCS_LOG_LEVEL_WARN)) << log.dump();
}

TEST_F(driver, no_version_on_accel_control_node)
{
    GAUDI_UNIT_CHILD();
    uct_gaudi_hl_drm_version_t v;
    uct_gaudi_hl_t h;
    log_capture log;

    ASSERT_EQ(UCS_OK, uct_gaudi_hl_open(0, 1, 0, &h));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_gaudi_hl_drm_version(&h, &v));
    EXPECT_EQ(ENOTTY, errno);
    uct_gaudi_hl_close(&h);
    EXPECT_EQ(0u, log.count(UCS_LOG_LEVEL_WARN)) << log.dump();
}

TEST_F(driver, probe_disagreement_is_explained)
{
    GAUDI_UNIT_CHILD({{"UCX_LOG_LEVEL", "diag"}});
    uct_gaudi_driver_t d;

    memset(&d, 0, sizeof(d));
    d.kind    = UCT_GAUDI_DRIVER_HABANA;
    d.version = make_version("habanalabs", 1, 24);
    ucs_log_push_handler(diag_handler);

    /* as expected: no diag line */
    uct_gaudi_driver_log_probe(&d, "GAUDI_0", "DMA-BUF import (op 99)", 1, 1);
    EXPECT_EQ("", diag_find("DMA-BUF import"));
    /* a Habana driver without op 99: said, the probe wins */
    uct_gaudi_driver_log_probe(&d, "GAUDI_0", "DMA-BUF import (op 99)", 1, 0);
    std::string l = diag_find("DMA-BUF import");
    EXPECT_NE(std::string::npos, l.find("is not available")) << l;
    EXPECT_NE(std::string::npos, l.find("habanalabs 1.24.0")) << l;
    EXPECT_NE(std::string::npos, l.find("going by the probe")) << l;
    ucs_log_pop_handler();
}

TEST_F(driver, context_open_logs_identity_at_diag)
{
    GAUDI_UNIT_CHILD({{"HLSIM_FLAVOUR", "habana"}, {"UCX_LOG_LEVEL", "diag"}});
    uct_gaudi_ctx_t *ctx;

    ucs_log_push_handler(diag_handler);
    ASSERT_EQ(UCS_OK, uct_gaudi_ctx_get(0, &ctx));
    uct_gaudi_ctx_put(ctx);
    ucs_log_pop_handler();
    std::string l = diag_find("driver habanalabs");
    EXPECT_NE(std::string::npos, l.find("1.24.1 (20260305)")) << l;
    EXPECT_NE(std::string::npos, l.find("out-of-tree")) << l;
    EXPECT_NE(std::string::npos, l.find("AI Accelerators")) << l;
}

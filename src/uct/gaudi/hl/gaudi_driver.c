/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Driver identity from DRM_IOCTL_VERSION (see gaudi_driver.h).
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/hl/gaudi_driver.h>

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>

#include <sys/utsname.h>
#include <stdio.h>
#include <string.h>


/*
 * The in-kernel driver reports the kernel's version as its own (Linux
 * drivers/accel/habanalabs/common/habanalabs_drv.c, docs/base.md); Habana's
 * driver has its own numbering (1.x). Same major.minor as the running
 * kernel means in-kernel.
 */
uct_gaudi_driver_kind_t
uct_gaudi_driver_classify(const uct_gaudi_hl_drm_version_t *version,
                          const char *kernel_release)
{
    int major, minor;

    if (strcmp(version->name, "habanalabs") != 0) {
        return UCT_GAUDI_DRIVER_OTHER;
    }

    if ((sscanf(kernel_release, "%d.%d", &major, &minor) == 2) &&
        (version->major == major) && (version->minor == minor)) {
        return UCT_GAUDI_DRIVER_UPSTREAM;
    }

    return UCT_GAUDI_DRIVER_HABANA;
}

void uct_gaudi_driver_identify(const uct_gaudi_hl_t *hl,
                               uct_gaudi_driver_t *driver)
{
    struct utsname uts;
    char str[UCT_GAUDI_DRIVER_STR_MAX];

    memset(driver, 0, sizeof(*driver));
    if (uct_gaudi_hl_drm_version(hl, &driver->version) != UCS_OK) {
        memset(&driver->version, 0, sizeof(driver->version));
        /* the DRM ioctl codes work without the DRM core only in Habana's
         * build without DRM accel (facts 1.5) */
        driver->kind = (hl->abi == GAUDI_HL_ABI_ACCEL) ?
                       UCT_GAUDI_DRIVER_HABANA_NO_DRM :
                       UCT_GAUDI_DRIVER_NO_DRM;
    } else {
        if (uname(&uts) != 0) {
            uts.release[0] = '\0';
        }
        driver->kind = uct_gaudi_driver_classify(&driver->version,
                                                 uts.release);
    }

    /* UCX_LOG_LEVEL=diag shows it, e.g. in ucx_info -d */
    ucs_diag("gaudi %s: driver %s%s%s%s", hl->name,
             uct_gaudi_driver_str(driver, str, sizeof(str)),
             (driver->version.desc[0] != '\0') ? ": \"" : "",
             driver->version.desc,
             (driver->version.desc[0] != '\0') ? "\"" : "");
}

const char *uct_gaudi_driver_str(const uct_gaudi_driver_t *driver, char *buf,
                                 size_t max)
{
    static const char *what[] = {
        [UCT_GAUDI_DRIVER_UPSTREAM] = "the in-kernel accel driver",
        [UCT_GAUDI_DRIVER_HABANA]   = "Habana's out-of-tree driver",
        [UCT_GAUDI_DRIVER_OTHER]    = "not the habanalabs driver"
    };
    const uct_gaudi_hl_drm_version_t *v = &driver->version;

    if (driver->kind == UCT_GAUDI_DRIVER_NO_DRM) {
        snprintf(buf, max, "without DRM identity, legacy ioctl codes (the "
                 "misc-era driver of Linux <= 6.2, or an old Habana "
                 "release)");
    } else if (driver->kind == UCT_GAUDI_DRIVER_HABANA_NO_DRM) {
        snprintf(buf, max, "without DRM identity, DRM ioctl codes (Habana's "
                 "out-of-tree driver built without DRM accel)");
    } else {
        snprintf(buf, max, "%s %d.%d.%d%s%s%s, %s", v->name, v->major,
                 v->minor, v->patchlevel, (v->date[0] != '\0') ? " (" : "",
                 v->date, (v->date[0] != '\0') ? ")" : "",
                 what[driver->kind]);
    }
    return buf;
}

int uct_gaudi_driver_expects_reg_dmabuf(const uct_gaudi_driver_t *driver)
{
    switch (driver->kind) {
    case UCT_GAUDI_DRIVER_HABANA:
    case UCT_GAUDI_DRIVER_HABANA_NO_DRM:
        return 1;
    case UCT_GAUDI_DRIVER_UPSTREAM:
        return 0;
    default:
        return -1;
    }
}

int uct_gaudi_driver_out_of_tree(void)
{
    char taint[32];
    ssize_t len;

    len = ucs_read_file_str(taint, sizeof(taint), 1, "%s",
                            GAUDI_HL_SYSFS_MODULE_TAINT);
    if (len < 0) {
        return -1;   /* built in, or not loaded under that name */
    }

    return strchr(taint, 'O') != NULL;
}

void uct_gaudi_driver_log_probe(const uct_gaudi_driver_t *driver,
                                const char *dev_name, const char *feature,
                                int expected, int probed)
{
    char str[UCT_GAUDI_DRIVER_STR_MAX];

    uct_gaudi_driver_str(driver, str, sizeof(str));
    if ((expected >= 0) && (!expected != !probed)) {
        ucs_diag("gaudi %s: %s is %savailable, unlike what driver %s "
                 "usually has; going by the probe", dev_name, feature,
                 probed ? "" : "not ", str);
    } else {
        ucs_debug("gaudi %s: %s is %savailable (driver %s)", dev_name,
                  feature, probed ? "" : "not ", str);
    }
}

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Which habanalabs driver runs the device: the in-kernel (upstream) accel
 * driver or Habana's out-of-tree one, from its DRM identity. It explains
 * the flavour probes in logs; where a probe exists, the probe decides.
 * Design notes: docs/base.md.
 */

#ifndef UCT_GAUDI_DRIVER_H_
#define UCT_GAUDI_DRIVER_H_

#include <uct/gaudi/hl/gaudi_hl.h>

BEGIN_C_DECLS

#define UCT_GAUDI_DRIVER_STR_MAX 160


typedef enum {
    UCT_GAUDI_DRIVER_NO_DRM,        /* legacy codes, no DRM: misc-era */
    UCT_GAUDI_DRIVER_UPSTREAM,      /* in-kernel: the running kernel's version */
    UCT_GAUDI_DRIVER_HABANA,        /* habanalabs, own version: out-of-tree */
    UCT_GAUDI_DRIVER_HABANA_NO_DRM, /* accel codes, no DRM core: Habana's
                                       build without DRM accel */
    UCT_GAUDI_DRIVER_OTHER          /* answers, but is not "habanalabs" */
} uct_gaudi_driver_kind_t;


typedef struct uct_gaudi_driver {
    uct_gaudi_driver_kind_t    kind;
    uct_gaudi_hl_drm_version_t version; /* zero unless DRM answered */
} uct_gaudi_driver_t;


/* Ask the compute node @a hl who drives it; never fails */
void uct_gaudi_driver_identify(const uct_gaudi_hl_t *hl,
                               uct_gaudi_driver_t *driver);

/* Classify a DRM identity, given the running kernel's release ("6.1.0-..") */
uct_gaudi_driver_kind_t
uct_gaudi_driver_classify(const uct_gaudi_hl_drm_version_t *version,
                          const char *kernel_release);

/* "habanalabs 1.24.1 (20260305), Habana's out-of-tree driver" */
const char *uct_gaudi_driver_str(const uct_gaudi_driver_t *driver, char *buf,
                                 size_t max);

/* Op 99 (HL_MEM_OP_REG_DMABUF_FD) expected of this driver: 1 Habana's,
 * 0 in-kernel (facts 4.3), -1 unknown */
int uct_gaudi_driver_expects_reg_dmabuf(const uct_gaudi_driver_t *driver);

/* Whether the loaded habanalabs module was built outside the kernel tree
 * (Habana's driver: 1) or in it (0), from sysfs alone, so known before any
 * compute node is opened; -1 when sysfs does not say (no such module) */
int uct_gaudi_driver_out_of_tree(void);

/* Log a probed flavour @a feature against what the identity @a expected
 * (-1: no opinion); the probe decides, a disagreement is a diag line */
void uct_gaudi_driver_log_probe(const uct_gaudi_driver_t *driver,
                                const char *dev_name, const char *feature,
                                int expected, int probed);

END_C_DECLS

#endif

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifndef UCT_GAUDI_COPY_MD_H_
#define UCT_GAUDI_COPY_MD_H_

#include <uct/base/uct_md.h>
#include <uct/gaudi/base/gaudi_base.h>

#define UCT_GAUDI_COPY_COMPONENT_NAME "gaudi_copy"
#define UCT_GAUDI_COPY_TL_NAME        "gaudi_cpy"


extern uct_component_t uct_gaudi_copy_component;


typedef struct uct_gaudi_copy_md_config {
    uct_md_config_t super;
} uct_gaudi_copy_md_config_t;


typedef struct uct_gaudi_copy_md {
    uct_md_t        super;
    uct_gaudi_ctx_t *ctx;   /* the process's device */
} uct_gaudi_copy_md_t;

#endif

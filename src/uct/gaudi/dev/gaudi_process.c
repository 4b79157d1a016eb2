/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dev/gaudi_process.h>

#include <ucs/sys/compiler_def.h>
#include <unistd.h>


uct_gaudi_process_t uct_gaudi_process = {
    .config    = {.lock = PTHREAD_MUTEX_INITIALIZER},
    .discovery = {.lock = PTHREAD_MUTEX_INITIALIZER},
    .ctx       = {.lock = PTHREAD_MUTEX_INITIALIZER,
                  .cond = PTHREAD_COND_INITIALIZER},
    .expected  = {.lock = PTHREAD_MUTEX_INITIALIZER},
    .backend   = {.lock = PTHREAD_MUTEX_INITIALIZER, .value = -1}
};


int uct_gaudi_process_owns(pid_t pid)
{
    return ucs_likely(pid == getpid());
}

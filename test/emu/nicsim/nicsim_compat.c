/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The module's UCX-version adapters (compat/gaudi_compat.c and
 * base/gaudi_uct_compat.c), compiled into
 * the emulated NIC too: the NIC is a UCT component of its own, built
 * against the same UCX releases, and never part of the module.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/compat/gaudi_compat.c>
#include <uct/gaudi/base/gaudi_uct_compat.c>

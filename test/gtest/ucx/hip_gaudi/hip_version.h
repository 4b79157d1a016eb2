/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The HIP version UCX's mem_buffer (1.16+) tests: none of the HIP 5.5 API
 * changes apply to the Gaudi shim (hip_runtime.h keeps the older field
 * names), so it reports a version before them.
 */

#ifndef HIP_GAUDI_VERSION_H_
#define HIP_GAUDI_VERSION_H_

#define HIP_VERSION 0

#endif

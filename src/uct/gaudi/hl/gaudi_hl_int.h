/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Internals of the ioctl shim shared by its files (hl/gaudi_hl*.c).
 */

#ifndef UCT_GAUDI_HL_INT_H_
#define UCT_GAUDI_HL_INT_H_

#include <uct/gaudi/hl/gaudi_hl.h>

BEGIN_C_DECLS

/*
 * Log a failed driver call and return its status. errno is set to @a err
 * on return, so callers may still look at it after the logging.
 */
ucs_status_t UCS_F_PRINTF(4, 5)
uct_gaudi_hl_fail(const char *name, int err, int quiet, const char *fmt, ...);

/* ioctl @a op on @a hl's fd (checked if borrowed), EINTR retried; returns
 * 0 or the errno */
int uct_gaudi_hl_ioctl(const uct_gaudi_hl_t *hl, gaudi_hl_op_t op,
                       void *arg);

END_C_DECLS

#endif

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Fault injection: HLSIM_FAULTS="op:nth:ERRNO,..." and hlsim_fault_add().
 * Counting is per process; a rule fires once, on the nth call of its op.
 */

#include "hlsim_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *hlsim_fault_ops[] = {
    "open", "info", "cb", "cs", "wait_cs", "mem_alloc", "mem_free",
    "mem_map", "mem_unmap", "mem_export", "mem_reg_dmabuf", "dma_error",
    "cs_timeout", "reset", "pdma", "dmabuf_attach", NULL
};

#define HLSIM_NOPS    16
#define HLSIM_NFAULTS 64

typedef struct {
    int      op;
    uint64_t at;     /* value of the op counter that fails */
    int      err;
} hlsim_fault_t;

static pthread_mutex_t hlsim_fault_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t        hlsim_fault_calls[HLSIM_NOPS];
static hlsim_fault_t   hlsim_faults[HLSIM_NFAULTS];
static int             hlsim_nfaults;

static const struct {
    const char *name;
    int         err;
} hlsim_errnos[] = {
    { "ENOMEM", ENOMEM }, { "EBUSY", EBUSY }, { "EIO", EIO },
    { "EAGAIN", EAGAIN }, { "EINVAL", EINVAL }, { "ETIMEDOUT", ETIMEDOUT },
    { "EFAULT", EFAULT }, { "ENODEV", ENODEV }, { "EPERM", EPERM },
    { "ENOTTY", ENOTTY }, { "EINTR", EINTR }, { "ENXIO", ENXIO },
    { "ENOSPC", ENOSPC }, { "EOPNOTSUPP", EOPNOTSUPP }, { "EBADF", EBADF },
    { "EMFILE", EMFILE }, { "ENOENT", ENOENT }, { "EACCES", EACCES },
    { NULL, 0 }
};

int hlsim_errno_parse(const char *s)
{
    char *end;
    long  v;
    int   i;

    for (i = 0; hlsim_errnos[i].name != NULL; i++) {
        if (!strcmp(s, hlsim_errnos[i].name)) {
            return hlsim_errnos[i].err;
        }
    }
    v = strtol(s, &end, 0);
    return ((*end == '\0') && (end != s) && (v > 0) && (v < 4096)) ? v : -1;
}

static int hlsim_op_index(const char *op)
{
    int i;

    for (i = 0; hlsim_fault_ops[i] != NULL; i++) {
        if (!strcmp(op, hlsim_fault_ops[i])) {
            return i;
        }
    }
    return -1;
}

static int hlsim_fault_add_locked(int op, unsigned nth, int err, int rel)
{
    if ((op < 0) || (nth == 0) || (err <= 0)) {
        return -EINVAL;
    }
    if (hlsim_nfaults == HLSIM_NFAULTS) {
        return -ENOSPC;
    }
    hlsim_faults[hlsim_nfaults].op  = op;
    hlsim_faults[hlsim_nfaults].at  = (rel ? hlsim_fault_calls[op] : 0) + nth;
    hlsim_faults[hlsim_nfaults].err = err;
    hlsim_nfaults++;
    return 0;
}

void hlsim_fault_env(const char *spec)
{
    char *copy = strdup(spec), *tok, *save = NULL;
    char  op[32], err[32];
    unsigned nth;

    if (copy == NULL) {
        return;
    }
    pthread_mutex_lock(&hlsim_fault_lock);
    for (tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if ((sscanf(tok, "%31[^:]:%u:%31s", op, &nth, err) != 3) ||
            hlsim_fault_add_locked(hlsim_op_index(op), nth,
                                   hlsim_errno_parse(err), 0)) {
            hlsim_log("ignoring bad HLSIM_FAULTS entry '%s'", tok);
        }
    }
    pthread_mutex_unlock(&hlsim_fault_lock);
    free(copy);
}

int hlsim_fault_hit(const char *opname)
{
    int op = hlsim_op_index(opname), i, err = 0;

    if (op < 0) {
        return 0;
    }
    pthread_mutex_lock(&hlsim_fault_lock);
    hlsim_fault_calls[op]++;
    for (i = 0; i < hlsim_nfaults; i++) {
        if ((hlsim_faults[i].op == op) &&
            (hlsim_faults[i].at == hlsim_fault_calls[op])) {
            err = hlsim_faults[i].err;
            hlsim_faults[i] = hlsim_faults[--hlsim_nfaults];
            break;
        }
    }
    pthread_mutex_unlock(&hlsim_fault_lock);
    if (err && hlsim_cfg.verbose) {
        hlsim_log("injected fault: %s -> %s", opname, strerror(err));
    }
    return err;
}

int hlsim_fault_add(const char *op, unsigned nth, int err)
{
    int rc;

    if ((rc = hlsim_init())) {
        return rc;
    }
    if (op == NULL) {
        return -EINVAL;
    }
    pthread_mutex_lock(&hlsim_fault_lock);
    rc = hlsim_fault_add_locked(hlsim_op_index(op), nth, err, 1);
    pthread_mutex_unlock(&hlsim_fault_lock);
    return rc;
}

int hlsim_fault_clear(void)
{
    pthread_mutex_lock(&hlsim_fault_lock);
    hlsim_nfaults = 0;
    pthread_mutex_unlock(&hlsim_fault_lock);
    return 0;
}

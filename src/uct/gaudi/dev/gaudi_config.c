/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * UCX_GAUDI_* process-wide configuration: device selection and ownership.
 * Registered with UCX's global config list so `ucx_info -c` shows it.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dev/gaudi_process.h>
#include <uct/gaudi/hl/gaudi_hl.h>

#include <ucs/config/parser.h>
#include <uct/gaudi/compat/gaudi_compat.h>
#include <ucs/debug/assert.h>
#include <ucs/sys/preprocessor.h>
#include <ucs/debug/log.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


const char *uct_gaudi_backend_names[] = {
    [UCT_GAUDI_BACKEND_AUTO]    = "auto",
    [UCT_GAUDI_BACKEND_KERNEL]  = "kernel",
    [UCT_GAUDI_BACKEND_SYNAPSE] = "synapse",
    [UCT_GAUDI_BACKEND_LAST]    = NULL
};

const char *uct_gaudi_device_mem_names[] = {
    [UCT_GAUDI_DEVICE_MEM_AUTO]    = "auto",
    [UCT_GAUDI_DEVICE_MEM_DRIVER]  = "driver",
    [UCT_GAUDI_DEVICE_MEM_SYNAPSE] = "synapse",
    [UCT_GAUDI_DEVICE_MEM_LAST]    = NULL
};

static ucs_config_field_t uct_gaudi_global_config_table[] = {
    {"DEVICE", "auto",
     "Gaudi device this process uses:\n"
     " auto       - the launcher's local rank modulo the number of devices,\n"
     "              or, without a local rank, the first device that is free\n"
     " <n>        - the device with logical index n (see GAUDI_MAPPING_TABLE)\n"
     " module:<m> - the device whose module id (OAM slot) is m",
     ucs_offsetof(uct_gaudi_global_config_t, device),
     UCS_CONFIG_TYPE_STRING},

    {"DEVICE_FD", "-1",
     "An already open Gaudi compute node fd to use instead of opening the\n"
     "device (-1: none). Its device is the selected device; the fd is not\n"
     "closed by UCX.",
     ucs_offsetof(uct_gaudi_global_config_t, device_fd),
     UCS_CONFIG_TYPE_INT},

    {"SYNAPSE", "try",
     "Reuse the device fd of SynapseAI (synDeviceGetInfo) when libSynapse is\n"
     "already loaded in the process: yes, no or try.",
     ucs_offsetof(uct_gaudi_global_config_t, synapse),
     UCS_CONFIG_TYPE_TERNARY},

    {"COPY_BACKEND", "auto",
     "Engine that copies for the device (gaudi_cpy, gaudi_ipc, public API):\n"
     " auto    - SynapseAI if the process has already loaded it, or if the\n"
     "           ASIC has no kernel command-submission queue (Gaudi3);\n"
     "           else kernel\n"
     " kernel  - command buffers submitted through the driver (Gaudi1/2)\n"
     " synapse - synMemCopyAsync on streams of SynapseAI (every Gaudi);\n"
     "           SynapseAI then owns the device and the module borrows it.\n"
     "The choice is made once per device and process.",
     ucs_offsetof(uct_gaudi_global_config_t, copy_backend),
     UCS_CONFIG_TYPE_ENUM(uct_gaudi_backend_names)},

    {"SYNAPSE_LIB", "libSynapse.so",
     "SynapseAI library loaded (dlopen) for the synapse copy backend: a name\n"
     "looked up like any library, or a path.",
     ucs_offsetof(uct_gaudi_global_config_t, synapse_lib),
     UCS_CONFIG_TYPE_STRING},

    {"DEVICE_MEM", "auto",
     "Where device memory allocated through UCX comes from:\n"
     " auto    - SynapseAI's allocator (synDeviceMalloc) on the synapse\n"
     "           copy backend (SynapseAI holds the DRAM), else the driver\n"
     " driver  - the driver's ALLOC + MAP on the device fd only; on\n"
     "           SynapseAI's fd of a Gaudi2/3 it finds no free DRAM\n"
     " synapse - SynapseAI's allocator only (synapse copy backend); its\n"
     "           memory exports through SynapseAI's pool mapping.",
     ucs_offsetof(uct_gaudi_global_config_t, device_mem),
     UCS_CONFIG_TYPE_ENUM(uct_gaudi_device_mem_names)},

    {"SYN_HEAP_CHUNK", "2m",
     "Size of the chunks UCX takes from SynapseAI's device memory pool\n"
     "(synDeviceMalloc) for its small device allocations: they share these\n"
     "chunks; an allocation of half a chunk or more takes its own piece of\n"
     "its size. Rounded up to the host page. Bounds what one small UCX\n"
     "allocation takes from a framework's HBM (docs/md.md).",
     ucs_offsetof(uct_gaudi_global_config_t, syn_heap_chunk),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"ALLOC_ACQUIRE", "try",
     "Whether a device memory allocation through UCX may open (acquire) the\n"
     "device when the application holds none yet:\n"
     " try - yes, unless the application loaded SynapseAI itself (PyTorch,\n"
     "       vLLM: they acquire the device at their own init, and SynapseAI\n"
     "       allows one device per process): then it is refused with the\n"
     "       reason, so that the framework's acquire does not fail\n"
     " yes - always (the framework must then borrow UCX's device)\n"
     " no  - never: only a device the application holds is used.",
     ucs_offsetof(uct_gaudi_global_config_t, alloc_acquire),
     UCS_CONFIG_TYPE_TERNARY},

    {"OPEN_TIMEOUT", "5s",
     "How long to keep retrying, with back-off, to open a device that is\n"
     "being reset or released by its previous user (EAGAIN). A thread that\n"
     "needs a device another thread is opening waits this long and 1 s more.",
     ucs_offsetof(uct_gaudi_global_config_t, open_timeout),
     UCS_CONFIG_TYPE_TIME},

    {NULL}
};

UCS_CONFIG_REGISTER_TABLE(uct_gaudi_global_config_table, "Gaudi device",
                          "GAUDI_", uct_gaudi_global_config_t,
                          &ucs_config_global_list)


/* Bytes of the field at @a offset: up to the next field or the end */
static size_t uct_gaudi_config_field_size(size_t offset)
{
    size_t size = sizeof(uct_gaudi_global_config_t) - offset;
    ucs_config_field_t *f;

    for (f = uct_gaudi_global_config_table; f->name != NULL; ++f) {
        if ((f->offset > offset) && (f->offset - offset < size)) {
            size = f->offset - offset;
        }
    }
    return size;
}

static void uct_gaudi_config_var_name(const ucs_config_field_t *field,
                                      char *buf, size_t max)
{
    snprintf(buf, max, UCS_DEFAULT_ENV_PREFIX "GAUDI_%s", field->name);
}

/* Parse @a value of @a field into @a var (cleared first); 1 if valid */
static int uct_gaudi_config_parse(const ucs_config_field_t *field,
                                  const char *value, void *var, size_t size)
{
    memset(var, 0, size);
    return field->parser.read(value, var, field->parser.arg) == 1;
}

/*
 * An UCX_GAUDI_DEVICE_FD that cannot be a device node: NULL if it may be
 * one (attaching checks the rest), else why, in @a buf.
 */
static const char *uct_gaudi_config_check_fd(const char *value, char *buf,
                                             size_t max)
{
    struct stat st;
    char *end;
    long fd;

    errno = 0;
    fd    = strtol(value, &end, 0);
    if ((errno != 0) || (end == value) || (*end != '\0') ||
        (fd > INT_MAX) || (fd < -1)) {
        return "not -1 or an fd number";
    } else if (fd < 0) {
        return NULL;
    } else if (fcntl(fd, F_GETFD) < 0) {
        snprintf(buf, max, "fd %ld is not open: %m", fd);
        return buf;
    } else if (fstat(fd, &st) < 0) {
        snprintf(buf, max, "fstat of fd %ld failed: %m", fd);
        return buf;
    } else if (!S_ISCHR(st.st_mode) ||
               (uct_gaudi_hl_fd_compute_minor((int)fd) < 0)) {
        snprintf(buf, max, "fd %ld is not a Gaudi compute node (accelN or "
                 "hlN of the habanalabs driver)", fd);
        return buf;
    }
    return NULL;
}

/*
 * A value that UCX's parser takes but the module cannot use: NULL if it is
 * fine, else why.
 */
static const char *uct_gaudi_config_check(const ucs_config_field_t *field,
                                          const char *value, char *buf,
                                          size_t max)
{
    const uct_gaudi_global_config_t *c = &uct_gaudi_process.config.values;

    if (field->offset == ucs_offsetof(uct_gaudi_global_config_t,
                                      open_timeout)) {
        return (c->open_timeout < 0) ? "a negative time" : NULL;
    } else if (field->offset == ucs_offsetof(uct_gaudi_global_config_t,
                                             device_fd)) {
        return uct_gaudi_config_check_fd(value, buf, max);
    }
    return NULL;
}

/* Put the default back in @a field, saying what was wrong and what is used */
static void uct_gaudi_config_refuse(ucs_config_field_t *field,
                                    const char *value, const char *why)
{
    char *var = (char*)&uct_gaudi_process.config.values + field->offset;
    char name[64], used[64];

    field->parser.release(var, field->parser.arg);
    uct_gaudi_config_parse(field, field->dfl_value, var,
                           uct_gaudi_config_field_size(field->offset));
    if (field->parser.write(used, sizeof(used), var,
                            field->parser.arg) != 1) {
        snprintf(used, sizeof(used), "%s", field->dfl_value);
    }
    uct_gaudi_config_var_name(field, name, sizeof(name));
    ucs_error("gaudi: %s=%s is invalid (%s); using %s", name, value, why,
              used);
}

/* Whether every UCX_GAUDI_* that is set parses; each bad one is said */
static int uct_gaudi_config_env_valid(void)
{
    char name[64], syntax[128];
    ucs_config_field_t *field;
    const char *value;
    uint64_t tmp[8];
    int valid = 1;

    for (field = uct_gaudi_global_config_table; field->name != NULL;
         ++field) {
        uct_gaudi_config_var_name(field, name, sizeof(name));
        value = getenv(name);
        if (value == NULL) {
            continue;
        }
        ucs_assert_always(uct_gaudi_config_field_size(field->offset) <=
                          sizeof(tmp));
        if (uct_gaudi_config_parse(field, value, tmp, sizeof(tmp))) {
            field->parser.release(tmp, field->parser.arg);
            continue;
        }
        strcpy(syntax, "expected ");
        field->parser.help(syntax + strlen(syntax),
                           sizeof(syntax) - strlen(syntax), field->parser.arg);
        uct_gaudi_config_refuse(field, value, syntax);
        valid = 0;
    }
    return valid;
}

/* Only the UCX_GAUDI_* values that parse, each over its default */
static void uct_gaudi_config_apply_valid(void)
{
    char *opts = (char*)&uct_gaudi_process.config.values;
    ucs_config_field_t *field;
    const char *value;
    uint64_t tmp[8];
    char name[64];
    size_t size;

    for (field = uct_gaudi_global_config_table; field->name != NULL;
         ++field) {
        uct_gaudi_config_var_name(field, name, sizeof(name));
        value = getenv(name);
        size  = uct_gaudi_config_field_size(field->offset);
        if ((value == NULL) ||
            !uct_gaudi_config_parse(field, value, tmp, size)) {
            continue;
        }
        field->parser.release(opts + field->offset, field->parser.arg);
        memcpy(opts + field->offset, tmp, size);
    }
}

/*
 * UCX's fill drops the whole table for one bad value, so each value is
 * checked on its own first; a bad one keeps its default and the others
 * apply. With all values valid UCX's fill runs as usual: it also reads
 * UCX's config file and marks the variables used.
 */
static void uct_gaudi_global_config_load(void)
{
    ucs_config_field_t *field;
    ucs_status_t status;
    const char *value;
    char name[64], buf[160], *why;
    uint64_t tmp[8];

    status = UCT_GAUDI_CONFIG_FILL(&uct_gaudi_process.config.values,
                                   uct_gaudi_global_config_table,
                                   "UCX_GAUDI_DEFAULTS_ONLY_", 1);
    ucs_assert_always(status == UCS_OK);

    if (!uct_gaudi_config_env_valid()) {
        uct_gaudi_config_apply_valid();
    } else {
        ucs_config_parser_release_opts(&uct_gaudi_process.config.values,
                                       uct_gaudi_global_config_table);
        status = UCT_GAUDI_CONFIG_FILL(&uct_gaudi_process.config.values,
                                       uct_gaudi_global_config_table,
                                       UCS_DEFAULT_ENV_PREFIX, 1);
        ucs_assert_always(status == UCS_OK);
    }

    /* values that parse but cannot be used (a bad one was said above) */
    for (field = uct_gaudi_global_config_table; field->name != NULL;
         ++field) {
        uct_gaudi_config_var_name(field, name, sizeof(name));
        value = getenv(name);
        if ((value == NULL) ||
            !uct_gaudi_config_parse(field, value, tmp, sizeof(tmp))) {
            continue;
        }
        field->parser.release(tmp, field->parser.arg);
        why = (char*)uct_gaudi_config_check(field, value, buf, sizeof(buf));
        if (why != NULL) {
            uct_gaudi_config_refuse(field, value, why);
        }
    }
}

const uct_gaudi_global_config_t *uct_gaudi_global_config(void)
{
    pthread_mutex_lock(&uct_gaudi_process.config.lock);
    if (!uct_gaudi_process.config.loaded) {
        uct_gaudi_global_config_load();
        uct_gaudi_process.config.loaded = 1;
    }
    pthread_mutex_unlock(&uct_gaudi_process.config.lock);

    return &uct_gaudi_process.config.values;
}

void uct_gaudi_global_config_reset(void)
{
    pthread_mutex_lock(&uct_gaudi_process.config.lock);
    if (uct_gaudi_process.config.loaded) {
        ucs_config_parser_release_opts(&uct_gaudi_process.config.values,
                                       uct_gaudi_global_config_table);
        uct_gaudi_process.config.loaded = 0;
    }
    pthread_mutex_unlock(&uct_gaudi_process.config.lock);
}

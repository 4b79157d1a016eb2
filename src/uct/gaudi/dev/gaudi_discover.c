/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Device discovery: control nodes (never the exclusive compute nodes,
 * facts 1.2) + sysfs attributes (facts 1.1, 1.3), GAUDI_MAPPING_TABLE,
 * ucs_topo system devices. Cached once per process. The GAUDI_MAPPING_TABLE
 * parser and validator (gaudi_mapping.h) come first.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dev/gaudi_process.h>
#include <uct/gaudi/dev/gaudi_mapping.h>
#include <uct/gaudi/hl/gaudi_driver.h>

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/sys/sys.h>
#include <uct/gaudi/compat/gaudi_compat.h>

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* One array entry while validating */
typedef struct {
    int              ok;         /* still valid */
    long             index;
    long             module_id;
    ucs_sys_bus_id_t bus_id;
    char             bus_str[UCT_GAUDI_PCI_ADDR_MAX];
    int              dev;        /* matched device, -1 if none */
} uct_gaudi_mapping_entry_t;


static void UCS_F_PRINTF(3, 4)
uct_gaudi_mapping_error(uct_gaudi_mapping_t *mapping, int entry,
                        const char *fmt, ...)
{
    uct_gaudi_mapping_error_t *error;
    va_list ap;

    if (mapping->num_errors < UCT_GAUDI_MAPPING_MAX_ERRORS) {
        error        = &mapping->errors[mapping->num_errors];
        error->entry = entry;
        va_start(ap, fmt);
        vsnprintf(error->msg, sizeof(error->msg), fmt, ap);
        va_end(ap);
    }

    ++mapping->num_errors;
}

/* Short JSON text of a value, for messages */
static void uct_gaudi_mapping_repr(const cJSON *item, char *buf, size_t max)
{
    char *text = cJSON_PrintUnformatted(item);

    snprintf(buf, max, "%s", (text != NULL) ? text : "?");
    cJSON_free(text);
}

/* A JSON number that is an integer in [0, max] */
static int uct_gaudi_mapping_get_uint(const cJSON *item, long max,
                                      long *value_p)
{
    double value;

    if (!cJSON_IsNumber(item)) {
        return 0;
    }

    value = item->valuedouble;
    if ((value < 0) || (value > (double)max) ||
        (value != (double)(long)value)) {
        return 0;
    }

    *value_p = (long)value;
    return 1;
}

static int uct_gaudi_mapping_field_uint(uct_gaudi_mapping_t *mapping, int pos,
                                        const cJSON *field, long max,
                                        long *value_p)
{
    char repr[64];

    if (uct_gaudi_mapping_get_uint(field, max, value_p)) {
        return 1;
    }

    uct_gaudi_mapping_repr(field, repr, sizeof(repr));
    uct_gaudi_mapping_error(mapping, pos,
                            "entry %d: \"%s\" must be an integer in "
                            "[0, %ld], got %s", pos, field->string, max, repr);
    return 0;
}

static int uct_gaudi_mapping_field_bus_id(uct_gaudi_mapping_t *mapping,
                                          int pos, const cJSON *field,
                                          uct_gaudi_mapping_entry_t *entry)
{
    char repr[64];

    if (cJSON_IsString(field) &&
        (uct_gaudi_parse_bus_id(field->valuestring, &entry->bus_id) ==
         UCS_OK)) {
        ucs_strncpy_zero(entry->bus_str, field->valuestring,
                         sizeof(entry->bus_str));
        return 1;
    }

    uct_gaudi_mapping_repr(field, repr, sizeof(repr));
    uct_gaudi_mapping_error(mapping, pos,
                            "entry %d: \"bus_id\" must be a string "
                            "\"dddd:bb:ss.f\" (hex), got %s", pos, repr);
    return 0;
}

/* Check the fields of one entry: exactly index, module_id, bus_id */
static void uct_gaudi_mapping_parse_entry(uct_gaudi_mapping_t *mapping,
                                          int pos, const cJSON *obj,
                                          uct_gaudi_mapping_entry_t *entry)
{
    const cJSON *field;
    int have_index = 0, have_module = 0, have_bus = 0;
    int ok         = 1;

    entry->ok  = 0;
    entry->dev = -1;

    if (!cJSON_IsObject(obj)) {
        uct_gaudi_mapping_error(mapping, pos, "entry %d: not an object", pos);
        return;
    }

    cJSON_ArrayForEach(field, obj) {
        if (!strcmp(field->string, "index") && !have_index) {
            have_index = 1;
            ok &= uct_gaudi_mapping_field_uint(mapping, pos, field,
                                               GAUDI_HL_MAX_MINOR - 1,
                                               &entry->index);
        } else if (!strcmp(field->string, "module_id") && !have_module) {
            have_module = 1;
            ok &= uct_gaudi_mapping_field_uint(mapping, pos, field,
                                               UINT32_MAX,
                                               &entry->module_id);
        } else if (!strcmp(field->string, "bus_id") && !have_bus) {
            have_bus = 1;
            ok &= uct_gaudi_mapping_field_bus_id(mapping, pos, field, entry);
        } else if (!strcmp(field->string, "index") ||
                   !strcmp(field->string, "module_id") ||
                   !strcmp(field->string, "bus_id")) {
            uct_gaudi_mapping_error(mapping, pos,
                                    "entry %d: field \"%s\" appears twice",
                                    pos, field->string);
            ok = 0;
        } else {
            uct_gaudi_mapping_error(mapping, pos,
                                    "entry %d: unknown field \"%s\" (expected "
                                    "index, module_id, bus_id)", pos,
                                    field->string);
            ok = 0;
        }
    }

    if (!have_index || !have_module || !have_bus) {
        uct_gaudi_mapping_error(mapping, pos,
                                "entry %d: missing field \"%s\"", pos,
                                !have_index  ? "index" :
                                !have_module ? "module_id" : "bus_id");
        ok = 0;
    }

    entry->ok = ok;
}

static int uct_gaudi_mapping_bus_equal(const ucs_sys_bus_id_t *a,
                                       const ucs_sys_bus_id_t *b)
{
    return (a->domain == b->domain) && (a->bus == b->bus) &&
           (a->slot == b->slot) && (a->function == b->function);
}

/* Entries that share an index, module id or bus id are all rejected */
static void uct_gaudi_mapping_check_duplicates(uct_gaudi_mapping_t *mapping,
                                               uct_gaudi_mapping_entry_t *ents,
                                               unsigned num)
{
    int *dup;
    unsigned i, j;

    dup = ucs_calloc(num, sizeof(*dup), "gaudi mapping dup");
    if (dup == NULL) {
        uct_gaudi_mapping_error(mapping, -1, "out of memory");
        for (i = 0; i < num; ++i) {
            ents[i].ok = 0;
        }
        return;
    }

    for (j = 1; j < num; ++j) {
        for (i = 0; i < j; ++i) {
            if (!ents[i].ok || !ents[j].ok) {
                continue;
            }

            if (ents[i].index == ents[j].index) {
                uct_gaudi_mapping_error(mapping, j,
                                        "entry %u: index %ld is also used by "
                                        "entry %u; both ignored", j,
                                        ents[j].index, i);
            } else if (ents[i].module_id == ents[j].module_id) {
                uct_gaudi_mapping_error(mapping, j,
                                        "entry %u: module_id %ld is also used "
                                        "by entry %u; both ignored", j,
                                        ents[j].module_id, i);
            } else if (uct_gaudi_mapping_bus_equal(&ents[i].bus_id,
                                                   &ents[j].bus_id)) {
                uct_gaudi_mapping_error(mapping, j,
                                        "entry %u: bus_id %s is also used by "
                                        "entry %u; both ignored", j,
                                        ents[j].bus_str, i);
            } else {
                continue;
            }

            dup[i] = dup[j] = 1;
        }
    }

    for (i = 0; i < num; ++i) {
        ents[i].ok &= !dup[i];
    }

    ucs_free(dup);
}

/* Find the discovered device an entry names; both ids must agree */
static void uct_gaudi_mapping_match(uct_gaudi_mapping_t *mapping, int pos,
                                    uct_gaudi_mapping_entry_t *entry,
                                    const uct_gaudi_dev_info_t *devs,
                                    unsigned count)
{
    unsigned i;

    for (i = 0; i < count; ++i) {
        if (devs[i].has_bus_id &&
            uct_gaudi_mapping_bus_equal(&devs[i].bus_id, &entry->bus_id)) {
            break;
        }
    }

    if (i == count) {
        for (i = 0; i < count; ++i) {
            if (devs[i].module_id == entry->module_id) {
                uct_gaudi_mapping_error(mapping, pos,
                                        "entry %d: bus_id %s disagrees with "
                                        "the device of module_id %ld (%s, "
                                        "bus_id %s)", pos, entry->bus_str,
                                        entry->module_id, devs[i].node_name,
                                        devs[i].has_bus_id ?
                                        devs[i].pci_addr : "unknown");
                entry->ok = 0;
                return;
            }
        }

        uct_gaudi_mapping_error(mapping, pos,
                                "entry %d: no device with bus_id %s and "
                                "module_id %ld was discovered", pos,
                                entry->bus_str, entry->module_id);
        entry->ok = 0;
        return;
    }

    if (devs[i].module_id != entry->module_id) {
        uct_gaudi_mapping_error(mapping, pos,
                                "entry %d: module_id %ld disagrees with the "
                                "device at bus_id %s (%s), which reports "
                                "module_id %u", pos, entry->module_id,
                                entry->bus_str, devs[i].node_name,
                                devs[i].module_id);
        entry->ok = 0;
        return;
    }

    entry->dev = i;
}

ucs_status_t uct_gaudi_mapping_parse(const char *json,
                                     const uct_gaudi_dev_info_t *devs,
                                     unsigned count,
                                     uct_gaudi_mapping_t *mapping)
{
    uct_gaudi_mapping_entry_t *ents;
    const char *end = NULL;
    const cJSON *item;
    cJSON *doc;
    unsigned i, num;

    memset(mapping, 0, sizeof(*mapping));
    for (i = 0; i < GAUDI_HL_MAX_MINOR; ++i) {
        mapping->index[i] = -1;
    }

    doc = cJSON_ParseWithOpts(json, &end, 1);
    if (doc == NULL) {
        uct_gaudi_mapping_error(mapping, -1,
                                "malformed JSON near offset %zd: \"%.20s\"",
                                (end != NULL) ? (end - json) : (ssize_t)-1,
                                (end != NULL) ? end : "");
        return UCS_ERR_INVALID_PARAM;
    }

    if (!cJSON_IsArray(doc)) {
        uct_gaudi_mapping_error(mapping, -1, "not a JSON array");
        goto out;
    }

    num = cJSON_GetArraySize(doc);
    if (num > GAUDI_HL_MAX_MINOR) {
        uct_gaudi_mapping_error(mapping, -1, "%u entries, at most %d allowed",
                                num, GAUDI_HL_MAX_MINOR);
        goto out;
    }

    mapping->doc_valid   = 1;
    mapping->num_entries = num;
    if (num == 0) {
        goto out;
    }

    ents = ucs_calloc(num, sizeof(*ents), "gaudi mapping entries");
    if (ents == NULL) {
        uct_gaudi_mapping_error(mapping, -1, "out of memory");
        goto out;
    }

    i = 0;
    cJSON_ArrayForEach(item, doc) {
        uct_gaudi_mapping_parse_entry(mapping, i, item, &ents[i]);
        ++i;
    }

    uct_gaudi_mapping_check_duplicates(mapping, ents, num);

    for (i = 0; i < num; ++i) {
        if (ents[i].ok) {
            uct_gaudi_mapping_match(mapping, i, &ents[i], devs, count);
        }
        if (ents[i].ok) {
            mapping->index[ents[i].dev] = ents[i].index;
            ++mapping->num_applied;
        }
    }

    ucs_free(ents);
out:
    cJSON_Delete(doc);
    return (mapping->num_errors == 0) ? UCS_OK : UCS_ERR_INVALID_PARAM;
}

void uct_gaudi_mapping_log_errors(const uct_gaudi_mapping_t *mapping)
{
    unsigned i, num;

    num = ucs_min(mapping->num_errors, UCT_GAUDI_MAPPING_MAX_ERRORS);
    for (i = 0; i < num; ++i) {
        ucs_error("gaudi: " UCT_GAUDI_MAPPING_ENV ": %s%s",
                  mapping->errors[i].msg,
                  (mapping->errors[i].entry < 0) ?
                  "; the whole table is ignored" : "");
    }

    if (mapping->num_errors > num) {
        ucs_error("gaudi: " UCT_GAUDI_MAPPING_ENV ": %u more error(s)",
                  mapping->num_errors - num);
    }
}


const char *uct_gaudi_asic_name(uct_gaudi_asic_t asic)
{
    switch (asic) {
    case UCT_GAUDI_ASIC_GAUDI1:
        return "Gaudi1";
    case UCT_GAUDI_ASIC_GAUDI2:
        return "Gaudi2";
    case UCT_GAUDI_ASIC_GAUDI3:
        return "Gaudi3";
    default:
        return "unknown";
    }
}

ucs_status_t uct_gaudi_asic_kernel_dma(uct_gaudi_asic_t asic,
                                       const char **reason_p)
{
    switch (asic) {
    case UCT_GAUDI_ASIC_GAUDI1:
    case UCT_GAUDI_ASIC_GAUDI2:
        *reason_p = NULL;
        return UCS_OK;
    case UCT_GAUDI_ASIC_GAUDI3:
        *reason_p = "Gaudi3 has no user-visible command-submission DMA "
                    "queue (user DMA goes through SCAL, which this plugin "
                    "does not use): the gaudi_cpy transport is not offered,"
                    " the gaudi_copy memory domain still works";
        return UCS_ERR_UNSUPPORTED;
    default:
        *reason_p = "unknown Gaudi ASIC: no DMA queue model, the gaudi_cpy "
                    "transport is not offered";
        return UCS_ERR_UNSUPPORTED;
    }
}

uct_gaudi_asic_t uct_gaudi_asic_from_device_id(uint32_t device_id)
{
    /* facts 1.3: PCI ids of upstream and Habana's driver */
    switch (device_id) {
    case GAUDI_HL_PCI_ID_GAUDI1:
    case GAUDI_HL_PCI_ID_GAUDI1_SEC:
    case GAUDI_HL_PCI_ID_GAUDI1_HL2000M:
    case GAUDI_HL_PCI_ID_GAUDI1_HL2000M_SEC:
        return UCT_GAUDI_ASIC_GAUDI1;
    case GAUDI_HL_PCI_ID_GAUDI2:
    case GAUDI_HL_PCI_ID_GAUDI2_HL288:
        return UCT_GAUDI_ASIC_GAUDI2;
    case GAUDI_HL_PCI_ID_GAUDI3:
    case GAUDI_HL_PCI_ID_GAUDI3_HL338:
        return UCT_GAUDI_ASIC_GAUDI3;
    default:
        return UCT_GAUDI_ASIC_UNKNOWN;
    }
}

/* Parse @a len hex digits of @a str; 1 if all are hex digits */
static int uct_gaudi_parse_hex(const char *str, int len, unsigned *value_p)
{
    unsigned value = 0;
    int i;

    for (i = 0; i < len; ++i) {
        if (!isxdigit((unsigned char)str[i])) {
            return 0;
        }
        value = (value << 4) |
                (isdigit((unsigned char)str[i]) ?
                 (unsigned)(str[i] - '0') :
                 (unsigned)(tolower((unsigned char)str[i]) - 'a' + 10));
    }

    *value_p = value;
    return 1;
}

ucs_status_t uct_gaudi_parse_bus_id(const char *str, ucs_sys_bus_id_t *bus_id)
{
    unsigned domain, bus, slot, function;

    /* exactly "dddd:bb:ss.f", the sysfs pci_addr format (facts 1.3) */
    if ((strlen(str) != 12) || (str[4] != ':') || (str[7] != ':') ||
        (str[10] != '.') || !uct_gaudi_parse_hex(str, 4, &domain) ||
        !uct_gaudi_parse_hex(str + 5, 2, &bus) ||
        !uct_gaudi_parse_hex(str + 8, 2, &slot) ||
        !uct_gaudi_parse_hex(str + 11, 1, &function) ||
        (slot > 0x1f) || (function > 7)) {
        return UCS_ERR_INVALID_PARAM;
    }

    bus_id->domain   = domain;
    bus_id->bus      = bus;
    bus_id->slot     = slot;
    bus_id->function = function;
    return UCS_OK;
}

/* Read a sysfs attribute of device @a minor, trailing whitespace removed */
static int uct_gaudi_sysfs_read(int minor, const char *attr, char *buf,
                                size_t max)
{
    /* attributes live on the PCI device on upstream >= 6.3, on the accel
     * device on Habana's compat build, on hlN on <= 6.2 (facts 1.1 notes) */
    static const char *dirs[] = {
        GAUDI_HL_SYSFS_ACCEL_PCI_FMT,
        GAUDI_HL_SYSFS_ACCEL_FMT,
        GAUDI_HL_SYSFS_LEGACY_FMT
    };
    char dir[64];
    ssize_t len;
    int i;

    for (i = 0; i < ucs_static_array_size(dirs); ++i) {
        snprintf(dir, sizeof(dir), dirs[i], minor);
        len = ucs_read_file_str(buf, max, 1, "%s/%s", dir, attr);
        if (len < 0) {
            continue;
        }

        while ((len > 0) && isspace((unsigned char)buf[len - 1])) {
            buf[--len] = '\0';
        }
        return 1;
    }

    buf[0] = '\0';
    return 0;
}

/*
 * Size of the DRAM PCI BAR from the PCI device's `resource` file (one
 * "start end flags" line per BAR). The driver exports only device memory
 * whose every page lies inside it (facts 4.1, 9.6).
 */
static void uct_gaudi_discover_dram_bar(uct_gaudi_dev_info_t *dev)
{
    unsigned long long start, end, flags;
    char path[96], line[128];
    FILE *f;
    int i;

    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource",
             dev->pci_addr);
    f = fopen(path, "r");
    if (f == NULL) {
        return;
    }

    for (i = 0; fgets(line, sizeof(line), f) != NULL; ++i) {
        if ((i == GAUDI_HL_DRAM_BAR_ID) &&
            (sscanf(line, "%llx %llx %llx", &start, &end, &flags) == 3) &&
            (end > start)) {
            dev->dram_bar_size = end - start + 1;
        }
    }
    fclose(f);
}

/* -1 if the control node's device is not the compute node's (see below) */
static int uct_gaudi_discover_sysfs(uct_gaudi_dev_info_t *dev)
{
    char module_id[16];
    char *end;

    if (uct_gaudi_sysfs_read(dev->minor, "pci_addr", dev->pci_addr,
                             sizeof(dev->pci_addr))) {
        dev->has_bus_id = (uct_gaudi_parse_bus_id(dev->pci_addr,
                                                  &dev->bus_id) == UCS_OK);
        if (!dev->has_bus_id) {
            ucs_warn("gaudi %s: malformed sysfs pci_addr '%s'",
                     dev->node_name, dev->pci_addr);
        } else {
            uct_gaudi_discover_dram_bar(dev);
        }
    } else {
        ucs_debug("gaudi %s: no sysfs pci_addr", dev->node_name);
    }

    uct_gaudi_sysfs_read(dev->minor, "device_type", dev->device_type,
                         sizeof(dev->device_type));
    uct_gaudi_sysfs_read(dev->minor, "status", dev->sysfs_status,
                         sizeof(dev->sysfs_status));

    /*
     * Same value as hw_ip.module_id (facts 1.3), unless the control node
     * answered for another device: upstream names it by accel index but
     * opens the device with that number in probe order (facts 9.9), which
     * differ when another accel driver took an index
     */
    if (uct_gaudi_sysfs_read(dev->minor, "module_id", module_id,
                             sizeof(module_id)) &&
        ((strtoul(module_id, &end, 10) != dev->module_id) || (*end != '\0'))) {
        ucs_warn("gaudi %s: skipped: its control node answers for module %u, "
                 "the device is module %s (the driver looks control nodes up "
                 "in probe order, not by accel index)", dev->node_name,
                 dev->module_id, module_id);
        return -1;
    }

    return 1;
}

/* Basename of a node path format, e.g. "accel3" */
static void uct_gaudi_node_name(const char *fmt, int minor, char *buf,
                                size_t max)
{
    char path[64];

    snprintf(path, sizeof(path), fmt, minor);
    ucs_strncpy_zero(buf, strrchr(path, '/') + 1, max);
}

/* Probe control node @a minor; 1 if it is a Gaudi device, -1 if the node
 * exists but discovery skipped it (logged), 0 if there is none */
static int uct_gaudi_discover_minor(int minor, uct_gaudi_dev_info_t *dev)
{
    uct_gaudi_hl_t hl;
    ucs_status_t status;
    int found = 0;

    status = uct_gaudi_hl_open(minor, 1, UCT_GAUDI_HL_OPEN_QUIET, &hl);
    if ((status == UCS_ERR_NO_DEVICE) && (errno == ENXIO)) {
        /* the node exists but no device has this number in probe order */
        ucs_warn("gaudi %s: skipped: its control node has no device (the "
                 "driver looks control nodes up in probe order, not by accel "
                 "index)", hl.name);
        return -1;
    } else if (status == UCS_ERR_NO_DEVICE) {
        return 0;
    } else if (status != UCS_OK) {
        ucs_warn("gaudi %s: skipped by discovery: %s", hl.name,
                 strerror(errno));
        return -1;
    }

    memset(dev, 0, sizeof(*dev));
    dev->index   = -1;
    dev->minor   = minor;
    dev->abi     = hl.abi;
    dev->sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;
    uct_gaudi_node_name(!strncmp(hl.name, "hl_", 3) ?
                        GAUDI_HL_LEGACY_NODE_FMT : GAUDI_HL_ACCEL_NODE_FMT,
                        minor, dev->node_name, sizeof(dev->node_name));

    if ((uct_gaudi_hl_hw_ip_info(&hl, &dev->hw_ip) != UCS_OK) ||
        (uct_gaudi_hl_device_status(&hl, &dev->status) != UCS_OK)) {
        goto out;
    }

    dev->asic      = uct_gaudi_asic_from_device_id(dev->hw_ip.u61.device_id);
    dev->module_id = dev->hw_ip.u61.module_id;
    if (dev->asic == UCT_GAUDI_ASIC_UNKNOWN) {
        ucs_debug("gaudi %s: device id 0x%x is not a Gaudi, skipped",
                  hl.name, dev->hw_ip.u61.device_id);
        goto out;
    }

    found = uct_gaudi_discover_sysfs(dev);
out:
    uct_gaudi_hl_close(&hl);
    return found;
}

static int uct_gaudi_index_used(const uct_gaudi_devices_t *devs, int index)
{
    unsigned i;

    for (i = 0; i < devs->count; ++i) {
        if (devs->dev[i].index == index) {
            return 1;
        }
    }

    return 0;
}

/*
 * Logical indices: GAUDI_MAPPING_TABLE entries first, then the other
 * devices get the lowest free indices in discovery (minor) order.
 */
static void uct_gaudi_assign_indices(uct_gaudi_devices_t *devs)
{
    const char *table = getenv(UCT_GAUDI_MAPPING_ENV);
    uct_gaudi_mapping_t *mapping;
    unsigned i;
    int next;

    if ((table != NULL) && (table[strspn(table, " \t\r\n")] != '\0')) {
        mapping = ucs_malloc(sizeof(*mapping), "gaudi mapping");
        if (mapping == NULL) {
            ucs_error("gaudi: no memory to parse " UCT_GAUDI_MAPPING_ENV);
        } else {
            if (uct_gaudi_mapping_parse(table, devs->dev, devs->count,
                                        mapping) != UCS_OK) {
                uct_gaudi_mapping_log_errors(mapping);
            }
            for (i = 0; i < devs->count; ++i) {
                devs->dev[i].index = mapping->index[i];
                devs->mapped[devs->dev[i].minor] = (mapping->index[i] >= 0);
            }
            ucs_debug("gaudi: " UCT_GAUDI_MAPPING_ENV ": %u of %u entries "
                      "applied", mapping->num_applied, mapping->num_entries);
            ucs_free(mapping);
        }
    }

    next = 0;
    for (i = 0; i < devs->count; ++i) {
        if (devs->dev[i].index >= 0) {
            continue;
        }
        while (uct_gaudi_index_used(devs, next)) {
            ++next;
        }
        devs->dev[i].index = next++;
    }
}

static int uct_gaudi_dev_cmp_index(const void *a, const void *b)
{
    return ((const uct_gaudi_dev_info_t*)a)->index -
           ((const uct_gaudi_dev_info_t*)b)->index;
}

/* ucs_topo system device of each device, named GAUDI_<logical index> */
static void uct_gaudi_register_topo(uct_gaudi_dev_info_t *dev)
{
    snprintf(dev->name, sizeof(dev->name), "GAUDI_%d", dev->index);
    if (!dev->has_bus_id) {
        return;
    }

    if (ucs_topo_find_device_by_bus_id(&dev->bus_id, &dev->sys_dev) !=
        UCS_OK) {
        dev->sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN;
        return;
    }

    (void)uct_gaudi_topo_set_name(dev->sys_dev, dev->name);
}

static void uct_gaudi_discover(uct_gaudi_devices_t *devs)
{
    uct_gaudi_dev_info_t *dev;
    unsigned i;
    int minor, found, out_of_tree;

    devs->count = 0;
    for (minor = 0; minor < GAUDI_HL_MAX_MINOR; ++minor) {
        found = uct_gaudi_discover_minor(minor, &devs->dev[devs->count]);
        if (found > 0) {
            ++devs->count;
        }
        devs->skipped[minor] = (found < 0);
    }

    uct_gaudi_assign_indices(devs);
    qsort(devs->dev, devs->count, sizeof(devs->dev[0]),
          uct_gaudi_dev_cmp_index);

    out_of_tree = uct_gaudi_driver_out_of_tree();
    for (i = 0; i < devs->count; ++i) {
        dev = &devs->dev[i];
        dev->out_of_tree = out_of_tree;
        uct_gaudi_register_topo(dev);
        ucs_debug("gaudi %s: %s (%s) %s module_id %u bus %s status %u "
                  "dram 0x%" PRIx64 "+0x%" PRIx64 " page 0x%" PRIx64,
                  dev->name, dev->node_name, uct_gaudi_asic_name(dev->asic),
                  (dev->abi == GAUDI_HL_ABI_ACCEL) ? "accel" : "legacy",
                  dev->module_id, dev->has_bus_id ? dev->pci_addr : "?",
                  dev->status, (uint64_t)dev->hw_ip.u61.dram_base_address,
                  (uint64_t)dev->hw_ip.u61.dram_size,
                  (uint64_t)dev->hw_ip.u61.device_mem_alloc_default_page_size);
    }

    ucs_debug("gaudi: discovered %u device(s)", devs->count);
}

const uct_gaudi_devices_t *uct_gaudi_devices(void)
{
    pthread_mutex_lock(&uct_gaudi_process.discovery.lock);
    if (!uct_gaudi_process.discovery.done) {
        uct_gaudi_discover(&uct_gaudi_process.discovery.devices);
        uct_gaudi_process.discovery.done = 1;
    }
    pthread_mutex_unlock(&uct_gaudi_process.discovery.lock);

    return &uct_gaudi_process.discovery.devices;
}

void uct_gaudi_devices_reset(void)
{
    pthread_mutex_lock(&uct_gaudi_process.discovery.lock);
    uct_gaudi_process.discovery.done = 0;
    pthread_mutex_unlock(&uct_gaudi_process.discovery.lock);
}

const uct_gaudi_dev_info_t *uct_gaudi_device_by_index(int index)
{
    const uct_gaudi_devices_t *devs = uct_gaudi_devices();
    unsigned i;

    for (i = 0; i < devs->count; ++i) {
        if (devs->dev[i].index == index) {
            return &devs->dev[i];
        }
    }

    return NULL;
}

const uct_gaudi_dev_info_t *uct_gaudi_device_by_module_id(uint32_t module_id)
{
    const uct_gaudi_devices_t *devs = uct_gaudi_devices();
    unsigned i;

    for (i = 0; i < devs->count; ++i) {
        if (devs->dev[i].module_id == module_id) {
            return &devs->dev[i];
        }
    }

    return NULL;
}

const uct_gaudi_dev_info_t *uct_gaudi_device_by_minor(int minor)
{
    const uct_gaudi_devices_t *devs = uct_gaudi_devices();
    unsigned i;

    for (i = 0; i < devs->count; ++i) {
        if (devs->dev[i].minor == minor) {
            return &devs->dev[i];
        }
    }

    return NULL;
}

int uct_gaudi_device_minor_known(int minor)
{
    return uct_gaudi_device_by_minor(minor) != NULL;
}

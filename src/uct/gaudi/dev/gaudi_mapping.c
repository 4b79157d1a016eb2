/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * GAUDI_MAPPING_TABLE parser and validator (see gaudi_mapping.h).
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include <uct/gaudi/dev/gaudi_mapping.h>

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
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

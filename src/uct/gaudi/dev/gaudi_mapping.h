/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * GAUDI_MAPPING_TABLE: a JSON array of
 *   {"index": <int>, "module_id": <int>, "bus_id": "dddd:bb:ss.f"}
 * that gives discovered devices the logical index users select them by.
 * Format and validation rules: docs/base.md "Mapping table".
 */

#ifndef UCT_GAUDI_MAPPING_H_
#define UCT_GAUDI_MAPPING_H_

#include <uct/gaudi/dev/gaudi_dev.h>

BEGIN_C_DECLS

#define UCT_GAUDI_MAPPING_ENV        "GAUDI_MAPPING_TABLE"
#define UCT_GAUDI_MAPPING_MAX_ERRORS 32
#define UCT_GAUDI_MAPPING_MSG_MAX    192


typedef struct uct_gaudi_mapping_error {
    int  entry;   /* position in the array, -1: the document as a whole */
    char msg[UCT_GAUDI_MAPPING_MSG_MAX];
} uct_gaudi_mapping_error_t;


typedef struct uct_gaudi_mapping {
    int                       doc_valid;    /* parsed, and an array */
    unsigned                  num_entries;  /* array length */
    unsigned                  num_applied;  /* entries that were applied */
    /* per device (order of the devs argument): table index, or -1 */
    int                       index[GAUDI_HL_MAX_MINOR];
    unsigned                  num_errors;   /* may exceed the array size */
    uct_gaudi_mapping_error_t errors[UCT_GAUDI_MAPPING_MAX_ERRORS];
} uct_gaudi_mapping_t;


/**
 * Parse and validate @a json against the discovered devices @a devs (only
 * minor, module_id, has_bus_id/bus_id and node_name are read). Pure: no
 * logging, no global state.
 *
 * @return UCS_OK if every entry is valid and applied; UCS_ERR_INVALID_PARAM
 *         if there were errors: the valid entries are still in @a mapping
 *         (all of them -1 if the document itself is malformed).
 */
ucs_status_t uct_gaudi_mapping_parse(const char *json,
                                     const uct_gaudi_dev_info_t *devs,
                                     unsigned count,
                                     uct_gaudi_mapping_t *mapping);

/* ucs_error every error of @a mapping */
void uct_gaudi_mapping_log_errors(const uct_gaudi_mapping_t *mapping);

END_C_DECLS

#endif

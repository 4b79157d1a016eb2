/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gaudi_compat.h"

#include <ucs/debug/log.h>
#include <string.h>


int uct_gaudi_memory_type_available(void)
{
#if UCT_GAUDI_MEMORY_TYPE_BORROWED
    static const char *owners[] = {"rocm_cpy", "rocm_ipc"};
    uct_component_t *component;
    unsigned i;

    ucs_list_for_each(component, &uct_components_list, list) {
        for (i = 0; i < ucs_static_array_size(owners); ++i) {
            if (!strcmp(component->name, owners[i])) {
                ucs_warn("gaudi: disabled because component '%s' is loaded:"
                         " UCX %s has no Gaudi memory type and Gaudi memory"
                         " would share the '%s' memory type with it"
                         " (use UCX >= 1.21, or exclude the ROCm module)",
                         owners[i], UCT_VERNO_STRING,
                         UCT_GAUDI_MEMORY_TYPE_NAME);
                return 0;
            }
        }
    }
#endif
    return 1;
}

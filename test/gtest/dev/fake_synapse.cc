/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * A fake SynapseAI for gaudi_unit: synDeviceGetInfo as the module's
 * borrowing of the application's device (gaudi_ctx.c) calls it, controlled
 * through gaudi_unit::fake_synapse_* (gaudi_unit.h). Not linked into
 * gaudi_syn_test, which loads the emulated libSynapse.
 */

#include "common/gaudi_unit.h"

#include <string.h>

/* The fake SynapseAI entry point; exported (-rdynamic) for dlsym */
namespace gaudi_unit {
int fake_synapse_fd       = -1;
int fake_synapse_calls    = 0;
int fake_synapse_offset   = 48;
uint32_t fake_synapse_other = 0;
}

extern "C" int synDeviceGetInfo(uint32_t device_id, void *info)
{
    /* synDeviceInfo prefix: 2 x u64, u32 (+pad), u64 dramSize @24, then
     * u64 tpcEnabledMask @32, u8, u32 deviceId @44, u32 fd @48; older
     * headers: u16 mask @32, u8, u32 deviceId @36, u32 fd @40 */
    int other = (gaudi_unit::fake_synapse_offset == 48) ? 40 : 48;

    ++gaudi_unit::fake_synapse_calls;
    if ((device_id != (uint32_t)-1) || (gaudi_unit::fake_synapse_fd < 0)) {
        return 26; /* any synStatus other than synSuccess (0) */
    }

    memset(info, 0, 56);
    *(uint32_t*)((char*)info + gaudi_unit::fake_synapse_offset) =
            gaudi_unit::fake_synapse_fd;
    *(uint32_t*)((char*)info + other) = gaudi_unit::fake_synapse_other;
    return 0;
}

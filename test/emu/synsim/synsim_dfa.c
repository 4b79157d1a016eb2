/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Emulated libSynapse: the device failure analysis (DFA) that SynapseAI
 * runs on a device error (docs/synapse.md). TERMINATE_SYNAPSE_UPON_DFA
 * (habana_global_conf.cpp:1713-1717) chooses what follows
 * (dfa_base.cpp:465-475, 1739-1790): 2 (default) every API call returns
 * synSynapseTerminated and the process is SIGKILLed 5 s later; 1 the
 * calls return synSynapseTerminated and the failing thread sleeps forever;
 * 0 and 3 only log, the failed work reports synDeviceReset.
 */

#include "synsim_int.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    SYNSIM_DFA_DISABLED,
    SYNSIM_DFA_BUSY_WAIT,
    SYNSIM_DFA_KILL,
    SYNSIM_DFA_DISABLED_REPEAT
};

synStatus synsim_api_enter(void)
{
    if (!synsim.initialized) {
        return synUninitialized;
    }
    /* syn_singleton.cpp:645-685: the DFA phase refuses every call */
    return __atomic_load_n(&synsim.terminated, __ATOMIC_ACQUIRE) ?
           synSynapseTerminated : synSuccess;
}

int synsim_dfa_init(void)
{
    const char *v = getenv("TERMINATE_SYNAPSE_UPON_DFA");
    char       *end;
    long        mode;

    synsim.dfa_mode   = SYNSIM_DFA_KILL;
    synsim.terminated = 0;
    if ((v == NULL) || (*v == '\0')) {
        return 0;
    }
    mode = strtol(v, &end, 0);
    if ((*end != '\0') || (mode < SYNSIM_DFA_DISABLED) ||
        (mode > SYNSIM_DFA_DISABLED_REPEAT)) {
        synsim_log("TERMINATE_SYNAPSE_UPON_DFA=%s: 0 (disabled), 1 "
                   "(terminate), 2 (kill, the default) or 3", v);
        return -1;
    }
    synsim.dfa_mode = (int)mode;
    return 0;
}

int synsim_dfa_begin(const char *why)
{
    int first;

    synsim_log("device failure (%s): DFA, TERMINATE_SYNAPSE_UPON_DFA=%d",
               why, synsim.dfa_mode);
    if ((synsim.dfa_mode != SYNSIM_DFA_BUSY_WAIT) &&
        (synsim.dfa_mode != SYNSIM_DFA_KILL)) {
        return 0;
    }
    first = !__atomic_exchange_n(&synsim.terminated, 1, __ATOMIC_ACQ_REL);
    return first;
}

/* In the thread that met the failure, after synsim_dfa_begin() said 1 */
void synsim_dfa_end(void)
{
    if (synsim.dfa_mode == SYNSIM_DFA_KILL) {
        synsim_log("killing the process in %d s", SYNSIM_DFA_KILL_S);
        sleep(SYNSIM_DFA_KILL_S);
        for (;;) {
            kill(getpid(), SIGKILL);
            sleep(1);
        }
    }
    for (;;) {
        sleep(1);       /* busy-wait: the thread never comes back */
    }
}

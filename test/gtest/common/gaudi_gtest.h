/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Helpers shared by the project's gtest programs (libgaudi_gtest.la):
 * fd counting, and control of the habanalabs emulator (test/hlsim), which
 * the tests run on. The emulator is preloaded, never linked: its control
 * API is looked up at run time.
 */

#ifndef GAUDI_GTEST_H_
#define GAUDI_GTEST_H_

#include "../../hlsim/hlsim.h"

#include <stdint.h>
#include <string>


namespace gaudi_gtest {

/* Open file descriptors of this process */
int count_fds();

/* A symbol of the preloaded emulator, NULL when it is not preloaded */
void *hlsim_sym(const char *name);

/* Whether the emulator is preloaded into this process */
bool hlsim_loaded();

/*
 * The emulator's control API (hlsim.h). Each call records a test failure
 * and returns -ENOSYS (a counter: -1) when the emulator is not preloaded.
 */
int hlsim_fault_add(const char *op, unsigned nth, int err);
int hlsim_fault_clear();
int64_t hlsim_counter(hlsim_counter_t counter, int dev = 0);
int hlsim_set_device_status(int dev, unsigned status);
int hlsim_reset_device(int dev, unsigned ms);

/* LD_PRELOAD value with the emulator (HLSIM_LIB, else the build tree's)
 * in front of @a current, unchanged when it is there already */
std::string hlsim_preload(const char *current);

/*
 * First thing in main(): unless the emulator is preloaded, run this
 * program again with it (exec, does not return); then give the process a
 * fresh node (HLSIM_ROOT=/tmp/<name>.XXXXXX) when HLSIM_ROOT is unset.
 */
void hlsim_setup(char **argv, const char *name);

} // namespace gaudi_gtest

#endif

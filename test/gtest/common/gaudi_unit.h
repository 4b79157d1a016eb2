/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Unit tests of src/uct/gaudi/base against the habanalabs emulator
 * (test/emu/hlsim, LD_PRELOAD). The emulator reads its HLSIM_* environment
 * once per process, so every test that touches a device re-runs itself in
 * a fresh process (exec of this binary, filtered to the one test) with a
 * fresh HLSIM_ROOT: see GAUDI_UNIT_CHILD().
 */

#ifndef GAUDI_UNIT_H_
#define GAUDI_UNIT_H_

extern "C" {
#include <uct/gaudi/dev/gaudi_dev.h>
#include <uct/gaudi/dev/gaudi_mapping.h>
#include <ucs/sys/topo/base/topo.h>
#include <ucs/time/time.h>
#include <ucs/debug/log_def.h>
#include <ucs/config/global_opts.h>
}

#include "common/gaudi_gtest.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>


namespace gaudi_unit {

typedef gaudi_gtest::env_t env_t;

enum {
    PARENT_DONE    = 0,  /* the child ran the test (and it was checked) */
    IN_CHILD       = 1,  /* we are the child: run the test body */
    PARENT_SKIPPED = 2   /* the child skipped the test */
};

/*
 * In the test process: run the current test in a child process with
 * HLSIM_ROOT=<fresh dir> and @a env, check that it passed.
 * In that child: return IN_CHILD (the test body then runs).
 */
int in_child(const env_t &env = env_t());

/* fd counting and emulator control: test/gtest/common */
using gaudi_gtest::count_fds;
using gaudi_gtest::hlsim_fault_add;
using gaudi_gtest::hlsim_set_device_status;
using gaudi_gtest::hlsim_reset_device;
using gaudi_gtest::log_capture;

/* A process that holds a compute node open until destroyed */
class node_holder {
public:
    explicit node_holder(int minor);
    ~node_holder();
    bool ok() const { return m_ok; }

private:
    pid_t m_pid;
    int   m_pipe;
    bool  m_ok;
};

/* Controls the fake synDeviceGetInfo exported by the test binary */
extern int fake_synapse_fd;      /* -1: "no device" */
extern int fake_synapse_offset;  /* of the fd: 48, or 40 (old headers) */
extern uint32_t fake_synapse_other; /* what the other offset holds */
extern int fake_synapse_calls;

} // namespace gaudi_unit

/* First statement of a test that needs the emulator */
#define GAUDI_UNIT_CHILD(...) \
    switch (gaudi_unit::in_child(__VA_ARGS__)) { \
    case gaudi_unit::IN_CHILD: \
        break; \
    case gaudi_unit::PARENT_SKIPPED: \
        GTEST_SKIP() << "skipped in the child process"; \
    default: \
        return; \
    }

/* Checks that the fds of the child did not leak */
class gaudi_test : public ::testing::Test {
protected:
    void SetUp() override;
    void TearDown() override;
    int  m_fds = -1;
};

#endif

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Test support of gaudi_unit and gaudi_syn_test (see gaudi_unit.h): each
 * device test re-run in a child on a fresh node, through the runner of
 * gaudi_gtest.h, and a process that holds a node open.
 */

#include "gaudi_unit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define GAUDI_UNIT_CHILD_ENV "GAUDI_UNIT_CHILD"

/* Variables a child must not inherit from the test runner's environment */
static const char *const gaudi_unit_scrubbed[] = {
    "HLSIM_", "UCX_GAUDI_", "GAUDI_MAPPING_TABLE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
    "PMI_LOCAL_RANK", "PALS_LOCAL_RANKID", "LOCAL_RANK", "SYNSIM_INFO",
    GAUDI_UNIT_CHILD_ENV, NULL
};


namespace gaudi_unit {

int in_child(const env_t &env)
{
    gaudi_gtest::env_t vars = env;
    gaudi_gtest::child_result r;

    if (getenv(GAUDI_UNIT_CHILD_ENV) != NULL) {
        if (!gaudi_gtest::hlsim_loaded()) {
            ADD_FAILURE() << "the hlsim emulator is not preloaded";
            return PARENT_DONE;
        }
        return IN_CHILD;
    }

    vars[GAUDI_UNIT_CHILD_ENV] = "1";
    /* the suite's record of the emulator's totals (test/suites/lib.sh)
     * outlives the child's node */
    if ((getenv("HLSIM_TOTALS_FILE") != NULL) &&
        (vars.find("HLSIM_TOTALS_FILE") == vars.end())) {
        vars["HLSIM_TOTALS_FILE"] = getenv("HLSIM_TOTALS_FILE");
    }
    r = gaudi_gtest::run_test_in_child(gaudi_gtest::current_test(), vars,
                                       true, gaudi_unit_scrubbed);
    if (!r.passed()) {
        ADD_FAILURE() << "the test failed in its child process (status "
                      << r.status << (r.ran ? "" : ", test did not run")
                      << "), its output:\n" << r.output;
    }
    return (r.passed() && r.skipped) ? PARENT_SKIPPED : PARENT_DONE;
}

node_holder::node_holder(int minor) : m_pid(-1), m_pipe(-1), m_ok(false)
{
    char path[64], c = 0;
    int to_child[2], to_parent[2], fd;

    if (pipe(to_child) || pipe(to_parent)) {
        return;
    }

    m_pid = fork();
    if (m_pid == 0) {
        close(to_child[1]);
        close(to_parent[0]);
        snprintf(path, sizeof(path), GAUDI_HL_ACCEL_NODE_FMT, minor);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            snprintf(path, sizeof(path), GAUDI_HL_LEGACY_NODE_FMT, minor);
            fd = open(path, O_RDWR | O_CLOEXEC);
        }
        c = (fd >= 0) ? 'y' : 'n';
        (void)!write(to_parent[1], &c, 1);
        (void)!read(to_child[0], &c, 1);   /* until the parent is done */
        _exit(0);
    }

    close(to_child[0]);
    close(to_parent[1]);
    m_pipe = to_child[1];
    m_ok   = (read(to_parent[0], &c, 1) == 1) && (c == 'y');
    close(to_parent[0]);
}

node_holder::~node_holder()
{
    int status;

    if (m_pid > 0) {
        close(m_pipe);
        waitpid(m_pid, &status, 0);
    }
}

} // namespace gaudi_unit


void gaudi_test::SetUp()
{
    m_fds = gaudi_unit::count_fds();
}

void gaudi_test::TearDown()
{
    if (getenv(GAUDI_UNIT_CHILD_ENV) != NULL) {
        EXPECT_EQ(m_fds, gaudi_unit::count_fds()) << "fd leak";
    }
}

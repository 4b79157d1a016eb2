/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Test support: re-run in a child process, log capture (see gaudi_unit.h;
 * fd counting and emulator control are in test/gtest/common).
 */

#include "gaudi_unit.h"

#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define GAUDI_UNIT_CHILD_ENV "GAUDI_UNIT_CHILD"

/* Variables a child must not inherit from the test runner's environment */
static const char *gaudi_unit_scrubbed[] = {
    "HLSIM_", "UCX_GAUDI_", "GAUDI_MAPPING_TABLE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
    "PMI_LOCAL_RANK", "PALS_LOCAL_RANKID", "LOCAL_RANK", "SYNSIM_INFO",
    GAUDI_UNIT_CHILD_ENV, NULL
};


namespace gaudi_unit {

static bool scrubbed(const char *var)
{
    for (const char **p = gaudi_unit_scrubbed; *p != NULL; ++p) {
        if (!strncmp(var, *p, strlen(*p))) {
            return true;
        }
    }
    return false;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    return remove(path);
}

int in_child(const env_t &env)
{
    const ::testing::TestInfo *info =
            ::testing::UnitTest::GetInstance()->current_test_info();
    std::vector<std::string> vars;
    std::vector<char*> envp, argv;
    char root[] = "/tmp/gaudi_unit.XXXXXX";
    std::string filter, self, out, name;
    bool passed, ran, skipped;
    int status;
    pid_t pid;

    if (getenv(GAUDI_UNIT_CHILD_ENV) != NULL) {
        if (!gaudi_gtest::hlsim_loaded()) {
            ADD_FAILURE() << "the hlsim emulator is not preloaded";
            return PARENT_DONE;
        }
        return IN_CHILD;
    }

    if (mkdtemp(root) == NULL) {
        ADD_FAILURE() << "mkdtemp: " << strerror(errno);
        return PARENT_DONE;
    }

    for (char **e = environ; *e != NULL; ++e) {
        if (!scrubbed(*e) && strncmp(*e, "LD_PRELOAD=", 11)) {
            vars.push_back(*e);
        }
    }
    vars.push_back(std::string("LD_PRELOAD=") +
                   gaudi_gtest::hlsim_preload(getenv("LD_PRELOAD")));
    vars.push_back(std::string("HLSIM_ROOT=") + root + "/node");
    vars.push_back(GAUDI_UNIT_CHILD_ENV "=1");
    for (auto &kv : env) {
        vars.push_back(kv.first + "=" + kv.second);
    }
    for (auto &v : vars) {
        envp.push_back(&v[0]);
    }
    envp.push_back(NULL);

    self   = "/proc/self/exe";
    name   = std::string(info->test_suite_name()) + "." + info->name();
    filter = "--gtest_filter=" + name;
    argv.push_back(&self[0]);
    argv.push_back(&filter[0]);
    argv.push_back(NULL);

    /* the child's output is shown only if it fails */
    out = std::string(root) + "/output";
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execve(self.c_str(), argv.data(), envp.data());
        _exit(127);
    }

    EXPECT_GT(pid, 0);
    EXPECT_EQ(pid, waitpid(pid, &status, 0));
    std::ifstream f(out);
    std::stringstream text;
    text << f.rdbuf();
    /* exit 0 alone is no pass: the child must have run this very test
     * (a filter that matched nothing also exits 0) */
    skipped = text.str().find("[  SKIPPED ] " + name) != std::string::npos;
    ran     = skipped ||
              (text.str().find("[       OK ] " + name) != std::string::npos);
    passed  = WIFEXITED(status) && (WEXITSTATUS(status) == 0) && ran;
    if (!passed) {
        ADD_FAILURE() << "the test failed in its child process (status "
                      << status << (ran ? "" : ", test did not run")
                      << "), its output:\n" << text.str();
    }
    nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return (passed && skipped) ? PARENT_SKIPPED : PARENT_DONE;
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

/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Helpers shared by the project's gtest programs (libgaudi_gtest.la):
 * fd counting, UCX log capture, the runner of a test in a child process,
 * and control of the habanalabs emulator (test/emu/hlsim), which the
 * tests run on. The emulator is preloaded, never linked: its control API
 * is looked up at run time.
 */

#ifndef GAUDI_GTEST_H_
#define GAUDI_GTEST_H_

#include "../../emu/hlsim/hlsim.h"

extern "C" {
#include <ucs/config/types.h>
}

#include <stdint.h>
#include <map>
#include <string>
#include <vector>


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
/* The administrator's reset of a device that needs one, by hand (a real
 * reset would kill this process): the reset ends the CSs in flight (a CS
 * that timed out under reset_on_lockup=0 stays in flight until one),
 * then the device is operational */
int hlsim_admin_reset(int dev);

/* LD_PRELOAD value with the emulator (HLSIM_LIB, else the build tree's)
 * in front of @a current, unchanged when it is there already */
std::string hlsim_preload(const char *current);

/* Messages logged by UCX at @a level (warn by default) or above while
 * alive; a level above the configured one is enabled meanwhile */
class log_capture {
public:
    explicit log_capture(ucs_log_level_t level = UCS_LOG_LEVEL_WARN);
    ~log_capture();

    /* the first message with all of @a words, "" if none */
    std::string find(const std::vector<std::string> &words) const;
    size_t count(ucs_log_level_t max_level) const;
    std::string dump() const;

    struct entry {
        ucs_log_level_t level;
        std::string     text;
    };
    static std::vector<entry> entries;
    static ucs_log_level_t    max_level;

private:
    ucs_log_level_t m_saved;
};

/*
 * First thing in main(): unless the emulator is preloaded, run this
 * program again with it (exec, does not return); then give the process a
 * fresh node (HLSIM_ROOT=/tmp/<name>.XXXXXX) when HLSIM_ROOT is unset.
 */
void hlsim_setup(char **argv, const char *name);

/* "Suite.name" of the test running now */
std::string current_test();

typedef std::map<std::string, std::string> env_t;

/* How a test ran in a child process */
struct child_result {
    int         status = -1;  /* its wait status */
    std::string output;       /* its stdout and stderr */
    bool        ran = false;  /* gtest reported the test: OK or SKIPPED */
    bool        skipped = false;

    /* exit 0 alone is no pass: a filter that matched nothing exits 0 too */
    bool passed() const;
};

/*
 * Run test @a name of this program in a child: the program exec'ed,
 * filtered to that test, with the emulator preloaded, the variables that
 * start with one of @a scrub (NULL-terminated, may be NULL) removed from
 * the environment and those of @a env set. With @a fresh_node the child
 * gets a node of its own (HLSIM_ROOT in a fresh directory, removed after),
 * else it shares this process's.
 */
child_result run_test_in_child(const std::string &name, const env_t &env,
                               bool fresh_node = true,
                               const char *const *scrub = NULL);

} // namespace gaudi_gtest

#endif

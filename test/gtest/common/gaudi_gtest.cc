/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Helpers shared by the project's gtest programs (see gaudi_gtest.h).
 */

#include "gaudi_gtest.h"

#include <gtest/gtest.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>


namespace gaudi_gtest {

int count_fds()
{
    DIR *dir = opendir("/proc/self/fd");
    int count = 0;

    if (dir == NULL) {
        return -1;
    }
    while (readdir(dir) != NULL) {
        ++count;
    }
    closedir(dir);
    return count - 3; /* ".", ".." and the dir's own fd */
}

void *hlsim_sym(const char *name)
{
    return dlsym(RTLD_DEFAULT, name);
}

bool hlsim_loaded()
{
    return hlsim_sym("hlsim_root") != NULL;
}

/* An emulator entry point; a missing one fails the current test */
template <typename F> static F hlsim_api(const char *name)
{
    void *sym = hlsim_sym(name);

    if (sym == NULL) {
        ADD_FAILURE() << "emulator symbol " << name << " not found"
                      << " (run with LD_PRELOAD=libhlsim.so)";
    }
    return (F)sym;
}

int hlsim_fault_add(const char *op, unsigned nth, int err)
{
    auto f = hlsim_api<int (*)(const char*, unsigned, int)>(
            "hlsim_fault_add");
    return f ? f(op, nth, err) : -ENOSYS;
}

int hlsim_fault_clear()
{
    auto f = hlsim_api<int (*)(void)>("hlsim_fault_clear");
    return f ? f() : -ENOSYS;
}

int64_t hlsim_counter(hlsim_counter_t counter, int dev)
{
    auto f = hlsim_api<int64_t (*)(hlsim_counter_t, int)>(
            "hlsim_get_counter");
    return f ? f(counter, dev) : -1;
}

int hlsim_set_device_status(int dev, unsigned status)
{
    auto f = hlsim_api<int (*)(int, unsigned)>("hlsim_set_device_status");
    return f ? f(dev, status) : -ENOSYS;
}

int hlsim_reset_device(int dev, unsigned ms)
{
    auto f = hlsim_api<int (*)(int, unsigned)>("hlsim_reset_device");
    return f ? f(dev, ms) : -ENOSYS;
}

std::string hlsim_preload(const char *current)
{
    const char *lib = getenv("HLSIM_LIB");
    std::string value(current ? current : "");

    if (value.find("libhlsim") != std::string::npos) {
        return value;
    }
    if (lib == NULL) {
        lib = GAUDI_GTEST_HLSIM_LIB;
    }
    return value.empty() ? lib : (std::string(lib) + ":" + value);
}

void hlsim_setup(char **argv, const char *name)
{
    std::string root = std::string("/tmp/") + name + ".XXXXXX";

    if (!hlsim_loaded()) {
        setenv("LD_PRELOAD", hlsim_preload(getenv("LD_PRELOAD")).c_str(), 1);
        execv("/proc/self/exe", argv);
        perror("execv");
        exit(1);
    }
    if (getenv("HLSIM_ROOT") == NULL) {
        if (mkdtemp(&root[0]) == NULL) {
            perror("mkdtemp");
            exit(1);
        }
        setenv("HLSIM_ROOT", root.c_str(), 1);
    }
}

} // namespace gaudi_gtest

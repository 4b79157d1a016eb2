/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * Helpers shared by the project's gtest programs (see gaudi_gtest.h).
 */

#include "gaudi_gtest.h"

#include <uct/gaudi/hl/gaudi_hl_abi.h>

#include <gtest/gtest.h>

extern "C" {
#include <ucs/config/global_opts.h>
#include <ucs/debug/log.h>
}

#include <fstream>
#include <sstream>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;


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

int hlsim_admin_reset(int dev)
{
    int rc = hlsim_set_device_status(dev, GAUDI_HL_DEVICE_STATUS_IN_RESET);

    return rc ? rc :
           hlsim_set_device_status(dev, GAUDI_HL_DEVICE_STATUS_OPERATIONAL);
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

std::vector<log_capture::entry> log_capture::entries;
ucs_log_level_t log_capture::max_level = UCS_LOG_LEVEL_WARN;

static ucs_log_func_rc_t
log_capture_handler(const char *file, unsigned line, const char *function,
                    ucs_log_level_t level,
                    const ucs_log_component_config_t *comp_conf,
                    const char *message, va_list ap)
{
    char buf[1024];
    va_list aq;

    if (level > log_capture::max_level) {
        return UCS_LOG_FUNC_RC_CONTINUE;
    }

    va_copy(aq, ap);
    vsnprintf(buf, sizeof(buf), message, aq);
    va_end(aq);
    log_capture::entries.push_back({level, buf});
    return UCS_LOG_FUNC_RC_STOP;
}

log_capture::log_capture(ucs_log_level_t level)
{
    m_saved   = ucs_global_opts.log_component.log_level;
    max_level = level;
    if (m_saved < level) {
        ucs_global_opts.log_component.log_level = level;
    }
    entries.clear();
    ucs_log_push_handler(log_capture_handler);
}

log_capture::~log_capture()
{
    ucs_log_pop_handler();
    ucs_global_opts.log_component.log_level = m_saved;
    max_level = UCS_LOG_LEVEL_WARN;
}

std::string log_capture::find(const std::vector<std::string> &words) const
{
    for (auto &e : entries) {
        bool all = true;
        for (auto &w : words) {
            all = all && (e.text.find(w) != std::string::npos);
        }
        if (all) {
            return e.text;
        }
    }
    return "";
}

size_t log_capture::count(ucs_log_level_t max_level) const
{
    size_t n = 0;

    for (auto &e : entries) {
        n += (e.level <= max_level);
    }
    return n;
}

std::string log_capture::dump() const
{
    std::string s;

    for (auto &e : entries) {
        s += "\n  [" + std::to_string(e.level) + "] " + e.text;
    }
    return s.empty() ? "\n  (nothing logged)" : s;
}

std::string current_test()
{
    const ::testing::TestInfo *info =
            ::testing::UnitTest::GetInstance()->current_test_info();

    return std::string(info->test_suite_name()) + "." + info->name();
}

bool child_result::passed() const
{
    return WIFEXITED(status) && (WEXITSTATUS(status) == 0) && ran;
}

static bool child_env_dropped(const std::string &var, const env_t &env,
                              const char *const *scrub)
{
    std::string name = var.substr(0, var.find('='));

    if ((name == "LD_PRELOAD") || (env.find(name) != env.end())) {
        return true;
    }
    for (; (scrub != NULL) && (*scrub != NULL); ++scrub) {
        if (!name.compare(0, strlen(*scrub), *scrub)) {
            return true;
        }
    }
    return false;
}

/* The child's environment: this one's, less what is dropped, plus @a env
 * and the emulator in front of LD_PRELOAD */
static std::vector<std::string>
child_environment(const env_t &env, const char *const *scrub)
{
    std::vector<std::string> vars;

    for (char **e = environ; *e != NULL; ++e) {
        if (!child_env_dropped(*e, env, scrub)) {
            vars.push_back(*e);
        }
    }
    vars.push_back("LD_PRELOAD=" + hlsim_preload(getenv("LD_PRELOAD")));
    for (auto &kv : env) {
        vars.push_back(kv.first + "=" + kv.second);
    }
    return vars;
}

static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    return remove(path);
}

/* fork and exec this program filtered to @a name; its output to @a out */
static pid_t child_start(const std::string &name,
                         std::vector<std::string> &vars,
                         const std::string &out)
{
    std::string self = "/proc/self/exe", filter = "--gtest_filter=" + name;
    std::vector<char*> argv = { &self[0], &filter[0], NULL }, envp;
    pid_t pid;
    int fd;

    for (auto &v : vars) {
        envp.push_back(&v[0]);
    }
    envp.push_back(NULL);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execve(self.c_str(), argv.data(), envp.data());
        _exit(127);
    }
    return pid;
}

child_result run_test_in_child(const std::string &name, const env_t &env,
                               bool fresh_node, const char *const *scrub)
{
    char dir[] = "/tmp/gaudi_gtest.XXXXXX";
    std::vector<std::string> vars;
    std::stringstream text;
    env_t all = env;
    child_result r;
    pid_t pid;

    if (mkdtemp(dir) == NULL) {
        ADD_FAILURE() << "mkdtemp: " << strerror(errno);
        return r;
    }
    if (fresh_node) {
        all["HLSIM_ROOT"] = std::string(dir) + "/node";
    }
    vars = child_environment(all, scrub);

    pid = child_start(name, vars, std::string(dir) + "/output");
    if (pid < 0) {
        ADD_FAILURE() << "fork: " << strerror(errno);
    } else if (waitpid(pid, &r.status, 0) != pid) {
        ADD_FAILURE() << "waitpid: " << strerror(errno);
    }

    text << std::ifstream(std::string(dir) + "/output").rdbuf();
    r.output  = text.str();
    r.skipped = r.output.find("[  SKIPPED ] " + name) != std::string::npos;
    r.ran     = r.skipped ||
                (r.output.find("[       OK ] " + name) != std::string::npos);
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return r;
}

} // namespace gaudi_gtest

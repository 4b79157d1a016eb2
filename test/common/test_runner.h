/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The runner of the emulators' own C tests (test/emu/hlsim/test_hlsim.c,
 * test/emu/synsim/test_synsim.c): every test runs in a forked child on a fresh
 * emulated node (its own HLSIM_ROOT) with the environment it names; a
 * failed CHECK reports its reason to the runner through a pipe. Prints
 * "PASS name" / "FAIL name: why" and finally "N passed, N failed".
 */

#ifndef GAUDI_TEST_RUNNER_H_
#define GAUDI_TEST_RUNNER_H_

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>


typedef struct {
    const char *name;
    void      (*fn)(void);
    const char *env;   /* "K=V K=V" */
} test_t;


/* How a program's children start: variables of the caller's environment
 * that a test must not inherit (NULL-terminated), then defaults ("K=V
 * ...") the test's own env may override */
typedef struct {
    const char *const *unset;
    const char        *defaults;
} test_env_t;


static int test_report_fd = -1;   /* child -> runner: failure reason */

/* Tell the runner why, then end the child with @a status */
static inline void test_report_exit(int status, const char *fmt, va_list ap)
    __attribute__((noreturn));
static inline void test_report_exit(int status, const char *fmt, va_list ap)
{
    char buf[512];

    vsnprintf(buf, sizeof(buf), fmt, ap);
    if (write(test_report_fd, buf, strlen(buf)) < 0) {
        /* the runner reports the exit status anyway */
    }
    _exit(status);
}

static inline void test_fail(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));
static inline void test_fail(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    test_report_exit(1, fmt, ap);
}

/* The test cannot run here (reason said): reported as SKIP, not passed */
#define TEST_SKIP_STATUS 77
static inline void test_skip(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));
static inline void test_skip(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    test_report_exit(TEST_SKIP_STATUS, fmt, ap);
}

#define CHECK(_c, _fmt, ...) \
    do { \
        if (!(_c)) test_fail("line %d: " _fmt, __LINE__, ##__VA_ARGS__); \
    } while (0)

/* An emulator's control function, through dlsym: no link dependency */
static inline void *test_sym(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);

    CHECK(p != NULL, "symbol %s missing: is libhlsim.so preloaded?", name);
    return p;
}
#define API(_name) ((__typeof__(&_name))test_sym(#_name))

/* putenv every "K=V" of @a list */
static inline void test_putenv_list(const char *list)
{
    char env[512], *tok, *save;

    snprintf(env, sizeof(env), "%s", list);
    for (tok = strtok_r(env, " ", &save); tok;
         tok = strtok_r(NULL, " ", &save)) {
        putenv(strdup(tok));
    }
}

/* Run test @a idx in a child; 1 if it passed, 2 if skipped */
static inline int test_run_one(const test_t *t, const char *base, int idx,
                               const test_env_t *env)
{
    char    root[1024], reason[512] = "";
    int     pfd[2], st, i;
    ssize_t n;
    pid_t   pid;

    snprintf(root, sizeof(root), "%s/t%02d-%s", base, idx, t->name);
    if (pipe(pfd)) {
        return 0;
    }
    pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        test_report_fd = pfd[1];
        setenv("HLSIM_ROOT", root, 1);
        for (i = 0; env->unset[i] != NULL; i++) {
            unsetenv(env->unset[i]);
        }
        test_putenv_list(env->defaults);
        test_putenv_list(t->env);
        alarm(60);
        t->fn();
        _exit(0);
    }
    close(pfd[1]);
    n = read(pfd[0], reason, sizeof(reason) - 1);
    reason[n > 0 ? n : 0] = '\0';
    close(pfd[0]);
    waitpid(pid, &st, 0);
    if (WIFEXITED(st) && (WEXITSTATUS(st) == 0) && !reason[0]) {
        printf("PASS %s\n", t->name);
        return 1;
    }
    if (WIFEXITED(st) && (WEXITSTATUS(st) == TEST_SKIP_STATUS) && reason[0]) {
        printf("SKIP %s: %s\n", t->name, reason);
        return 2;
    }
    if (!reason[0]) {
        snprintf(reason, sizeof(reason), "%s %d", WIFSIGNALED(st) ?
                 "killed by signal" : "exit status", WIFSIGNALED(st) ?
                 WTERMSIG(st) : WEXITSTATUS(st));
    }
    printf("FAIL %s: %s\n", t->name, reason);
    return 0;
}

/*
 * Run the tests whose name contains one of the arguments (all without
 * any) under a new directory made from the mkdtemp template @a base (its
 * last component under $TEST_RUNNER_DIR if set); removed at the end
 * unless HLSIM_TEST_KEEP is set; the exit status of the program
 */
static inline int test_main(const test_t *tests, unsigned count, int argc,
                            char **argv, char *base, const test_env_t *env)
{
    static char dirbase[256];
    unsigned i, pass = 0, failed = 0, skipped = 0;
    char     cmd[600];
    const char *dir = getenv("TEST_RUNNER_DIR");
    int      a, sel;

    /* a suite that reads the nodes afterwards (their hlsim totals) puts
     * them in a directory of its own */
    if ((dir != NULL) && (*dir != '\0')) {
        snprintf(dirbase, sizeof(dirbase), "%s/%s", dir,
                 strrchr(base, '/') ? strrchr(base, '/') + 1 : base);
        base = dirbase;
    }
    if (mkdtemp(base) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    for (i = 0; i < count; i++) {
        sel = (argc < 2);
        for (a = 1; a < argc; a++) {
            sel |= strstr(tests[i].name, argv[a]) != NULL;
        }
        if (!sel) {
            continue;
        }
        switch (test_run_one(&tests[i], base, i, env)) {
        case 1:
            pass++;
            break;
        case 2:
            skipped++;
            break;
        default:
            failed++;
            break;
        }
    }
    if (!getenv("HLSIM_TEST_KEEP")) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
        if (system(cmd)) {
            fprintf(stderr, "cannot remove %s\n", base);
        }
    }
    if (skipped) {
        printf("%u skipped\n", skipped);
    }
    printf("%u passed, %u failed\n", pass, failed);
    return failed ? 1 : 0;
}

#endif

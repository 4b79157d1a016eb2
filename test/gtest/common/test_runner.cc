/*
 * Copyright (C) ucx-gaudi contributors. See COPYING for license.
 *
 * The child-process runner of gaudi_gtest.h, tested on itself: a child
 * that did not run its test, or failed it, is no pass; a skip and the
 * environment reach the child as asked. The child's side is child_body,
 * which only runs when GAUDI_RUNNER_CASE says what to do.
 */

#include "common/gaudi_gtest.h"

#include <gtest/gtest.h>

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define GAUDI_RUNNER_CASE "GAUDI_RUNNER_CASE"
#define GAUDI_RUNNER_DROP "GAUDI_RUNNER_DROPPED"

static const char *const runner_scrub[] = { GAUDI_RUNNER_DROP, NULL };

static gaudi_gtest::child_result run_case(const char *what)
{
    return gaudi_gtest::run_test_in_child("gaudi_runner.child_body",
                                          {{GAUDI_RUNNER_CASE, what}}, true,
                                          runner_scrub);
}

TEST(gaudi_runner, child_body)
{
    const char *what = getenv(GAUDI_RUNNER_CASE);
    const char *root = getenv("HLSIM_ROOT");

    if (what == NULL) {
        GTEST_SKIP() << "the child's side of gaudi_runner.*";
    }
    if (!strcmp(what, "fail")) {
        ADD_FAILURE() << "failing on purpose";
    } else if (!strcmp(what, "skip")) {
        GTEST_SKIP() << "skipping on purpose";
    } else if (!strcmp(what, "env")) {
        EXPECT_EQ(NULL, getenv(GAUDI_RUNNER_DROP));
        ASSERT_NE((const char*)NULL, root);
        EXPECT_EQ(0, strncmp(root, "/tmp/gaudi_gtest.", 17)) << root;
        EXPECT_TRUE(gaudi_gtest::hlsim_loaded());
    }
}

TEST(gaudi_runner, no_match_is_no_pass)
{
    gaudi_gtest::child_result r = gaudi_gtest::run_test_in_child(
            "gaudi_runner.no_such_test", {}, true);

    /* gtest exits 0 when its filter matches nothing */
    EXPECT_TRUE(WIFEXITED(r.status) && (WEXITSTATUS(r.status) == 0))
        << r.output;
    EXPECT_FALSE(r.ran);
    EXPECT_FALSE(r.passed());
}

TEST(gaudi_runner, failure_is_no_pass)
{
    gaudi_gtest::child_result r = run_case("fail");

    EXPECT_FALSE(r.passed());
    EXPECT_FALSE(r.ran);
    EXPECT_NE(std::string::npos, r.output.find("failing on purpose"))
        << r.output;
}

TEST(gaudi_runner, pass_and_skip)
{
    gaudi_gtest::child_result r = run_case("pass");

    EXPECT_TRUE(r.passed() && !r.skipped) << r.output;
    r = run_case("skip");
    EXPECT_TRUE(r.passed() && r.skipped) << r.output;
}

TEST(gaudi_runner, environment)
{
    setenv(GAUDI_RUNNER_DROP, "1", 1);
    gaudi_gtest::child_result r = run_case("env");
    unsetenv(GAUDI_RUNNER_DROP);

    EXPECT_TRUE(r.passed() && !r.skipped) << r.output;
}

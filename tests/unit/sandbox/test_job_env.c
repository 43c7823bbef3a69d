/* A job's environment (util/job_env.h): the fixed base, layers replacing
 * earlier keys, nothing of the host's; its trip through a descriptor to
 * `loom confine --env-fd`; and the confinement spec that gives the helper
 * an empty environment of its own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../check.h"
#include "util/job_env.h"
#include "util/job_sandbox.h"

static size_t count(char *const *env)
{
    size_t n = 0;
    while (env && env[n])
        n++;
    return n;
}

static void test_build(void)
{
    setenv("ONLY_IN_THE_HOST", "1", 1);
    char *job[] = {"DATA_DIR=/d", "PATH=/first", NULL}, *msd[] = {"PATH=/mine", "K=v=w", NULL};
    char *const *const layers[] = {job, msd};
    char **env = job_env_build("/execs/x", layers, 2);
    CHECK(env != NULL);
    CHECK(job_env_get(env, "ONLY_IN_THE_HOST") == NULL);
    CHECK_STR_EQ(job_env_get(env, "HOME"), "/execs/x");
    CHECK_STR_EQ(job_env_get(env, "LANG"), JOB_ENV_LANG);
    CHECK_STR_EQ(job_env_get(env, "PATH"), "/mine"); /* the later layer wins, once */
    CHECK_STR_EQ(job_env_get(env, "K"), "v=w");
    size_t paths = 0;
    for (char **e = env; *e; e++)
        paths += !strncmp(*e, "PATH=", 5);
    CHECK(paths == 1);
    job_env_free(env);

    env = job_env_build("/h", NULL, 0);
    CHECK_STR_EQ(job_env_get(env, "PATH"), JOB_ENV_PATH);
    char sh[4096];
    job_env_which(env, "sh", sh, sizeof sh);
    CHECK(sh[0] == '/');
    job_env_which(env, "no-such-program-anywhere", sh, sizeof sh);
    CHECK_STR_EQ(sh, "");
    job_env_free(env);
}

static void test_admin_path(void)
{
    CHECK_OK(job_env_path_valid("/opt/x:/usr/bin"));
    loom_error *e = job_env_path_valid("bin:/usr/bin");
    CHECK(loom_err_code(e) == LOOM_E_INVALID);
    CHECK_CONTAINS(loom_err_message(e), "\"bin\"");
    loom_err_free(e);
    const char *refused[] = {"/a::/b", ""};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        e = job_env_path_valid(refused[i]);
        CHECK_MSG(loom_err_code(e) == LOOM_E_INVALID, "\"%s\"", refused[i]);
        loom_err_free(e);
    }
    setenv("LOOM_JOB_PATH", "/opt/x:/usr/bin", 1);
    char **env = job_env_build("/h", NULL, 0);
    CHECK_STR_EQ(job_env_get(env, "PATH"), "/opt/x:/usr/bin");
    job_env_free(env);
    unsetenv("LOOM_JOB_PATH");
    CHECK_STR_EQ(job_env_path(), JOB_ENV_PATH);
}

static void test_fd_round_trip(void)
{
    char *env[] = {"A=1", "EMPTY=", "LD_PRELOAD=./x.so", NULL};
    int fd = job_env_to_fd(env);
    CHECK(fd >= 0);
    char *block = NULL, **back = NULL;
    CHECK(job_env_from_fd(fd, &block, &back) == 0);
    CHECK(count(back) == 3);
    CHECK_STR_EQ(back[0], "A=1");
    CHECK_STR_EQ(back[1], "EMPTY=");
    CHECK_STR_EQ(back[2], "LD_PRELOAD=./x.so");
    free(back);
    free(block);
    close(fd);

    /* Past the bound: refused, not cut. */
    size_t big = JOB_ENV_MAX_BYTES + 16;
    char *huge = malloc(big);
    CHECK(huge != NULL);
    memset(huge, 'x', big - 1);
    memcpy(huge, "H=", 2);
    huge[big - 1] = 0;
    char *over[] = {huge, NULL};
    fd = job_env_to_fd(over);
    CHECK(fd >= 0);
    CHECK(job_env_from_fd(fd, &block, &back) == -1 && errno == E2BIG);
    close(fd);
    free(huge);
}

static void test_confine_spec(void)
{
    job_sandbox_config cfg = {.loom_binary = "/opt/loom/bin/loom"};
    job_sandbox_configure(&cfg);
    char *argv[] = {"/bin/sh", "run.sh", NULL}, *env[] = {"LD_PRELOAD=./evil.so", NULL};
    spawn_spec spec = {.argv = argv, .envp = env};
    job_sandbox_job box = {.user = "alice", .exec_dir = "/execs/a"};
    job_sandbox_held held;
    loom_error *e = job_sandbox_confine_spec(&box, &spec, &held);
    CHECK(e == NULL);
    loom_err_free(e);
    CHECK(count(spec.envp) == 0); /* the privileged helper: nothing of the job's */
    CHECK(spec.pass_fd == held.env_fd && spec.pass_fd >= 0);
    int sep = -1, fd_flag = -1;
    for (int i = 0; spec.argv[i]; i++) {
        if (sep < 0 && !strcmp(spec.argv[i], "--"))
            sep = i;
        if (!strcmp(spec.argv[i], "--env-fd"))
            fd_flag = i;
    }
    CHECK(fd_flag >= 0 && fd_flag < sep);
    CHECK_STR_EQ(spec.argv[sep + 1], "/bin/sh");
    char *block = NULL, **back = NULL;
    CHECK(job_env_from_fd(held.env_fd, &block, &back) == 0);
    CHECK(count(back) == 1 && !strcmp(back[0], "LD_PRELOAD=./evil.so"));
    free(back);
    free(block);
    job_sandbox_release(&held);

    /* Confinement off: the spec is left as it was. */
    job_sandbox_configure(NULL);
    spawn_spec plain = {.argv = argv, .envp = env};
    CHECK(job_sandbox_confine_spec(&box, &plain, &held) == NULL);
    CHECK(plain.argv == argv && plain.envp == env && plain.pass_fd == 0);
    job_sandbox_release(&held);
}

int main(void)
{
    test_build();
    test_admin_path();
    test_fd_round_trip();
    test_confine_spec();
    return CHECK_DONE();
}

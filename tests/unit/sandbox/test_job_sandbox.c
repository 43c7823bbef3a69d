/* What a job gets: the `loom confine` line built for it (its exec folder,
 * data, account from the user's id), the state home's modes, and the
 * start-up line that says whether isolation is complete. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../check.h"
#include "util/fs.h"
#include "util/job_sandbox.h"
#include "util/sandbox.h"

static loom_error *user_id(void *ctx, const char *user, int64_t *id)
{
    (void)ctx;
    if (!strcmp(user, "alice"))
        *id = 3;
    else if (!strcmp(user, "zed"))
        *id = 50;
    else
        return loom_err(LOOM_E_NOT_FOUND, "no user %s", user);
    return NULL;
}

/* The index of the first "flag value" pair in argv, or -1. */
static int pair_at(char **argv, const char *flag, const char *value)
{
    for (int i = 0; argv[i] && argv[i + 1]; i++)
        if (!strcmp(argv[i], flag) && !strcmp(argv[i + 1], value))
            return i;
    return -1;
}

static void test_wrap(void)
{
    char *job_argv[] = {"python3", "train.py", "--lr", "0.1", NULL};
    job_sandbox_job job = {.user = "alice", .exec_dir = "/h/execs/alice-1", .data_dir = "/data"};
    char **out = (char **)1;
    job_sandbox_configure(NULL);
    CHECK(job_sandbox_wrap(&job, job_argv, &out) == NULL && out == NULL);

    job_sandbox_config cfg = {.loom_binary = "/opt/loom/bin/loom", .install_dir = "/opt/loom",
                              .accounts = 1, .uid_first = 200000, .uid_last = 200009,
                              .user_id = user_id};
    job_sandbox_configure(&cfg);
    const char *more[] = {"/h/plugins/fw.so", NULL};
    job.read = more;
    CHECK(job_sandbox_wrap(&job, job_argv, &out) == NULL && out != NULL);
    if (out) {
        CHECK_STR_EQ(out[0], "/opt/loom/bin/loom");
        CHECK_STR_EQ(out[1], "confine");
        CHECK(pair_at(out, "--write", "/h/execs/alice-1") > 0);
        CHECK(pair_at(out, "--read", "/data") > 0);
        CHECK(pair_at(out, "--read", "/opt/loom") > 0);
        CHECK(pair_at(out, "--read", "/h/plugins/fw.so") > 0);
        CHECK(pair_at(out, "--tmpdir", "/h/execs/alice-1/tmp") > 0);
        CHECK(pair_at(out, "--uid", "200003") > 0);
        CHECK(pair_at(out, "--gid", "200003") > 0);
        int sep = pair_at(out, "--", "python3");
        CHECK(sep > 0);
        for (int i = 0; sep > 0 && job_argv[i]; i++)
            CHECK_STR_EQ(out[sep + 1 + i], job_argv[i]);
        CHECK(sep > 0 && out[sep + 5] == NULL);
        /* Nothing but the exec folder is writable. */
        int writes = 0;
        for (int i = 0; out[i]; i++)
            writes += !strcmp(out[i], "--write");
        CHECK(writes == 1);
    }
    job_sandbox_argv_free(out);

    job.user = "zed"; /* id 50: beyond 200000-200009 */
    loom_error *e = job_sandbox_wrap(&job, job_argv, &out);
    CHECK(e && loom_err_code(e) == LOOM_E_LIMIT && out == NULL);
    CHECK_CONTAINS(e ? loom_err_message(e) : NULL, "200000-200009");
    CHECK_CONTAINS(e ? loom_err_message(e) : NULL, "zed");
    loom_err_free(e);
    job.user = "ghost";
    e = job_sandbox_wrap(&job, job_argv, &out);
    CHECK(e && out == NULL);
    CHECK_CONTAINS(e ? loom_err_message(e) : NULL, "ghost");
    loom_err_free(e);

    cfg.accounts = 0;
    job_sandbox_configure(&cfg);
    job.user = "ghost"; /* no accounts: no lookup */
    CHECK(job_sandbox_wrap(&job, job_argv, &out) == NULL && out != NULL);
    CHECK(out && pair_at(out, "--uid", "200003") < 0);
    job_sandbox_argv_free(out);
    job_sandbox_configure(NULL);
}

static void test_install_dir(void)
{
    char dir[4096], exe[4096];
    job_sandbox_install_dir(dir, sizeof dir);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    /* This test sits in BUILD/bin/: the installed files are BUILD. */
    size_t len = strlen(dir);
    CHECK_MSG(strncmp(exe, dir, len) == 0 && !strncmp(exe + len, "/bin/", 5), "%s for %s", dir,
              exe);
}

static mode_t mode_of(const char *home, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", home, name);
    struct stat st;
    return stat(path, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

static void touch(const char *home, const char *name, mode_t mode)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", home, name);
    close(open(path, O_WRONLY | O_CREAT, mode));
    chmod(path, mode);
}

static void test_secure_home(void)
{
    char home[] = "/tmp/loom-home-XXXXXX";
    CHECK(mkdtemp(home) != NULL);
    chmod(home, 0755);
    char path[512];
    snprintf(path, sizeof path, "%s/plugins", home);
    CHECK_OK(fs_mkdir_p(path));
    snprintf(path, sizeof path, "%s/execs", home);
    CHECK_OK(fs_mkdir_p(path));
    touch(home, "loom.db", 0644);
    touch(home, "loom.log", 0644);
    touch(home, "credentials", 0644);
    touch(home, "plugins/fw.so", 0600);
    loom_error *e = job_sandbox_secure_home(home, NULL, 1);
    CHECK(e == NULL);
    loom_err_free(e);
    CHECK(mode_of(home, ".") == 0711);
    CHECK(mode_of(home, "loom.db") == 0600);
    CHECK(mode_of(home, "loom.log") == 0600);
    CHECK(mode_of(home, "credentials") == 0600);
    CHECK(mode_of(home, "plugins") == 0711);
    CHECK(mode_of(home, "execs") == 0711);
    CHECK(mode_of(home, "plugins/fw.so") == 0644);
    e = job_sandbox_secure_home(home, NULL, 0);
    CHECK(e == NULL && mode_of(home, ".") == 0700);
    loom_err_free(e);
    /* A host that is not root, with root's credentials file in its home:
     * the file keeps its mode (a warning), the host still starts. */
    if (geteuid() == 0) {
        touch(home, "credentials", 0644);
        CHECK(chown(home, 200500, 200500) == 0);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            if (setgid(200500) != 0 || setuid(200500) != 0)
                _exit(100);
            loom_error *as_user = job_sandbox_secure_home(home, NULL, 0);
            _exit(as_user == NULL && mode_of(home, ".") == 0700 ? 0 : 1);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CHECK(mode_of(home, "credentials") == 0644);
        CHECK(chown(home, 0, 0) == 0);
    }
    e = job_sandbox_secure_home("/nonexistent/loom-home", NULL, 0);
    CHECK_CONTAINS(e ? loom_err_message(e) : NULL, "/nonexistent/loom-home");
    loom_err_free(e);

    /* The start-up line. */
    char line[512];
    int abi = sandbox_landlock_abi();
    job_sandbox_config cfg = {.accounts = geteuid() == 0, .uid_first = 200000,
                              .uid_last = 299999, .user_id = user_id};
    job_sandbox_configure(&cfg);
    int complete = job_sandbox_describe(home, line, sizeof line);
    printf("%s\n", line);
    CHECK(complete == (abi > 0));
    CHECK_CONTAINS(line, abi > 0 ? "Landlock ABI" : "no Landlock");
    if (geteuid() == 0)
        CHECK_CONTAINS(line, "a uid per user from 200000-299999");
    /* A home jobs may read anyway (beneath /usr) is not isolated. */
    CHECK(job_sandbox_describe("/usr/share", line, sizeof line) == 0);
    if (abi > 0)
        CHECK_CONTAINS(line, "beneath /usr");
    cfg.accounts = 0;
    job_sandbox_configure(&cfg);
    CHECK(job_sandbox_describe(home, line, sizeof line) == (abi > 0 && geteuid() != 0));
    /* Jobs under their own uid cannot pass a 0700 folder above the home. */
    char inner[600];
    chmod(home, 0755);
    snprintf(inner, sizeof inner, "%s/closed/home", home);
    CHECK_OK(fs_mkdir_p(inner));
    CHECK_OK(job_sandbox_reachable(inner));
    snprintf(inner, sizeof inner, "%s/closed", home);
    chmod(inner, 0700);
    snprintf(inner, sizeof inner, "%s/closed/home", home);
    loom_error *unreachable = job_sandbox_reachable(inner);
    CHECK(loom_err_code(unreachable) == LOOM_E_FORBIDDEN);
    CHECK_CONTAINS(loom_err_message(unreachable), "/closed (mode 0700)");
    loom_err_free(unreachable);
    job_sandbox_configure(NULL);
    CHECK_OK(fs_rm_rf(home));
}

int main(void)
{
    test_wrap();
    test_install_dir();
    test_secure_home();
    return CHECK_DONE();
}

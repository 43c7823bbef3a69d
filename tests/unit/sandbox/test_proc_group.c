/* A container of processes per child (host/util/proc_group.c): a
 * supervised child (how plugin-host and kernel processes start) that
 * detaches a grandchild with setsid is ended with it; a host that starts
 * again ends what a run that crashed left; limits are applied; without
 * cgroupfs nothing fails and the start-up line says so. Needs root and a
 * writable cgroupfs for the first parts (skipped with 77 otherwise). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../check.h"
#include "../../wait.h"
#include "util/fs.h"
#include "util/proc_group.h"
#include "util/spawn.h"
#include "util/supervise.h"

/* Whether pid runs (a zombie reparented to a PID 1 that reaps slowly
 * counts as gone). */
static int running(pid_t pid)
{
    char path[64], stat[256] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = 0;
    const char *close_paren = strrchr(stat, ')');
    return close_paren && close_paren[1] == ' ' && close_paren[2] != 'Z' && close_paren[2] != 'X';
}

/* Waits up to 5 s for pid to stop running. */
static int ends(pid_t pid)
{
    WAIT_UNTIL(!running(pid), 5000);
    return !running(pid);
}

/* The pid a child wrote into `path`, once the line is whole; 0 before. */
static pid_t pid_in(const char *path)
{
    char *text; /* not written yet: 0 */
    loom_err_free(fs_read_file(path, 64, &text, NULL));
    pid_t pid = text && strchr(text, '\n') ? (pid_t)atoi(text) : 0;
    free(text);
    return pid;
}

/* The pid a child wrote into `path` (waits up to 5 s). */
static pid_t pid_written(const char *path)
{
    pid_t pid = 0;
    WAIT_UNTIL((pid = pid_in(path)) > 0, 5000);
    return pid;
}

/* A supervised child that detaches a grandchild, records its pid and
 * waits; supervise_kill ends both. */
static void test_supervised_detached(const char *dir)
{
    char pidfile[512], script[1024];
    snprintf(pidfile, sizeof pidfile, "%s/grandchild", dir);
    snprintf(script, sizeof script,
             "setsid sh -c 'echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 1000' "
             "</dev/null >/dev/null 2>&1 & exec sleep 1000",
             pidfile, pidfile, pidfile);
    char *argv[] = {"/bin/sh", "-c", script, NULL};
    supervised child = {.pid = -1, .fd = -1, .kind = "plugin-host",
                        .limits = {.max_procs = 64, .max_memory_bytes = 256u << 20}};
    loom_error *e = supervise_start(&child, argv, NULL);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    CHECK(child.group.active);
    pid_t grandchild = pid_written(pidfile);
    CHECK(grandchild > 0);
    CHECK(proc_group_count(&child.group) >= 2);
    CHECK(child.group.limits.max_procs == 64);
    supervise_kill(&child, NULL, 0);
    CHECK(!child.group.active);
    CHECK_MSG(grandchild > 0 && ends(grandchild), "the detached grandchild %d outlived its parent",
              (int)grandchild);
    if (grandchild > 0 && running(grandchild))
        kill(grandchild, SIGKILL);
}

/* A group a host left (it was killed) is ended when the host starts again. */
static void test_sweep_on_start(const char *home)
{
    proc_group g;
    loom_error *e = proc_group_create(&g, "exec-left", NULL);
    CHECK(e == NULL);
    loom_err_free(e);
    char *argv[] = {"/bin/sleep", "1000", NULL};
    char *envp[] = {NULL};
    spawn_spec spec = {.argv = argv, .envp = envp, .pgid = 0, .group = &g};
    pid_t pid = -1;
    e = spawn_process(&spec, &pid);
    CHECK(e == NULL);
    loom_err_free(e);
    CHECK(proc_group_count(&g) == 1);
    /* What a restart does: no teardown, the same home set up again. */
    int ended = proc_group_setup(home, NULL);
    CHECK_MSG(ended >= 1, "ended %d", ended);
    CHECK(ends(pid));
    if (running(pid))
        kill(pid, SIGKILL);
    waitpid(pid, NULL, 0); /* ours to reap in this test */
    g.active = 0; /* its folder went with the sweep */
    for (int h = 0; h < PROC_GROUP_NHIER; h++)
        if (g.procs_fd[h] >= 0)
            close(g.procs_fd[h]);
}

/* Without cgroupfs: inactive groups, children still start, and the line
 * says what is missing. */
static void test_without_cgroups(const char *home, const char *dir)
{
    char root[512], line[512];
    snprintf(root, sizeof root, "%s/no-cgroupfs", dir);
    CHECK(proc_group_setup(home, root) == 0);
    CHECK(!proc_group_available());
    proc_group_describe(line, sizeof line);
    CHECK_CONTAINS(line, "processes: no cgroups");
    CHECK_CONTAINS(line, "can outlive it");
    proc_group g;
    loom_error *e = proc_group_create(&g, "exec-x", NULL);
    CHECK(e == NULL && !g.active);
    loom_err_free(e);
    char *argv[] = {"/bin/true", NULL};
    char *envp[] = {NULL};
    spawn_spec spec = {.argv = argv, .envp = envp, .pgid = -1, .group = &g};
    pid_t pid = -1;
    e = spawn_process(&spec, &pid);
    CHECK(e == NULL && pid > 0);
    loom_err_free(e);
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    proc_group_destroy(&g);
}

int main(void)
{
    char dir[] = "/tmp/loom-proc-group-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char home[600];
    snprintf(home, sizeof home, "%s/home", dir);
    CHECK_OK(fs_mkdir_p(home));
    int cgroups = geteuid() == 0 && (access("/sys/fs/cgroup/unified", W_OK) == 0 ||
                                     access("/sys/fs/cgroup/pids", W_OK) == 0);
    if (cgroups) {
        proc_group_setup(home, NULL);
        CHECK(proc_group_available());
        char line[512];
        proc_group_describe(line, sizeof line);
        CHECK_CONTAINS(line, "processes: a cgroup per exec");
        test_supervised_detached(dir);
        test_sweep_on_start(home);
        proc_group_teardown();
        CHECK(!proc_group_available());
    } else {
        fprintf(stderr, "NOT TESTED: groups (needs root and a writable cgroupfs)\n");
    }
    test_without_cgroups(home, dir);
    CHECK_OK(fs_rm_rf(dir));
    return CHECK_DONE();
}

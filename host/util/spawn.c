/* util/spawn.c - see spawn.h. */
#include "util/spawn.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Opens path onto `target` in the child. */
static int child_open_onto(const char *path, int flags, int target)
{
    int fd = open(path, flags, 0644);
    if (fd < 0)
        return -1;
    if (fd != target && (dup2(fd, target) < 0 || close(fd) != 0))
        return -1;
    return 0;
}

/* The child's side of spawn_forked: only async-signal-safe calls (the host
 * has threads). It enters its group first, so nothing it runs, this code
 * included, is ever outside. A failure's errno goes up `report`. */
static void child_exec(const spawn_spec *spec, int pass, int report)
{
    if (proc_group_enter(spec->group) != 0)
        goto fail;
    struct rlimit fsize = {spec->max_file_bytes, spec->max_file_bytes};
    if (spec->max_file_bytes && setrlimit(RLIMIT_FSIZE, &fsize) != 0)
        goto fail;
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL); /* SIGKILL, SIGSTOP and the gaps refuse: fine */
    if (spec->pgid >= 0 && setpgid(0, spec->pgid) != 0)
        goto fail;
    if (child_open_onto("/dev/null", O_RDONLY, 0) != 0)
        goto fail;
    if (spec->stdout_fd > 0 ? dup2(spec->stdout_fd, 1) < 0
        : spec->stdout_path ? child_open_onto(spec->stdout_path, O_WRONLY | O_CREAT | O_APPEND, 1)
                            : 0)
        goto fail;
    if (spec->stderr_fd > 0 ? dup2(spec->stderr_fd, 2) < 0
        : spec->stderr_path ? child_open_onto(spec->stderr_path, O_WRONLY | O_CREAT | O_APPEND, 2)
                            : 0)
        goto fail;
    if (pass > 0 && dup2(pass, SPAWN_PASS_FD) < 0)
        goto fail;
    if (spec->cwd && chdir(spec->cwd) != 0)
        goto fail;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execvpe(spec->argv[0], spec->argv, spec->envp);
fail:;
    int err = errno;
    ssize_t ignored = write(report, &err, sizeof err);
    (void)ignored;
    _exit(127);
}

/* fork and exec, for what posix_spawn cannot do before the first
 * instruction: entering a process group's cgroups, a file size limit.
 * Returns 0 or an errno. */
static int spawn_forked(const spawn_spec *spec, int pass, pid_t *pid)
{
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0)
        return errno;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* no host handler runs in the child */
    *pid = fork();
    if (*pid == 0)
        child_exec(spec, pass, report[1]);
    int rc = *pid < 0 ? errno : 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(report[1]);
    int child_err = 0;
    ssize_t n = *pid > 0 ? read(report[0], &child_err, sizeof child_err) : 0;
    while (n < 0 && errno == EINTR)
        n = read(report[0], &child_err, sizeof child_err);
    close(report[0]);
    if (n == (ssize_t)sizeof child_err) { /* it never ran the program */
        waitpid(*pid, NULL, 0);
        *pid = -1;
        rc = child_err ? child_err : EIO;
    }
    return rc;
}

loom_error *spawn_process(const spawn_spec *spec, pid_t *out)
{
    *out = -1;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (spec->pgid >= 0) {
        flags |= POSIX_SPAWN_SETPGROUP;
        posix_spawnattr_setpgroup(&attr, spec->pgid);
    }
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, flags);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (spec->stdout_fd > 0)
        posix_spawn_file_actions_adddup2(&fa, spec->stdout_fd, 1);
    else if (spec->stdout_path)
        posix_spawn_file_actions_addopen(&fa, 1, spec->stdout_path,
                                         O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (spec->stderr_fd > 0)
        posix_spawn_file_actions_adddup2(&fa, spec->stderr_fd, 2);
    else if (spec->stderr_path)
        posix_spawn_file_actions_addopen(&fa, 2, spec->stderr_path,
                                         O_WRONLY | O_CREAT | O_APPEND, 0644);
    /* dup2 onto itself would leave close-on-exec set: move it first. */
    int pass = spec->pass_fd == SPAWN_PASS_FD ? fcntl(spec->pass_fd, F_DUPFD_CLOEXEC, 10)
                                              : spec->pass_fd;
    if (pass > 0)
        posix_spawn_file_actions_adddup2(&fa, pass, SPAWN_PASS_FD);
    if (spec->cwd)
        posix_spawn_file_actions_addchdir_np(&fa, spec->cwd);
    pid_t pid = -1;
    int forked = (spec->group && spec->group->active) || spec->max_file_bytes;
    int rc = spec->pass_fd > 0 && pass < 0 ? errno
             : forked                      ? spawn_forked(spec, pass, &pid)
                      : posix_spawnp(&pid, spec->argv[0], &fa, &attr, spec->argv, spec->envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (pass > 0 && pass != spec->pass_fd)
        close(pass);
    if (rc != 0)
        /* A missing program is the submitter's to fix; the rest is ours. */
        return loom_err(rc == ENOENT || rc == EACCES || rc == ENOTDIR ? LOOM_E_INVALID
                                                                      : LOOM_E_INTERNAL,
                        "cannot start \"%s\"%s%s: %s", spec->argv[0], spec->cwd ? " in " : "",
                        spec->cwd ? spec->cwd : "", strerror(rc));
    *out = pid;
    return NULL;
}

/* util/spawn.c - see spawn.h. */
#include "util/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
    int rc = spec->pass_fd > 0 && pass < 0
                 ? errno
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

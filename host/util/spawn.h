/* util/spawn.h - starting a child process with its own environment, working
 * directory, output files and process group (posix_spawn, safe in a threaded
 * host). */
#ifndef LOOM_UTIL_SPAWN_H
#define LOOM_UTIL_SPAWN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"
#include "util/proc_group.h"

typedef struct spawn_spec {
    char *const *argv;       /* argv[0] is searched in PATH unless it has a '/' */
    char *const *envp;       /* the whole environment */
    const char *cwd;         /* NULL: inherit */
    const char *stdout_path; /* appended; NULL: inherit */
    const char *stderr_path; /* appended; NULL: inherit */
    int stdout_fd, stderr_fd; /* > 0: used instead of the paths (a pipe's write end) */
    pid_t pgid;              /* 0: a new group led by the child; -1: inherit */
    int pass_fd;             /* > 0: the child gets it as SPAWN_PASS_FD */
    /* An active group: the child enters it before anything else, so its
     * first instruction and all it starts are inside. NULL: none. */
    const proc_group *group;
    uint64_t max_file_bytes; /* > 0: RLIMIT_FSIZE for the child and its own */
} spawn_spec;

/* The descriptor a child finds spawn_spec.pass_fd at (the job's
 * environment for `loom confine --env-fd`). */
#define SPAWN_PASS_FD 3

/* Starts the child and sets *pid, or fails naming argv[0] and the reason
 * (*pid is then -1). */
loom_error *spawn_process(const spawn_spec *spec, pid_t *pid);

#endif

/* util/job_env.h - the environment a job's processes start with: a fixed,
 * documented base (PATH, LANG, HOME), then the layers the host and the
 * submitter add (the exec's folders, WMLA's variables, --msd-env, the
 * adapter's plan). Nothing of the host's own environment reaches a job. */
#ifndef LOOM_UTIL_JOB_ENV_H
#define LOOM_UTIL_JOB_ENV_H

#include <stddef.h>

#include "util/error.h"

/* The PATH every job starts with unless the administrator sets another
 * (loom serve --job-path, carried in LOOM_JOB_PATH); a job may set its own
 * with --msd-env. */
#define JOB_ENV_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define JOB_ENV_PATH_MAX 4095

/* The PATH jobs start with: LOOM_JOB_PATH when set, else JOB_ENV_PATH. */
const char *job_env_path(void);

/* NULL when dirs can be the jobs' PATH: absolute folders separated by ':',
 * none empty, at most JOB_ENV_PATH_MAX bytes; else an error saying why. */
loom_error *job_env_path_valid(const char *dirs);
#define JOB_ENV_LANG "C.UTF-8"

/* PATH=job_env_path(), LANG=JOB_ENV_LANG, HOME=home (the exec folder), then
 * each layer in order, a later KEY= replacing an earlier one; in a
 * sanitizer build, the host's ASAN/LSAN/UBSAN_OPTIONS first (so its own
 * sanitized workers behave as the host was told). NULL when out of memory;
 * free with job_env_free. */
char **job_env_build(const char *home, char *const *const layers[], int nlayers);
void job_env_free(char **env);

/* The value of KEY in env (the last one), or NULL. */
const char *job_env_get(char *const *env, const char *key);

/* Where `name` is found in the PATH of env (the first executable one); ""
 * when nowhere. */
void job_env_which(char *const *env, const char *name, char *out, size_t len);

/* The environment as one block of NUL-terminated KEY=VALUE strings in an
 * anonymous memory file (read from offset 0), or -1 with errno set. The
 * confinement step reads it (loom confine --env-fd) and applies it only at
 * its final execve, after dropping privileges. */
int job_env_to_fd(char *const *env);

/* Reads such a block (under JOB_ENV_MAX_BYTES) into a NULL-terminated
 * array pointing into *block (free both with free); -1 with errno set when
 * unreadable or too large (E2BIG). */
#define JOB_ENV_MAX_BYTES (2u << 20)
int job_env_from_fd(int fd, char **block, char ***env);

#endif

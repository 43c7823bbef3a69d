/* util/job_sandbox.h - what a job's processes may see, host-wide: the
 * host configures it once at start; the places that start job processes
 * (launch-style workers, `loom worker`) run them through `loom confine`
 * with the paths of their own exec. A job reads the system, loom's
 * installed files and its data directory, writes only its exec folder,
 * and, when the host runs as root, runs as its loom user's own uid. */
#ifndef LOOM_UTIL_JOB_SANDBOX_H
#define LOOM_UTIL_JOB_SANDBOX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/error.h"
#include "util/spawn.h"

#define JOB_UID_FIRST_DEFAULT 200000u
#define JOB_UID_LAST_DEFAULT 299999u

typedef struct job_sandbox_config {
    const char *loom_binary; /* has `loom confine`; NULL: this executable */
    const char *install_dir; /* loom's installed files; NULL: next to the binary */
    int accounts;            /* a uid per loom user (needs root) */
    uid_t uid_first, uid_last;
    /* The user's immutable id; the uid is uid_first + id. */
    loom_error *(*user_id)(void *ctx, const char *user, int64_t *id);
    void *user_ctx;
} job_sandbox_config;

/* What every job reads of the system (read and execute), and the device
 * nodes it may use (read, write, ioctl); NULL-terminated. */
extern const char *const job_sandbox_system_read[];
extern const char *const job_sandbox_devices[];

/* Sets the host-wide configuration (copied); NULL turns confinement off
 * (the default: a process that never configures it runs jobs as itself). */
void job_sandbox_configure(const job_sandbox_config *cfg);

/* What one job process gets, beyond the system and loom's files. */
typedef struct job_sandbox_job {
    /* The loom user whose account it runs under; NULL: the plugin account
     * (job_sandbox_plugin_account), for administrator code that serves no
     * one user. */
    const char *user;
    int64_t user_id;          /* its immutable id; 0: looked up by name now */
    const char *exec_dir;     /* its exec folder: the only place it writes
                               * (and its TMPDIR); NULL: it writes nothing */
    const char *data_dir;     /* read; NULL: none */
    const char *const *read;  /* more files it reads (the adapter a worker loads) */
    const char *const *write; /* more it writes (its shared-memory segment) */
    const char *read_json;    /* more to read: each "path" in this JSON array of
                               * objects (the loggers a worker loads); may be NULL */
} job_sandbox_job;

/* argv run through `loom confine` for this job, in *out (free with
 * job_sandbox_argv_free); *out is NULL when confinement is off. */
loom_error *job_sandbox_wrap(const job_sandbox_job *job, char *const *argv, char ***out);
void job_sandbox_argv_free(char **argv);

/* What job_sandbox_confine_spec made; release after spawning. */
typedef struct job_sandbox_held {
    char **argv;
    int env_fd;
} job_sandbox_held;

/* Makes spec (argv, and envp: the job's whole environment) start through
 * `loom confine` when confinement is on: the helper, which starts
 * privileged, gets an empty environment, and the job's environment reaches
 * only its final execve, after privileges are dropped, through an inherited
 * descriptor (spec->pass_fd). Unchanged when confinement is off. */
loom_error *job_sandbox_confine_spec(const job_sandbox_job *job, spawn_spec *spec,
                                     job_sandbox_held *held);
void job_sandbox_release(job_sandbox_held *held);

/* The uid and gid a loom user's jobs run as (accounts on): uid_first plus
 * the user's immutable id (user_id, or looked up by name when 0), so a user
 * made again under a removed user's name gets another account. */
loom_error *job_sandbox_account(const char *user, int64_t user_id, uid_t *uid, gid_t *gid);

/* The account administrator plugins run under when they serve no one
 * user (a launch adapter's plan): uid_first itself, which no user's id maps
 * to (ids start at 1). */
loom_error *job_sandbox_plugin_account(uid_t *uid, gid_t *gid);

/* loom's installed files (what jobs see as FABRIC_HOME): the configured
 * folder, else the one above this executable's bin/. */
void job_sandbox_install_dir(char *out, size_t outlen);

/* Gives the state home its modes, making its folders when missing: the
 * home 0700 (0711 with accounts, so a job's uid can reach its own exec
 * folder but list nothing), its files 0600, execs/, plugins/ and models/
 * 0711, plugin files 0644, data/ 0755, hpo/ and algorithms/ 0711 (each
 * task's and optimizer's folder shared with its owner's account only),
 * uploads/ 0700. At every start, so an older home is tightened too.
 * `files` (NULL: the home) is where the folders jobs reach live (execs,
 * plugins, data, models, hpo, algorithms: --shared-dir); apart from the
 * home it gets the home's mode and the home becomes 0700. */
loom_error *job_sandbox_secure_home(const char *home, const char *files, int accounts);

/* NULL when `dir` may hold the folders jobs reach apart from `home`
 * (--shared-dir): an existing directory (a shared file system is mounted,
 * never made here), given by an absolute path, owned by this process's
 * user and writable by no one else, neither the home nor beneath or above
 * it. The error names the flag, the folder and what was expected. */
loom_error *job_sandbox_files_dir_valid(const char *dir, const char *home);

/* Lets a user's own processes read `dir` and no one else's: group the
 * user's account, mode 0750 (0700 without accounts). For what the host
 * keeps for a user and their jobs read (a deployed model's files). */
loom_error *job_sandbox_share(const char *dir, const char *user, int64_t user_id);

/* NULL when other uids can reach beneath home (every folder above it
 * searchable by others): jobs under accounts of their own need that. When
 * not, the error names the folder that stops them. */
loom_error *job_sandbox_reachable(const char *home);

/* One line on the isolation jobs get, for the start-up message; returns
 * whether it is complete: Landlock, the home outside every path jobs may
 * read, and (when root) accounts. */
int job_sandbox_describe(const char *home, char *out, size_t outlen);

#endif

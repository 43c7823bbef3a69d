/*
 * sched/slurm_step.h - running one worker on a Slurm node: one Slurm job per
 * worker, started by `srun` as the host's child (its exit status is the
 * worker's; SIGTERM or SIGKILL to srun ends the step and releases the
 * allocation), and the Slurm jobs loom started that the host no longer
 * accounts for (after a restart, or a srun that did not end in time),
 * found and cancelled through libslurm.
 *
 * Each job is named loom:EXEC_ID:SLOT, so `squeue` shows an administrator
 * each exec's workers by name, under the loom user's account. The
 * worker's environment goes by name only (`--export=NAMES`, the values in
 * srun's own environment): a secret is never on a command line. srun runs
 * as root and drops to the account's uid once the allocation is granted,
 * so it needs that account where it runs (a login node), as on the nodes.
 *
 * libslurm is optional at build time, as for sched/slurm_source.h: without
 * it the argv is still built, and finding or cancelling jobs is refused
 * naming the package.
 */
#ifndef LOOM_SCHED_SLURM_STEP_H
#define LOOM_SCHED_SLURM_STEP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "sched/slurm_nodes.h"
#include "util/error.h"

#define SLURM_STEP_NAME_PREFIX "loom:" /* every job loom starts is named so */
#define SLURM_STEP_EXEC_ID_MAX 64      /* bytes with the NUL, as an exec id */
#define SLURM_STEP_EXPORTS_MAX 64      /* variables a worker is given by name */
#define SLURM_STEP_EXPORT_NAME_MAX 128 /* bytes of one variable's name */
#define SLURM_STEP_ARGS_MAX 256        /* words of the worker's own command */
#define SLURM_STEP_ARG_MAX 4096        /* bytes of one word, or of the chdir */
#define SLURM_STEP_CPUS_MAX 4096       /* --cpus-per-task */
#define SLURM_STEP_GPUS_MAX 64         /* --gres=gpu:N */
#define SLURM_STEP_LEFTOVERS_MAX 4096  /* jobs slurm_step_leftovers returns */

typedef struct slurm_step_spec {
    const char *srun;             /* NULL: "srun", searched in PATH */
    const char *node;             /* -w: the one node (letters, digits, '.', '_', '-') */
    uint32_t uid, gid;            /* the loom user's account (not root: 1..) */
    uint32_t cpus;                /* --cpus-per-task: 1..SLURM_STEP_CPUS_MAX */
    uint32_t gpus;                /* --gres=gpu:N; 0: a CPU worker */
    const char *exec_id;          /* the job name's middle (letters, digits, ._@+-) */
    uint32_t slot;                /* the job name's end */
    const char *const *exports;   /* NULL-terminated names (NULL: none); values in srun's env */
    const char *chdir;            /* absolute: the worker's folder on the node */
    const char *const *argv;      /* NULL-terminated; argv[0] absolute (no PATH is exported) */
} slurm_step_spec;

/* The srun command line running s->argv on s->node as s->uid:s->gid:
 * a NULL-terminated malloc'd array (slurm_step_argv_free) for exec, no
 * shell anywhere. Every field is checked; an error names the field and
 * what was expected. */
loom_error *slurm_step_argv(const slurm_step_spec *s, char ***out);
void slurm_step_argv_free(char **argv);

/* The exit status of a worker whose node cannot reach its folder (the
 * shared directory is not mounted there): slurm_step_spawn's guard. */
#define SLURM_STEP_NO_SHARED_DIR 97
/* Why such a node is kept out of the inventory (sched_service_keep_node_out). */
#define SLURM_STEP_NO_SHARED_DIR_REASON "it cannot reach the shared folder"
/* Whether wait status `status` is that of such a worker. */
static inline int slurm_step_lost_shared_dir(int status)
{
    return WIFEXITED(status) && WEXITSTATUS(status) == SLURM_STEP_NO_SHARED_DIR;
}

/* Starts s->argv (argv[0] absolute) in s->chdir on s->node through srun,
 * as the host's child with `spec`'s fds, group and limits (spec's argv,
 * envp and cwd are set here): the worker's environment `envp` is exported
 * by name (s->exports is ignored), its values in srun's environment, so no
 * secret is on a command line. A node that cannot enter s->chdir ends the
 * worker with SLURM_STEP_NO_SHARED_DIR and says why on its stderr. */
struct spawn_spec;
loom_error *slurm_step_spawn(const slurm_step_spec *s, char *const *envp,
                             struct spawn_spec *spec, pid_t *pid);

/* The job name loom:EXEC_ID:SLOT into out (at least 96 bytes). */
loom_error *slurm_step_job_name(const char *exec_id, uint32_t slot, char *out, size_t outlen);

/* A Slurm job loom started that has not ended (pending, running,
 * suspended or still completing). */
typedef struct slurm_step_job {
    uint32_t job_id;
    uint32_t user_id;
    char name[128];
    char state[16];               /* Slurm's: PENDING, RUNNING, ... */
    char node[SLURM_NODE_NAME_MAX];  /* the first node, "" while pending */
} slurm_step_job;

/* Which jobs slurm_step_leftovers returns: named loom:, or loom:EXEC_ID:
 * when exec_id is set, owned by a uid in [uid_min, uid_max] (0, 0: any). */
typedef struct slurm_step_filter {
    const char *exec_id;
    uint32_t uid_min, uid_max;
} slurm_step_filter;

/* Whether this build has libslurm. */
int slurm_step_libslurm(void);

/* Sets libslurm up for this process (Slurm's configuration `conf`; NULL:
 * SLURM_CONF, else /etc/slurm/slurm.conf), or counts one more user of it:
 * libslurm keeps one configuration per process, the first one. Each
 * successful acquire is paired with a release; the last tears it down. */
loom_error *slurm_lib_acquire(const char *conf);
void slurm_lib_release(void);

/* The jobs matching `f` now, read from slurmctld (slurm_load_jobs): a
 * malloc'd array the caller frees. `conf` as for slurm_lib_acquire. */
loom_error *slurm_step_leftovers(const char *conf, const slurm_step_filter *f,
                                 slurm_step_job **out, size_t *count);

/* Ends job `job_id` as scancel does (SIGKILL to its steps after Slurm's
 * own SIGTERM and KillWait). A job that already ended is not an error. */
loom_error *slurm_step_cancel(const char *conf, uint32_t job_id);

/* Cancels the Slurm job of exec `exec_id`'s worker `slot` (named
 * loom:EXEC_ID:SLOT), if it has not ended: a worker loom gave up on (no
 * heartbeat) whose srun could not end it, its node being cut off. */
loom_error *slurm_step_cancel_worker(const char *conf, const char *exec_id, uint32_t slot);

#endif

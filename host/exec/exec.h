/*
 * exec/exec.h - execs (WMLA's name for a submitted job): submission,
 * launch through a framework adapter, supervision of the worker processes,
 * stop, delete, and reconciliation after a host restart. Launch-style
 * frameworks run here; trainer-style ones are handed to the elastic trainer.
 */
#ifndef LOOM_EXEC_EXEC_H
#define LOOM_EXEC_EXEC_H

#include <cjson/cJSON.h>
#include <limits.h>
#include <stddef.h>

#include "exec/dlicmd.h"
#include "plugin/registry.h"
#include "sched/sched_service.h"
#include "store/store.h"
#include "util/error.h"

typedef struct exec_service exec_service;

/* The exec service over the stored execs; `home` holds execs/ and data/.
 * Nothing runs before exec_service_start. NULL only when out of memory. */
exec_service *exec_service_create(store *st, registry *reg, sched_service *sched,
                                  const char *home);
/* Once configured (limits, data roots): takes over the execs a host that
 * died left (trainers resumed from their last checkpoint, the rest
 * stopped and marked ERROR with the reason) and starts the supervisor. */
void exec_service_start(exec_service *es);
/* Stops running execs (marked KILLED: the host shut down) and the
 * supervisor thread. */
void exec_service_destroy(exec_service *es);

/* Bounds on what execs may take; zero (or no call) means the default. */
typedef struct exec_limits {
    int max_queued_per_user;      /* PENDING execs of one user; default 1,000 */
    uint64_t archive_max_bytes;   /* a model directory unpacked; default 2 GiB */
    uint64_t archive_max_entries; /* files, folders and links in it; 50,000 */
    uint64_t log_max_bytes;       /* each launch-style worker's stdout, stderr: 64 MiB */
    int checkpoints_keep;         /* per training job, the newest K and the best: 5 */
    /* What one launch-style exec's processes may take (util/proc_group.h):
     * processes and threads (4,096; also each kernel instance, loom worker
     * and plugin call), memory (0: the machine's memory times the exec's
     * share of the slots), and disk under RESULT_DIR (20 GiB, measured by
     * the supervisor; also each file's size). */
    uint64_t job_max_procs;
    uint64_t job_max_memory_bytes;
    uint64_t job_max_disk_bytes;
} exec_limits;
#define EXEC_DEFAULT_JOB_MAX_PROCS 4096
#define EXEC_DEFAULT_JOB_MAX_DISK_BYTES ((uint64_t)20 << 30)
#define EXEC_DEFAULT_MAX_QUEUED_PER_USER 1000
#define EXEC_DEFAULT_ARCHIVE_MAX_BYTES ((uint64_t)2 << 30)
#define EXEC_DEFAULT_ARCHIVE_MAX_ENTRIES 50000
#define EXEC_DEFAULT_LOG_MAX_BYTES ((uint64_t)64 << 20)
#define EXEC_DEFAULT_CHECKPOINTS_KEEP 5

/* Sets the bounds (before the first submission). */
void exec_service_set_limits(exec_service *es, const exec_limits *limits);

/* Folders an administrator lists (`loom serve --data-root`) under which an
 * exec's --data-dir may be, beside the data store (HOME/data) and
 * /usr/share/datasets. Each must exist and lie outside the state home
 * (LOOM_E_INVALID naming it); call before the first submission.
 * `state_home` is the host's state home when the service's own folder is
 * apart from it (--shared-dir), NULL otherwise: never a data root either. */
#define EXEC_DATA_ROOTS_MAX 16
loom_error *exec_service_set_data_roots(exec_service *es, const char *state_home,
                                        const char *const *roots, int count);

/* Calls take the caller as an owner: a user's immutable id (auth) limits
 * the call to that user's execs; EXEC_ADMIN is an administrator's view of
 * every exec. */
#define EXEC_ADMIN ((int64_t)0)

/* The longest args an exec keeps (store_exec's field): longer is refused,
 * never cut. */
#define EXEC_ARGS_MAX (sizeof ((store_exec *)0)->args - 1)

typedef struct exec_submission {
    const char *user;
    int64_t user_id; /* the submitter's immutable id */
    int is_admin;    /* administrators submit to any plan */
    /* What to run, as a structure: the REST route parses the user's
     * dlicmd text into it, tuning fills it directly. Borrowed: exec_submit
     * settles WMLA's device flags and adds its warnings in it; the caller
     * frees it (dlicmd_free). */
    dlicmd *request;
    /* The same request in dlicmd's words (at most EXEC_ARGS_MAX bytes),
     * kept with the exec: what `exec view` shows, and what a restarted
     * host queues again. Never parsed on submission. */
    const char *args;
    const void *archive; /* tar of the model directory, or NULL */
    size_t archive_len;
    const char *archive_path; /* or that tar in a file (an upload spooled to disk) */
    /* An elastic job may start from an earlier elastic exec's newest
     * checkpoint (and its val_dict_list.json) instead of from scratch:
     * that exec's id (same owner), or NULL. Hyperband's promoted
     * configurations train only their extra epochs this way. */
    const char *continue_from;
    /* Where the host does otherwise than a flag asked (WMLA's flags with no
     * equivalent), one sentence a line; NULL: not wanted. What the caller
     * put there first (its own warnings) is kept, the parser's follow, and
     * all are stored with the exec (exec view shows them). */
    char *warnings;
    size_t warnings_len;
} exec_submission;

/* Checks, stores and queues an exec; its id goes to `id`. Errors:
 * LOOM_E_INVALID (the flag or file at fault), LOOM_E_NOT_FOUND (no such
 * framework), LOOM_E_LIMIT (more devices than this host or the plan will
 * ever have), LOOM_E_TOO_LARGE (model directory), LOOM_E_INTERNAL. */
loom_error *exec_submit(exec_service *es, const exec_submission *sub, char *id, size_t idlen);
/* `owner` limits every call to that user's execs (EXEC_ADMIN: every exec);
 * another user's exec is LOOM_E_NOT_FOUND, so names do not leak. An exec
 * in the wrong state for the call is LOOM_E_CONFLICT. */
loom_error *exec_stop(exec_service *es, int64_t owner, const char *id);
/* Asks a training exec for `workers` workers (1 to its engines). */
loom_error *exec_resize(exec_service *es, int64_t owner, const char *id, int workers);
loom_error *exec_delete(exec_service *es, int64_t owner, const char *id);
/* Whether `owner` may see exec `id` (running or stored). */
int exec_visible_to(exec_service *es, int64_t owner, const char *id);

/* What a client sees of an exec: its record and, while it runs, its
 * devices and workers. */
typedef struct exec_worker_view {
    int rank;
    int pid;
    int exited;
} exec_worker_view;

/* The limits an exec's processes run under. */
typedef struct exec_job_limits {
    uint64_t max_procs;        /* processes and threads, together */
    uint64_t max_memory_bytes; /* 0: none (no memory controller) */
    uint64_t max_disk_bytes;   /* RESULT_DIR, and any one file */
    int memory_is_share;       /* the default: its share of the machine */
    /* Where each came from (SCHED_LIMIT_PROCS, _MEMORY, _DISK): the plan
     * that set it (`loom plan update --max-...`), "" for the host's
     * `loom serve --job-max-...`. */
    char plan[SCHED_LIMITS][256];
} exec_job_limits;

typedef struct exec_view {
    store_exec rec;
    /* Launch-style execs' limits (has_limits): as applied while it runs,
     * as the host sets them now once it has ended. */
    exec_job_limits limits;
    int has_limits;
    int running;            /* in the host's care (pending or started) */
    int32_t slots[64];      /* the scheduler's slots it holds */
    int nslots;
    exec_worker_view *workers; /* launch-style workers; NULL for a trainer */
    int nworkers;
    /* The trainer's progress (live, or the summary it left); NULL when
     * none. The trainer reports it as JSON of its own making. */
    cJSON *training;
    /* Why a PENDING exec waits, in words ("waiting for 3 devices, 1 free");
     * "" otherwise. Another user's exec id is left out of a user's view. */
    char pending_reason[192];
    /* The last device handed to it by a shrinking job: ms from the
     * scheduler's decision until that job's worker had left the device, and
     * the job ("" when the viewer may not see it); -1 when none. */
    int64_t handover_ms;
    char handover_from[160];
    /* The Python the job ran (python, distPyTorch, edtPyTorch jobs), as
     * RESULT_DIR/log/python says; "" when none, and in listings. */
    char python[PATH_MAX + 32];
    /* The submission's warnings, one a line, kept with the exec; "" when
     * none, and in listings. */
    char warnings[STORE_EXEC_WARNINGS_MAX];
} exec_view;

/* A pending reason in words as a viewer sees it: the exec holding the
 * reservation (or handing back devices) is named only when may_see(ID,
 * ctx) says the viewer may see that exec (may_see NULL: an administrator,
 * who sees every exec). */
void exec_reason_text(const sched_reason *r, int (*may_see)(const char *id, void *ctx), void *ctx,
                      char *buf, size_t len);

/* Fills *out (free with exec_view_free), or LOOM_E_NOT_FOUND. */
loom_error *exec_describe(exec_service *es, int64_t owner, const char *id, exec_view *out);
void exec_view_free(exec_view *v);
/* Every exec `owner` may see, oldest first: an array freed with
 * exec_views_free. */
loom_error *exec_list(exec_service *es, int64_t owner, exec_view **out, size_t *count);
void exec_views_free(exec_view *v, size_t count);
/* Opens a worker's "stdout" or "stderr" file (worker -1: the training
 * driver's) for reading into *fd, beneath the exec folder through
 * util/user_tree: a link the job put there is refused (LOOM_E_FORBIDDEN,
 * naming the file), never followed. LOOM_E_NOT_FOUND when there is none. */
loom_error *exec_log_open(exec_service *es, int64_t owner, const char *id, int worker,
                          const char *stream, int *fd);
/* For tarball_zip_tree over an exec folder: the host's own files in it
 * (the submitted code, the job's tmp/, log/python, each worker's plugin
 * marker, the PyTorch runtime's election files), which a result leaves out. */
int exec_result_leaves_out(const void *ctx, const char *rel, int is_dir);

#endif

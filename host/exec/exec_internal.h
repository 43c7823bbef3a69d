/*
 * exec/exec_internal.h - what the exec service's files share: a running
 * exec, the service itself, and the two ways an exec runs (launch-style
 * processes in exec_launch.c, the elastic trainer in exec_trainer.c).
 */
#ifndef LOOM_EXEC_EXEC_INTERNAL_H
#define LOOM_EXEC_EXEC_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <sys/types.h>

#include "exec/dlicmd.h"
#include "exec/exec.h"
#include "train/coordinator.h"
#include "util/log_pump.h"
#include "util/proc_group.h"

typedef struct worker {
    pid_t pid;
    int done;
    int status; /* waitpid status */
} worker;

typedef struct planned_worker {
    char **argv;
    char **env;
    char *cwd;
} planned_worker;

/* A framework adapter's launch plan: the sink it fills, and what it said. */
typedef struct launch_plan {
    loom_launch_sink sink;
    planned_worker *workers;
    int count;
} launch_plan;

/* What a launch-style exec's plan is made from: kept, so that an exec
 * whose devices are on Slurm nodes is planned again with its workers'
 * nodes (loom_launch_request.worker_nodes) when they are granted. */
typedef struct launch_inputs {
    char fw_path[PATH_MAX];
    char fw_name[LOOM_NAME_MAX];
    char **args;       /* NULL-terminated copy */
    uint32_t nargs;
    char *model_main;  /* NULL: none */
    uint32_t num_workers, worker_device_num, master_port;
    const char *device_type; /* the SDK's words: static */
} launch_inputs;

/* The most devices one exec is given. */
#define EXEC_MAX_DEVICES 4096

typedef struct running_exec {
    struct running_exec *next;
    store_exec rec;
    char framework[LOOM_NAME_MAX];
    int pending;      /* waiting for devices */
    /* The device indices the exec was last given (a trainer is resized only
     * when its ready grant differs). */
    int32_t given[EXEC_MAX_DEVICES];
    int ngiven;
    int devices;      /* a fixed exec's need; an elastic one's maximum */
    int elastic;
    /* launch style */
    launch_plan plan;
    launch_inputs launch_in;
    char **worker_nodes; /* each worker's Slurm node; NULL on this machine */
    char **msd_env;   /* NULL-terminated copy */
    char code_dir[PATH_MAX], log_dir[PATH_MAX], data_dir[PATH_MAX];
    int worker_device_num;
    int gpu;          /* --workerDeviceType gpu */
    int nworkers;
    worker *workers;
    /* Every process of the workers, however detached: ended with the exec
     * (util/proc_group.h). */
    proc_group group;
    exec_job_limits limits;
    int stop_error;     /* ended by the host for a reason (a limit): ERROR */
    int over_memory;    /* its group's memory limit killed a process */
    int procs_refused;  /* a fork failed at its process limit */
    int64_t disk_checked_ms;
    int stop_requested;
    int64_t kill_at_ms;
    char stop_reason[400]; /* room for a plan path (exec_limit_source) */
    /* trainer style */
    edt_job *job;          /* prepared, until it starts */
    edt_coordinator *edt;
    /* The trainer's final state, recorded only once trainer_ended has let
     * go of what the exec held (its framework adapter), so whoever sees
     * FINISHED, KILLED or ERROR may remove that plugin at once. Not final
     * (SUBMITTED, as zeroed) until then. */
    exec_state final_state;
    char *final_message;
} running_exec;

struct exec_service {
    store *st;
    registry *reg;
    sched_service *sched;
    char home[PATH_MAX];
    pthread_mutex_t lock; /* the running list and the store */
    pthread_t thread;
    int thread_started;
    int stopping;
    running_exec *running;
    unsigned seq;
    exec_limits limits;
    char data_roots[EXEC_DATA_ROOTS_MAX][PATH_MAX]; /* --data-root, resolved */
    char state_home[PATH_MAX]; /* resolved, when apart from home; else "" */
    int data_root_count;
    log_pump *logs; /* launch-style workers' stdout and stderr, bounded */
    int wake_fd;    /* eventfd: the supervisor looks again (exec_wake.c) */
    int supervise_ms; /* the supervisor's fallback interval */
};

/* exec_limits.c: what a launch-style exec's processes may take. */
/* The limits of exec `rec` on ndev devices: its plan's (the nearest plan
 * up the tree that sets each), else the host's. Call with es->lock. */
void exec_job_limits_for(exec_service *es, const store_exec *rec, int ndev, exec_job_limits *out);
/* The words that name where limit `which` (SCHED_LIMIT_*) came from:
 * "plan /teamA" or "loom serve --job-max-procs". */
void exec_limit_source(const exec_job_limits *l, int which, char *out, size_t len);
/* Appends to msg ("; " between) the limits that ended the exec, if any. */
void exec_limit_note(const running_exec *r, char *msg, size_t len);
/* Measures one running exec's RESULT_DIR when due and stops it with ERROR
 * naming --job-max-disk when it is over. Call without es->lock. */
void exec_check_disk(exec_service *es);
/* A byte count in the unit that shows it whole ("20 GiB"). */
void exec_size_text(uint64_t bytes, char *out, size_t outlen);

/* exec_wake.c: the supervisor's wait. */
void exec_wake_init(exec_service *es);
void exec_wake_close(exec_service *es);
/* Makes the supervisor's current or next wait return at once. */
void exec_wake(exec_service *es);
/* Waits until a launch-style worker exits, exec_wake is called, or
 * timeout_ms pass. Takes es->lock briefly; call without it. */
void exec_wait_for_change(exec_service *es, int timeout_ms);

/* exec_wmla.c */
/* A model archive unpacked into code_dir whose only top-level entry is a
 * folder named like --model-dir's last component: its contents move up
 * into code_dir. Files at the archive's root stay as they are; a lone
 * folder with another name is LOOM_E_INVALID naming both. */
loom_error *exec_model_layout(const char *code_dir, const char *model_dir);
/* WMLA's --gpuPerWorker without --workerDeviceType: GPUs where the host
 * has them, else CPU devices and a warning. */
void exec_wmla_devices(exec_service *es, dlicmd *d);
/* The parser's warnings, one a line, after what the submitter's buffer
 * holds; all of them are stored with exec `id`. */
void exec_note_warnings(exec_service *es, const char *id, const exec_submission *sub,
                        const dlicmd *d);
/* The refusal of a framework that is not registered; `wmla`: the name
 * asked for is WMLA's, mapped to `framework`. */
loom_error *exec_framework_missing(const char *asked, const char *framework, int wmla);

/* exec.c */
/* Whether `owner` (EXEC_ADMIN: anyone) may see an exec of user `user_id`. */
int exec_visible(int64_t owner, int64_t user_id);
/* Finds an exec `owner` may see: a running one in *r, else its stored
 * record in *rec; 0 when there is none (for that owner). With es->lock. */
int exec_lookup(exec_service *es, int64_t owner, const char *id, running_exec **r,
                store_exec *rec);
void exec_set_state(exec_service *es, store_exec *rec, exec_state state, const char *message);
running_exec *exec_find_running(exec_service *es, const char *id);
void exec_free_running(running_exec *r);

/* exec.c: the plan a submission runs in (--consumer, else "/USER"). */
loom_error *exec_plan_of(const exec_submission *sub, const dlicmd *d, char *plan, size_t len);

/* exec_id.c */
/* Picks a free id for an exec of `user` and creates its folder: rec->id and
 * rec->result_dir. The folder is the caller's to remove on failure. */
loom_error *exec_claim_id(exec_service *es, const char *user, store_exec *rec);
/* LOOM_E_LIMIT when the user already has the most execs queued. */
loom_error *exec_check_queue_bound(exec_service *es, const char *user, int64_t user_id);

/* exec_launch.c */
void launch_plan_init(launch_plan *p);
void launch_plan_free(launch_plan *p);
/* Asks the framework (in a plugin-host child) for r's workers into
 * r->plan, from r->launch_in; worker_nodes NULL on one machine, else each
 * worker's node (master_addr then the first's). */
loom_error *launch_plan_make(running_exec *r, const char *const *worker_nodes);
/* exec_nodes.c: NULL when exec `id`'s folder is on the folder every node
 * mounts (--shared-dir), else the refusal naming `node` and the flag.
 * Workers on Slurm nodes read and write the exec's folder there. */
loom_error *exec_nodes_need_shared_dir(const exec_service *es, const char *id, const char *node);
/* exec_nodes.c: when r's `ndev` devices are on Slurm nodes (*on_nodes),
 * each worker's node into r->worker_nodes and the plan made again with
 * them; refused without a shared folder (--shared-dir). */
loom_error *exec_nodes_place(exec_service *es, running_exec *r, int ndev, int *on_nodes);
/* Starts worker `worker` on its node: srun, the host's child, with `spec`'s
 * fds, group and limits; envp is the worker's environment; confined there
 * by `box`'s rules (`loom confine`). */
struct spawn_spec;
struct job_sandbox_job;
loom_error *exec_nodes_spawn(running_exec *r, int worker, char **envp, const char *cwd,
                             const struct job_sandbox_job *box, struct spawn_spec *spec,
                             pid_t *pid);
/* Starts the planned workers on the given devices (CUDA ordinals, or CPU
 * slots); on failure nothing is left running. Call with es->lock. */
loom_error *launch_start(exec_service *es, running_exec *r, const int32_t *device_index,
                         int ndev);
char **strings_copy(const char *const *src, uint32_t n);
void strings_free(char **v);

/* exec_trainer.c */
/* Reads the training spec and settings; LOOM_E_INVALID names what is wrong. */
loom_error *trainer_prepare(exec_service *es, const store_exec *rec, const registry_entry *fw,
                            const dlicmd *d, const char *data_dir, edt_job *job);
/* Starts a prepared trainer with `workers` workers. Call with es->lock. */
/* Starts the trainer on the devices granted (CUDA ordinals or CPU slot
 * numbers, of `kind`). */
/* Copies exec `from`'s newest checkpoint and val_dict_list.json into the
 * new job's result directory and marks it to resume from them; an exec
 * without a checkpoint leaves the job to start from scratch. */
loom_error *trainer_continue_from(exec_service *es, const store_exec *rec, const char *from,
                                  edt_job *job);
loom_error *trainer_start(exec_service *es, running_exec *r, const int32_t *devices, int count,
                          int32_t kind);
/* Keeps the trainer's progress for `exec view` and frees it. */
void trainer_ended(exec_service *es, running_exec *r);
/* The trainer's summary, relative to the exec folder. */
#define TRAINER_SUMMARY "log/driver/training.json"
/* Reads the file rel of an exec folder through util/user_tree (NULL when
 * missing, a link, or over max bytes). Caller frees. */
char *exec_folder_read(const char *result_dir, const char *rel, size_t max);

/* exec_pyscript.c: a trainer exec whose --model-main is a Python script. */
int pyscript_is_script(const char *model_main);
/* Reads the script's train() settings (running none of it) into *spec,
 * also written to spec_path: {"training": {...}, "pytorch": {"script",
 * "args"}}. A script that does not parse or whose settings cannot be told
 * is LOOM_E_INVALID naming the line; no Python or no torch LOOM_E_UNAVAILABLE. */
loom_error *pyscript_spec(const registry_entry *fw, const store_exec *rec, const dlicmd *d,
                          char *spec_path, size_t len, cJSON **spec);
/* The job's environment pairs with FABRIC_HOME (loom's installed files)
 * added unless the job set it; takes and returns the vector. */
char **pyscript_job_env(char **env);

/* Shared by submission and restart (exec.c, exec_restart.c). */
/* Checks a submission against its framework and prepares how it will run
 * (code_ready: the model directory is in place already, after a restart). */
loom_error *exec_prepare(exec_service *es, const exec_submission *sub, dlicmd *d,
                         const registry_entry *fw, running_exec *r, int code_ready);
/* Hands an exec to the scheduler and the running list. Call with es->lock. */
loom_error *exec_enqueue_locked(exec_service *es, running_exec *r, const dlicmd *d);
/* Runs the scheduler and carries out its decisions. Call with es->lock. */
void exec_schedule_locked(exec_service *es);
/* exec_data.c: DATA_DIR for an exec, resolved into out: --data-dir (an
 * existing folder under a data root), WMLA's data_path under the data
 * store HOME/data (made if missing), or the data store itself.
 * LOOM_E_INVALID names the flag and the roots. */
loom_error *exec_data_dir(exec_service *es, const dlicmd *d, char *out, size_t len);
/* Takes up the execs the last host left unfinished (exec_restart.c). */
void exec_reconcile(exec_service *es);

#endif

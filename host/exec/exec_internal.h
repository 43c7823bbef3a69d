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

typedef struct running_exec {
    struct running_exec *next;
    store_exec rec;
    char framework[LOOM_NAME_MAX];
    int pending;      /* waiting for devices */
    int devices;      /* a fixed exec's need; an elastic one's maximum */
    int elastic;
    /* launch style */
    launch_plan plan;
    char **msd_env;   /* NULL-terminated copy */
    char code_dir[PATH_MAX], log_dir[PATH_MAX], data_dir[PATH_MAX];
    int worker_device_num;
    int gpu;          /* --workerDeviceType gpu */
    int nworkers;
    worker *workers;
    int stop_requested;
    int64_t kill_at_ms;
    char stop_reason[96];
    /* trainer style */
    edt_job *job;          /* prepared, until it starts */
    edt_coordinator *edt;
    /* The trainer's final state, recorded only once trainer_ended has let
     * go of what the exec held (its framework adapter), so whoever sees
     * FINISHED, KILLED or ERROR may remove that plugin at once. */
    char final_state[16];
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
};

/* exec.c */
void exec_set_state(exec_service *es, store_exec *rec, const char *state, const char *message);
running_exec *exec_find_running(exec_service *es, const char *id);
void exec_free_running(running_exec *r);

/* exec_launch.c */
void launch_plan_init(launch_plan *p);
void launch_plan_free(launch_plan *p);
/* Starts the planned workers on the given devices (CUDA ordinals, or CPU
 * slots); on failure nothing is left running. Call with es->lock. */
loom_error *launch_start(exec_service *es, running_exec *r, const int32_t *device_index,
                         int ndev);
char **strings_copy(const char *const *src, uint32_t n);
void strings_free(char **v);
int reserve_port(void);

/* exec_trainer.c */
/* Reads the training spec and settings; LOOM_E_INVALID names what is wrong. */
loom_error *trainer_prepare(exec_service *es, const store_exec *rec, const registry_entry *fw,
                            const dlicmd *d, const char *data_dir, edt_job *job);
/* Starts a prepared trainer with `workers` workers. Call with es->lock. */
/* Starts the trainer on the devices granted (CUDA ordinals or CPU slot
 * numbers, of `kind`). */
loom_error *trainer_start(exec_service *es, running_exec *r, const int32_t *devices, int count,
                          int32_t kind);
/* Keeps the trainer's progress for `exec view` and frees it. */
void trainer_ended(exec_service *es, running_exec *r);
void trainer_summary_path(const store_exec *rec, char *path, size_t len);

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

#endif

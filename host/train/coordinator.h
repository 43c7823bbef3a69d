/*
 * train/coordinator.h - the elastic trainer's coordinator: one thread in the
 * host per training exec. It starts a `loom worker` per device, forms
 * numbered generations of members over the shm collectives, plans every
 * step (which samples each worker uses, with gradient accumulation keeping
 * the effective batch constant), commits a step only when every member
 * reduced it, grows and shrinks the group at step boundaries, validates,
 * checkpoints and finishes. Every wait has a deadline.
 */
#ifndef LOOM_TRAIN_COORDINATOR_H
#define LOOM_TRAIN_COORDINATOR_H

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "plugin/registry.h"
#include "store/record_states.h"
#include <loom/loom.h>
#include "train/edt_settings.h"
#include "util/error.h"

#define EDT_MAX_WORKERS 1024
/* The largest gradient buffer a CPU worker keeps in the shared segment,
 * where the all-reduce runs in place (4 GiB: a billion float parameters). */
#define EDT_GRADIENT_REGION_BYTES (4ull << 30)

typedef struct edt_job {
    char exec_id[64];
    char user[64];                 /* whose: the account its workers run as */
    int64_t user_id;               /* the user's immutable id (0: by name) */
    char result_dir[PATH_MAX];
    char code_dir[PATH_MAX];
    char data_dir[PATH_MAX];
    char framework_path[PATH_MAX]; /* the adapter's .so */
    char framework_name[64];       /* its name, for the progress line */
    /* The same adapter loaded in the host: the parameter server's model in
     * ASYNC mode. Must stay loaded while the trainer runs. */
    const loom_framework_factory *framework;
    char spec_path[PATH_MAX];
    char loom_binary[PATH_MAX];    /* to start `loom worker` */
    char **msd_env;                /* "K=V", NULL-terminated; copied */
    edt_settings settings;         /* taken over (loggers_json is freed) */
    uint32_t initial_workers;      /* 0: settings.engines */
    /* The devices granted at start (the scheduler's choice): CUDA ordinals
     * when device_kind is LOOM_DEVICE_CUDA (each worker runs on one, seeing
     * only it), CPU slot numbers otherwise (labels: CPU workers are not
     * pinned). ndevices 0: initial_workers workers on no named device. */
    int32_t device_kind;           /* loom_device_kind */
    int32_t devices[EDT_MAX_WORKERS];
    uint32_t ndevices;
    int resume;                    /* continue from the newest checkpoint */
    int checkpoints_keep;          /* the newest K (and the best) stay; 0: all */
    /* Each worker's bounds (0: the host's defaults): processes and threads
     * and memory in its cgroup, and any one file it writes (RLIMIT_FSIZE). */
    uint64_t worker_max_procs, worker_max_memory_bytes, worker_max_file_bytes;
    /* How workers reach the coordinator (train_link_parse): "" or "unix",
     * "tcp", "tcp:ADDR" (loom serve --worker-link). */
    char worker_link[272];
    /* Devices on Slurm nodes (loom serve --slurm), NULL on one machine:
     * the node of a granted device ("" for this machine's). Each worker
     * then starts on its device's node through srun, as the user's
     * account, and its collectives go over TCP; the worker link must be
     * TCP at an address the nodes reach. */
    bool (*device_node)(void *ctx, int32_t device, char *node, size_t len);
    /* A node whose worker stopped answering or cannot reach the exec's
     * folder: nothing should be placed there for a while. */
    void (*node_lost)(void *ctx, const char *node, const char *why);
    /* A worker process has ended and its device is no longer held
     * (edt_devices_held): lets the host hand it over now rather than at its
     * next look. From the coordinator's thread; may be NULL. */
    void (*device_released)(void *ctx);
    registry *reg;                 /* the host's: driver loggers */
    /* State changes (RUNNING, FINISHED, ERROR, KILLED), from the thread. */
    void (*on_state)(void *ctx, const char *exec_id, exec_state state, const char *message);
    void *ctx;
} edt_job;

typedef struct edt_coordinator edt_coordinator;

/* Starts the coordinator's thread; the job's state changes arrive through
 * job->on_state from then on. */
loom_error *edt_start(edt_job *job, edt_coordinator **out);
/* Grants exactly these devices (1..engines of them; see edt_job.devices),
 * which is how the job is resized: workers on devices no longer granted
 * leave at the next step boundary and new ones start on the devices added. */
loom_error *edt_set_devices(edt_coordinator *c, const int32_t *devices, uint32_t count);
/* The devices a worker process of the job is on now (a leaving worker's
 * until it has exited): how a device taken from the job is known to be
 * free. Returns how many, at most `cap`. */
uint32_t edt_devices_held(edt_coordinator *c, int32_t *out, uint32_t cap);
/* Asks the job to stop; it ends KILLED. */
void edt_stop(edt_coordinator *c);
int edt_done(edt_coordinator *c);
/* Progress: workers and their devices, generation, epoch, iteration,
 * throughput, metrics, per-epoch sample counts. */
cJSON *edt_describe(edt_coordinator *c);
/* Waits for the thread and frees everything. */
void edt_free(edt_coordinator *c);

/* Removes the shared-memory segments of trainers whose host process is
 * gone (a host that was killed cannot clean up after itself). Returns how
 * many were removed. */
int edt_sweep_stale_segments(void);

#endif

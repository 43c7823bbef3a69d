/*
 * loom/framework.h - framework adapters ("loom.framework/1").
 *
 * Two styles share one factory:
 *
 *  LAUNCH: the adapter turns a submission into processes (argv, env, cwd per
 *  worker); the host starts, supervises and logs them. This is what
 *  registering a framework with dlicmd means (`command`, `python`,
 *  `distPyTorch`).
 *
 *  TRAINER: the host owns the training loop (sharding, all-reduce, elastic
 *  membership, checkpoints, validation, loggers) and the adapter owns the
 *  math: it builds model and optimizer, exposes one flat parameter buffer and
 *  one flat gradient buffer, computes forward + backward for the samples the
 *  host names, applies the optimizer step and evaluates.
 *
 * Threading: the host never calls one instance from two threads at once.
 * A trainer instance lives in a `loom worker` process, one per device, and
 * is called from that process's main thread only; in ASYNC mode the host
 * also makes one for its parameter server, called from the thread that
 * coordinates the exec. That is "the instance's thread" below.
 */
#ifndef LOOM_FRAMEWORK_H
#define LOOM_FRAMEWORK_H

#include "abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum loom_framework_style {
    LOOM_FRAMEWORK_LAUNCH = 1,
    LOOM_FRAMEWORK_TRAINER = 2
} loom_framework_style;

/* ---- launch style ------------------------------------------------------ */

/* What the user submitted, resolved by the host. Borrowed for the call. */
typedef struct loom_launch_request {
    uint32_t struct_size;
    uint32_t num_workers;       /* --numWorker, >= 1 */
    uint32_t worker_device_num; /* --workerDeviceNum, >= 1 */
    uint32_t master_port;       /* a free loopback port reserved for the exec */
    const char *exec_id;
    const char *code_dir;    /* RESULT_DIR/_submitted_code: the copied --model-dir */
    const char *model_main;  /* --model-main relative to code_dir, or NULL */
    const char *data_dir;    /* DATA_DIR */
    const char *result_dir;  /* RESULT_DIR */
    const char *log_dir;     /* LOG_DIR */
    const char *device_type; /* "cpu" or "gpu" (--workerDeviceType) */
    const char *master_addr; /* e.g. "127.0.0.1" */
    const char *const *args; /* the arguments after `--` */
    uint32_t arg_count;
    uint32_t msd_env_count;
    const char *const *msd_env; /* --msd-env pairs, "KEY=VALUE" */
    /* ABI 1.7, optional on both sides (LOOM_STRUCT_HAS): the node each
     * worker runs on, num_workers entries by rank, when the exec spans
     * nodes (a Slurm cluster); NULL on one machine, where every worker is
     * on one node. Ranks on one node are consecutive, and master_addr is
     * then rank 0's node's address. A launcher derives the per-node ranks
     * from it (torchrun's LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK). The
     * host may ask for a plan once without it (to check a submission) and
     * again with it when the devices are granted. */
    const char *const *worker_nodes;
} loom_launch_request;

/* Where a launch plan goes. The host copies every string. */
typedef struct loom_launch_sink loom_launch_sink;
struct loom_launch_sink {
    uint32_t struct_size;
    void *host_data;
    /* Adds the next worker (rank = number of earlier calls). argv[0] is
     * searched in PATH. `env` holds "KEY=VALUE" entries set on top of the job
     * environment the host builds (DATA_DIR, RESULT_DIR, LOG_DIR, DLI_EXECID,
     * CUDA_VISIBLE_DEVICES and the --msd-env pairs). `cwd` NULL means
     * code_dir. [thread: only inside plan_launch, on its thread] [owns:
     * every argument borrowed for the call; the host copies them] */
    loom_error *(*add_worker)(const loom_launch_sink *sink,
                              const char *const *argv, uint32_t argc,
                              const char *const *env, uint32_t envc,
                              const char *cwd);
};

/* ---- trainer style ----------------------------------------------------- */

typedef struct loom_framework_instance loom_framework_instance; /* plugin's */

typedef enum loom_split {
    LOOM_SPLIT_TRAIN = 0,
    LOOM_SPLIT_TEST = 1
} loom_split;

typedef enum loom_tensor_role {
    LOOM_TENSOR_PARAMETER = 0, /* part of the model: exported at the end */
    LOOM_TENSOR_OPTIMIZER = 1, /* needed to resume training only */
    LOOM_TENSOR_OTHER = 2
} loom_tensor_role;

/* Borrowed for the duration of create(). */
typedef struct loom_trainer_config {
    uint32_t struct_size;
    uint32_t rank;              /* this worker's rank when created (logs only) */
    uint32_t num_dataloader_threads;
    uint32_t reserved;          /* zero */
    uint64_t seed;
    loom_device device;
    const char *spec_json;      /* the model directory's model + settings */
    const char *code_dir;       /* the model directory */
    const char *data_dir;       /* DATA_DIR */
    /* ABI 1.2, optional on both sides: an adapter reads these only when
     * struct_size covers them (LOOM_STRUCT_HAS(cfg, loom_trainer_config,
     * gradient_ready_data)), and the host may leave them NULL. When set,
     * forward_backward may call gradient_ready each time a part of the
     * gradient buffer holds its final value for that call, bytes
     * [offset, offset + nbytes), last layers first, as DDP's buckets do. The
     * host may start reducing that part on another thread at once: the
     * adapter must not read or write it again until the call returns. Only
     * for host memory (a CPU device); an adapter that cannot tell simply
     * never calls it.
     * [thread: the instance's, inside forward_backward] [owns: nothing] */
    void (*gradient_ready)(void *data, uint64_t offset, uint64_t nbytes);
    void *gradient_ready_data; /* its first argument */
    /* ABI 1.3, optional on both sides: an adapter reads these only when
     * struct_size covers them (LOOM_STRUCT_HAS(cfg, loom_trainer_config,
     * gradient_memory_data)), and the host may leave them NULL. Memory the
     * host offers for the flat gradient buffer: an adapter that can place
     * its gradient buffer in memory it did not allocate calls
     * gradient_memory once inside create() with the buffer's size in bytes.
     * The host returns host memory, zeroed and aligned to 64 bytes, that
     * stays valid until destroy() returns, or NULL (then the adapter
     * allocates its own as usual). The memory stays the host's: the adapter
     * never frees it. On one node the host all-reduces gradients there in
     * place, its peers reading and writing it directly, so an adapter must
     * touch it only inside the calls of this table. Only for host memory
     * (a CPU device); an adapter that ignores it works as before.
     * [thread: the instance's, inside create] [owns: the memory is the
     * host's] */
    void *(*gradient_memory)(void *data, uint64_t nbytes);
    void *gradient_memory_data; /* its first argument */
} loom_trainer_config;

/* Where training stands; passed to apply() for learning-rate schedules. */
typedef struct loom_step_info {
    uint32_t struct_size;
    uint32_t epoch;            /* 0-based */
    uint32_t epochs;           /* total */
    uint32_t reserved;         /* zero */
    uint64_t iteration;        /* global optimizer steps done so far */
    uint64_t steps_per_epoch;  /* optimizer steps in one epoch */
} loom_step_info;

/* ---- the factory ------------------------------------------------------- */

/* Thread tags below: "instance" means the instance's thread (see the top of
 * this file), one call at a time. */
typedef struct loom_framework_factory {
    uint32_t struct_size;
    int32_t style; /* loom_framework_style */

    /* LAUNCH (required for that style): call sink->add_worker once per
     * worker process.
     * [thread: a host thread; calls for different execs may overlap, so
     * keep no state between calls] [owns: request and sink borrowed for
     * the call] */
    loom_error *(*plan_launch)(const struct loom_framework_factory *self,
                               const loom_launch_request *request,
                               const loom_launch_sink *sink);

    /* TRAINER (all required for that style unless marked optional). */

    /* [thread: the future instance's thread] [owns: config borrowed for
     * the call; *out is the plugin's until destroy] */
    loom_error *(*create)(const struct loom_framework_factory *self,
                          const loom_trainer_config *config,
                          loom_framework_instance **out);
    /* [thread: instance] [owns: takes inst back] */
    void (*destroy)(loom_framework_instance *inst);

    /* Number of samples in a split. The host shards [0, count).
     * [thread: instance] [owns: *count written by the plugin] */
    loom_error *(*dataset_size)(loom_framework_instance *inst, int32_t split,
                                uint64_t *count);

    /* The flat float32 parameter and gradient buffers: 1-D, equal length,
     * valid until destroy. The host all-reduces `grads` in place and may
     * overwrite `params` (weight broadcast, parameter server). On a CUDA
     * device they are device memory (on_device = 1) and the collectives go
     * through NCCL; every call of this table must have finished its device
     * work when it returns (synchronise the stream), since the host's
     * collectives and copies run on streams of their own.
     * [thread: instance] [owns: the host's views, filled by the plugin;
     * the memory they point at is the instance's until destroy] */
    loom_error *(*buffers)(loom_framework_instance *inst,
                           loom_tensor_view *params, loom_tensor_view *grads);

    /* Sets the gradient buffer to zero. [thread: instance] */
    loom_error *(*zero_grad)(loom_framework_instance *inst);

    /* Forward + backward for the named training samples; ADDS
     * grad_scale * d(mean loss over these samples)/d(params) into the
     * gradient buffer (the host picks grad_scale so accumulation and
     * averaging give the mean over the effective batch). Fills `out` with
     * the batch's mean metrics (at least "loss"), through loom_metrics_add
     * to use the room past LOOM_MAX_METRICS the host may offer.
     * [thread: instance] [owns: indices borrowed for the call; metric
     * names must live as long as the instance] */
    loom_error *(*forward_backward)(loom_framework_instance *inst,
                                    const uint64_t *indices, uint32_t count,
                                    float grad_scale, loom_metrics *out);

    /* One optimizer step from the gradient buffer.
     * [thread: instance] [owns: step borrowed for the call] */
    loom_error *(*apply)(loom_framework_instance *inst,
                         const loom_step_info *step);

    /* Mean metrics (e.g. "loss", "accuracy") over the named samples of a
     * split; the host combines shards weighted by count.
     * [thread: instance] [owns: as forward_backward] */
    loom_error *(*evaluate)(loom_framework_instance *inst, int32_t split,
                            const uint64_t *indices, uint32_t count,
                            loom_metrics *out);

    /* Every tensor needed to resume (parameters, optimizer state, step
     * counters), as views into the instance's memory: the array form, for
     * adapters built before ABI 1.5. A 1.5 adapter offers the pair
     * state_tensor_count / state_tensor_get instead (or as well: the host
     * then uses the pair), since this array's stride is the view's size the
     * adapter was built with. Required unless the pair is there. At most
     * `capacity`;
     * `*count` is set to the number needed even when it exceeds capacity.
     * The role of views[i] goes to roles[i] (loom_tensor_role).
     * Checkpoints, weight broadcast to joining workers and the final model
     * are made from these.
     * [thread: instance] [owns: views and roles are the host's arrays,
     * filled by the plugin; the memory the views point at is the
     * instance's until destroy] */
    loom_error *(*state_tensors)(loom_framework_instance *inst,
                                 loom_tensor_view *views, int32_t *roles,
                                 uint32_t capacity, uint32_t *count);

    /* Called after the host wrote into the state tensors (checkpoint load,
     * broadcast), so the adapter can refresh anything derived from them.
     * Optional: NULL, or left out by a struct_size that ends before it.
     * [thread: instance] */
    loom_error *(*state_loaded)(loom_framework_instance *inst);

    /* ABI 1.3. The job's metrics as the host recorded them, for loggers the
     * adapter runs itself (WMLA's driver logger callback): the mean over
     * every worker's samples, not this worker's. split LOOM_SPLIT_TRAIN: a
     * round of training steps, `step->iteration` the global optimizer steps
     * done after it, `step->epoch` the epoch it belongs to; LOOM_SPLIT_TEST:
     * a validation over the whole test set after epoch `step->epoch`.
     * `workers` were members then. Called at the start of the next round
     * on every member, so each adapter decides whether it logs. Optional:
     * NULL, or left out by a struct_size that ends before it.
     * [thread: instance] [owns: metrics and step borrowed for the call] */
    loom_error *(*job_metrics)(loom_framework_instance *inst, int32_t split,
                               const loom_metrics *metrics, const loom_step_info *step,
                               uint32_t workers);

    /* ABI 1.5, the growable form of state_tensors, both or neither: how
     * many state tensors the instance has, then each one by index in
     * [0, count). The host sets out->struct_size to the size of the view it
     * knows and the adapter writes only fields inside it (LOOM_STRUCT_HAS),
     * so views gain fields without an old host or adapter misreading them.
     * Same meaning, roles and lifetime as state_tensors; the count must not
     * change until the instance's shapes do.
     * [thread: instance] [owns: *count and *out written by the plugin; the
     * memory the view points at is the instance's until destroy] */
    loom_error *(*state_tensor_count)(loom_framework_instance *inst, uint32_t *count);
    /* [thread: instance] [owns: as state_tensor_count] */
    loom_error *(*state_tensor_get)(loom_framework_instance *inst, uint32_t index,
                                    loom_tensor_view *out, int32_t *role);
} loom_framework_factory;

#ifdef __cplusplus
}
#endif
#endif

/*
 * loom/logger.h - logger callbacks ("loom.logger/1"), the four methods of
 * WMLA's elastic-distributed-training logger callback. A driver logger sees
 * the job's means over every worker and the global iteration count; a
 * worker logger sees its own worker's metrics.
 *
 * Where and on which thread (the host never calls one instance from two
 * threads at once, so a plugin needs no locks of its own):
 *  - driver instances (role LOOM_LOGGER_DRIVER, rank 0) run in a `loom
 *    plugin-host` child process of their own, one per logger per exec,
 *    never in the host process; the child calls every function on its main
 *    thread, in the order the exec's coordinator asks, one call at a time.
 *    A call that crashes or passes its deadline costs that call; the next
 *    call starts a new child, whose instance is created and told
 *    on_train_begin again first; three failures in a row disable the
 *    logger for the exec.
 *  - worker instances (role LOOM_LOGGER_WORKER, rank = the worker's slot)
 *    run in that worker's `loom worker` process, on its main thread,
 *    between the worker's rounds. A worker that replaces one that died, or
 *    joins when the job grows, has instances of its own and hears
 *    on_train_begin first like any other.
 *
 * In which order, per instance: create; on_train_begin once, before any
 * metrics; then log_train_metrics and log_test_metrics as training goes;
 * on_train_end once at the end; destroy. Epochs are counted from 1 in both
 * roles (the epoch being trained, or the one just validated), as the
 * progress lines and val_dict_list.json's "step" count them; an iteration
 * is a step of the effective (global) batch.
 *  - driver: on_train_begin when the first workers have loaded their data,
 *    with the workers asked for; log_train_metrics once per epoch, when it
 *    ends, with the epoch's mean metrics over every worker; log_test_metrics
 *    after each validation (every validation_freq epochs and after the
 *    last) with the job's test metrics; on_train_end with the job's
 *    outcome. When every worker is lost, training rewinds to its last copy
 *    and trains the steps since again, but an epoch's log_train_metrics and
 *    a validation the driver logger already heard are not repeated.
 *  - worker: on_train_begin at the worker's first round, with the workers
 *    of that round; log_train_metrics every log_every steps, with the mean
 *    of the worker's steps since; log_test_metrics after each validation
 *    with the worker's share of the test set (a worker given no test
 *    samples that time is not called; in ASYNC mode validation runs in the
 *    host's parameter server, so workers hear none); on_train_end with
 *    FINISHED after synchronous training's last round, or KILLED when the
 *    coordinator stops the worker (a shrink, a stop, the end of ASYNC
 *    training). A worker process that dies hears nothing more; a warm spare
 *    that never trained hears only create and destroy.
 *
 * ABI 1.4 changed no struct, only when the host calls: hosts before it
 * called worker instances' log_train_metrics with epochs counted from 0
 * and never called their on_train_begin or log_test_metrics. A plugin that
 * must tell reads loom_host.abi_minor.
 */
#ifndef LOOM_LOGGER_H
#define LOOM_LOGGER_H

#include "abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_logger_instance loom_logger_instance; /* plugin's */

typedef enum loom_logger_role {
    LOOM_LOGGER_DRIVER = 0,
    LOOM_LOGGER_WORKER = 1
} loom_logger_role;

/* Borrowed for the duration of create(). */
typedef struct loom_logger_config {
    uint32_t struct_size;
    int32_t role;            /* loom_logger_role */
    uint32_t rank;           /* worker rank; 0 for the driver */
    uint32_t reserved;       /* zero */
    const char *exec_id;
    const char *log_dir;     /* the role's own folder under LOG_DIR */
    const char *config_json; /* the logger's settings from the job, or "{}" */
    /* ABI 1.1: check LOOM_STRUCT_HAS(config, loom_logger_config, plugin_dir)
     * before reading these; either may be NULL when the host has no result
     * directory for the run. */
    const char *result_dir;  /* the exec's RESULT_DIR: read it (model, checkpoints) */
    const char *plugin_dir;  /* RESULT_DIR/plugins/<plugin name>/, created by the
                                host: the logger's own folder to write, shared
                                by its driver and worker instances (name files
                                by role and rank) */
} loom_logger_config;

/* Borrowed for the duration of on_train_begin(). */
typedef struct loom_train_info {
    uint32_t struct_size;
    uint32_t epochs;
    uint32_t workers;
    uint32_t batch_size;           /* per device */
    uint32_t effective_batch_size; /* global */
    uint32_t reserved;             /* zero */
    const char *exec_id;
} loom_train_info;

typedef enum loom_train_status {
    LOOM_TRAIN_FINISHED = 0,
    LOOM_TRAIN_FAILED = 1,
    LOOM_TRAIN_KILLED = 2
} loom_train_status;

typedef struct loom_logger_factory {
    uint32_t struct_size;
    uint32_t reserved; /* zero */
    /* Required. [thread: the role's thread (see above)] [owns: config and
     * its strings borrowed for the call; copy what you keep; *out the
     * plugin's until destroy] */
    loom_error *(*create)(const struct loom_logger_factory *self,
                          const loom_logger_config *config,
                          loom_logger_instance **out);
    /* Required. [thread: as create, after the last callback] [owns: takes
     * inst] */
    void (*destroy)(loom_logger_instance *inst);
    /* The four callbacks; each optional (NULL, or past struct_size, is
     * skipped). An error is logged (the driver's log) and the run goes on.
     * Every one: [thread: one at a time per instance, on the role's thread
     * (see above), in the order above] [owns: info, metrics and message
     * borrowed for the call]. */
    loom_error *(*on_train_begin)(loom_logger_instance *inst,
                                  const loom_train_info *info);
    /* epoch: from 1, the epoch trained. [thread: as on_train_begin]
     * [owns: metrics borrowed] */
    loom_error *(*log_train_metrics)(loom_logger_instance *inst,
                                     const loom_metric *metrics,
                                     uint32_t count, uint64_t iteration,
                                     uint32_t epoch, uint32_t workers);
    /* epoch: from 1, the epoch validated (the number of epochs done).
     * [thread: as on_train_begin] [owns: metrics borrowed] */
    loom_error *(*log_test_metrics)(loom_logger_instance *inst,
                                    const loom_metric *metrics, uint32_t count,
                                    uint64_t iteration, uint32_t epoch);
    /* status: loom_train_status. [thread: as on_train_begin] [owns: message
     * borrowed] */
    loom_error *(*on_train_end)(loom_logger_instance *inst, int32_t status,
                                const char *message);
} loom_logger_factory;

#ifdef __cplusplus
}
#endif
#endif

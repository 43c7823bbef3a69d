/*
 * loom/logger.h - logger callbacks ("loom.logger/1"), FabricModel's four
 * methods. A driver logger sees averages over all workers and the global
 * iteration count; a worker logger sees its own step metrics.
 *
 * Threading: the host never calls one instance from two threads at once.
 * Driver loggers run in the host process on the thread that coordinates the
 * exec; worker loggers run on the main thread of each `loom worker`
 * process.
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
     * skipped). An error is logged and the run goes on. Every one: [thread:
     * one at a time per instance, on the role's thread] [owns: info,
     * metrics and message borrowed for the call]. */
    loom_error *(*on_train_begin)(loom_logger_instance *inst,
                                  const loom_train_info *info);
    /* [thread: as on_train_begin] [owns: metrics borrowed] */
    loom_error *(*log_train_metrics)(loom_logger_instance *inst,
                                     const loom_metric *metrics,
                                     uint32_t count, uint64_t iteration,
                                     uint32_t epoch, uint32_t workers);
    /* [thread: as on_train_begin] [owns: metrics borrowed] */
    loom_error *(*log_test_metrics)(loom_logger_instance *inst,
                                    const loom_metric *metrics, uint32_t count,
                                    uint64_t iteration, uint32_t epoch);
    /* [thread: as on_train_begin] [owns: message borrowed] */
    loom_error *(*on_train_end)(loom_logger_instance *inst, int32_t status,
                                const char *message);
} loom_logger_factory;

#ifdef __cplusplus
}
#endif
#endif

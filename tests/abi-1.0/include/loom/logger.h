/*
 * loom/logger.h - logger callbacks ("loom.logger/1"), FabricModel's four
 * methods. A driver logger sees averages over all workers and the global
 * iteration count; a worker logger sees its own step metrics.
 *
 * Threading: the host never calls one instance from two threads at once.
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
    uint32_t reserved;
    const char *exec_id;
    const char *log_dir;     /* the role's own folder under LOG_DIR */
    const char *config_json; /* the logger's settings from the job, or "{}" */
} loom_logger_config;

/* Borrowed for the duration of on_train_begin(). */
typedef struct loom_train_info {
    uint32_t struct_size;
    uint32_t epochs;
    uint32_t workers;
    uint32_t batch_size;           /* per device */
    uint32_t effective_batch_size; /* global */
    uint32_t reserved;
    const char *exec_id;
} loom_train_info;

typedef enum loom_train_status {
    LOOM_TRAIN_FINISHED = 0,
    LOOM_TRAIN_FAILED = 1,
    LOOM_TRAIN_KILLED = 2
} loom_train_status;

typedef struct loom_logger_factory {
    uint32_t struct_size;
    uint32_t reserved;
    /* Required. */
    loom_error *(*create)(const struct loom_logger_factory *self,
                          const loom_logger_config *config,
                          loom_logger_instance **out);
    void (*destroy)(loom_logger_instance *inst);
    /* The four callbacks; each optional (NULL is skipped). Metrics are
     * borrowed for the call. */
    loom_error *(*on_train_begin)(loom_logger_instance *inst,
                                  const loom_train_info *info);
    loom_error *(*log_train_metrics)(loom_logger_instance *inst,
                                     const loom_metric *metrics,
                                     uint32_t count, uint64_t iteration,
                                     uint32_t epoch, uint32_t workers);
    loom_error *(*log_test_metrics)(loom_logger_instance *inst,
                                    const loom_metric *metrics, uint32_t count,
                                    uint64_t iteration, uint32_t epoch);
    loom_error *(*on_train_end)(loom_logger_instance *inst, int32_t status,
                                const char *message);
} loom_logger_factory;

#ifdef __cplusplus
}
#endif
#endif

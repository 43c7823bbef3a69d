/*
 * train/logger_set.h - the logger callbacks of one role (the driver in the
 * coordinator, or one worker): loaded through the plugin registry, called
 * in order, a failing one reported and skipped.
 *
 * The list is JSON: [{"name": "jsonl", "path": "/.../jsonl.so", "role":
 * "driver"|"worker"|"both", "config": {...}}]. With a registry, loggers are
 * taken from it by name; without one (a worker process), each is loaded
 * from its path.
 *
 * With a registry (the host), every logger runs in a `loom plugin-host`
 * child (plugin/plugin_proc.h): a crash or a hang costs one call, and a
 * logger that fails three times in a row is disabled for the exec. An
 * item's optional "deadline_ms" (1-600000, default 5000) bounds each call.
 * Failures are said in the driver's log (LOG_DIR/stdout of the driver).
 */
#ifndef LOOM_TRAIN_LOGGER_SET_H
#define LOOM_TRAIN_LOGGER_SET_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "plugin/registry.h"

typedef struct logger_set logger_set;

/* Never fails as a whole: a logger that cannot be made is logged and left
 * out. Returns NULL only when the list is empty or unparsable. With a
 * `result_dir`, each logger is told it and gets RESULT_DIR/plugins/<name>/,
 * created here, as its own folder to write. */
logger_set *logger_set_open(registry *reg, const char *loggers_json, int32_t role, uint32_t rank,
                            const char *exec_id, const char *log_dir, const char *result_dir);
/* The same for `owner`'s exec (its immutable id, 0: by name): with a
 * registry, each logger's child runs under the owner's account, the one
 * their jobs get, and owns the result directory it writes. */
logger_set *logger_set_open_owned(const char *owner, int64_t owner_id, registry *reg,
                                  const char *loggers_json, int32_t role, uint32_t rank,
                                  const char *exec_id, const char *log_dir, const char *result_dir);
void logger_set_begin(logger_set *s, const loom_train_info *info);
/* Metrics from a JSON object of name -> number. */
void logger_set_train_json(logger_set *s, const cJSON *metrics, uint64_t iteration, uint32_t epoch,
                           uint32_t workers);
void logger_set_test_json(logger_set *s, const cJSON *metrics, uint64_t iteration, uint32_t epoch);
void logger_set_end(logger_set *s, int32_t status, const char *message);
/* The out-of-process loggers that failed, as [{"plugin", "kind",
 * "failures", "failuresInRow", "disabled", "lastError"}], or NULL when
 * none did. The caller owns it. */
cJSON *logger_set_failures(const logger_set *s);
void logger_set_close(logger_set *s);

#endif

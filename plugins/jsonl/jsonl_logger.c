/*
 * plugins/jsonl/jsonl_logger.c - the "jsonl" logger: one JSON object per
 * line in LOG_DIR_OF_ROLE/evaluation-metrics.txt (WMLA's file name), flushed
 * per line so `tail -f` and a crash both see every line written so far.
 *
 *   {"event":"train_begin","epochs":..,"workers":..,"batch_size":..,...}
 *   {"type":"train","iteration":..,"epoch":..,"workers":..,"loss":..}
 *   {"type":"test","iteration":..,"epoch":..,"accuracy":..}
 *   {"event":"train_end","status":"finished","message":..}
 *
 * Every line also carries "time" (Unix seconds). Metrics whose names clash
 * with these keys are skipped rather than written twice.
 */
#include <loom/loom.h>

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define JSONL_FILE_NAME "evaluation-metrics.txt"

static const loom_host *jsonl_host;

struct loom_logger_instance {
    FILE *file;
    char *path;
    int32_t role;
    uint32_t rank;
};

static const char *const reserved_keys[] = {
    "event", "type", "iteration", "epoch", "workers", "time", "role", "rank",
};

static int reserved(const char *name)
{
    for (size_t i = 0; i < sizeof reserved_keys / sizeof *reserved_keys; i++)
        if (strcmp(name, reserved_keys[i]) == 0)
            return 1;
    return 0;
}

/* mkdir -p: the role's folder may not exist yet when the logger starts. */
static int make_dirs(const char *dir)
{
    char path[4096];
    int n = snprintf(path, sizeof path, "%s", dir);
    if (n < 0 || (size_t)n >= sizeof path)
        return -1;
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

static double unix_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)(ts.tv_nsec / 1000000) / 1e3;
}

static cJSON *line_begin(const char *key, const char *value)
{
    cJSON *line = cJSON_CreateObject();
    if (line && !cJSON_AddStringToObject(line, key, value)) {
        cJSON_Delete(line);
        return NULL;
    }
    return line;
}

static int add_metrics(cJSON *line, const loom_metric *metrics, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        if (!metrics[i].name || reserved(metrics[i].name))
            continue;
        /* cJSON writes a NaN or infinite loss as null: the line stays JSON. */
        if (!cJSON_AddNumberToObject(line, metrics[i].name, metrics[i].value))
            return -1;
    }
    return 0;
}

/* Writes and frees `line`; NULL means an earlier allocation failed. */
static loom_error *write_line(loom_logger_instance *inst, cJSON *line)
{
    char *text = NULL;
    if (line && cJSON_AddNumberToObject(line, "time", unix_time()))
        text = cJSON_PrintUnformatted(line);
    cJSON_Delete(line);
    if (!text)
        return jsonl_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED,
                                     "jsonl: out of memory formatting a line");
    int ok = fputs(text, inst->file) >= 0 && fputc('\n', inst->file) != EOF &&
             fflush(inst->file) == 0;
    cJSON_free(text);
    if (!ok)
        return jsonl_host->error_newf(LOOM_ERR_UNAVAILABLE,
                                      "jsonl: cannot write to '%s': %s",
                                      inst->path, strerror(errno));
    return NULL;
}

static void jsonl_destroy(loom_logger_instance *inst)
{
    if (!inst)
        return;
    if (inst->file)
        fclose(inst->file);
    free(inst->path);
    free(inst);
}

static loom_error *jsonl_create(const loom_logger_factory *self,
                                const loom_logger_config *config,
                                loom_logger_instance **out)
{
    (void)self;
    *out = NULL;
    if (!config->log_dir || !config->log_dir[0])
        return jsonl_host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                                     "jsonl: the logger config has no log_dir");
    if (make_dirs(config->log_dir) != 0)
        return jsonl_host->error_newf(LOOM_ERR_UNAVAILABLE,
                                      "jsonl: cannot create log_dir '%s': %s",
                                      config->log_dir, strerror(errno));
    loom_logger_instance *inst = calloc(1, sizeof *inst);
    if (!inst || asprintf(&inst->path, "%s/%s", config->log_dir, JSONL_FILE_NAME) < 0) {
        free(inst);
        return jsonl_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED,
                                     "jsonl: out of memory creating the logger");
    }
    /* Append: a resumed job keeps the lines of its earlier attempts. */
    inst->file = fopen(inst->path, "a");
    if (!inst->file) {
        loom_error *err = jsonl_host->error_newf(
            LOOM_ERR_UNAVAILABLE, "jsonl: cannot open '%s' for appending: %s",
            inst->path, strerror(errno));
        jsonl_destroy(inst);
        return err;
    }
    inst->role = config->role;
    inst->rank = config->rank;
    *out = inst;
    return NULL;
}

static loom_error *jsonl_train_begin(loom_logger_instance *inst,
                                     const loom_train_info *info)
{
    cJSON *line = line_begin("event", "train_begin");
    int ok = line != NULL;
    ok = ok && cJSON_AddStringToObject(line, "role",
                                       inst->role == LOOM_LOGGER_WORKER ? "worker" : "driver");
    ok = ok && cJSON_AddNumberToObject(line, "rank", inst->rank);
    ok = ok && cJSON_AddNumberToObject(line, "epochs", info->epochs);
    ok = ok && cJSON_AddNumberToObject(line, "workers", info->workers);
    ok = ok && cJSON_AddNumberToObject(line, "batch_size", info->batch_size);
    ok = ok && cJSON_AddNumberToObject(line, "effective_batch_size",
                                       info->effective_batch_size);
    if (ok && info->exec_id)
        ok = cJSON_AddStringToObject(line, "exec_id", info->exec_id) != NULL;
    if (!ok) {
        cJSON_Delete(line);
        line = NULL;
    }
    return write_line(inst, line);
}

static loom_error *jsonl_train_metrics(loom_logger_instance *inst,
                                       const loom_metric *metrics,
                                       uint32_t count, uint64_t iteration,
                                       uint32_t epoch, uint32_t workers)
{
    cJSON *line = line_begin("type", "train");
    int ok = line && cJSON_AddNumberToObject(line, "iteration", (double)iteration) &&
             cJSON_AddNumberToObject(line, "epoch", epoch) &&
             cJSON_AddNumberToObject(line, "workers", workers) &&
             add_metrics(line, metrics, count) == 0;
    if (!ok) {
        cJSON_Delete(line);
        line = NULL;
    }
    return write_line(inst, line);
}

static loom_error *jsonl_test_metrics(loom_logger_instance *inst,
                                      const loom_metric *metrics,
                                      uint32_t count, uint64_t iteration,
                                      uint32_t epoch)
{
    cJSON *line = line_begin("type", "test");
    int ok = line && cJSON_AddNumberToObject(line, "iteration", (double)iteration) &&
             cJSON_AddNumberToObject(line, "epoch", epoch) &&
             add_metrics(line, metrics, count) == 0;
    if (!ok) {
        cJSON_Delete(line);
        line = NULL;
    }
    return write_line(inst, line);
}

static const char *status_name(int32_t status)
{
    switch (status) {
    case LOOM_TRAIN_FINISHED: return "finished";
    case LOOM_TRAIN_FAILED: return "failed";
    case LOOM_TRAIN_KILLED: return "killed";
    default: return "unknown";
    }
}

static loom_error *jsonl_train_end(loom_logger_instance *inst, int32_t status,
                                   const char *message)
{
    cJSON *line = line_begin("event", "train_end");
    int ok = line && cJSON_AddStringToObject(line, "status", status_name(status));
    if (ok && message)
        ok = cJSON_AddStringToObject(line, "message", message) != NULL;
    if (!ok) {
        cJSON_Delete(line);
        line = NULL;
    }
    return write_line(inst, line);
}

static const loom_logger_factory jsonl_factory = {
    .struct_size = sizeof(loom_logger_factory),
    .create = jsonl_create,
    .destroy = jsonl_destroy,
    .on_train_begin = jsonl_train_begin,
    .log_train_metrics = jsonl_train_metrics,
    .log_test_metrics = jsonl_test_metrics,
    .on_train_end = jsonl_train_end,
};

static loom_error *jsonl_init(const loom_host *host)
{
    jsonl_host = host;
    return NULL;
}

static const void *jsonl_get_factory(const char *factory_id)
{
    if (factory_id && strcmp(factory_id, LOOM_LOGGER_FACTORY_ID) == 0)
        return &jsonl_factory;
    return NULL;
}

static const loom_module jsonl_module = {
    LOOM_MODULE_HEADER,
    .id = "jsonl",
    .version = "1.0.0",
    .description = "Writes training and test metrics as JSON lines to "
                   "evaluation-metrics.txt in the role's log folder",
    .init = jsonl_init,
    .get_factory = jsonl_get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &jsonl_module;
}

/* train/logger_set.c - see logger_set.h. */
#include "train/logger_set.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

#define MAX_LOGGERS 8

typedef struct one_logger {
    char name[LOOM_NAME_MAX];
    const loom_logger_factory *f;
    loom_logger_instance *inst;
} one_logger;

struct logger_set {
    registry *own;    /* loaded from paths (worker processes) */
    registry *shared; /* the host's */
    one_logger items[MAX_LOGGERS];
    int count;
};

static void report(one_logger *l, const char *what, loom_error *e)
{
    if (!e)
        return;
    log_warn("logger %s: %s failed: %s", l->name, what, loom_err_message(e));
    loom_err_free(e);
}

static int role_matches(const char *want, int32_t role)
{
    if (!want || !strcmp(want, "both"))
        return 1;
    return role == LOOM_LOGGER_DRIVER ? !strcmp(want, "driver") : !strcmp(want, "worker");
}

/* RESULT_DIR/plugins/<name>/, created; "" when there is no result dir or
 * it cannot be made (the logger is then told NULL). */
static void own_folder(const char *result_dir, const char *name, char *out, size_t cap)
{
    if (!result_dir || snprintf(out, cap, "%s/plugins/%s", result_dir, name) >= (int)cap) {
        out[0] = 0;
        return;
    }
    if (fs_mkdir_p(out) != 0) {
        log_warn("logger %s: cannot create %s; it gets no folder of its own", name, out);
        out[0] = 0;
    }
}

logger_set *logger_set_open(registry *reg, const char *loggers_json, int32_t role, uint32_t rank,
                            const char *exec_id, const char *log_dir, const char *result_dir)
{
    cJSON *list = loggers_json ? cJSON_Parse(loggers_json) : NULL;
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0) {
        cJSON_Delete(list);
        return NULL;
    }
    logger_set *s = calloc(1, sizeof *s);
    if (!s) {
        cJSON_Delete(list);
        return NULL;
    }
    s->shared = reg;
    if (!reg)
        s->own = registry_create();
    if (log_dir)
        fs_mkdir_p(log_dir);
    const cJSON *item;
    cJSON_ArrayForEach(item, list) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "name");
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(item, "path");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(item, "role");
        if (!cJSON_IsString(name) || !role_matches(cJSON_IsString(r) ? r->valuestring : NULL, role) ||
            s->count == MAX_LOGGERS)
            continue;
        registry_entry e;
        loom_error *why = NULL;
        int found;
        if (reg) {
            found = registry_acquire(reg, LOOM_KIND_LOGGER, name->valuestring, &e) == 0;
        } else {
            found = cJSON_IsString(path) &&
                    !(why = registry_load(s->own, path->valuestring, "job", NULL, LOOM_KIND_LOGGER, 0)) &&
                    registry_acquire(s->own, LOOM_KIND_LOGGER, name->valuestring, &e) == 0;
        }
        if (!found) {
            log_warn("logger %s not available%s%s; skipped", name->valuestring, why ? ": " : "",
                     why ? loom_err_message(why) : "");
            loom_err_free(why);
            continue;
        }
        one_logger *l = &s->items[s->count];
        snprintf(l->name, sizeof l->name, "%s", e.name);
        l->f = e.factory;
        const cJSON *conf = cJSON_GetObjectItemCaseSensitive(item, "config");
        char *conf_text = conf ? cJSON_PrintUnformatted(conf) : NULL;
        char own[PATH_MAX];
        own_folder(result_dir, e.name, own, sizeof own);
        loom_logger_config cfg = {
            .struct_size = sizeof cfg,
            .role = role,
            .rank = rank,
            .exec_id = exec_id ? exec_id : "",
            .log_dir = log_dir ? log_dir : ".",
            .config_json = conf_text ? conf_text : "{}",
            .result_dir = result_dir,
            .plugin_dir = own[0] ? own : NULL,
        };
        loom_error *err_obj = l->f->create(l->f, &cfg, &l->inst);
        free(conf_text);
        if (err_obj) {
            report(l, "create", err_obj);
            if (reg)
                registry_release(reg, LOOM_KIND_LOGGER, e.name);
            continue;
        }
        s->count++;
    }
    cJSON_Delete(list);
    return s;
}

/* Up to LOOM_MAX_METRICS numbers of a JSON object, borrowed names. */
static uint32_t metrics_of(const cJSON *obj, loom_metric *out)
{
    uint32_t n = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        if (n < LOOM_MAX_METRICS && cJSON_IsNumber(v))
            out[n++] = (loom_metric){.name = v->string, .value = v->valuedouble};
    }
    return n;
}

void logger_set_begin(logger_set *s, const loom_train_info *info)
{
    for (int i = 0; s && i < s->count; i++) {
        one_logger *l = &s->items[i];
        if (LOOM_OPTIONAL_ENTRY(l->f, loom_logger_factory, on_train_begin))
            report(l, "on_train_begin", l->f->on_train_begin(l->inst, info));
    }
}

void logger_set_train_json(logger_set *s, const cJSON *metrics, uint64_t iteration, uint32_t epoch,
                           uint32_t workers)
{
    loom_metric m[LOOM_MAX_METRICS];
    uint32_t n = metrics_of(metrics, m);
    for (int i = 0; s && i < s->count; i++) {
        one_logger *l = &s->items[i];
        if (LOOM_OPTIONAL_ENTRY(l->f, loom_logger_factory, log_train_metrics))
            report(l, "log_train_metrics", l->f->log_train_metrics(l->inst, m, n, iteration, epoch, workers));
    }
}

void logger_set_test_json(logger_set *s, const cJSON *metrics, uint64_t iteration, uint32_t epoch)
{
    loom_metric m[LOOM_MAX_METRICS];
    uint32_t n = metrics_of(metrics, m);
    for (int i = 0; s && i < s->count; i++) {
        one_logger *l = &s->items[i];
        if (LOOM_OPTIONAL_ENTRY(l->f, loom_logger_factory, log_test_metrics))
            report(l, "log_test_metrics", l->f->log_test_metrics(l->inst, m, n, iteration, epoch));
    }
}

void logger_set_end(logger_set *s, int32_t status, const char *message)
{
    for (int i = 0; s && i < s->count; i++) {
        one_logger *l = &s->items[i];
        if (LOOM_OPTIONAL_ENTRY(l->f, loom_logger_factory, on_train_end))
            report(l, "on_train_end", l->f->on_train_end(l->inst, status, message));
    }
}

void logger_set_close(logger_set *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->count; i++) {
        s->items[i].f->destroy(s->items[i].inst);
        if (s->shared)
            registry_release(s->shared, LOOM_KIND_LOGGER, s->items[i].name);
    }
    registry_destroy(s->own);
    free(s);
}

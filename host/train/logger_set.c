/* train/logger_set.c - see logger_set.h. */
#include "train/logger_set.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/plugin.h"
#include "plugin/plugin_proc.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/user_tree.h"

#define MAX_LOGGERS 8

/* A logger runs in this process (f, inst: a worker, already a process of
 * its own) or, in the host, in a plugin-host child (proc). */
typedef struct one_logger {
    char name[LOOM_NAME_MAX];
    const loom_logger_factory *f;
    loom_logger_instance *inst;
    plugin_proc *proc;
    uint32_t entries; /* WIRE_HAS_*: what the child's plugin has */
    int disabled_said;
} one_logger;

struct logger_set {
    registry *own;    /* loaded from paths (worker processes) */
    registry *shared; /* the host's */
    FILE *driver_log; /* the driver's stdout, where its owner looks */
    const char *owner; /* whose exec: its plugin-host children run as them */
    int64_t owner_id;
    wire_buf frame;
    one_logger items[MAX_LOGGERS];
    int count;
};

/* A line for the job's owner: the driver log (when there is one) and the
 * host log. */
static void say(logger_set *s, const char *line)
{
    log_warn("%s", line);
    if (s->driver_log) {
        fprintf(s->driver_log, "%s\n", line);
        fflush(s->driver_log);
    }
}

/* A failed call: said once per failure; once a logger is disabled, said
 * so and then silent. */
static void report(logger_set *s, one_logger *l, const char *what, loom_error *e)
{
    if (!e)
        return;
    char line[1024];
    if (!l->disabled_said) {
        snprintf(line, sizeof line, "logger %s: %s failed: %s", l->name, what, loom_err_message(e));
        say(s, line);
    }
    if (l->proc && plugin_proc_disabled(l->proc) && !l->disabled_said) {
        snprintf(line, sizeof line,
                 "logger %s disabled for this exec after %u failures in a row (crashed, hung "
                 "or over a limit); it is not called again",
                 l->name, plugin_proc_failures_in_row(l->proc));
        say(s, line);
        l->disabled_said = 1;
    }
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
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "plugins/%s", name);
    loom_error *e = utree_mkdirs_in(result_dir, rel, 0755); /* the job's folder */
    if (e) {
        log_warn("logger %s: it gets no folder of its own: %s", name, loom_err_message(e));
        loom_err_free(e);
        out[0] = 0;
    }
}

/* The create request for a plugin-host child, kept and replayed into every
 * new one. */
static void put_create(wire_buf *b, const loom_logger_config *cfg)
{
    wire_begin(b);
    wire_put_u8(b, WIRE_LOGGER_CREATE);
    wire_put_i32(b, cfg->role);
    wire_put_u32(b, cfg->rank);
    wire_put_str(b, cfg->exec_id);
    wire_put_str(b, cfg->log_dir);
    wire_put_str(b, cfg->config_json);
    wire_put_str(b, cfg->result_dir);
    wire_put_str(b, cfg->plugin_dir);
    wire_finish(b);
}

/* In the host (a registry given), the logger runs in a plugin-host child
 * of this binary; its per-call deadline is the item's "deadline_ms". */
static loom_error *create_out_of_process(logger_set *s, one_logger *l, const registry_entry *e,
                                         const cJSON *item, const loom_logger_config *cfg)
{
    char self[PATH_MAX];
    if (!fs_self_exe(self, sizeof self))
        return loom_err(LOOM_E_INTERNAL, "cannot find the loom binary to run the logger in");
    const cJSON *deadline = cJSON_GetObjectItemCaseSensitive(item, "deadline_ms");
    /* What the plugin prints (and a crash report) goes to its owner. */
    char output[PATH_MAX];
    int has_output = snprintf(output, sizeof output, "%s/plugin-%s.log", cfg->log_dir, e->name) <
                     (int)sizeof output;
    plugin_proc_spec spec = {
        .output = has_output ? output : NULL,
        .binary = self,
        .plugin_path = e->path,
        .name = e->name,
        .kind = "logger",
        .write_dir = cfg->result_dir,
        .owner = s->owner,
        .owner_id = s->owner_id,
        .deadline_ms = cJSON_IsNumber(deadline) && deadline->valuedouble >= 1 &&
                               deadline->valuedouble <= 600000
                           ? (unsigned)deadline->valuedouble
                           : 0,
    };
    l->proc = plugin_proc_new(&spec);
    if (!l->proc)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    put_create(&s->frame, cfg);
    loom_error *err = plugin_proc_call(l->proc, "create", &s->frame, 1);
    if (!err) {
        wire_reader r = plugin_proc_reply(l->proc);
        l->entries = wire_get_u32(&r);
    }
    if (err) {
        plugin_proc_free(l->proc);
        l->proc = NULL;
    }
    return err;
}

/* Finds the item's logger and makes its instance; 0 when it is usable. */
static int open_one(logger_set *s, const cJSON *item, const char *name, int32_t role, uint32_t rank,
                    const char *exec_id, const char *log_dir, const char *result_dir)
{
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(item, "path");
    registry_entry e;
    loom_error *why = NULL;
    int found;
    if (s->shared) {
        found = registry_acquire(s->shared, LOOM_KIND_LOGGER, name, &e) == 0;
    } else {
        found = cJSON_IsString(path) &&
                !(why = registry_load(s->own, path->valuestring, "job", NULL, LOOM_KIND_LOGGER, 0)) &&
                registry_acquire(s->own, LOOM_KIND_LOGGER, name, &e) == 0;
    }
    if (!found) {
        log_warn("logger %s not available%s%s; skipped", name, why ? ": " : "",
                 why ? loom_err_message(why) : "");
        loom_err_free(why);
        return -1;
    }
    one_logger *l = &s->items[s->count];
    memset(l, 0, sizeof *l);
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
    loom_error *err_obj = s->shared ? create_out_of_process(s, l, &e, item, &cfg)
                                    : l->f->create(l->f, &cfg, &l->inst);
    free(conf_text);
    if (err_obj) {
        report(s, l, "create", err_obj);
        if (s->shared)
            registry_release(s->shared, LOOM_KIND_LOGGER, e.name);
        return -1;
    }
    return 0;
}

logger_set *logger_set_open(registry *reg, const char *loggers_json, int32_t role, uint32_t rank,
                            const char *exec_id, const char *log_dir, const char *result_dir)
{
    return logger_set_open_owned(NULL, 0, reg, loggers_json, role, rank, exec_id, log_dir,
                                 result_dir);
}

logger_set *logger_set_open_owned(const char *owner, int64_t owner_id, registry *reg,
                                  const char *loggers_json, int32_t role, uint32_t rank,
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
    s->owner = owner; /* only open_one reads it */
    s->owner_id = owner_id;
    if (!reg)
        s->own = registry_create();
    if (log_dir) /* a folder that cannot be made: the loggers say so */
        loom_err_free(fs_mkdir_p(log_dir));
    /* The driver's log is its folder's stdout, which the coordinator
     * writes too: whole lines, appended, interleave cleanly. */
    char driver_log[PATH_MAX];
    if (role == LOOM_LOGGER_DRIVER && log_dir &&
        snprintf(driver_log, sizeof driver_log, "%s/stdout", log_dir) < (int)sizeof driver_log) {
        int fd = -1; /* in the job's folder: opened beneath it, not by path */
        loom_error *e = utree_open_append_path(driver_log, 0644, &fd);
        s->driver_log = e ? NULL : fdopen(fd, "a");
        if (!e && !s->driver_log)
            close(fd);
        loom_err_free(e);
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, list) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "name");
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(item, "role");
        if (!cJSON_IsString(name) || !role_matches(cJSON_IsString(r) ? r->valuestring : NULL, role) ||
            s->count == MAX_LOGGERS)
            continue;
        if (open_one(s, item, name->valuestring, role, rank, exec_id, log_dir, result_dir) == 0)
            s->count++;
    }
    cJSON_Delete(list);
    s->owner = NULL;
    return s;
}

/* Up to LOOM_HOST_MAX_METRICS numbers of a JSON object, borrowed names. */
static uint32_t metrics_of(const cJSON *obj, loom_metric *out)
{
    uint32_t n = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        if (n < LOOM_HOST_MAX_METRICS && cJSON_IsNumber(v))
            out[n++] = (loom_metric){.name = v->string, .value = v->valuedouble};
    }
    return n;
}

static void put_metrics(wire_buf *b, const loom_metric *m, uint32_t n)
{
    wire_put_u32(b, n);
    for (uint32_t i = 0; i < n; i++) {
        wire_put_str(b, m[i].name);
        wire_put_f64(b, m[i].value);
    }
}

/* Sends the set's frame to an out-of-process logger. */
static loom_error *remote(logger_set *s, one_logger *l, const char *what, int keep)
{
    if (wire_finish(&s->frame) != 0)
        return loom_err(LOOM_E_INTERNAL, "logger %s: %s: the request could not be built", l->name,
                        what);
    return plugin_proc_call(l->proc, what, &s->frame, keep);
}

/* Whether to call an optional entry: the factory says, when this process
 * has it; a plugin the host only knows by description (a NULL factory)
 * is asked in its child, which skips an entry the plugin left out. */
static int has_entry(const one_logger *l, const void *entry, uint32_t bit)
{
    return entry != NULL || (!l->f && l->proc && (l->entries & bit));
}

void logger_set_begin(logger_set *s, const loom_train_info *info)
{
    for (int i = 0; s && i < s->count; i++) {
        one_logger *l = &s->items[i];
        if (!has_entry(l, LOOM_OPTIONAL_ENTRY(l->f, loom_logger_factory, on_train_begin), WIRE_HAS_BEGIN))
            continue;
        if (!l->proc) {
            report(s, l, "on_train_begin", l->f->on_train_begin(l->inst, info));
            continue;
        }
        wire_begin(&s->frame);
        wire_put_u8(&s->frame, WIRE_LOGGER_BEGIN);
        wire_put_u32(&s->frame, info->epochs);
        wire_put_u32(&s->frame, info->workers);
        wire_put_u32(&s->frame, info->batch_size);
        wire_put_u32(&s->frame, info->effective_batch_size);
        wire_put_str(&s->frame, info->exec_id);
        /* Kept: a restarted child is told again that training began. */
        report(s, l, "on_train_begin", remote(s, l, "on_train_begin", 1));
    }
}

void logger_set_train_json(logger_set *s, const cJSON *metrics, uint64_t iteration, uint32_t epoch,
                           uint32_t workers)
{
    loom_metric m[LOOM_HOST_MAX_METRICS];
    uint32_t n = metrics_of(metrics, m);
    for (int i = 0; s && i < s->count; i++) {
        one_logger *l = &s->items[i];
        if (!has_entry(l, LOOM_OPTIONAL_ENTRY(l->f, loom_logger_factory, log_train_metrics), WIRE_HAS_TRAIN))
            continue;
        if (!l->proc) {
            report(s, l, "log_train_metrics",
                   l->f->log_train_metrics(l->inst, m, n, iteration, epoch, workers));
            continue;
        }
        wire_begin(&s->frame);
        wire_put_u8(&s->frame, WIRE_LOGGER_TRAIN);
        put_metrics(&s->frame, m, n);
        wire_put_u64(&s->frame, iteration);
        wire_put_u32(&s->frame, epoch);
        wire_put_u32(&s->frame, workers);
        report(s, l, "log_train_metrics", remote(s, l, "log_train_metrics", 0));
    }
}

void logger_set_test_json(logger_set *s, const cJSON *metrics, uint64_t iteration, uint32_t epoch)
{
    loom_metric m[LOOM_HOST_MAX_METRICS];
    uint32_t n = metrics_of(metrics, m);
    for (int i = 0; s && i < s->count; i++) {
        one_logger *l = &s->items[i];
        if (!has_entry(l, LOOM_OPTIONAL_ENTRY(l->f, loom_logger_factory, log_test_metrics), WIRE_HAS_TEST))
            continue;
        if (!l->proc) {
            report(s, l, "log_test_metrics", l->f->log_test_metrics(l->inst, m, n, iteration, epoch));
            continue;
        }
        wire_begin(&s->frame);
        wire_put_u8(&s->frame, WIRE_LOGGER_TEST);
        put_metrics(&s->frame, m, n);
        wire_put_u64(&s->frame, iteration);
        wire_put_u32(&s->frame, epoch);
        report(s, l, "log_test_metrics", remote(s, l, "log_test_metrics", 0));
    }
}

void logger_set_end(logger_set *s, int32_t status, const char *message)
{
    for (int i = 0; s && i < s->count; i++) {
        one_logger *l = &s->items[i];
        if (!has_entry(l, LOOM_OPTIONAL_ENTRY(l->f, loom_logger_factory, on_train_end), WIRE_HAS_END))
            continue;
        if (!l->proc) {
            report(s, l, "on_train_end", l->f->on_train_end(l->inst, status, message));
            continue;
        }
        wire_begin(&s->frame);
        wire_put_u8(&s->frame, WIRE_LOGGER_END);
        wire_put_i32(&s->frame, status);
        wire_put_str(&s->frame, message);
        report(s, l, "on_train_end", remote(s, l, "on_train_end", 0));
    }
}

cJSON *logger_set_failures(const logger_set *s)
{
    cJSON *list = NULL;
    for (int i = 0; s && i < s->count; i++) {
        const plugin_proc *p = s->items[i].proc;
        if (!p || plugin_proc_failures_total(p) == 0)
            continue;
        if (!list)
            list = cJSON_CreateArray();
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "plugin", s->items[i].name);
        cJSON_AddStringToObject(o, "kind", "logger");
        cJSON_AddNumberToObject(o, "failures", plugin_proc_failures_total(p));
        cJSON_AddNumberToObject(o, "failuresInRow", plugin_proc_failures_in_row(p));
        cJSON_AddBoolToObject(o, "disabled", plugin_proc_disabled(p));
        cJSON_AddStringToObject(o, "lastError", plugin_proc_last_error(p));
        cJSON_AddItemToArray(list, o);
    }
    return list;
}

void logger_set_close(logger_set *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->count; i++) {
        if (s->items[i].proc)
            plugin_proc_free(s->items[i].proc);
        else
            s->items[i].f->destroy(s->items[i].inst);
        if (s->shared)
            registry_release(s->shared, LOOM_KIND_LOGGER, s->items[i].name);
    }
    registry_destroy(s->own);
    wire_free(&s->frame);
    if (s->driver_log)
        fclose(s->driver_log);
    free(s);
}

/*
 * plugin/lua_logger.c - logger callbacks written in Lua.
 *
 *     loom.register_logger{name = "x",
 *         init = function(config) end,  -- {role, rank, exec_id, log_dir,
 *                                       --  result_dir, plugin_dir, config}
 *         on_train_begin = function(info) end,
 *         log_train_metrics = function(metrics, iteration, epoch, workers) end,
 *         log_test_metrics = function(metrics, iteration, epoch) end,
 *         on_train_end = function(status, message) end}
 *
 * All optional. A logger instance may call loom.append(file, text) to
 * append to a file in its own folder (plugin_dir), within the exec's
 * plugin write limit.
 */
#include "plugin/lua_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/host_api.h"
#include "util/user_tree.h"

#define DEFAULT_WRITE_LIMIT ((uint64_t)64 << 20)

/* LOOM_PLUGIN_WRITE_LIMIT: bytes, or with a K, M or G suffix; the default
 * (64 MiB) when unset or unreadable. */
static uint64_t write_limit(void)
{
    const char *text = getenv("LOOM_PLUGIN_WRITE_LIMIT");
    if (!text || !*text)
        return DEFAULT_WRITE_LIMIT;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(text, &end, 10);
    unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (shift)
        end++;
    if (errno || *end || end == text || n > (UINT64_MAX >> shift))
        return DEFAULT_WRITE_LIMIT;
    return (uint64_t)n << shift;
}

/* Bytes in the regular files of every plugin's folder of the exec (the
 * parent of `plugin_dir`): what the exec's plugins have written so far. */
static uint64_t plugins_usage(const char *plugin_dir)
{
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", plugin_dir);
    char *slash = strrchr(parent, '/');
    if (!slash || slash == parent)
        return 0;
    *slash = 0;
    /* The exec folder is the job's: listed beneath it (util/user_tree),
     * sizes read without following a link. */
    uint64_t total = 0;
    int root = -1;
    DIR *top = NULL;
    if (loom_err_take(utree_root(parent, &root), NULL, 0) == LOOM_OK)
        loom_err_free(utree_list(root, "", &top));
    struct dirent *d;
    while (top && (d = readdir(top))) {
        DIR *in = NULL;
        if (d->d_name[0] == '.' ||
            loom_err_take(utree_list(root, d->d_name, &in), NULL, 0) != LOOM_OK)
            continue;
        struct dirent *f;
        struct stat st;
        while ((f = readdir(in)))
            if (fstatat(dirfd(in), f->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISREG(st.st_mode))
                total += (uint64_t)st.st_size;
        closedir(in);
    }
    if (top)
        closedir(top);
    if (root >= 0)
        close(root);
    return total;
}

/* One body serves every callback: the arguments are pushed by a small
 * function per callback. */
struct logger_call {
    lua_instance *inst;
    const char *function;
    int (*push_args)(lua_State *L, const struct logger_call *call);
    const void *data;
    const loom_metric *metrics;
    uint32_t count;
    uint64_t iteration;
    uint32_t epoch, workers;
    int32_t status;
    const char *message;
};

static int logger_body(lua_State *L)
{
    struct logger_call *call = lua_touserdata(L, 1);
    if (!lua_instance_get_function(L, call->inst, call->function))
        return 0;
    int nargs = call->push_args(L, call);
    lua_call(L, nargs, 0);
    return 0;
}

static int push_init(lua_State *L, const struct logger_call *call)
{
    const loom_logger_config *c = call->data;
    lua_createtable(L, 0, 5);
    lua_set_string(L, "role", c->role == LOOM_LOGGER_WORKER ? "worker" : "driver");
    lua_set_integer(L, "rank", c->rank);
    lua_set_string(L, "exec_id", c->exec_id);
    lua_set_string(L, "log_dir", c->log_dir);
    if (LOOM_STRUCT_HAS(c, loom_logger_config, plugin_dir)) {
        lua_set_string(L, "result_dir", c->result_dir);
        lua_set_string(L, "plugin_dir", c->plugin_dir);
    }
    lua_json_push(L, c->config_json, "logger config_json");
    lua_setfield(L, -2, "config");
    return 1;
}

static loom_error *logger_create(const loom_logger_factory *self,
                                 const loom_logger_config *config,
                                 loom_logger_instance **out)
{
    const lua_entry *entry = (const lua_entry *)self;
    if (!config || !out)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s: create needs a config and an output pointer",
                        entry->label);
    /* loom.append writes only in the logger's own folder, and all of the
     * exec's plugins together at most the write limit. */
    const char *own = LOOM_STRUCT_HAS(config, loom_logger_config, plugin_dir)
                          ? config->plugin_dir
                          : NULL;
    uint64_t limit = write_limit();
    uint64_t used = own ? plugins_usage(own) : 0;
    lua_instance *inst;
    loom_error *err = lua_instance_new(entry, own, used < limit ? limit - used : 0, &inst);
    if (err)
        return err;
    inst->box.append_limit = limit;
    struct logger_call call = {.inst = inst, .function = "init",
                               .push_args = push_init, .data = config};
    err = lua_instance_call(inst, "init", logger_body, &call);
    if (err) {
        lua_instance_free(inst);
        return err;
    }
    *out = (loom_logger_instance *)inst;
    return NULL;
}

static void logger_destroy(loom_logger_instance *inst)
{
    lua_instance_free((lua_instance *)inst);
}

static int push_train_info(lua_State *L, const struct logger_call *call)
{
    const loom_train_info *info = call->data;
    lua_createtable(L, 0, 5);
    lua_set_integer(L, "epochs", info->epochs);
    lua_set_integer(L, "workers", info->workers);
    lua_set_integer(L, "batch_size", info->batch_size);
    lua_set_integer(L, "effective_batch_size", info->effective_batch_size);
    lua_set_string(L, "exec_id", info->exec_id);
    return 1;
}

static loom_error *logger_on_train_begin(loom_logger_instance *inst,
                                         const loom_train_info *info)
{
    if (!info)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "on_train_begin needs the training info");
    struct logger_call call = {.inst = (lua_instance *)inst,
                               .function = "on_train_begin",
                               .push_args = push_train_info, .data = info};
    return lua_instance_call(call.inst, call.function, logger_body, &call);
}

static int push_train_metrics(lua_State *L, const struct logger_call *call)
{
    lua_push_metrics(L, call->metrics, call->count);
    lua_pushinteger(L, (lua_Integer)call->iteration);
    lua_pushinteger(L, call->epoch);
    lua_pushinteger(L, call->workers);
    return 4;
}

static loom_error *logger_log_train_metrics(loom_logger_instance *inst,
                                            const loom_metric *metrics,
                                            uint32_t count, uint64_t iteration,
                                            uint32_t epoch, uint32_t workers)
{
    struct logger_call call = {.inst = (lua_instance *)inst,
                               .function = "log_train_metrics",
                               .push_args = push_train_metrics,
                               .metrics = metrics, .count = metrics ? count : 0,
                               .iteration = iteration, .epoch = epoch,
                               .workers = workers};
    return lua_instance_call(call.inst, call.function, logger_body, &call);
}

static int push_test_metrics(lua_State *L, const struct logger_call *call)
{
    lua_push_metrics(L, call->metrics, call->count);
    lua_pushinteger(L, (lua_Integer)call->iteration);
    lua_pushinteger(L, call->epoch);
    return 3;
}

static loom_error *logger_log_test_metrics(loom_logger_instance *inst,
                                           const loom_metric *metrics,
                                           uint32_t count, uint64_t iteration,
                                           uint32_t epoch)
{
    struct logger_call call = {.inst = (lua_instance *)inst,
                               .function = "log_test_metrics",
                               .push_args = push_test_metrics,
                               .metrics = metrics, .count = metrics ? count : 0,
                               .iteration = iteration, .epoch = epoch};
    return lua_instance_call(call.inst, call.function, logger_body, &call);
}

static int push_train_end(lua_State *L, const struct logger_call *call)
{
    static const char *const names[] = {"FINISHED", "FAILED", "KILLED"};
    lua_pushstring(L, call->status >= 0 && call->status <= 2
                          ? names[call->status]
                          : "UNKNOWN");
    lua_pushstring(L, call->message ? call->message : "");
    return 2;
}

static loom_error *logger_on_train_end(loom_logger_instance *inst,
                                       int32_t status, const char *message)
{
    struct logger_call call = {.inst = (lua_instance *)inst,
                               .function = "on_train_end",
                               .push_args = push_train_end, .status = status,
                               .message = message};
    return lua_instance_call(call.inst, call.function, logger_body, &call);
}

void lua_logger_fill(lua_entry *entry, lua_State *L, int def)
{
    loom_logger_factory *f = &entry->vt.logger;
    f->struct_size = sizeof *f;
    f->create = logger_create;
    f->destroy = logger_destroy;
    /* Callbacks the script leaves out stay NULL: the host skips them. */
    if (lua_api_has_function(L, def, "on_train_begin"))
        f->on_train_begin = logger_on_train_begin;
    if (lua_api_has_function(L, def, "log_train_metrics"))
        f->log_train_metrics = logger_log_train_metrics;
    if (lua_api_has_function(L, def, "log_test_metrics"))
        f->log_test_metrics = logger_log_test_metrics;
    if (lua_api_has_function(L, def, "on_train_end"))
        f->on_train_end = logger_on_train_end;
}

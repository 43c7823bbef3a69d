/*
 * plugin/lua_framework.c - launch-style framework adapters written in Lua.
 *
 *     loom.register_framework{name = "x", style = "launch",
 *         plan = function(req) return {{argv = {...}, env = {...}}} end}
 *
 * `req` holds the loom_launch_request fields (args and msd_env as arrays);
 * each worker's `env` is an array of "K=V" strings or a table K -> V, `cwd`
 * is optional. plan_launch has no instance, so it runs in a temporary
 * sandbox made for the call.
 */
#include "plugin/lua_internal.h"

#include <stdlib.h>
#include <string.h>

#include "plugin/host_api.h"

struct plan_call {
    lua_instance *inst;
    const loom_launch_request *request;
    const loom_launch_sink *sink;
};

static void push_string_array(lua_State *L, const char *const *items,
                              uint32_t count)
{
    lua_createtable(L, (int)count, 0);
    for (uint32_t i = 0; items && i < count; i++) {
        lua_pushstring(L, items[i] ? items[i] : "");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

static void push_request(lua_State *L, const loom_launch_request *r)
{
    lua_createtable(L, 0, 16);
    lua_set_integer(L, "num_workers", r->num_workers);
    lua_set_integer(L, "worker_device_num", r->worker_device_num);
    lua_set_integer(L, "master_port", r->master_port);
    lua_set_string(L, "exec_id", r->exec_id);
    lua_set_string(L, "code_dir", r->code_dir);
    lua_set_string(L, "model_main", r->model_main);
    lua_set_string(L, "data_dir", r->data_dir);
    lua_set_string(L, "result_dir", r->result_dir);
    lua_set_string(L, "log_dir", r->log_dir);
    lua_set_string(L, "device_type", r->device_type);
    lua_set_string(L, "master_addr", r->master_addr);
    push_string_array(L, r->args, r->arg_count);
    lua_setfield(L, -2, "args");
    push_string_array(L, r->msd_env, r->msd_env_count);
    lua_setfield(L, -2, "msd_env");
    /* ABI 1.7: each worker's node by rank ({} on one machine) */
    const char *const *nodes =
        LOOM_STRUCT_HAS(r, loom_launch_request, worker_nodes) ? r->worker_nodes : NULL;
    push_string_array(L, nodes, nodes ? r->num_workers : 0);
    lua_setfield(L, -2, "worker_nodes");
}

/* Strings and numbers; numbers are converted on the stack, never inside
 * the table. */
static int is_text(lua_State *L, int idx)
{
    int type = lua_type(L, idx);
    return type == LUA_TSTRING || type == LUA_TNUMBER;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Leaves argv's strings on the stack (so their pointers stay valid) and
 * returns the pointer array, itself a userdata on the stack. */
static const char **collect_argv(lua_State *L, int worker, lua_Integer rank,
                                 uint32_t *argc)
{
    if (lua_getfield(L, worker, "argv") != LUA_TTABLE ||
        lua_rawlen(L, -1) == 0)
        luaL_error(L, "plan: worker %d: 'argv' must be a non-empty array of "
                      "strings", (int)rank);
    int table = lua_gettop(L);
    size_t n = lua_rawlen(L, table);
    luaL_checkstack(L, (int)n + 2, "plan: too many argv entries");
    const char **argv = lua_newuserdatauv(L, n * sizeof *argv, 0);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, table, (lua_Integer)i + 1);
        if (!is_text(L, -1))
            luaL_error(L, "plan: worker %d: argv[%d] must be a string (got %s)",
                       (int)rank, (int)i + 1, luaL_typename(L, -1));
        argv[i] = lua_tostring(L, -1);
    }
    *argc = (uint32_t)n;
    return argv;
}

/* env = {"K=V", ...} or {K = "V", ...} (or both). Map entries are sorted so
 * the plan does not depend on table order. */
static const char **collect_env(lua_State *L, int worker, lua_Integer rank,
                                uint32_t *envc)
{
    int type = lua_getfield(L, worker, "env");
    *envc = 0;
    if (type == LUA_TNIL)
        return NULL;
    if (type != LUA_TTABLE)
        luaL_error(L, "plan: worker %d: 'env' must be a table of \"K=V\" "
                      "strings or K = V pairs (got %s)",
                   (int)rank, lua_typename(L, type));
    int table = lua_gettop(L);
    size_t array_len = lua_rawlen(L, table);
    int first = lua_gettop(L) + 1;
    lua_pushnil(L);
    while (lua_next(L, table)) {
        luaL_checkstack(L, 4, "plan: env too large");
        if (lua_isinteger(L, -2) && lua_tointeger(L, -2) >= 1 &&
            (size_t)lua_tointeger(L, -2) <= array_len) {
            const char *kv = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1)
                                                             : NULL;
            if (!kv || !strchr(kv, '=') || kv[0] == '=')
                luaL_error(L, "plan: worker %d: env[%d] must be a \"KEY=VALUE\" "
                              "string", (int)rank, (int)lua_tointeger(L, -2));
            lua_pushvalue(L, -1);
        } else {
            if (lua_type(L, -2) != LUA_TSTRING)
                luaL_error(L, "plan: worker %d: env keys must be names or "
                              "array positions (got a %s key)",
                           (int)rank, luaL_typename(L, -2));
            const char *key = lua_tostring(L, -2);
            if (!key[0] || strchr(key, '='))
                luaL_error(L, "plan: worker %d: env key '%s' is not a variable "
                              "name", (int)rank, key);
            if (!is_text(L, -1))
                luaL_error(L, "plan: worker %d: env.%s must be a string (got %s)",
                           (int)rank, key, luaL_typename(L, -1));
            lua_pushvalue(L, -1); /* convert a number on a copy */
            lua_pushfstring(L, "%s=%s", key, lua_tostring(L, -1));
            lua_remove(L, -2);
        }
        /* Stack: ... key value "K=V": keep "K=V" below the key. */
        lua_insert(L, -3);
        lua_pop(L, 1);
    }
    size_t n = (size_t)(lua_gettop(L) - first + 1);
    const char **env = lua_newuserdatauv(L, (n ? n : 1) * sizeof *env, 0);
    for (size_t i = 0; i < n; i++)
        env[i] = lua_tostring(L, first + (int)i);
    qsort(env, n, sizeof *env, compare_strings);
    *envc = (uint32_t)n;
    return env;
}

static void add_worker(lua_State *L, struct plan_call *call, int workers,
                       lua_Integer rank)
{
    int base = lua_gettop(L);
    if (lua_rawgeti(L, workers, rank + 1) != LUA_TTABLE)
        luaL_error(L, "plan: worker %d must be a table {argv = ..., env = ..., "
                      "cwd = ...} (got %s)", (int)rank, luaL_typename(L, -1));
    int worker = lua_gettop(L);
    uint32_t argc, envc;
    const char **argv = collect_argv(L, worker, rank, &argc);
    const char **env = collect_env(L, worker, rank, &envc);
    int cwd_type = lua_getfield(L, worker, "cwd");
    if (cwd_type != LUA_TNIL && cwd_type != LUA_TSTRING)
        luaL_error(L, "plan: worker %d: 'cwd' must be a string (got %s)",
                   (int)rank, lua_typename(L, cwd_type));
    const char *cwd = lua_tostring(L, -1);
    loom_error *err = call->sink->add_worker(call->sink, argv, argc, env, envc,
                                             cwd);
    if (err) {
        char context[48];
        snprintf(context, sizeof context, "plan: worker %d", (int)rank);
        lua_instance_raise(L, call->inst, err, context);
    }
    lua_settop(L, base);
}

static int plan_body(lua_State *L)
{
    struct plan_call *call = lua_touserdata(L, 1);
    lua_instance_push_function(L, call->inst, "plan");
    push_request(L, call->request);
    lua_call(L, 1, 1);
    if (!lua_istable(L, -1))
        return luaL_error(L, "plan must return an array of workers {argv = "
                             "{...}, env = {...}, cwd = ...} (got %s)",
                          luaL_typename(L, -1));
    int workers = lua_gettop(L);
    lua_Integer count = (lua_Integer)lua_rawlen(L, workers);
    if (count == 0)
        return luaL_error(L, "plan returned no workers");
    for (lua_Integer rank = 0; rank < count; rank++)
        add_worker(L, call, workers, rank);
    return 0;
}

static loom_error *framework_plan_launch(const loom_framework_factory *self,
                                         const loom_launch_request *request,
                                         const loom_launch_sink *sink)
{
    const lua_entry *entry = (const lua_entry *)self;
    if (!request || !sink || !sink->add_worker)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s: plan_launch needs a request and a sink with "
                        "add_worker", entry->label);
    lua_instance *inst;
    loom_error *err = lua_instance_new(entry, NULL, 0, &inst);
    if (err)
        return err;
    struct plan_call call = {inst, request, sink};
    err = lua_instance_call(inst, "plan", plan_body, &call);
    lua_instance_free(inst);
    return err;
}

void lua_framework_fill(lua_entry *entry, lua_State *L, int def)
{
    (void)L;
    (void)def;
    entry->vt.framework.struct_size = sizeof(loom_framework_factory);
    entry->vt.framework.style = LOOM_FRAMEWORK_LAUNCH;
    entry->vt.framework.plan_launch = framework_plan_launch;
}

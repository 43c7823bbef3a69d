/*
 * plugin/lua_kernel.c - inference kernels written in Lua.
 *
 *     loom.register_kernel{name = "x",
 *         load = function(model_dir, model, weight_path) end, -- optional
 *         execute = function(requests) return responses end}
 *
 * WMLA's names work too: on_kernel_start for load, on_task_invoke for
 * execute, and on_kernel_shutdown (optional, no arguments) called when the
 * model is unloaded.
 *
 * `model` is model.json decoded. `requests` is an array of
 * {id =, content_type =, body =}, and for a v2 model (model.json declares
 * its inputs) inputs = {{name =, datatype =, shape = {...}, data = {...}},
 * ...} decoded by the host (body ""); execute returns an array in the same
 * order of {status = 0, body = "..." or a table (sent as JSON),
 * content_type = "..."}, or for a v2 model {outputs = {tables like the
 * inputs'}} (lua_kernel_tensors.c); a non-zero status is a loom_code and
 * the body its message. load_model makes the sandbox; instances of one model share it.
 */
#include "plugin/lua_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/host_api.h"

typedef struct lua_kernel_instance {
    lua_instance *model;
    loom_device device;
} lua_kernel_instance;

struct load_call {
    lua_instance *inst;
    const loom_kernel_model_config *config;
};

static int load_body(lua_State *L)
{
    struct load_call *call = lua_touserdata(L, 1);
    if (!lua_instance_get_function(L, call->inst, "load") &&
        !lua_instance_get_function(L, call->inst, "on_kernel_start"))
        return 0;
    lua_pushstring(L, call->config->model_dir);
    lua_json_push(L, call->config->model_json, "model.json");
    lua_pushstring(L, call->config->weight_path);
    lua_call(L, 3, 0);
    return 0;
}

static loom_error *kernel_load_model(const loom_kernel_factory *self,
                                     const loom_kernel_model_config *config,
                                     loom_kernel_model **out)
{
    const lua_entry *entry = (const lua_entry *)self;
    if (!config || !out)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s: load_model needs a config and an output pointer",
                        entry->label);
    lua_instance *inst;
    loom_error *err = lua_instance_new(entry, NULL, 0, &inst);
    if (err)
        return err;
    struct load_call call = {inst, config};
    err = lua_instance_call(inst, "load", load_body, &call);
    if (err) {
        lua_instance_free(inst);
        return err;
    }
    *out = (loom_kernel_model *)inst;
    return NULL;
}

static int shutdown_body(lua_State *L)
{
    lua_instance *inst = lua_touserdata(L, 1);
    if (lua_instance_get_function(L, inst, "on_kernel_shutdown"))
        lua_call(L, 0, 0);
    return 0;
}

static void kernel_unload_model(loom_kernel_model *model)
{
    lua_instance *inst = (lua_instance *)model;
    /* A failing shutdown changes nothing: the model goes either way. */
    loom_err_free(lua_instance_call(inst, "on_kernel_shutdown", shutdown_body, inst));
    lua_instance_free(inst);
}

static loom_error *kernel_create_instance(loom_kernel_model *model,
                                          const loom_device *device,
                                          loom_kernel_instance **out)
{
    lua_kernel_instance *k = calloc(1, sizeof *k);
    if (!k)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED,
                        "lua kernel: out of memory creating an instance");
    k->model = (lua_instance *)model;
    if (device)
        k->device = *device;
    *out = (loom_kernel_instance *)k;
    return NULL;
}

static void kernel_destroy_instance(loom_kernel_instance *inst)
{
    free(inst);
}

struct execute_call {
    lua_instance *inst;
    loom_infer_request *const *requests;
    uint32_t count;
};

static void push_requests(lua_State *L, loom_infer_request *const *requests,
                          uint32_t count)
{
    lua_createtable(L, (int)count, 0);
    for (uint32_t i = 0; i < count; i++) {
        const loom_infer_request *r = requests[i];
        lua_createtable(L, 0, 3);
        lua_set_integer(L, "id", (lua_Integer)r->id);
        lua_set_string(L, "content_type", r->content_type);
        lua_pushlstring(L, r->body ? (const char *)r->body : "",
                        r->body ? (size_t)r->body_len : 0);
        lua_setfield(L, -2, "body");
        lua_kernel_push_inputs(L, r);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

static void respond(lua_State *L, struct execute_call *call, int responses,
                    uint32_t i)
{
    int base = lua_gettop(L);
    if (lua_rawgeti(L, responses, (lua_Integer)i + 1) != LUA_TTABLE)
        luaL_error(L, "execute: response %d must be a table {status =, body "
                      "=, content_type =} (got %s)",
                   (int)i + 1, luaL_typename(L, -1));
    int response = lua_gettop(L);
    int is_integer = 1;
    lua_getfield(L, response, "status");
    lua_Integer status = lua_isnil(L, -1) ? 0 : lua_tointegerx(L, -1, &is_integer);
    if (!is_integer || status < 0 || status > LOOM_ERR_ALREADY_EXISTS)
        luaL_error(L, "execute: response %d: status must be 0 or a loom error "
                      "code 1-%d", (int)i + 1, LOOM_ERR_ALREADY_EXISTS);
    loom_infer_request *r = call->requests[i];
    const char *default_type = status == 0 ? "application/json" : "text/plain";
    int body_type = lua_getfield(L, response, "body");
    /* no body: a v2 model's answer may be its outputs (looked up only
     * then, so a raw answer costs no second lookup) */
    if (body_type == LUA_TNIL && status == 0 &&
        lua_getfield(L, response, "outputs") == LUA_TTABLE) {
        loom_error *err;
        lua_kernel_respond_tensors(L, lua_gettop(L), r, (int)i + 1, &err);
        if (err)
            lua_instance_raise(L, call->inst, err, "execute: responding with outputs");
        lua_settop(L, base);
        return;
    }
    if (body_type == LUA_TNIL)
        lua_settop(L, response + 2); /* the status and the nil body */
    if (body_type == LUA_TTABLE) {
        char *json;
        loom_error *err = lua_json_encode(L, -1, &json);
        if (err) {
            char why[256]; /* copied out: luaL_error does not return */
            loom_err_take(err, why, sizeof why);
            luaL_error(L, "execute: response %d: body: %s", (int)i + 1, why);
        }
        lua_push_owned_string(L, json);
        default_type = "application/json";
    } else if (body_type == LUA_TNIL) {
        lua_pushliteral(L, "");
    } else if (body_type != LUA_TSTRING && body_type != LUA_TNUMBER) {
        luaL_error(L, "execute: response %d: body must be a string or a table "
                      "(got %s)", (int)i + 1, lua_typename(L, body_type));
    } else {
        lua_pushvalue(L, -1);
    }
    size_t body_len;
    const char *body = lua_tolstring(L, -1, &body_len);
    int type_type = lua_getfield(L, response, "content_type");
    if (type_type != LUA_TNIL && type_type != LUA_TSTRING)
        luaL_error(L, "execute: response %d: content_type must be a string",
                   (int)i + 1);
    const char *content_type = type_type == LUA_TSTRING ? lua_tostring(L, -1)
                                                         : default_type;
    loom_error *err = r->respond(r, (int32_t)status, content_type,
                                 (const uint8_t *)body, body_len);
    if (err) {
        char context[48];
        snprintf(context, sizeof context, "execute: responding to request %d",
                 (int)i + 1);
        lua_instance_raise(L, call->inst, err, context);
    }
    lua_settop(L, base);
}

static int execute_body(lua_State *L)
{
    struct execute_call *call = lua_touserdata(L, 1);
    if (!lua_instance_get_function(L, call->inst, "execute"))
        lua_instance_push_function(L, call->inst, "on_task_invoke");
    push_requests(L, call->requests, call->count);
    lua_call(L, 1, 1);
    if (!lua_istable(L, -1))
        return luaL_error(L, "execute must return an array of responses (got "
                             "%s)", luaL_typename(L, -1));
    int responses = lua_gettop(L);
    size_t given = lua_rawlen(L, responses);
    for (uint32_t i = 0; i < call->count && i < given; i++)
        respond(L, call, responses, i);
    if (given != call->count)
        return luaL_error(L, "execute returned %d responses for %d requests",
                          (int)given, (int)call->count);
    return 0;
}

static loom_error *kernel_execute(loom_kernel_instance *instance,
                                  loom_infer_request *const *requests,
                                  uint32_t count)
{
    lua_kernel_instance *k = (lua_kernel_instance *)instance;
    if (count == 0)
        return NULL;
    if (!requests)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s: execute: no request array",
                        k->model->entry->label);
    for (uint32_t i = 0; i < count; i++)
        if (!requests[i] || !requests[i]->respond)
            return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                            "%s: execute: request %u has no respond function",
                            k->model->entry->label, i + 1);
    struct execute_call call = {k->model, requests, count};
    return lua_instance_call(k->model, "execute", execute_body, &call);
}

void lua_kernel_fill(lua_entry *entry, lua_State *L, int def)
{
    (void)L;
    (void)def;
    loom_kernel_factory *f = &entry->vt.kernel;
    f->struct_size = sizeof *f;
    f->load_model = kernel_load_model;
    f->unload_model = kernel_unload_model;
    f->create_instance = kernel_create_instance;
    f->destroy_instance = kernel_destroy_instance;
    f->execute = kernel_execute;
}

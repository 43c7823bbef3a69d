/*
 * plugin/lua_search.c - search algorithms written in Lua ("loom.search/2").
 *
 *     loom.register_search{name = "x",
 *         init = function(config) end,              -- optional
 *         suggest = function(max, sink) ... sink.propose{lr = 0.1} ... end,
 *         observe = function(obs, sink) end,
 *         save_state = function() return "..." end, -- optional pair
 *         load_state = function(text) end}
 *
 * config.space is the typed space (lua_search_space.c), config.options the
 * task's algoParams {name = "value"}, config.experiments the explicit
 * combinations as {name = value} tables. sink.propose(point [, budget])
 * returns the experiment id the host assigned, or nil when the host refused
 * it; sink.stop(id) stops a running experiment early; sink.finish() says
 * the search is done. propose and finish are valid only while suggest runs,
 * stop while suggest or observe runs. obs is {id, status = "FINISHED" |
 * "FAILED" | "KILLED", objective (nil when not reported), budget, values =
 * {name = value}, metrics = {name = number}}.
 */
#include "plugin/lua_internal.h"

#include <stdlib.h>
#include <string.h>

#include "plugin/host_api.h"

static const char *status_name(int32_t status)
{
    switch (status) {
    case LOOM_EXPERIMENT_FINISHED: return "FINISHED";
    case LOOM_EXPERIMENT_FAILED: return "FAILED";
    case LOOM_EXPERIMENT_KILLED: return "KILLED";
    default: return NULL;
    }
}

static lua_instance *live_sink_owner(lua_State *L, const char *fn, int needs_suggest)
{
    lua_instance *inst = lua_touserdata(L, lua_upvalueindex(1));
    if (!inst->sink || (needs_suggest && !inst->search->suggesting))
        luaL_error(L, "%s: the sink is only valid while suggest runs", fn);
    return inst;
}

/* sink.propose(point [, budget]) -> id or nil. Also accepts
 * sink:propose(point [, budget]). */
static int sink_propose(lua_State *L)
{
    lua_instance *inst = live_sink_owner(L, "sink.propose", 1);
    int arg = lua_gettop(L) >= 2 && lua_istable(L, 1) && lua_istable(L, 2) ? 2 : 1;
    if (!lua_istable(L, arg))
        return luaL_error(L, "sink.propose: expected a table of "
                             "hyperparameter name -> value (got %s)",
                          luaL_typename(L, arg));
    double budget = luaL_optnumber(L, arg + 1, 0);
    if (!(budget >= 0))
        return luaL_error(L, "sink.propose: budget must be >= 0 (got %g)", budget);
    const loom_value *values = lua_search_read_point(L, arg, inst->search);
    uint64_t id = inst->sink->propose(inst->sink, values, inst->search->count, budget);
    if (id == 0)
        lua_pushnil(L);
    else
        lua_pushinteger(L, (lua_Integer)id);
    return 1;
}

/* sink.stop(id) -> true when it was running. */
static int sink_stop(lua_State *L)
{
    lua_instance *inst = live_sink_owner(L, "sink.stop", 0);
    lua_Integer id = luaL_checkinteger(L, lua_gettop(L));
    int32_t rc = inst->sink->stop && id > 0
                     ? inst->sink->stop(inst->sink, (uint64_t)id) : -1;
    lua_pushboolean(L, rc == 0);
    return 1;
}

static int sink_finish(lua_State *L)
{
    lua_instance *inst = live_sink_owner(L, "sink.finish", 1);
    if (inst->sink->finish)
        inst->sink->finish(inst->sink);
    return 0;
}

static void push_sink(lua_State *L, lua_instance *inst, int with_propose)
{
    lua_createtable(L, 0, 3);
    if (with_propose) {
        lua_pushlightuserdata(L, inst);
        lua_pushcclosure(L, sink_propose, 1);
        lua_setfield(L, -2, "propose");
        lua_pushlightuserdata(L, inst);
        lua_pushcclosure(L, sink_finish, 1);
        lua_setfield(L, -2, "finish");
    }
    lua_pushlightuserdata(L, inst);
    lua_pushcclosure(L, sink_stop, 1);
    lua_setfield(L, -2, "stop");
}

/* ---- create ------------------------------------------------------------ */

struct init_call {
    lua_instance *inst;
    const loom_search_config *config;
};

static void push_options(lua_State *L, const loom_search_config *c)
{
    lua_createtable(L, 0, (int)c->option_count);
    for (uint32_t i = 0; c->options && i < c->option_count; i++)
        if (c->options[i].name && c->options[i].value)
            lua_set_string(L, c->options[i].name, c->options[i].value);
}

static void push_experiments(lua_State *L, const lua_instance *inst,
                             const loom_search_config *c)
{
    uint32_t n = c->experiments ? c->experiment_count : 0;
    lua_createtable(L, (int)n, 0);
    for (uint32_t i = 0; i < n; i++) {
        lua_search_push_values(L, inst->search, c->experiments[i], inst->search->count);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

static int init_body(lua_State *L)
{
    struct init_call *call = lua_touserdata(L, 1);
    const loom_search_config *c = call->config;
    if (!lua_instance_get_function(L, call->inst, "init"))
        return 0;
    lua_createtable(L, 0, 9);
    lua_pushboolean(L, c->maximize != 0);
    lua_setfield(L, -2, "maximize");
    lua_set_integer(L, "max_experiments", c->max_experiments);
    lua_set_integer(L, "max_parallel", c->max_parallel);
    lua_set_integer(L, "seed", (lua_Integer)c->seed);
    lua_set_string(L, "objective_metric", c->objective_metric);
    lua_search_push_space(L, call->inst->search);
    lua_setfield(L, -2, "space");
    push_options(L, c);
    lua_setfield(L, -2, "options");
    push_experiments(L, call->inst, c);
    lua_setfield(L, -2, "experiments");
    lua_call(L, 1, 0);
    return 0;
}

static loom_error *search_create(const loom_search_factory *self,
                                 const loom_search_config *config,
                                 loom_search_instance **out)
{
    const lua_entry *entry = (const lua_entry *)self;
    if (!config || !out)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s: create needs a config and an output pointer",
                        entry->label);
    lua_instance *inst;
    loom_error *err = lua_instance_new(entry, NULL, 0, &inst);
    if (err)
        return err;
    inst->search = lua_search_space_copy(config);
    if (!inst->search) {
        lua_instance_free(inst);
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory copying the space",
                        entry->label);
    }
    struct init_call call = {inst, config};
    err = lua_instance_call(inst, "init", init_body, &call);
    if (err) {
        lua_search_space_free(inst->search);
        lua_instance_free(inst);
        return err;
    }
    *out = (loom_search_instance *)inst;
    return NULL;
}

static void search_destroy(loom_search_instance *inst)
{
    if (inst)
        lua_search_space_free(((lua_instance *)inst)->search);
    lua_instance_free((lua_instance *)inst);
}

/* ---- suggest / observe ------------------------------------------------- */

struct suggest_call {
    lua_instance *inst;
    uint32_t max;
};

static int suggest_body(lua_State *L)
{
    struct suggest_call *call = lua_touserdata(L, 1);
    lua_instance_push_function(L, call->inst, "suggest");
    lua_pushinteger(L, call->max);
    push_sink(L, call->inst, 1);
    lua_call(L, 2, 0);
    return 0;
}

static loom_error *search_suggest(loom_search_instance *instance, uint32_t max,
                                  const loom_proposal_sink *sink)
{
    lua_instance *inst = (lua_instance *)instance;
    if (!sink || !sink->propose)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s: suggest needs a sink with propose",
                        inst->entry->label);
    struct suggest_call call = {inst, max};
    inst->sink = sink;
    inst->search->suggesting = 1;
    loom_error *err = lua_instance_call(inst, "suggest", suggest_body, &call);
    inst->search->suggesting = 0;
    inst->sink = NULL;
    return err;
}

struct observe_call {
    lua_instance *inst;
    const loom_observation *obs;
    const char *status;
};

static int observe_body(lua_State *L)
{
    struct observe_call *call = lua_touserdata(L, 1);
    const loom_observation *obs = call->obs;
    lua_instance_push_function(L, call->inst, "observe");
    lua_createtable(L, 0, 6);
    lua_set_integer(L, "id", (lua_Integer)obs->experiment_id);
    lua_set_string(L, "status", call->status);
    if (obs->has_objective) {
        lua_pushnumber(L, obs->objective);
        lua_setfield(L, -2, "objective");
    }
    lua_pushnumber(L, obs->budget);
    lua_setfield(L, -2, "budget");
    lua_search_push_values(L, call->inst->search, obs->values, obs->value_count);
    lua_setfield(L, -2, "values");
    lua_push_metrics(L, obs->metrics, obs->metrics ? obs->metric_count : 0);
    lua_setfield(L, -2, "metrics");
    push_sink(L, call->inst, 0);
    lua_call(L, 2, 0);
    return 0;
}

static loom_error *search_observe(loom_search_instance *instance,
                                  const loom_observation *obs,
                                  const loom_proposal_sink *sink)
{
    lua_instance *inst = (lua_instance *)instance;
    if (!obs)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "%s: observe needs an observation",
                        inst->entry->label);
    const char *name = status_name(obs->status);
    if (!name)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s: observe: status %d is not FINISHED (0), FAILED "
                        "(1) or KILLED (2)",
                        inst->entry->label, (int)obs->status);
    struct observe_call call = {inst, obs, name};
    inst->sink = sink;
    loom_error *err = lua_instance_call(inst, "observe", observe_body, &call);
    inst->sink = NULL;
    return err;
}

/* ---- save_state / load_state ------------------------------------------- */

struct state_call {
    lua_instance *inst;
    const char *in;
    char *out;
};

static int save_state_body(lua_State *L)
{
    struct state_call *call = lua_touserdata(L, 1);
    lua_instance_push_function(L, call->inst, "save_state");
    lua_call(L, 0, 1);
    size_t len;
    const char *text = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len)
                                                       : NULL;
    if (!text)
        return luaL_error(L, "save_state must return a string (got %s)",
                          luaL_typename(L, -1));
    if (strlen(text) != len)
        return luaL_error(L, "save_state returned a string with a NUL byte; "
                             "encode binary state (e.g. as JSON)");
    /* The host frees it: loom_host.alloc is malloc. */
    call->out = malloc(len + 1);
    if (!call->out)
        return luaL_error(L, "out of memory copying the saved state");
    memcpy(call->out, text, len + 1);
    return 0;
}

static loom_error *search_save_state(loom_search_instance *instance,
                                     char **state_out)
{
    lua_instance *inst = (lua_instance *)instance;
    if (!state_out)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s: save_state needs an output pointer",
                        inst->entry->label);
    *state_out = NULL;
    struct state_call call = {inst, NULL, NULL};
    loom_error *err = lua_instance_call(inst, "save_state", save_state_body,
                                        &call);
    if (err) {
        free(call.out);
        return err;
    }
    *state_out = call.out;
    return NULL;
}

static int load_state_body(lua_State *L)
{
    struct state_call *call = lua_touserdata(L, 1);
    lua_instance_push_function(L, call->inst, "load_state");
    lua_pushstring(L, call->in);
    lua_call(L, 1, 0);
    return 0;
}

static loom_error *search_load_state(loom_search_instance *instance,
                                     const char *state)
{
    lua_instance *inst = (lua_instance *)instance;
    if (!state)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s: load_state needs a state string",
                        inst->entry->label);
    struct state_call call = {inst, state, NULL};
    return lua_instance_call(inst, "load_state", load_state_body, &call);
}

void lua_search_fill(lua_entry *entry, lua_State *L, int def)
{
    loom_search_factory *f = &entry->vt.search;
    f->struct_size = sizeof *f;
    f->create = search_create;
    f->destroy = search_destroy;
    f->suggest = search_suggest;
    f->observe = search_observe;
    /* Only a script that can save and load its state gets the pair: the
     * host then knows the search cannot survive a restart otherwise. */
    if (lua_api_has_function(L, def, "save_state")) {
        f->save_state = search_save_state;
        f->load_state = search_load_state;
    }
}

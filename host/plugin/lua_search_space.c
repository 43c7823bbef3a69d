/*
 * plugin/lua_search_space.c - the typed search space as Lua sees it.
 *
 * A Lua search gets the space as an array of parameter tables
 *     {name = "lr", kind = "range", type = "double", low = -4, high = -1,
 *      step = 0, log_base = 10}
 *     {name = "optimizer", kind = "choice", type = "string",
 *      choices = {"sgd", "adam"}}
 * and proposes a table {name = value}. The bridge keeps its own copy of the
 * space (the config is borrowed only during create) to turn that table into
 * loom_values in the space's order, refusing a missing, unknown or
 * mistyped name with the parameter named.
 */
#include "plugin/lua_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {NULL, "range", "choice"};
static const char *const type_names[] = {NULL, "double", "int", "string"};

static int copy_choices(loom_param *dst, const loom_param *src)
{
    uint32_t n = src->choice_count;
    if (src->type == LOOM_VALUE_DOUBLE && src->choice_doubles) {
        double *d = malloc(n * sizeof *d + 1);
        if (!d)
            return -1;
        memcpy(d, src->choice_doubles, n * sizeof *d);
        dst->choice_doubles = d;
    } else if (src->type == LOOM_VALUE_INT && src->choice_ints) {
        int64_t *v = malloc(n * sizeof *v + 1);
        if (!v)
            return -1;
        memcpy(v, src->choice_ints, n * sizeof *v);
        dst->choice_ints = v;
    } else if (src->type == LOOM_VALUE_STRING && src->choice_strings) {
        char **s = calloc(n + 1, sizeof *s);
        dst->choice_strings = (const char *const *)s;
        if (!s)
            return -1;
        for (uint32_t i = 0; i < n; i++)
            if (!(s[i] = strdup(src->choice_strings[i] ? src->choice_strings[i] : "")))
                return -1;
    } else {
        dst->choice_count = 0;
    }
    return 0;
}

lua_search_space *lua_search_space_copy(const loom_search_config *config)
{
    lua_search_space *space = calloc(1, sizeof *space);
    if (!space)
        return NULL;
    uint32_t n = config->params ? config->param_count : 0;
    space->params = calloc(n + 1, sizeof *space->params);
    space->values = calloc(n + 1, sizeof *space->values);
    if (!space->params || !space->values) {
        lua_search_space_free(space);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        const loom_param *src = &config->params[i];
        loom_param *dst = &space->params[i];
        *dst = *src;
        dst->choice_doubles = NULL;
        dst->choice_ints = NULL;
        dst->choice_strings = NULL;
        dst->name = strdup(src->name ? src->name : "");
        space->count = i + 1;
        if (!dst->name || (src->kind == LOOM_PARAM_CHOICE && copy_choices(dst, src) < 0)) {
            lua_search_space_free(space);
            return NULL;
        }
    }
    return space;
}

void lua_search_space_free(lua_search_space *space)
{
    if (!space)
        return;
    for (uint32_t i = 0; i < space->count; i++) {
        loom_param *p = &space->params[i];
        free((char *)p->name);
        free((double *)p->choice_doubles);
        free((int64_t *)p->choice_ints);
        if (p->choice_strings)
            for (uint32_t j = 0; j < p->choice_count; j++)
                free((char *)p->choice_strings[j]);
        free((char **)p->choice_strings);
    }
    free(space->params);
    free(space->values);
    free(space);
}

static const char *name_of(const char *const *names, int32_t v, int32_t max)
{
    return v >= 1 && v <= max ? names[v] : "unknown";
}

static void push_choices(lua_State *L, const loom_param *p)
{
    lua_createtable(L, (int)p->choice_count, 0);
    for (uint32_t j = 0; j < p->choice_count; j++) {
        if (p->type == LOOM_VALUE_DOUBLE && p->choice_doubles)
            lua_pushnumber(L, p->choice_doubles[j]);
        else if (p->type == LOOM_VALUE_INT && p->choice_ints)
            lua_pushinteger(L, (lua_Integer)p->choice_ints[j]);
        else if (p->type == LOOM_VALUE_STRING && p->choice_strings)
            lua_pushstring(L, p->choice_strings[j]);
        else
            lua_pushnil(L);
        lua_rawseti(L, -2, (lua_Integer)j + 1);
    }
    lua_setfield(L, -2, "choices");
}

void lua_search_push_space(lua_State *L, const lua_search_space *space)
{
    lua_createtable(L, (int)space->count, 0);
    for (uint32_t i = 0; i < space->count; i++) {
        const loom_param *p = &space->params[i];
        lua_createtable(L, 0, 8);
        lua_set_string(L, "name", p->name);
        lua_set_string(L, "kind", name_of(kind_names, p->kind, LOOM_PARAM_CHOICE));
        lua_set_string(L, "type", name_of(type_names, p->type, LOOM_VALUE_STRING));
        if (p->kind == LOOM_PARAM_CHOICE) {
            push_choices(L, p);
        } else {
            lua_pushnumber(L, p->low);
            lua_setfield(L, -2, "low");
            lua_pushnumber(L, p->high);
            lua_setfield(L, -2, "high");
            lua_pushnumber(L, p->step);
            lua_setfield(L, -2, "step");
            lua_pushnumber(L, p->log_base);
            lua_setfield(L, -2, "log_base");
        }
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

void lua_search_push_values(lua_State *L, const lua_search_space *space,
                            const loom_value *values, uint32_t count)
{
    lua_createtable(L, 0, (int)count);
    for (uint32_t i = 0; values && i < count && i < space->count; i++) {
        const loom_value *v = &values[i];
        if (v->type == LOOM_VALUE_INT)
            lua_pushinteger(L, (lua_Integer)v->i);
        else if (v->type == LOOM_VALUE_STRING)
            lua_pushstring(L, v->s ? v->s : "");
        else
            lua_pushnumber(L, v->d);
        lua_setfield(L, -2, space->params[i].name);
    }
}

/* The value at the top of the stack as parameter p's; raises naming it. */
static void read_value(lua_State *L, const loom_param *p, loom_value *out)
{
    memset(out, 0, sizeof *out);
    out->type = p->type;
    int t = lua_type(L, -1);
    if (p->type == LOOM_VALUE_STRING) {
        const char *s = t == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        for (uint32_t j = 0; s && p->choice_strings && j < p->choice_count; j++)
            if (strcmp(p->choice_strings[j], s) == 0) {
                out->s = p->choice_strings[j];
                return;
            }
        luaL_error(L, "sink.propose: '%s' must be one of its string choices (got %s%s%s)",
                   p->name, s ? "\"" : luaL_typename(L, -1), s ? s : "", s ? "\"" : "");
    }
    if (t != LUA_TNUMBER)
        luaL_error(L, "sink.propose: '%s' must be a number (got %s)", p->name,
                   luaL_typename(L, -1));
    if (p->type == LOOM_VALUE_DOUBLE) {
        out->d = lua_tonumber(L, -1);
        return;
    }
    lua_Integer i;
    if (lua_isinteger(L, -1)) {
        i = lua_tointeger(L, -1);
    } else {
        double d = lua_tonumber(L, -1);
        if (d != floor(d) || fabs(d) > 9.0e15)
            luaL_error(L, "sink.propose: '%s' must be an integer (got %f)", p->name, d);
        i = (lua_Integer)d;
    }
    out->i = (int64_t)i;
    out->d = (double)i;
}

const loom_value *lua_search_read_point(lua_State *L, int idx, lua_search_space *space)
{
    idx = lua_absindex(L, idx);
    for (uint32_t i = 0; i < space->count; i++) {
        lua_getfield(L, idx, space->params[i].name);
        if (lua_isnil(L, -1))
            luaL_error(L, "sink.propose: the point has no value for '%s'",
                       space->params[i].name);
        read_value(L, &space->params[i], &space->values[i]);
        lua_pop(L, 1);
    }
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        const char *key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        uint32_t i = 0;
        while (key && i < space->count && strcmp(space->params[i].name, key) != 0)
            i++;
        if (!key || i == space->count)
            luaL_error(L, "sink.propose: '%s' is not a parameter of the space",
                       key ? key : luaL_typename(L, -1));
    }
    return space->values;
}

/*
 * plugin/lua_json.c - JSON <-> Lua values through cJSON, for
 * loom.json_encode/json_decode and for the JSON the SDK hands the bridge
 * (search spaces, model.json, logger settings, proposals).
 *
 * Tables that are sequences 1..n become arrays, tables with string keys
 * objects, an empty table {}; JSON null becomes nil. cJSON memory lives
 * outside the Lua state, so every push that might raise runs in a nested
 * protected call and the cJSON tree is freed on both paths.
 */
#include "plugin/lua_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Deeper tables are refused: this also stops reference cycles. */
#define JSON_MAX_DEPTH 64

static cJSON *to_json(lua_State *L, int idx, int depth, loom_error **err);

/* A table whose keys are exactly the integers 1..n, n > 0. lua_next and
 * raw length never allocate, so this cannot raise. */
static int is_sequence(lua_State *L, int idx)
{
    size_t len = lua_rawlen(L, idx), keys = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        keys++;
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 ||
            (size_t)lua_tointeger(L, -1) > len) {
            lua_pop(L, 1);
            return 0;
        }
    }
    return len > 0 && keys == len;
}

static int compare_keys(const void *a, const void *b)
{
    return strcmp((*(cJSON *const *)a)->string, (*(cJSON *const *)b)->string);
}

/* Table order differs from state to state (string hashes are seeded), so
 * object members are sorted: the same table always encodes the same way. */
static int sort_members(cJSON *object)
{
    int n = cJSON_GetArraySize(object);
    if (n < 2)
        return 1;
    cJSON **members = malloc((size_t)n * sizeof *members);
    if (!members)
        return 0;
    int i = 0;
    for (cJSON *c = object->child; c; c = c->next)
        members[i++] = c;
    qsort(members, (size_t)n, sizeof *members, compare_keys);
    for (i = 0; i < n; i++) {
        members[i]->prev = i > 0 ? members[i - 1] : members[n - 1];
        members[i]->next = i + 1 < n ? members[i + 1] : NULL;
    }
    object->child = members[0];
    free(members);
    return 1;
}

static cJSON *table_to_json(lua_State *L, int idx, int depth, loom_error **err)
{
    if (is_sequence(L, idx)) {
        cJSON *array = cJSON_CreateArray();
        size_t len = lua_rawlen(L, idx);
        for (size_t i = 1; array && i <= len; i++) {
            lua_rawgeti(L, idx, (lua_Integer)i);
            cJSON *item = to_json(L, lua_gettop(L), depth + 1, err);
            lua_pop(L, 1);
            if (!item || !cJSON_AddItemToArray(array, item)) {
                if (item)
                    *err = loom_err(LOOM_E_INTERNAL, "out of memory encoding JSON");
                cJSON_Delete(item);
                cJSON_Delete(array);
                return NULL;
            }
        }
        if (!array)
            *err = loom_err(LOOM_E_INTERNAL, "out of memory encoding JSON");
        return array;
    }
    cJSON *object = cJSON_CreateObject();
    if (!object) {
        *err = loom_err(LOOM_E_INTERNAL, "out of memory encoding JSON");
        return NULL;
    }
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        /* lua_type, not lua_isstring: converting a number key in place
         * would break lua_next. */
        if (lua_type(L, -2) != LUA_TSTRING) {
            *err = loom_err(LOOM_E_INVALID,
                     "cannot encode a table with a %s key (objects need "
                     "string keys, arrays keys 1..n)",
                     luaL_typename(L, -2));
            lua_pop(L, 2);
            cJSON_Delete(object);
            return NULL;
        }
        cJSON *item = to_json(L, lua_gettop(L), depth + 1, err);
        if (!item || !cJSON_AddItemToObject(object, lua_tostring(L, -2), item)) {
            if (item)
                *err = loom_err(LOOM_E_INTERNAL, "out of memory encoding JSON");
            cJSON_Delete(item);
            lua_pop(L, 2);
            cJSON_Delete(object);
            return NULL;
        }
        lua_pop(L, 1);
    }
    if (!sort_members(object)) {
        *err = loom_err(LOOM_E_INTERNAL, "out of memory encoding JSON");
        cJSON_Delete(object);
        return NULL;
    }
    return object;
}

static cJSON *to_json(lua_State *L, int idx, int depth, loom_error **err)
{
    if (depth > JSON_MAX_DEPTH || !lua_checkstack(L, 4)) {
        *err = loom_err(LOOM_E_INVALID, "nested deeper than %d levels (a cycle?)",
                 JSON_MAX_DEPTH);
        return NULL;
    }
    cJSON *item = NULL;
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        item = cJSON_CreateNull();
        break;
    case LUA_TBOOLEAN:
        item = cJSON_CreateBool(lua_toboolean(L, idx));
        break;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) {
            /* Raw text keeps 64-bit integers exact; cJSON numbers are
             * doubles. */
            char digits[32];
            snprintf(digits, sizeof digits, "%lld",
                     (long long)lua_tointeger(L, idx));
            item = cJSON_CreateRaw(digits);
        } else {
            double d = lua_tonumber(L, idx);
            if (!isfinite(d)) {
                *err = loom_err(LOOM_E_INVALID, "cannot encode %g (JSON has no NaN or "
                                      "infinity)", d);
                return NULL;
            }
            item = cJSON_CreateNumber(d);
        }
        break;
    case LUA_TSTRING:
        item = cJSON_CreateString(lua_tostring(L, idx));
        break;
    case LUA_TTABLE:
        return table_to_json(L, idx, depth, err);
    default:
        *err = loom_err(LOOM_E_INVALID, "cannot encode a %s value", luaL_typename(L, idx));
        return NULL;
    }
    if (!item)
        *err = loom_err(LOOM_E_INTERNAL, "out of memory encoding JSON");
    return item;
}

loom_error *lua_json_encode(lua_State *L, int idx, char **text)
{
    idx = lua_absindex(L, idx);
    loom_error *err = NULL;
    *text = NULL;
    cJSON *root = to_json(L, idx, 0, &err);
    if (!root)
        return err ? err : loom_err(LOOM_E_INTERNAL, "encoding JSON failed");
    *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return *text ? NULL : loom_err(LOOM_E_INTERNAL, "out of memory encoding JSON");
}

/* Raises `prefix: message` for err, freeing it first (luaL_error does not
 * return). */
static int raise_error(lua_State *L, const char *prefix, loom_error *err)
{
    char why[256];
    loom_err_take(err, why, sizeof why);
    return luaL_error(L, "%s: %s", prefix, why);
}

static void push_json_value(lua_State *L, const cJSON *item)
{
    luaL_checkstack(L, 4, "JSON nested too deeply");
    if (cJSON_IsBool(item)) {
        lua_pushboolean(L, cJSON_IsTrue(item));
    } else if (cJSON_IsNumber(item)) {
        double d = item->valuedouble;
        /* Whole numbers within double's exact range come back as integers,
         * so ids and counts stay integers in the script. */
        if (d == floor(d) && fabs(d) <= 9007199254740992.0)
            lua_pushinteger(L, (lua_Integer)d);
        else
            lua_pushnumber(L, d);
    } else if (cJSON_IsString(item)) {
        lua_pushstring(L, item->valuestring);
    } else if (cJSON_IsArray(item)) {
        lua_createtable(L, cJSON_GetArraySize(item), 0);
        lua_Integer i = 1;
        for (const cJSON *child = item->child; child; child = child->next) {
            push_json_value(L, child);
            lua_rawseti(L, -2, i++);
        }
    } else if (cJSON_IsObject(item)) {
        lua_createtable(L, 0, cJSON_GetArraySize(item));
        for (const cJSON *child = item->child; child; child = child->next) {
            lua_pushstring(L, child->string);
            push_json_value(L, child);
            lua_rawset(L, -3);
        }
    } else {
        lua_pushnil(L);
    }
}

static int push_json_tree(lua_State *L)
{
    push_json_value(L, lua_touserdata(L, 1));
    return 1;
}

/* Pushes the tree and frees it; rethrows a failed push (memory limit). */
static void push_and_free_tree(lua_State *L, cJSON *root)
{
    lua_pushcfunction(L, push_json_tree);
    lua_pushlightuserdata(L, root);
    int status = lua_pcall(L, 1, 1, 0);
    cJSON_Delete(root);
    if (status != LUA_OK)
        lua_error(L);
}

static cJSON *parse(const char *text, const char **error_at)
{
    *error_at = NULL;
    return cJSON_ParseWithOpts(text, error_at, 1);
}

void lua_json_push(lua_State *L, const char *text, const char *what)
{
    if (!text) {
        lua_pushnil(L);
        return;
    }
    const char *at;
    cJSON *root = parse(text, &at);
    if (!root) {
        /* lua_pushfstring knows no precision: cut the excerpt here. */
        char near[32];
        snprintf(near, sizeof near, "%.24s", at ? at : "");
        luaL_error(L, "%s is not valid JSON (error near '%s')", what, near);
    }
    push_and_free_tree(L, root);
}

static int push_owned_string(lua_State *L)
{
    lua_pushstring(L, lua_touserdata(L, 1));
    return 1;
}

void lua_push_owned_string(lua_State *L, char *text)
{
    lua_pushcfunction(L, push_owned_string);
    lua_pushlightuserdata(L, text);
    int status = lua_pcall(L, 1, 1, 0);
    free(text);
    if (status != LUA_OK)
        lua_error(L);
}

/* loom.json_encode(value) -> string; raises on values JSON cannot hold. */
int lua_json_encode_function(lua_State *L)
{
    luaL_checkany(L, 1);
    lua_settop(L, 1);
    char *text;
    loom_error *err = lua_json_encode(L, 1, &text);
    if (err)
        return raise_error(L, "loom.json_encode", err);
    lua_push_owned_string(L, text);
    return 1;
}

/* loom.json_decode(text) -> value, or nil and a message for bad JSON (a
 * request body is data, not a bug). */
int lua_json_decode_function(lua_State *L)
{
    const char *text = luaL_checkstring(L, 1);
    const char *at;
    cJSON *root = parse(text, &at);
    if (!root) {
        char near[32];
        snprintf(near, sizeof near, "%.24s", at ? at : "");
        lua_pushnil(L);
        lua_pushfstring(L, "loom.json_decode: invalid JSON (error near '%s')",
                        near);
        return 2;
    }
    push_and_free_tree(L, root);
    return 1;
}

/*
 * plugin/lua_api.c - the `loom` table a script sees: register_framework,
 * register_search, register_kernel and register_logger (checked here, so a
 * bad registration fails at the script's own line), log, json_encode,
 * json_decode and, for logger instances, append.
 */
#include "plugin/lua_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"
#include "util/user_tree.h"

static const char registrations_key = 'r'; /* registry: the record list */

/* What each kind's definition table must and may hold. */
typedef struct kind_spec {
    const char *function;          /* "loom.register_search" */
    const char *const *required;
    const char *const *optional;
} kind_spec;

static const char *const framework_required[] = {"plan", NULL};
static const char *const framework_optional[] = {NULL};
static const char *const search_required[] = {"suggest", "observe", NULL};
static const char *const search_optional[] = {"init", "save_state",
                                              "load_state", NULL};
/* A kernel executes batches with `execute` or, by WMLA's name,
 * `on_task_invoke` (one of the two is required: check_functions). */
static const char *const kernel_required[] = {NULL};
static const char *const kernel_optional[] = {"execute", "load", "on_task_invoke",
                                              "on_kernel_start", "on_kernel_shutdown", NULL};
static const char *const logger_required[] = {NULL};
static const char *const logger_optional[] = {
    "init", "on_train_begin", "log_train_metrics", "log_test_metrics",
    "on_train_end", NULL};

static const kind_spec kind_specs[LOOM_KIND_COUNT] = {
    [LOOM_KIND_FRAMEWORK] = {"loom.register_framework", framework_required,
                             framework_optional},
    [LOOM_KIND_SEARCH] = {"loom.register_search", search_required,
                          search_optional},
    [LOOM_KIND_KERNEL] = {"loom.register_kernel", kernel_required,
                          kernel_optional},
    [LOOM_KIND_LOGGER] = {"loom.register_logger", logger_required,
                          logger_optional},
};

int lua_api_has_function(lua_State *L, int idx, const char *name)
{
    int is_function = lua_getfield(L, idx, name) == LUA_TFUNCTION;
    lua_pop(L, 1);
    return is_function;
}

/* Pushes an optional string field and returns it (NULL for nil); raises
 * when it is something else. The value stays on the stack so the pointer
 * stays valid even if a metatable made it up. */
static const char *optional_string(lua_State *L, const char *fn, int def,
                                   const char *field)
{
    int type = lua_getfield(L, def, field);
    if (type == LUA_TNIL)
        return NULL;
    if (type != LUA_TSTRING)
        luaL_error(L, "%s: '%s' must be a string (got %s)", fn, field,
                   lua_typename(L, type));
    return lua_tostring(L, -1);
}

static void check_functions(lua_State *L, const kind_spec *spec, int def,
                            const char *name)
{
    for (const char *const *f = spec->required; *f; f++) {
        int type = lua_getfield(L, def, *f);
        lua_pop(L, 1);
        if (type == LUA_TNIL)
            luaL_error(L, "%s '%s': missing required function '%s'",
                       spec->function, name, *f);
        if (type != LUA_TFUNCTION)
            luaL_error(L, "%s '%s': '%s' must be a function (got %s)",
                       spec->function, name, *f, lua_typename(L, type));
    }
    for (const char *const *f = spec->optional; *f; f++) {
        int type = lua_getfield(L, def, *f);
        lua_pop(L, 1);
        if (type != LUA_TNIL && type != LUA_TFUNCTION)
            luaL_error(L, "%s '%s': '%s' must be a function when given (got %s)",
                       spec->function, name, *f, lua_typename(L, type));
    }
    if (spec == &kind_specs[LOOM_KIND_KERNEL] && !lua_api_has_function(L, def, "execute") &&
        !lua_api_has_function(L, def, "on_task_invoke"))
        luaL_error(L, "%s '%s': missing required function 'execute' (or WMLA's "
                   "'on_task_invoke')", spec->function, name);
}

/* True when `key` is a field the kind's definition table may hold. */
static int known_key(const kind_spec *spec, loom_kind kind, const char *key)
{
    static const char *const common[] = {"name", "version", "description", NULL};
    const char *const *lists[] = {common, spec->required, spec->optional};
    for (size_t l = 0; l < sizeof lists / sizeof *lists; l++)
        for (const char *const *k = lists[l]; *k; k++)
            if (strcmp(*k, key) == 0)
                return 1;
    return kind == LOOM_KIND_FRAMEWORK && strcmp(key, "style") == 0;
}

/* Refuses any key the host would not read, naming it, so a misspelt
 * callback (log_train_metric) fails at load instead of never running. */
static void check_unknown_keys(lua_State *L, const kind_spec *spec, loom_kind kind, int def,
                               const char *name)
{
    lua_pushnil(L);
    while (lua_next(L, def) != 0) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING)
            luaL_error(L, "%s '%s': unexpected key of type %s (only named fields are read)",
                       spec->function, name, luaL_typename(L, -1));
        const char *key = lua_tostring(L, -1);
        if (known_key(spec, kind, key))
            continue;
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        luaL_addstring(&b, "name, version, description");
        if (kind == LOOM_KIND_FRAMEWORK)
            luaL_addstring(&b, ", style");
        for (const char *const *k = spec->required; *k; k++)
            luaL_addstring(&b, ", "), luaL_addstring(&b, *k);
        for (const char *const *k = spec->optional; *k; k++)
            luaL_addstring(&b, ", "), luaL_addstring(&b, *k);
        luaL_pushresult(&b);
        luaL_error(L, "%s '%s': unknown key '%s' (expected one of: %s)", spec->function, name,
                   key, lua_tostring(L, -1));
    }
}

static void check_kind_rules(lua_State *L, loom_kind kind, int def,
                             const char *name)
{
    const char *fn = kind_specs[kind].function;
    if (kind == LOOM_KIND_FRAMEWORK) {
        const char *style = optional_string(L, fn, def, "style");
        if (style && strcmp(style, "trainer") == 0)
            luaL_error(L,
                       "%s '%s': style 'trainer' is not available to Lua "
                       "scripts (the trainer contract needs native buffers); "
                       "use style = \"launch\"",
                       fn, name);
        if (style && strcmp(style, "launch") != 0)
            luaL_error(L, "%s '%s': style must be \"launch\" (got \"%s\")", fn,
                       name, style);
    }
    if (kind == LOOM_KIND_SEARCH && lua_api_has_function(L, def, "save_state") !=
                                        lua_api_has_function(L, def, "load_state"))
        luaL_error(L, "%s '%s': save_state and load_state come as a pair",
                   fn, name);
}

/* loom.register_KIND{name = ..., version = ..., description = ..., fns}.
 * Upvalue 1: the kind. */
static int api_register(lua_State *L)
{
    loom_kind kind = (loom_kind)lua_tointeger(L, lua_upvalueindex(1));
    const kind_spec *spec = &kind_specs[kind];
    if (!lua_box_of(L)->registering)
        return luaL_error(L, "%s: registration is only allowed while the "
                             "script is loading",
                          spec->function);
    if (!lua_istable(L, 1))
        return luaL_error(L, "%s: expected a table {name = ..., ...} (got %s)",
                          spec->function, luaL_typename(L, 1));
    lua_settop(L, 1);

    if (lua_getfield(L, 1, "name") != LUA_TSTRING ||
        !loom_name_valid(lua_tostring(L, -1)))
        return luaL_error(L,
                          "%s: invalid name '%s': expected 1-63 letters, "
                          "digits, '_', '-' or '.', not starting with '.'",
                          spec->function, luaL_tolstring(L, -1, NULL));
    const char *name = lua_tostring(L, -1);
    const char *version = optional_string(L, spec->function, 1, "version");
    const char *description =
        optional_string(L, spec->function, 1, "description");
    check_unknown_keys(L, spec, kind, 1, name);
    check_functions(L, spec, 1, name);
    check_kind_rules(L, kind, 1, name);

    lua_api_push_registrations(L);
    int list = lua_gettop(L);
    lua_Integer count = (lua_Integer)lua_rawlen(L, list);
    for (lua_Integer i = 1; i <= count; i++) {
        lua_rawgeti(L, list, i);
        lua_getfield(L, -1, "kind");
        lua_getfield(L, -2, "name");
        int same = lua_tointeger(L, -2) == (lua_Integer)kind &&
                   strcmp(lua_tostring(L, -1), name) == 0;
        lua_pop(L, 3);
        if (same)
            return luaL_error(L, "%s: duplicate %s name '%s' in this script",
                              spec->function, loom_kind_name(kind), name);
    }

    lua_createtable(L, 0, 5);
    lua_set_integer(L, "kind", kind);
    lua_set_string(L, "name", name);
    lua_set_string(L, "version", version);
    lua_set_string(L, "description", description);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "def");
    lua_rawseti(L, list, count + 1);
    return 0;
}

/* loom.log(level, message) */
static int api_log(lua_State *L)
{
    static const char *const levels[] = {"debug", "info", "warn", "error", NULL};
    int level = luaL_checkoption(L, 1, NULL, levels);
    const char *message = luaL_tolstring(L, 2, NULL);
    log_msg(level, lua_box_of(L)->log_source, "%s", message);
    return 0;
}

/* A name loom.append may create in its folder: a plain file name (no
 * separators, not hidden, no "..", printable). */
static int plain_file_name(const char *name, size_t len)
{
    if (len == 0 || len > 255 || strlen(name) != len || name[0] == '.')
        return 0;
    for (size_t i = 0; i < len; i++)
        if (name[i] == '/' || name[i] == '\\' || (unsigned char)name[i] < 0x20)
            return 0;
    return 1;
}

/* loom.append(file_name, text): appends to a file in the logger's own
 * folder (plugin_dir), within the exec's plugin write limit. */
static int api_append(lua_State *L)
{
    lua_box *box = lua_box_of(L);
    size_t name_len, text_len;
    const char *name = luaL_checklstring(L, 1, &name_len);
    const char *text = luaL_checklstring(L, 2, &text_len);
    if (!box->append_dir)
        return luaL_error(L, "loom.append: this logger has no folder of its own to write "
                             "(plugin_dir is nil: the run has no result directory)");
    if (!plain_file_name(name, name_len))
        return luaL_error(L,
                          "loom.append: '%s' is not a plain file name (no '/', no "
                          "leading '.', at most 255 bytes); files live in the "
                          "logger's plugin_dir",
                          name);
    if (text_len > box->append_budget) {
        char limit[48];
        uint64_t mib = box->append_limit >> 20;
        if (mib && mib << 20 == box->append_limit)
            snprintf(limit, sizeof limit, "%llu MiB", (unsigned long long)mib);
        else
            snprintf(limit, sizeof limit, "%llu bytes", (unsigned long long)box->append_limit);
        return luaL_error(L, "loom.append: '%s': the exec's plugin write limit (%s) is "
                             "reached; nothing written",
                          name, limit);
    }
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", box->append_dir, name) >=
        (int)sizeof path)
        return luaL_error(L, "loom.append: path of '%s' is too long", name);
    /* The exec folder is the job's: opened through util/user_tree, so a
     * link (the file or its folder) or a FIFO planted there is refused. */
    int fd = -1;
    char why[512];
    if (loom_err_take(utree_open_append_path(path, 0644, &fd), why, sizeof why) != LOOM_OK)
        return luaL_error(L, "loom.append: cannot open '%s': %s", name, why);
    size_t done = 0;
    while (done < text_len) {
        ssize_t n = write(fd, text + done, text_len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int saved = errno;
            close(fd);
            return luaL_error(L, "loom.append: cannot write '%s': %s", path,
                              strerror(saved));
        }
        done += (size_t)n;
        box->append_budget -= (uint64_t)n;
    }
    close(fd);
    return 0;
}

void lua_api_install(lua_State *L, int env)
{
    static const char *const register_names[LOOM_KIND_COUNT] = {
        "register_framework", "register_search", "register_kernel",
        "register_logger"};
    lua_createtable(L, 0, 8);
    for (int kind = 0; kind < LOOM_KIND_COUNT; kind++) {
        lua_pushinteger(L, kind);
        lua_pushcclosure(L, api_register, 1);
        lua_setfield(L, -2, register_names[kind]);
    }
    lua_pushcfunction(L, api_log);
    lua_setfield(L, -2, "log");
    lua_pushcfunction(L, lua_json_encode_function);
    lua_setfield(L, -2, "json_encode");
    lua_pushcfunction(L, lua_json_decode_function);
    lua_setfield(L, -2, "json_decode");
    lua_pushcfunction(L, api_append);
    lua_setfield(L, -2, "append");
    lua_setfield(L, env, "loom");

    lua_newtable(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &registrations_key);
}

void lua_api_push_registrations(lua_State *L)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &registrations_key);
}

int lua_api_find_registration(lua_State *L, loom_kind kind, const char *name)
{
    lua_api_push_registrations(L);
    int list = lua_gettop(L);
    lua_Integer count = (lua_Integer)lua_rawlen(L, list);
    for (lua_Integer i = 1; i <= count; i++) {
        lua_rawgeti(L, list, i);
        lua_getfield(L, -1, "kind");
        lua_getfield(L, -2, "name");
        int same = lua_tointeger(L, -2) == (lua_Integer)kind &&
                   strcmp(lua_tostring(L, -1), name) == 0;
        lua_pop(L, 2);
        if (same) {
            lua_getfield(L, -1, "def");
            lua_replace(L, list);
            lua_settop(L, list);
            return 1;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return 0;
}

void lua_set_string(lua_State *L, const char *key, const char *value)
{
    if (!value)
        return;
    lua_pushstring(L, value);
    lua_setfield(L, -2, key);
}

void lua_set_integer(lua_State *L, const char *key, lua_Integer value)
{
    lua_pushinteger(L, value);
    lua_setfield(L, -2, key);
}

void lua_push_metrics(lua_State *L, const loom_metric *metrics, uint32_t count)
{
    lua_createtable(L, 0, (int)count);
    for (uint32_t i = 0; i < count; i++) {
        if (!metrics[i].name)
            continue;
        lua_pushnumber(L, metrics[i].value);
        lua_setfield(L, -2, metrics[i].name);
    }
}

/*
 * plugin/lua_box.c - the sandbox every Lua plugin state runs in: a capped
 * allocator (HAProxy's hlua_alloc), a count hook that enforces a wall-clock
 * deadline per call, only the safe standard libraries, text chunks only, a
 * fresh environment per script, and one protected entry point whose message
 * handler adds source:line and a traceback.
 */
#include "plugin/lua_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lualib.h>

#include "plugin/host_api.h"
#include "util/log.h"

#define MIB ((size_t)1024 * 1024)
#define DEFAULT_MEMORY_BYTES (64 * MIB)
#define DEFAULT_DEADLINE_MS 5000u
/* How often the hook looks at the clock: cheap enough to be invisible,
 * frequent enough that a tight loop is stopped within microseconds. */
#define HOOK_EVERY_INSTRUCTIONS 1000

static const char env_key = 'e'; /* registry key of the script environment */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

lua_box *lua_box_of(lua_State *L)
{
    void *ud = NULL;
    lua_getallocf(L, &ud);
    return ud;
}

/* Tracks what the state holds and refuses growth past the cap; Lua then
 * runs an emergency collection and retries before raising a memory error.
 * `osize` is only a size when `ptr` is set (otherwise it encodes a type). */
static void *box_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    lua_box *box = ud;
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        free(ptr);
        box->used -= old;
        return NULL;
    }
    if (nsize > old && nsize - old > box->cap - box->used) {
        box->refused_alloc = 1;
        return NULL;
    }
    void *block = realloc(ptr, nsize);
    if (!block)
        return NULL;
    box->used = box->used - old + nsize;
    return block;
}

/* Once past the deadline the hook fires on every instruction of the thread,
 * so a script that catches the error with pcall fails again at once. */
static void box_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    lua_box *box = lua_box_of(L);
    if (!box->expired && now_ns() < box->deadline_ns)
        return;
    box->expired = 1;
    lua_sethook(L, box_hook, LUA_MASKCOUNT, 1);
    luaL_where(L, 0); /* the running function: where the loop is */
    lua_pushfstring(L, "deadline exceeded (%d ms)", (int)box->deadline_ms);
    lua_concat(L, 2);
    lua_error(L);
}

static int box_panic(lua_State *L)
{
    const char *msg = lua_tostring(L, -1);
    log_error("lua: unprotected error (a bridge bug): %s", msg ? msg : "?");
    return 0; /* Lua aborts */
}

/* "invalid_argument" or "invalid argument" -> LOOM_ERR_INVALID_ARGUMENT. */
static int code_from_name(const char *name)
{
    for (int code = LOOM_ERR_INVALID_ARGUMENT; code <= LOOM_ERR_ALREADY_EXISTS;
         code++) {
        const char *known = loom_code_name(code);
        size_t i = 0;
        while (known[i] && name[i] &&
               (known[i] == name[i] || (known[i] == ' ' && name[i] == '_')))
            i++;
        if (known[i] == 0 && name[i] == 0)
            return code;
    }
    return 0;
}

const char *lua_box_file_name(const lua_box *box)
{
    const char *slash = box->path ? strrchr(box->path, '/') : NULL;
    return slash ? slash + 1 : box->path ? box->path : "(script)";
}

/* Turns the error object into "source:line: message" plus a traceback.
 * Error tables {code = "invalid_argument", message = "..."} let a script
 * choose the loom_code, and are its answer: the caller sees the message
 * alone, the log the position too. Uses raw access only: no script code runs here
 * except a __tostring metamethod, as in the stand-alone interpreter. */
static int box_message_handler(lua_State *L)
{
    lua_box *box = lua_box_of(L);
    const char *msg = NULL;
    if (lua_type(L, 1) == LUA_TTABLE) {
        lua_pushliteral(L, "code");
        if (lua_rawget(L, 1) == LUA_TSTRING)
            box->error_code = code_from_name(lua_tostring(L, -1));
        lua_pushliteral(L, "message");
        if (lua_rawget(L, 1) == LUA_TSTRING)
            msg = lua_tostring(L, -1);
        box->answered = msg != NULL;
    }
    if (!msg && (lua_type(L, 1) == LUA_TSTRING || lua_type(L, 1) == LUA_TNUMBER))
        msg = lua_tostring(L, 1);
    if (!msg) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            msg = lua_tostring(L, -1);
        else
            msg = lua_pushfstring(L, "(error object is a %s value)",
                                  luaL_typename(L, 1));
    }
    /* The innermost Lua function is where the script went wrong; add its
     * position unless the message already starts with that source. */
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0)
            continue;
        size_t n = strlen(ar.short_src);
        if (strncmp(msg, ar.short_src, n) != 0 || msg[n] != ':') {
            const char *bare = msg;
            msg = lua_pushfstring(L, "%s:%d: %s", ar.short_src,
                                  ar.currentline, msg);
            box->position_len = strlen(msg) - strlen(bare);
        }
        break;
    }
    luaL_traceback(L, L, msg, 1);
    return 1;
}

static loom_error *box_error(lua_box *box, const char *what, int status,
                             const char *text)
{
    char prefix[160] = "";
    if (box->label || what)
        snprintf(prefix, sizeof prefix, "%s%s%s: ", box->label ? box->label : "",
                 box->label && what ? " " : "", what ? what : "");
    if (!text)
        text = "(no message)";
    const char *traceback = strstr(text, "\nstack traceback:");
    int len = traceback ? (int)(traceback - text) : (int)strlen(text);
    if (traceback || box->answered)
        log_msg(box->answered ? LOG_INFO : LOG_DEBUG, box->log_source, "%s%s", prefix, text);
    if (box->answered && box->position_len <= (size_t)len) {
        text += box->position_len; /* the position stays in the log */
        len -= (int)box->position_len;
    }

    /* Lua does not call the message handler for memory errors, so there is
     * no line to report: name the script instead. The allocator's refusal
     * during this call says the cap was reached, whatever the script made
     * of the error (a pcall may catch it and raise its own words, kept). */
    if (status == LUA_ERRMEM)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED,
                        "%s%s: memory limit exceeded (%g MiB)", prefix,
                        lua_box_file_name(box), (double)box->cap / (double)MIB);
    if (box->refused_alloc)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED,
                        "%s%s: memory limit exceeded (%g MiB): %.*s", prefix,
                        lua_box_file_name(box), (double)box->cap / (double)MIB, len, text);
    if (box->expired)
        return loom_err(LOOM_ERR_DEADLINE_EXCEEDED, "%s%.*s%s", prefix, len,
                        text,
                        strstr(text, "deadline exceeded") ? ""
                                                          : " (deadline exceeded)");
    return loom_err(box->error_code ? box->error_code : LOOM_ERR_INTERNAL,
                    "%s%.*s", prefix, len, text);
}

/* Starts a call: fresh deadline, the hook back to its normal period. */
static void box_arm(lua_box *box)
{
    box->deadline_ns = now_ns() + (uint64_t)box->deadline_ms * 1000000u;
    box->expired = 0;
    box->refused_alloc = 0;
    box->error_code = 0;
    box->answered = 0;
    box->position_len = 0;
    lua_sethook(box->L, box_hook, LUA_MASKCOUNT, HOOK_EVERY_INSTRUCTIONS);
}

loom_error *lua_box_call(lua_box *box, const char *what, lua_CFunction body,
                         void *ctx)
{
    lua_State *L = box->L;
    int base = lua_gettop(L);
    box_arm(box);
    /* Light C functions and light userdata: these pushes never allocate. */
    lua_pushcfunction(L, box_message_handler);
    lua_pushcfunction(L, body);
    lua_pushlightuserdata(L, ctx);
    int status = lua_pcall(L, 1, 0, base + 1);
    loom_error *err = NULL;
    /* The handler always leaves a string; checking the type keeps
     * lua_tostring from converting (allocating) outside protection. */
    if (status != LUA_OK)
        err = box_error(box, what, status,
                        lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1)
                                                       : NULL);
    lua_settop(L, base);
    box->registering = 0;
    return err;
}

/* load() for scripts: text chunks only, and by default in the script's own
 * environment (so loaded code sees `loom` too). Upvalues: the base
 * library's load, the environment. */
static int box_safe_load(lua_State *L)
{
    int has_env = !lua_isnone(L, 4);
    lua_settop(L, 4);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_pushliteral(L, "t");
    if (has_env)
        lua_pushvalue(L, 4);
    else
        lua_pushvalue(L, lua_upvalueindex(2));
    lua_call(L, 4, LUA_MULTRET);
    return lua_gettop(L) - 4;
}

/* print() goes to the host log: plugins never write to stdout. */
static int box_print(lua_State *L)
{
    int n = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; i++) {
        if (i > 1)
            luaL_addchar(&b, '\t');
        luaL_tolstring(L, i, NULL);
        luaL_addvalue(&b);
    }
    luaL_pushresult(&b);
    log_msg(LOG_INFO, lua_box_of(L)->log_source, "%s", lua_tostring(L, -1));
    return 0;
}

/* Calls upvalue 1 (the base library's function) with the same arguments. */
static int box_call_original(lua_State *L)
{
    int nargs = lua_gettop(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, nargs, LUA_MULTRET);
    return lua_gettop(L);
}

/* setmetatable() without __gc: Lua runs finalizers with hooks switched
 * off, so a finalizer could loop past any deadline (even in lua_close).
 * An object is only marked for finalization if its metatable has __gc
 * when set, so checking here is enough. */
static int box_safe_setmetatable(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TTABLE) {
        lua_pushliteral(L, "__gc");
        int has_gc = lua_rawget(L, 2) != LUA_TNIL;
        lua_pop(L, 1);
        if (has_gc)
            return luaL_error(L, "setmetatable: __gc metamethods are not "
                                 "allowed in plugin scripts");
    }
    return box_call_original(L);
}

/* collectgarbage() without "stop" and the tuning options: a script must
 * not switch off the collector its memory limit relies on. */
static int box_safe_collectgarbage(lua_State *L)
{
    static const char *const allowed[] = {"collect", "count", "step",
                                          "isrunning", NULL};
    luaL_checkoption(L, 1, "collect", allowed);
    return box_call_original(L);
}

/* The message handler xpcall is given, guarded: Lua runs a handler for an
 * error the count hook raised with hooks switched off, so once the call is
 * past its deadline the script's handler is skipped and the error goes on
 * as it is. Upvalue 1: the script's handler. */
static int box_guarded_handler(lua_State *L)
{
    if (lua_box_of(L)->expired)
        return 1; /* the error object, unchanged */
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/* xpcall(f, msgh, ...) with msgh guarded as above. Upvalue 1: the base
 * library's xpcall. */
static int box_safe_xpcall(lua_State *L)
{
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, box_guarded_handler, 1);
    lua_replace(L, 2);
    return box_call_original(L);
}

/* Replaces globals[name] with `wrapper`, which gets the original as its
 * upvalue. */
static void wrap_global(lua_State *L, int globals, const char *name,
                        lua_CFunction wrapper)
{
    lua_getfield(L, globals, name);
    lua_pushcclosure(L, wrapper, 1);
    lua_setfield(L, globals, name);
}

static int box_setup(lua_State *L)
{
    static const luaL_Reg safe_libs[] = {
        {LUA_GNAME, luaopen_base},         {LUA_STRLIBNAME, luaopen_string},
        {LUA_TABLIBNAME, luaopen_table},   {LUA_MATHLIBNAME, luaopen_math},
        {LUA_UTF8LIBNAME, luaopen_utf8},   {LUA_COLIBNAME, luaopen_coroutine},
        {NULL, NULL}};
    for (const luaL_Reg *lib = safe_libs; lib->func; lib++) {
        luaL_requiref(L, lib->name, lib->func, 1);
        lua_pop(L, 1);
    }
    lua_pushglobaltable(L);
    int globals = lua_gettop(L);
    lua_pushnil(L);
    lua_setfield(L, globals, "dofile");
    lua_pushnil(L);
    lua_setfield(L, globals, "loadfile");
    lua_pushcfunction(L, box_print);
    lua_setfield(L, globals, "print");
    wrap_global(L, globals, "setmetatable", box_safe_setmetatable);
    wrap_global(L, globals, "collectgarbage", box_safe_collectgarbage);
    wrap_global(L, globals, "xpcall", box_safe_xpcall);

    /* The script's environment: its own globals, falling back to the safe
     * library globals. */
    lua_newtable(L);
    int env = lua_gettop(L);
    lua_createtable(L, 0, 1);
    lua_pushvalue(L, globals);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, env);
    lua_pushvalue(L, env);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &env_key);

    lua_getfield(L, globals, "load");
    lua_pushvalue(L, env);
    lua_pushcclosure(L, box_safe_load, 2);
    lua_setfield(L, globals, "load");

    lua_api_install(L, env);
    return 0;
}

void lua_box_push_env(lua_State *L)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, &env_key);
}

loom_error *lua_box_open(lua_box *box, const char *path,
                         const lua_plugin_limits *limits)
{
    memset(box, 0, sizeof *box);
    box->cap = limits && limits->memory_bytes ? limits->memory_bytes
                                              : DEFAULT_MEMORY_BYTES;
    box->deadline_ms = limits && limits->deadline_ms ? limits->deadline_ms
                                                     : DEFAULT_DEADLINE_MS;
    box->path = path;
    const char *base = strrchr(path, '/');
    snprintf(box->log_source, sizeof box->log_source, "lua %s",
             base ? base + 1 : path);
    box->L = lua_newstate(box_alloc, box);
    if (!box->L)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED,
                        "%s: memory limit exceeded (%g MiB) creating the Lua state",
                        path, (double)box->cap / (double)MIB);
    lua_atpanic(box->L, box_panic);
    /* Generational: a plugin's garbage is mostly young (a kernel's request
     * and response tables live for one batch), and collecting it so cost
     * an echo kernel about 0.5 us less per request than incremental mode. */
    lua_gc(box->L, LUA_GCGEN, 0, 0);
    loom_error *err = lua_box_call(box, "sandbox setup", box_setup, NULL);
    if (err) {
        lua_box_close(box);
        return err;
    }
    return NULL;
}

struct run_script {
    lua_box *box;
    const char *source;
    size_t len;
};

static int box_run_script_body(lua_State *L)
{
    struct run_script *run = lua_touserdata(L, 1);
    /* The file's name alone: messages and tracebacks never show where the
     * host keeps its plugins. */
    const char *chunkname = lua_pushfstring(L, "@%s", lua_box_file_name(run->box));
    if (luaL_loadbufferx(L, run->source, run->len, chunkname, "t") != LUA_OK)
        return lua_error(L); /* the message already has path:line */
    lua_box_push_env(L);
    lua_setupvalue(L, -2, 1); /* the chunk's _ENV */
    run->box->registering = 1;
    lua_call(L, 0, 0);
    run->box->registering = 0;
    return 0;
}

loom_error *lua_box_run_script(lua_box *box, const char *source, size_t len)
{
    struct run_script run = {box, source, len};
    return lua_box_call(box, NULL, box_run_script_body, &run);
}

void lua_box_close(lua_box *box)
{
    if (!box->L)
        return;
    /* __gc metamethods run during close: bound them by a deadline too. */
    box_arm(box);
    lua_close(box->L);
    box->L = NULL;
}

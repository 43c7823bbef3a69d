/*
 * plugin/lua_plugin.h - Lua 5.4 scripts as plugins of any of the four kinds.
 *
 * A script calls loom.register_framework{...}, loom.register_search{...},
 * loom.register_kernel{...} or loom.register_logger{...} when it is run; the
 * bridge wraps the registered functions in the SDK's vtables. Scripts run
 * sandboxed: one lua_State per plugin instance, a capped allocator, an
 * instruction-count hook that enforces a wall-clock deadline per call, only
 * the base (without dofile/loadfile/load of binary chunks), string, table,
 * math, utf8 and coroutine libraries, text chunks only, and every call
 * through lua_pcall with a handler that adds source:line.
 */
#ifndef LOOM_PLUGIN_LUA_PLUGIN_H
#define LOOM_PLUGIN_LUA_PLUGIN_H

#include <stddef.h>

#include "plugin/plugin.h"

typedef struct lua_plugin_limits {
    size_t memory_bytes;  /* per lua_State; 0 = default (64 MiB) */
    unsigned deadline_ms; /* per call into the script; 0 = default (5000) */
} lua_plugin_limits;

typedef struct lua_plugin lua_plugin;

/* Reads and runs the script at `path` once to learn what it registers, into
 * *out. The error names the file (and line, for Lua errors): LOOM_E_NOT_FOUND
 * when there is no such file, LOOM_E_DEADLINE or LOOM_E_LIMIT past a limit,
 * LOOM_E_INVALID when it fails to compile or run or registers nothing
 * valid. `limits` may be NULL. */
loom_error *lua_plugin_open(const char *path, const lua_plugin_limits *limits, lua_plugin **out);
/* The registrations; valid until lua_plugin_close. */
size_t lua_plugin_registrations(const lua_plugin *p,
                                const loom_registration **out);
/* Must be called only when no instance made from it is alive. */
void lua_plugin_close(lua_plugin *p);

#endif

/*
 * plugin/lua_internal.h - what the Lua bridge's files (host/plugin/lua_*.c)
 * share: the sandboxed state a script runs in (a "box"), the factory entries
 * registrations point at, and plugin instances. Nothing outside the bridge
 * includes this; the rest of the host sees only lua_plugin.h and the SDK's
 * vtables.
 */
#ifndef LOOM_PLUGIN_LUA_INTERNAL_H
#define LOOM_PLUGIN_LUA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <lauxlib.h>

#include "util/error.h"
#include <lua.h>

#include "plugin/lua_plugin.h"
#include "plugin/plugin.h"

/* ---- the sandbox (lua_box.c) ------------------------------------------- */

/* One sandboxed lua_State and its limits. The allocator's user data is the
 * box itself, so any thread of the state finds it with lua_box_of(). */
typedef struct lua_box {
    lua_State *L;
    size_t used;           /* bytes the state holds now */
    size_t cap;            /* bytes it may hold */
    unsigned deadline_ms;  /* per call */
    uint64_t deadline_ns;  /* monotonic clock; armed by every entry */
    int expired;           /* the current call ran past its deadline */
    int refused_alloc;     /* the allocator refused a block this call */
    int registering;       /* loom.register_* allowed (top-level run only) */
    int error_code;        /* loom_code named by an error({code=...}) */
    int answered;          /* the error was such a table with a message: the
                            * script's answer to its caller, shown without
                            * the position (which the log keeps) */
    size_t position_len;   /* the "source:line: " the handler put before it */
    const char *path;      /* the script, for messages; borrowed */
    const char *label;     /* "lua search 'x'" for callback errors, or NULL */
    const char *append_dir; /* logger instances: loom.append's folder */
    uint64_t append_budget; /* bytes loom.append may still write */
    uint64_t append_limit;  /* the exec's limit, for messages */
    char log_source[80];   /* the log's source field: "lua NAME.lua" */
} lua_box;

/* Creates the sandboxed state: capped allocator, count hook, safe libraries,
 * a fresh environment holding the `loom` table. */
loom_error *lua_box_open(lua_box *box, const char *path,
                         const lua_plugin_limits *limits);
/* The script's file name without its folder: what messages show. */
const char *lua_box_file_name(const lua_box *box);
/* Compiles (text only) and runs the script in the box's environment, with
 * loom.register_* allowed. */
loom_error *lua_box_run_script(lua_box *box, const char *source, size_t len);
/* Runs body(L) with the light userdata `ctx` as its only argument, in
 * protected mode, under a fresh deadline. Any Lua error (including ones the
 * body raises with luaL_error) becomes a loom_error whose message is
 * "LABEL WHAT: NAME.lua:LINE: message" (label and what when set; the
 * script's file name, never its folder), or "LABEL WHAT: message" for an
 * error({code = ..., message = ...}) table, whose position goes to the
 * log. Every use
 * of the Lua API on a box must happen inside such a body, so that a memory
 * error can never reach the panic handler. */
loom_error *lua_box_call(lua_box *box, const char *what, lua_CFunction body,
                         void *ctx);
void lua_box_close(lua_box *box);
lua_box *lua_box_of(lua_State *L);
/* Pushes the script's environment table. */
void lua_box_push_env(lua_State *L);

/* ---- the `loom` table (lua_api.c) -------------------------------------- */

/* Adds the `loom` table to the environment at `env` and an empty
 * registration list to the registry. Raises on memory errors. */
void lua_api_install(lua_State *L, int env);
/* Pushes the list of registration records, each a table
 * {kind = int, name =, version =, description =, def = table}. */
void lua_api_push_registrations(lua_State *L);
/* Pushes the definition table of `kind`/`name` from the last run and
 * returns 1, or pushes nothing and returns 0. */
int lua_api_find_registration(lua_State *L, loom_kind kind, const char *name);
/* True when field `name` of the table at `idx` is a function. */
int lua_api_has_function(lua_State *L, int idx, const char *name);

/* ---- JSON <-> Lua (lua_json.c) ----------------------------------------- */

/* Pushes `text` decoded to Lua values (objects become tables, arrays
 * sequences, null nil); NULL pushes nil. Raises "WHAT is not valid JSON". */
void lua_json_push(lua_State *L, const char *text, const char *what);
/* Encodes the value at `idx` into *text (malloc'd, the caller's). Never
 * raises: LOOM_E_INVALID naming what JSON cannot hold (a NaN, a function,
 * a mixed-key table, nesting past its limit), LOOM_E_INTERNAL out of
 * memory; *text is NULL then. */
loom_error *lua_json_encode(lua_State *L, int idx, char **text);
/* Pushes a malloc'd string and frees it, even when the push fails. */
void lua_push_owned_string(lua_State *L, char *text);

/* lua_kernel_tensors.c: a v2 request's inputs as the field "inputs" of the
 * table on top (nothing for a raw request); and the array of output tables
 * at `outputs` answered through respond_tensors (a bad table raises a Lua
 * error; the host's refusal comes back in *err). */
void lua_kernel_push_inputs(lua_State *L, const loom_infer_request *r);
void lua_kernel_respond_tensors(lua_State *L, int outputs, loom_infer_request *r, int index,
                                loom_error **err);
int lua_json_encode_function(lua_State *L); /* loom.json_encode */
int lua_json_decode_function(lua_State *L); /* loom.json_decode */

/* ---- plugins, entries and instances (lua_plugin.c) --------------------- */

/* One registration's factory. The vtable comes first so that the `self`
 * pointer a factory-level call receives is also the entry's address. */
typedef struct lua_entry {
    union {
        loom_framework_factory framework;
        loom_search_factory search;
        loom_kernel_factory kernel;
        loom_logger_factory logger;
    } vt;
    struct lua_plugin *plugin;
    loom_kind kind;
    char *name;
    char *version;
    char *description;
    char label[LOOM_NAME_MAX + 24]; /* "lua search 'name'" */
} lua_entry;

struct lua_plugin {
    char *path;
    char *source; /* read once: every instance runs the same text */
    size_t source_len;
    lua_plugin_limits limits;
    size_t count;
    lua_entry *entries;
    loom_registration *registrations;
};

/* One plugin instance (or a temporary state for plan_launch): its own box,
 * holding a registry reference to the definition table the run registered
 * under the entry's kind and name. */
typedef struct lua_instance {
    lua_box box;
    const lua_entry *entry;
    int def_ref;
    char *append_dir;                     /* owned; loggers only */
    const loom_proposal_sink *sink;       /* search: set during suggest and observe */
    struct lua_search_space *search;      /* search: its copy of the space (lua_search.c) */
    loom_error *pending;                  /* an SDK error a body raised over */
} lua_instance;

/* Makes a new box, runs the script again and finds the registration of the
 * entry's kind and name. `append_dir` enables loom.append (loggers: their
 * plugin_dir), which may then write `append_budget` bytes. */
loom_error *lua_instance_new(const lua_entry *entry, const char *append_dir, uint64_t append_budget,
                             lua_instance **out);
void lua_instance_free(lua_instance *inst);
/* Pushes the definition's function `name`; raises naming it when absent. */
void lua_instance_push_function(lua_State *L, lua_instance *inst,
                                const char *name);
/* Pushes the definition's function `name` and returns 1, or returns 0. */
int lua_instance_get_function(lua_State *L, lua_instance *inst,
                              const char *name);
/* Runs a body on the instance's box; when the body raised because an SDK
 * callback returned an error (kept in inst->pending), that error is
 * returned (prefixed with the box's message) instead. */
loom_error *lua_instance_call(lua_instance *inst, const char *what,
                              lua_CFunction body, void *ctx);
/* Raises a Lua error carrying `err` (an SDK callback's error): its message
 * goes into the Lua error, the object into inst->pending. */
int lua_instance_raise(lua_State *L, lua_instance *inst, loom_error *err,
                       const char *context);

/* ---- the four kinds' vtables (lua_framework.c, lua_search.c, ...) ------ */

/* Fill the entry's vtable; `def` is the definition table's stack index, to
 * see which optional functions the script gave. */
void lua_framework_fill(lua_entry *entry, lua_State *L, int def);
void lua_search_fill(lua_entry *entry, lua_State *L, int def);

/* ---- the search space as Lua sees it (lua_search_space.c) ------------- */

typedef struct lua_search_space {
    uint32_t count;
    loom_param *params; /* deep copies */
    loom_value *values; /* the point being proposed */
    int suggesting;     /* propose is valid only inside suggest */
} lua_search_space;

lua_search_space *lua_search_space_copy(const loom_search_config *config);
void lua_search_space_free(lua_search_space *space);
/* Pushes the space as an array of parameter tables. */
void lua_search_push_space(lua_State *L, const lua_search_space *space);
/* Pushes {name = value}. */
void lua_search_push_values(lua_State *L, const lua_search_space *space,
                            const loom_value *values, uint32_t count);
/* The table at idx as values in the space's order; raises naming the
 * parameter that is missing, unknown or of the wrong type. */
const loom_value *lua_search_read_point(lua_State *L, int idx, lua_search_space *space);
void lua_kernel_fill(lua_entry *entry, lua_State *L, int def);
void lua_logger_fill(lua_entry *entry, lua_State *L, int def);

/* Helpers to build argument tables. */
void lua_push_metrics(lua_State *L, const loom_metric *metrics,
                      uint32_t count);
void lua_set_string(lua_State *L, const char *key, const char *value);
void lua_set_integer(lua_State *L, const char *key, lua_Integer value);

#endif

/*
 * plugin/lua_plugin.c - a Lua script as a plugin file: read it once, run it
 * in a throw-away sandbox to learn what it registers, and hand out one
 * factory per registration. Instances get their own sandbox in which the
 * script runs again (lua_instance_new), so no two instances share state.
 */
#include "plugin/lua_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plugin/host_api.h"

/* Larger files are not scripts anyone wrote by hand. */
#define MAX_SCRIPT_BYTES (16u * 1024 * 1024)

static loom_error *read_script(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return loom_err(errno == ENOENT ? LOOM_E_NOT_FOUND : LOOM_E_INVALID, "%s: cannot open: %s",
                        path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size > (off_t)MAX_SCRIPT_BYTES) {
        fclose(f);
        return loom_err(LOOM_E_INVALID, "%s: not a regular file of at most %u bytes", path,
                        MAX_SCRIPT_BYTES);
    }
    char *text = malloc((size_t)st.st_size + 1);
    size_t n = text ? fread(text, 1, (size_t)st.st_size, f) : 0;
    if (!text || ferror(f)) {
        loom_error *e = loom_err(LOOM_E_INTERNAL, "%s: cannot read: %s", path,
                                 text ? strerror(errno) : "out of memory");
        free(text);
        fclose(f);
        return e;
    }
    fclose(f);
    text[n] = 0;
    *len = n;
    *out = text;
    return NULL;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Copies the run's registration records into entries with vtables. */
static int collect_registrations(lua_State *L)
{
    lua_plugin *p = lua_touserdata(L, 1);
    lua_api_push_registrations(L);
    int list = lua_gettop(L);
    size_t count = lua_rawlen(L, list);
    if (count == 0)
        return luaL_error(L, "%s: registers nothing (call loom.register_"
                             "framework, _search, _kernel or _logger)",
                          p->path);
    p->entries = calloc(count, sizeof *p->entries);
    p->registrations = calloc(count, sizeof *p->registrations);
    if (!p->entries || !p->registrations)
        return luaL_error(L, "out of memory");
    for (size_t i = 0; i < count; i++) {
        lua_rawgeti(L, list, (lua_Integer)i + 1);
        int record = lua_gettop(L);
        lua_entry *e = &p->entries[i];
        e->plugin = p;
        lua_getfield(L, record, "kind");
        e->kind = (loom_kind)lua_tointeger(L, -1);
        lua_getfield(L, record, "name");
        e->name = dup_or_null(lua_tostring(L, -1));
        lua_getfield(L, record, "version");
        e->version = dup_or_null(lua_tostring(L, -1));
        lua_getfield(L, record, "description");
        e->description = dup_or_null(lua_tostring(L, -1));
        p->count = i + 1; /* so close frees what was copied */
        if (!e->name)
            return luaL_error(L, "out of memory");
        snprintf(e->label, sizeof e->label, "lua %s '%s'",
                 loom_kind_name(e->kind), e->name);
        lua_getfield(L, record, "def");
        int def = lua_gettop(L);
        switch (e->kind) {
        case LOOM_KIND_FRAMEWORK: lua_framework_fill(e, L, def); break;
        case LOOM_KIND_SEARCH: lua_search_fill(e, L, def); break;
        case LOOM_KIND_KERNEL: lua_kernel_fill(e, L, def); break;
        default: lua_logger_fill(e, L, def); break;
        }
        loom_registration *r = &p->registrations[i];
        r->kind = e->kind;
        r->name = e->name;
        r->version = e->version ? e->version : "";
        r->description = e->description ? e->description : "";
        r->factory = &e->vt;
        lua_settop(L, list);
    }
    return 0;
}

/* Messages name the script: Lua's already start with "path:line:"; the
 * others get the path in front. A script that fails while loading is a bad
 * plugin (LOOM_E_INVALID) unless it ran into a limit. */
static loom_error *load_error(loom_error *e, const char *path)
{
    if (loom_err_code(e) == LOOM_E_INTERNAL)
        loom_err_recode(e, LOOM_E_INVALID);
    if (strncmp(loom_err_message(e), path, strlen(path)) == 0)
        return e;
    return loom_err_wrap(e, "%s", path);
}

loom_error *lua_plugin_open(const char *path, const lua_plugin_limits *limits, lua_plugin **out)
{
    if (!path)
        return loom_err(LOOM_E_INVALID, "no script path given");
    lua_plugin *p = calloc(1, sizeof *p);
    if (!p || !(p->path = strdup(path))) {
        free(p);
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory", path);
    }
    if (limits)
        p->limits = *limits;
    loom_error *e = read_script(path, &p->source, &p->source_len);
    if (e) {
        lua_plugin_close(p);
        return e;
    }
    lua_box box;
    e = lua_box_open(&box, p->path, &p->limits);
    if (!e) {
        e = lua_box_run_script(&box, p->source, p->source_len);
        if (!e)
            e = lua_box_call(&box, NULL, collect_registrations, p);
        lua_box_close(&box);
    }
    if (e) {
        lua_plugin_close(p);
        return load_error(e, path);
    }
    *out = p;
    return NULL;
}

size_t lua_plugin_registrations(const lua_plugin *p,
                                const loom_registration **out)
{
    if (out)
        *out = p ? p->registrations : NULL;
    return p ? p->count : 0;
}

void lua_plugin_close(lua_plugin *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->count; i++) {
        free(p->entries[i].name);
        free(p->entries[i].version);
        free(p->entries[i].description);
    }
    free(p->entries);
    free(p->registrations);
    free(p->source);
    free(p->path);
    free(p);
}

/* ---- instances --------------------------------------------------------- */

static int find_definition(lua_State *L)
{
    lua_instance *inst = lua_touserdata(L, 1);
    const lua_entry *e = inst->entry;
    if (!lua_api_find_registration(L, e->kind, e->name))
        return luaL_error(L, "%s: no longer registers %s '%s' when run again",
                          e->plugin->path, loom_kind_name(e->kind), e->name);
    inst->def_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

loom_error *lua_instance_new(const lua_entry *entry, const char *append_dir, uint64_t append_budget,
                             lua_instance **out)
{
    *out = NULL;
    lua_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory",
                        entry->label);
    inst->entry = entry;
    inst->def_ref = LUA_NOREF;
    if (append_dir && !(inst->append_dir = strdup(append_dir))) {
        free(inst);
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory",
                        entry->label);
    }
    const lua_plugin *p = entry->plugin;
    loom_error *err = lua_box_open(&inst->box, p->path, &p->limits);
    if (err) {
        free(inst->append_dir);
        free(inst);
        return loom_err_wrap(err, "%s", entry->label);
    }
    inst->box.append_dir = inst->append_dir;
    inst->box.append_budget = append_budget;
    inst->box.label = entry->label;
    err = lua_box_run_script(&inst->box, p->source, p->source_len);
    if (!err)
        err = lua_box_call(&inst->box, "create", find_definition, inst);
    if (err) {
        lua_instance_free(inst);
        return err;
    }
    *out = inst;
    return NULL;
}

void lua_instance_free(lua_instance *inst)
{
    if (!inst)
        return;
    lua_box_close(&inst->box);
    loom_err_free(inst->pending);
    free(inst->append_dir);
    free(inst);
}

int lua_instance_get_function(lua_State *L, lua_instance *inst,
                              const char *name)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, inst->def_ref);
    if (lua_getfield(L, -1, name) != LUA_TFUNCTION) {
        lua_pop(L, 2);
        return 0;
    }
    lua_remove(L, -2);
    return 1;
}

void lua_instance_push_function(lua_State *L, lua_instance *inst,
                                const char *name)
{
    if (!lua_instance_get_function(L, inst, name))
        luaL_error(L, "%s: '%s' is no longer a function", inst->box.path, name);
}

loom_error *lua_instance_call(lua_instance *inst, const char *what,
                              lua_CFunction body, void *ctx)
{
    loom_err_free(inst->pending);
    inst->pending = NULL;
    loom_error *err = lua_box_call(&inst->box, what, body, ctx);
    if (err && inst->pending) {
        /* Keep the callback's own code; the box's message says where. */
        loom_error *pending = inst->pending;
        inst->pending = NULL;
        loom_error *wrapped = loom_err(loom_err_code(pending), "%s",
                                       loom_err_message(err));
        loom_err_free(pending);
        loom_err_free(err);
        return wrapped;
    }
    return err;
}

int lua_instance_raise(lua_State *L, lua_instance *inst, loom_error *err,
                       const char *context)
{
    char message[512];
    snprintf(message, sizeof message, "%s: %s", context, loom_err_message(err));
    loom_err_free(inst->pending);
    inst->pending = err;
    return luaL_error(L, "%s", message);
}

/*
 * plugin/registry.h - every plugin the host knows: kind, name, version, ABI,
 * format (.so / Lua), origin (built-in or user) and state (loaded, or the
 * reason it failed). One lock serialises loading; a file is loaded once
 * (de-duplicated by device and inode); a plugin with live instances is never
 * unloaded.
 */
#ifndef LOOM_PLUGIN_REGISTRY_H
#define LOOM_PLUGIN_REGISTRY_H

#include <limits.h>
#include <stddef.h>

#include "plugin/plugin.h"

typedef struct registry registry;

typedef struct registry_entry {
    int kind; /* loom_kind, or -1 when the file failed before telling */
    char name[LOOM_NAME_MAX];
    char version[64];
    char description[256];
    char path[PATH_MAX];
    char format[8];  /* "so" or "lua" */
    char origin[16]; /* "builtin" or "user" */
    unsigned abi_major, abi_minor;
    int loaded; /* 0: failed, see error */
    char error[512];
    /* NULL unless loaded, and NULL in a registry that probes user plugins
     * (registry_set_probe): the host holds their description only. */
    const void *factory;
    int32_t style; /* a framework's loom_framework_style (launch, trainer); 0 for other kinds */
} registry_entry;

registry *registry_create(void);
void registry_destroy(registry *r);

/* From now on, plugin files whose origin is not "builtin" are never loaded
 * into this process: a `binary plugin-host --describe` child loads each one
 * and the registry keeps what it registered (names, versions, kinds, a
 * framework's style) with a NULL factory. Whoever runs such a plugin does
 * so in a process of its own (a worker, a plugin-host, a kernel). Loom's
 * own built-in plugins are part of the host and load as before. */
void registry_set_probe(registry *r, const char *binary);

/* Loads `path` (.so or .lua by extension) and registers every factory it
 * provides. `rename`, when set, registers the file's only factory under that
 * name; `want_kind` >= 0 requires the file to provide that kind (the other
 * kinds it provides are ignored). All or nothing: on any error nothing is
 * registered and the error says why: LOOM_E_CONFLICT when a name is already
 * registered or the file is already loaded, LOOM_E_NOT_FOUND when there is
 * no such file, LOOM_E_UNSUPPORTED for an ABI this host cannot load,
 * LOOM_E_INVALID for anything else wrong with the file (not a plugin, a
 * missing entry, a Lua error, no factory of the wanted kind). With
 * `record_failure` the failure is kept in the list so `plugin list` shows
 * it. */
loom_error *registry_load(registry *r, const char *path, const char *origin, const char *rename,
                          int want_kind, int record_failure);

/* Loads a stored plugin file again (at start-up) as it was registered:
 * only the factories of want_kind recorded under names[0..count) (one file
 * may provide several, some since removed), or, when the file provides one
 * factory of that kind and one name is recorded, that factory under the
 * name (an upload may have renamed it). Failures are recorded. */
loom_error *registry_load_recorded(registry *r, const char *path, const char *origin,
                                   const char *const *names, size_t count, int want_kind);

/* Registers a factory the host itself provides (format "host", origin
 * "builtin"), e.g. the ffi kernel. Returns 0, or -1 when the name is taken. */
int registry_add_factory(registry *r, loom_kind kind, const char *name, const char *version,
                         const char *description, const void *factory);

/* Registers `alias` as a second name of the loaded plugin `name` (same
 * factory, same file), e.g. WMLA's "edt" for the native adapter. Returns 0,
 * or -1 when `name` is not loaded or `alias` is taken. */
int registry_alias(registry *r, loom_kind kind, const char *name, const char *alias);

/* Loads every .so and .lua in `dir`, in name order; failures are logged and
 * recorded, never fatal. Returns the number loaded. */
int registry_load_dir(registry *r, const char *dir, const char *origin);

/* Looks a loaded plugin up (names match case-insensitively) and pins it
 * until registry_release. Returns 0 and fills `out`, or -1. */
int registry_acquire(registry *r, loom_kind kind, const char *name,
                     registry_entry *out);
void registry_release(registry *r, loom_kind kind, const char *name);

/* Unregisters a user plugin: LOOM_E_NOT_FOUND when there is none of that
 * name, LOOM_E_FORBIDDEN for a built-in, LOOM_E_CONFLICT while it has live
 * instances. The file is unloaded once nothing of it remains. */
loom_error *registry_remove(registry *r, loom_kind kind, const char *name);

/* Copies up to `cap` entries (kind < 0 for all kinds, else that kind only)
 * into out; returns how many there are in all. */
size_t registry_list(registry *r, int kind, registry_entry *out, size_t cap);

#endif

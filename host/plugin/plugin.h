/*
 * plugin/plugin.h - what every loader produces: registrations. A loaded
 * plugin file (a .so, or a .lua script) registers one or more factories,
 * each of one kind under one name; the registry (registry.h) keeps them.
 * Nothing outside the loaders can tell a Lua factory from a C one: both are
 * the SDK's vtables.
 */
#ifndef LOOM_PLUGIN_PLUGIN_H
#define LOOM_PLUGIN_PLUGIN_H

#include <loom/loom.h>

#include "util/error.h"

typedef enum loom_kind {
    LOOM_KIND_FRAMEWORK = 0,
    LOOM_KIND_SEARCH = 1,
    LOOM_KIND_KERNEL = 2,
    LOOM_KIND_LOGGER = 3,
    LOOM_KIND_COUNT = 4
} loom_kind;

/* "framework", "search", "kernel", "logger". */
const char *loom_kind_name(loom_kind kind);
/* Accepts the names above and "algorithm" for search. Returns 0 or -1. */
int loom_kind_parse(const char *text, loom_kind *out);
/* The SDK factory id of a kind ("loom.framework/1", ...). */
const char *loom_kind_factory_id(loom_kind kind);

#define LOOM_NAME_MAX 64

/* Metrics one plugin call hands over or receives: LOOM_MAX_METRICS in
 * loom_metrics.items plus the room the host offers past them (ABI 1.5); a
 * logger call carries as many. A list that would be longer keeps its first
 * LOOM_HOST_MAX_METRICS (loom_metrics_add refuses the rest). */
#define LOOM_HOST_MAX_METRICS 64

/* One factory a plugin file registered. Strings and the factory live as long
 * as the loaded file does. */
typedef struct loom_registration {
    loom_kind kind;
    const char *name;
    const char *version;
    const char *description;
    const void *factory; /* loom_framework_factory, loom_search_factory, ... */
    /* A framework's loom_framework_style when factory is NULL (a plugin
     * described by a probe, registry_probe.h); 0 otherwise. */
    int32_t style;
} loom_registration;

/* An optional entry of a plugin's table, or NULL when the plugin left it
 * out: NULL in the slot, or a struct_size that ends before it (a plugin
 * built against an older, smaller struct has something else there). Every
 * optional entry the host calls is read through this. */
#define LOOM_OPTIONAL_ENTRY(p, type, field)                                     \
    (LOOM_STRUCT_HAS(p, type, field) ? (p)->field : NULL)

/* Checks that a factory of `kind` has every required entry and zero in its
 * reserved field. NULL, or LOOM_E_INVALID saying "missing required entry
 * 'x'" (or naming the reserved field). */
loom_error *loom_factory_validate(loom_kind kind, const void *factory);

/* True when `name` is 1-63 of [A-Za-z0-9_.-]. */
int loom_name_valid(const char *name);

#endif

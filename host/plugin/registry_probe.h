/*
 * plugin/registry_probe.h - learning what a user's plugin file provides
 * without running any of its code in the host: a `loom plugin-host
 * --describe` child, confined before it loads the file, loads it (module
 * init, the Lua script's registrations) and prints what it registered as
 * JSON; the host keeps only that description. A plugin whose loading
 * crashes, hangs or misbehaves fails to register, with the reason, and the
 * host goes on.
 */
#ifndef LOOM_PLUGIN_REGISTRY_PROBE_H
#define LOOM_PLUGIN_REGISTRY_PROBE_H

#include <stddef.h>

#include "plugin/plugin.h"
#include "util/error.h"

/* How long a probe may take, and the most it may print. */
#define REGISTRY_PROBE_DEADLINE_MS 10000
#define REGISTRY_PROBE_MAX_OUTPUT (256u * 1024u)
/* The child writes its description to this descriptor. */
#define REGISTRY_PROBE_FD 3

/* What a probe found: registrations whose strings it owns (factory NULL). */
typedef struct probe_result {
    loom_registration *regs;
    size_t count;
    unsigned abi_major, abi_minor;
} probe_result;

/* Runs `binary plugin-host --describe --path PATH` and reads its answer.
 * The loader's own error comes back with its code (LOOM_E_INVALID,
 * LOOM_E_UNSUPPORTED, ...); a probe that crashed or ran past its deadline
 * is LOOM_E_INVALID, saying so. */
loom_error *registry_probe_run(const char *binary, const char *path, probe_result **out);
void registry_probe_free(probe_result *p);

/* The child's side: loads `path` into a registry of its own and returns
 * the description as a JSON text (malloc'd), the loader's error included.
 * NULL when out of memory. */
char *registry_probe_describe(const char *path);

#endif

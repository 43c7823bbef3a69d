/*
 * plugin/so_loader.h - loading a compiled plugin (.so) and checking its
 * descriptor. The host checks versions, never the plugin: same ABI major,
 * plugin minor <= host minor, ABI tag equal, struct at least ABI 1.0's size.
 */
#ifndef LOOM_PLUGIN_SO_LOADER_H
#define LOOM_PLUGIN_SO_LOADER_H

#include <stddef.h>

#include "plugin/plugin.h"

typedef struct so_plugin so_plugin;

/* dlopens `path` (RTLD_NOW | RTLD_LOCAL; a bare file name means the file in
 * the current folder), checks the descriptor, calls init with a host table
 * when `call_init` is set, and collects its factories into *out. On failure
 * leaves nothing loaded and returns an error naming the file and the field
 * (with both values on a version mismatch): LOOM_E_UNSUPPORTED for an ABI
 * this host cannot load (major, minor, tag), LOOM_E_INVALID for a file that
 * is not a valid plugin, the plugin's own code when its init fails. */
loom_error *so_plugin_open(const char *path, int call_init, so_plugin **out);
size_t so_plugin_registrations(const so_plugin *p,
                               const loom_registration **out);
void so_plugin_abi(const so_plugin *p, unsigned *major, unsigned *minor);
/* Calls deinit (if init was called) and dlcloses. */
void so_plugin_close(so_plugin *p);

#endif

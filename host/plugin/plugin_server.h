/*
 * plugin/plugin_server.h - the child's side of plugin_proc.h: `loom
 * plugin-host` loads one plugin file and serves one instance's calls,
 * frame by frame (plugin_wire.h), on a socket until the host closes it.
 * Everything the plugin does happens here, never in the host.
 */
#ifndef LOOM_PLUGIN_PLUGIN_SERVER_H
#define LOOM_PLUGIN_PLUGIN_SERVER_H

/* Loads `path` and serves factory `name` of `kind` (only "logger" so far)
 * on `fd`. Returns the exit status: 0 when the host closed the socket, 1
 * on a protocol or I/O error. A plugin that cannot be loaded answers every
 * call with the reason. */
/* `confine`, when set, is called once the plugin is loaded (or failed to
 * load) and before the first call is served: the child gives up what the
 * plugin does not need. A non-zero return ends the child. */
int plugin_server_run(int fd, const char *path, const char *name, const char *kind,
                      int (*confine)(void *ctx), void *ctx);

#endif

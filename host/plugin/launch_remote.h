/*
 * plugin/launch_remote.h - a launch-style framework's plan_launch, run in a
 * `loom plugin-host` child rather than in the host: the request crosses as
 * a frame (plugin_wire.h), the adapter fills a sink there that writes the
 * planned workers into the reply, and the host replays them into its own
 * sink. The adapter's code (C or Lua) never runs in the host's process; a
 * crash or a hang fails the submission with the adapter named.
 */
#ifndef LOOM_PLUGIN_LAUNCH_REMOTE_H
#define LOOM_PLUGIN_LAUNCH_REMOTE_H

#include <loom/framework.h>

#include "plugin/plugin_wire.h"
#include "util/error.h"

/* The most workers and strings a plan may hold once it crosses. */
#define LAUNCH_REMOTE_MAX_WORKERS 4096u
#define LAUNCH_REMOTE_MAX_STRINGS 4096u

typedef struct launch_remote_spec {
    const char *binary;      /* the loom binary (plugin-host) */
    const char *plugin_path; /* the framework's .so or .lua */
    const char *name;        /* its registered name */
    const char *output;      /* the child's stdout/stderr, appended; NULL: the host's */
    unsigned deadline_ms;    /* 0: the plugin-host default */
    /* Whose exec: the child runs under their account and may write (and
     * read) only its folder, as the exec's jobs will. */
    const char *owner;
    int64_t owner_id;
    const char *exec_dir;
} launch_remote_spec;

/* Calls the framework's plan_launch in a child and adds what it planned to
 * `sink`, in order. Errors are the adapter's own (its code kept) or what
 * happened to its process, prefixed with the framework's name. */
loom_error *launch_plan_remote(const launch_remote_spec *spec, const loom_launch_request *req,
                               const loom_launch_sink *sink);

/* The child's side: decodes a WIRE_LAUNCH_PLAN request from `r`, runs the
 * factory's plan_launch and writes the plan into `out` (appended to the
 * reply). r->bad afterwards: a malformed request. */
loom_error *launch_plan_serve(const loom_framework_factory *f, wire_reader *r, wire_buf *out);

#endif

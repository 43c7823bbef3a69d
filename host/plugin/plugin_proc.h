/*
 * plugin/plugin_proc.h - one plugin instance run in a `loom plugin-host`
 * child instead of the host: the host sends each call as a frame
 * (plugin_wire.h) and waits at most the call's deadline; past it the child
 * is killed. A crash or a kill fails that call with an error naming the
 * plugin; the next call starts a new child and replays the calls that set
 * the instance up (create, on_train_begin). A plugin that crashes, runs
 * past its deadline or hits a limit `max_failures` times in a row is
 * disabled: never called again, its child gone.
 *
 * A child starts from a job's clean environment (util/job_env.h), never
 * the host's, confined like a job (util/job_sandbox.h) from its first
 * instruction: under its owner's account, reading the system, loom's files,
 * the plugin and read_dirs, writing only write_dir.
 */
#ifndef LOOM_PLUGIN_PLUGIN_PROC_H
#define LOOM_PLUGIN_PLUGIN_PROC_H

#include <stdint.h>

#include "plugin/plugin_wire.h"
#include "util/error.h"

#define PLUGIN_PROC_DEFAULT_DEADLINE_MS 5000u
#define PLUGIN_PROC_DEFAULT_MAX_FAILURES 3u
#define PLUGIN_PROC_MAX_READ 4

typedef struct plugin_proc_spec {
    const char *binary;      /* the loom binary, which has `plugin-host` */
    const char *plugin_path; /* the .so or .lua file */
    const char *name;        /* the registered name of the factory */
    const char *kind;        /* "logger", "framework" (launch plans) or "search" */
    const char *output;      /* the child's stdout and stderr (appended, bounded); NULL: the host's */
    /* The one tree the child may write (a logger: its exec's result
     * directory); NULL: none. After loading the plugin, the child can read
     * only the system's libraries and the plugin's own file. */
    const char *write_dir;
    /* Trees the child may also read (a Python optimizer's folder and
     * interpreter), up to PLUGIN_PROC_MAX_READ; NULL-terminated or NULL. */
    const char *const *read_dirs;
    /* The loom user the child runs for: when the host runs jobs under
     * accounts of their own, the child starts under that user's uid (the
     * one their jobs get), through `loom confine` like a job, which also
     * gives it write_dir. NULL: the plugin account, for administrator code
     * that serves no one user. */
    const char *owner;
    int64_t owner_id;        /* the owner's immutable id; 0: by name */
    unsigned deadline_ms;    /* per call, the kill comes a little later; 0 = default */
    uint64_t memory_bytes;   /* the child's address space; 0 = default (1 GiB) */
    unsigned cpu_seconds;    /* the child's CPU time; 0 = default (1 hour) */
    unsigned max_failures;   /* in a row before disabling; 0 = default */
} plugin_proc_spec;

typedef struct plugin_proc plugin_proc;

/* What a child prints (spec.output) is bounded like a job's logs: it goes
 * through a pipe and one log pump (util/log_pump.h) shared by every child,
 * which keeps each file under this many bytes, trimming it to its newest
 * half after a line that says how much was dropped. The host sets it to
 * its --log-max-bytes; until then PLUGIN_PROC_DEFAULT_OUTPUT_BYTES. */
#define PLUGIN_PROC_DEFAULT_OUTPUT_BYTES ((uint64_t)64 << 20)
void plugin_proc_set_output_limit(uint64_t max_bytes);

/* Copies the spec; starts nothing yet. NULL when out of memory. */
plugin_proc *plugin_proc_new(const plugin_proc_spec *spec);
/* Kills the child (if any) and frees. */
void plugin_proc_free(plugin_proc *p);

/* Sends a finished request frame and waits for the reply. NULL on
 * success; otherwise the plugin's own error or what happened to its
 * process, prefixed "KIND 'NAME' WHAT: ". With `keep` the request is kept
 * and replayed, in order, into every new child. */
loom_error *plugin_proc_call(plugin_proc *p, const char *what, const wire_buf *request, int keep);

/* What the last successful call's reply carried after its status: a
 * reader over it, valid until the next call (empty after a failure). */
wire_reader plugin_proc_reply(const plugin_proc *p);

/* Failures so far: in a row, in all, and the last message (or ""). */
unsigned plugin_proc_failures_in_row(const plugin_proc *p);
unsigned plugin_proc_failures_total(const plugin_proc *p);
const char *plugin_proc_last_error(const plugin_proc *p);
int plugin_proc_disabled(const plugin_proc *p);
unsigned plugin_proc_max_failures(const plugin_proc *p);

#endif

/*
 * util/log_pump.h - bounded log files for child processes. A child writes
 * its stdout or stderr into a pipe; one thread of the pump moves what comes
 * out of every pipe into its file, and when a file passes the limit it keeps
 * the newest half of the limit, after a line saying how many earlier bytes
 * were dropped and which option sets the limit. Nothing else writes these
 * files, so nothing is lost between a trim and the next write. A trim
 * rewrites the file in place through its descriptor: no second file, no
 * path, nothing a job could redirect with a link.
 *
 * Thread-safe. The pump owns the read ends handed to it and closes each at
 * the pipe's end of file (every writer gone).
 */
#ifndef LOOM_UTIL_LOG_PUMP_H
#define LOOM_UTIL_LOG_PUMP_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct log_pump log_pump;

/* The smallest limit accepted: room for the note and some tail. */
#define LOG_PUMP_MIN_BYTES 4096

/* Starts the pump's thread; `max_bytes` is each file's limit (at least
 * LOG_PUMP_MIN_BYTES). NULL when out of memory or threads. */
log_pump *log_pump_create(uint64_t max_bytes);
/* Changes the limit for what is written from now on. */
void log_pump_set_limit(log_pump *p, uint64_t max_bytes);
/* Appends what comes out of `read_fd` to the file `rel` beneath the folder
 * descriptor `root` (created 0644; opened through util/user_tree, so a link
 * there is refused), written through its descriptor alone from then on.
 * Takes read_fd, also on failure; root stays the caller's. */
loom_error *log_pump_add(log_pump *p, int read_fd, int root, const char *rel);
/* Streams still open. */
size_t log_pump_streams(log_pump *p);
/* Moves what the pipes still hold (waiting up to drain_ms for writers to
 * end), closes them and stops the thread. */
void log_pump_destroy(log_pump *p, int drain_ms);

#endif

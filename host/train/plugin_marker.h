/*
 * train/plugin_marker.h - which plugin a `loom worker` is running, kept in
 * a small file in its log folder ("plugin"). The worker writes it before
 * it calls into its loggers and clears it after; a write reaches the file
 * even when the process then dies by a signal, so the coordinator can name
 * the plugin a worker died in.
 */
#ifndef LOOM_TRAIN_PLUGIN_MARKER_H
#define LOOM_TRAIN_PLUGIN_MARKER_H

#include <stddef.h>

/* Creates (empties) the marker in log_dir; its fd, or -1. */
int plugin_marker_open(const char *log_dir);
/* Records that the process runs `what` now; NULL or "": no plugin. */
void plugin_marker_set(int fd, const char *what);
/* Removes the marker in log_dir: a new worker in the folder must not be
 * blamed on the plugin its predecessor died in. */
void plugin_marker_clear(const char *log_dir);
/* The marker in log_dir into out; "" when none or it cannot be read. */
void plugin_marker_read(const char *log_dir, char *out, size_t outlen);

#endif

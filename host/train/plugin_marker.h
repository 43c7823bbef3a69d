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
/* The coordinator's side, in the job's folder: through util/user_tree,
 * the log folder `log_rel` beneath the exec folder `result_dir`. */
/* Removes the marker: a new worker in the folder must not be blamed on the
 * plugin its predecessor died in. */
void plugin_marker_clear(const char *result_dir, const char *log_rel);
/* The marker into out; "" when none, a link, or it cannot be read. */
void plugin_marker_read(const char *result_dir, const char *log_rel, char *out, size_t outlen);

#endif

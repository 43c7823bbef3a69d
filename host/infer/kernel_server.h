/*
 * infer/kernel_server.h - the child's side of kernel_proc.h: `loom kernel
 * run` loads one kernel (a .so or .lua plugin, the ffi or the native
 * kernel), loads the model, creates one instance on its device, and serves
 * batches on its socket until the host closes it. Everything the kernel
 * does happens here, never in the host.
 */
#ifndef LOOM_INFER_KERNEL_SERVER_H
#define LOOM_INFER_KERNEL_SERVER_H

#include "infer/model_spec.h"

typedef struct kernel_server_spec {
    const char *model_dir;
    model_runtime runtime;
    const char *kernel_path;  /* .so or .lua (native: the native adapter's .so); NULL for ffi */
    const char *weight_path;  /* NULL when none */
    int device_kind, device_index;
} kernel_server_spec;

/* Serves on fd; returns the exit status (0 when the host closed the
 * socket, 1 on a load failure or an I/O error). */
int kernel_server_run(int fd, const kernel_server_spec *spec);

/* Loads the kernel, its model and one instance, calls nothing else, and
 * unloads: what `loom model check` does with a model directory. */
loom_error *kernel_server_check(const kernel_server_spec *spec);

#endif

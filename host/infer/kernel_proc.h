/*
 * infer/kernel_proc.h - one kernel instance in a `loom kernel run` child
 * (the host's side). The child loads the kernel and creates its instance,
 * then hands the host a shared-memory arena (a memfd, over the socket):
 * request bodies are written into its first half, the kernel reads them
 * there in place and its answers land in the second half, so a batch
 * crosses the process boundary as one small frame of offsets each way.
 * Every wait has a deadline; an overrun or a dead child kills the child
 * and fails the batch with an error saying what happened.
 */
#ifndef LOOM_INFER_KERNEL_PROC_H
#define LOOM_INFER_KERNEL_PROC_H

#include <stddef.h>
#include <stdint.h>

#include "infer/model_spec.h"
#include "util/error.h"

/* Each half of the arena: a batch's request bodies together, and its
 * answers together, fit in this. */
#define KERNEL_ARENA_HALF ((size_t)64 << 20)
#define KERNEL_CONTENT_TYPE_MAX 64

typedef struct kernel_proc_spec {
    const char *binary;     /* the loom binary */
    const char *model_dir;  /* the deployed model directory */
    const char *work_dir;   /* the only place the kernel writes */
    const char *user;       /* whose model: its sandbox account */
    const char *output;     /* the child's stdout and stderr (appended) */
    const model_spec *model;
    const model_env *env;   /* profile's kernel.envs */
    int nenv;
    int device_kind, device_index;
    unsigned start_timeout_ms;
} kernel_proc_spec;

typedef struct kernel_proc kernel_proc;

/* Starts the child and waits (start_timeout_ms) until its kernel is loaded
 * and its instance created; fails with the kernel's own error when it
 * could not load. */
loom_error *kernel_proc_start(const kernel_proc_spec *spec, kernel_proc **out);
/* Asks the child to finish (the kernel's instance and model are destroyed
 * there), then kills what remains. */
void kernel_proc_stop(kernel_proc *k);

/* One request of a batch and, after kernel_proc_execute, its answer. */
typedef struct kernel_task {
    const char *body;
    size_t len;
    int32_t status; /* 0, or the loom code the kernel failed it with */
    char content_type[KERNEL_CONTENT_TYPE_MAX];
    const char *answer; /* in the arena: valid until the next execute */
    size_t answer_len;
} kernel_task;

/* Runs one batch. NULL: every task has its answer (possibly an error of
 * its own). An error (deadline, the child died, a malformed reply) means
 * the child is gone: the batch failed as a whole and the caller starts a
 * new child. */
loom_error *kernel_proc_execute(kernel_proc *k, kernel_task *tasks, uint32_t n,
                                uint64_t deadline_ns);

/* How kernel_proc_execute awaits the answer: on (the default after
 * start), spinning briefly before it sleeps, which spares a quiet service
 * two wake-ups per batch; off, sleeping at once, which leaves the cores to
 * the HTTP threads and the kernel when requests are queued. */
void kernel_proc_spin(kernel_proc *k, int on);

/* The most request bytes one batch carries. */
size_t kernel_proc_batch_bytes(void);

#endif

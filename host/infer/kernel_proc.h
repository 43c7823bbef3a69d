/*
 * infer/kernel_proc.h - one kernel instance in a `loom kernel run` child
 * (the host's side). The child loads the kernel and creates its instance,
 * then hands the host a shared-memory arena (a memfd, over the socket):
 * request bodies (a v2 model's: the decoded tensors' pack, v2_codec.h)
 * are written into its first region, the kernel reads them
 * there in place and its answers land in one of two answer regions, so a
 * batch crosses the process boundary as one small frame of offsets each
 * way. The two answer regions let the host send the next batch before it
 * has handed out the answers of the last: the kernel works while the
 * host's threads reply.
 * Every wait has a deadline; an overrun or a dead child kills the child
 * and fails the batch with an error saying what happened.
 */
#ifndef LOOM_INFER_KERNEL_PROC_H
#define LOOM_INFER_KERNEL_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "infer/model_spec.h"
#include "util/error.h"

/* Each region of the arena: a batch's request bodies together, and its
 * answers together, fit in this. The arena is three regions (requests,
 * two for answers), reserved sparsely: only what batches touch is memory. */
#define KERNEL_ARENA_REGION ((size_t)64 << 20)
#define KERNEL_ARENA_SIZE (3 * KERNEL_ARENA_REGION)
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

/* A content type into its slot, cut to fit (a per-request step: no
 * printf). */
static inline void kernel_content_type_set(char dst[KERNEL_CONTENT_TYPE_MAX], const char *src)
{
    size_t n = src ? strnlen(src, KERNEL_CONTENT_TYPE_MAX - 1) : 0;
    memcpy(dst, src ? src : "", n);
    dst[n] = '\0';
}

/* One request of a batch and, after kernel_proc_execute, its answer. */
typedef struct kernel_task {
    const char *body;
    size_t len;
    int32_t status; /* 0, or the loom code the kernel failed it with */
    char content_type[KERNEL_CONTENT_TYPE_MAX];
    const char *answer; /* in the arena: see kernel_proc_collect */
    size_t answer_len;
} kernel_task;

/* Sends one batch and returns without waiting for it; at most one batch is
 * in flight (LOOM_E_CONFLICT otherwise). The bodies are copied into the
 * arena: the tasks' bodies may go once this returns. */
loom_error *kernel_proc_send(kernel_proc *k, const kernel_task *tasks, uint32_t n,
                             uint64_t deadline_ns);
/* Waits for the batch in flight: NULL when every task has its answer
 * (possibly an error of its own). The answers stay valid while the next
 * batch runs: until the send after that one. An error (deadline, the child
 * died, a malformed reply) means the child is gone: the batch failed as a
 * whole and the caller starts a new child. */
loom_error *kernel_proc_collect(kernel_proc *k, kernel_task *tasks, uint32_t n,
                                uint64_t deadline_ns);
/* Send and collect. */
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

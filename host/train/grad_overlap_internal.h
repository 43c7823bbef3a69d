/*
 * train/grad_overlap_internal.h - a worker's gradient all-reduce that starts
 * while backward still runs (EDT_OVERLAP_REDUCE). The adapter reports
 * finished parts of the gradient buffer through loom_trainer_config's
 * gradient_ready (ABI 1.2), last layers first; a thread of the worker
 * all-reduces fixed buckets from the end of the buffer as soon as each is
 * wholly final. Every member reduces the same buckets in the same order
 * (their bounds depend on the buffer's size alone), whatever its adapter
 * reported and even with no samples in the step, so the collectives match.
 *
 * One step: grad_overlap_arm() before the step's last forward_backward (the
 * only one whose gradients are final), grad_overlap_ready() from the
 * adapter, grad_overlap_finish() after it: the rest of the buffer becomes
 * ready, and it returns once every bucket is reduced. Between arm and
 * finish the comm handle belongs to the thread; the worker touches neither
 * it nor a reported part of the buffer.
 */
#ifndef LOOM_TRAIN_GRAD_OVERLAP_INTERNAL_H
#define LOOM_TRAIN_GRAD_OVERLAP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "util/error.h"

/* Floats per bucket: 256 KB, one staging half of the shm back end. */
#define GRAD_OVERLAP_BUCKET_FLOATS (64u << 10)

typedef struct grad_overlap grad_overlap;

/* A handle with no buffer yet (its address goes to the adapter's config
 * before the buffer exists). NULL when out of memory. */
grad_overlap *grad_overlap_new(void);
/* The buffer and the comm, known after the adapter's create(); starts the
 * thread. */
loom_error *grad_overlap_bind(grad_overlap *o, comm *c, float *grads, size_t count);
/* The next forward_backward is the step's last: nothing is final yet. */
void grad_overlap_arm(grad_overlap *o, uint64_t deadline_ns);
/* loom_trainer_config.gradient_ready: bytes [offset, offset + nbytes) are
 * final. Reports that do not extend the final part downward from the end
 * are ignored (finish covers them); so are reports while not armed. */
void grad_overlap_ready(void *o, uint64_t offset, uint64_t nbytes);
/* Everything is final: waits until every bucket is reduced. Returns the
 * first all-reduce error (the remaining buckets are then skipped). Arms
 * first when the step had no forward_backward. */
loom_error *grad_overlap_finish(grad_overlap *o, uint64_t deadline_ns);
/* The step failed before finish (its forward_backward did): no further
 * bucket starts, and this returns once the one under way (if any) ended,
 * so the comm handle is the worker's again. Peers then fail that step's
 * all-reduce by its deadline or the next generation, as without the
 * overlap. */
void grad_overlap_abandon(grad_overlap *o);
/* Buckets reduced before finish was called (while backward ran) and all
 * buckets, since the last call. */
void grad_overlap_counts(grad_overlap *o, uint64_t *early, uint64_t *total);
/* Stops the thread and frees the handle. NULL is fine. */
void grad_overlap_free(grad_overlap *o);

#endif

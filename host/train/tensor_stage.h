/*
 * train/tensor_stage.h - host-memory copies of a framework adapter's tensor
 * views. Checkpoints, the final model and the parameter server work on host
 * memory, while a GPU adapter's views are device memory; a stage holds one
 * host buffer per view and copies in either direction (memcpy for host
 * views, the CUDA runtime, loaded on first use, for device ones). Host
 * views are staged too, so the CPU path runs the same copies the GPU path
 * does.
 *
 * Contract with the adapter: when a framework call returns, its work on the
 * views is complete (the native adapter synchronises its stream).
 * Threading: one stage is used by one thread.
 */
#ifndef LOOM_TRAIN_TENSOR_STAGE_H
#define LOOM_TRAIN_TENSOR_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include <loom/abi.h>

#include "util/error.h"

/* Copies a view's bytes between host memory and the view's memory.
 * LOOM_E_UNSUPPORTED for a device view in a build without CUDA,
 * LOOM_E_UNAVAILABLE when the CUDA runtime cannot be loaded,
 * LOOM_E_INTERNAL for a CUDA error. */
loom_error *tensor_copy_to_host(void *dst, const loom_tensor_view *src);
loom_error *tensor_copy_from_host(const loom_tensor_view *dst, const void *src);

typedef struct tensor_stage {
    loom_tensor_view *host; /* views of the host copies: same names, shapes */
    uint32_t count;
} tensor_stage;

/* Allocates a host copy per view; LOOM_E_INTERNAL naming the tensor when
 * memory runs out. */
loom_error *tensor_stage_init(tensor_stage *st, const loom_tensor_view *views, uint32_t count);
/* views -> host copies; stops at the first error (tensor_copy_to_host). */
loom_error *tensor_stage_pull(tensor_stage *st, const loom_tensor_view *views);
/* host copies -> views; stops at the first error. */
loom_error *tensor_stage_push(const tensor_stage *st, const loom_tensor_view *views);
void tensor_stage_free(tensor_stage *st);

#endif

/*
 * optim.h - the optimizer state (SGD momentum buffer, Adam moments, the step
 * counter) and one update over the flat parameter buffer. The update rules
 * are PyTorch's (see nk_sgd and nk_adam in kernels.h), so a model trained
 * here and one trained there with the same settings follow the same path.
 */
#ifndef NATIVE_OPTIM_H
#define NATIVE_OPTIM_H

#include <stdint.h>

#include "backend.h"
#include "spec.h"

typedef struct native_optim {
    native_optimizer_spec spec;
    int64_t count;  /* floats in each slot, = the parameter count */
    float *slot[2]; /* backend memory: sgd {velocity, -}, adam {m, v} */
    int32_t slot_count;
    const char *slot_names[2]; /* PyTorch's state names */
    int64_t step;   /* updates taken; Adam's t is step + 1 */
} native_optim;

int native_optim_init(native_optim *o, const native_optimizer_spec *spec,
                      native_backend *be, int64_t count, char *err,
                      size_t errlen);
void native_optim_free(native_optim *o, native_backend *be);

/* One update of `params` from `grads` with learning rate `lr`. */
void native_optim_step(native_optim *o, native_backend *be, float *params,
                       const float *grads, float lr);

#endif

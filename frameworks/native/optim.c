/* optim.c - optimizer state and updates (see optim.h). */
#include "optim.h"

#include <loom/abi.h>
#include <math.h>
#include <string.h>

#include "errbuf.h"

int native_optim_init(native_optim *o, const native_optimizer_spec *spec,
                      native_backend *be, int64_t count, char *err,
                      size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->spec = *spec;
    o->count = count;
    if (spec->type == NATIVE_OPT_ADAM) {
        o->slot_count = 2;
        o->slot_names[0] = "exp_avg";
        o->slot_names[1] = "exp_avg_sq";
    } else if (spec->momentum != 0.0f) {
        o->slot_count = 1;
        o->slot_names[0] = "momentum_buffer";
    }
    for (int i = 0; i < o->slot_count; i++) {
        o->slot[i] = be->alloc(be, (size_t)count * sizeof(float));
        if (!o->slot[i]) {
            native_optim_free(o, be);
            return native_err(err, errlen, LOOM_ERR_RESOURCE_EXHAUSTED,
                              "cannot allocate optimizer state (%lld floats) on "
                              "the %s back end",
                              (long long)count, be->name);
        }
    }
    return 0;
}

void native_optim_free(native_optim *o, native_backend *be)
{
    for (int i = 0; i < 2; i++) {
        if (o->slot[i])
            be->release(be, o->slot[i]);
        o->slot[i] = NULL;
    }
}

void native_optim_step(native_optim *o, native_backend *be, float *params,
                       const float *grads, float lr)
{
    const native_optimizer_spec *s = &o->spec;
    if (s->type == NATIVE_OPT_ADAM) {
        double t = (double)(o->step + 1);
        float bc1 = (float)(1.0 - pow(s->beta1, t));
        float bc2 = (float)(1.0 - pow(s->beta2, t));
        be->adam(be, params, grads, o->slot[0], o->slot[1], o->count, lr,
                 s->beta1, s->beta2, s->eps, s->weight_decay, bc1, bc2);
    } else {
        be->sgd(be, params, grads, o->slot[0], o->count, lr, s->momentum,
                s->weight_decay, s->nesterov);
    }
    o->step++;
}

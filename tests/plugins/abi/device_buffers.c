/* tests/plugins/abi/device_buffers.c - a trainer-style framework adapter
 * that hands a CPU worker "device memory" (host memory flagged on_device):
 * the worker must refuse it by name instead of letting its collectives
 * read a pointer they cannot. Everything else is a valid, tiny adapter. */
#include <loom/loom.h>
#include <stdlib.h>
#include <string.h>

struct loom_framework_instance {
    float params[4], grads[4];
};

static loom_error *create(const loom_framework_factory *self, const loom_trainer_config *config,
                          loom_framework_instance **out)
{
    (void)self, (void)config;
    *out = calloc(1, sizeof **out);
    return NULL;
}

static void destroy(loom_framework_instance *inst) { free(inst); }

static loom_error *dataset_size(loom_framework_instance *inst, int32_t split, uint64_t *count)
{
    (void)inst, (void)split;
    *count = 8;
    return NULL;
}

static void device_view(loom_tensor_view *v, const char *name, float *data)
{
    v->dtype = LOOM_DTYPE_F32;
    v->ndim = 1;
    v->shape[0] = 4;
    v->on_device = 1; /* the defect */
    v->name = name;
    v->data = data;
    v->nbytes = sizeof(float) * 4;
}

static loom_error *buffers(loom_framework_instance *inst, loom_tensor_view *params,
                           loom_tensor_view *grads)
{
    device_view(params, "params", inst->params);
    device_view(grads, "grads", inst->grads);
    return NULL;
}

static loom_error *zero_grad(loom_framework_instance *inst)
{
    (void)inst;
    return NULL;
}

static loom_error *forward_backward(loom_framework_instance *inst, const uint64_t *indices,
                                    uint32_t count, float grad_scale, loom_metrics *out)
{
    (void)inst, (void)indices, (void)count, (void)grad_scale, (void)out;
    return NULL;
}

static loom_error *apply(loom_framework_instance *inst, const loom_step_info *step)
{
    (void)inst, (void)step;
    return NULL;
}

static loom_error *evaluate(loom_framework_instance *inst, int32_t split, const uint64_t *indices,
                            uint32_t count, loom_metrics *out)
{
    (void)inst, (void)split, (void)indices, (void)count, (void)out;
    return NULL;
}

static loom_error *state_tensors(loom_framework_instance *inst, loom_tensor_view *views,
                                 int32_t *roles, uint32_t capacity, uint32_t *count)
{
    *count = 1;
    if (capacity >= 1) {
        device_view(&views[0], "weight", inst->params);
        roles[0] = LOOM_TENSOR_PARAMETER;
    }
    return NULL;
}

static const loom_framework_factory factory = {
    .struct_size = sizeof factory,
    .style = LOOM_FRAMEWORK_TRAINER,
    .create = create,
    .destroy = destroy,
    .dataset_size = dataset_size,
    .buffers = buffers,
    .zero_grad = zero_grad,
    .forward_backward = forward_backward,
    .apply = apply,
    .evaluate = evaluate,
    .state_tensors = state_tensors,
};

static const void *get_factory(const char *id)
{
    return strcmp(id, LOOM_FRAMEWORK_FACTORY_ID) == 0 ? &factory : NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "device_buffers",
    .version = "0.1.0",
    .description = "Trainer adapter giving device memory to CPU workers",
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

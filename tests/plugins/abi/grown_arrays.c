/* tests/plugins/abi/grown_arrays.c - a trainer-style framework adapter that
 * uses ABI 1.5's growable arrays: more metrics than LOOM_MAX_METRICS
 * (through loom_metrics_add, into the room the host offers) and more state
 * tensors than the host's old fixed array held, one at a time through
 * state_tensor_count / state_tensor_get. It stands for an adapter built
 * with a later SDK whose view has one more field: state_tensor_get writes
 * that field only when the host's struct_size covers it.
 *
 * Math: four floats, loss = sum of squares. job_metrics records how many
 * metrics it received in grown_arrays_calls.txt in the model directory. */
#include <loom/loom.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROWN_METRICS 20       /* > LOOM_MAX_METRICS */
#define GROWN_TENSORS 300      /* > the 256 views the host once had room for */

/* The view as a later SDK might have it: one field appended. */
typedef struct later_tensor_view {
    loom_tensor_view v;
    uint64_t later_field;
} later_tensor_view;

static const loom_host *host;

static const char *const metric_names[GROWN_METRICS] = {
    "loss", "m1",  "m2",  "m3",  "m4",  "m5",  "m6",  "m7",  "m8",  "m9",
    "m10",  "m11", "m12", "m13", "m14", "m15", "m16", "m17", "m18", "m19"};

struct loom_framework_instance {
    float params[4], grads[4];
    float counters[GROWN_TENSORS - 1]; /* one scalar state tensor each */
    char names[GROWN_TENSORS - 1][16];
    char dir[512];
};

static loom_error *create(const loom_framework_factory *self, const loom_trainer_config *config,
                          loom_framework_instance **out)
{
    (void)self;
    loom_framework_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    for (int i = 0; i < 4; i++)
        inst->params[i] = 1.0f;
    for (int i = 0; i < GROWN_TENSORS - 1; i++)
        snprintf(inst->names[i], sizeof inst->names[i], "counter.%d", i);
    snprintf(inst->dir, sizeof inst->dir, "%s", config->code_dir ? config->code_dir : ".");
    *out = inst;
    return NULL;
}

static void destroy(loom_framework_instance *inst) { free(inst); }

static loom_error *dataset_size(loom_framework_instance *inst, int32_t split, uint64_t *count)
{
    (void)inst, (void)split;
    *count = 8;
    return NULL;
}

static void fill_view(loom_tensor_view *v, const char *name, float *data, int64_t n)
{
    v->dtype = LOOM_DTYPE_F32;
    v->ndim = 1;
    v->shape[0] = n;
    v->on_device = 0;
    v->name = name;
    v->data = data;
    v->nbytes = sizeof(float) * (uint64_t)n;
}

static loom_error *buffers(loom_framework_instance *inst, loom_tensor_view *params,
                           loom_tensor_view *grads)
{
    fill_view(params, "params", inst->params, 4);
    fill_view(grads, "grads", inst->grads, 4);
    return NULL;
}

static loom_error *zero_grad(loom_framework_instance *inst)
{
    memset(inst->grads, 0, sizeof inst->grads);
    return NULL;
}

/* Every metric through loom_metrics_add: the host's room decides how many
 * land; a full list is not an error for this adapter. */
static void put_metrics(const loom_framework_instance *inst, loom_metrics *out)
{
    double loss = 0;
    for (int i = 0; i < 4; i++)
        loss += (double)inst->params[i] * inst->params[i];
    for (int i = 0; i < GROWN_METRICS; i++)
        if (loom_metrics_add(out, metric_names[i], i ? (double)i : loss) != LOOM_OK)
            break;
}

static loom_error *forward_backward(loom_framework_instance *inst, const uint64_t *indices,
                                    uint32_t count, float grad_scale, loom_metrics *out)
{
    (void)indices, (void)count;
    for (int i = 0; i < 4; i++)
        inst->grads[i] += grad_scale * 2.0f * inst->params[i];
    put_metrics(inst, out);
    return NULL;
}

static loom_error *apply(loom_framework_instance *inst, const loom_step_info *step)
{
    (void)step;
    for (int i = 0; i < 4; i++)
        inst->params[i] -= 0.1f * inst->grads[i];
    return NULL;
}

static loom_error *evaluate(loom_framework_instance *inst, int32_t split, const uint64_t *indices,
                            uint32_t count, loom_metrics *out)
{
    (void)split, (void)indices, (void)count;
    put_metrics(inst, out);
    return NULL;
}

static loom_error *state_tensor_count(loom_framework_instance *inst, uint32_t *count)
{
    (void)inst;
    *count = GROWN_TENSORS;
    return NULL;
}

static loom_error *state_tensor_get(loom_framework_instance *inst, uint32_t index,
                                    loom_tensor_view *out, int32_t *role)
{
    if (index >= GROWN_TENSORS)
        return host->error_newf(LOOM_ERR_INVALID_ARGUMENT, "state tensor %u of %d", index,
                                GROWN_TENSORS);
    if (index == 0)
        fill_view(out, "weight", inst->params, 4);
    else
        fill_view(out, inst->names[index - 1], &inst->counters[index - 1], 1);
    *role = index == 0 ? LOOM_TENSOR_PARAMETER : LOOM_TENSOR_OPTIMIZER;
    /* The later field, only where the host's view has it. */
    if (out->struct_size >= offsetof(later_tensor_view, later_field) + sizeof(uint64_t))
        ((later_tensor_view *)out)->later_field = index;
    return NULL;
}

static loom_error *job_metrics(loom_framework_instance *inst, int32_t split,
                               const loom_metrics *metrics, const loom_step_info *step,
                               uint32_t workers)
{
    (void)split, (void)step, (void)workers;
    char path[600];
    snprintf(path, sizeof path, "%s/grown_arrays_calls.txt", inst->dir);
    FILE *f = fopen(path, "a");
    if (f) {
        uint32_t n = loom_metrics_total(metrics);
        fprintf(f, "job_metrics %u last %s\n", n, n ? loom_metrics_at(metrics, n - 1)->name : "-");
        fclose(f);
    }
    return NULL;
}

static const loom_framework_factory framework = {
    .struct_size = sizeof(loom_framework_factory),
    .style = LOOM_FRAMEWORK_TRAINER,
    .create = create,
    .destroy = destroy,
    .dataset_size = dataset_size,
    .buffers = buffers,
    .zero_grad = zero_grad,
    .forward_backward = forward_backward,
    .apply = apply,
    .evaluate = evaluate,
    .job_metrics = job_metrics,
    .state_tensor_count = state_tensor_count,
    .state_tensor_get = state_tensor_get,
};

static loom_error *init(const loom_host *h)
{
    host = h;
    return NULL;
}

static const void *get_factory(const char *id)
{
    return strcmp(id, LOOM_FRAMEWORK_FACTORY_ID) ? NULL : &framework;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "grown_arrays",
    .version = "1.0.0",
    .description = "Growable metrics and state tensors (ABI 1.5)",
    .init = init,
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

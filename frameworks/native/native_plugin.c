/*
 * native_plugin.c - the "native" framework adapter: loom's built-in trainer
 * math (model.c on backend_cpu.c or backend_cuda.cu) behind the SDK's
 * trainer-style loom_framework_factory. This file is the only one that sees
 * the loom_host table: it turns the internals' (code, message) failures into
 * host-owned loom_error objects.
 */
#include <loom/loom.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "dataset.h"
#include "errbuf.h"
#include "fpmode.h"
#include "model.h"
#include "native_kernel.h"
#include "optim.h"
#include "spec.h"

static const loom_host *g_host;

struct loom_framework_instance {
    native_spec spec;
    native_backend *be;
    native_dataset *train, *test;
    native_model *model;
    native_optim optim;
    uint64_t dropout_seed; /* the job's seed: the same on every worker */
    /* The epoch whose dropout masks the next forward passes draw: that of
     * the latest apply(), so every worker agrees without talking. */
    int64_t dropout_epoch;
    loom_tensor_view *views;
    int32_t *roles;
    uint32_t view_count;
    char (*view_names)[96];
    /* ABI 1.2: the host's gradient_ready (CPU only), or NULL. */
    void (*gradient_ready)(void *data, uint64_t offset, uint64_t nbytes);
    void *gradient_ready_data;
};

static loom_error *fail(int code, const char *what, const char *msg)
{
    return g_host->error_newf(code, "native: %s: %s", what, msg);
}

static void set_view(loom_tensor_view *v, const char *name, int32_t dtype,
                     const int32_t *shape, uint32_t ndim, void *data,
                     uint64_t nbytes, int on_device)
{
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->dtype = dtype;
    v->ndim = ndim;
    v->on_device = (uint32_t)on_device;
    for (uint32_t i = 0; i < ndim; i++)
        v->shape[i] = shape[i];
    v->name = name;
    v->data = data;
    v->nbytes = nbytes;
}

/* Parameters first (views into the flat buffer), then each optimizer slot
 * per parameter under PyTorch's state name, then the two step counters. */
static int build_state_views(loom_framework_instance *inst)
{
    native_model *m = inst->model;
    int32_t per_param = 1 + inst->optim.slot_count;
    uint32_t total = (uint32_t)(m->param_tensor_count * per_param + 2);
    inst->views = calloc(total, sizeof *inst->views);
    inst->roles = calloc(total, sizeof *inst->roles);
    inst->view_names = calloc(total, sizeof *inst->view_names);
    if (!inst->views || !inst->roles || !inst->view_names)
        return -1;
    int on_device = inst->be->on_device;
    uint32_t n = 0;
    for (int32_t s = -1; s < inst->optim.slot_count; s++) {
        for (int32_t i = 0; i < m->param_tensor_count; i++) {
            const native_param *p = &m->params[i];
            float *base = s < 0 ? m->weights : inst->optim.slot[s];
            if (s < 0)
                snprintf(inst->view_names[n], sizeof inst->view_names[n], "%s", p->name);
            else
                snprintf(inst->view_names[n], sizeof inst->view_names[n], "optim.%s.%s",
                         inst->optim.slot_names[s], p->name);
            set_view(&inst->views[n], inst->view_names[n], LOOM_DTYPE_F32, p->shape,
                     (uint32_t)p->ndim, base + p->offset,
                     (uint64_t)p->count * sizeof(float), on_device);
            inst->roles[n++] = s < 0 ? LOOM_TENSOR_PARAMETER : LOOM_TENSOR_OPTIMIZER;
        }
    }
    const int32_t one = 1;
    set_view(&inst->views[n], "optim.step", LOOM_DTYPE_I64, &one, 1,
             &inst->optim.step, sizeof(int64_t), 0);
    inst->roles[n++] = LOOM_TENSOR_OPTIMIZER;
    set_view(&inst->views[n], "train.dropout_epoch", LOOM_DTYPE_I64, &one, 1,
             &inst->dropout_epoch, sizeof(int64_t), 0);
    inst->roles[n++] = LOOM_TENSOR_OPTIMIZER;
    inst->view_count = n;
    return 0;
}

static void native_destroy(loom_framework_instance *inst)
{
    if (!inst)
        return;
    if (inst->be) {
        native_model_destroy(inst->model);
        native_optim_free(&inst->optim, inst->be);
        inst->be->destroy(inst->be);
    }
    if (inst->train)
        inst->train->close(inst->train);
    if (inst->test)
        inst->test->close(inst->test);
    native_spec_free(&inst->spec);
    free(inst->views);
    free(inst->roles);
    free(inst->view_names);
    free(inst);
}

/* Picks the model's input shape: the JSON's "input" when given (it may view
 * a flat CSV row as an image), else the dataset's own sample shape. */
static int input_shape(const native_spec *spec, const native_dataset *train,
                       int32_t *shape, int32_t *ndim, char *err, size_t errlen)
{
    if (!spec->input_ndim) {
        memcpy(shape, train->shape, sizeof train->shape);
        *ndim = train->ndim;
        return 0;
    }
    int64_t size = 1;
    for (int i = 0; i < spec->input_ndim; i++)
        size *= spec->input[i];
    if (size != train->sample_size)
        return native_err(err, errlen, LOOM_ERR_INVALID_ARGUMENT,
                          "model.input: %lld values per sample, but the training "
                          "set's samples have %lld",
                          (long long)size, (long long)train->sample_size);
    memcpy(shape, spec->input, sizeof spec->input);
    *ndim = spec->input_ndim;
    return 0;
}

static int open_data(loom_framework_instance *inst, const loom_trainer_config *cfg,
                     int32_t *classes, char *err, size_t errlen)
{
    int rc = native_dataset_open(inst->spec.dataset, NATIVE_DATASET_TRAIN,
                                 cfg->data_dir, cfg->code_dir, &inst->train, err,
                                 errlen);
    if (rc)
        return rc;
    if ((rc = native_dataset_open(inst->spec.dataset, NATIVE_DATASET_TEST,
                                  cfg->data_dir, cfg->code_dir, &inst->test, err,
                                  errlen)))
        return rc;
    *classes = inst->train->classes;
    if (inst->test) {
        if (inst->test->sample_size != inst->train->sample_size)
            return native_err(err, errlen, LOOM_ERR_INVALID_ARGUMENT,
                              "dataset: test samples have %lld values but training "
                              "samples have %lld",
                              (long long)inst->test->sample_size,
                              (long long)inst->train->sample_size);
        if (inst->test->classes > *classes)
            *classes = inst->test->classes;
    }
    return 0;
}

static loom_error *native_create(const loom_framework_factory *self,
                                 const loom_trainer_config *cfg,
                                 loom_framework_instance **out)
{
    (void)self;
    *out = NULL;
    if (!cfg || cfg->struct_size < offsetof(loom_trainer_config, data_dir) +
                                       sizeof(cfg->data_dir))
        return g_host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                                 "native: create: loom_trainer_config is too small");
    loom_framework_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return g_host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "native: out of memory");
    char err[NATIVE_ERR_LEN];
    int rc = native_spec_parse(cfg->spec_json, &inst->spec, err, sizeof err);
    if (rc)
        goto fail;
    uint64_t init_seed = inst->spec.has_init_seed ? inst->spec.init_seed : cfg->seed;
    inst->dropout_seed = cfg->seed;
    /* Device kernels finish later than their calls return: only the CPU
     * back end knows a gradient is final when backward moves on. */
    if (LOOM_STRUCT_HAS(cfg, loom_trainer_config, gradient_ready_data) &&
        cfg->device.kind != LOOM_DEVICE_CUDA) {
        inst->gradient_ready = cfg->gradient_ready;
        inst->gradient_ready_data = cfg->gradient_ready_data;
    }

    if (cfg->device.kind == LOOM_DEVICE_CUDA) {
        inst->be = native_backend_cuda_create(cfg->device.index, err, sizeof err);
        if (!inst->be) {
            rc = LOOM_ERR_UNAVAILABLE;
            goto fail;
        }
    } else {
        inst->be = native_backend_cpu_create();
        if (!inst->be) {
            rc = native_err(err, sizeof err, LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
            goto fail;
        }
    }
    int32_t classes = 0, shape[3] = {0}, ndim = 0;
    if ((rc = open_data(inst, cfg, &classes, err, sizeof err)) ||
        (rc = input_shape(&inst->spec, inst->train, shape, &ndim, err, sizeof err)) ||
        (rc = native_model_create(&inst->spec, shape, ndim, classes, inst->be,
                                  init_seed, &inst->model, err, sizeof err)) ||
        (rc = native_optim_init(&inst->optim, &inst->spec.optimizer, inst->be,
                                inst->model->param_count, err, sizeof err)))
        goto fail;
    /* ABI 1.3: the gradient buffer where the host offers it (it reduces
     * there in place); host memory, so the CPU back end only. */
    if (LOOM_STRUCT_HAS(cfg, loom_trainer_config, gradient_memory_data) &&
        cfg->gradient_memory && !inst->be->on_device) {
        float *offered = cfg->gradient_memory(
            cfg->gradient_memory_data, (uint64_t)inst->model->param_count * sizeof(float));
        if (offered)
            native_model_borrow_grads(inst->model, offered);
    }
    if (build_state_views(inst) != 0) {
        rc = native_err(err, sizeof err, LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
        goto fail;
    }
    if (inst->be->check(inst->be, err, sizeof err) != 0) {
        rc = LOOM_ERR_INTERNAL;
        goto fail;
    }
    g_host->log(g_host, LOOM_LOG_INFO,
                "native: rank %u: %d layers, %lld parameters, %llu training "
                "samples, %d classes, %s back end",
                (unsigned)cfg->rank, (int)inst->model->layer_count,
                (long long)inst->model->param_count,
                (unsigned long long)inst->train->count, (int)classes,
                inst->be->name);
    *out = inst;
    return NULL;
fail:
    native_destroy(inst);
    return fail(rc, "create", err);
}

static loom_error *native_dataset_size(loom_framework_instance *inst, int32_t split,
                                       uint64_t *count)
{
    if (split == LOOM_SPLIT_TRAIN) {
        *count = inst->train->count;
    } else if (split == LOOM_SPLIT_TEST) {
        *count = inst->test ? inst->test->count : 0;
    } else {
        return g_host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                  "native: dataset_size: unknown split %d", (int)split);
    }
    return NULL;
}

static loom_error *native_buffers(loom_framework_instance *inst,
                                  loom_tensor_view *params, loom_tensor_view *grads)
{
    native_model *m = inst->model;
    int32_t len = (int32_t)m->param_count;
    uint64_t bytes = (uint64_t)m->param_count * sizeof(float);
    set_view(params, "params", LOOM_DTYPE_F32, &len, 1, m->weights, bytes,
             inst->be->on_device);
    params->shape[0] = m->param_count;
    set_view(grads, "grads", LOOM_DTYPE_F32, &len, 1, m->grads, bytes,
             inst->be->on_device);
    grads->shape[0] = m->param_count;
    return NULL;
}

/* The first failure a backend recorded during the call, if any. */
static loom_error *backend_status(loom_framework_instance *inst, const char *what)
{
    char err[NATIVE_ERR_LEN];
    if (inst->be->check(inst->be, err, sizeof err) == 0)
        return NULL;
    return fail(LOOM_ERR_INTERNAL, what, err);
}

/* The CPU back end's calls run with denormals flushed unless the spec says
 * otherwise; a GPU's math does not depend on the host thread's mode. */
static native_fpmode cpu_fpmode_enter(const loom_framework_instance *inst)
{
    return native_fpmode_enter(!inst->be->on_device && inst->spec.flush_denormals);
}

static loom_error *native_zero_grad(loom_framework_instance *inst)
{
    inst->be->zero(inst->be, inst->model->grads,
                   (size_t)inst->model->param_count * sizeof(float));
    return backend_status(inst, "zero_grad");
}

static void put_metrics(loom_metrics *out, double loss, double accuracy)
{
    if (!out)
        return;
    out->struct_size = sizeof *out;
    out->count = 2;
    out->items[0] = (loom_metric){"loss", loss};
    out->items[1] = (loom_metric){"accuracy", accuracy};
}

static loom_error *native_forward_backward(loom_framework_instance *inst,
                                           const uint64_t *indices, uint32_t count,
                                           float grad_scale, loom_metrics *out)
{
    char err[NATIVE_ERR_LEN];
    double loss, accuracy;
    native_fpmode fp = cpu_fpmode_enter(inst);
    native_pass hooks = {.dropout_seed = inst->dropout_seed,
                         .dropout_epoch = (uint64_t)inst->dropout_epoch,
                         .grad_ready = inst->gradient_ready,
                         .grad_ready_data = inst->gradient_ready_data};
    int rc = native_model_train_dataset(inst->model, inst->train, indices, count, grad_scale,
                                        &hooks, &loss, &accuracy, err, sizeof err);
    native_fpmode_leave(fp);
    if (rc)
        return fail(rc, "forward_backward", err);
    loom_error *e = backend_status(inst, "forward_backward");
    if (!e)
        put_metrics(out, loss, accuracy);
    return e;
}

static loom_error *native_apply(loom_framework_instance *inst,
                                const loom_step_info *step)
{
    if (!step)
        return g_host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                                 "native: apply: step info is NULL");
    float lr = native_schedule_lr(&inst->spec, step->epoch, step->epochs,
                                  step->iteration, step->steps_per_epoch);
    native_fpmode fp = cpu_fpmode_enter(inst);
    native_optim_step(&inst->optim, inst->be, inst->model->weights,
                      inst->model->grads, lr);
    native_fpmode_leave(fp);
    inst->dropout_epoch = step->epoch;
    return backend_status(inst, "apply");
}

static loom_error *native_evaluate(loom_framework_instance *inst, int32_t split,
                                   const uint64_t *indices, uint32_t count,
                                   loom_metrics *out)
{
    const native_dataset *ds = split == LOOM_SPLIT_TRAIN  ? inst->train
                               : split == LOOM_SPLIT_TEST ? inst->test
                                                          : NULL;
    if (!ds)
        return g_host->error_newf(
            split == LOOM_SPLIT_TEST ? LOOM_ERR_NOT_FOUND : LOOM_ERR_INVALID_ARGUMENT,
            "native: evaluate: %s",
            split == LOOM_SPLIT_TEST
                ? "the dataset names no test files (dataset.test_images/test_labels "
                  "or dataset.test)"
                : "unknown split");
    char err[NATIVE_ERR_LEN];
    double loss, accuracy;
    native_fpmode fp = cpu_fpmode_enter(inst);
    int rc = native_model_run_dataset(inst->model, ds,
                                      split == LOOM_SPLIT_TRAIN ? "training" : "test",
                                      indices, count, 0, 0.0f, inst->dropout_seed, 0, &loss,
                                      &accuracy, err, sizeof err);
    native_fpmode_leave(fp);
    if (rc)
        return fail(rc, "evaluate", err);
    loom_error *e = backend_status(inst, "evaluate");
    if (!e)
        put_metrics(out, loss, accuracy);
    return e;
}

static loom_error *native_state_tensors(loom_framework_instance *inst,
                                        loom_tensor_view *views, int32_t *roles,
                                        uint32_t capacity, uint32_t *count)
{
    *count = inst->view_count;
    for (uint32_t i = 0; i < inst->view_count && i < capacity; i++) {
        if (views)
            views[i] = inst->views[i];
        if (roles)
            roles[i] = inst->roles[i];
    }
    return NULL;
}

/* Nothing is derived from the state tensors; only check the counters the
 * host wrote are sane. */
static loom_error *native_state_loaded(loom_framework_instance *inst)
{
    if (inst->optim.step < 0 || inst->dropout_epoch < 0)
        return g_host->error_newf(LOOM_ERR_INVALID_ARGUMENT,
                                  "native: state_loaded: optim.step (%lld) and "
                                  "train.dropout_epoch (%lld) must be >= 0",
                                  (long long)inst->optim.step,
                                  (long long)inst->dropout_epoch);
    return NULL;
}

static const loom_framework_factory native_factory = {
    .struct_size = sizeof(loom_framework_factory),
    .style = LOOM_FRAMEWORK_TRAINER,
    .create = native_create,
    .destroy = native_destroy,
    .dataset_size = native_dataset_size,
    .buffers = native_buffers,
    .zero_grad = native_zero_grad,
    .forward_backward = native_forward_backward,
    .apply = native_apply,
    .evaluate = native_evaluate,
    .state_tensors = native_state_tensors,
    .state_loaded = native_state_loaded,
};

static loom_error *native_init(const loom_host *host)
{
    g_host = host;
    native_kernel_set_host(host);
    return NULL;
}

static void native_deinit(void) { g_host = NULL; }

static const void *native_get_factory(const char *id)
{
    if (strcmp(id, LOOM_KERNEL_FACTORY_ID) == 0)
        return native_kernel_factory();
    return strcmp(id, LOOM_FRAMEWORK_FACTORY_ID) == 0 ? &native_factory : NULL;
}

static const loom_module native_module = {
    LOOM_MODULE_HEADER,
    .id = "native",
    .version = "0.1.0",
    .description = "built-in trainer: dense/conv nets on OpenBLAS (CUDA twin), "
                   "IDX and CSV datasets",
    .init = native_init,
    .deinit = native_deinit,
    .get_factory = native_get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void) { return &native_module; }

/*
 * tests/plugins/old_abi/old_abi_plugin.c - a plugin of every kind but launch
 * (trainer framework, search, kernel, logger), compiled against the frozen
 * ABI 1.0 headers. With OLD_ABI_MINIMAL each factory declares only its
 * required entries: struct_size ends before the optional ones, and those
 * slots hold poison. Either way the slots after the struct hold poison.
 *
 * The entries that do run leave a trace the tests read: the logger and the
 * trainer append the call's name to old_abi_calls.txt in their log folder or
 * model directory; the search's saved state counts what it observed; the
 * kernel answers "old".
 */
#include <loom/loom.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "poison.h"

static const loom_host *host;

static void record(const char *dir, const char *what)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/old_abi_calls.txt", dir);
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "%s\n", what);
        fclose(f);
    }
}

/* ---- trainer framework: four floats, loss = sum of squares ------------- */

struct loom_framework_instance {
    float params[4], grads[4];
    char dir[512];
};

static loom_error *fw_create(const loom_framework_factory *self, const loom_trainer_config *config,
                             loom_framework_instance **out)
{
    (void)self;
    loom_framework_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    for (int i = 0; i < 4; i++)
        inst->params[i] = 1.0f;
    snprintf(inst->dir, sizeof inst->dir, "%s", config->code_dir ? config->code_dir : ".");
    *out = inst;
    return NULL;
}

static void fw_destroy(loom_framework_instance *inst) { free(inst); }

static loom_error *fw_dataset_size(loom_framework_instance *inst, int32_t split, uint64_t *count)
{
    (void)inst, (void)split;
    *count = 8;
    return NULL;
}

static void host_view(loom_tensor_view *v, const char *name, float *data)
{
    v->dtype = LOOM_DTYPE_F32;
    v->ndim = 1;
    v->shape[0] = 4;
    v->on_device = 0;
    v->name = name;
    v->data = data;
    v->nbytes = sizeof(float) * 4;
}

static loom_error *fw_buffers(loom_framework_instance *inst, loom_tensor_view *params,
                              loom_tensor_view *grads)
{
    host_view(params, "params", inst->params);
    host_view(grads, "grads", inst->grads);
    return NULL;
}

static loom_error *fw_zero_grad(loom_framework_instance *inst)
{
    memset(inst->grads, 0, sizeof inst->grads);
    return NULL;
}

static void loss_metric(const loom_framework_instance *inst, loom_metrics *out)
{
    double loss = 0;
    for (int i = 0; i < 4; i++)
        loss += (double)inst->params[i] * inst->params[i];
    if (out) {
        out->count = 1;
        out->items[0] = (loom_metric){.name = "loss", .value = loss};
    }
}

static loom_error *fw_forward_backward(loom_framework_instance *inst, const uint64_t *indices,
                                       uint32_t count, float grad_scale, loom_metrics *out)
{
    (void)indices, (void)count;
    for (int i = 0; i < 4; i++)
        inst->grads[i] += grad_scale * 2.0f * inst->params[i];
    loss_metric(inst, out);
    return NULL;
}

static loom_error *fw_apply(loom_framework_instance *inst, const loom_step_info *step)
{
    (void)step;
    for (int i = 0; i < 4; i++)
        inst->params[i] -= 0.1f * inst->grads[i];
    return NULL;
}

static loom_error *fw_evaluate(loom_framework_instance *inst, int32_t split, const uint64_t *indices,
                               uint32_t count, loom_metrics *out)
{
    (void)split, (void)indices, (void)count;
    loss_metric(inst, out);
    return NULL;
}

static loom_error *fw_state_tensors(loom_framework_instance *inst, loom_tensor_view *views,
                                    int32_t *roles, uint32_t capacity, uint32_t *count)
{
    *count = 1;
    if (capacity >= 1) {
        host_view(&views[0], "weight", inst->params);
        roles[0] = LOOM_TENSOR_PARAMETER;
    }
    return NULL;
}

#ifndef OLD_ABI_MINIMAL
static loom_error *fw_state_loaded(loom_framework_instance *inst)
{
    record(inst->dir, "state_loaded");
    return NULL;
}
#endif

static const struct {
    loom_framework_factory f;
    poison_fn after[POISON_SLOTS];
} framework = {
    .f = {
#ifdef OLD_ABI_MINIMAL
        .struct_size = offsetof(loom_framework_factory, state_loaded),
        .state_loaded = POISON(loom_error * (*)(loom_framework_instance *)),
#else
        .struct_size = sizeof(loom_framework_factory),
        .state_loaded = fw_state_loaded,
#endif
        .style = LOOM_FRAMEWORK_TRAINER,
        .create = fw_create,
        .destroy = fw_destroy,
        .dataset_size = fw_dataset_size,
        .buffers = fw_buffers,
        .zero_grad = fw_zero_grad,
        .forward_backward = fw_forward_backward,
        .apply = fw_apply,
        .evaluate = fw_evaluate,
        .state_tensors = fw_state_tensors,
    },
    .after = POISON_TAIL,
};

/* ---- search: proposes {"x": n} until told to stop ----------------------- */

struct loom_search_instance {
    uint32_t proposed, observed;
};

static loom_error *se_create(const loom_search_factory *self, const loom_search_config *config,
                             loom_search_instance **out)
{
    (void)self, (void)config;
    *out = calloc(1, sizeof **out);
    return *out ? NULL : host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
}

static void se_destroy(loom_search_instance *inst) { free(inst); }

static loom_error *se_suggest(loom_search_instance *inst, uint32_t max, const loom_proposal_sink *sink)
{
    for (uint32_t i = 0; i < max; i++) {
        char config[32];
        snprintf(config, sizeof config, "{\"x\": %u}", inst->proposed);
        if (sink->propose(sink, config) > 0)
            inst->proposed++;
    }
    return NULL;
}

static loom_error *se_observe(loom_search_instance *inst, uint64_t id, int32_t status,
                              const loom_metric *metrics, uint32_t count)
{
    (void)id, (void)status, (void)metrics, (void)count;
    inst->observed++;
    return NULL;
}

#ifndef OLD_ABI_MINIMAL
static loom_error *se_save(loom_search_instance *inst, char **state_out)
{
    char *s = host->alloc(48);
    if (!s)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    snprintf(s, 48, "{\"observed\": %u}", inst->observed);
    *state_out = s;
    return NULL;
}

static loom_error *se_load(loom_search_instance *inst, const char *state)
{
    unsigned n;
    if (sscanf(state, "{\"observed\": %u}", &n) != 1)
        return host->error_new(LOOM_ERR_INVALID_ARGUMENT, "not a saved state");
    inst->observed = n;
    return NULL;
}
#endif

static const struct {
    loom_search_factory f;
    poison_fn after[POISON_SLOTS];
} search = {
    .f = {
#ifdef OLD_ABI_MINIMAL
        .struct_size = offsetof(loom_search_factory, save_state),
        .save_state = POISON(loom_error * (*)(loom_search_instance *, char **)),
        .load_state = POISON(loom_error * (*)(loom_search_instance *, const char *)),
#else
        .struct_size = sizeof(loom_search_factory),
        .save_state = se_save,
        .load_state = se_load,
#endif
        .create = se_create,
        .destroy = se_destroy,
        .suggest = se_suggest,
        .observe = se_observe,
    },
    .after = POISON_TAIL,
};

/* ---- kernel: answers every request "old" -------------------------------- */

struct loom_kernel_model {
    int unused;
};
struct loom_kernel_instance {
    int unused;
};

static loom_error *ke_load(const loom_kernel_factory *self, const loom_kernel_model_config *config,
                           loom_kernel_model **out)
{
    (void)self, (void)config;
    *out = calloc(1, sizeof **out);
    return *out ? NULL : host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
}

static void ke_unload(loom_kernel_model *model) { free(model); }

static loom_error *ke_create(loom_kernel_model *model, const loom_device *device,
                             loom_kernel_instance **out)
{
    (void)model, (void)device;
    *out = calloc(1, sizeof **out);
    return *out ? NULL : host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
}

static void ke_destroy(loom_kernel_instance *inst) { free(inst); }

static loom_error *ke_execute(loom_kernel_instance *inst, loom_infer_request *const *requests,
                              uint32_t count)
{
    (void)inst;
    for (uint32_t i = 0; i < count; i++) {
        loom_error *e = requests[i]->respond(requests[i], 0, "text/plain",
                                             (const uint8_t *)"old", 3);
        if (e)
            return e;
    }
    return NULL;
}

static const struct {
    loom_kernel_factory f;
    poison_fn after[POISON_SLOTS];
} kernel = {
    .f = {
        .struct_size = sizeof(loom_kernel_factory),
        .load_model = ke_load,
        .unload_model = ke_unload,
        .create_instance = ke_create,
        .destroy_instance = ke_destroy,
        .execute = ke_execute,
    },
    .after = POISON_TAIL,
};

/* ---- logger: records each callback in its log folder -------------------- */

struct loom_logger_instance {
    char dir[512];
};

static loom_error *lo_create(const loom_logger_factory *self, const loom_logger_config *config,
                             loom_logger_instance **out)
{
    (void)self;
    loom_logger_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    snprintf(inst->dir, sizeof inst->dir, "%s", config->log_dir);
    record(inst->dir, "create");
    *out = inst;
    return NULL;
}

static void lo_destroy(loom_logger_instance *inst)
{
    record(inst->dir, "destroy");
    free(inst);
}

#ifndef OLD_ABI_MINIMAL
static loom_error *lo_begin(loom_logger_instance *inst, const loom_train_info *info)
{
    (void)info;
    record(inst->dir, "on_train_begin");
    return NULL;
}

static loom_error *lo_train(loom_logger_instance *inst, const loom_metric *metrics, uint32_t count,
                            uint64_t iteration, uint32_t epoch, uint32_t workers)
{
    (void)metrics, (void)count, (void)iteration, (void)epoch, (void)workers;
    record(inst->dir, "log_train_metrics");
    return NULL;
}

static loom_error *lo_test(loom_logger_instance *inst, const loom_metric *metrics, uint32_t count,
                           uint64_t iteration, uint32_t epoch)
{
    (void)metrics, (void)count, (void)iteration, (void)epoch;
    record(inst->dir, "log_test_metrics");
    return NULL;
}

static loom_error *lo_end(loom_logger_instance *inst, int32_t status, const char *message)
{
    (void)status, (void)message;
    record(inst->dir, "on_train_end");
    return NULL;
}
#endif

static const struct {
    loom_logger_factory f;
    poison_fn after[POISON_SLOTS];
} logger = {
    .f = {
#ifdef OLD_ABI_MINIMAL
        .struct_size = offsetof(loom_logger_factory, on_train_begin),
        .on_train_begin = POISON(loom_error * (*)(loom_logger_instance *, const loom_train_info *)),
        .log_train_metrics = POISON(loom_error * (*)(loom_logger_instance *, const loom_metric *,
                                                     uint32_t, uint64_t, uint32_t, uint32_t)),
        .log_test_metrics = POISON(loom_error * (*)(loom_logger_instance *, const loom_metric *,
                                                    uint32_t, uint64_t, uint32_t)),
        .on_train_end = POISON(loom_error * (*)(loom_logger_instance *, int32_t, const char *)),
#else
        .struct_size = sizeof(loom_logger_factory),
        .on_train_begin = lo_begin,
        .log_train_metrics = lo_train,
        .log_test_metrics = lo_test,
        .on_train_end = lo_end,
#endif
        .create = lo_create,
        .destroy = lo_destroy,
    },
    .after = POISON_TAIL,
};

/* ---- the module --------------------------------------------------------- */

static loom_error *init(const loom_host *h)
{
    host = h;
    return NULL;
}

static const void *get_factory(const char *id)
{
    if (!strcmp(id, LOOM_FRAMEWORK_FACTORY_ID))
        return &framework.f;
    if (!strcmp(id, LOOM_SEARCH_FACTORY_ID))
        return &search.f;
    if (!strcmp(id, LOOM_KERNEL_FACTORY_ID))
        return &kernel.f;
    if (!strcmp(id, LOOM_LOGGER_FACTORY_ID))
        return &logger.f;
    return NULL;
}

static const struct {
    loom_module m;
    poison_fn after[POISON_SLOTS];
} module = {
    .m = {
        LOOM_MODULE_HEADER,
        .id = OLD_ABI_NAME,
        .version = "1.0.0",
        .description = "Built against the ABI 1.0 headers, poison past each struct",
        .init = init,
        .get_factory = get_factory,
    },
    .after = POISON_TAIL,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module.m;
}

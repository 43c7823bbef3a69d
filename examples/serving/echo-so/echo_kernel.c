/*
 * echo_kernel.c - the serving example through the SDK: it answers every
 * request with itself (an echo). A v2 model (echo-so-v2: model.json
 * declares its inputs) gets the request's tensors, decoded by the host, and
 * answers them as its outputs; a raw model (echo-so) gets the body as the
 * client sent it and answers that.
 *
 * The host loads a model once (load_model), creates one instance per device
 * (create_instance) and hands each instance batches (execute). Every request
 * of a batch must be answered exactly once with request->respond before
 * execute returns. Replace the echo with your model.
 */
#include <loom/loom.h>

#include <stdlib.h>
#include <string.h>

static const loom_host *host;

struct loom_kernel_model {
    char *model_dir; /* what a real kernel would read its weights from */
};

struct loom_kernel_instance {
    loom_kernel_model *model;
    loom_device device;
};

static loom_error *load_model(const loom_kernel_factory *self,
                              const loom_kernel_model_config *config,
                              loom_kernel_model **out)
{
    (void)self;
    loom_kernel_model *model = calloc(1, sizeof *model);
    if (!model || !(model->model_dir = strdup(config->model_dir ? config->model_dir : ""))) {
        free(model);
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED,
                               "echo_kernel: out of memory");
    }
    host->log(host, LOOM_LOG_INFO, "model loaded from %s",
              model->model_dir);
    *out = model;
    return NULL;
}

static void unload_model(loom_kernel_model *model)
{
    free(model->model_dir);
    free(model);
}

static loom_error *create_instance(loom_kernel_model *model,
                                   const loom_device *device,
                                   loom_kernel_instance **out)
{
    loom_kernel_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED,
                               "echo_kernel: out of memory");
    inst->model = model;
    inst->device = *device;
    *out = inst;
    return NULL;
}

static void destroy_instance(loom_kernel_instance *inst)
{
    free(inst);
}

static loom_error *execute(loom_kernel_instance *inst,
                           loom_infer_request *const *requests, uint32_t count)
{
    (void)inst;
    for (uint32_t i = 0; i < count; i++) {
        loom_infer_request *r = requests[i];
        /* The host copies what is answered, so answering from the request's
         * own (borrowed) buffers is fine. */
        loom_error *err;
        if (LOOM_STRUCT_HAS(r, loom_infer_request, respond_tensors) && r->input_count) {
            /* Unnamed outputs take the names model.json declares. */
            loom_tensor_view out[16];
            uint32_t n = r->input_count < 16 ? r->input_count : 16;
            for (uint32_t k = 0; k < n; k++) {
                out[k] = r->inputs[k];
                out[k].name = NULL;
            }
            err = r->respond_tensors(r, out, n);
        } else {
            err = r->respond(r, LOOM_OK, r->content_type, r->body, r->body_len);
        }
        if (err)
            return err;
    }
    return NULL;
}

static const loom_kernel_factory factory = {
    .struct_size = sizeof(loom_kernel_factory),
    .load_model = load_model,
    .unload_model = unload_model,
    .create_instance = create_instance,
    .destroy_instance = destroy_instance,
    .execute = execute,
};

static loom_error *init(const loom_host *h)
{
    host = h;
    return NULL;
}

static const void *get_factory(const char *factory_id)
{
    if (strcmp(factory_id, LOOM_KERNEL_FACTORY_ID) == 0)
        return &factory;
    return NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "echo_kernel",
    .version = "0.1.0",
    .description = "Echoes each request's body",
    .init = init,
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

/*
 * kernel.c - the kernel of the template-so model directory: it reads its
 * weights (weight_path: one line of text, the greeting) when the model
 * loads, and answers each request with
 *     {"greeting": "<the weights' line><$GREETING_SUFFIX>", "bytes": <body length>}
 * GREETING_SUFFIX comes from model.json's mk_environments, set in the
 * kernel's environment. Replace the greeting with your model's weights and
 * the answer with its forward pass.
 */
#include <loom/loom.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GREETING_MAX 256

static const loom_host *host;

struct loom_kernel_model {
    char greeting[GREETING_MAX];
};

struct loom_kernel_instance {
    const loom_kernel_model *model;
    char answer[GREETING_MAX + 64]; /* reused request after request */
};

/* The greeting: the first line of weight_path, and the suffix. */
static loom_error *read_weights(const char *path, char *out, size_t len)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return host->error_newf(LOOM_ERR_INVALID_ARGUMENT, "template-so: weight_path: cannot open %s",
                                path ? path : "(none)");
    if (!fgets(out, (int)len, f))
        out[0] = 0;
    fclose(f);
    out[strcspn(out, "\r\n\"\\")] = 0; /* one line, nothing JSON would escape */
    const char *suffix = getenv("GREETING_SUFFIX");
    size_t used = strlen(out);
    snprintf(out + used, len - used, "%s", suffix && !strpbrk(suffix, "\"\\") ? suffix : "");
    return NULL;
}

static loom_error *load_model(const loom_kernel_factory *self,
                              const loom_kernel_model_config *config, loom_kernel_model **out)
{
    (void)self;
    loom_kernel_model *model = calloc(1, sizeof *model);
    if (!model)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "template-so: out of memory");
    loom_error *e = read_weights(config->weight_path, model->greeting, sizeof model->greeting);
    if (e) {
        free(model);
        return e;
    }
    host->log(host, LOOM_LOG_INFO, "template-so: loaded from %s", config->model_dir);
    *out = model;
    return NULL;
}

static void unload_model(loom_kernel_model *model)
{
    free(model);
}

static loom_error *create_instance(loom_kernel_model *model, const loom_device *device,
                                   loom_kernel_instance **out)
{
    (void)device; /* a CPU kernel; a GPU one would bind to device->index here */
    loom_kernel_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "template-so: out of memory");
    inst->model = model;
    *out = inst;
    return NULL;
}

static void destroy_instance(loom_kernel_instance *inst)
{
    free(inst);
}

/* Every request of the batch is answered exactly once before this
 * returns; the host copies each answer, so one buffer serves them all. */
static loom_error *execute(loom_kernel_instance *inst, loom_infer_request *const *requests,
                           uint32_t count)
{
    for (uint32_t i = 0; i < count; i++) {
        loom_infer_request *r = requests[i];
        int n = snprintf(inst->answer, sizeof inst->answer, "{\"greeting\":\"%s\",\"bytes\":%llu}",
                         inst->model->greeting, (unsigned long long)r->body_len);
        loom_error *err = r->respond(r, LOOM_OK, "application/json", (const uint8_t *)inst->answer,
                                     (uint64_t)n);
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
    return strcmp(factory_id, LOOM_KERNEL_FACTORY_ID) == 0 ? &factory : NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "template_model_kernel",
    .version = "0.1.0",
    .description = "Template model: greets with its weights",
    .init = init,
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

/* fault_kernel.c - a kernel that misbehaves on request, for the serving
 * tests: a body containing "crash" aborts its process, "hang" sleeps past
 * any timeout, "garbage" answers non-JSON declared as JSON, "sleep" takes
 * 50 ms, "linger" 2 s (a request still running when its device is taken
 * back); anything else is echoed. */
#include <loom/loom.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct loom_kernel_model {
    int unused;
};
struct loom_kernel_instance {
    int unused;
};

static const loom_host *host;
static loom_kernel_model the_model;
static loom_kernel_instance the_instance;

static loom_error *load_model(const loom_kernel_factory *self,
                              const loom_kernel_model_config *config, loom_kernel_model **out)
{
    (void)self;
    (void)config;
    *out = &the_model;
    return NULL;
}

static void unload_model(loom_kernel_model *model) { (void)model; }

static loom_error *create_instance(loom_kernel_model *model, const loom_device *device,
                                   loom_kernel_instance **out)
{
    (void)model;
    (void)device;
    *out = &the_instance;
    return NULL;
}

static void destroy_instance(loom_kernel_instance *inst) { (void)inst; }

static int has(const loom_infer_request *r, const char *word)
{
    size_t n = strlen(word);
    for (uint64_t i = 0; i + n <= r->body_len; i++)
        if (memcmp(r->body + i, word, n) == 0)
            return 1;
    return 0;
}

static loom_error *execute(loom_kernel_instance *inst, loom_infer_request *const *requests,
                           uint32_t count)
{
    (void)inst;
    for (uint32_t i = 0; i < count; i++) {
        loom_infer_request *r = requests[i];
        if (has(r, "crash"))
            abort(); /* SIGABRT: a sanitizer build lets it through as a signal */
        if (has(r, "hang"))
            sleep(3600);
        if (has(r, "sleep"))
            usleep(50000);
        if (has(r, "linger"))
            usleep(2000000);
        loom_error *err = has(r, "garbage")
                              ? r->respond(r, LOOM_OK, "application/json",
                                           (const uint8_t *)"{not json", 9)
                              : r->respond(r, LOOM_OK, "application/json", r->body, r->body_len);
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
    .id = "fault_kernel",
    .version = "0.1.0",
    .description = "Test: crashes, hangs or answers garbage on request",
    .init = init,
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void) { return &module; }

/*
 * template_framework.c - a launch-style framework adapter to start from.
 *
 * A launch-style framework turns a submission into processes: the host calls
 * plan_launch once per exec, and the plugin calls sink->add_worker once per
 * worker with its argv and extra environment. The host starts, supervises
 * and logs the processes. This one runs --model-main from the model
 * directory with the arguments after `--`, and tells each worker its rank.
 */
#include <loom/loom.h>

#include <stdio.h>
#include <string.h>

/* The host's services; valid from init until deinit returns. */
static const loom_host *host;

static loom_error *plan_launch(const loom_framework_factory *self,
                               const loom_launch_request *request,
                               const loom_launch_sink *sink)
{
    (void)self;
    /* Errors are made by the host, so its allocator owns them. */
    if (!request->model_main || !request->model_main[0])
        return host->error_new(LOOM_ERR_INVALID_ARGUMENT,
                               "template_framework: --model-main is required");

    char program[1024], rank_env[32], world_env[32];
    snprintf(program, sizeof program, "./%s", request->model_main);
    uint32_t workers = request->num_workers ? request->num_workers : 1;

    const char *argv[64];
    uint32_t argc = 0;
    argv[argc++] = program;
    for (uint32_t i = 0; i < request->arg_count && argc < 64; i++)
        argv[argc++] = request->args[i];

    for (uint32_t rank = 0; rank < workers; rank++) {
        snprintf(rank_env, sizeof rank_env, "RANK=%u", rank);
        snprintf(world_env, sizeof world_env, "WORLD_SIZE=%u", workers);
        const char *env[] = {rank_env, world_env};
        /* The host copies every string; cwd NULL means the model directory. */
        loom_error *err = sink->add_worker(sink, argv, argc, env, 2, NULL);
        if (err)
            return err;
    }
    return NULL;
}

static const loom_framework_factory factory = {
    .struct_size = sizeof(loom_framework_factory),
    .style = LOOM_FRAMEWORK_LAUNCH,
    .plan_launch = plan_launch,
};

static loom_error *init(const loom_host *h)
{
    host = h;
    return NULL;
}

static const void *get_factory(const char *factory_id)
{
    if (strcmp(factory_id, LOOM_FRAMEWORK_FACTORY_ID) == 0)
        return &factory;
    return NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER, /* size, ABI version and tag: the host checks them */
    .id = "template_framework",
    .version = "0.1.0",
    .description = "Template: runs --model-main once per worker",
    .init = init,
    .get_factory = get_factory,
};

/* The only symbol a plugin exports. */
LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

/*
 * tests/plugins/old_abi/old_abi_launch.c - a launch-style framework built
 * against the frozen ABI 1.0 headers whose factory ends right after
 * plan_launch: the trainer entries and everything after hold poison. It runs
 * the model's main script once per worker with OLD_RANK set.
 */
#include <loom/loom.h>
#include <stdio.h>
#include <string.h>

#include "poison.h"

static const loom_host *host;

static loom_error *plan_launch(const loom_framework_factory *self, const loom_launch_request *req,
                               const loom_launch_sink *sink)
{
    (void)self;
    if (!req->model_main)
        return host->error_new(LOOM_ERR_INVALID_ARGUMENT, "--model-main is required");
    for (uint32_t rank = 0; rank < req->num_workers; rank++) {
        char env[32];
        snprintf(env, sizeof env, "OLD_RANK=%u", rank);
        const char *argv[] = {"sh", req->model_main};
        const char *envv[] = {env};
        loom_error *e = sink->add_worker(sink, argv, 2, envv, 1, NULL);
        if (e)
            return e;
    }
    return NULL;
}

static const struct {
    loom_framework_factory f;
    poison_fn after[POISON_SLOTS];
} framework = {
    .f = {
        .struct_size = offsetof(loom_framework_factory, create),
        .style = LOOM_FRAMEWORK_LAUNCH,
        .plan_launch = plan_launch,
        .create = POISON(loom_error * (*)(const loom_framework_factory *,
                                          const loom_trainer_config *, loom_framework_instance **)),
        .destroy = POISON(void (*)(loom_framework_instance *)),
        .state_loaded = POISON(loom_error * (*)(loom_framework_instance *)),
    },
    .after = POISON_TAIL,
};

static loom_error *init(const loom_host *h)
{
    host = h;
    return NULL;
}

static const void *get_factory(const char *id)
{
    return strcmp(id, LOOM_FRAMEWORK_FACTORY_ID) == 0 ? &framework.f : NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "old_launch",
    .version = "1.0.0",
    .description = "Launch-style adapter built against ABI 1.0, poison past plan_launch",
    .init = init,
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

/* tests/plugins/trust/misbehaving_launch.c - launch-style frameworks whose
 * plan_launch misbehaves, one per build (LAUNCH_MODE): "crash" dereferences
 * NULL, "loop" never returns. Either would take the host down or pin one of
 * its threads if plan_launch ran there; it runs in a plugin-host child. */
#include <loom/loom.h>
#include <string.h>

#define MODE_CRASH 1
#define MODE_LOOP 2

static loom_error *plan_launch(const loom_framework_factory *self, const loom_launch_request *req,
                               const loom_launch_sink *sink)
{
    (void)self, (void)req, (void)sink;
#if LAUNCH_MODE == MODE_CRASH
    volatile int *nowhere = NULL;
    *nowhere = 1;
#else
    for (volatile unsigned spin = 0;; spin++)
        ;
#endif
    return NULL;
}

static const loom_framework_factory framework = {
    .struct_size = sizeof framework,
    .style = LOOM_FRAMEWORK_LAUNCH,
    .plan_launch = plan_launch,
};

static const void *get_factory(const char *id)
{
    return strcmp(id, LOOM_FRAMEWORK_FACTORY_ID) == 0 ? &framework : NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = LAUNCH_NAME,
    .version = "1.0.0",
    .description = "a launch-style framework whose plan_launch misbehaves",
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

/* tests/plugins/train/worker_crash_logger.c - a worker logger that aborts its
 * process each time it is given training metrics: a plugin that kills
 * every worker it runs in at its first logged step. */
#include <loom/loom.h>
#include <stdlib.h>
#include <string.h>

struct loom_logger_instance {
    int unused;
};
static loom_logger_instance the_instance;

static loom_error *create(const loom_logger_factory *self, const loom_logger_config *config,
                          loom_logger_instance **out)
{
    (void)self, (void)config;
    *out = &the_instance;
    return NULL;
}

static void destroy(loom_logger_instance *inst) { (void)inst; }

static loom_error *log_train(loom_logger_instance *inst, const loom_metric *metrics,
                             uint32_t count, uint64_t iteration, uint32_t epoch, uint32_t workers)
{
    (void)inst, (void)metrics, (void)count, (void)iteration, (void)epoch, (void)workers;
    abort();
}

static const loom_logger_factory factory = {
    .struct_size = sizeof factory,
    .create = create,
    .destroy = destroy,
    .log_train_metrics = log_train,
};

static const void *get_factory(const char *id)
{
    return strcmp(id, LOOM_LOGGER_FACTORY_ID) == 0 ? &factory : NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "worker_crash_logger",
    .version = "0.1.0",
    .description = "Aborts its worker whenever it is given training metrics",
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

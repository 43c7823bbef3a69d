/*
 * template_logger.c - a logger callback to start from: it forwards the four
 * callbacks to the host's log. Each callback is optional (leave it NULL);
 * metrics are borrowed for the call, so copy what you keep.
 */
#include <loom/loom.h>

#include <stdlib.h>
#include <string.h>

static const loom_host *host;

struct loom_logger_instance {
    uint32_t rank;
    uint64_t lines; /* what a real logger would keep: files, sockets, ... */
};

static loom_error *create(const loom_logger_factory *self,
                          const loom_logger_config *config,
                          loom_logger_instance **out)
{
    (void)self;
    loom_logger_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED,
                               "template_logger: out of memory");
    inst->rank = config->rank;
    *out = inst;
    return NULL;
}

static void destroy(loom_logger_instance *inst)
{
    free(inst);
}

static loom_error *on_train_begin(loom_logger_instance *inst,
                                  const loom_train_info *info)
{
    host->log(host, LOOM_LOG_INFO, "rank %u: training %u epochs on %u workers",
              inst->rank, info->epochs, info->workers);
    return NULL;
}

static loom_error *log_train_metrics(loom_logger_instance *inst,
                                     const loom_metric *metrics, uint32_t count,
                                     uint64_t iteration, uint32_t epoch,
                                     uint32_t workers)
{
    (void)workers;
    for (uint32_t i = 0; i < count; i++)
        host->log(host, LOOM_LOG_INFO, "rank %u: epoch %u iteration %llu %s=%g",
                  inst->rank, epoch, (unsigned long long)iteration,
                  metrics[i].name, metrics[i].value);
    inst->lines += count;
    return NULL;
}

static loom_error *log_test_metrics(loom_logger_instance *inst,
                                    const loom_metric *metrics, uint32_t count,
                                    uint64_t iteration, uint32_t epoch)
{
    return log_train_metrics(inst, metrics, count, iteration, epoch, 0);
}

static loom_error *on_train_end(loom_logger_instance *inst, int32_t status,
                                const char *message)
{
    host->log(host, LOOM_LOG_INFO, "rank %u: training ended (status %d%s%s)",
              inst->rank, status, message ? ": " : "", message ? message : "");
    return NULL;
}

static const loom_logger_factory factory = {
    .struct_size = sizeof(loom_logger_factory),
    .create = create,
    .destroy = destroy,
    .on_train_begin = on_train_begin,
    .log_train_metrics = log_train_metrics,
    .log_test_metrics = log_test_metrics,
    .on_train_end = on_train_end,
};

static loom_error *init(const loom_host *h)
{
    host = h;
    return NULL;
}

static const void *get_factory(const char *factory_id)
{
    if (strcmp(factory_id, LOOM_LOGGER_FACTORY_ID) == 0)
        return &factory;
    return NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "template_logger",
    .version = "0.1.0",
    .description = "Template: writes training metrics to the host's log",
    .init = init,
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

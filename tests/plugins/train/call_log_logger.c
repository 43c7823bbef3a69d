/* tests/plugins/train/call_log_logger.c - a logger that records every call
 * it gets, one line each, in its own folder (plugin_dir) as
 * calls-driver.txt or calls-worker-RANK.txt, so a test can check which
 * callbacks each role hears, in which order and with which epoch numbers:
 *
 *   create pid=P
 *   begin epochs=E workers=W batch=B effective=G
 *   train epoch=E iteration=I workers=W
 *   test epoch=E iteration=I
 *   end status=S
 *   destroy
 *
 * Its config may hold "test_sleep_ms": N, for a slow logger: each
 * log_test_metrics call then takes N ms.
 */
#include <loom/loom.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct loom_logger_instance {
    FILE *file;
    unsigned long test_sleep_ms;
};

static loom_error *create(const loom_logger_factory *self, const loom_logger_config *config,
                          loom_logger_instance **out)
{
    (void)self;
    if (!LOOM_STRUCT_HAS(config, loom_logger_config, plugin_dir) || !config->plugin_dir)
        return NULL; /* no folder: nothing recorded, which the test sees */
    char path[4096];
    if (config->role == LOOM_LOGGER_DRIVER)
        snprintf(path, sizeof path, "%s/calls-driver.txt", config->plugin_dir);
    else
        snprintf(path, sizeof path, "%s/calls-worker-%u.txt", config->plugin_dir, config->rank);
    loom_logger_instance *inst = calloc(1, sizeof *inst);
    if (!inst || !(inst->file = fopen(path, "a"))) {
        free(inst);
        return NULL;
    }
    setvbuf(inst->file, NULL, _IOLBF, 0);
    const char *sleep_ms = config->config_json ? strstr(config->config_json, "\"test_sleep_ms\"") : NULL;
    if (sleep_ms && (sleep_ms = strchr(sleep_ms, ':')))
        inst->test_sleep_ms = strtoul(sleep_ms + 1, NULL, 10);
    fprintf(inst->file, "create pid=%ld\n", (long)getpid());
    *out = inst;
    return NULL;
}

static void destroy(loom_logger_instance *inst)
{
    if (!inst)
        return;
    fprintf(inst->file, "destroy\n");
    fclose(inst->file);
    free(inst);
}

static loom_error *begin(loom_logger_instance *inst, const loom_train_info *info)
{
    if (inst)
        fprintf(inst->file, "begin epochs=%u workers=%u batch=%u effective=%u\n", info->epochs,
                info->workers, info->batch_size, info->effective_batch_size);
    return NULL;
}

static loom_error *train(loom_logger_instance *inst, const loom_metric *metrics, uint32_t count,
                         uint64_t iteration, uint32_t epoch, uint32_t workers)
{
    (void)metrics, (void)count;
    if (inst)
        fprintf(inst->file, "train epoch=%u iteration=%llu workers=%u\n", epoch,
                (unsigned long long)iteration, workers);
    return NULL;
}

static loom_error *test(loom_logger_instance *inst, const loom_metric *metrics, uint32_t count,
                        uint64_t iteration, uint32_t epoch)
{
    (void)metrics, (void)count;
    if (inst)
        fprintf(inst->file, "test epoch=%u iteration=%llu\n", epoch,
                (unsigned long long)iteration);
    if (inst && inst->test_sleep_ms)
        usleep((useconds_t)inst->test_sleep_ms * 1000u);
    return NULL;
}

static loom_error *end(loom_logger_instance *inst, int32_t status, const char *message)
{
    (void)message;
    if (inst)
        fprintf(inst->file, "end status=%d\n", status);
    return NULL;
}

static const loom_logger_factory factory = {
    .struct_size = sizeof factory,
    .create = create,
    .destroy = destroy,
    .on_train_begin = begin,
    .log_train_metrics = train,
    .log_test_metrics = test,
    .on_train_end = end,
};

static const void *get_factory(const char *id)
{
    return strcmp(id, LOOM_LOGGER_FACTORY_ID) == 0 ? &factory : NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "call_log_logger",
    .version = "0.1.0",
    .description = "Records every logger call, in order, in its own folder",
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

/* tests/plugins/abi/result_dir_logger.c - a logger built against this SDK
 * that reads the ABI 1.1 fields of its config: it writes the result
 * directory it was told into seen.txt in its own folder (plugin_dir), or
 * "no folder" into its log folder when it got none. */
#include <loom/loom.h>
#include <stdio.h>
#include <string.h>

struct loom_logger_instance {
    int unused;
};
static loom_logger_instance the_instance;

static loom_error *create(const loom_logger_factory *self, const loom_logger_config *config,
                          loom_logger_instance **out)
{
    (void)self;
    char path[1024];
    int has = LOOM_STRUCT_HAS(config, loom_logger_config, plugin_dir) && config->plugin_dir;
    snprintf(path, sizeof path, "%s/seen.txt", has ? config->plugin_dir : config->log_dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%s\n", has ? config->result_dir : "no folder");
        fclose(f);
    }
    *out = &the_instance;
    return NULL;
}

static void destroy(loom_logger_instance *inst) { (void)inst; }

static const loom_logger_factory factory = {
    .struct_size = sizeof factory,
    .create = create,
    .destroy = destroy,
};

static const void *get_factory(const char *id)
{
    return strcmp(id, LOOM_LOGGER_FACTORY_ID) == 0 ? &factory : NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "result_dir_logger",
    .version = "0.1.0",
    .description = "Writes the result directory it was told into its own folder",
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

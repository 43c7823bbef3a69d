/* tests/plugins/abi/missing_entry.c - a search factory without its required
 * observe entry: the loader must name 'observe' and refuse the factory. */
#include <loom/loom.h>
#include <string.h>

struct loom_search_instance {
    int unused;
};

static loom_search_instance instance;

static loom_error *create(const loom_search_factory *self,
                          const loom_search_config *config,
                          loom_search_instance **out)
{
    (void)self;
    (void)config;
    *out = &instance;
    return NULL;
}

static void destroy(loom_search_instance *inst)
{
    (void)inst;
}

static loom_error *suggest(loom_search_instance *inst, uint32_t max,
                           const loom_proposal_sink *sink)
{
    (void)inst;
    (void)max;
    sink->finish(sink);
    return NULL;
}

static const loom_search_factory factory = {
    .struct_size = sizeof(loom_search_factory),
    .create = create,
    .destroy = destroy,
    .suggest = suggest,
    .observe = NULL, /* the defect */
};

static const void *get_factory(const char *factory_id)
{
    if (factory_id && strcmp(factory_id, LOOM_SEARCH_FACTORY_ID) == 0)
        return &factory;
    return NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "missing_entry",
    .version = "0.1.0",
    .description = "A search factory whose observe is NULL",
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

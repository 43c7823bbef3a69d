/*
 * tests/plugins/old_abi/old_abi_search.c - a search algorithm built against
 * the frozen ABI 1.0 headers: it offers only "loom.search/1" (the space as
 * JSON text), which this host no longer loads. The loader must refuse it
 * naming both factory ids, not report a bare "no factory".
 */
#include <loom/loom.h>
#include <string.h>

struct loom_search_instance {
    int unused;
};

static loom_search_instance instance;

static loom_error *create(const loom_search_factory *self, const loom_search_config *config,
                          loom_search_instance **out)
{
    (void)self, (void)config;
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
    (void)inst, (void)max;
    sink->finish(sink);
    return NULL;
}

static loom_error *observe(loom_search_instance *inst, uint64_t experiment_id, int32_t status,
                           const loom_metric *metrics, uint32_t metric_count)
{
    (void)inst, (void)experiment_id, (void)status, (void)metrics, (void)metric_count;
    return NULL;
}

static const loom_search_factory factory = {
    .struct_size = sizeof(loom_search_factory),
    .create = create,
    .destroy = destroy,
    .suggest = suggest,
    .observe = observe,
};

static const void *get_factory(const char *factory_id)
{
    return factory_id && strcmp(factory_id, LOOM_SEARCH_FACTORY_ID) == 0 ? &factory : NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "old_search",
    .version = "1.0.0",
    .description = "A loom.search/1 algorithm built against ABI 1.0",
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

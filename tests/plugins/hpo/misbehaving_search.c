/* A search algorithm that misbehaves in suggest, by SEARCH_MODE: 1 aborts,
 * 2 never returns, 3 proposes a value past the first parameter's upper
 * bound through propose (1.0's shape: 0 = refused), 4 does the same through
 * propose_experiment (ABI 1.5) and returns the refusal it gets as its own
 * error. The host must fail the task naming it and stay up. */
#include <loom/loom.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const loom_host *host;

struct loom_search_instance {
    uint32_t count;
    int32_t type;
    double high;
};

static loom_error *create(const loom_search_factory *self, const loom_search_config *config,
                          loom_search_instance **out)
{
    (void)self;
    loom_search_instance *inst = calloc(1, sizeof *inst);
    if (!inst)
        return host->error_new(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    inst->count = config->param_count;
    inst->type = config->params[0].type;
    inst->high = config->params[0].high;
    *out = inst;
    return NULL;
}

static void destroy(loom_search_instance *inst) { free(inst); }

static loom_error *suggest(loom_search_instance *inst, uint32_t max,
                           const loom_proposal_sink *sink)
{
    (void)max;
    if (SEARCH_MODE == 1)
        abort();
    if (SEARCH_MODE == 2)
        for (;;)
            pause();
    loom_value v[64];
    memset(v, 0, sizeof v);
    for (uint32_t i = 0; i < inst->count && i < 64; i++)
        v[i].type = inst->type;
    v[0].d = inst->high + 1000;
    v[0].i = (int64_t)inst->high + 1000;
    if (SEARCH_MODE == 4) {
        if (!LOOM_STRUCT_HAS(sink, loom_proposal_sink, stop_experiment))
            return host->error_new(LOOM_ERR_UNSUPPORTED, "no propose_experiment");
        uint64_t id = 1;
        loom_error *refused = sink->propose_experiment(sink, v, inst->count, 0, &id);
        if (!refused || id != 0)
            return host->error_new(LOOM_ERR_INTERNAL, "propose_experiment took a value outside");
        loom_error *e = host->error_newf(host->error_code(refused), "code %d: %s",
                                         (int)host->error_code(refused),
                                         host->error_message(refused));
        host->error_free(refused);
        return e;
    }
    sink->propose(sink, v, inst->count, 0);
    return NULL;
}

static loom_error *observe(loom_search_instance *inst, const loom_observation *obs,
                           const loom_proposal_sink *sink)
{
    (void)inst, (void)obs, (void)sink;
    return NULL;
}

static const loom_search_factory factory = {
    .struct_size = sizeof(loom_search_factory),
    .create = create, .destroy = destroy, .suggest = suggest, .observe = observe,
};

static loom_error *init(const loom_host *h)
{
    host = h;
    return NULL;
}

static const void *get_factory(const char *id)
{
    return strcmp(id, LOOM_SEARCH_FACTORY_ID) == 0 ? &factory : NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = SEARCH_NAME,
    .version = "0.1.0",
    .description = "test: a search algorithm that misbehaves in suggest",
    .init = init,
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void) { return &module; }

/*
 * tests/unit/search/test_search_examples.c - the bring-your-own examples
 * (algorithms/examples/): the C hill climber (.so) and the Lua coordinate
 * search are registered through the host's registry, the way `loom
 * algorithm add` does, found by name, and tune a smooth function over a
 * mixed space: every proposal inside it, the budget honoured and finished,
 * and the result better than the first proposals.
 */
#include <stdio.h>

#include "plugin/registry.h"
#include "search_driver.h"

static const char *const acts[] = {"relu", "tanh"};

static double loss_of(const recorded *item)
{
    const loom_value *v = item->values;
    double e = log10(v[0].d) + 2, w = ((double)v[1].i - 40) / 50.0;
    return e * e + w * w + (strcmp(v[2].s, "tanh") == 0) * 0.5;
}

static void tune(registry *r, const char *name)
{
    registry_entry e;
    CHECK_MSG(registry_acquire(r, LOOM_KIND_SEARCH, name, &e) == 0, "%s is not registered",
              name);
    const loom_search_factory *f = e.factory;
    loom_param space[3] = {range_param("lr", -4, -1)};
    space[0].log_base = 10;
    space[1] = (loom_param){.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_RANGE,
                            .type = LOOM_VALUE_INT, .name = "width", .low = 8, .high = 128,
                            .step = 1};
    space[2] = (loom_param){.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_CHOICE,
                            .type = LOOM_VALUE_STRING, .name = "activation",
                            .choice_count = 2, .choice_strings = acts};
    search_setup s = {.params = space, .dim = 3, .seed = 4, .max_experiments = 30};
    loom_search_instance *inst = search_create(f, &s, NULL);
    recorder rec;
    recorder_init(&rec, space, 3);
    double first = INFINITY, best = INFINITY;
    for (int round = 0; inst && round < 40 && !rec.finished; round++) {
        uint32_t before = rec.count;
        search_suggest(f, inst, 1, &rec);
        for (uint32_t i = before; i < rec.count; i++) {
            double y = loss_of(&rec.items[i]);
            if (i < 3)
                first = fmin(first, y);
            best = fmin(best, y);
            search_observe(f, inst, &rec, &rec.items[i], LOOM_EXPERIMENT_FINISHED, y);
        }
    }
    printf("%s: best of the first 3 %.3f, after %u: %.3f\n", name, first, rec.count, best);
    CHECK_MSG(rec.count == 30 && rec.finished && rec.outside == 0,
              "%s: %u proposals, finished %u, %u outside", name, rec.count, rec.finished,
              rec.outside);
    CHECK_MSG(best < first, "%s: never improved on its start (%.3f)", name, first);
    recorder_free(&rec);
    if (inst)
        f->destroy(inst);
    registry_release(r, LOOM_KIND_SEARCH, name);
}

int main(void)
{
    registry *r = registry_create();
    const char *files[] = {HILL_CLIMB_PLUGIN, COORDINATE_SCRIPT};
    for (int i = 0; i < 2; i++) {
        loom_error *err = registry_load(r, files[i], "user", NULL, LOOM_KIND_SEARCH, 0);
        CHECK_MSG(err == NULL, "%s: %s", files[i], loom_err_message(err));
        loom_err_free(err);
    }
    tune(r, "example_hill_climb");
    tune(r, "example_coordinate");
    registry_destroy(r);
    return CHECK_DONE();
}

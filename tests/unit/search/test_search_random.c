/*
 * tests/unit/search/test_search_random.c - random.so: every value inside
 * its domain (log scale, stepped and integer ranges, lists of numbers and
 * strings) and spread over it, determinism per seed (RandomSeed), finish
 * after max_experiments, a refused proposal not counted, save/load
 * continuing the same sequence, a bad state refused without changing the
 * instance, and invalid spaces and options refused by name.
 */
#include "search_driver.h"

static const int64_t hidden_sizes[] = {128, 256, 512};
static const char *const optimizers[] = {"sgd", "adam"};

/* The WMLA example (hpo-task-random.json) as the host hands it over, plus
 * stepped ranges: a log-scale lr, an INT list, a string list, an INT range
 * with a step, a stepped DOUBLE range and an INT range on a log scale. */
static loom_param space[6];

static void build_space(void)
{
    space[0] = range_param("learning_rate", -4, -1);
    space[0].log_base = 10;
    space[1] = (loom_param){.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_CHOICE,
                            .type = LOOM_VALUE_INT, .name = "hidden", .choice_count = 3,
                            .choice_ints = hidden_sizes};
    space[2] = (loom_param){.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_CHOICE,
                            .type = LOOM_VALUE_STRING, .name = "optimizer",
                            .choice_count = 2, .choice_strings = optimizers};
    space[3] = (loom_param){.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_RANGE,
                            .type = LOOM_VALUE_INT, .name = "batch", .low = 16, .high = 256,
                            .step = 16};
    space[4] = range_param("dropout", 0, 0.5);
    space[4].step = 0.1;
    space[5] = (loom_param){.struct_size = sizeof(loom_param), .kind = LOOM_PARAM_RANGE,
                            .type = LOOM_VALUE_INT, .name = "width", .low = 4, .high = 8,
                            .log_base = 2};
}

static const loom_search_factory *factory;

static void test_domains(void)
{
    search_setup s = {.params = space, .dim = 6, .seed = 7};
    loom_search_instance *inst = search_create(factory, &s, NULL);
    if (!inst)
        return;
    recorder r;
    recorder_init(&r, space, 6);
    search_suggest(factory, inst, 3000, &r);
    CHECK(r.count == 3000 && r.outside == 0);
    CHECK(r.finished == 0); /* no limit: never finished */
    uint32_t decade[3] = {0}, hidden[3] = {0}, sgd = 0, batch_levels = 0, dropout_levels = 0;
    uint32_t batch_seen[17] = {0}, dropout_seen[6] = {0};
    double wmin = 1e9, wmax = 0;
    for (uint32_t i = 0; i < r.count; i++) {
        const loom_value *v = r.items[i].values;
        int d = (int)floor(log10(v[0].d) + 4);
        if (d >= 0 && d < 3)
            decade[d]++;
        for (int k = 0; k < 3; k++)
            hidden[k] += v[1].i == hidden_sizes[k];
        sgd += strcmp(v[2].s, "sgd") == 0;
        batch_seen[(v[3].i - 16) / 16]++;
        dropout_seen[(int)lround(v[4].d * 10)]++;
        wmin = fmin(wmin, (double)v[5].i);
        wmax = fmax(wmax, (double)v[5].i);
    }
    for (int d = 0; d < 3; d++)
        CHECK_MSG(decade[d] > 800 && decade[d] < 1200, "decade %d has %u of 3000", d, decade[d]);
    for (int k = 0; k < 3; k++)
        CHECK_MSG(hidden[k] > 800 && hidden[k] < 1200, "hidden[%d] %u", k, hidden[k]);
    CHECK(sgd > 1300 && sgd < 1700);
    for (int k = 0; k < 16; k++)
        batch_levels += batch_seen[k] > 0;
    for (int k = 0; k < 6; k++)
        dropout_levels += dropout_seen[k] > 0;
    CHECK_MSG(batch_levels == 16, "batch took %u of its 16 values", batch_levels);
    CHECK_MSG(dropout_levels == 6, "dropout took %u of its 6 values (0.5 included)",
              dropout_levels);
    CHECK_MSG(wmin == 16 && wmax > 200, "width 2^[4,8] spans [%g, %g]", wmin, wmax);
    recorder_free(&r);
    factory->destroy(inst);
}

static void test_determinism_and_finish(void)
{
    static const loom_search_option seed7[] = {{"RandomSeed", "7"}};
    search_setup s = {.params = space, .dim = 6, .seed = 99, .max_experiments = 8,
                      .options = seed7, .option_count = 1};
    loom_search_instance *a = search_create(factory, &s, NULL);
    s.options = NULL, s.option_count = 0, s.seed = 7; /* the same seed, given by the host */
    loom_search_instance *b = search_create(factory, &s, NULL);
    s.seed = 8;
    loom_search_instance *c = search_create(factory, &s, NULL);
    if (!a || !b || !c)
        return;
    recorder ra, rb, rc;
    recorder_init(&ra, space, 6);
    recorder_init(&rb, space, 6);
    recorder_init(&rc, space, 6);
    search_suggest(factory, a, 2, &ra);
    CHECK(ra.count == 2 && ra.finished == 0);
    ra.refuse_next = 1;
    ra.sink.propose_experiment = recorder_propose_experiment; /* ABI 1.5's path */
    search_suggest(factory, a, 3, &ra); /* stops at the refusal: not counted */
    CHECK(ra.count == 2 && ra.finished == 0);
    CHECK(ra.refused_with_reason == 1);
    search_suggest(factory, a, 100, &ra);
    CHECK(ra.count == 8 && ra.finished == 1);
    search_suggest(factory, a, 1, &ra); /* said again on every later suggest */
    CHECK(ra.count == 8 && ra.finished == 2);
    /* b draws the same sequence; a's third draw was refused, so a's later
     * proposals are b's shifted by one. */
    s.max_experiments = 0;
    s.seed = 7;
    loom_search_instance *unlimited = search_create(factory, &s, NULL);
    if (unlimited)
        search_suggest(factory, unlimited, 9, &rb);
    search_suggest(factory, c, 8, &rc);
    uint32_t same_b = 0, same_c = 0;
    for (uint32_t i = 0; i < 8 && rb.count == 9 && rc.count == 8; i++) {
        same_b += same_values(&ra.items[i], &rb.items[i < 2 ? i : i + 1], 6);
        same_c += same_values(&ra.items[i], &rc.items[i], 6);
    }
    CHECK_MSG(same_b == 8, "RandomSeed 7 and seed 7 agree on %u of 8", same_b);
    if (unlimited)
        factory->destroy(unlimited);
    CHECK_MSG(same_c < 3, "seed 8 repeated %u of seed 7's proposals", same_c);
    recorder_free(&ra), recorder_free(&rb), recorder_free(&rc);
    factory->destroy(a), factory->destroy(b), factory->destroy(c);
}

static void test_save_load(void)
{
    search_setup s = {.params = space, .dim = 6, .seed = 5, .max_experiments = 10};
    loom_search_instance *a = search_create(factory, &s, NULL);
    loom_search_instance *b = search_create(factory, &s, NULL);
    loom_search_instance *fresh = search_create(factory, &s, NULL);
    if (!a || !b || !fresh)
        return;
    recorder ra, rb;
    recorder_init(&ra, space, 6);
    recorder_init(&rb, space, 6);
    search_suggest(factory, a, 4, &ra);
    search_observe(factory, a, &ra, &ra.items[0], LOOM_EXPERIMENT_FINISHED, 0.7);
    search_observe(factory, a, &ra, &ra.items[1], LOOM_EXPERIMENT_FAILED, NAN);
    char *state = NULL;
    loom_error *err = factory->save_state(a, &state);
    CHECK_MSG(err == NULL && state, "%s", loom_err_message(err));
    loom_err_free(err);
    err = factory->load_state(b, state);
    CHECK_MSG(err == NULL, "%s", loom_err_message(err));
    loom_err_free(err);
    char *again = NULL;
    err = factory->save_state(b, &again);
    CHECK(err == NULL && again && strcmp(again, state) == 0);
    loom_err_free(err);
    search_suggest(factory, a, 100, &ra);
    rb.next_id = 4;
    search_suggest(factory, b, 100, &rb);
    CHECK(ra.count == 10 && rb.count == 6 && ra.finished == 1 && rb.finished == 1);
    uint32_t same = 0;
    for (uint32_t i = 0; i < rb.count && ra.count == 10; i++)
        same += same_values(&ra.items[4 + i], &rb.items[i], 6);
    CHECK_MSG(same == 6, "the restored search continued %u of 6 proposals", same);

    /* Bad states are refused and leave the instance as it was. */
    const char *bad[] = {"not json", "{\"algorithm\":\"tpe\"}",
                         "{\"algorithm\":\"random\",\"version\":2,\"rng\":\"xyz\"}", NULL};
    for (int i = 0; bad[i]; i++) {
        err = factory->load_state(fresh, bad[i]);
        CHECK_MSG(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT, "state %d accepted", i);
        CHECK_CONTAINS(loom_err_message(err), "saved state");
        loom_err_free(err);
    }
    recorder rf;
    recorder_init(&rf, space, 6);
    search_suggest(factory, fresh, 1, &rf);
    CHECK(rf.count == 1 && same_values(&rf.items[0], &ra.items[0], 6));
    recorder_free(&rf);
    free(state);
    free(again);
    recorder_free(&ra), recorder_free(&rb);
    factory->destroy(a), factory->destroy(b), factory->destroy(fresh);
}

static void test_invalid(void)
{
    static const loom_search_option bad_seed[] = {{"randomseed", "seven"}};
    loom_param reversed = range_param("lr", 1, 0);
    loom_param bad_base = range_param("lr", 0, 1);
    bad_base.log_base = 1;
    loom_param empty = {.struct_size = sizeof empty, .kind = LOOM_PARAM_CHOICE,
                        .type = LOOM_VALUE_INT, .name = "hidden"};
    loom_param twice[2] = {range_param("lr", 0, 1), range_param("lr", 0, 2)};
    struct {
        const loom_param *params;
        uint32_t dim;
        const loom_search_option *options;
        const char *expect;
    } cases[] = {
        {&reversed, 1, NULL, "'lr': low 1 must be <= high 0"},
        {&bad_base, 1, NULL, "'lr': log_base 1"},
        {&empty, 1, NULL, "'hidden': the choice list is empty"},
        {twice, 2, NULL, "'lr' appears twice"},
        {NULL, 0, NULL, "the search space is empty"},
        {space, 6, bad_seed, "algoParams 'RandomSeed' is \"seven\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        search_setup s = {.params = cases[i].params, .dim = cases[i].dim,
                          .options = cases[i].options, .option_count = cases[i].options != 0};
        loom_error *err = NULL;
        loom_search_instance *inst = search_create(factory, &s, &err);
        CHECK(inst == NULL);
        CHECK_MSG(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT, "case %zu", i);
        CHECK_CONTAINS(loom_err_message(err), cases[i].expect);
        loom_err_free(err);
    }
}

int main(void)
{
    test_plugin plugin = {0};
    factory = test_plugin_open(&plugin, RANDOM_PLUGIN, LOOM_SEARCH_FACTORY_ID);
    CHECK(factory != NULL);
    if (!factory)
        return CHECK_DONE();
    CHECK_STR_EQ(plugin.module->id, "random");
    CHECK(plugin.module->get_factory("loom.search/1") == NULL);
    build_space();
    test_domains();
    test_determinism_and_finish();
    test_save_load();
    test_invalid();
    test_plugin_close(&plugin);
    return CHECK_DONE();
}

/*
 * tests/unit/builtins/test_random_search.c - random.so on WMLA's
 * hpo-task-random.json space: values in bounds, log scale for "power",
 * integers from their lists, steps, determinism from the seed, finish after
 * max_experiments, save/load continuation, and every invalid space refused
 * with the hyperparameter and field named.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../check.h"
#include "builtin_plugin.h"

#define MAX_PROPOSALS 4096

typedef struct proposals {
    char *configs[MAX_PROPOSALS];
    uint32_t count;
    uint32_t finished; /* finish() calls */
    uint32_t refuse_next; /* refuse this many proposals before accepting */
} proposals;

static uint64_t record_proposal(const loom_proposal_sink *sink, const char *config)
{
    proposals *p = sink->host_data;
    if (p->refuse_next) {
        p->refuse_next--;
        return 0;
    }
    if (p->count == MAX_PROPOSALS)
        return 0;
    p->configs[p->count++] = strdup(config);
    return p->count; /* experiment ids 1, 2, ... */
}

static void record_finish(const loom_proposal_sink *sink)
{
    ((proposals *)sink->host_data)->finished++;
}

static void proposals_free(proposals *p)
{
    for (uint32_t i = 0; i < p->count; i++)
        free(p->configs[i]);
    memset(p, 0, sizeof *p);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    if (text && fread(text, 1, (size_t)n, f) == (size_t)n)
        text[n] = '\0';
    fclose(f);
    return text;
}

static const loom_search_factory *factory;
static test_plugin plugin;

static loom_search_config make_config(const char *space, uint32_t max_experiments,
                                      uint64_t seed)
{
    loom_search_config c = {
        .struct_size = sizeof c,
        .maximize = 0,
        .max_experiments = max_experiments,
        .max_parallel = 2,
        .seed = seed,
        .space_json = space,
        .params_json = "{\"RandomSeed\":\"7\"}",
        .objective_metric = "loss",
    };
    return c;
}

static loom_search_instance *create(const char *space, uint32_t max_experiments,
                                    uint64_t seed)
{
    loom_search_config c = make_config(space, max_experiments, seed);
    loom_search_instance *inst = NULL;
    loom_error *err = factory->create(factory, &c, &inst);
    CHECK_MSG(err == NULL, "%s", loom_err_message(err));
    loom_err_free(err);
    return inst;
}

static void suggest(loom_search_instance *inst, uint32_t max, proposals *out)
{
    loom_proposal_sink sink = {sizeof sink, out, record_proposal, record_finish};
    loom_error *err = factory->suggest(inst, max, &sink);
    CHECK_MSG(err == NULL, "%s", loom_err_message(err));
    loom_err_free(err);
}

/* The WMLA example: lr = 10^[-4,-1], hidden in {128,256,512}, optimizer. */
static void test_wmla_space(const char *space)
{
    loom_search_instance *inst = create(space, 0, 7);
    if (!inst)
        return;
    proposals p = {0};
    suggest(inst, 3000, &p);
    CHECK(p.count == 3000);
    CHECK(p.finished == 0); /* no limit: never finished */

    uint32_t decade[3] = {0}, hidden[3] = {0}, sgd = 0, adam = 0, bad = 0;
    double lo = 0, hi = -10;
    for (uint32_t i = 0; i < p.count; i++) {
        cJSON *c = cJSON_Parse(p.configs[i]);
        const cJSON *lr = cJSON_GetObjectItemCaseSensitive(c, "learning_rate");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(c, "hidden");
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(c, "optimizer");
        if (!cJSON_IsNumber(lr) || !cJSON_IsNumber(h) || !cJSON_IsString(o) ||
            cJSON_GetArraySize(c) != 3) {
            bad++;
            cJSON_Delete(c);
            continue;
        }
        double e = log10(lr->valuedouble);
        if (e < -4 - 1e-12 || e > -1 + 1e-12)
            bad++;
        lo = e < lo ? e : lo;
        hi = e > hi ? e : hi;
        int d = (int)floor(e + 4);
        if (d >= 0 && d < 3)
            decade[d]++;
        /* INT values are integral numbers from the list, written without
         * a fraction. */
        if (h->valuedouble == 128) hidden[0]++;
        else if (h->valuedouble == 256) hidden[1]++;
        else if (h->valuedouble == 512) hidden[2]++;
        else bad++;
        if (strstr(p.configs[i], "\"hidden\":128,") == NULL &&
            strstr(p.configs[i], "\"hidden\":256,") == NULL &&
            strstr(p.configs[i], "\"hidden\":512,") == NULL)
            bad++;
        if (strcmp(o->valuestring, "sgd") == 0) sgd++;
        else if (strcmp(o->valuestring, "adam") == 0) adam++;
        else bad++;
        cJSON_Delete(c);
    }
    CHECK_MSG(bad == 0, "%u values out of the space", bad);
    /* Log scale: every decade of [1e-4, 1e-1] gets about a third (linear
     * sampling would put 90% in the top decade), and the range is covered. */
    CHECK_MSG(lo < -3.95 && hi > -1.05, "log10(lr) spans [%g, %g]", lo, hi);
    for (int d = 0; d < 3; d++)
        CHECK_MSG(decade[d] > 800 && decade[d] < 1200, "decade %d has %u of 3000",
                  d, decade[d]);
    for (int k = 0; k < 3; k++)
        CHECK_MSG(hidden[k] > 800 && hidden[k] < 1200, "hidden[%d] %u", k, hidden[k]);
    CHECK(sgd > 1300 && adam > 1300);
    proposals_free(&p);
    factory->destroy(inst);
}

static void test_determinism_and_finish(const char *space)
{
    loom_search_instance *a = create(space, 8, 7);
    loom_search_instance *b = create(space, 8, 7);
    loom_search_instance *c = create(space, 8, 8);
    if (!a || !b || !c)
        return;
    proposals pa = {0}, pb = {0}, pc = {0};
    suggest(a, 2, &pa);
    CHECK(pa.count == 2 && pa.finished == 0);
    suggest(a, 0, &pa); /* zero means nothing now */
    CHECK(pa.count == 2 && pa.finished == 0);
    suggest(a, 5, &pa);
    CHECK(pa.count == 7 && pa.finished == 0);
    suggest(a, 5, &pa); /* only one left of max_experiments = 8 */
    CHECK(pa.count == 8);
    CHECK(pa.finished == 1);
    suggest(a, 5, &pa); /* spent: proposes nothing, says finished again */
    CHECK(pa.count == 8);
    CHECK(pa.finished == 2);

    suggest(b, 100, &pb); /* same seed, one call: the same sequence */
    CHECK(pb.count == 8 && pb.finished == 1);
    int same = pa.count == pb.count;
    for (uint32_t i = 0; same && i < pa.count; i++)
        same = strcmp(pa.configs[i], pb.configs[i]) == 0;
    CHECK_MSG(same, "seed 7 gave different proposals");

    suggest(c, 100, &pc);
    uint32_t equal = 0;
    for (uint32_t i = 0; i < pc.count && i < pa.count; i++)
        equal += strcmp(pa.configs[i], pc.configs[i]) == 0;
    CHECK_MSG(equal < 3, "seed 8 repeated %u of seed 7's proposals", equal);

    /* A refused proposal is not counted: 8 accepted in the end. */
    loom_search_instance *d = create(space, 8, 7);
    proposals pd = {0};
    pd.refuse_next = 1;
    suggest(d, 8, &pd);
    CHECK(pd.count == 0); /* stops at the refusal, waits for the next call */
    suggest(d, 8, &pd);
    CHECK(pd.count == 8 && pd.finished == 1);

    proposals_free(&pa);
    proposals_free(&pb);
    proposals_free(&pc);
    proposals_free(&pd);
    factory->destroy(a);
    factory->destroy(b);
    factory->destroy(c);
    factory->destroy(d);
}

static void observe(loom_search_instance *inst, uint64_t id, int32_t status, double loss)
{
    loom_metric m[2] = {{"accuracy", 0.5}, {"loss", loss}};
    loom_error *err = factory->observe(inst, id, status, m, 2);
    CHECK(err == NULL);
    loom_err_free(err);
}

static void test_save_load(const char *space)
{
    /* Uninterrupted: 8 proposals. */
    loom_search_instance *whole = create(space, 8, 7);
    proposals pw = {0};
    suggest(whole, 8, &pw);

    /* Interrupted after 3, with results, saved and restored elsewhere. */
    loom_search_instance *first = create(space, 8, 7);
    proposals p1 = {0};
    suggest(first, 3, &p1);
    observe(first, 1, LOOM_EXPERIMENT_FINISHED, 0.9);
    observe(first, 2, LOOM_EXPERIMENT_FINISHED, 0.4);
    observe(first, 3, LOOM_EXPERIMENT_FAILED, 0.1); /* failed: never best */
    char *state = NULL;
    loom_error *err = factory->save_state(first, &state);
    CHECK_MSG(err == NULL, "%s", loom_err_message(err));
    CHECK(state != NULL);
    if (!state)
        return;

    cJSON *root = cJSON_Parse(state);
    CHECK(root != NULL);
    const cJSON *best = cJSON_GetObjectItemCaseSensitive(root, "best");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(best, "id")) == 2);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(best, "value")) == 0.4);
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(root, "proposed")) == 3);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "observations")) == 3);
    cJSON_Delete(root);

    loom_search_instance *second = create(space, 8, 12345); /* seed from the state */
    err = factory->load_state(second, state);
    CHECK_MSG(err == NULL, "%s", loom_err_message(err));
    plugin.host->free(state);
    proposals p2 = {0};
    suggest(second, 100, &p2);
    CHECK(p2.count == 5);
    CHECK(p2.finished == 1);
    int same = p1.count == 3 && p2.count == 5 && pw.count == 8;
    for (uint32_t i = 0; same && i < 3; i++)
        same = strcmp(p1.configs[i], pw.configs[i]) == 0;
    for (uint32_t i = 0; same && i < 5; i++)
        same = strcmp(p2.configs[i], pw.configs[3 + i]) == 0;
    CHECK_MSG(same, "the restored search did not continue the sequence");

    /* The observations came along: a later, better result replaces the
     * best; the state of the restored instance says so. */
    observe(second, 4, LOOM_EXPERIMENT_FINISHED, 0.2);
    state = NULL;
    err = factory->save_state(second, &state);
    CHECK(err == NULL && state != NULL);
    root = cJSON_Parse(state);
    best = cJSON_GetObjectItemCaseSensitive(root, "best");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(best, "id")) == 4);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "observations")) == 4);
    cJSON_Delete(root);
    plugin.host->free(state);

    /* Bad states are refused and leave the instance as it was. */
    loom_search_instance *third = create(space, 8, 7);
    const char *bad[] = {
        "not json", "{}",
        "{\"algorithm\":\"tpe\",\"version\":1}",
        "{\"algorithm\":\"random\",\"version\":1,\"rng\":\"12\",\"proposed\":1,\"observations\":[]}",
        "{\"algorithm\":\"random\",\"version\":1,\"rng\":\"0000000000000000000000000000000000000000000000000000000000000001\",\"proposed\":-1,\"observations\":[]}",
        "{\"algorithm\":\"random\",\"version\":1,\"rng\":\"0000000000000000000000000000000000000000000000000000000000000001\",\"proposed\":1,\"observations\":[{\"id\":\"x\"}]}",
    };
    const char *field[] = {"not a JSON object", "'algorithm'", "'algorithm'", "'rng'",
                           "'proposed'", "observations[0]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err = factory->load_state(third, bad[i]);
        CHECK(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
        CHECK_CONTAINS(loom_err_message(err), field[i]);
        loom_err_free(err);
    }
    proposals p3 = {0};
    suggest(third, 8, &p3);
    same = p3.count == 8;
    for (uint32_t i = 0; same && i < 8; i++)
        same = strcmp(p3.configs[i], pw.configs[i]) == 0;
    CHECK_MSG(same, "a refused state changed the instance");

    proposals_free(&pw);
    proposals_free(&p1);
    proposals_free(&p2);
    proposals_free(&p3);
    factory->destroy(whole);
    factory->destroy(first);
    factory->destroy(second);
    factory->destroy(third);
}

/* Steps, inclusive integer bounds, INT powers, the correct spelling of
 * discreteStrVal and numbers given as strings (as WMLA writes "step"). */
static void test_steps_and_spellings(void)
{
    const char *space =
        "[{\"name\":\"batch_size\",\"type\":\"Range\",\"dataType\":\"INT\","
        "\"minIntVal\":16,\"maxIntVal\":256,\"step\":\"16\"},"
        "{\"name\":\"dropout\",\"type\":\"Range\",\"dataType\":\"DOUBLE\","
        "\"minDbVal\":0.0,\"maxDbVal\":0.5,\"step\":\"0.1\"},"
        "{\"name\":\"layers\",\"type\":\"Range\",\"dataType\":\"INT\","
        "\"minIntVal\":1,\"maxIntVal\":3},"
        "{\"name\":\"width\",\"type\":\"Range\",\"dataType\":\"INT\","
        "\"minIntVal\":\"4\",\"maxIntVal\":6,\"power\":2},"
        "{\"name\":\"act\",\"type\":\"Discrete\",\"dataType\":\"STR\","
        "\"discreteStrVal\":[\"relu\",\"tanh\"]},"
        "{\"name\":\"momentum\",\"type\":\"Discrete\",\"dataType\":\"DOUBLE\","
        "\"discreteDbVal\":[0.5,0.9,0.99]}]";
    loom_search_instance *inst = create(space, 0, 99);
    if (!inst)
        return;
    proposals p = {0};
    suggest(inst, 600, &p);
    uint32_t bad = 0, batch_seen[17] = {0}, dropout_seen[6] = {0}, layers_seen[4] = {0};
    uint32_t width_seen[3] = {0}, relu = 0, momentum_ok = 0;
    for (uint32_t i = 0; i < p.count; i++) {
        cJSON *c = cJSON_Parse(p.configs[i]);
        double b = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "batch_size"));
        double d = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "dropout"));
        double l = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "layers"));
        double w = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "width"));
        double m = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "momentum"));
        const char *a = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c, "act"));
        if (b >= 16 && b <= 256 && fmod(b, 16) == 0)
            batch_seen[(int)b / 16]++;
        else
            bad++;
        int k = (int)lround(d * 10);
        /* Exactly the decimal the user meant, e.g. 0.3 and not 0.30000000000000004. */
        if (k >= 0 && k <= 5 && d == (double)k / 10)
            dropout_seen[k]++;
        else
            bad++;
        if (l >= 1 && l <= 3 && l == floor(l))
            layers_seen[(int)l]++;
        else
            bad++;
        if (w == 16) width_seen[0]++;
        else if (w == 32) width_seen[1]++;
        else if (w == 64) width_seen[2]++;
        else bad++;
        if (a && strcmp(a, "relu") == 0)
            relu++;
        else if (!a || strcmp(a, "tanh") != 0)
            bad++;
        momentum_ok += m == 0.5 || m == 0.9 || m == 0.99;
        cJSON_Delete(c);
    }
    CHECK_MSG(bad == 0, "%u values outside the stepped space", bad);
    uint32_t levels = 0;
    for (int i = 1; i <= 16; i++)
        levels += batch_seen[i] > 0;
    CHECK_MSG(levels == 16, "batch_size took %u of its 16 values", levels);
    levels = 0;
    for (int i = 0; i < 6; i++)
        levels += dropout_seen[i] > 0;
    CHECK_MSG(levels == 6, "dropout took %u of its 6 values (0.5 included)", levels);
    CHECK(layers_seen[1] && layers_seen[2] && layers_seen[3]); /* both ends */
    CHECK(width_seen[0] && width_seen[1] && width_seen[2]);
    CHECK(relu > 0 && relu < p.count);
    CHECK(momentum_ok == p.count);
    proposals_free(&p);
    factory->destroy(inst);
}

typedef struct invalid_case {
    const char *space;
    const char *name;  /* the hyperparameter the message must name */
    const char *field; /* and the field */
} invalid_case;

#define LR "{\"name\":\"lr\",\"type\":\"Range\",\"dataType\":\"DOUBLE\","
#define BS "{\"name\":\"bs\",\"type\":\"Range\",\"dataType\":\"INT\","
#define OPT "{\"name\":\"opt\",\"type\":\"Discrete\","

static void test_invalid_spaces(void)
{
    static const invalid_case cases[] = {
        {"[" LR "\"maxDbVal\":1}]", "'lr'", "'minDbVal' is missing"},
        {"[" LR "\"minDbVal\":0}]", "'lr'", "'maxDbVal' is missing"},
        {"[" LR "\"minDbVal\":2,\"maxDbVal\":1}]", "'lr'", "'minDbVal' (2) is greater than 'maxDbVal' (1)"},
        {"[" LR "\"minDbVal\":\"abc\",\"maxDbVal\":1}]", "'lr'", "'minDbVal' is not a finite number"},
        {"[" LR "\"minDbVal\":0,\"maxDbVal\":1,\"step\":0}]", "'lr'", "'step'"},
        {"[" LR "\"minDbVal\":0,\"maxDbVal\":1,\"power\":\"-10\"}]", "'lr'", "'power'"},
        {"[" LR "\"minDbVal\":0,\"maxDbVal\":400,\"power\":10}]", "'lr'", "'power'"},
        {"[" BS "\"minIntVal\":1}]", "'bs'", "'maxIntVal' is missing"},
        {"[" BS "\"minIntVal\":1.5,\"maxIntVal\":4}]", "'bs'", "'minIntVal' is not an integer"},
        {"[" BS "\"minIntVal\":9,\"maxIntVal\":4}]", "'bs'", "'minIntVal' (9) is greater than 'maxIntVal' (4)"},
        {"[" BS "\"minIntVal\":1,\"maxIntVal\":4,\"step\":0}]", "'bs'", "'step' must be an integer >= 1"},
        {"[" OPT "\"dataType\":\"STR\",\"discreateStrVal\":[]}]", "'opt'", "'discreateStrVal' is an empty array"},
        {"[" OPT "\"dataType\":\"STR\"}]", "'opt'", "'discreateStrVal' is missing"},
        {"[" OPT "\"dataType\":\"STR\",\"discreateStrVal\":\"sgd\"}]", "'opt'", "'discreateStrVal' is not an array"},
        {"[" OPT "\"dataType\":\"INT\",\"discreteIntVal\":[1,\"x\"]}]", "'opt'", "discreteIntVal[1]"},
        {"[" OPT "\"dataType\":\"INT\",\"discreteIntVal\":[1,2.5]}]", "'opt'", "discreteIntVal[1]"},
        {"[" OPT "\"dataType\":\"DOUBLE\",\"discreteDbVal\":[]}]", "'opt'", "'discreteDbVal' is an empty array"},
        {"[" OPT "\"dataType\":\"DOUBLE\"}]", "'opt'", "'discreteDbVal' is missing"},
        {"[" OPT "\"dataType\":\"FLOAT\",\"discreteDbVal\":[1]}]", "'opt'", "'dataType' is \"FLOAT\""},
        {"[{\"name\":\"opt\",\"type\":\"Discrete\",\"discreteIntVal\":[1]}]", "'opt'", "'dataType' is missing"},
        {"[{\"name\":\"x\",\"type\":\"Uniform\",\"dataType\":\"DOUBLE\"}]", "'x'", "'type' is \"Uniform\""},
        {"[{\"name\":\"x\",\"dataType\":\"DOUBLE\"}]", "'x'", "'type' is missing"},
        {"[{\"name\":\"x\",\"type\":\"Range\",\"dataType\":\"STR\"}]", "'x'", "dataType DOUBLE or INT"},
        {"[{\"type\":\"Range\",\"dataType\":\"DOUBLE\"}]", "hyperParams[0]", "'name' is missing"},
        {"[" LR "\"minDbVal\":0,\"maxDbVal\":1}," LR "\"minDbVal\":0,\"maxDbVal\":1}]", "'lr'", "appears twice"},
        {"[1]", "hyperParams[0]", "expected an object"},
        {"{\"name\":\"lr\"}", "hyperParams", "expected an array"},
        {"[", "hyperParams", "not valid JSON"},
        {"[]", "hyperParams", "empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        loom_search_config c = make_config(cases[i].space, 8, 1);
        loom_search_instance *inst = NULL;
        loom_error *err = factory->create(factory, &c, &inst);
        CHECK_MSG(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT,
                  "case %zu (%s) was not refused", i, cases[i].space);
        CHECK(inst == NULL);
        CHECK_CONTAINS(loom_err_message(err), cases[i].name);
        CHECK_CONTAINS(loom_err_message(err), cases[i].field);
        loom_err_free(err);
        if (inst)
            factory->destroy(inst);
    }
}

int main(void)
{
    factory = test_plugin_open(&plugin, RANDOM_PLUGIN, LOOM_SEARCH_FACTORY_ID);
    CHECK(factory != NULL);
    if (!factory)
        return CHECK_DONE();
    CHECK_STR_EQ(plugin.module->id, "random");
    CHECK(plugin.module->get_factory(LOOM_LOGGER_FACTORY_ID) == NULL);

    char *task = read_text(LOOM_TEST_DATA_DIR "/wmla/hpo-task-random.json");
    cJSON *root = task ? cJSON_Parse(task) : NULL;
    char *space = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(root, "hyperParams"));
    CHECK(space != NULL);
    if (space) {
        test_wmla_space(space);
        test_determinism_and_finish(space);
        test_save_load(space);
    }
    test_steps_and_spellings();
    test_invalid_spaces();

    free(space);
    cJSON_Delete(root);
    free(task);
    test_plugin_close(&plugin);
    return CHECK_DONE();
}

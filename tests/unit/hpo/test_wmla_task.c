/* The WMLA task parser: WMLA's example tasks become loom's typed space, and
 * every bad input the tuning issue lists is refused naming its field. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hpo/wmla_task.h"
#include "util/fs.h"
#include "util/num_text.h"

static hpo_task_spec parse_file(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", WMLA_DIR, name);
    size_t len = 0;
    char *text;
    hpo_task_spec t;
    loom_error *e = fs_read_file(path, 1 << 20, &text, &len);
    if (!e)
        e = wmla_task_parse(text, len, &t);
    CHECK_MSG(e == NULL, "%s: %s", name, loom_err_message(e));
    loom_err_free(e);
    free(text);
    if (e)
        memset(&t, 0, sizeof t);
    return t;
}

/* The message of the refusal, or "" when it parsed. */
static char *refusal(const char *json)
{
    static char msg[1024];
    hpo_task_spec t;
    loom_error *e = wmla_task_parse(json, strlen(json), &t);
    if (!e) {
        hpo_task_spec_free(&t);
        return "";
    }
    CHECK(loom_err_code(e) == LOOM_E_INVALID);
    loom_err_take(e, msg, sizeof msg);
    return msg;
}

/* fixedVal and the JSON a user reads: the shortest text that reads back
 * as the same double (15, 16 or 17 digits), never more. */
static void check_shortest_numbers(void)
{
    static const struct {
        double d;
        const char *text;
    } cases[] = {
        {0.1, "0.1"},
        {0.2, "0.2"},
        {0.1 + 0.2, "0.30000000000000004"},  /* needs 17 */
        {0.1 + 0.7, "0.7999999999999999"},   /* 16 suffice; %.17g prints 0.79999999999999993 */
        {1e-300, "1e-300"},
        {-2.5, "-2.5"},
        {123456789012345678.0, "1.2345678901234568e+17"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        loom_value v = {.type = LOOM_VALUE_DOUBLE, .d = cases[i].d};
        char text[64];
        hpo_value_format(&v, text, sizeof text);
        CHECK_STR_EQ(text, cases[i].text);
        CHECK(strtod(text, NULL) == cases[i].d);
    }
    cJSON *o = cJSON_Parse("{\"x\": 0.1, \"a\": [0.8, 3, {\"y\": 0.7999999999999999}], \"s\": \"0.1\"}");
    num_text_json_shortest(o);
    char *text = cJSON_PrintUnformatted(o);
    CHECK_STR_EQ(text, "{\"x\":0.1,\"a\":[0.8,3,{\"y\":0.7999999999999999}],\"s\":\"0.1\"}");
    free(text);
    cJSON_Delete(o);
}

#define HEAD "{\"hpoName\":\"t\",\"modelSpec\":{\"args\":\"--exec-start command\"},"
#define ALGO "\"algoDef\":{\"algorithm\":\"Random\",\"objectiveMetric\":\"loss\"},"

int main(void)
{
    check_shortest_numbers();
    hpo_task_spec t = parse_file("hpo-task-random.json");
    CHECK_STR_EQ(t.name, "fmnist-lr-random");
    CHECK(t.param_count == 3 && t.max_jobs == 8 && t.max_parallel == 2 && t.max_run_time_s == 600);
    CHECK(t.has_seed && t.seed == 7 && !t.maximize);
    CHECK(t.params[0].kind == LOOM_PARAM_RANGE && t.params[0].log_base == 10 &&
          t.params[0].low == -4 && t.params[0].high == -1);
    CHECK(t.params[1].kind == LOOM_PARAM_CHOICE && t.params[1].choice_count == 3 &&
          t.params[1].choice_ints[2] == 512);
    CHECK(t.params[2].type == LOOM_VALUE_STRING && !strcmp(t.params[2].choice_strings[1], "adam"));
    hpo_task_spec_free(&t);
    t = parse_file("hpo-task-tpe.json");
    CHECK(t.maximize && t.params[1].type == LOOM_VALUE_INT && t.params[1].step == 16);
    CHECK(t.option_count == 5 && !strcmp(t.options[1].name, "WarmUp"));
    hpo_task_spec_free(&t);
    t = parse_file("hpo-task-hyperband.json");
    CHECK_STR_EQ(t.resource_name, "epochs");
    hpo_task_spec_free(&t);
    t = parse_file("hpo-task-grid.json");
    CHECK(t.experiment_count == 3 && t.param_count == 2);
    CHECK(t.params[1].choice_count == 2); /* hidden: 256, 512 */
    CHECK(t.experiments[2][1].i == 512 && fabs(t.experiments[1][0].d - 0.05) < 1e-12);
    hpo_task_spec_free(&t);

    /* discreteStrVal is accepted beside WMLA's discreateStrVal. */
    CHECK_STR_EQ(refusal(HEAD ALGO "\"hyperParams\":[{\"name\":\"o\",\"type\":\"Discrete\","
                         "\"dataType\":\"STR\",\"discreteStrVal\":[\"a\"]}]}"), "");
    CHECK_CONTAINS(refusal(HEAD "\"algoDef\":{\"objectiveMetric\":\"loss\"},\"hyperParams\":[]}"),
                   "algoDef.algorithm");
    CHECK_CONTAINS(refusal(HEAD ALGO "\"hyperParams\":[{\"name\":\"x\",\"type\":\"Range\","
                           "\"dataType\":\"DOUBLE\",\"minDbVal\":2,\"maxDbVal\":1}]}"),
                   "hyperParams[0] (x): minDbVal 2 > maxDbVal 1");
    CHECK_CONTAINS(refusal(HEAD ALGO "\"hyperParams\":[{\"name\":\"x\",\"type\":\"Range\","
                           "\"dataType\":\"DOUBLE\",\"minDbVal\":1,\"maxDbVal\":2,\"power\":\"1\"}]}"),
                   "power: expected a number > 1");
    CHECK_CONTAINS(refusal(HEAD ALGO "\"hyperParams\":[{\"name\":\"x\",\"type\":\"Range\","
                           "\"dataType\":\"DOUBLE\",\"minDbVal\":1,\"maxDbVal\":2,\"power\":\"0.5\"}]}"),
                   "power: expected a number > 1");
    CHECK_CONTAINS(refusal(HEAD ALGO "\"hyperParams\":[{\"name\":\"x\",\"type\":\"Range\","
                           "\"dataType\":\"INT\",\"minIntVal\":1,\"maxIntVal\":2,\"power\":-10}]}"),
                   "power: expected a number > 1");
    CHECK_CONTAINS(refusal(HEAD ALGO "\"hyperParams\":[{\"name\":\"x\",\"type\":\"Discrete\","
                           "\"dataType\":\"INT\",\"discreteIntVal\":[]}]}"),
                   "non-empty array discreteIntVal");
    CHECK_CONTAINS(refusal(HEAD ALGO "\"hyperParams\":[{\"name\":\"x\",\"type\":\"Range\","
                           "\"dataType\":\"STR\"}]}"),
                   "a Range cannot be STR");
    CHECK_CONTAINS(refusal(HEAD ALGO "\"hyperParams\":[{\"name\":\"x\",\"type\":\"Discrete\","
                           "\"dataType\":\"INT\",\"discreteIntVal\":[1]},{\"name\":\"x\","
                           "\"type\":\"Discrete\",\"dataType\":\"INT\",\"discreteIntVal\":[2]}]}"),
                   "the name 'x' is given twice");
    CHECK_CONTAINS(refusal(HEAD "\"algoDef\":{\"algorithm\":\"Random\",\"objectiveMetric\":\"loss\","
                           "\"algoParams\":[{\"name\":\"eta\",\"value\":3}]},\"hyperParams\":"
                           "[{\"name\":\"x\",\"type\":\"Discrete\",\"dataType\":\"INT\","
                           "\"discreteIntVal\":[1]}]}"),
                   "algoParams[0] (eta): 'value' must be a string");
    CHECK_CONTAINS(refusal("[1]"), "expected a JSON object");
    /* The name becomes a folder under the host's home: ".." must not. */
    CHECK_CONTAINS(refusal("{\"hpoName\":\"..\",\"modelSpec\":{\"args\":\"x\"}," ALGO
                           "\"hyperParams\":[]}"),
                   "hpoName: expected");
    CHECK_CONTAINS(refusal("{\"hpoName\":\"a/b\",\"modelSpec\":{\"args\":\"x\"}," ALGO
                           "\"hyperParams\":[]}"),
                   "hpoName: expected");
    CHECK_CONTAINS(refusal(HEAD ALGO "\"hyperParams\":[{\"name\":\"x\",\"type\":\"Range\","
                           "\"dataType\":\"INT\",\"minIntVal\":1.5,\"maxIntVal\":3}]}"),
                   "must be integers");
    return CHECK_DONE();
}

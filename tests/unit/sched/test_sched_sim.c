/*
 * tests/unit/sched/test_sched_sim.c - the trace simulator on the small
 * traces in tests/data/traces/, with figures worked out by hand, and its
 * errors for malformed traces.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <unistd.h>

#include "sched/sim.h"
#include "sched_test_util.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-6)
#define CHECK_NEAR(a, b) CHECK_MSG(NEAR(a, b), "%s = %.9g, expected %.9g", #a, (a), (double)(b))

static sim_trace *load(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", LOOM_TRACE_DIR, name);
    sim_trace *t = NULL;
    loom_error *err = sim_trace_load(path, &t);
    CHECK_MSG(err == NULL, "%s", loom_err_message(err));
    loom_err_free(err);
    return t;
}

static sim_result run(const sim_trace *t, int32_t policy)
{
    sim_result r;
    loom_error *err = sim_run(t, policy, &r);
    CHECK_MSG(err == NULL, "%s", loom_err_message(err));
    loom_err_free(err);
    return r;
}

static void test_ab(void)
{
    /* A alone on 4 until 50 (200 done), then 2 + 2: B's 100 takes 50 s;
     * A back on 4 finishes its last 100 at 125. FIFO: A 0-100, B 100-125. */
    sim_trace *t = load("ab.json");
    if (!t)
        return;
    sim_result fair = run(t, SIM_POLICY_FAIR);
    CHECK_NEAR(fair.avg_jct, 87.5);
    CHECK_NEAR(fair.p95_jct, 125);
    CHECK_NEAR(fair.makespan, 125);
    CHECK_NEAR(fair.avg_queueing, 0);
    CHECK_NEAR(fair.utilisation, 1);
    CHECK(isnan(fair.utilisation_waiting));
    CHECK(fair.resizes == 2);
    sim_result fifo = run(t, SIM_POLICY_FIFO);
    CHECK_NEAR(fifo.avg_jct, 87.5);
    CHECK_NEAR(fifo.p95_jct, 100);
    CHECK_NEAR(fifo.avg_queueing, 25);
    CHECK_NEAR(fifo.utilisation_waiting, 1);
    CHECK(fifo.resizes == 0);
    sim_trace_free(t);
}

static void test_amdahl(void)
{
    /* Serial fraction 0.5: 2 devices give 4/3, 4 give 1.6. Elastic: both
     * on 2 end at 75. FIFO: 62.5, then 125. */
    sim_trace *t = load("amdahl.json");
    if (!t)
        return;
    CHECK(t->jobs[0].scaling == SIM_SCALING_AMDAHL);
    CHECK_NEAR(sim_speedup(&t->jobs[0], 4), 1.6);
    sim_result fair = run(t, SIM_POLICY_FAIR);
    sim_result fifo = run(t, SIM_POLICY_FIFO);
    CHECK_NEAR(fair.avg_jct, 75);
    CHECK_NEAR(fair.makespan, 75);
    CHECK_NEAR(fifo.avg_jct, 93.75);
    CHECK_NEAR(fifo.makespan, 125);
    CHECK_NEAR(fifo.avg_queueing, 31.25);
    CHECK_NEAR(1 - fair.avg_jct / fifo.avg_jct, 0.2);
    sim_trace_free(t);
}

static void test_priority(void)
{
    /* high arrives at 20: priority gives it 3 (low keeps 1), it ends at
     * 20 + 200/3; fair share gives 2 + 2, it ends at 120. low ends at 150
     * either way. FIFO: low 0-100, high 100-150. */
    sim_trace *t = load("priority.json");
    if (!t)
        return;
    sim_result prio = run(t, SIM_POLICY_PRIORITY);
    sim_result fair = run(t, SIM_POLICY_FAIR);
    sim_result fifo = run(t, SIM_POLICY_FIFO);
    CHECK_NEAR(prio.avg_jct, (200.0 / 3 + 150) / 2);
    CHECK_NEAR(prio.avg_jct_top, 200.0 / 3);
    CHECK_NEAR(prio.makespan, 150);
    CHECK_NEAR(fair.avg_jct, 125);
    CHECK_NEAR(fair.avg_jct_top, 100);
    CHECK_NEAR(fair.makespan, 150);
    CHECK_NEAR(fifo.avg_jct, 115);
    CHECK_NEAR(fifo.p95_jct, 130);
    CHECK_NEAR(fifo.avg_queueing, 40);
    sim_trace_free(t);
}

static void test_plans(void)
{
    /* Weights 3:1 give 6 + 2; b1 ends at 50, a1 then runs on 8 and ends at
     * 87.5. FIFO: a1 on 8 until 75, b1 on 4 (its plan's cap) until 100. */
    sim_trace *t = load("plans.json");
    if (!t)
        return;
    sim_result fair = run(t, SIM_POLICY_FAIR);
    sim_result fifo = run(t, SIM_POLICY_FIFO);
    CHECK_NEAR(fair.avg_jct, (87.5 + 50) / 2);
    CHECK_NEAR(fair.makespan, 87.5);
    CHECK_NEAR(fifo.avg_jct, 87.5);
    CHECK_NEAR(fifo.makespan, 100);
    CHECK_NEAR(fifo.utilisation, (8 * 75 + 4 * 25) / (8.0 * 100));
    sim_trace_free(t);
}

static void test_hysteresis(void)
{
    /* B takes the idle device at 5; the even split waits for B's pin (65).
     * A: 195 done by 65, ends at 117.5; B grows into A's devices at once and
     * ends at 176.25. */
    sim_trace *t = load("hysteresis.json");
    if (!t)
        return;
    sim_result fair = run(t, SIM_POLICY_FAIR);
    CHECK_NEAR(fair.avg_jct, (117.5 + 171.25) / 2);
    CHECK_NEAR(fair.makespan, 176.25);
    CHECK(fair.resizes == 3);
    /* The same trace without hysteresis: 2 + 2 from 5, A ends at 147.5. */
    t->hysteresis = 0;
    fair = run(t, SIM_POLICY_FAIR);
    CHECK_NEAR(fair.avg_jct, (147.5 + 171.25) / 2);
    sim_trace_free(t);
}

static void expect_parse_error(const char *json, const char *a, const char *b)
{
    sim_trace *t = NULL;
    loom_error *err = sim_trace_parse(json, "t.json", &t);
    CHECK_MSG(err != NULL, "trace accepted: %s", json);
    CHECK(t == NULL);
    if (!err)
        return;
    CHECK_CONTAINS(loom_err_message(err), "t.json");
    CHECK_CONTAINS(loom_err_message(err), a);
    if (b)
        CHECK_CONTAINS(loom_err_message(err), b);
    loom_err_free(err);
}

static void test_bad_traces(void)
{
    expect_parse_error("{\"devices\": 4, \"jobs\": [", "not valid JSON", NULL);
    expect_parse_error("{\"devices\": 0, \"jobs\": []}", "devices", NULL);
    expect_parse_error("{\"devices\": 4}", "jobs", "non-empty array");
    expect_parse_error("{\"devices\": 4, \"jobs\": [{\"arrival\": 0, \"max_devices\": 1, "
                       "\"work\": 5}, {\"arrival\": 1, \"max_devices\": 1}]}",
                       "jobs[1].work", "missing");
    expect_parse_error("{\"devices\": 4, \"jobs\": [{\"arrival\": 0, \"max_devices\": 1, "
                       "\"work\": -3}]}", "jobs[0].work", "expected a number");
    expect_parse_error("{\"devices\": 4, \"jobs\": [{\"arrival\": \"soon\", "
                       "\"max_devices\": 1, \"work\": 3}]}", "jobs[0].arrival", NULL);
    expect_parse_error("{\"devices\": 4, \"jobs\": [{\"arrival\": 0, \"max_devices\": 2.5, "
                       "\"work\": 3}]}", "jobs[0].max_devices", "an integer in 1..2147483647");
    expect_parse_error("{\"devices\": 4, \"jobs\": [{\"arrival\": 0, \"max_devices\": 8, "
                       "\"min_devices\": 6, \"work\": 3}]}", "jobs[0].min_devices",
                       "4 devices");
    expect_parse_error("{\"devices\": 4, \"jobs\": [{\"arrival\": 0, \"max_devices\": 8, "
                       "\"elastic\": false, \"work\": 3}]}", "jobs[0].max_devices",
                       "fixed");
    expect_parse_error("{\"devices\": 4, \"jobs\": [{\"arrival\": 0, \"max_devices\": 1, "
                       "\"work\": 3, \"scaling\": {\"type\": \"magic\"}}]}",
                       "jobs[0].scaling.type", "magic");
    expect_parse_error("{\"devices\": 4, \"jobs\": [{\"arrival\": 0, \"max_devices\": 1, "
                       "\"work\": 3, \"scaling\": {\"type\": \"amdahl\"}}]}",
                       "jobs[0].scaling.serial_fraction", NULL);
    expect_parse_error("{\"devices\": 4, \"jobs\": [{\"arrival\": 0, \"max_devices\": 2, "
                       "\"work\": 3, \"scaling\": [1, 0]}]}", "jobs[0].scaling[1]", NULL);
    expect_parse_error("{\"devices\": 4, \"jobs\": [{\"id\": \"x\", \"arrival\": 0, "
                       "\"max_devices\": 1, \"work\": 3}, {\"id\": \"x\", \"arrival\": 0, "
                       "\"max_devices\": 1, \"work\": 3}]}", "jobs[1].id", "jobs[0]");
    expect_parse_error("{\"devices\": 4, \"plans\": [{\"path\": \"/a\", \"parent\": \"/b\"},"
                       "{\"path\": \"/b\", \"parent\": \"/a\"}], \"jobs\": [{\"arrival\": 0, "
                       "\"max_devices\": 1, \"work\": 3}]}", "plans", "cycle");
    expect_parse_error("{\"devices\": 4, \"plans\": [{\"path\": \"/a\", \"weight\": 0}], "
                       "\"jobs\": [{\"arrival\": 0, \"max_devices\": 1, \"work\": 3}]}",
                       "'/a'", "weight");
    expect_parse_error("{\"devices\": 4, \"jobs\": [{\"arrival\": 0, \"max_devices\": 1, "
                       "\"work\": 3, \"plan\": \"/ghost\"}]}", "jobs[0]", "'/ghost'");
    expect_parse_error("{\"devices\": 4, \"plans\": [{\"path\": \"/c\", \"cap_devices\": 1}],"
                       " \"jobs\": [{\"arrival\": 0, \"max_devices\": 4, \"min_devices\": 2,"
                       " \"work\": 3, \"plan\": \"/c\"}]}", "jobs[0]", "cap_devices 1");

    /* Unknown keys, at every level, and text after the trace. */
    expect_parse_error("{\"devices\": 4, \"hysteresys\": 3, \"jobs\": [{\"arrival\": 0, "
                       "\"max_devices\": 1, \"work\": 3}]}", "unknown key 'hysteresys'",
                       "hysteresis");
    expect_parse_error("{\"devices\": 4, \"jobs\": [{\"arrival\": 0, \"max_device\": 1, "
                       "\"work\": 3}]}", "jobs[0]: unknown key 'max_device'", NULL);
    expect_parse_error("{\"devices\": 4, \"plans\": [{\"path\": \"/a\", \"share\": 2}], "
                       "\"jobs\": [{\"arrival\": 0, \"max_devices\": 1, \"work\": 3}]}",
                       "plans[0]: unknown key 'share'", "weight");
    expect_parse_error("{\"devices\": 4, \"jobs\": [{\"arrival\": 0, \"max_devices\": 1, "
                       "\"work\": 3, \"scaling\": {\"type\": \"amdahl\", "
                       "\"serial_fraction\": 0.1, \"serial\": 1}}]}",
                       "jobs[0].scaling: unknown key 'serial'", NULL);
    expect_parse_error("{\"devices\": 4, \"jobs\": [{\"arrival\": 0, \"max_devices\": 1, "
                       "\"work\": 3}]} {\"devices\": 2}", "unexpected text after the trace",
                       "byte 70");

    sim_trace *t = NULL;
    loom_error *err = sim_trace_load(LOOM_TRACE_DIR "/does-not-exist.json", &t);
    CHECK(err && loom_err_code(err) == LOOM_ERR_NOT_FOUND);
    CHECK_CONTAINS(loom_err_message(err), "does-not-exist.json");
    loom_err_free(err);
}

/* A fixed 4-device job waits behind an elastic job that will not shrink
 * below 3 of the 4 devices; a 1-device job of a third plan arriving later
 * starts at once (it ends long before the elastic job), and the fixed job
 * still starts when the elastic one ends. */
static void test_rigid_behind_elastic(void)
{
    const char *json =
        "{\"devices\": 4, \"plans\": [{\"path\": \"/a\"}, {\"path\": \"/b\"}, "
        "{\"path\": \"/c\"}], \"jobs\": ["
        "{\"id\": \"E\", \"arrival\": 0, \"min_devices\": 3, \"max_devices\": 4, "
        "\"work\": 4032, \"plan\": \"/a\"},"
        "{\"id\": \"R\", \"arrival\": 1, \"max_devices\": 4, \"elastic\": false, "
        "\"work\": 40, \"plan\": \"/b\"},"
        "{\"id\": \"S\", \"arrival\": 2, \"max_devices\": 1, \"elastic\": false, "
        "\"work\": 10, \"plan\": \"/c\"}]}";
    sim_trace *t = NULL;
    loom_error *err = sim_trace_parse(json, "rigid.json", &t);
    CHECK_MSG(err == NULL, "%s", loom_err_message(err));
    loom_err_free(err);
    if (!t)
        return;
    /* E: 8 done by t=2, 3 devices while S runs (2..12), then 4 again:
     * ends at 12 + (4032 - 8 - 30) / 4 = 1010.5, when R starts. */
    sim_result fair = run(t, SIM_POLICY_FAIR);
    double s_wait = 3 * fair.avg_queueing - fair.max_wait;
    CHECK_MSG(s_wait < 1e-6, "S waited %g s", s_wait);
    CHECK_NEAR(fair.max_wait, 1009.5);
    /* FIFO with backfilling runs E on all 4: S can only follow R. */
    sim_result bf = run(t, SIM_POLICY_BACKFILL);
    CHECK_NEAR(bf.max_wait, 1016);
    sim_trace_free(t);
}

/* `loom sim --json` (the CLI's global flag arrives as `json`): one result
 * per policy, the backfill baseline among them. */
static void test_sim_json(void)
{
    char *args[] = {"sim", LOOM_TRACE_DIR "/ab.json", NULL};
    FILE *out = tmpfile();
    CHECK(out != NULL);
    if (!out)
        return;
    fflush(stdout);
    int saved = dup(1);
    dup2(fileno(out), 1);
    int rc = sim_cli(2, args, true);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    CHECK(rc == 0);
    char buf[16384];
    rewind(out);
    size_t n = fread(buf, 1, sizeof buf - 1, out);
    buf[n] = '\0';
    fclose(out);
    cJSON *doc = cJSON_Parse(buf);
    CHECK_MSG(doc != NULL, "not JSON: %.200s", buf);
    const cJSON *results = cJSON_GetObjectItem(doc, "results");
    CHECK(cJSON_GetArraySize(results) == SIM_POLICY_COUNT);
    const cJSON *last = cJSON_GetArrayItem(results, SIM_POLICY_BACKFILL);
    CHECK_STR_EQ(cJSON_GetStringValue(cJSON_GetObjectItem(last, "policy")), "backfill");
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(last, "p99_queueing_delay")));
    CHECK(cJSON_IsNumber(cJSON_GetObjectItem(last, "max_wait")));
    CHECK(cJSON_GetObjectItem(doc, "avg_jct_reduction_vs_backfill") != NULL);
    cJSON_Delete(doc);
}

static void test_sim_main(void)
{
    /* Usage errors are exit status 2; a bad file is 1. Output goes to
     * stdout, so only the statuses are checked here. */
    char *no_args[] = {"sim", NULL};
    CHECK(sim_main(1, no_args) == 2);
    char *bad_flag[] = {"sim", "--bogus", NULL};
    CHECK(sim_main(2, bad_flag) == 2);
    char *missing[] = {"sim", LOOM_TRACE_DIR "/does-not-exist.json", NULL};
    CHECK(sim_main(2, missing) == 1);
    char *good[] = {"sim", "--json", LOOM_TRACE_DIR "/ab.json", NULL};
    CHECK(sim_main(3, good) == 0);
}

int main(void)
{
    test_ab();
    test_amdahl();
    test_priority();
    test_plans();
    test_hysteresis();
    test_bad_traces();
    test_rigid_behind_elastic();
    test_sim_json();
    test_sim_main();
    return CHECK_DONE();
}

/*
 * tests/unit/sched/test_sched_policy.c - the scheduler's division rules:
 * the elastic A/B scenario, share weights, caps and guaranteed minimums,
 * leftover redistribution, priority preemption down to the minimum, fixed
 * jobs in a queue, and hysteresis.
 */
#include "sched_test_util.h"

static void test_ab_scenario(void)
{
    /* 4 devices; A (max 4) alone on 4; B (max 4) arrives: 2 + 2; B ends:
     * A is back on 4, on the same devices it kept. */
    sched *s = make_sched(4, 0);
    CHECK(submit(s, "A", NULL, 1, 4, 0) == 0);
    const sched_decision *d;
    size_t n = sched_plan(s, 0, &d);
    CHECK(n == 1);
    CHECK_STR_EQ(d[0].job_id, "A");
    CHECK(d[0].old_count == 0 && d[0].new_count == 4 && d[0].n_added == 4);
    CHECK(held(s, "A") == 4);

    CHECK(submit(s, "B", NULL, 1, 4, 10) == 0);
    n = sched_plan(s, 10, &d);
    CHECK(n == 2);
    /* The shrink comes first, and releases what B then takes. */
    CHECK_STR_EQ(d[0].job_id, "A");
    CHECK(d[0].old_count == 4 && d[0].new_count == 2 && d[0].n_released == 2);
    CHECK_STR_EQ(d[1].job_id, "B");
    CHECK(d[1].old_count == 0 && d[1].new_count == 2 && d[1].n_added == 2);
    CHECK(d[1].added[0] == 2 && d[1].added[1] == 3);
    CHECK(held(s, "A") == 2 && held(s, "B") == 2);
    sched_job_info a;
    CHECK(sched_get_job(s, "A", &a) && a.devices[0] == 0 && a.devices[1] == 1);
    CHECK(books_consistent(s));

    /* Nothing changed: no decisions. */
    CHECK(plan_now(s, 11) == 0);

    loom_error *err = sched_end(s, "B");
    CHECK(err == NULL);
    n = sched_plan(s, 20, &d);
    CHECK(n == 1);
    CHECK(d[0].old_count == 2 && d[0].new_count == 4 && d[0].n_added == 2);
    CHECK(held(s, "A") == 4);
    CHECK(sched_get_job(s, "A", &a) && a.devices[0] == 0 && a.devices[1] == 1);
    CHECK(books_consistent(s));

    err = sched_end(s, "nope");
    CHECK(err && loom_err_code(err) == LOOM_ERR_NOT_FOUND);
    CHECK_CONTAINS(loom_err_message(err), "nope");
    loom_err_free(err);
    sched_free(s);
}

static void test_weights(void)
{
    sched *s = make_sched(8, 0);
    add_plan(s, "/p1", 3, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/p2", 1, 0, 0, SCHED_POLICY_FAIR);
    CHECK(submit(s, "a", "/p1", 1, 8, 0) == 0);
    CHECK(submit(s, "b", "/p2", 1, 8, 0) == 0);
    plan_now(s, 0);
    CHECK(held(s, "a") == 6 && held(s, "b") == 2);

    /* A second job in /p1 shares /p1's six evenly; /p2 keeps its quarter. */
    CHECK(submit(s, "a2", "/p1", 1, 8, 1) == 0);
    plan_now(s, 1);
    CHECK(held(s, "a") == 3 && held(s, "a2") == 3 && held(s, "b") == 2);
    CHECK(books_consistent(s));
    sched_free(s);

    /* Nested plans: /proj splits its half between /proj/train and
     * /proj/infer; a job directly in /proj counts as one more child. */
    s = make_sched(12, 0);
    add_plan(s, "/proj", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/proj/train", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/proj/infer", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/other", 1, 0, 0, SCHED_POLICY_FAIR);
    CHECK(submit(s, "t", "/proj/train", 1, 12, 0) == 0);
    CHECK(submit(s, "i", "/proj/infer", 1, 12, 0) == 0);
    CHECK(submit(s, "o", "/other", 1, 12, 0) == 0);
    plan_now(s, 0);
    CHECK(held(s, "o") == 6 && held(s, "t") == 3 && held(s, "i") == 3);
    CHECK(submit(s, "own", "/proj", 1, 12, 1) == 0);
    plan_now(s, 1);
    CHECK(held(s, "o") == 6 && held(s, "t") == 2 && held(s, "i") == 2 &&
          held(s, "own") == 2);
    CHECK(books_consistent(s));
    sched_free(s);
}

static void test_caps_and_minimums(void)
{
    /* A cap holds even against a large weight; the rest goes elsewhere. */
    sched *s = make_sched(8, 0);
    add_plan(s, "/capped", 10, 0, 2, SCHED_POLICY_FAIR);
    add_plan(s, "/other", 1, 0, 0, SCHED_POLICY_FAIR);
    CHECK(submit(s, "c", "/capped", 1, 8, 0) == 0);
    CHECK(submit(s, "o", "/other", 1, 8, 0) == 0);
    plan_now(s, 0);
    CHECK(held(s, "c") == 2 && held(s, "o") == 6);
    /* A second job in the capped plan fits its minimum under the cap. */
    CHECK(submit(s, "c2", "/capped", 1, 8, 1) == 0);
    plan_now(s, 1);
    CHECK(held(s, "c") == 1 && held(s, "c2") == 1 && held(s, "o") == 6);
    /* A third does not: it waits, and does not block other plans. */
    CHECK(submit(s, "c3", "/capped", 1, 8, 2) == 0);
    CHECK(submit(s, "o2", "/other", 1, 8, 2) == 0);
    plan_now(s, 2);
    CHECK(state_of(s, "c3") == SCHED_JOB_QUEUED);
    CHECK(held(s, "o") == 3 && held(s, "o2") == 3);
    CHECK(books_consistent(s));
    sched_free(s);

    /* A guaranteed minimum beats the weights when the plan can use it. */
    s = make_sched(10, 0);
    add_plan(s, "/big", 9, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/small", 1, 3, 0, SCHED_POLICY_FAIR);
    CHECK(submit(s, "b", "/big", 1, 10, 0) == 0);
    CHECK(submit(s, "s", "/small", 1, 10, 0) == 0);
    plan_now(s, 0);
    CHECK(held(s, "s") == 3 && held(s, "b") == 7);
    sched_free(s);

    /* A job's minimum beats an even split. */
    s = make_sched(4, 0);
    CHECK(submit(s, "m3", NULL, 3, 4, 0) == 0);
    CHECK(submit(s, "m1", NULL, 1, 4, 0) == 0);
    plan_now(s, 0);
    CHECK(held(s, "m3") == 3 && held(s, "m1") == 1);
    sched_free(s);
}

static void test_leftover(void)
{
    /* Equal weights, but /a's only job can use 2: /b takes the rest. */
    sched *s = make_sched(8, 0);
    add_plan(s, "/a", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/b", 1, 0, 0, SCHED_POLICY_FAIR);
    CHECK(submit(s, "small", "/a", 1, 2, 0) == 0);
    CHECK(submit(s, "big", "/b", 1, 8, 0) == 0);
    plan_now(s, 0);
    CHECK(held(s, "small") == 2 && held(s, "big") == 6);
    CHECK(sched_free_device_count(s) == 0);
    sched_free(s);

    /* Inside a plan: two jobs of max 1 and one that takes what is left. */
    s = make_sched(8, 0);
    CHECK(submit(s, "x", NULL, 1, 1, 0) == 0);
    CHECK(submit(s, "y", NULL, 1, 1, 0) == 0);
    CHECK(submit(s, "z", NULL, 1, 10, 0) == 0);
    plan_now(s, 0);
    CHECK(held(s, "x") == 1 && held(s, "y") == 1 && held(s, "z") == 6);
    CHECK(sched_free_device_count(s) == 0);

    /* 3 jobs on 8: 3+3+2, the odd device staying with whoever holds it. */
    sched_end(s, "x");
    sched_end(s, "y");
    CHECK(submit(s, "w", NULL, 1, 8, 1) == 0);
    CHECK(submit(s, "v", NULL, 1, 8, 1) == 0);
    plan_now(s, 1);
    CHECK(held(s, "z") == 3 && held(s, "w") == 3 && held(s, "v") == 2);
    CHECK(books_consistent(s));
    sched_free(s);
}

static void test_priority(void)
{
    sched *s = make_sched(4, 0);
    sched_plan_spec root;
    CHECK(sched_get_plan(s, "/", &root));
    root.policy = SCHED_POLICY_PRIORITY;
    loom_error *err = sched_update_plan(s, &root);
    CHECK(err == NULL);
    loom_err_free(err);

    CHECK(submit_full(s, "low", NULL, true, 1, 4, 0, 0) == 0);
    plan_now(s, 0);
    CHECK(held(s, "low") == 4);

    /* A high-priority arrival shrinks the low one to its minimum, not 0. */
    CHECK(submit_full(s, "high", NULL, true, 1, 4, 10, 1) == 0);
    plan_now(s, 1);
    CHECK(held(s, "high") == 3 && held(s, "low") == 1);

    /* Equal priorities share fairly; the low job still keeps one. */
    CHECK(submit_full(s, "high2", NULL, true, 1, 4, 10, 2) == 0);
    plan_now(s, 2);
    CHECK(held(s, "high") == 2 && held(s, "high2") == 1 && held(s, "low") == 1);
    CHECK(submit_full(s, "high3", NULL, true, 1, 4, 10, 3) == 0);
    plan_now(s, 3);
    CHECK(held(s, "high") == 1 && held(s, "high2") == 1 && held(s, "high3") == 1 &&
          held(s, "low") == 1);

    /* No room left at the minimums: the next one waits; nobody is killed. */
    CHECK(submit_full(s, "high4", NULL, true, 1, 4, 20, 4) == 0);
    plan_now(s, 4);
    CHECK(state_of(s, "high4") == SCHED_JOB_QUEUED);
    CHECK(state_of(s, "low") == SCHED_JOB_RUNNING && held(s, "low") == 1);

    /* When a high job ends, the waiting highest priority starts first. */
    sched_end(s, "high3");
    plan_now(s, 5);
    CHECK(held(s, "high4") == 1 && held(s, "low") == 1);
    sched_end(s, "high");
    sched_end(s, "high2");
    plan_now(s, 6);
    CHECK(held(s, "high4") == 3 && held(s, "low") == 1);
    CHECK(books_consistent(s));
    sched_free(s);
}

static void test_fixed_queue(void)
{
    sched *s = make_sched(4, 0);
    CHECK(submit_full(s, "f3", NULL, false, 0, 3, 0, 0) == 0);
    CHECK(submit_full(s, "f2", NULL, false, 0, 2, 0, 0) == 0);
    CHECK(submit_full(s, "f1", NULL, false, 0, 1, 0, 0) == 0);
    plan_now(s, 0);
    CHECK(held(s, "f3") == 3);
    /* f2 does not fit; f1 does and passes it (backfilling): nothing dates
     * f2's reservation, so smaller jobs pass for reservation_after. */
    CHECK(state_of(s, "f2") == SCHED_JOB_QUEUED);
    CHECK(held(s, "f1") == 1);
    CHECK(sched_queued_count(s) == 1);

    sched_end(s, "f3");
    const sched_decision *d;
    size_t n = sched_plan(s, 5, &d);
    CHECK(n == 1);
    CHECK(held(s, "f2") == 2 && held(s, "f1") == 1);
    sched_job_info info;
    CHECK(sched_get_job(s, "f2", &info) && info.started == 5 && info.submitted == 0);

    /* An elastic job takes the leftover, and gives it back at its
     * minimum when a fixed job needs it. */
    CHECK(submit(s, "e", NULL, 1, 4, 6) == 0);
    plan_now(s, 6);
    CHECK(held(s, "e") == 1);
    sched_end(s, "f2");
    plan_now(s, 7);
    CHECK(held(s, "e") == 3 && held(s, "f1") == 1);
    CHECK(submit_full(s, "f2b", NULL, false, 0, 2, 0, 8) == 0);
    plan_now(s, 8);
    CHECK(held(s, "f2b") == 2 && held(s, "e") == 1 && held(s, "f1") == 1);
    CHECK(books_consistent(s));
    sched_free(s);
}

static void test_hysteresis(void)
{
    /* No resize inside the interval for a rebalancing. */
    sched *s = make_sched(8, 60);
    add_plan(s, "/x", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/y", 1, 0, 0, SCHED_POLICY_FAIR);
    CHECK(submit(s, "X", "/x", 1, 8, 0) == 0);
    plan_now(s, 0);
    CHECK(held(s, "X") == 8);
    /* Y waits for room, so X's pin gives way at once. */
    CHECK(submit(s, "Y", "/y", 1, 8, 10) == 0);
    plan_now(s, 10);
    CHECK(held(s, "X") == 4 && held(s, "Y") == 4);

    sched_plan_spec x;
    CHECK(sched_get_plan(s, "/x", &x));
    x.weight = 3;
    loom_error *err = sched_update_plan(s, &x);
    CHECK(err == NULL);
    loom_err_free(err);
    CHECK(plan_now(s, 20) == 0);
    CHECK(held(s, "X") == 4 && held(s, "Y") == 4);
    CHECK(sched_next_review(s) == 70);
    CHECK(plan_now(s, 69.5) == 0);
    CHECK(plan_now(s, 70) == 2);
    CHECK(held(s, "X") == 6 && held(s, "Y") == 2);

    /* A pin never leaves a device idle: X grows as soon as Y ends. */
    sched_end(s, "Y");
    CHECK(plan_now(s, 75) == 1);
    CHECK(held(s, "X") == 8);
    sched_free(s);

    /* A newcomer takes the idle device; the even split waits for the pin. */
    s = make_sched(4, 60);
    CHECK(submit(s, "A", NULL, 1, 3, 0) == 0);
    plan_now(s, 0);
    CHECK(submit(s, "B", NULL, 1, 4, 5) == 0);
    plan_now(s, 5);
    CHECK(held(s, "A") == 3 && held(s, "B") == 1);
    CHECK(sched_next_review(s) == 60);
    /* At 60 A is free to move, but B, started at 5, is pinned until 65. */
    CHECK(plan_now(s, 60) == 0);
    CHECK(sched_next_review(s) == 65);
    CHECK(plan_now(s, 65) == 2);
    CHECK(held(s, "A") == 2 && held(s, "B") == 2);
    sched_free(s);

    /* Forced inside the interval: a job below its minimum (after a restore)
     * takes devices from a pinned one. */
    s = make_sched(4, 60);
    int32_t p_slots[] = {0, 1, 2}, r_slots[] = {3};
    sched_restore_entry entries[] = {
        {.job = {.id = "P", .elastic = true, .min_devices = 1, .max_devices = 4},
         .devices = p_slots, .n_devices = 3, .last_resize = 99},
        {.job = {.id = "R", .elastic = true, .min_devices = 2, .max_devices = 4},
         .devices = r_slots, .n_devices = 1, .last_resize = 99},
    };
    err = sched_restore(s, entries, 2);
    CHECK(err == NULL);
    loom_err_free(err);
    CHECK(plan_now(s, 100) == 2);
    CHECK(held(s, "P") == 2 && held(s, "R") == 2);
    CHECK(books_consistent(s));
    sched_free(s);
}

static void test_consumer_kinds(void)
{
    /* Training jobs, HPO experiments and inference kernel instances draw on
     * the same devices through the same plans. */
    sched *s = make_sched(4, 0);
    add_plan(s, "/p", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/p/training", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/p/inference", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/p/tuning", 1, 0, 0, SCHED_POLICY_FAIR);
    sched_job_spec train = {.id = "train", .plan = "/p/training",
                            .kind = SCHED_JOB_TRAINING, .elastic = true,
                            .max_devices = 4};
    sched_job_spec kernel = {.id = "kernel-0", .plan = "/p/inference",
                             .kind = SCHED_JOB_KERNEL, .max_devices = 1, .tag = 77};
    sched_job_spec trial = {.id = "exp-1", .plan = "/p/tuning",
                            .kind = SCHED_JOB_EXPERIMENT, .elastic = true,
                            .max_devices = 1};
    CHECK(sched_submit(s, &train, 0) == NULL);
    CHECK(sched_submit(s, &kernel, 0) == NULL);
    CHECK(sched_submit(s, &trial, 0) == NULL);
    const sched_decision *d;
    size_t n = sched_plan(s, 0, &d);
    CHECK(n == 3);
    CHECK(held(s, "train") == 2 && held(s, "kernel-0") == 1 && held(s, "exp-1") == 1);
    CHECK_STR_EQ(d[1].job_id, "kernel-0");
    CHECK(d[1].tag == 77);
    sched_job_info info;
    CHECK(sched_get_job(s, "kernel-0", &info) && info.kind == SCHED_JOB_KERNEL &&
          !info.elastic && strcmp(info.plan, "/p/inference") == 0);
    CHECK(sched_get_job(s, "exp-1", &info) && info.kind == SCHED_JOB_EXPERIMENT);
    CHECK(books_consistent(s));
    sched_free(s);
}

/* A model service is one elastic kernel job whose range its autoscaler
 * moves; the same rules as training's divide the devices. */
static void test_model_job(void)
{
    sched *s = make_sched(2, 1);
    add_plan(s, "/alice", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/bob", 1, 0, 0, SCHED_POLICY_FAIR);
    sched_job_spec model = {.id = "model/m", .plan = "/alice", .kind = SCHED_JOB_KERNEL,
                            .elastic = true, .min_devices = 1, .max_devices = 1};
    CHECK(sched_submit(s, &model, 0) == NULL);
    plan_now(s, 0);
    CHECK(held(s, "model/m") == 1);
    /* Requests queue: it wants 2 and, alone, gets both. */
    CHECK(sched_set_job_range(s, "model/m", 1, 2) == NULL);
    plan_now(s, 1);
    CHECK(held(s, "model/m") == 2);
    /* Training in a plan below its share: the model's extra instance is
     * taken back, its minimum kept; both want 2, each holds one. */
    CHECK(submit(s, "train", "/bob", 1, 2, 2) == 0);
    plan_now(s, 2);
    CHECK(held(s, "model/m") == 1 && held(s, "train") == 1);
    plan_now(s, 10);
    CHECK(held(s, "model/m") == 1 && held(s, "train") == 1);
    /* Scaled to zero: the job ends and training grows back. */
    CHECK(sched_end(s, "model/m") == NULL);
    plan_now(s, 11);
    CHECK(held(s, "train") == 2);
    /* A request brings it back: training shrinks for its minimum. */
    CHECK(sched_submit(s, &model, 12) == NULL);
    plan_now(s, 12);
    CHECK(held(s, "model/m") == 1 && held(s, "train") == 1);
    CHECK(books_consistent(s));
    sched_free(s);
}

/* How many nodes a job's devices are on, and how many on `node`. */
static int nodes_of(const sched *s, const char *id, const char *node, int *on_node)
{
    sched_job_info j;
    const char *seen[8];
    int n = 0;
    *on_node = 0;
    if (!sched_get_job(s, id, &j))
        return -1;
    for (int32_t i = 0; i < j.count; i++) {
        sched_device_info d;
        sched_device(s, j.devices[i], &d);
        if (d.node && !strcmp(d.node, node))
            (*on_node)++;
        int known = 0;
        for (int k = 0; k < n; k++)
            known |= d.node && !strcmp(seen[k], d.node);
        if (!known && d.node && n < 8)
            seen[n++] = d.node;
    }
    return n;
}

/* Across nodes a job stays on as few as it can: the seeds' 2 nodes x 2
 * devices, A alone on all 4, then A and B a whole node each (not one
 * device of each node each), then A on 4 again; a 2-device job takes the
 * node it fits most tightly. */
static void test_locality(void)
{
    sched *s = sched_create(&(sched_options){.hysteresis = 0});
    const char *nodes[] = {"node1", "node2"};
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 2; i++)
            sched_add_device(s, LOOM_DEVICE_CPU, i, nodes[n]);
    int on1 = 0, on2 = 0;
    CHECK(submit(s, "A", "/", 1, 4, 0) == 0);
    plan_now(s, 0);
    CHECK(held(s, "A") == 4 && nodes_of(s, "A", "node1", &on1) == 2);
    CHECK(submit(s, "B", "/", 1, 2, 1) == 0);
    plan_now(s, 1);
    CHECK(held(s, "A") == 2 && held(s, "B") == 2);
    CHECK_MSG(nodes_of(s, "A", "node1", &on1) == 1, "A on %d of node1", on1);
    CHECK_MSG(nodes_of(s, "B", "node1", &on2) == 1, "B on %d of node1", on2);
    CHECK(on1 + on2 == 2 && (on1 == 0 || on1 == 2));
    CHECK(sched_end(s, "B") == NULL);
    plan_now(s, 2);
    CHECK(held(s, "A") == 4);
    CHECK(books_consistent(s));
    sched_free(s);

    /* node1 has 3 free, node2 2: a job of 2 takes node2 whole */
    s = sched_create(&(sched_options){.hysteresis = 0});
    for (int i = 0; i < 3; i++)
        sched_add_device(s, LOOM_DEVICE_CPU, i, "node1");
    for (int i = 0; i < 2; i++)
        sched_add_device(s, LOOM_DEVICE_CPU, i, "node2");
    CHECK(submit_full(s, "C", "/", false, 2, 2, 0, 0) == 0);
    plan_now(s, 0);
    CHECK(held(s, "C") == 2 && nodes_of(s, "C", "node2", &on2) == 1 && on2 == 2);
    /* a job of 3 then fits node1 alone */
    CHECK(submit_full(s, "D", "/", false, 3, 3, 0, 1) == 0);
    plan_now(s, 1);
    CHECK(held(s, "D") == 3 && nodes_of(s, "D", "node1", &on1) == 1 && on1 == 3);
    CHECK(books_consistent(s));
    sched_free(s);
}

/* A plan's use now: what its jobs (and those beneath it) hold, and what
 * the last round gave it. */
static void test_plan_usage(void)
{
    sched *s = make_sched(4, 0);
    add_plan(s, "/team", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/team/a", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/b", 1, 0, 0, SCHED_POLICY_FAIR);
    CHECK(submit(s, "ja", "/team/a", 1, 4, 0) == 0);
    CHECK(submit(s, "jb", "/b", 1, 1, 0) == 0);
    plan_now(s, 0);
    int32_t held = -1, given = -1;
    CHECK(sched_plan_usage(s, "/team/a", &held, &given) && held == 3 && given == 3);
    CHECK(sched_plan_usage(s, "/team", &held, &given) && held == 3 && given == 3);
    CHECK(sched_plan_usage(s, "/b", &held, &given) && held == 1 && given == 1);
    CHECK(sched_plan_usage(s, "/", &held, &given) && held == 4);
    CHECK(!sched_plan_usage(s, "/none", &held, &given));
    sched_free(s);
}

int main(void)
{
    test_ab_scenario();
    test_weights();
    test_caps_and_minimums();
    test_leftover();
    test_priority();
    test_fixed_queue();
    test_hysteresis();
    test_consumer_kinds();
    test_model_job();
    test_locality();
    test_plan_usage();
    return CHECK_DONE();
}

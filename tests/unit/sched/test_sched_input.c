/*
 * tests/unit/sched/test_sched_input.c - what the scheduler refuses and how
 * it says so: bad plans (cycle, unknown parent, zero or negative share, bad
 * path, min/cap), bad and too-large jobs (error, or wait by flag), restore
 * with a double assignment, plus the inventory and the water-fill itself.
 */
#include <unistd.h>

#include "sched/waterfill.h"
#include "sched_test_util.h"

/* Checks that `err` has `code` and mentions `a` and `b`, then frees it. */
static void expect_err(loom_error *err, int32_t code, const char *a, const char *b)
{
    CHECK_MSG(err != NULL, "expected an error mentioning %s", a);
    if (!err)
        return;
    CHECK_MSG(loom_err_code(err) == code, "code %d != %d (%s)", loom_err_code(err), code,
              loom_err_message(err));
    CHECK_CONTAINS(loom_err_message(err), a);
    if (b)
        CHECK_CONTAINS(loom_err_message(err), b);
    loom_err_free(err);
}

static loom_error *plan(sched *s, const char *path, double weight, int32_t min,
                        int32_t cap)
{
    sched_plan_spec spec = {.path = path, .weight = weight, .min_devices = min,
                            .cap_devices = cap};
    return sched_add_plan(s, &spec);
}

static void test_bad_plans(void)
{
    sched *s = make_sched(4, 0);
    expect_err(plan(s, "/zero", 0, 0, 0), LOOM_ERR_INVALID_ARGUMENT, "'/zero'", "weight");
    expect_err(plan(s, "/neg", -2, 0, 0), LOOM_ERR_INVALID_ARGUMENT, "'/neg'", "weight");
    expect_err(plan(s, "/m", 1, -1, 0), LOOM_ERR_INVALID_ARGUMENT, "'/m'", "min_devices");
    expect_err(plan(s, "/c", 1, 0, -1), LOOM_ERR_INVALID_ARGUMENT, "'/c'", "cap_devices");
    expect_err(plan(s, "/mc", 1, 3, 2), LOOM_ERR_INVALID_ARGUMENT, "'/mc'", "cap_devices");
    expect_err(plan(s, "rel", 1, 0, 0), LOOM_ERR_INVALID_ARGUMENT, "'rel'", "path");
    expect_err(plan(s, "/a//b", 1, 0, 0), LOOM_ERR_INVALID_ARGUMENT, "'/a//b'", "path");
    expect_err(plan(s, "/a/", 1, 0, 0), LOOM_ERR_INVALID_ARGUMENT, "'/a/'", "path");
    expect_err(plan(s, "/x/y", 1, 0, 0), LOOM_ERR_NOT_FOUND, "'/x/y'", "parent");
    sched_plan_spec bad_policy = {.path = "/p", .weight = 1, .policy = 7};
    expect_err(sched_add_plan(s, &bad_policy), LOOM_ERR_INVALID_ARGUMENT, "'/p'", "policy");

    CHECK(plan(s, "/a", 1, 0, 0) == NULL);
    CHECK(plan(s, "/a/b", 1, 0, 0) == NULL);
    expect_err(plan(s, "/a", 1, 0, 0), LOOM_ERR_ALREADY_EXISTS, "'/a'", NULL);

    /* A plan cannot be its own parent, nor move under its own child. */
    sched_plan_spec self = {.path = "/s", .parent = "/s", .weight = 1};
    expect_err(sched_add_plan(s, &self), LOOM_ERR_INVALID_ARGUMENT, "'/s'", "cycle");
    sched_plan_spec move = {.path = "/a", .parent = "/a/b", .weight = 1};
    expect_err(sched_update_plan(s, &move), LOOM_ERR_INVALID_ARGUMENT, "'/a'", "cycle");
    sched_plan_spec got;
    CHECK(sched_get_plan(s, "/a", &got) && strcmp(got.parent, "/") == 0);

    /* Bulk loading: any order; cycles and unknown parents refused whole. */
    sched_plan_spec cycle[] = {
        {.path = "/k", .weight = 1},
        {.path = "/u", .parent = "/v", .weight = 1},
        {.path = "/v", .parent = "/w", .weight = 1},
        {.path = "/w", .parent = "/u", .weight = 1},
    };
    loom_error *err = sched_load_plans(s, cycle, 4);
    CHECK(err && strstr(loom_err_message(err), "'/u' -> '/v' -> '/w' -> '/u'"));
    expect_err(err, LOOM_ERR_INVALID_ARGUMENT, "cycle", NULL);
    CHECK(!sched_get_plan(s, "/k", &got));

    sched_plan_spec unknown[] = {{.path = "/ok", .weight = 1},
                                 {.path = "/nowhere/q", .weight = 1}};
    expect_err(sched_load_plans(s, unknown, 2), LOOM_ERR_NOT_FOUND, "'/nowhere/q'",
               "'/nowhere'");
    CHECK(!sched_get_plan(s, "/ok", &got));

    sched_plan_spec reversed[] = {{.path = "/t/q/r", .weight = 2},
                                  {.path = "/t/q", .weight = 1},
                                  {.path = "/t", .weight = 1, .policy = 1}};
    CHECK(sched_load_plans(s, reversed, 3) == NULL);
    CHECK(sched_get_plan(s, "/t/q/r", &got) && strcmp(got.parent, "/t/q") == 0 &&
          got.weight == 2);
    CHECK(sched_get_plan(s, "/t", &got) && got.policy == SCHED_POLICY_PRIORITY);

    /* Removal: refused with children or jobs; fine otherwise. */
    expect_err(sched_remove_plan(s, "/a"), LOOM_ERR_INVALID_ARGUMENT, "'/a'", "child");
    CHECK(submit(s, "j", "/a/b", 1, 4, 0) == 0);
    expect_err(sched_remove_plan(s, "/a/b"), LOOM_ERR_INVALID_ARGUMENT, "'/a/b'", "job");
    plan_now(s, 0);
    sched_end(s, "j");
    CHECK(sched_remove_plan(s, "/a/b") == NULL);
    CHECK(sched_remove_plan(s, "/a") == NULL);
    CHECK(!sched_get_plan(s, "/a", &got));
    /* Jobs in later plans still point at the right plan after removal. */
    CHECK(submit(s, "deep", "/t/q/r", 1, 4, 1) == 0);
    sched_job_info info;
    CHECK(sched_get_job(s, "deep", &info) && strcmp(info.plan, "/t/q/r") == 0);
    expect_err(sched_remove_plan(s, "/"), LOOM_ERR_INVALID_ARGUMENT, "root", NULL);
    sched_free(s);

    s = make_sched(4, 0);
    CHECK(plan(s, "/q", 1, 0, 0) == NULL);
    CHECK(submit(s, "a", "/q", 2, 4, 0) == 0);
    CHECK(submit(s, "b", "/q", 2, 4, 0) == 0);
    plan_now(s, 0);
    sched_plan_spec tight = {.path = "/q", .weight = 1, .cap_devices = 3};
    expect_err(sched_update_plan(s, &tight), LOOM_ERR_INVALID_ARGUMENT, "'/q'",
               "cap_devices 3");
    sched_free(s);
}

static void test_bad_jobs(void)
{
    sched *s = make_sched(4, 0);
    sched_job_spec spec = {.id = "big", .elastic = true, .min_devices = 5,
                           .max_devices = 8};
    expect_err(sched_submit(s, &spec, 0), LOOM_ERR_RESOURCE_EXHAUSTED, "'big'",
               "min_devices 5 exceeds the 4 device");
    sched_job_spec fixed = {.id = "fixed8", .max_devices = 8};
    expect_err(sched_submit(s, &fixed, 0), LOOM_ERR_RESOURCE_EXHAUSTED, "'fixed8'",
               "max_devices 8");
    CHECK(sched_job_count(s) == 0);

    /* With the flag it waits, without blocking the job behind it. */
    spec.wait_if_too_large = true;
    CHECK(sched_submit(s, &spec, 0) == NULL);
    CHECK(submit(s, "small", NULL, 1, 2, 0) == 0);
    plan_now(s, 0);
    CHECK(state_of(s, "big") == SCHED_JOB_QUEUED && held(s, "small") == 2);
    for (int32_t i = 4; i < 6; i++)
        sched_add_device(s, LOOM_DEVICE_CPU, i, NULL);
    plan_now(s, 1);
    CHECK(held(s, "big") == 5 && held(s, "small") == 1);

    /* An elastic maximum above the inventory is fine: it runs on what there is. */
    sched_free(s);
    s = make_sched(4, 0);
    CHECK(submit(s, "wide", NULL, 1, 100, 0) == 0);
    plan_now(s, 0);
    CHECK(held(s, "wide") == 4);

    sched_job_spec zero = {.id = "z", .elastic = true, .max_devices = 0};
    expect_err(sched_submit(s, &zero, 0), LOOM_ERR_INVALID_ARGUMENT, "'z'", "max_devices");
    sched_job_spec inverted = {.id = "inv", .elastic = true, .min_devices = 3,
                               .max_devices = 2};
    expect_err(sched_submit(s, &inverted, 0), LOOM_ERR_INVALID_ARGUMENT, "'inv'",
               "min_devices");
    sched_job_spec lost = {.id = "lost", .plan = "/nope", .max_devices = 1};
    expect_err(sched_submit(s, &lost, 0), LOOM_ERR_NOT_FOUND, "'lost'", "'/nope'");
    sched_job_spec twice = {.id = "wide", .max_devices = 1};
    expect_err(sched_submit(s, &twice, 0), LOOM_ERR_ALREADY_EXISTS, "'wide'", NULL);
    sched_job_spec kind = {.id = "k", .kind = 9, .max_devices = 1};
    expect_err(sched_submit(s, &kind, 0), LOOM_ERR_INVALID_ARGUMENT, "'k'", "kind");

    /* A job larger than its plan's cap. */
    CHECK(plan(s, "/small", 1, 0, 2) == NULL);
    sched_job_spec over_cap = {.id = "oc", .plan = "/small", .max_devices = 3};
    expect_err(sched_submit(s, &over_cap, 0), LOOM_ERR_RESOURCE_EXHAUSTED, "'oc'",
               "plan '/small' cap_devices 2");
    expect_err(sched_submit(s, &over_cap, 0), LOOM_ERR_RESOURCE_EXHAUSTED,
               "plan '/small' cap_devices 2", "wait_if_too_large");
    sched_free(s);
}

static void test_restore(void)
{
    sched *s = make_sched(4, 0);
    int32_t a_slots[] = {0, 1}, b_slots[] = {1, 2};
    sched_restore_entry twice[] = {
        {.job = {.id = "a", .elastic = true, .max_devices = 4}, .devices = a_slots,
         .n_devices = 2},
        {.job = {.id = "b", .elastic = true, .max_devices = 4}, .devices = b_slots,
         .n_devices = 2},
    };
    loom_error *err = sched_restore(s, twice, 2);
    CHECK(err && strstr(loom_err_message(err), "'a'") && strstr(loom_err_message(err), "'b'"));
    expect_err(err, LOOM_ERR_ALREADY_EXISTS, "device slot 1", "double assignment");
    CHECK(sched_job_count(s) == 0 && sched_free_device_count(s) == 4);

    int32_t bad_slot[] = {9};
    sched_restore_entry unknown = {.job = {.id = "u", .max_devices = 1},
                                   .devices = bad_slot, .n_devices = 1};
    expect_err(sched_restore(s, &unknown, 1), LOOM_ERR_NOT_FOUND, "slot 9", "'u'");

    /* A good restore: a running job, a fixed one, and a queued one. */
    int32_t c_slots[] = {2, 3}, f_slots[] = {0};
    sched_restore_entry good[] = {
        {.job = {.id = "run", .elastic = true, .max_devices = 4}, .devices = c_slots,
         .n_devices = 2, .last_resize = 5},
        {.job = {.id = "fix", .max_devices = 1}, .devices = f_slots, .n_devices = 1},
        {.job = {.id = "wait", .elastic = true, .max_devices = 4}},
    };
    CHECK(sched_restore(s, good, 3) == NULL);
    CHECK(state_of(s, "run") == SCHED_JOB_RUNNING && held(s, "run") == 2);
    CHECK(state_of(s, "wait") == SCHED_JOB_QUEUED);
    sched_device_info dev;
    CHECK(sched_device(s, 3, &dev) && dev.owner && strcmp(dev.owner, "run") == 0);
    CHECK(books_consistent(s));

    /* Against a job already known: refused, naming both. */
    int32_t taken[] = {3};
    sched_restore_entry clash = {.job = {.id = "late", .max_devices = 1},
                                 .devices = taken, .n_devices = 1};
    expect_err(sched_restore(s, &clash, 1), LOOM_ERR_ALREADY_EXISTS, "'run'", "'late'");

    plan_now(s, 10);
    CHECK(held(s, "fix") == 1 && held(s, "wait") == 1 && held(s, "run") == 2);
    sched_job_info info;
    CHECK(sched_get_job(s, "run", &info) && info.devices[0] == 2 && info.devices[1] == 3);
    CHECK(books_consistent(s));
    sched_free(s);
}

static void test_inventory(void)
{
    sched *s = sched_create(NULL);
    CHECK(sched_add_local_devices(s, 3, false) == 3);
    CHECK(sched_device_count(s) == 3 && sched_free_device_count(s) == 3);
    sched_device_info d;
    CHECK(sched_device(s, 2, &d) && d.kind == LOOM_DEVICE_CPU && d.index == 2 &&
          d.node == NULL && d.owner == NULL);
    CHECK(!sched_device(s, 3, &d));
    CHECK(sched_add_device(s, LOOM_DEVICE_CPU, 1, NULL) == -1);
    int32_t remote = sched_add_device(s, LOOM_DEVICE_CUDA, 0, "node-b");
    CHECK(remote == 3);
    CHECK(sched_find_device(s, LOOM_DEVICE_CUDA, 0, "node-b") == 3);
    CHECK(sched_find_device(s, LOOM_DEVICE_CUDA, 0, NULL) == -1);
    sched_free(s);

    s = sched_create(NULL);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(sched_add_local_devices(s, 0, false) == (int32_t)cores);
    sched_free(s);

    /* CUDA asked for but hidden (CUDA_VISIBLE_DEVICES="", set in main before
     * the driver is first asked): no CUDA device, the CPU slots instead. */
    CHECK(sched_cuda_device_count() == 0);
    s = sched_create(NULL);
    CHECK(sched_add_local_devices(s, 2, true) == 2);
    CHECK(sched_device(s, 0, &d) && d.kind == LOOM_DEVICE_CPU);
    CHECK(sched_find_device(s, LOOM_DEVICE_CUDA, 0, NULL) == -1);
    sched_free(s);
}

static void test_waterfill(void)
{
    wf_ctx ctx = {0};
    wf_item w[] = {{3, 0, 8, 0, 0, 0}, {1, 0, 8, 0, 1, 0}};
    CHECK(wf_fill(&ctx, w, 2, 8) && w[0].out == 6 && w[1].out == 2);
    /* Bounds: the capped item stops, the other takes the rest. */
    wf_item c[] = {{1, 0, 1, 0, 0, 0}, {1, 2, 9, 0, 1, 0}, {1, 0, 9, 0, 2, 0}};
    CHECK(wf_fill(&ctx, c, 3, 9) && c[0].out == 1 && c[1].out == 4 && c[2].out == 4);
    /* Rounding ties go to who holds more now. */
    wf_item t[] = {{1, 0, 9, 0, 0, 0}, {1, 0, 9, 5, 1, 0}, {1, 0, 9, 0, 2, 0}};
    CHECK(wf_fill(&ctx, t, 3, 4) && t[0].out == 1 && t[1].out == 2 && t[2].out == 1);
    /* Lower bounds that do not fit are scaled in proportion. */
    wf_item o[] = {{1, 4, 4, 0, 0, 0}, {1, 4, 8, 0, 1, 0}};
    CHECK(wf_fill(&ctx, o, 2, 4) && o[0].out == 2 && o[1].out == 2);
    wf_ctx_free(&ctx);
}

int main(void)
{
    setenv("CUDA_VISIBLE_DEVICES", "", 1); /* test_inventory's hidden GPUs */
    test_bad_plans();
    test_bad_jobs();
    test_restore();
    test_inventory();
    test_waterfill();
    return CHECK_DONE();
}

/*
 * tests/unit/sched/test_sched_admit.c - admission: shares and minimums hold
 * for fixed (launch-style) jobs, one plan's or user's queue does not starve
 * another's, priority stays inside its plan, EASY backfilling never delays
 * the head job's reservation, the FIFO baselines, and the waiting reasons.
 */
#include <math.h>

#include "sched_test_util.h"

static sched *make_sched_opt(int32_t devices, int32_t admission, double reservation_after)
{
    sched_options opt = {.admission = admission, .reservation_after = reservation_after};
    sched *s = sched_create(&opt);
    for (int32_t i = 0; i < devices; i++)
        sched_add_device(s, LOOM_DEVICE_CPU, i, NULL);
    return s;
}

/* A fixed job with an optional user and expected run time. */
static int submit_fixed(sched *s, const char *id, const char *plan, const char *user,
                        int32_t devices, int32_t priority, double expected, double now)
{
    sched_job_spec spec = {.id = id, .plan = plan, .max_devices = devices,
                           .priority = priority, .user = user,
                           .expected_seconds = expected};
    loom_error *err = sched_submit(s, &spec, now);
    CHECK_MSG(err == NULL, "submit %s: %s", id, loom_err_message(err));
    int rc = err ? -1 : 0;
    loom_err_free(err);
    return rc;
}

/* Devices held by the running jobs whose id starts with `prefix`. */
static int32_t held_by(const sched *s, const char *prefix, int n)
{
    int32_t total = 0;
    char id[32];
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof id, "%s%d", prefix, i);
        int32_t h = held(s, id);
        total += h > 0 ? h : 0;
    }
    return total;
}

static int32_t queued_of(const sched *s, const char *prefix, int n)
{
    int32_t total = 0;
    char id[32];
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof id, "%s%d", prefix, i);
        total += state_of(s, id) == SCHED_JOB_QUEUED;
    }
    return total;
}

static void wait_text(const sched *s, const char *id, char *buf, size_t len)
{
    sched_wait w;
    buf[0] = '\0';
    CHECK(sched_job_wait(s, id, &w));
    sched_wait_text(&w, buf, len);
}

static void test_shares_hold_for_fixed_jobs(void)
{
    /* /p/a share 3, /p/b share 1, 1-device fixed jobs on 8 slots; b's
     * twelve are submitted first. 6:2 from the start and, as jobs end one
     * at a time, 6:2 +-1 while both plans have jobs waiting. */
    sched *s = make_sched(8, 0);
    add_plan(s, "/p", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/p/a", 3, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/p/b", 1, 0, 0, SCHED_POLICY_FAIR);
    char id[32];
    for (int i = 0; i < 12; i++) {
        snprintf(id, sizeof id, "b%d", i);
        submit_fixed(s, id, "/p/b", NULL, 1, 0, 0, 0);
    }
    for (int i = 0; i < 12; i++) {
        snprintf(id, sizeof id, "a%d", i);
        submit_fixed(s, id, "/p/a", NULL, 1, 0, 0, 1);
    }
    plan_now(s, 1);
    CHECK(held_by(s, "a", 12) == 6 && held_by(s, "b", 12) == 2);

    /* End the oldest running job each second, whichever plan it is in. */
    int rounds = 0;
    for (double t = 2; queued_of(s, "a", 12) > 0 && queued_of(s, "b", 12) > 0; t++) {
        double oldest = INFINITY;
        const char *victim = NULL;
        for (size_t slot = 0; slot < sched_device_count(s); slot++) {
            sched_device_info d;
            sched_job_info j;
            if (sched_device(s, (int32_t)slot, &d) && d.owner &&
                sched_get_job(s, d.owner, &j) && j.started < oldest) {
                oldest = j.started;
                victim = j.id;
            }
        }
        CHECK(victim != NULL);
        if (!victim)
            break;
        snprintf(id, sizeof id, "%s", victim);
        sched_end(s, id);
        plan_now(s, t);
        int32_t a = held_by(s, "a", 12), b = held_by(s, "b", 12);
        CHECK_MSG(a + b == 8 && a >= 5 && a <= 7, "t=%g: a %d, b %d", t, a, b);
        rounds++;
    }
    CHECK(rounds >= 4);
    CHECK(books_consistent(s));
    sched_free(s);
}

static void test_minimum_goes_first(void)
{
    /* /p/b guarantees 2: with alice's eight jobs queued first in /p/a,
     * bob's job takes the first device that frees, not the ninth. */
    sched *s = make_sched(4, 0);
    add_plan(s, "/p", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/p/a", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/p/b", 1, 2, 0, SCHED_POLICY_FAIR);
    char id[32];
    for (int i = 0; i < 8; i++) {
        snprintf(id, sizeof id, "a%d", i);
        submit_fixed(s, id, "/p/a", "alice", 1, 0, 0, 0);
    }
    plan_now(s, 0);
    CHECK(held_by(s, "a", 8) == 4);
    submit_fixed(s, "bob", "/p/b", "bob", 1, 0, 0, 1);
    plan_now(s, 1);
    char why[128];
    wait_text(s, "bob", why, sizeof why);
    CHECK_STR_EQ(why, "waiting for 1 device, 0 free");
    sched_end(s, "a0");
    plan_now(s, 2);
    CHECK(state_of(s, "bob") == SCHED_JOB_RUNNING);
    CHECK(held_by(s, "a", 8) == 3);
    sched_free(s);
}

static void test_late_user_not_starved(void)
{
    /* Alice queues 100 one-device jobs, bob one job 4 s later: bob starts
     * at the next free slot, whether users have plans of their own ("/NAME",
     * as the host makes them) or share one plan. */
    for (int shared = 0; shared < 2; shared++) {
        sched *s = make_sched(4, 0);
        const char *alice_plan = shared ? "/team" : "/alice";
        const char *bob_plan = shared ? "/team" : "/bob";
        add_plan(s, alice_plan, 1, 0, 0, SCHED_POLICY_FAIR);
        if (!shared)
            add_plan(s, bob_plan, 1, 0, 0, SCHED_POLICY_FAIR);
        char id[32];
        for (int i = 0; i < 100; i++) {
            snprintf(id, sizeof id, "a%d", i);
            submit_fixed(s, id, alice_plan, "alice", 1, 0, 5, 0);
        }
        plan_now(s, 0);
        submit_fixed(s, "bob", bob_plan, "bob", 1, 0, 5, 4);
        plan_now(s, 4);
        CHECK(state_of(s, "bob") == SCHED_JOB_QUEUED);
        sched_end(s, "a2");
        plan_now(s, 5);
        CHECK_MSG(state_of(s, "bob") == SCHED_JOB_RUNNING, "shared plan: %d", shared);
        CHECK(held_by(s, "a", 100) == 3);
        CHECK(books_consistent(s));
        sched_free(s);
    }
}

static void test_users_share_a_plan(void)
{
    /* One fair plan, 8 devices: alice's three elastic jobs and bob's one
     * split the plan by user (4 + 4), not by job (2 + 2 + 2 + 2). */
    sched *s = make_sched(8, 0);
    add_plan(s, "/team", 1, 0, 0, SCHED_POLICY_FAIR);
    const char *ids[] = {"a0", "a1", "a2", "b0"};
    for (int i = 0; i < 4; i++) {
        sched_job_spec spec = {.id = ids[i], .plan = "/team", .elastic = true,
                               .min_devices = 1, .max_devices = 8,
                               .user = i < 3 ? "alice" : "bob"};
        loom_error *err = sched_submit(s, &spec, 0);
        CHECK(err == NULL);
        loom_err_free(err);
    }
    plan_now(s, 0);
    CHECK(held(s, "b0") == 4);
    CHECK(held_by(s, "a", 3) == 4);
    CHECK(held(s, "a0") >= 1 && held(s, "a1") >= 1 && held(s, "a2") >= 1);
    CHECK(books_consistent(s));
    sched_free(s);
}

static void test_priority_stays_in_its_plan(void)
{
    /* A priority plan of share 1 beside a fair plan of share 3: priority
     * orders /pr's own jobs and does not take /fair's three quarters. */
    sched *s = make_sched(4, 0);
    add_plan(s, "/pr", 1, 0, 0, SCHED_POLICY_PRIORITY);
    add_plan(s, "/fair", 3, 0, 0, SCHED_POLICY_FAIR);
    char id[32];
    for (int i = 0; i < 6; i++) {
        snprintf(id, sizeof id, "p%d", i);
        submit_fixed(s, id, "/pr", NULL, 1, i < 3 ? 10 : 0, 0, 0);
    }
    for (int i = 0; i < 6; i++) {
        snprintf(id, sizeof id, "f%d", i);
        submit_fixed(s, id, "/fair", NULL, 1, 0, 0, 1);
    }
    submit_fixed(s, "p-top", "/pr", NULL, 1, 20, 0, 2);
    plan_now(s, 2);
    CHECK(held_by(s, "f", 6) == 3);
    /* Inside /pr, the highest priority goes first, whatever its age. */
    CHECK(state_of(s, "p-top") == SCHED_JOB_RUNNING);
    CHECK(held_by(s, "p", 6) == 0);
    char why[128];
    wait_text(s, "p4", why, sizeof why);
    CHECK_STR_EQ(why, "behind 3 jobs of higher priority in /pr");
    wait_text(s, "f4", why, sizeof why);
    CHECK_STR_EQ(why, "waiting for 1 device, 0 free");
    sched_free(s);
}

static void test_backfill_keeps_the_reservation(void)
{
    /* 4 devices. "big" (3, ends at 100) runs; "head" needs 4 and can
     * start at 100. "short" (1 device, 50 s) fits before that and passes;
     * "long" (1 device, 200 s) would delay the head and waits. */
    sched *s = make_sched(4, 0);
    submit_fixed(s, "big", NULL, NULL, 3, 0, 100, 0);
    plan_now(s, 0);
    submit_fixed(s, "head", NULL, NULL, 4, 0, 0, 1);
    submit_fixed(s, "long", NULL, NULL, 1, 0, 200, 2);
    submit_fixed(s, "short", NULL, NULL, 1, 0, 50, 3);
    plan_now(s, 3);
    CHECK(state_of(s, "head") == SCHED_JOB_QUEUED);
    CHECK(state_of(s, "short") == SCHED_JOB_RUNNING);
    CHECK(state_of(s, "long") == SCHED_JOB_QUEUED);
    char why[128];
    wait_text(s, "head", why, sizeof why);
    CHECK_STR_EQ(why, "waiting for 4 devices, 0 free");
    sched_end(s, "short");
    plan_now(s, 53);
    wait_text(s, "long", why, sizeof why);
    CHECK_STR_EQ(why, "reserved for a larger job (head)");
    CHECK(sched_reserved_count(s) == 1);
    sched_end(s, "big");
    plan_now(s, 100);
    CHECK(held(s, "head") == 4);
    CHECK(state_of(s, "long") == SCHED_JOB_QUEUED);

    /* Devices free beyond the head's need at its start may be used by a
     * job of any length. */
    sched_free(s);
    s = make_sched(6, 0);
    submit_fixed(s, "big", NULL, NULL, 4, 0, 100, 0);
    plan_now(s, 0);
    submit_fixed(s, "head", NULL, NULL, 5, 0, 0, 1);
    submit_fixed(s, "long", NULL, NULL, 1, 0, 500, 2);
    submit_fixed(s, "long2", NULL, NULL, 1, 0, 500, 3);
    plan_now(s, 3);
    CHECK(state_of(s, "long") == SCHED_JOB_RUNNING);
    CHECK(state_of(s, "long2") == SCHED_JOB_QUEUED);
    sched_free(s);
}

static void test_cap_reservation(void)
{
    /* /c is capped at 4 of 8 devices. "big" (4) waits for the cap: it gets
     * /c's reservation, dated by "x" (3, ends at 100). A short job of /c
     * passes, a long one waits for it; /a's job is not held back. */
    sched *s = make_sched(8, 0);
    add_plan(s, "/c", 1, 0, 4, SCHED_POLICY_FAIR);
    add_plan(s, "/a", 1, 0, 0, SCHED_POLICY_FAIR);
    submit_fixed(s, "x", "/c", NULL, 3, 0, 100, 0);
    plan_now(s, 0);
    submit_fixed(s, "big", "/c", NULL, 4, 0, 10, 1);
    submit_fixed(s, "long", "/c", NULL, 1, 0, 500, 2);
    submit_fixed(s, "short", "/c", NULL, 1, 0, 50, 3);
    submit_fixed(s, "other", "/a", NULL, 2, 0, 500, 4);
    plan_now(s, 4);
    char why[128];
    wait_text(s, "big", why, sizeof why);
    CHECK_STR_EQ(why, "plan /c is at its cap of 4");
    wait_text(s, "long", why, sizeof why);
    CHECK_STR_EQ(why, "reserved for a larger job (big)");
    CHECK(state_of(s, "short") == SCHED_JOB_RUNNING);
    CHECK(state_of(s, "other") == SCHED_JOB_RUNNING);
    sched_end(s, "short");
    sched_end(s, "x");
    plan_now(s, 100);
    CHECK(held(s, "big") == 4);
    CHECK(state_of(s, "long") == SCHED_JOB_QUEUED);
    sched_free(s);
}

static void test_undated_reservation(void)
{
    /* Nothing says when "big" ends: smaller jobs pass for
     * reservation_after seconds, then the devices are held for the head. */
    sched *s = make_sched_opt(4, SCHED_ADMIT_FAIR, 30);
    submit_fixed(s, "big", NULL, NULL, 2, 0, 0, 0);
    plan_now(s, 0);
    submit_fixed(s, "head", NULL, NULL, 4, 0, 0, 1);
    submit_fixed(s, "s1", NULL, NULL, 1, 0, 0, 2);
    plan_now(s, 2);
    CHECK(state_of(s, "s1") == SCHED_JOB_RUNNING);
    sched_end(s, "s1");
    submit_fixed(s, "s2", NULL, NULL, 1, 0, 0, 40);
    plan_now(s, 40);
    CHECK(state_of(s, "s2") == SCHED_JOB_QUEUED);
    CHECK(sched_reserved_count(s) == 2);
    sched_end(s, "big");
    plan_now(s, 50);
    CHECK(held(s, "head") == 4);
    sched_free(s);
}

static void test_fifo_baselines(void)
{
    /* Plain FIFO stops at the first job that does not fit; FIFO with
     * backfilling lets a short job pass it. Both ignore shares. */
    for (int32_t mode = SCHED_ADMIT_FIFO; mode <= SCHED_ADMIT_FIFO_BACKFILL; mode++) {
        sched *s = make_sched_opt(4, mode, 0);
        add_plan(s, "/a", 3, 0, 0, SCHED_POLICY_FAIR);
        add_plan(s, "/b", 1, 0, 0, SCHED_POLICY_FAIR);
        submit_fixed(s, "b0", "/b", NULL, 3, 0, 100, 0);
        submit_fixed(s, "a0", "/a", NULL, 2, 0, 100, 1);
        submit_fixed(s, "a1", "/a", NULL, 1, 0, 10, 2);
        plan_now(s, 2);
        CHECK(held(s, "b0") == 3);
        CHECK(state_of(s, "a0") == SCHED_JOB_QUEUED);
        CHECK(state_of(s, "a1") ==
              (mode == SCHED_ADMIT_FIFO ? SCHED_JOB_QUEUED : SCHED_JOB_RUNNING));
        if (mode == SCHED_ADMIT_FIFO) {
            char why[128];
            wait_text(s, "a1", why, sizeof why);
            CHECK_STR_EQ(why, "reserved for a larger job (a0)");
        }
        sched_free(s);
    }
}

static void test_cap_and_size_reasons(void)
{
    sched *s = make_sched(4, 0);
    add_plan(s, "/p", 1, 0, 0, SCHED_POLICY_FAIR);
    add_plan(s, "/p/a", 1, 0, 2, SCHED_POLICY_FAIR);
    submit_fixed(s, "x", "/p/a", NULL, 2, 0, 0, 0);
    submit_fixed(s, "y", "/p/a", NULL, 1, 0, 0, 0);
    sched_job_spec big = {.id = "z", .plan = "/p/a", .max_devices = 3,
                          .wait_if_too_large = true};
    loom_error *err = sched_submit(s, &big, 0);
    CHECK(err == NULL);
    loom_err_free(err);
    plan_now(s, 0);
    char why[128];
    wait_text(s, "y", why, sizeof why);
    CHECK_STR_EQ(why, "plan /p/a is at its cap of 2");
    wait_text(s, "z", why, sizeof why);
    CHECK_STR_EQ(why, "needs 3 devices, more than plan /p/a's cap of 2");
    wait_text(s, "x", why, sizeof why);
    CHECK_STR_EQ(why, "");
    sched_free(s);
}

int main(void)
{
    test_shares_hold_for_fixed_jobs();
    test_minimum_goes_first();
    test_late_user_not_starved();
    test_users_share_a_plan();
    test_priority_stays_in_its_plan();
    test_backfill_keeps_the_reservation();
    test_cap_reservation();
    test_undated_reservation();
    test_fifo_baselines();
    test_cap_and_size_reasons();
    return CHECK_DONE();
}

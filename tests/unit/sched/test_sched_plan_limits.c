/*
 * tests/unit/sched/test_sched_plan_limits.c - the job limits an exec in a
 * plan runs under: the plan's own value, one inherited from the nearest
 * plan up the tree that sets it (past plans that do not), the host's where
 * no plan does, and the bounds a plan's value is refused outside.
 */
#include "sched_test_util.h"

enum { P = SCHED_LIMIT_PROCS, M = SCHED_LIMIT_MEMORY, D = SCHED_LIMIT_DISK };
static const uint64_t host[SCHED_LIMITS] = {[P] = 4096, [M] = 0, [D] = (uint64_t)20 << 30};

static loom_error *add(sched *s, const char *path, uint64_t procs, uint64_t memory, uint64_t disk)
{
    sched_plan_spec spec = {.path = path, .weight = 1, .policy = SCHED_POLICY_FAIR,
                            .job_limits = {[P] = procs, [M] = memory, [D] = disk}};
    return sched_add_plan(s, &spec);
}

static void test_resolution(void)
{
    sched *s = make_sched(2, 0);
    CHECK(add(s, "/teamA", 32, 0, 0) == NULL);
    CHECK(add(s, "/teamA/mid", 0, 0, 0) == NULL);
    CHECK(add(s, "/teamA/mid/leaf", 0, (uint64_t)2 << 30, 0) == NULL);
    uint64_t v[SCHED_LIMITS];
    const char *from[SCHED_LIMITS];

    /* The plan's own value, and the host's for what it leaves unset. */
    sched_plan_limits(s, "/teamA", host, v, from);
    CHECK(v[P] == 32 && from[P] && !strcmp(from[P], "/teamA"));
    CHECK(v[M] == 0 && from[M] == NULL);
    CHECK(v[D] == host[D] && from[D] == NULL);

    /* Inherited past a plan that sets nothing; the leaf's own memory. */
    sched_plan_limits(s, "/teamA/mid/leaf", host, v, from);
    CHECK(v[P] == 32 && from[P] && !strcmp(from[P], "/teamA"));
    CHECK(v[M] == (uint64_t)2 << 30 && from[M] && !strcmp(from[M], "/teamA/mid/leaf"));
    CHECK(v[D] == host[D] && from[D] == NULL);

    /* A path that is no plan starts at its nearest ancestor that is. */
    sched_plan_limits(s, "/teamA/mid/gone", host, v, from);
    CHECK(v[P] == 32 && from[P] && !strcmp(from[P], "/teamA"));
    CHECK(v[M] == 0 && from[M] == NULL);

    /* No plan sets any: the host's. */
    sched_plan_limits(s, "/other", host, v, from);
    CHECK(v[P] == host[P] && from[P] == NULL && from[M] == NULL && from[D] == NULL);

    /* The root's value reaches every plan that sets none; a nearer one
     * still wins. */
    sched_plan_spec root;
    CHECK(sched_get_plan(s, "/", &root));
    root.job_limits[D] = (uint64_t)10 << 30;
    CHECK(sched_update_plan(s, &root) == NULL);
    sched_plan_limits(s, "/other", host, v, from);
    CHECK(v[D] == (uint64_t)10 << 30 && from[D] && !strcmp(from[D], "/"));
    sched_plan_limits(s, "/teamA/mid/leaf", host, v, from);
    CHECK(v[P] == 32 && v[D] == (uint64_t)10 << 30);

    /* Back to 0: inherited again. */
    sched_plan_spec a;
    CHECK(sched_get_plan(s, "/teamA", &a));
    a.job_limits[P] = 0;
    CHECK(sched_update_plan(s, &a) == NULL);
    sched_plan_limits(s, "/teamA/mid/leaf", host, v, from);
    CHECK(v[P] == host[P] && from[P] == NULL);
    sched_free(s);
}

static void test_bounds(void)
{
    sched *s = make_sched(1, 0);
    loom_error *e = add(s, "/few", 3, 0, 0);
    CHECK(loom_err_code(e) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(loom_err_message(e), "max_procs: expected 0");
    loom_err_free(e);
    e = add(s, "/small", 0, 1024, 0);
    CHECK_CONTAINS(loom_err_message(e), "max_memory");
    loom_err_free(e);
    e = add(s, "/huge", 0, 0, (uint64_t)1 << 60);
    CHECK_CONTAINS(loom_err_message(e), "max_disk");
    loom_err_free(e);
    /* The smallest and largest values taken. */
    CHECK(add(s, "/edges", 16, (uint64_t)1 << 50, (uint64_t)1 << 20) == NULL);
    sched_free(s);
}

int main(void)
{
    test_resolution();
    test_bounds();
    return CHECK_DONE();
}

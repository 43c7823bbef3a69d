/*
 * tests/unit/sched/test_sched_pools.c - an inventory holding both CPU
 * slots and GPUs (Slurm nodes of both sorts): every job's devices are of
 * its kind, each kind shared apart (fair share within it), a job larger
 * than its kind's devices refused naming the kind; an inventory of one
 * kind shared by every job as before.
 */
#include "sched_test_util.h"

static int submit_pool(sched *s, const char *id, bool elastic, int32_t min, int32_t max,
                       int32_t pool, double now)
{
    sched_job_spec spec = {.id = id, .elastic = elastic, .min_devices = min, .max_devices = max,
                           .pool = pool};
    return submit_spec(s, &spec, now);
}

/* Every device `id` holds is of `kind`; how many it holds. */
static int32_t held_of_kind(const sched *s, const char *id, int32_t kind)
{
    sched_job_info info;
    if (!sched_get_job(s, id, &info))
        return -1;
    for (int32_t i = 0; i < info.count; i++) {
        sched_device_info d;
        if (!sched_device(s, info.devices[i], &d) || d.kind != kind)
            return -1;
    }
    return info.count;
}

static void kinds_apart(void)
{
    sched_options opt = {0};
    sched *s = sched_create(&opt);
    for (int32_t i = 0; i < 2; i++)
        sched_add_device(s, LOOM_DEVICE_CUDA, i, "gpunode");
    for (int32_t i = 0; i < 4; i++)
        sched_add_device(s, LOOM_DEVICE_CPU, i, "cpunode");
    /* A GPU job wanting 4 gets the 2 GPUs, never a CPU slot; a CPU job
     * the 4 slots, never a GPU. */
    CHECK(submit_pool(s, "gpu", true, 1, 4, SCHED_POOL_GPU, 0) == 0);
    CHECK(submit_pool(s, "cpu", true, 1, 8, SCHED_POOL_CPU, 0) == 0);
    plan_now(s, 0);
    CHECK(held_of_kind(s, "gpu", LOOM_DEVICE_CUDA) == 2);
    CHECK(held_of_kind(s, "cpu", LOOM_DEVICE_CPU) == 4);
    CHECK(books_consistent(s));

    /* A job of no kind goes with the CPU slots: fair share there (2 + 2);
     * the GPU job keeps both GPUs. */
    CHECK(submit_pool(s, "any", true, 1, 4, SCHED_POOL_ANY, 1) == 0);
    plan_now(s, 1);
    CHECK(held_of_kind(s, "any", LOOM_DEVICE_CPU) == 2);
    CHECK(held_of_kind(s, "cpu", LOOM_DEVICE_CPU) == 2);
    CHECK(held_of_kind(s, "gpu", LOOM_DEVICE_CUDA) == 2);
    CHECK(books_consistent(s));

    /* A second GPU job shares the GPUs (1 + 1), not the CPU slots. */
    CHECK(submit_pool(s, "gpu2", true, 1, 2, SCHED_POOL_GPU, 2) == 0);
    plan_now(s, 2);
    CHECK(held_of_kind(s, "gpu", LOOM_DEVICE_CUDA) == 1);
    CHECK(held_of_kind(s, "gpu2", LOOM_DEVICE_CUDA) == 1);
    CHECK(held_of_kind(s, "any", LOOM_DEVICE_CPU) == 2);
    CHECK(books_consistent(s));

    /* A fixed GPU job of 3 can never fit the 2 GPUs: refused, naming them. */
    sched_job_spec big = {.id = "big", .max_devices = 3, .pool = SCHED_POOL_GPU};
    loom_error *err = sched_submit(s, &big, 3);
    CHECK(err && loom_err_code(err) == LOOM_ERR_RESOURCE_EXHAUSTED);
    CHECK_CONTAINS(loom_err_message(err), "exceeds the 2 GPU device(s)");
    loom_err_free(err);
    /* ...while 3 CPU slots fit the 4 (it waits for them). */
    CHECK(submit_pool(s, "fixed3", false, 3, 3, SCHED_POOL_CPU, 3) == 0);
    sched_job_spec bad = {.id = "bad", .max_devices = 1, .pool = 7};
    err = sched_submit(s, &bad, 3);
    CHECK(err && loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(loom_err_message(err), "pool: expected any (0), cpu (1) or gpu (2), got 7");
    loom_err_free(err);

    /* The GPU jobs end: the GPUs stay idle rather than go to CPU jobs. */
    loom_err_free(sched_end(s, "gpu"));
    loom_err_free(sched_end(s, "gpu2"));
    plan_now(s, 4);
    CHECK(sched_free_device_count(s) == 2);
    CHECK(held_of_kind(s, "any", LOOM_DEVICE_CPU) >= 1);
    CHECK(books_consistent(s));
    sched_free(s);
}

static void one_kind_is_shared(void)
{
    /* A CPU job on an inventory of GPUs alone (a GPU host, as before). */
    sched_options opt = {0};
    sched *s = sched_create(&opt);
    for (int32_t i = 0; i < 2; i++)
        sched_add_device(s, LOOM_DEVICE_CUDA, i, NULL);
    CHECK(submit_pool(s, "cpu", true, 1, 2, SCHED_POOL_CPU, 0) == 0);
    plan_now(s, 0);
    CHECK(held(s, "cpu") == 2);
    CHECK(books_consistent(s));
    /* CPU slots join (a node without GPUs): the job keeps the GPU slots it
     * runs on until it ends, and the books stay whole through the rounds. */
    for (int32_t i = 0; i < 2; i++)
        sched_add_device(s, LOOM_DEVICE_CPU, i, "cpunode");
    plan_now(s, 1);
    CHECK(held(s, "cpu") == 2);
    CHECK(sched_free_device_count(s) == 2);
    CHECK(books_consistent(s));
    loom_err_free(sched_end(s, "cpu"));
    plan_now(s, 2);
    CHECK(sched_free_device_count(s) == 4);
    CHECK(books_consistent(s));
    sched_free(s);
}

int main(void)
{
    kinds_apart();
    one_kind_is_shared();
    return CHECK_DONE();
}

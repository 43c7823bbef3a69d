/*
 * tests/unit/inventory/test_slurm_nodes.c - a Slurm node's devices
 * (sched/slurm_nodes.h): its state's usability, the GPUs of its gres, GPUs
 * or CPU slots per node and the limits named; and a device taken out of the
 * scheduler's inventory when its node leaves (sched_remove_device): the job
 * holding it loses it, the slots above move down, the free count holds.
 */
#include <string.h>

#include "../../check.h"
#include "sched/sched.h"
#include "sched/slurm_nodes.h"

static void test_usable(void)
{
    const char *why = NULL;
    CHECK(slurm_node_usable(SLURM_NODE_IDLE, &why) && !strcmp(why, ""));
    CHECK(slurm_node_usable(SLURM_NODE_ALLOCATED, NULL));
    CHECK(slurm_node_usable(SLURM_NODE_MIXED, NULL));
    CHECK(slurm_node_usable(SLURM_NODE_IDLE | (1u << 10) /* COMPLETING */, NULL));
    CHECK(!slurm_node_usable(SLURM_NODE_DOWN, &why) && !strcmp(why, "down"));
    CHECK(!slurm_node_usable(SLURM_NODE_IDLE | SLURM_NODE_FLAG_DRAIN, &why) &&
          !strcmp(why, "drain"));
    CHECK(!slurm_node_usable(SLURM_NODE_ALLOCATED | SLURM_NODE_FLAG_DRAIN, &why) &&
          !strcmp(why, "drain"));
    CHECK(!slurm_node_usable(SLURM_NODE_IDLE | SLURM_NODE_FLAG_NO_RESPOND, &why) &&
          !strcmp(why, "not responding"));
    CHECK(!slurm_node_usable(SLURM_NODE_DOWN | SLURM_NODE_FLAG_NO_RESPOND, &why) &&
          !strcmp(why, "down"));
    CHECK(!slurm_node_usable(SLURM_NODE_MIXED | SLURM_NODE_FLAG_FAIL, &why) &&
          !strcmp(why, "fail"));
    CHECK(!slurm_node_usable(SLURM_NODE_IDLE | SLURM_NODE_FLAG_MAINT, NULL));
    CHECK(!slurm_node_usable(SLURM_NODE_IDLE | SLURM_NODE_FLAG_POWERED_DOWN, NULL));
    CHECK(!slurm_node_usable(SLURM_NODE_FUTURE, &why) && !strcmp(why, "future"));
    CHECK(!slurm_node_usable(SLURM_NODE_UNKNOWN, &why) && !strcmp(why, "unknown"));
}

static int32_t gpus(const char *gres)
{
    int32_t n = -1;
    loom_error *e = slurm_gres_gpus(gres, &n);
    CHECK_MSG(!e, "%s: %s", gres ? gres : "NULL", e ? loom_err_message(e) : "");
    loom_err_free(e);
    return n;
}

static void expect_gres_error(const char *gres, int code, const char *names)
{
    int32_t n = -1;
    loom_error *e = slurm_gres_gpus(gres, &n);
    CHECK_MSG(e && loom_err_code(e) == code, "%s: expected error %d", gres, code);
    CHECK_MSG(e && strstr(loom_err_message(e), names), "%s: %s", gres,
              e ? loom_err_message(e) : "");
    loom_err_free(e);
}

static void test_gres(void)
{
    CHECK(gpus("gpu:2") == 2);
    CHECK(gpus("gpu:tesla:2(S:0-1)") == 2);
    CHECK(gpus("gpu:2(S:0,1),mps:200") == 2);
    CHECK(gpus("gpu:a100:2,gpu:v100:1") == 3);
    CHECK(gpus("mps:100,gpu:4") == 4);
    CHECK(gpus("gpu") == 1);
    CHECK(gpus("gpu:a100") == 1);
    CHECK(gpus("gpu:0") == 0);
    CHECK(gpus("gpus:2,shard:8") == 0);
    CHECK(gpus("") == 0);
    CHECK(gpus(NULL) == 0);
    CHECK(gpus("gpu:64") == SLURM_NODE_GPUS_MAX);
    expect_gres_error("gpu:a100:many", LOOM_E_INVALID, "gpu:a100:many");
    expect_gres_error("gpu:2x", LOOM_E_INVALID, "gpu[:TYPE][:COUNT]");
    expect_gres_error("gpu:65", LOOM_E_LIMIT, "more than 64 GPUs");
    expect_gres_error("gpu:99999999999999999999", LOOM_E_LIMIT, "more than 64 GPUs");
    expect_gres_error("gpu:a:40,gpu:b:30", LOOM_E_LIMIT, "more than 64 GPUs");
}

static void test_devices(void)
{
    slurm_device d[8];
    size_t n = 0;
    slurm_node_desc gpu_node = {.name = "node1", .state = SLURM_NODE_IDLE, .cpus = 8,
                                .gres = "gpu:2"};
    CHECK(!slurm_node_devices(&gpu_node, 0, d, 8, &n));
    CHECK(n == 2); /* GPUs only: its CPUs feed them */
    for (size_t i = 0; i < n; i++)
        CHECK(!strcmp(d[i].node, "node1") && d[i].kind == LOOM_DEVICE_CUDA &&
              d[i].index == (int32_t)i);

    slurm_node_desc cpu_node = {.name = "node2", .state = SLURM_NODE_IDLE, .cpus = 4};
    CHECK(!slurm_node_devices(&cpu_node, 0, d, 8, &n));
    CHECK(n == 4);
    CHECK(!strcmp(d[3].node, "node2") && d[3].kind == LOOM_DEVICE_CPU && d[3].index == 3);
    CHECK(!slurm_node_devices(&cpu_node, 2, d, 8, &n) && n == 2); /* 2 CPUs a slot */
    CHECK(!slurm_node_devices(&cpu_node, 3, d, 8, &n) && n == 1); /* the rest is no slot */
    CHECK(!slurm_node_devices(&cpu_node, 8, d, 8, &n) && n == 0);

    /* A short array: the count in all, the first `cap` copied. */
    memset(d, 0, sizeof d);
    CHECK(!slurm_node_devices(&cpu_node, 0, d, 1, &n) && n == 4);
    CHECK(d[0].kind == LOOM_DEVICE_CPU && !strcmp(d[0].node, "node2") && d[1].node[0] == 0);
    CHECK(!slurm_node_devices(&cpu_node, 0, NULL, 0, &n) && n == 4);

    char long_name[SLURM_NODE_NAME_MAX + 1];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    slurm_node_desc bad = {.name = long_name, .cpus = 2};
    loom_error *e = slurm_node_devices(&bad, 0, d, 8, &n);
    CHECK(e && loom_err_code(e) == LOOM_E_LIMIT && strstr(loom_err_message(e), "63 bytes"));
    loom_err_free(e);
    bad = (slurm_node_desc){.name = "big", .cpus = SLURM_NODE_SLOTS_MAX + 1};
    e = slurm_node_devices(&bad, 0, d, 8, &n);
    CHECK(e && loom_err_code(e) == LOOM_E_LIMIT && strstr(loom_err_message(e), "node big") &&
          strstr(loom_err_message(e), "--slurm-cpus-per-slot"));
    loom_err_free(e);
    bad = (slurm_node_desc){.name = "odd", .cpus = 2, .gres = "gpu:x:y"};
    e = slurm_node_devices(&bad, 0, d, 8, &n);
    CHECK(e && loom_err_code(e) == LOOM_E_INVALID && strstr(loom_err_message(e), "node odd"));
    loom_err_free(e);
}

static void test_remove_device(void)
{
    sched *s = sched_create(NULL);
    CHECK(s);
    /* node a: 2 CPU slots (slots 0, 1); node b: 3 (slots 2-4). (GPUs
     * beside CPU slots are pools apart: test_sched_pools.c.) */
    CHECK(sched_add_device(s, LOOM_DEVICE_CPU, 0, "a") == 0);
    CHECK(sched_add_device(s, LOOM_DEVICE_CPU, 1, "a") == 1);
    for (int32_t i = 0; i < 3; i++)
        CHECK(sched_add_device(s, LOOM_DEVICE_CPU, i, "b") == 2 + i);
    sched_job_spec spec = {.id = "j", .max_devices = 4};
    CHECK(!sched_submit(s, &spec, 0));
    const sched_decision *dec;
    sched_plan(s, 0, &dec);
    sched_job_info j;
    CHECK(sched_get_job(s, "j", &j) && j.count == 4);
    CHECK(sched_free_device_count(s) == 1);

    /* node a leaves: the job loses the devices it held there */
    char owner[64];
    int32_t held_a = 0, free_slot = -1;
    for (int32_t slot = 0; slot < 5; slot++) {
        sched_device_info d;
        CHECK(sched_device(s, slot, &d));
        if (!d.owner)
            free_slot = slot;
    }
    CHECK(free_slot >= 0);
    for (int32_t slot = (int32_t)sched_device_count(s) - 1; slot >= 0; slot--) {
        sched_device_info d;
        CHECK(sched_device(s, slot, &d));
        if (strcmp(d.node, "a"))
            continue;
        bool was_held = d.owner != NULL;
        CHECK(sched_remove_device(s, slot, owner, sizeof owner));
        CHECK(!strcmp(owner, was_held ? "j" : ""));
        held_a += was_held;
    }
    CHECK(sched_device_count(s) == 3);
    CHECK(sched_get_job(s, "j", &j) && j.count == 4 - held_a);
    for (int32_t k = 0; k < j.count; k++) {
        sched_device_info d;
        CHECK(sched_device(s, j.devices[k], &d) && !strcmp(d.node, "b") && d.owner &&
              !strcmp(d.owner, "j"));
    }
    CHECK(sched_free_device_count(s) == 3 - (size_t)j.count);
    CHECK(sched_find_device(s, LOOM_DEVICE_CPU, 2, "b") == 2);
    CHECK(!sched_remove_device(s, 3, owner, sizeof owner)); /* no such slot now */

    /* node a comes back: its devices are added after b's, free */
    CHECK(sched_add_device(s, LOOM_DEVICE_CPU, 0, "a") == 3);
    CHECK(sched_free_device_count(s) == 4 - (size_t)j.count);
    sched_plan(s, 1, &dec);
    CHECK(sched_get_job(s, "j", &j) && j.count == 4); /* whole again */
    CHECK(sched_free_device_count(s) == 0);
    sched_free(s);
}

int main(void)
{
    test_usable();
    test_gres();
    test_devices();
    test_remove_device();
    return CHECK_DONE();
}

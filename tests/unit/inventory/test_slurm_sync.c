/*
 * tests/unit/inventory/test_slurm_sync.c - the scheduler service following
 * Slurm's nodes (sched_service_sync_devices): a node's devices join, a
 * node that leaves takes its devices from the job holding them (the others
 * stay with it, slots renumbered), and come back when it returns; this
 * machine's device is never touched; a job on another machine's devices is
 * named as such (sched_service_job_node), one on this machine's is not.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../check.h"
#include "sched/sched_service.h"

static slurm_device dev(const char *node, int32_t kind, int32_t index)
{
    slurm_device d = {.kind = kind, .index = index};
    snprintf(d.node, sizeof d.node, "%s", node);
    return d;
}

/* How many devices `loom slots` would list on node ("local": this one). */
static int on_node(sched_service *ss, const char *node)
{
    sched_slot_view *v = NULL;
    size_t n = 0;
    loom_error *e = sched_service_slots(ss, &v, &n);
    CHECK(!e);
    loom_err_free(e);
    int k = 0;
    for (size_t i = 0; i < n; i++)
        k += !strcmp(v[i].node, node);
    free(v);
    return k;
}

static int held(sched_service *ss, const char *job)
{
    int32_t slots[16];
    return sched_service_job_devices(ss, job, slots, 16, NULL, NULL);
}

static void run(store *st)
{
    sched_service_options opt = {.cpu_slots = 1};
    sched_service *ss = NULL;
    loom_error *e = sched_service_create(st, &opt, &ss);
    CHECK_MSG(!e, "%s", loom_err_message(e));
    loom_err_free(e);
    if (!ss)
        return;
    sched_action actions[8];
    char node[64] = "";

    /* A job on this machine's one device is not on another machine. */
    sched_job_spec here = {.id = "here", .max_devices = 1};
    CHECK(!sched_service_submit(ss, &here));
    sched_service_decide(ss, actions, 8);
    CHECK(held(ss, "here") == 1);
    CHECK(!sched_service_job_node(ss, "here", node, sizeof node));
    sched_service_end(ss, "here");

    /* (CPU slots on both: GPUs beside CPU slots are pools apart,
     * test_sched_pools.c) */
    slurm_device both[] = {dev("a", LOOM_DEVICE_CPU, 0), dev("a", LOOM_DEVICE_CPU, 1),
                           dev("b", LOOM_DEVICE_CPU, 0), dev("b", LOOM_DEVICE_CPU, 1)};
    CHECK(!sched_service_sync_devices(ss, both, 4));
    CHECK(sched_service_device_count(ss) == 5);
    CHECK(on_node(ss, "a") == 2 && on_node(ss, "b") == 2 && on_node(ss, "local") == 1);
    CHECK(!sched_service_sync_devices(ss, both, 4)); /* the same again: nothing changes */
    CHECK(sched_service_device_count(ss) == 5);

    sched_job_spec j = {.id = "j", .elastic = true, .min_devices = 1, .max_devices = 5};
    CHECK(!sched_service_submit(ss, &j));
    sched_service_decide(ss, actions, 8);
    CHECK(held(ss, "j") == 5);
    CHECK(sched_service_job_node(ss, "j", node, sizeof node));
    CHECK(!strcmp(node, "a") || !strcmp(node, "b"));

    /* node a leaves: the job keeps the rest; its grant is what is left */
    CHECK(!sched_service_sync_devices(ss, both + 2, 2));
    CHECK(sched_service_device_count(ss) == 3);
    CHECK(on_node(ss, "a") == 0 && on_node(ss, "b") == 2 && on_node(ss, "local") == 1);
    CHECK(held(ss, "j") == 3);
    int32_t index[8], kind = -1;
    int total = 0;
    CHECK(sched_service_job_grant(ss, "j", index, 8, &kind, &total) == 3 && total == 3);

    /* every node gone: only this machine's device is left */
    CHECK(!sched_service_sync_devices(ss, NULL, 0));
    CHECK(sched_service_device_count(ss) == 1 && on_node(ss, "local") == 1);
    CHECK(held(ss, "j") == 1);
    CHECK(!sched_service_job_node(ss, "j", node, sizeof node));

    /* both come back: the elastic job grows into them */
    CHECK(!sched_service_sync_devices(ss, both, 4));
    CHECK(sched_service_device_count(ss) == 5);
    sched_service_decide(ss, actions, 8);
    CHECK(held(ss, "j") == 5);
    sched_service_end(ss, "j");
    sched_service_destroy(ss);
}

int main(void)
{
    char dir[] = "/tmp/loom-slurm-sync-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/state.db", dir);
    store *st = NULL;
    loom_error *e = store_open(path, &st);
    CHECK_MSG(!e, "%s", loom_err_message(e));
    loom_err_free(e);
    if (st) {
        run(st);
        store_close(st);
    }
    char rm[300];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    CHECK(system(rm) == 0);
    return CHECK_DONE();
}

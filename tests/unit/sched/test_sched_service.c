/*
 * tests/unit/sched/test_sched_service.c - the host's scheduler service as
 * the exec service sees it: a pending job's reason, as fields and in
 * words; the journal of devices changing hands, as the history reads it
 * (a job that held devices between two reads included).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/owner_journal.h"
#include "sched/sched_service.h"
#include "sched_test_util.h"
#include "wait.h"

typedef void (*service_test)(sched_service *ss);

static void with_service_opt(service_test fn, const sched_service_options *given)
{
    char dir[] = "/tmp/loom-sched-svc-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/state.db", dir);
    store *st = NULL;
    loom_error *e = store_open(path, &st);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    if (!st)
        return;
    sched_service_options opt = given ? *given : (sched_service_options){.cpu_slots = 2};
    sched_service *ss = NULL;
    e = sched_service_create(st, &opt, &ss);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    if (ss) {
        fn(ss);
        sched_service_destroy(ss);
    }
    store_close(st);
    unlink(path);
    char side[300];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    rmdir(dir);
}

static void with_service(service_test fn) { with_service_opt(fn, NULL); }

static void pending_reason(sched_service *ss)
{
    {
        sched_job_spec a = {.id = "a", .plan = "/alice", .max_devices = 2, .user = "alice"};
        sched_job_spec b = {.id = "b", .plan = "/bob", .max_devices = 2, .user = "bob"};
        CHECK(loom_err_take(sched_service_submit(ss, &a), NULL, 0) == LOOM_OK);
        CHECK(loom_err_take(sched_service_submit(ss, &b), NULL, 0) == LOOM_OK);
        sched_action actions[4];
        CHECK(sched_service_decide(ss, actions, 4) == 1);
        sched_reason r;
        char why[128];
        CHECK(sched_service_pending_reason(ss, "b", &r));
        CHECK(r.code == SCHED_WAIT_DEVICES && r.need == 2 && r.free == 0);
        /* It names the job holding the devices, to whoever may see it. */
        CHECK_STR_EQ(r.holder, "a");
        CHECK_STR_EQ(r.holder_user, "alice");
        sched_reason_text(&r, true, why, sizeof why);
        CHECK_STR_EQ(why, "waiting for 2 devices, 0 free (held by a)");
        sched_reason_text(&r, false, why, sizeof why);
        CHECK_STR_EQ(why, "waiting for 2 devices, 0 free");
        CHECK(!sched_service_pending_reason(ss, "a", &r));
        CHECK(r.code == SCHED_WAIT_NONE);
        CHECK(!sched_service_pending_reason(ss, "nobody", &r));
    }
}

/* A job granted both devices and ended before anybody looked: the journal
 * still has it taking each device and giving it back, in that order. */
static void owner_journal_between_reads(sched_service *ss)
{
    owner_change c[16];
    uint64_t dropped = 1;
    size_t n = sched_service_owner_changes(ss, c, 16, &dropped);
    CHECK(n == 2 && dropped == 0); /* the first look: both free */
    CHECK(n == 2 && c[0].holder[0] == 0 && c[1].holder[0] == 0);
    sched_job_spec a = {.id = "a", .plan = "/alice", .max_devices = 2, .user = "alice"};
    CHECK(loom_err_take(sched_service_submit(ss, &a), NULL, 0) == LOOM_OK);
    sched_action actions[4];
    CHECK(sched_service_decide(ss, actions, 4) == 1);
    sched_service_end(ss, "a");
    n = sched_service_owner_changes(ss, c, 16, &dropped);
    CHECK_MSG(n == 4, "%zu changes", n);
    int taken = 0, freed = 0;
    for (size_t i = 0; i < n && i < 16; i++) {
        if (!strcmp(c[i].holder, "a")) {
            CHECK_STR_EQ(c[i].user, "alice");
            CHECK(freed == 0);
            taken++;
        } else {
            CHECK(c[i].holder[0] == 0 && c[i].user[0] == 0);
            freed++;
        }
        CHECK(c[i].t_ms > 0 && c[i].slot >= 0 && c[i].slot < 2);
    }
    CHECK(taken == 2 && freed == 2);
    CHECK(sched_service_owner_changes(ss, c, 16, &dropped) == 0); /* read once */
}

static size_t devices_now(sched_service *ss) { return sched_service_device_count(ss); }

/* node1 and node2, each with CPU slots 0 and 1. */
static void two_nodes_of_two(slurm_device devs[4])
{
    for (int i = 0; i < 4; i++) {
        devs[i] = (slurm_device){.kind = LOOM_DEVICE_CPU, .index = i % 2};
        snprintf(devs[i].node, sizeof devs[i].node, "node%d", 1 + i / 2);
    }
}

/* A node kept out (its workers stopped answering) leaves the inventory at
 * once, its job losing its device there; Slurm listing it again does not
 * bring it back until the period ends; then it does. */
static void node_kept_out(sched_service *ss)
{
    slurm_device devs[4];
    two_nodes_of_two(devs);
    CHECK(sched_service_sync_devices(ss, devs, 4) == NULL);
    CHECK(devices_now(ss) == 6); /* 2 of this machine's, 2 + 2 of the nodes' */
    sched_job_spec a = {.id = "a", .plan = "/alice", .max_devices = 6, .elastic = true,
                        .min_devices = 1, .user = "alice"};
    CHECK(loom_err_take(sched_service_submit(ss, &a), NULL, 0) == LOOM_OK);
    sched_action act[4];
    CHECK(sched_service_decide(ss, act, 4) == 1);
    int32_t slots[8];
    CHECK(sched_service_job_devices(ss, "a", slots, 8, NULL, NULL) == 6);
    sched_service_keep_node_out(ss, "node2", "no heartbeat for 3 s");
    CHECK(devices_now(ss) == 4);
    CHECK(sched_service_job_devices(ss, "a", slots, 8, NULL, NULL) == 4);
    CHECK(sched_service_sync_devices(ss, devs, 4) == NULL);
    CHECK_MSG(devices_now(ss) == 4, "Slurm lists node2: still out (%zu devices)", devices_now(ss));
    /* the period is 200 ms: each look is a Slurm read listing node2 */
    WAIT_UNTIL(sched_service_sync_devices(ss, devs, 4) == NULL && devices_now(ss) == 6, 20000);
    CHECK_MSG(devices_now(ss) == 6, "node2 came back after its period: %zu devices",
              devices_now(ss));
}

/* Two nodes both have a CPU slot 0 and 1: a job holding all four is
 * given four distinct ids, each naming its node, this machine's staying
 * their ordinals. */
static void device_ids_across_nodes(sched_service *ss)
{
    slurm_device devs[4];
    two_nodes_of_two(devs);
    CHECK(sched_service_sync_devices(ss, devs, 4) == NULL);
    sched_job_spec a = {.id = "a", .plan = "/alice", .max_devices = 6, .elastic = true,
                        .min_devices = 1, .user = "alice"};
    CHECK(loom_err_take(sched_service_submit(ss, &a), NULL, 0) == LOOM_OK);
    sched_action act[4];
    CHECK(sched_service_decide(ss, act, 4) == 1);
    int32_t ids[8];
    int total = 0, local = 0, on[3] = {0};
    int32_t kind;
    CHECK(sched_service_job_grant(ss, "a", ids, 8, &kind, &total) == 6 && total == 6);
    for (int i = 0; i < 6; i++) {
        for (int k = 0; k < i; k++)
            CHECK_MSG(ids[i] != ids[k], "device ids %d and %d are both %d", i, k, (int)ids[i]);
        char node[64] = "?";
        CHECK(sched_service_device_node(ss, ids[i], node, sizeof node));
        local += node[0] == 0 && ids[i] < 2;
        if (!strncmp(node, "node", 4) && (node[4] == '1' || node[4] == '2'))
            on[node[4] - '0']++;
    }
    CHECK_MSG(local == 2 && on[1] == 2 && on[2] == 2, "2 local, 2 on node1, 2 on node2: %d %d %d",
              local, on[1], on[2]);
    char node[64];
    CHECK(!sched_service_device_node(ss, 77 * 4096, node, sizeof node));
    /* the ids handed back are the ones given: the job holds them all */
    sched_service_handed_back(ss, "a", ids, 6);
    CHECK(sched_service_job_grant(ss, "a", ids, 8, &kind, &total) == 6);
}

/* A reader that falls behind loses the oldest changes, counted. */
static void test_owner_journal_bounded(void)
{
    owner_journal j;
    CHECK(owner_journal_init(&j, 4));
    for (int i = 0; i < 10; i++)
        CHECK(owner_journal_note(&j, 0, i % 2 ? "x" : "", "u", 1, i + 1));
    CHECK(owner_journal_note(&j, 0, "x", "u", 1, 11)); /* no change: not queued */
    owner_change c[8];
    uint64_t dropped = 0;
    CHECK(owner_journal_read(&j, c, 8, &dropped) == 4);
    CHECK(dropped == 6);
    CHECK(c[0].t_ms == 7 && c[3].t_ms == 10);
    CHECK_STR_EQ(c[3].holder, "x");
    /* a device leaving moves the slots above it down, with what was noted */
    CHECK(owner_journal_note(&j, 1, "y", "u", 1, 12) && owner_journal_note(&j, 2, "z", "u", 1, 12));
    owner_journal_remove(&j, 1);
    CHECK(owner_journal_note(&j, 1, "z", "u", 1, 13)); /* was slot 2: no news */
    CHECK(owner_journal_read(&j, c, 8, &dropped) == 2 && dropped == 0);
    owner_journal_free(&j);
}

int main(void)
{
    with_service(pending_reason);
    with_service(owner_journal_between_reads);
    with_service_opt(node_kept_out,
                     &(sched_service_options){.cpu_slots = 2, .node_quarantine_ms = 200});
    with_service_opt(device_ids_across_nodes, &(sched_service_options){.cpu_slots = 2});
    test_owner_journal_bounded();
    return CHECK_DONE();
}

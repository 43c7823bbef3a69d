/*
 * tests/unit/sched/test_sched_service.c - the host's scheduler service as
 * the exec service sees it: a pending job's reason, as fields and in
 * words.
 */
#include <stdlib.h>
#include <unistd.h>

#include "sched/sched_service.h"
#include "sched_test_util.h"

static void test_pending_reason(void)
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
    sched_service_options opt = {.cpu_slots = 2};
    sched_service *ss = NULL;
    e = sched_service_create(st, &opt, &ss);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    if (ss) {
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

int main(void)
{
    test_pending_reason();
    return CHECK_DONE();
}

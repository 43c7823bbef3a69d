/*
 * tests/unit/sched/test_sched_members.c - who may submit to a plan: the
 * user's own plan, plans they are a member of and beneath them; never a
 * plan that does not exist, and a submission makes no plan but the user's
 * own. Members are by immutable id and survive a restart.
 */
#include <stdlib.h>
#include <unistd.h>

#include "sched/sched_service.h"
#include "sched_test_util.h"
#include "util/fs.h"

#define BOB 7
#define BOB_AGAIN 9 /* bob removed and made again: another id */

static int admits(sched_service *ss, const char *plan, const char *user, int64_t id, int admin)
{
    return loom_err_take(sched_service_plan_admits(ss, plan, user, id, admin), NULL, 0);
}

static sched_service *open_service(const char *path, store **st)
{
    loom_error *e = store_open(path, st);
    sched_service_options opt = {.cpu_slots = 2};
    sched_service *ss = NULL;
    if (!e)
        e = sched_service_create(*st, &opt, &ss);
    CHECK_MSG(e == NULL, "%s", loom_err_message(e));
    loom_err_free(e);
    return ss;
}

static loom_error *make_plan(sched_service *ss, const char *path)
{
    sched_plan_change c = {.path = path};
    return sched_service_plan_put(ss, &c, 1, NULL);
}

int main(void)
{
    char dir[] = "/tmp/loom-sched-members-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/state.db", dir);
    store *st = NULL;
    sched_service *ss = open_service(path, &st);
    if (!ss)
        return CHECK_DONE();
    CHECK(loom_err_take(make_plan(ss, "/vip"), NULL, 0) == LOOM_OK);
    CHECK(loom_err_take(make_plan(ss, "/vip/team"), NULL, 0) == LOOM_OK);

    /* The user's own plan, even before it exists, and beneath it. */
    CHECK(admits(ss, "/bob", "bob", BOB, 0) == LOOM_OK);
    CHECK(admits(ss, "/alice", "bob", BOB, 0) == LOOM_E_NOT_FOUND);
    /* Someone else's plan, or an administrator's. */
    CHECK(loom_err_take(sched_service_plan_admits(ss, "/vip", "bob", BOB, 0), err, sizeof err) ==
          LOOM_E_FORBIDDEN);
    CHECK_CONTAINS(err, "user bob is not a member of plan \"/vip\"");
    CHECK_CONTAINS(err, "loom plan member add /vip bob");
    /* An unknown plan, for users and administrators alike. */
    CHECK(loom_err_take(sched_service_plan_admits(ss, "/bobextra1", "bob", BOB, 0), err,
                        sizeof err) == LOOM_E_NOT_FOUND);
    CHECK_CONTAINS(err, "no plan \"/bobextra1\"");
    CHECK(admits(ss, "/bobextra1", "admin", 1, 1) == LOOM_E_NOT_FOUND);
    CHECK(admits(ss, "/vip", "admin", 1, 1) == LOOM_OK);

    /* A submission makes the user's own plan, never another. */
    sched_job_spec own = {.id = "j1", .plan = "/bob", .max_devices = 1, .user = "bob"};
    sched_job_spec other = {.id = "j2", .plan = "/bobextra1", .max_devices = 1, .user = "bob"};
    CHECK(loom_err_take(sched_service_submit(ss, &own), NULL, 0) == LOOM_OK);
    CHECK(loom_err_take(sched_service_submit(ss, &other), NULL, 0) == LOOM_E_NOT_FOUND);
    sched_plan_view v;
    CHECK(loom_err_take(sched_service_plan(ss, "/bob", &v), NULL, 0) == LOOM_OK);
    CHECK(loom_err_take(sched_service_plan(ss, "/bobextra1", &v), NULL, 0) == LOOM_E_NOT_FOUND);

    /* Members, and the plans beneath theirs. */
    CHECK(loom_err_take(sched_service_plan_member_add(ss, "/vip", BOB, "bob"), NULL, 0) == LOOM_OK);
    CHECK(loom_err_take(sched_service_plan_member_add(ss, "/vip", BOB, "bob"), NULL, 0) ==
          LOOM_E_CONFLICT);
    CHECK(loom_err_take(sched_service_plan_member_add(ss, "/none", BOB, "bob"), NULL, 0) ==
          LOOM_E_NOT_FOUND);
    CHECK(admits(ss, "/vip", "bob", BOB, 0) == LOOM_OK);
    CHECK(admits(ss, "/vip/team", "bob", BOB, 0) == LOOM_OK);
    /* By id: another bob is not a member. */
    CHECK(admits(ss, "/vip", "bob", BOB_AGAIN, 0) == LOOM_E_FORBIDDEN);
    sched_plan_member *m = NULL;
    size_t n = 0;
    CHECK(loom_err_take(sched_service_plan_members(ss, "/vip", &m, &n), NULL, 0) == LOOM_OK);
    CHECK(n == 1 && m && m[0].user_id == BOB);
    free(m);
    sched_service_destroy(ss);
    store_close(st);

    /* After a restart the members are still there. */
    ss = open_service(path, &st);
    CHECK(ss && admits(ss, "/vip/team", "bob", BOB, 0) == LOOM_OK);
    CHECK(ss && loom_err_take(sched_service_plan_member_remove(ss, "/vip", BOB, "bob"), NULL,
                              0) == LOOM_OK);
    CHECK(ss && admits(ss, "/vip", "bob", BOB, 0) == LOOM_E_FORBIDDEN);
    CHECK(ss && loom_err_take(sched_service_plan_member_remove(ss, "/vip", BOB, "bob"), err,
                              sizeof err) == LOOM_E_NOT_FOUND);
    CHECK_CONTAINS(err, "not a member");
    sched_service_destroy(ss);
    store_close(st);
    CHECK_OK(fs_rm_rf(dir));
    return CHECK_DONE();
}

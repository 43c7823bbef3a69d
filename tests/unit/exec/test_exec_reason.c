/*
 * tests/unit/exec/test_exec_reason.c - a pending exec's reason as a user
 * sees it, from the scheduler's structure: the exec holding a reservation
 * (or handing devices back) is named only when the viewer may see that
 * exec, decided on the holder field, never on the words; other reasons
 * are their words whatever they contain.
 */
#include <string.h>

#include "check.h"
#include "exec/exec.h"

/* The viewer may see exactly the exec named in ctx. */
static int sees_only(const char *id, void *ctx)
{
    return strcmp(id, (const char *)ctx) == 0;
}

static void check_reason(const sched_reason *r, const char *visible_id, const char *expected)
{
    char buf[192];
    exec_reason_text(r, visible_id ? sees_only : NULL, (void *)visible_id, buf, sizeof buf);
    CHECK_STR_EQ(buf, expected);
}

int main(void)
{
    sched_reason reserved = {.code = SCHED_WAIT_RESERVED, .holder = "bob-17-3",
                             .holder_user = "bob"};
    check_reason(&reserved, "alice-1-1", "reserved for a larger job");
    check_reason(&reserved, "bob-17-3", "reserved for a larger job (bob-17-3)");
    check_reason(&reserved, NULL, "reserved for a larger job (bob-17-3)"); /* administrator */
    sched_reason no_holder = {.code = SCHED_WAIT_RESERVED};
    check_reason(&no_holder, "alice-1-1", "reserved for a larger job");

    sched_reason handback = {.code = SCHED_WAIT_HANDBACK, .count = 2, .holder = "bob-2-1"};
    check_reason(&handback, "x", "waiting for 2 device(s) to be handed back by a shrinking job");
    check_reason(&handback, "bob-2-1",
               "waiting for 2 device(s) to be handed back by a shrinking job (bob-2-1)");

    sched_reason devices = {.code = SCHED_WAIT_DEVICES, .need = 3, .free = 1};
    check_reason(&devices, "x", "waiting for 3 devices, 1 free");
    sched_reason cap = {.code = SCHED_WAIT_CAP, .limit = 2, .plan = "/p/a"};
    check_reason(&cap, "x", "plan /p/a is at its cap of 2");
    /* A plan whose name ends in parentheses is not a holder to hide. */
    sched_reason priority = {.code = SCHED_WAIT_PRIORITY, .count = 2, .plan = "/pr (gpu)"};
    check_reason(&priority, "x", "behind 2 jobs of higher priority in /pr (gpu)");
    sched_reason none = {.code = SCHED_WAIT_NONE};
    check_reason(&none, "x", "");
    return CHECK_DONE();
}

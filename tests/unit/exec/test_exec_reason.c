/*
 * tests/unit/exec/test_exec_reason.c - a pending exec's reason as a user
 * sees it: the exec holding a reservation is named only when the viewer
 * may see that exec; other reasons pass unchanged.
 */
#include <string.h>

#include "check.h"
#include "exec/exec.h"

/* The viewer may see exactly the exec named in ctx. */
static int sees_only(const char *id, void *ctx)
{
    return strcmp(id, (const char *)ctx) == 0;
}

static void check_hidden(const char *reason, const char *visible_id, const char *expected)
{
    char buf[192];
    strcpy(buf, reason);
    exec_reason_hide_holder(buf, sees_only, (void *)visible_id);
    CHECK_STR_EQ(buf, expected);
}

int main(void)
{
    check_hidden("reserved for a larger job (bob-17-3)", "alice-1-1", "reserved for a larger job");
    check_hidden("reserved for a larger job (alice-1-1)", "alice-1-1",
                 "reserved for a larger job (alice-1-1)");
    check_hidden("reserved for a larger job", "alice-1-1", "reserved for a larger job");
    check_hidden("waiting for 3 devices, 1 free", "x", "waiting for 3 devices, 1 free");
    check_hidden("plan /p/a is at its cap of 2", "x", "plan /p/a is at its cap of 2");
    check_hidden("behind 2 jobs of higher priority in /pr", "x",
                 "behind 2 jobs of higher priority in /pr");
    check_hidden("", "x", "");
    return CHECK_DONE();
}

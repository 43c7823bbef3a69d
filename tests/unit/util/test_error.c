/* util/error: an error made from a failed system call keeps its errno
 * through wrap and recode, and says strerror in its message. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "util/error.h"

static void sys_error_keeps_errno(void)
{
    loom_error *e = loom_err_sys(LOOM_E_NOT_FOUND, ENOENT, "cannot open %s", "/x/y");
    CHECK(loom_err_code(e) == LOOM_E_NOT_FOUND);
    CHECK(loom_err_errno(e) == ENOENT);
    char want[200];
    snprintf(want, sizeof want, "cannot open /x/y: %s", strerror(ENOENT));
    CHECK_STR_EQ(loom_err_message(e), want);
    e = loom_err_recode(loom_err_wrap(e, "the spec"), LOOM_E_INTERNAL);
    CHECK(loom_err_code(e) == LOOM_E_INTERNAL);
    CHECK(loom_err_errno(e) == ENOENT);
    CHECK_CONTAINS(loom_err_message(e), "the spec: cannot open /x/y: ");
    loom_err_free(e);
}

static void other_errors_have_none(void)
{
    CHECK(loom_err_errno(NULL) == 0);
    loom_error *e = loom_err(LOOM_E_INVALID, "name: expected letters");
    CHECK(loom_err_errno(e) == 0);
    CHECK_STR_EQ(loom_err_message(e), "name: expected letters");
    loom_err_free(e);
    /* LOOM_OK is no error code: such an error is the host's fault */
    e = loom_err_sys(LOOM_OK, EIO, "write");
    CHECK(loom_err_code(e) == LOOM_E_INTERNAL);
    CHECK(loom_err_errno(e) == EIO);
    loom_err_free(e);
}

int main(void)
{
    sys_error_keeps_errno();
    other_errors_have_none();
    return CHECK_DONE();
}

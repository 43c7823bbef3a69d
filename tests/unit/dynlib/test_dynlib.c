/*
 * tests/unit/dynlib/test_dynlib.c - util/dynlib against libm: a table is
 * filled from the first library found (also in the fallback folder), a
 * missing library or symbol is an error naming it, a failure leaves the
 * table untouched, and dynlib_open_once gives every caller the first
 * outcome.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../check.h"
#include "util/dynlib.h"

typedef struct math_api {
    __typeof__(&cos) cos;
    __typeof__(&sqrt) sqrt;
    __typeof__(&cos) loom_no_such_function;
} math_api;

static const dynlib_symbol two[] = {DYNLIB_SYMBOL(math_api, cos), DYNLIB_SYMBOL(math_api, sqrt)};
static const dynlib_symbol three[] = {DYNLIB_SYMBOL(math_api, cos), DYNLIB_SYMBOL(math_api, sqrt),
                                      DYNLIB_SYMBOL(math_api, loom_no_such_function)};

static const char *message_of(const loom_error *err)
{
    return err ? loom_err_message(err) : "";
}

int main(void)
{
    /* Found by the loader's own search, the first soname that exists. */
    static const char *const sonames[] = {"libloom-absent.so.9", "libm.so.6", NULL};
    math_api m = {0};
    void *handle = NULL;
    dynlib_spec spec = {"the math library", sonames, NULL, two, 2};
    loom_error *err = dynlib_open(&spec, &m, &handle);
    CHECK_MSG(err == NULL, "%s", message_of(err));
    CHECK(handle != NULL && m.cos != NULL && m.sqrt != NULL && m.loom_no_such_function == NULL);
    volatile double x = 0.0, y = 16.0;
    CHECK(m.cos(x) == 1.0 && m.sqrt(y) == 4.0);

    /* Not found anywhere: named, with every path tried. */
    static const char *const absent[] = {"libloom-absent.so.9", NULL};
    math_api none = {0};
    dynlib_spec missing = {"the loom test library", absent, "/nonexistent", two, 2};
    err = dynlib_open(&missing, &none, &handle);
    CHECK(err != NULL && loom_err_code(err) == LOOM_E_UNAVAILABLE && handle == NULL);
    CHECK_CONTAINS(message_of(err), "the loom test library cannot be loaded (tried "
                                    "libloom-absent.so.9, /nonexistent/libloom-absent.so.9)");
    CHECK(none.cos == NULL);
    loom_err_free(err);

    /* Found only in the fallback folder. */
    Dl_info info;
    CHECK(dladdr((void *)m.cos, &info) && info.dli_fname);
    char dir[] = "/tmp/loom-dynlib-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char link[sizeof dir + 64];
    snprintf(link, sizeof link, "%s/libloom-fallback.so.1", dir);
    CHECK(symlink(info.dli_fname, link) == 0);
    static const char *const fallback_only[] = {"libloom-fallback.so.1", NULL};
    math_api fb = {0};
    dynlib_spec fallback = {"the math library", fallback_only, dir, two, 2};
    err = dynlib_open(&fallback, &fb, &handle);
    CHECK_MSG(err == NULL, "%s", message_of(err));
    CHECK(fb.sqrt != NULL && fb.sqrt(y) == 4.0);
    unlink(link);
    rmdir(dir);

    /* A symbol the library lacks: named, and nothing is filled. */
    math_api partial = {0};
    dynlib_spec lacking = {"the math library", sonames, NULL, three, 3};
    err = dynlib_open(&lacking, &partial, &handle);
    CHECK(err != NULL && loom_err_code(err) == LOOM_E_UNAVAILABLE && handle == NULL);
    CHECK_CONTAINS(message_of(err), "the math library (libm.so.6) lacks loom_no_such_function");
    CHECK(partial.cos == NULL && partial.sqrt == NULL);
    loom_err_free(err);

    /* Once: the same failure (a copy each time), or the same table. */
    static dynlib_once failing = DYNLIB_ONCE_INIT;
    for (int i = 0; i < 2; i++) {
        err = dynlib_open_once(&failing, &missing, &none);
        CHECK(err != NULL && loom_err_code(err) == LOOM_E_UNAVAILABLE);
        CHECK_CONTAINS(message_of(err), "the loom test library cannot be loaded");
        loom_err_free(err);
    }
    static dynlib_once working = DYNLIB_ONCE_INIT;
    math_api once = {0};
    CHECK(dynlib_open_once(&working, &spec, &once) == NULL && once.sqrt(y) == 4.0);
    once.sqrt = NULL; /* a second call does not open or fill again */
    CHECK(dynlib_open_once(&working, &spec, &once) == NULL && once.sqrt == NULL);
    return CHECK_DONE();
}

/*
 * tests/check.h - the unit tests' assertions. A failed CHECK prints where and
 * what, counts, and the test goes on; CHECK_DONE() prints the tally as
 * "N passed, N failed" and is the test's exit status.
 */
#ifndef LOOM_TEST_CHECK_H
#define LOOM_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (cond) {                                                            \
            check_passed++;                                                    \
        } else {                                                               \
            check_failed++;                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,   \
                    #cond);                                                    \
        }                                                                      \
    } while (0)

#define CHECK_MSG(cond, ...)                                                   \
    do {                                                                       \
        if (cond) {                                                            \
            check_passed++;                                                    \
        } else {                                                               \
            check_failed++;                                                    \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__,   \
                    #cond);                                                    \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
        }                                                                      \
    } while (0)

/* Through functions, so an array argument does not trip -Waddress. */
static inline const char *check_text(const char *s) { return s ? s : "(null)"; }
static inline int check_str_eq(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}
static inline int check_contains(const char *hay, const char *needle)
{
    return hay != NULL && needle != NULL && strstr(hay, needle) != NULL;
}

#define CHECK_STR_EQ(a, b)                                                     \
    CHECK_MSG(check_str_eq((a), (b)), "\"%s\" != \"%s\"", check_text(a),      \
              check_text(b))

#define CHECK_CONTAINS(hay, needle)                                            \
    CHECK_MSG(check_contains((hay), (needle)),                                 \
              "\"%s\" does not contain \"%s\"", check_text(hay),               \
              check_text(needle))

/* expr gives a loom_error * (util/error.h): passes when NULL, else prints
 * its message; frees it either way. */
#define CHECK_OK(expr)                                                         \
    do {                                                                       \
        loom_error *check_err_ = (expr);                                       \
        CHECK_MSG(check_err_ == NULL, "%s", loom_err_message(check_err_));    \
        loom_err_free(check_err_);                                             \
    } while (0)

#define CHECK_DONE()                                                           \
    (printf("%d passed, %d failed\n", check_passed, check_failed),             \
     check_failed == 0 && check_passed > 0 ? 0 : 1)

#endif

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

#define CHECK_STR_EQ(a, b)                                                     \
    CHECK_MSG((a) != NULL && (b) != NULL && strcmp((a), (b)) == 0,             \
              "\"%s\" != \"%s\"", (a) ? (a) : "(null)", (b) ? (b) : "(null)")

#define CHECK_CONTAINS(hay, needle)                                            \
    CHECK_MSG((hay) != NULL && strstr((hay), (needle)) != NULL,                \
              "\"%s\" does not contain \"%s\"", (hay) ? (hay) : "(null)",      \
              (needle))

#define CHECK_DONE()                                                           \
    (printf("%d passed, %d failed\n", check_passed, check_failed),             \
     check_failed == 0 && check_passed > 0 ? 0 : 1)

#endif

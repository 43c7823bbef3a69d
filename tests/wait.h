/*
 * tests/wait.h - the unit tests' one way to wait for something another
 * thread or process does: WAIT_UNTIL(cond, timeout_ms) evaluates cond every
 * millisecond until it holds or timeout_ms have passed on the monotonic
 * clock; the test then CHECKs cond. Never a fixed sleep, which a busy
 * machine outlasts (scripts/check-test-sleeps lists every sleep in tests/).
 */
#ifndef LOOM_TEST_WAIT_H
#define LOOM_TEST_WAIT_H

#include <stdint.h>
#include <time.h>

static inline uint64_t wait_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* The poll interval: short against any timeout, long enough not to spin. */
static inline void wait_pause(void)
{
    struct timespec t = {0, 1000 * 1000};
    nanosleep(&t, NULL);
}

#define WAIT_UNTIL(cond, timeout_ms)                                           \
    do {                                                                       \
        uint64_t wait_end_ = wait_now_ms() + (uint64_t)(timeout_ms);           \
        while (!(cond) && wait_now_ms() < wait_end_)                           \
            wait_pause();                                                      \
    } while (0)

#endif

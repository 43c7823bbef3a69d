/*
 * tests/unit/comm/comm_test_util.h - what the collectives tests share:
 * forking worker processes, a shared page where workers leave their errors
 * for the parent to check, and deterministic test data with its exact
 * expected average.
 */
#ifndef LOOM_TEST_COMM_UTIL_H
#define LOOM_TEST_COMM_UTIL_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "plugin/host_api.h"
#include "wait.h"

/* What one worker tells the parent, in memory shared across fork. */
typedef struct worker_report {
    _Atomic int32_t stage;    /* progress marker the parent can wait for */
    int32_t error_code;       /* of the error the worker was asked to expect */
    double error_after_ms;    /* how long that call took to fail */
    char error_message[512];
} worker_report;

static inline worker_report *reports_create(unsigned count)
{
    void *p = mmap(NULL, count * sizeof(worker_report), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        abort();
    }
    memset(p, 0, count * sizeof(worker_report));
    return p;
}

static inline void report_error(worker_report *r, loom_error *err, uint64_t started_ns)
{
    r->error_code = err ? loom_err_code(err) : 0;
    r->error_after_ms = (double)(comm_now_ns() - started_ns) / 1e6;
    snprintf(r->error_message, sizeof(r->error_message), "%s",
             err ? loom_err_message(err) : "(no error)");
}

/* Runs fn(index, arg) in a child; its return value is the exit status. */
static inline pid_t spawn_worker(int (*fn)(int, void *), int index, void *arg)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        abort();
    }
    if (pid == 0)
        exit(fn(index, arg));
    return pid;
}

/* Exit status of the child, or 128 + signal. */
static inline int wait_worker(pid_t pid)
{
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* Waits (bounded) until a worker's report reaches `stage`. */
static inline int wait_stage(worker_report *r, int32_t stage, uint32_t timeout_ms)
{
    WAIT_UNTIL(atomic_load(&r->stage) >= stage, timeout_ms);
    return atomic_load(&r->stage) >= stage;
}

static inline void segment_name(char *out, size_t size, const char *tag)
{
    snprintf(out, size, "/loom-test-comm-%s-%d", tag, (int)getpid());
}

/* Prints the error (if any) from a worker and says whether it failed. */
static inline int worker_failed(loom_error *err, const char *what, int index)
{
    if (err == NULL)
        return 0;
    fprintf(stderr, "worker %d: %s: %s\n", index, what, loom_err_message(err));
    loom_err_free(err);
    return 1;
}

/* A value in [-8, 8) with a full mantissa, a function of (slot, i, salt). */
static inline float test_value(uint32_t slot, size_t i, uint32_t salt)
{
    uint32_t x = (uint32_t)i * 2654435761u ^ (slot + 1) * 0x85ebca6bu ^ salt * 0x9e3779b9u;
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    x *= 0x297a2d39u;
    x ^= x >> 15;
    return (float)(x >> 8) / (float)(1u << 24) * 16.0f - 8.0f;
}

/* The average as the contract defines it: sum in ascending slot order,
 * then divide by the number of members. */
static inline float expected_average(const uint32_t *slots, uint32_t world, size_t i,
                                     uint32_t salt)
{
    float acc = test_value(slots[0], i, salt);
    if (world == 1)
        return acc;
    acc = acc + test_value(slots[1], i, salt);
    for (uint32_t r = 2; r < world; r++)
        acc += test_value(slots[r], i, salt);
    return acc / (float)world;
}

static inline void fill_values(float *buf, size_t n, uint32_t slot, uint32_t salt)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = test_value(slot, i, salt);
}

/* Number of elements whose bits differ from the expected average. */
static inline size_t count_wrong(const float *buf, size_t n, const uint32_t *slots,
                          uint32_t world, uint32_t salt, size_t *first_wrong)
{
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        float want = expected_average(slots, world, i, salt);
        if (memcmp(&buf[i], &want, sizeof(float)) != 0) {
            if (wrong == 0 && first_wrong)
                *first_wrong = i;
            wrong++;
        }
    }
    return wrong;
}

#endif

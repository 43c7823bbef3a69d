/*
 * tests/unit/sched/sched_test_util.h - helpers for the scheduler tests:
 * build a scheduler with N CPU slots, submit jobs tersely, read a job's
 * device count, and check the books (no device held twice, owners and
 * counts agree).
 */
#ifndef LOOM_TEST_SCHED_UTIL_H
#define LOOM_TEST_SCHED_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "plugin/host_api.h"
#include "sched/sched.h"

static inline sched *make_sched(int32_t devices, double hysteresis)
{
    sched_options opt = {.hysteresis = hysteresis};
    sched *s = sched_create(&opt);
    for (int32_t i = 0; i < devices; i++)
        sched_add_device(s, LOOM_DEVICE_CPU, i, NULL);
    return s;
}

/* Submits a job; returns 0 or prints the error and returns -1. */
static inline int submit_spec(sched *s, const sched_job_spec *spec, double now)
{
    loom_error *err = sched_submit(s, spec, now);
    if (err) {
        fprintf(stderr, "submit %s: %s\n", spec->id, loom_err_message(err));
        loom_err_free(err);
        return -1;
    }
    return 0;
}

static inline int submit_full(sched *s, const char *id, const char *plan, bool elastic,
                       int32_t min, int32_t max, int32_t priority, double now)
{
    sched_job_spec spec = {.id = id, .plan = plan, .elastic = elastic,
                           .min_devices = min, .max_devices = max,
                           .priority = priority};
    return submit_spec(s, &spec, now);
}

static inline int submit(sched *s, const char *id, const char *plan, int32_t min, int32_t max,
                  double now)
{
    return submit_full(s, id, plan, true, min, max, 0, now);
}

static inline int32_t held(const sched *s, const char *id)
{
    sched_job_info info;
    return sched_get_job(s, id, &info) ? info.count : -1;
}

static inline int32_t state_of(const sched *s, const char *id)
{
    sched_job_info info;
    return sched_get_job(s, id, &info) ? info.state : -1;
}

static inline size_t plan_now(sched *s, double now)
{
    const sched_decision *d;
    return sched_plan(s, now, &d);
}

static inline void add_plan(sched *s, const char *path, double weight, int32_t min, int32_t cap,
                     int32_t policy)
{
    sched_plan_spec spec = {.path = path, .weight = weight, .min_devices = min,
                            .cap_devices = cap, .policy = policy};
    loom_error *err = sched_add_plan(s, &spec);
    CHECK_MSG(err == NULL, "add plan %s: %s", path, loom_err_message(err));
    loom_err_free(err);
}

/* The books agree: every held slot is owned by its job exactly once, the
 * free count matches, and no job holds outside the inventory. */
static inline bool books_consistent(const sched *s)
{
    size_t n = sched_device_count(s);
    int *seen = calloc(n ? n : 1, sizeof *seen);
    size_t owned = 0;
    for (size_t slot = 0; slot < n; slot++) {
        sched_device_info d;
        sched_device(s, (int32_t)slot, &d);
        if (!d.owner)
            continue;
        owned++;
        sched_job_info j;
        if (!sched_get_job(s, d.owner, &j)) {
            free(seen);
            return false;
        }
        bool listed = false;
        for (int32_t k = 0; k < j.count; k++)
            listed |= j.devices[k] == (int32_t)slot;
        if (!listed || seen[slot]++) {
            free(seen);
            return false;
        }
    }
    free(seen);
    return owned + sched_free_device_count(s) == n;
}

#endif

/*
 * sched/sched_internal.h - the scheduler's private state, shared by the files
 * of host/sched/ (sched.c: inventory and jobs; sched_plans.c: the plan tree;
 * sched_policy.c: admission, targets and decisions). Not for other modules.
 */
#ifndef LOOM_SCHED_SCHED_INTERNAL_H
#define LOOM_SCHED_SCHED_INTERNAL_H

#include "sched/sched.h"
#include "sched/waterfill.h"

typedef struct sched_job {
    char *id;
    int32_t plan;             /* index into sched.plans */
    int32_t kind;
    bool elastic;
    int32_t min_devices;      /* elastic: >= 1; fixed: == max_devices */
    int32_t max_devices;
    int32_t priority;
    bool wait_if_too_large;
    uint64_t tag;
    int32_t state;            /* SCHED_JOB_QUEUED or SCHED_JOB_RUNNING */
    uint64_t seq;             /* submission order */
    double submitted, started, last_resize;
    int32_t *devices;         /* slots held, oldest first */
    int32_t count, devices_cap;

    /* scratch of one sched_plan round */
    int32_t lo, hi;           /* bounds for the water-fill */
    int32_t target;
    bool active;              /* running, or admitted this round */
    bool pinned;
    int32_t admit_priority;   /* priority in a priority plan, else 0 */
} sched_job;

typedef struct sched_plan_node {
    char *path;
    int32_t parent;           /* index, -1 for the root */
    double weight;
    int32_t min_devices, cap_devices, policy;

    /* the tree, rebuilt by sched_plans_reindex() */
    int32_t first_child, child_count;   /* into sched.child_index */
    int32_t depth;

    /* scratch of one sched_plan round */
    int64_t need;             /* sum of the active jobs' lower bounds below */
    int64_t upper;            /* what the subtree could use (caps applied) */
    int32_t alloc;            /* devices given to the subtree */
    int32_t jobs_first, jobs_count;     /* own active jobs in sched.plan_jobs */
    bool blocked;             /* admission: a job here waits for a cap */
} sched_plan_node;

typedef struct sched_device_rec {
    int32_t kind, index;
    char *node;
    sched_job *owner;
} sched_device_rec;

struct sched {
    sched_options opt;

    sched_device_rec *devices;
    size_t n_devices, devices_cap;
    uint64_t *free_bits;      /* bit set = slot free */
    size_t free_words, n_free;

    sched_plan_node *plans;   /* plans[0] is the root "/" */
    size_t n_plans, plans_cap;
    int32_t *child_index;     /* children of each plan, grouped */
    int32_t *topo;            /* plan indices, parents before children */

    sched_job **jobs;         /* in submission (seq) order */
    size_t n_jobs, jobs_cap;
    uint64_t next_seq;

    /* scratch of sched_plan, grown as needed */
    sched_job **queue;        /* queued jobs in admission order */
    sched_job **plan_jobs;    /* active jobs bucketed by plan */
    size_t scratch_jobs_cap;
    wf_item *wf_items;        /* one plan's children, or one plan's jobs */
    size_t wf_items_cap;
    wf_ctx wf;

    /* the last round's decisions */
    sched_decision *decisions;
    size_t n_decisions, decisions_cap;
    int32_t *decision_slots;
    size_t n_decision_slots, decision_slots_cap;
    double next_review;
};

/* sched_plans.c */
bool sched_plans_init(sched *s);
void sched_plans_free(sched *s);
int32_t sched_plan_find(const sched *s, const char *path);
/* Rebuilds child lists and the topological order after a plan change.
 * Returns false when out of memory. */
bool sched_plans_reindex(sched *s);

/* sched.c */
sched_job *sched_job_find(const sched *s, const char *id);
/* Validates a job spec; on success fills min/max/plan into *job. */
loom_error *sched_job_check(const sched *s, const sched_job_spec *spec,
                            sched_job *job);
/* The job's need at admission: minimum when elastic, else max_devices. */
static inline int32_t sched_job_need(const sched_job *j)
{
    return j->elastic ? j->min_devices : j->max_devices;
}
/* Slot management used by the policy: take the lowest free slot, give one
 * back. */
int32_t sched_take_free_slot(sched *s, sched_job *owner);
void sched_release_slot(sched *s, int32_t slot);
bool sched_job_reserve(sched_job *j, int32_t n);

#endif

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
    int32_t pool;             /* sched_pool */
    bool elastic;
    int32_t min_devices;      /* elastic: >= 1; fixed: == max_devices */
    int32_t max_devices;
    int32_t priority;
    bool wait_if_too_large;
    uint64_t tag;
    int32_t state;            /* SCHED_JOB_QUEUED or SCHED_JOB_RUNNING */
    uint64_t seq;             /* submission order */
    double submitted, started, last_resize;
    char *user;               /* NULL: anonymous */
    double expected_seconds;  /* 0: unknown */
    double end_estimate;      /* set at start or by the caller; INFINITY */
    double head_since;        /* first time it waited as the head; NAN */
    double held_shadow;       /* its reservation's earliest dated start;
                                 INFINITY until dated */
    int32_t held_at;          /* the plan of that reservation (0: root) */
    /* why it waits, as of the last round (sched_wait without strings) */
    int32_t wait_code, wait_need, wait_free, wait_limit, wait_count;
    int32_t wait_plan;        /* plan index or -1 */
    uint64_t wait_holder;     /* seq of the reservation's job, or UINT64_MAX */
    int32_t *devices;         /* slots held, oldest first */
    int32_t count, devices_cap;

    /* scratch of one sched_plan round */
    int32_t lo, hi;           /* bounds for the water-fill */
    int32_t target;
    bool active;              /* running, or admitted this round */
    bool pinned;
    int32_t admit_priority;   /* admission: priority in a priority plan */
    bool by_user;             /* admission: its plan splits by user */
    int32_t group;            /* admission: index into sched.groups, or -1 */
    bool considered;          /* admission: taken out of the queue */
} sched_job;

/* Admission scratch: a plan's queued jobs of one user (or, in a priority
 * plan or a FIFO mode, all of them), in the order they are considered. */
typedef struct sched_queue_group {
    int32_t plan;
    const char *user;         /* NULL: anonymous or not split by user */
    int32_t first, count, next;   /* range in sched.queue, and cursor */
    int64_t usage;            /* the user's active need in the plan */
} sched_queue_group;

typedef struct sched_plan_node {
    char *path;
    int32_t parent;           /* index, -1 for the root */
    double weight;
    int32_t min_devices, cap_devices, policy;
    uint64_t job_limits[SCHED_LIMITS]; /* 0: inherit */

    /* the tree, rebuilt by sched_plans_reindex() */
    int32_t first_child, child_count;   /* into sched.child_index */
    int32_t depth;

    /* scratch of one sched_plan round */
    int64_t need;             /* sum of the active jobs' lower bounds below */
    int64_t upper;            /* what the subtree could use (caps applied) */
    int32_t alloc;            /* devices given to the subtree */
    int32_t jobs_first, jobs_count;     /* own active jobs in sched.plan_jobs */
    bool blocked;             /* admission: a job here waits for a cap */
    int64_t own_need;         /* admission: need of the plan's own jobs */
    int64_t pending;          /* admission: queued jobs left below */
    int32_t groups_first, groups_count; /* admission: into sched.groups */
    struct sched_job *res_job;          /* admission: this plan's (or, at the
                                           root, the inventory's) head job */
    double res_shadow;                  /* when it can start (see admit) */
    int64_t res_extra;                  /* free then beyond its need */
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
    /* The devices the round now being planned shares: n_devices, or one
     * kind's where the inventory holds both (sched_pool). */
    size_t pool_devices;
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
    sched_queue_group *groups;
    size_t groups_cap;
    double *ends;             /* admission: (end, need) pairs for a shadow */
    size_t ends_cap;
    size_t reserved;          /* devices the last round held for the head */
    int64_t reserve_head;     /* admission: the held head's need, or 0 */
    size_t waiting_for_devices;
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
/* `slot` (free) goes to `owner`. */
void sched_take_slot(sched *s, int32_t slot, sched_job *owner);
bool sched_slot_free(const sched *s, int32_t slot);
void sched_release_slot(sched *s, int32_t slot);
/* Placement (placement.c): the slot `j` takes next, wanting `want` more
 * (-1: none free), and the slot it gives back (removed from its list and
 * freed; -1: it holds none). Across nodes, a job stays on as few as it can. */
int32_t sched_place_take(sched *s, sched_job *j, int32_t want);
int32_t sched_place_give_back(sched *s, sched_job *j);
bool sched_job_reserve(sched_job *j, int32_t n);

/* sched_admit.c: marks the queued jobs that start this round active (lo,
 * hi set) and records why the others wait. p.need must hold the running
 * jobs' needs (sum_needs). Returns false when out of memory. */
bool sched_admit(sched *s, double now);
/* sched_policy.c */
int64_t sched_plan_limit(const sched *s, int32_t p);

/* pools.c: where the inventory holds both kinds, a round per kind. */
typedef struct sched_pool_round {
    sched_job **jobs;         /* every job, restored on leaving */
    size_t n_jobs;
} sched_pool_round;
/* LOOM_DEVICE_CUDA for SCHED_POOL_GPU, else LOOM_DEVICE_CPU. */
int32_t sched_pool_device_kind(int32_t pool);
bool sched_inventory_mixed(const sched *s);
/* The devices a job of `pool` can be given: its kind's where the inventory
 * is mixed, else all. */
size_t sched_pool_size(const sched *s, int32_t pool);
/* Narrows s to the jobs and free devices of `kind` (false: out of memory,
 * nothing changed); leave restores the rest, keeping the round's moves. */
bool sched_pool_enter(sched *s, int32_t kind, sched_pool_round *saved);
void sched_pool_leave(sched *s, int32_t kind, sched_pool_round *saved);

#endif

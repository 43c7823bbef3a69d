/*
 * sched/sched.h - the scheduler's policy core: the devices the host may hand
 * out (inventory), the resource plans that divide them, the jobs that consume
 * them (training jobs, HPO experiments, inference kernel instances), and the
 * decisions that move devices between jobs.
 *
 * The core is pure: no clock, no I/O, no processes. The caller passes `now`
 * (seconds on any monotonic clock) into the calls that need it, persists what
 * it must, and carries out the decisions sched_plan() returns. The same code
 * runs the trace simulator (sim.h) on a simulated clock.
 *
 * Not thread-safe: one sched is driven by one thread (or under one lock).
 *
 * Policy, in short (the details are at sched_plan below):
 *  - Plans form a tree under the root "/". Between the children of a plan,
 *    devices are divided by share weight (water-filling), each child getting
 *    at least its guaranteed minimum when it can use it and never more than
 *    its cap. A plan's own jobs (jobs directly in a plan that also has child
 *    plans) count as one more child of weight 1.
 *  - Inside a plan, the plan's policy divides its devices between its jobs:
 *    fair (evenly between the jobs' users, then evenly between each user's
 *    jobs, within each job's [min, max]) or priority (higher priority first,
 *    equal priorities evenly; lower ones keep their minimum).
 *  - Leftover devices go to whoever can use them: no device stays idle while
 *    a running job could grow (within its maximum and its plans' caps).
 *  - A running job is never stopped by the scheduler; an elastic job is never
 *    shrunk below its minimum. A fixed (non-elastic) job gets exactly its
 *    max_devices or waits in the queue.
 */
#ifndef LOOM_SCHED_SCHED_H
#define LOOM_SCHED_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <loom/abi.h>

typedef struct sched sched;

typedef enum sched_admission {
    SCHED_ADMIT_FAIR = 0,          /* per plan by deficit, EASY backfilling */
    SCHED_ADMIT_FIFO = 1,          /* one global submission order, no
                                      backfilling (a baseline) */
    SCHED_ADMIT_FIFO_BACKFILL = 2  /* global order with EASY backfilling
                                      (the batch-system baseline) */
} sched_admission;

/* Seconds a head job whose reservation cannot be dated (a job it waits for
 * has no end estimate) lets smaller jobs pass before its reservation holds
 * devices as they free up. */
#define SCHED_DEFAULT_RESERVATION_AFTER 60.0

typedef struct sched_options {
    /* Minimum seconds between two resizes of the same running job (the
     * hysteresis interval; see sched_plan for when it is overridden).
     * 0 turns hysteresis off. */
    double hysteresis;
    int32_t admission;         /* sched_admission; 0 is the default */
    /* 0: SCHED_DEFAULT_RESERVATION_AFTER; < 0: the reservation holds at
     * once. See sched_plan. */
    double reservation_after;
} sched_options;

/* Creates an empty scheduler: no devices, one plan "/" (weight 1, fair, no
 * minimum, no cap). `opt` may be NULL for the defaults (no hysteresis).
 * Returns NULL when out of memory. */
sched *sched_create(const sched_options *opt);
void sched_free(sched *s);

/* ---- inventory --------------------------------------------------------- */

/* A device as the scheduler sees it. Devices are addressed by their slot:
 * 0..sched_device_count()-1, in the order they were added. */
typedef struct sched_device_info {
    int32_t kind;       /* loom_device_kind: LOOM_DEVICE_CPU or LOOM_DEVICE_CUDA */
    int32_t index;      /* CUDA ordinal, or CPU slot number, on its node */
    const char *node;   /* NULL: this host; else the node agent's name */
    const char *owner;  /* id of the job holding it, NULL when free */
} sched_device_info;

/* Adds one device and returns its slot, or -1 when out of memory or when
 * (kind, index, node) is already in the inventory. */
int32_t sched_add_device(sched *s, int32_t kind, int32_t index, const char *node);
/* Takes a device out of the inventory (its node left): the job holding it
 * loses it at once, and its id is copied to owner ("" when free; owner may
 * be NULL). Every slot above `slot` moves down by one. False for a slot
 * that does not exist. */
bool sched_remove_device(sched *s, int32_t slot, char *owner, size_t len);
size_t sched_device_count(const sched *s);
/* Fills `out` for `slot`; returns false when the slot does not exist. The
 * strings are borrowed until the device's owner or the inventory changes. */
bool sched_device(const sched *s, int32_t slot, sched_device_info *out);
/* The slot of (kind, index, node), or -1. */
int32_t sched_find_device(const sched *s, int32_t kind, int32_t index, const char *node);
size_t sched_free_device_count(const sched *s);

/* Number of CUDA devices the driver reports (honouring CUDA_VISIBLE_DEVICES),
 * 0 when there is no driver or no GPU. Loads libcuda at run time, so the host
 * needs no CUDA to build or run. */
int32_t sched_cuda_device_count(void);
/* Adds this host's devices: every CUDA device when `use_cuda` and any is
 * found; otherwise `cpu_slots` CPU slots (0: the number of online cores).
 * Returns the number of devices added, or -1 when out of memory. */
int32_t sched_add_local_devices(sched *s, int32_t cpu_slots, bool use_cuda);

/* ---- resource plans ---------------------------------------------------- */

typedef enum sched_policy {
    SCHED_POLICY_FAIR = 0,
    SCHED_POLICY_PRIORITY = 1
} sched_policy;

/* The per-plan job limits, their field names and bounds (those of the serve
 * flags they override). */
enum { SCHED_LIMIT_PROCS, SCHED_LIMIT_MEMORY, SCHED_LIMIT_DISK, SCHED_LIMITS };

typedef struct sched_plan_spec {
    const char *path;     /* "/proj/training": '/'-separated, no empty parts */
    const char *parent;   /* NULL: derived from the path ("/proj"; "/" for "/proj") */
    double weight;        /* share weight, > 0 */
    int32_t min_devices;  /* guaranteed minimum when the plan can use it, >= 0 */
    int32_t cap_devices;  /* at most this many devices, >= 0; 0: no cap */
    int32_t policy;       /* sched_policy for the plan's own jobs */
    /* What each exec in the plan (or beneath it) may take, set by an
     * administrator over the host's `loom serve --job-max-*`; 0: inherit
     * (the nearest plan up the tree that sets it, else the host's). */
    uint64_t job_limits[SCHED_LIMITS];
} sched_plan_spec;

typedef struct sched_limit_info {
    const char *field;      /* "max_procs", "max_memory", "max_disk" */
    const char *serve_flag; /* the host's default: "--job-max-procs" */
    uint64_t min, max;      /* a value other than 0 lies in [min, max] */
    int bytes;              /* a size in bytes (K, M, G on the command line) */
} sched_limit_info;
extern const sched_limit_info sched_limit_infos[SCHED_LIMITS];

/* The limits an exec in plan `path` runs under: each from the nearest plan
 * up the tree that sets it, starting at `path` or, when that is no plan, at
 * its nearest ancestor path that is; else host[i]. from[i] names the plan
 * that set value[i], NULL when it is the host's (borrowed until the plans
 * change). */
void sched_plan_limits(const sched *s, const char *path, const uint64_t host[SCHED_LIMITS],
                       uint64_t value[SCHED_LIMITS], const char *from[SCHED_LIMITS]);

/* Errors name the plan and the field: LOOM_ERR_INVALID_ARGUMENT for a bad
 * path, a weight <= 0, a negative minimum or cap, an unknown policy, a cycle
 * or a cap below what the plan's running jobs need; LOOM_ERR_NOT_FOUND for an
 * unknown parent or plan; LOOM_ERR_ALREADY_EXISTS for a duplicate path.
 * The returned error is the caller's (loom_err_free). */
loom_error *sched_add_plan(sched *s, const sched_plan_spec *spec);
/* Changes weight, minimum, cap, policy and (when `parent` is set) parent of
 * an existing plan; "/" accepts everything but a parent. */
loom_error *sched_update_plan(sched *s, const sched_plan_spec *spec);
/* Refused while the plan has child plans or unfinished jobs. */
loom_error *sched_remove_plan(sched *s, const char *path);
/* Adds several plans at once, in any order (a parent may come after its
 * child): for a restart or a trace. All or nothing. */
loom_error *sched_load_plans(sched *s, const sched_plan_spec *specs, size_t n);
/* Fills `out` (strings borrowed until the plans change); false if unknown. */
bool sched_get_plan(const sched *s, const char *path, sched_plan_spec *out);
/* What plan `path` and the plans beneath it use now: the devices their
 * running jobs hold, and the devices the last round gave them (their share
 * of what is wanted: fair share or priority, minimums and caps applied).
 * False when there is no such plan. */
bool sched_plan_usage(const sched *s, const char *path, int32_t *held, int32_t *given);

/* ---- jobs -------------------------------------------------------------- */

typedef enum sched_job_kind {
    SCHED_JOB_TRAINING = 0,
    SCHED_JOB_EXPERIMENT = 1,
    SCHED_JOB_KERNEL = 2
} sched_job_kind;

typedef enum sched_job_state {
    SCHED_JOB_QUEUED = 0,
    SCHED_JOB_RUNNING = 1,
    SCHED_JOB_ENDED = 2     /* only in the store: sched_end forgets the job */
} sched_job_state;

/* The kind of device a job runs on. Where the inventory holds both CPU
 * slots and GPUs (Slurm nodes of both sorts), each kind is a pool of its
 * own, planned apart (fair share, priorities, caps and reservations within
 * the pool): a job's devices are all of its kind. Where it holds one kind,
 * every job shares it, as on one machine (a CPU job on a GPU host runs on
 * the GPUs' slots). */
typedef enum sched_pool {
    SCHED_POOL_ANY = 0,      /* CPU slots where there are both */
    SCHED_POOL_CPU = 1,
    SCHED_POOL_GPU = 2
} sched_pool;

typedef struct sched_job_spec {
    const char *id;          /* unique among unfinished jobs */
    const char *plan;        /* NULL or "": "/" */
    int32_t kind;            /* sched_job_kind */
    bool elastic;            /* false: runs on exactly max_devices or waits */
    int32_t min_devices;     /* elastic only; 0 means 1 */
    int32_t max_devices;     /* >= 1, >= min_devices */
    int32_t priority;        /* higher first, in plans with the priority policy */
    /* A job that can never fit (its need exceeds the inventory or a plan cap)
     * is refused with LOOM_ERR_RESOURCE_EXHAUSTED, unless this is set: then
     * it waits in the queue, without blocking the jobs behind it, until
     * devices are added or caps raised. */
    bool wait_if_too_large;
    uint64_t tag;            /* the caller's, handed back in decisions */
    /* NULL or "": anonymous. Inside a fair plan, queued jobs are admitted
     * fairly between users (the one holding least goes first). */
    const char *user;
    /* Expected run time once started, in seconds; 0: unknown. Dates the
     * reservation of a job waiting for this one's devices (backfilling). */
    double expected_seconds;
    int32_t pool;            /* sched_pool */
} sched_job_spec;

/* Queues a job; it starts at the next sched_plan. Errors name the job and
 * field (LOOM_ERR_INVALID_ARGUMENT, _NOT_FOUND for an unknown plan,
 * _ALREADY_EXISTS, _RESOURCE_EXHAUSTED as above). */
loom_error *sched_submit(sched *s, const sched_job_spec *spec, double now);
/* A job finished, failed or was cancelled: its devices are free at once and
 * the scheduler forgets it. LOOM_ERR_NOT_FOUND for an unknown id. */
loom_error *sched_end(sched *s, const char *id);

/* Changes an elastic job's device range while it runs (an explicit resize,
 * `loom exec resize`): the next sched_plan moves it into [min, max] at once,
 * whatever the hysteresis. LOOM_ERR_NOT_FOUND for an unknown id,
 * LOOM_ERR_INVALID_ARGUMENT for a fixed job or a bad range. */
loom_error *sched_set_job_range(sched *s, const char *id, int32_t min_devices,
                                int32_t max_devices);

/* Replaces a running job's expected end (on the `now` clock of sched_plan),
 * e.g. after a resize changed its speed; INFINITY or NAN: unknown.
 * LOOM_ERR_NOT_FOUND for an unknown id. */
loom_error *sched_set_job_end_estimate(sched *s, const char *id, double end);

/* Why a queued job is waiting, as of the last sched_plan. */
typedef enum sched_wait_code {
    SCHED_WAIT_NONE = 0,       /* running, or not planned yet */
    SCHED_WAIT_DEVICES = 1,    /* needs `need` devices, `free` are free */
    SCHED_WAIT_CAP = 2,        /* `plan` is at its cap of `limit` */
    SCHED_WAIT_PRIORITY = 3,   /* behind `count` jobs of higher priority in
                                  `plan` */
    SCHED_WAIT_RESERVED = 4,   /* it would fit, but the devices are reserved
                                  for `holder`, a larger job (`need` free
                                  devices would delay its start) */
    SCHED_WAIT_TOO_LARGE = 5,  /* needs `need`, more than `limit` (the
                                  inventory, or `plan`'s cap) ever allows */
    SCHED_WAIT_HANDBACK = 6    /* granted, but `count` of its devices are
                                  still being handed back by `holder`, a
                                  shrinking job (the host's service only) */
} sched_wait_code;

typedef struct sched_wait {
    int32_t code;              /* sched_wait_code */
    int32_t need, free, limit, count;
    const char *plan;          /* borrowed, like sched_job_info's strings */
    const char *holder;        /* the job holding the reservation (or the
                                  devices), NULL when none or not shown */
    const char *holder_user;   /* its user, NULL: anonymous */
    int32_t holder_kind;       /* its sched_job_kind */
} sched_wait;

/* Fills `out` for a job; false when the job is unknown. */
bool sched_job_wait(const sched *s, const char *id, sched_wait *out);
/* The reason in words ("waiting for 3 devices, 1 free"); returns what
 * snprintf returns. */
int sched_wait_text(const sched_wait *w, char *buf, size_t len);

typedef struct sched_job_info {
    const char *id;
    const char *plan;
    const char *user;            /* its user, NULL: anonymous */
    int32_t kind, state;         /* sched_job_kind, sched_job_state */
    bool elastic;
    int32_t min_devices, max_devices, priority;
    uint64_t tag;
    int32_t count;               /* devices held */
    const int32_t *devices;      /* their slots; borrowed until the next call
                                    that changes the scheduler */
    double submitted, started, last_resize;
} sched_job_info;

bool sched_get_job(const sched *s, const char *id, sched_job_info *out);
size_t sched_job_count(const sched *s);
size_t sched_queued_count(const sched *s);

/* ---- reconstruction after a host restart ------------------------------- */

typedef struct sched_restore_entry {
    sched_job_spec job;
    const int32_t *devices;   /* slots the job's live workers hold */
    int32_t n_devices;        /* 0: the job goes back to the queue */
    double last_resize;       /* when it last started or resized */
} sched_restore_entry;

/* Rebuilds jobs from the store and the live workers, in the given order
 * (queued entries keep that order). All or nothing: refuses, naming both
 * jobs and the device, a device held twice (by two entries or by an entry
 * and a job already known), and refuses an unknown slot or a bad spec. A
 * restored job may hold fewer devices than its minimum or more than its
 * maximum; the next sched_plan corrects it. */
loom_error *sched_restore(sched *s, const sched_restore_entry *entries, size_t n);

/* ---- decisions --------------------------------------------------------- */

typedef struct sched_decision {
    const char *job_id;        /* borrowed: valid until the job ends */
    uint64_t tag;              /* the job's tag */
    int32_t old_count;         /* 0: the job starts now */
    int32_t new_count;
    const int32_t *added;      /* slots the job takes (ascending) */
    int32_t n_added;
    const int32_t *released;   /* slots the job gives up */
    int32_t n_released;
} sched_decision;

/* Recomputes every job's target allocation at time `now` and applies it to
 * the scheduler's own books. Returns the number of decisions and sets `*out`
 * to them (owned by `s`, valid until the next call that changes `s`).
 * Shrinks come first, then starts and grows, so a caller that carries them
 * out in order never runs two jobs on one device. Allocations are sticky: a
 * shrinking job releases its most recently added devices, a growing or
 * starting job takes the lowest free slots; nothing else moves.
 *
 * Admission: a queued job starts when its need (minimum for an elastic
 * job, max_devices for a fixed one) fits beside every running job's need,
 * both in the inventory and under every cap on the way to the root. The
 * same rule holds for fixed and elastic jobs. Queued jobs are considered
 * one at a time, by deficit: from the root down, the child plan furthest
 * below its guaranteed minimum, else with the least need per share weight
 * (a plan's own jobs count as a child of weight 1), goes next; inside a
 * plan, priority order in a priority plan (priority never crosses plans),
 * else the user holding least, then submission order.
 * A job that can never fit blocks nothing. The first job that does not
 * fit for lack of devices is the head: it gets the inventory's
 * reservation, dated by the expected ends of the running jobs it waits for
 * (expected_seconds, sched_set_job_end_estimate), and later jobs that fit
 * start now only if they do not delay it (EASY backfilling: they end before
 * the reservation, or use devices it will not need). The first job held
 * back by a plan's cap gets that plan's reservation in the same way. A
 * head keeps its reservation in later rounds (it is considered first); a
 * date that counts on an elastic job never moves later, since elastic jobs
 * shrunk for the jobs that passed end later than estimated. When a
 * reservation cannot be dated, later jobs pass for reservation_after
 * seconds from when the head first waited; then the devices are held for
 * it as they free up. SCHED_ADMIT_FIFO and _FIFO_BACKFILL replace the
 * deficit order by one global submission order (the baselines of the
 * simulator); plain FIFO stops at the head, and at a plan's cap holds the
 * rest of that plan.
 *
 * Hysteresis: a running elastic job that started or resized less than
 * `hysteresis` seconds ago, and holds between its minimum and maximum, is
 * pinned at its current size while the others are planned around it. Pins
 * give way in three cases, so hysteresis never costs more than stability:
 *   1. a job below its minimum (or above its maximum) is never pinned;
 *   2. when the pinned jobs would keep an admissible queued job waiting
 *      (the need of running and admitted jobs fits only with the pins
 *      lifted), every pin is lifted for this round;
 *   3. when devices would stay idle, pinned jobs may grow into them (but not
 *      shrink): a pin never leaves a device idle that a job could use.
 * So a pin holds back exactly the rebalancing between running jobs: a
 * weight or priority change, or a share grown past its due by an earlier
 * leftover. sched_next_review() says when to call again to apply it. */
size_t sched_plan(sched *s, double now, const sched_decision **out);

/* Devices the last sched_plan left idle to keep a reservation (a job that
 * fits them waits so the head job's start is not delayed). */
size_t sched_reserved_count(const sched *s);
/* Queued jobs that, as of the last sched_plan, wait for devices: not for a
 * plan's cap, nor for an inventory too small for them. */
size_t sched_waiting_for_devices(const sched *s);

/* The earliest time a pin set by the last sched_plan expires (call
 * sched_plan again then), or INFINITY when nothing is pinned. */
double sched_next_review(const sched *s);

#endif

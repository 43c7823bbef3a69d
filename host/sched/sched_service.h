/*
 * sched/sched_service.h - the host's scheduler: the policy core (sched.h)
 * behind one lock, with its resource plans kept in the store, this host's
 * devices as inventory, and decisions handed to whoever carries them out
 * (the exec service starts, grows and shrinks jobs).
 */
#ifndef LOOM_SCHED_SCHED_SERVICE_H
#define LOOM_SCHED_SCHED_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sched/sched.h"
#include "sched/owner_journal.h"
#include "sched/slurm_nodes.h"
#include "store/store.h"
#include "util/error.h"

typedef struct sched_service sched_service;

typedef struct sched_service_options {
    int cpu_slots;     /* 0: the number of cores */
    double hysteresis; /* seconds */
    /* A Slurm partition: the inventory is its nodes' devices instead of this
     * machine's (sched/slurm_source.h), read again every slurm_poll_ms (0:
     * SCHED_SLURM_POLL_MS) on a thread of its own. NULL: this machine. */
    const char *slurm_partition;
    const char *slurm_conf;  /* NULL: SLURM_CONF, else Slurm's default */
    uint32_t slurm_cpus_per_slot; /* 0: one CPU a slot */
    int slurm_poll_ms;
    /* How long a node kept out stays out (sched_service_keep_node_out);
     * 0: NODE_QUARANTINE_DEFAULT_MS. */
    int64_t node_quarantine_ms;
} sched_service_options;

#define SCHED_SLURM_POLL_MS 2000

/* Builds the inventory and loads the stored plans. With a Slurm partition,
 * fails (naming SLURM_CONF, slurmctld or the partition) when Slurm cannot
 * be read at start. */
loom_error *sched_service_create(store *st, const sched_service_options *opt,
                                 sched_service **out);
void sched_service_destroy(sched_service *ss);

/* A plan as it stands. */
typedef struct sched_plan_view {
    char path[256];
    double weight;
    int32_t min_devices, cap_devices;
    int32_t policy; /* SCHED_POLICY_* */
    uint64_t job_limits[SCHED_LIMITS]; /* sched_plan_spec's; 0: inherit */
    int32_t held, given; /* devices held now beneath it, and given by the last round */
} sched_plan_view;

/* A plan to create or change: the fields whose has_ flag is set are taken,
 * the others stay (or default, for a new plan: weight 1, fair, no minimum
 * or cap). */
typedef struct sched_plan_change {
    const char *path;
    int has_weight, has_min, has_cap, has_policy;
    double weight;
    int32_t min_devices, cap_devices, policy;
    int has_limit[SCHED_LIMITS]; /* job_limits[i] is taken (0: inherit) */
    uint64_t job_limits[SCHED_LIMITS];
} sched_plan_change;

/* Plans. Errors name the plan and field: LOOM_E_INVALID, LOOM_E_NOT_FOUND
 * (an update of a missing plan), LOOM_E_CONFLICT (a create of an existing
 * one). The stored copy is written before the answer; `out` (may be NULL)
 * gets the plan as it now is. */
loom_error *sched_service_plan_put(sched_service *ss, const sched_plan_change *change, int create,
                                   sched_plan_view *out);
loom_error *sched_service_plan_remove(sched_service *ss, const char *path);
/* Every plan, the root first: a malloc'd array the caller frees. */
loom_error *sched_service_plans(sched_service *ss, sched_plan_view **out, size_t *count);
/* One plan, or LOOM_E_NOT_FOUND. */
loom_error *sched_service_plan(sched_service *ss, const char *path, sched_plan_view *out);
/* What an exec in plan `path` may take (sched_plan_limits): host[i] where
 * no plan up the tree sets limit i; from[i] the plan that set value[i],
 * "" for the host's. */
typedef struct sched_job_limits {
    uint64_t value[SCHED_LIMITS];
    char from[SCHED_LIMITS][256];
} sched_job_limits;
void sched_service_plan_limits(sched_service *ss, const char *path,
                               const uint64_t host[SCHED_LIMITS], sched_job_limits *out);
/* "fair" or "priority"; sched_policy_parse: 0, or -1 for another name. */
const char *sched_policy_name(int32_t policy);
int sched_policy_parse(const char *text, int32_t *out);

/* One device and who holds it. */
typedef struct sched_slot_view {
    int32_t slot;
    int32_t kind;  /* loom_device_kind */
    int32_t index; /* CUDA ordinal or CPU slot number */
    char node[64]; /* "local" for this host */
    char owner[64]; /* the job holding it; "" when free */
    char owner_user[64]; /* that job's user; "" when free or anonymous */
    int32_t owner_kind;  /* that job's sched_job_kind (an exec, a tuning
                            experiment, a model's kernel instance) */
} sched_slot_view;

/* Every device: a malloc'd array the caller frees. */
loom_error *sched_service_slots(sched_service *ss, sched_slot_view **out, size_t *count);

/* The changes of devices' holders since the last call, oldest first, as
 * they happened (sched/owner_journal.h): up to `cap` of them; *dropped
 * gets how many were lost because nobody read them in time (then look at
 * sched_service_slots). One reader: the history. */
size_t sched_service_owner_changes(sched_service *ss, owner_change *out, size_t cap,
                                   uint64_t *dropped);

/* Who may submit to a plan. Administrators manage members (users, by their
 * immutable id; the name is for showing). A member of a plan may submit to
 * it and every plan beneath it; a user may always submit to their own
 * "/USER" (and beneath it); administrators to any plan. */
typedef struct sched_plan_member {
    char plan[256];
    char user[64];
    int64_t user_id;
    int64_t added_at_ms;
} sched_plan_member;

/* LOOM_E_NOT_FOUND (no such plan), LOOM_E_CONFLICT (already a member). */
loom_error *sched_service_plan_member_add(sched_service *ss, const char *plan, int64_t user_id,
                                          const char *user);
/* LOOM_E_NOT_FOUND when `user` is not a member. */
loom_error *sched_service_plan_member_remove(sched_service *ss, const char *plan,
                                             int64_t user_id, const char *user);
/* The members of `plan` (NULL: of every plan): a malloc'd array. */
loom_error *sched_service_plan_members(sched_service *ss, const char *plan,
                                       sched_plan_member **out, size_t *count);
/* Whether `user` may submit to `plan`: LOOM_E_NOT_FOUND for a plan that
 * does not exist (other than the user's own, made with their first job),
 * LOOM_E_FORBIDDEN for one they are not a member of. */
loom_error *sched_service_plan_admits(sched_service *ss, const char *plan, const char *user,
                                      int64_t user_id, bool is_admin);

/* Jobs. Submitting to the user's own plan ("/USER", spec->user) creates it
 * with weight 1 when missing; any other missing plan is LOOM_E_NOT_FOUND.
 * A job that can never fit is LOOM_E_LIMIT. */
loom_error *sched_service_submit(sched_service *ss, const sched_job_spec *spec);
void sched_service_end(sched_service *ss, const char *id);
loom_error *sched_service_set_range(sched_service *ss, const char *id, int min, int max);
/* The devices a job holds: returns the count and copies up to `cap` slots
 * into out and, when `index` is set, each device's own index (the CUDA
 * ordinal for CUDA_VISIBLE_DEVICES); when `kind` is set, the devices'
 * loom_device_kind (the inventory is all GPUs or all CPU slots); -1 when
 * the job is unknown. */
int sched_service_job_devices(sched_service *ss, const char *id, int32_t *out, int cap,
                              int32_t *index, int32_t *kind);

/* The devices a job may use now: those granted to it that no other job's
 * worker is still leaving (a device taken from a shrinking job is handed
 * over only once that job's worker has left it). Copies up to `cap` device
 * ids into `index` (sched/node_numbers.h: a device's ordinal on this
 * machine; on Slurm unique across the nodes), sets *total to the devices granted in all, and
 * returns how many are ready; -1 (and *total -1) for an unknown job. */
int sched_service_job_grant(sched_service *ss, const char *id, int32_t *index, int cap,
                            int32_t *kind, int *total);
/* Job `id` now has processes only on the devices in `held_index` (their
 * ids, as sched_service_job_grant gives them): every other device it was draining is handed back, and the time
 * since the decision is logged and kept for the job that receives it. */
void sched_service_handed_back(sched_service *ss, const char *id, const int32_t *held_index,
                               int nheld);
/* The last hand-over measured for a device job `id` received: from whom and
 * how long after the decision. False when there was none. */
bool sched_service_job_handover(sched_service *ss, const char *id, char *from, size_t len,
                                int64_t *ms);

/* One decision to carry out. */
typedef struct sched_action {
    char job_id[64];
    int old_count, new_count;
} sched_action;

/* Runs the policy now; copies up to `cap` decisions into out and returns
 * how many there were. */
size_t sched_service_decide(sched_service *ss, sched_action *out, size_t cap);
/* Why a pending job waits, as of the last decision: sched_wait's fields,
 * its strings copied. */
typedef struct sched_reason {
    int32_t code;              /* sched_wait_code */
    int32_t need, free, limit, count;
    char plan[256];            /* "" when none */
    char holder[128];          /* the job holding the reservation, or handing
                                  back devices; "" when none */
    char holder_user[64];      /* its user; "" when anonymous */
    int32_t holder_kind;       /* its sched_job_kind */
} sched_reason;

/* Fills out; false, with out->code SCHED_WAIT_NONE, when the job is
 * unknown or not waiting. */
bool sched_service_pending_reason(sched_service *ss, const char *id, sched_reason *out);
/* The reason in words (sched_wait_text), naming the holder only when
 * show_holder; returns what snprintf returns. */
int sched_reason_text(const sched_reason *r, bool show_holder, char *buf, size_t len);
/* Devices in the inventory. */
size_t sched_service_device_count(sched_service *ss);
/* Devices of `kind` (loom_device_kind) in the inventory. */
size_t sched_service_kind_count(sched_service *ss, int32_t kind);
/* Keeps a node's devices out of the inventory for a while although Slurm
 * lists it (sched/node_quarantine.h): its workers stopped answering, or it
 * cannot reach the shared directory. The jobs holding them lose them (as
 * when a node is drained); nothing is placed there until the period ends,
 * when the node's devices come back if Slurm still lists them. */
void sched_service_keep_node_out(sched_service *ss, const char *node, const char *reason);

/* The devices of other machines (Slurm nodes) become `devs`: a device no
 * longer listed leaves the inventory (taken from the job holding it, which
 * is logged: lost to that job), a new one is added; this machine's devices
 * stay. What the Slurm watcher does at each read. */
loom_error *sched_service_sync_devices(sched_service *ss, const slurm_device *devs, size_t n);
/* Whether job `id` holds a device on another machine (a Slurm node): the
 * first such node's name is copied to node. */
bool sched_service_job_node(sched_service *ss, const char *id, char *node, size_t len);
/* The Slurm node of device id `id` (as sched_service_job_grant gives
 * ids) into node: "" for this machine's; false for an unknown number. */
bool sched_service_device_node(sched_service *ss, int32_t id, char *node, size_t len);
/* Whether the inventory is a Slurm partition's (libslurm is set up). */
bool sched_service_on_slurm(const sched_service *ss);
/* The node of each of job `id`'s devices, in the order sched_service_job_devices
 * gives them ("" for this machine's), up to `cap`; returns how many devices
 * it holds, -1 when it is unknown. */
int sched_service_job_device_nodes(sched_service *ss, const char *id,
                                   char (*nodes)[SLURM_NODE_NAME_MAX], int cap);

#endif

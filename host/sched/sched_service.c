/* sched/sched_service.c - see sched_service.h. */
#include "sched/sched_service.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "sched/handover.h"
#include "sched/node_numbers.h"
#include "sched/node_quarantine.h"
#include "sched/owner_journal.h"
#include "sched/slurm_source.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

/* The last hand-over measured for a job that received a device. */
typedef struct handover_record {
    char to[HANDOVER_JOB_ID_MAX], from[HANDOVER_JOB_ID_MAX];
    int64_t ms;
} handover_record;

#define HANDOVER_RECORDS 64

struct sched_service {
    pthread_mutex_t lock;
    sched *core;
    store *st;
    handover ho;
    handover_record records[HANDOVER_RECORDS]; /* a ring, newest last */
    size_t nrecords;
    /* the Slurm inventory and its watcher (NULL: this machine) */
    slurm_source *slurm;
    pthread_t watcher;
    pthread_mutex_t watch_lock;
    pthread_cond_t watch_wake;
    bool watching, stop_watching;
    int poll_ms;
    owner_journal journal; /* each device's holder changes, as they happen */
    node_quarantine out;   /* nodes kept out although Slurm lists them */
    int64_t quarantine_ms;
    slurm_device *last_devs; /* the last inventory Slurm gave: for a node's return */
    size_t nlast;
    node_numbers nodes; /* each Slurm node's number, for device ids */
};

static double now_s(void) { return (double)time_mono_ms() / 1000.0; }

/* A device's id as jobs are given it (node_numbers.h): its ordinal on
 * this machine, unique across the nodes otherwise; -1 when out of room. */
static int32_t device_id_locked(sched_service *ss, const sched_device_info *d)
{
    int32_t number = node_numbers_of(&ss->nodes, d->node);
    return number < 0 ? -1 : node_device_id(number, d->index);
}

/* Notes each device's holder in the journal: called with ss->lock after
 * every call that may move devices (planning, a job's end, the inventory).
 * Out of memory loses changes; the reader then looks at the devices. */
static void journal_owners_locked(sched_service *ss)
{
    int64_t now = time_now_ms();
    size_t n = sched_device_count(ss->core);
    for (size_t i = 0; i < n; i++) {
        sched_device_info d;
        sched_job_info j;
        /* every planning round: the job is looked up only for a change */
        if (!sched_device(ss->core, (int32_t)i, &d) ||
            owner_journal_unchanged(&ss->journal, (int32_t)i, d.owner))
            continue;
        bool held = d.owner && sched_get_job(ss->core, d.owner, &j);
        if (!owner_journal_note(&ss->journal, (int32_t)i, d.owner, held ? j.user : NULL,
                                held ? j.kind : 0, now))
            ss->journal.dropped++;
    }
}

size_t sched_service_owner_changes(sched_service *ss, owner_change *out, size_t cap,
                                   uint64_t *dropped)
{
    pthread_mutex_lock(&ss->lock);
    size_t n = owner_journal_read(&ss->journal, out, cap, dropped);
    pthread_mutex_unlock(&ss->lock);
    return n;
}

typedef struct plan_list {
    sched_plan_spec *specs;
    char (*paths)[256];
    size_t n, cap;
} plan_list;

const char *sched_policy_name(int32_t policy)
{
    return policy == SCHED_POLICY_PRIORITY ? "priority" : "fair";
}

int sched_policy_parse(const char *text, int32_t *out)
{
    if (!text || !strcmp(text, "fair"))
        *out = SCHED_POLICY_FAIR;
    else if (!strcmp(text, "priority"))
        *out = SCHED_POLICY_PRIORITY;
    else
        return -1;
    return 0;
}

static void collect_plan(const store_plan *p, void *ctx)
{
    plan_list *l = ctx;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        void *a = realloc(l->specs, cap * sizeof *l->specs);
        void *b = a ? realloc(l->paths, cap * sizeof *l->paths) : NULL;
        if (!a || !b)
            return;
        l->specs = a;
        l->paths = b;
        l->cap = cap;
    }
    snprintf(l->paths[l->n], sizeof l->paths[l->n], "%s", p->path);
    int32_t policy = SCHED_POLICY_FAIR;
    sched_policy_parse(p->policy, &policy);
    l->specs[l->n] = (sched_plan_spec){
        .weight = p->weight, .min_devices = p->min_devices, .cap_devices = p->cap_devices,
        .policy = policy,
        .job_limits = {[SCHED_LIMIT_PROCS] = (uint64_t)p->max_procs,
                       [SCHED_LIMIT_MEMORY] = (uint64_t)p->max_memory,
                       [SCHED_LIMIT_DISK] = (uint64_t)p->max_disk}};
    l->n++;
}

/* ---- the Slurm inventory ---------------------------------------------- */

static bool listed(sched_service *ss, const slurm_device *devs, size_t n,
                   const sched_device_info *d, int64_t now)
{
    if (node_quarantine_holds(&ss->out, d->node, now))
        return false;
    for (size_t i = 0; i < n; i++)
        if (devs[i].kind == d->kind && devs[i].index == d->index && !strcmp(devs[i].node, d->node))
            return true;
    return false;
}

/* Makes the inventory the devices in `devs`: a device whose node left is
 * taken from the scheduler (and from the job holding it, which is logged:
 * its worker there is lost), a node's new devices are added. Returns false
 * when out of memory. Call with ss->lock. */
static bool sync_devices_locked(sched_service *ss, const slurm_device *devs, size_t n)
{
    int64_t now = time_mono_ms();
    if (devs != ss->last_devs) { /* kept for a node's return after its quarantine */
        slurm_device *copy = malloc((n ? n : 1) * sizeof *copy);
        if (!copy)
            return false;
        if (n) /* devs may be NULL when empty */
            memcpy(copy, devs, n * sizeof *copy);
        free(ss->last_devs);
        ss->last_devs = copy;
        ss->nlast = n;
        devs = copy;
    }
    node_quarantine_expire(&ss->out, now);
    for (int32_t slot = (int32_t)sched_device_count(ss->core) - 1; slot >= 0; slot--) {
        sched_device_info d;
        if (!sched_device(ss->core, slot, &d) || !d.node || listed(ss, devs, n, &d, now))
            continue;
        char node[SLURM_NODE_NAME_MAX], owner[HANDOVER_JOB_ID_MAX];
        snprintf(node, sizeof node, "%s", d.node);
        int32_t kind = d.kind, index = d.index;
        sched_remove_device(ss->core, slot, owner, sizeof owner);
        handover_remove(&ss->ho, slot);
        owner_journal_remove(&ss->journal, slot);
        if (owner[0])
            log_warn("scheduler: %s %d of node %s left the inventory while job %s held it: "
                     "lost to that job",
                     kind == LOOM_DEVICE_CUDA ? "GPU" : "CPU slot", index, node, owner);
    }
    for (size_t i = 0; i < n; i++) {
        if (sched_find_device(ss->core, devs[i].kind, devs[i].index, devs[i].node) >= 0 ||
            node_quarantine_holds(&ss->out, devs[i].node, now))
            continue;
        if (sched_add_device(ss->core, devs[i].kind, devs[i].index, devs[i].node) < 0)
            return false;
    }
    journal_owners_locked(ss);
    return handover_resize(&ss->ho, sched_device_count(ss->core));
}

void sched_service_keep_node_out(sched_service *ss, const char *node, const char *reason)
{
    pthread_mutex_lock(&ss->lock);
    node_quarantine_add(&ss->out, node, reason, time_mono_ms(),
                        ss->quarantine_ms > 0 ? ss->quarantine_ms : NODE_QUARANTINE_DEFAULT_MS);
    if (!sync_devices_locked(ss, ss->last_devs, ss->nlast))
        log_warn("scheduler: out of memory keeping node %s out", node);
    pthread_mutex_unlock(&ss->lock);
}

loom_error *sched_service_sync_devices(sched_service *ss, const slurm_device *devs, size_t n)
{
    pthread_mutex_lock(&ss->lock);
    bool ok = sync_devices_locked(ss, devs, n);
    pthread_mutex_unlock(&ss->lock);
    return ok ? NULL : loom_err(LOOM_E_INTERNAL, "Slurm inventory: out of memory");
}

static loom_error *slurm_refresh(sched_service *ss)
{
    slurm_device *devs = NULL;
    size_t n = 0;
    loom_error *e = slurm_source_read(ss->slurm, &devs, &n);
    if (!e)
        e = sched_service_sync_devices(ss, devs, n);
    free(devs);
    return e;
}

/* Reads the partition every poll_ms until told to stop. A read that fails
 * (slurmctld restarting) leaves the inventory as it was, said once. */
static void *slurm_watch(void *arg)
{
    sched_service *ss = arg;
    bool failing = false;
    pthread_mutex_lock(&ss->watch_lock);
    while (!ss->stop_watching) {
        struct timespec until = time_after_ms(CLOCK_MONOTONIC, ss->poll_ms);
        while (!ss->stop_watching &&
               pthread_cond_timedwait(&ss->watch_wake, &ss->watch_lock, &until) == 0) {
        }
        if (ss->stop_watching)
            break;
        pthread_mutex_unlock(&ss->watch_lock);
        loom_error *e = slurm_refresh(ss);
        if (e && !failing)
            log_warn("scheduler: %s; the inventory stays as it was until Slurm answers",
                     loom_err_message(e));
        else if (!e && failing)
            log_info("scheduler: Slurm answers again (partition %s)",
                     slurm_source_partition(ss->slurm));
        failing = e != NULL;
        loom_err_free(e);
        pthread_mutex_lock(&ss->watch_lock);
    }
    pthread_mutex_unlock(&ss->watch_lock);
    return NULL;
}

static loom_error *slurm_inventory_start(sched_service *ss, const sched_service_options *opt)
{
    loom_error *e = slurm_source_open(opt->slurm_conf, opt->slurm_partition,
                                      opt->slurm_cpus_per_slot, &ss->slurm);
    if (!e)
        e = slurm_refresh(ss);
    if (e)
        return e;
    log_info("scheduler: %zu device(s) from the nodes of Slurm partition %s",
             sched_device_count(ss->core), opt->slurm_partition);
    ss->poll_ms = opt->slurm_poll_ms > 0 ? opt->slurm_poll_ms : SCHED_SLURM_POLL_MS;
    if (pthread_create(&ss->watcher, NULL, slurm_watch, ss) != 0)
        return loom_err(LOOM_E_INTERNAL, "scheduler: cannot start the Slurm watcher thread");
    ss->watching = true;
    return NULL;
}

int sched_service_job_device_nodes(sched_service *ss, const char *id,
                                   char (*nodes)[SLURM_NODE_NAME_MAX], int cap)
{
    pthread_mutex_lock(&ss->lock);
    sched_job_info j;
    sched_device_info d;
    int n = -1;
    if (sched_get_job(ss->core, id, &j)) {
        n = j.count;
        for (int32_t i = 0; i < j.count && i < cap; i++)
            snprintf(nodes[i], SLURM_NODE_NAME_MAX, "%s",
                     sched_device(ss->core, j.devices[i], &d) && d.node ? d.node : "");
    }
    pthread_mutex_unlock(&ss->lock);
    return n;
}

bool sched_service_on_slurm(const sched_service *ss) { return ss->slurm != NULL; }

bool sched_service_device_node(sched_service *ss, int32_t id, char *node, size_t len)
{
    pthread_mutex_lock(&ss->lock);
    bool known = id >= 0 && node_numbers_name(&ss->nodes, node_device_number(id), node, len);
    pthread_mutex_unlock(&ss->lock);
    return known;
}

bool sched_service_job_node(sched_service *ss, const char *id, char *node, size_t len)
{
    pthread_mutex_lock(&ss->lock);
    sched_job_info j;
    sched_device_info d;
    bool remote = false;
    if (sched_get_job(ss->core, id, &j))
        for (int32_t i = 0; i < j.count && !remote; i++)
            if (sched_device(ss->core, j.devices[i], &d) && d.node) {
                snprintf(node, len, "%s", d.node);
                remote = true;
            }
    pthread_mutex_unlock(&ss->lock);
    return remote;
}

loom_error *sched_service_create(store *st, const sched_service_options *opt,
                                 sched_service **out)
{
    *out = NULL;
    sched_service *ss = calloc(1, sizeof *ss);
    sched_options so = {.hysteresis = opt ? opt->hysteresis : 0};
    if (!ss || !(ss->core = sched_create(&so))) {
        free(ss);
        return loom_err(LOOM_E_INTERNAL, "scheduler: out of memory");
    }
    pthread_mutex_init(&ss->lock, NULL);
    pthread_mutex_init(&ss->watch_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ss->watch_wake, &ca);
    pthread_condattr_destroy(&ca);
    ss->st = st;
    ss->quarantine_ms = opt ? opt->node_quarantine_ms : 0;
    if (!owner_journal_init(&ss->journal, OWNER_JOURNAL_CAPACITY)) {
        sched_service_destroy(ss);
        return loom_err(LOOM_E_INTERNAL, "scheduler: out of memory");
    }
    if (opt && opt->slurm_partition) {
        loom_error *e = slurm_inventory_start(ss, opt);
        if (e) {
            sched_service_destroy(ss);
            return e;
        }
    } else {
        int32_t added = sched_add_local_devices(ss->core, opt ? opt->cpu_slots : 0, true);
        if (added < 0 || !handover_init(&ss->ho, (size_t)(added > 0 ? added : 0))) {
            sched_service_destroy(ss);
            return loom_err(LOOM_E_INTERNAL, "scheduler: out of memory");
        }
        journal_owners_locked(ss);
        log_info("scheduler: %d device(s) (%s)", added,
                 sched_cuda_device_count() > 0 ? "CUDA" : "CPU slots");
    }
    plan_list l = {0};
    loom_error *e = store_plan_each(st, collect_plan, &l);
    for (size_t i = 0; i < l.n; i++)
        l.specs[i].path = l.paths[i];
    /* The root's settings are an update, not a plan of its own. */
    size_t k = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (!strcmp(l.paths[i], "/")) {
            loom_error *root = sched_update_plan(ss->core, &l.specs[i]);
            if (root) {
                log_warn("stored plan \"/\" not applied: %s", loom_err_message(root));
                loom_err_free(root);
            }
            continue;
        }
        l.specs[k] = l.specs[i];
        l.specs[k].path = l.paths[i];
        k++;
    }
    if (!e && k)
        e = sched_load_plans(ss->core, l.specs, k);
    free(l.specs);
    free(l.paths);
    if (e) {
        sched_service_destroy(ss);
        return loom_err_wrap(e, "stored resource plans");
    }
    *out = ss;
    return NULL;
}

void sched_service_destroy(sched_service *ss)
{
    if (!ss)
        return;
    if (ss->watching) {
        pthread_mutex_lock(&ss->watch_lock);
        ss->stop_watching = true;
        pthread_cond_signal(&ss->watch_wake);
        pthread_mutex_unlock(&ss->watch_lock);
        pthread_join(ss->watcher, NULL);
    }
    slurm_source_close(ss->slurm);
    pthread_cond_destroy(&ss->watch_wake);
    pthread_mutex_destroy(&ss->watch_lock);
    sched_free(ss->core);
    handover_free(&ss->ho);
    owner_journal_free(&ss->journal);
    free(ss->last_devs);
    node_numbers_free(&ss->nodes);
    pthread_mutex_destroy(&ss->lock);
    free(ss);
}

static void plan_view(const sched *core, const sched_plan_spec *p, sched_plan_view *out)
{
    if (!sched_plan_usage(core, p->path, &out->held, &out->given))
        out->held = out->given = 0;
    snprintf(out->path, sizeof out->path, "%s", p->path);
    out->weight = p->weight;
    out->min_devices = p->min_devices;
    out->cap_devices = p->cap_devices;
    out->policy = p->policy;
    memcpy(out->job_limits, p->job_limits, sizeof out->job_limits);
}

static loom_error *record_plan(sched_service *ss, const sched_plan_spec *spec)
{
    store_plan rec = {.weight = spec->weight, .min_devices = spec->min_devices,
                      .cap_devices = spec->cap_devices,
                      .max_procs = (int64_t)spec->job_limits[SCHED_LIMIT_PROCS],
                      .max_memory = (int64_t)spec->job_limits[SCHED_LIMIT_MEMORY],
                      .max_disk = (int64_t)spec->job_limits[SCHED_LIMIT_DISK]};
    snprintf(rec.path, sizeof rec.path, "%s", spec->path);
    snprintf(rec.policy, sizeof rec.policy, "%s", sched_policy_name(spec->policy));
    return store_plan_put(ss->st, &rec);
}

/* Checks the change against what exists and applies it to the policy
 * core. Call with ss->lock. */
static loom_error *plan_apply_locked(sched_service *ss, const sched_plan_change *c, int create,
                                     sched_plan_spec *spec)
{
    sched_plan_spec cur;
    int exists = sched_get_plan(ss->core, c->path, &cur);
    if (create && exists)
        return loom_err(LOOM_E_CONFLICT, "plan \"%s\" already exists (use update)", c->path);
    if (!create && !exists)
        return loom_err(LOOM_E_NOT_FOUND, "no plan \"%s\"", c->path);
    spec->weight = exists ? cur.weight : 1;
    spec->min_devices = exists ? cur.min_devices : 0;
    spec->cap_devices = exists ? cur.cap_devices : 0;
    spec->policy = exists ? cur.policy : SCHED_POLICY_FAIR;
    for (int i = 0; i < SCHED_LIMITS; i++)
        spec->job_limits[i] = c->has_limit[i] ? c->job_limits[i] : exists ? cur.job_limits[i] : 0;
    if (c->has_weight)
        spec->weight = c->weight;
    if (c->has_min)
        spec->min_devices = c->min_devices;
    if (c->has_cap)
        spec->cap_devices = c->cap_devices;
    if (c->has_policy)
        spec->policy = c->policy;
    return create ? sched_add_plan(ss->core, spec) : sched_update_plan(ss->core, spec);
}

loom_error *sched_service_plan_put(sched_service *ss, const sched_plan_change *c, int create,
                                   sched_plan_view *out)
{
    if (!c->path || !c->path[0])
        return loom_err(LOOM_E_INVALID, "path: expected a plan path such as \"/project/training\"");
    char path[256];
    if (strlen(c->path) >= sizeof path)
        return loom_err(LOOM_E_INVALID, "path: longer than %zu characters", sizeof path - 1);
    snprintf(path, sizeof path, "%s", c->path);
    sched_plan_spec spec = {.path = path};
    pthread_mutex_lock(&ss->lock);
    loom_error *e = plan_apply_locked(ss, c, create, &spec);
    if (!e)
        e = loom_err_wrap(record_plan(ss, &spec), "cannot record plan \"%s\"", path);
    if (!e && out)
        plan_view(ss->core, &spec, out);
    pthread_mutex_unlock(&ss->lock);
    return e;
}

loom_error *sched_service_plan_remove(sched_service *ss, const char *path)
{
    pthread_mutex_lock(&ss->lock);
    loom_error *e = sched_remove_plan(ss->core, path);
    if (!e)
        loom_err_free(store_plan_remove(ss->st, path)); /* "/" has no row of its own */
    pthread_mutex_unlock(&ss->lock);
    return e;
}

typedef struct view_list {
    sched_plan_view *items;
    size_t n, cap;
    sched *core;
    int failed;
} view_list;

static void add_plan_view(const store_plan *p, void *ctx)
{
    view_list *l = ctx;
    sched_plan_spec spec;
    if (l->failed || !strcmp(p->path, "/") || !sched_get_plan(l->core, p->path, &spec))
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap * 2;
        sched_plan_view *grown = realloc(l->items, cap * sizeof *grown);
        if (!grown) {
            l->failed = 1;
            return;
        }
        l->items = grown;
        l->cap = cap;
    }
    plan_view(l->core, &spec, &l->items[l->n++]);
}

loom_error *sched_service_plans(sched_service *ss, sched_plan_view **out, size_t *count)
{
    view_list l = {.items = malloc(16 * sizeof *l.items), .cap = 16, .core = ss->core};
    *out = NULL;
    *count = 0;
    if (!l.items)
        return loom_err(LOOM_E_INTERNAL, "plans: out of memory");
    pthread_mutex_lock(&ss->lock);
    sched_plan_spec root;
    if (sched_get_plan(ss->core, "/", &root))
        plan_view(ss->core, &root, &l.items[l.n++]);
    loom_error *e = store_plan_each(ss->st, add_plan_view, &l);
    pthread_mutex_unlock(&ss->lock);
    if (!e && l.failed)
        e = loom_err(LOOM_E_INTERNAL, "plans: out of memory");
    if (e) {
        free(l.items);
        return e;
    }
    *out = l.items;
    *count = l.n;
    return NULL;
}

void sched_service_plan_limits(sched_service *ss, const char *path,
                               const uint64_t host[SCHED_LIMITS], sched_job_limits *out)
{
    const char *from[SCHED_LIMITS];
    pthread_mutex_lock(&ss->lock);
    sched_plan_limits(ss->core, path, host, out->value, from);
    for (int i = 0; i < SCHED_LIMITS; i++)
        snprintf(out->from[i], sizeof out->from[i], "%s", from[i] ? from[i] : "");
    pthread_mutex_unlock(&ss->lock);
}

loom_error *sched_service_plan(sched_service *ss, const char *path, sched_plan_view *out)
{
    pthread_mutex_lock(&ss->lock);
    sched_plan_spec spec;
    int found = sched_get_plan(ss->core, path, &spec);
    if (found)
        plan_view(ss->core, &spec, out);
    pthread_mutex_unlock(&ss->lock);
    return found ? NULL : loom_err(LOOM_E_NOT_FOUND, "no plan \"%s\"", path);
}

loom_error *sched_service_slots(sched_service *ss, sched_slot_view **out, size_t *count)
{
    pthread_mutex_lock(&ss->lock);
    size_t n = sched_device_count(ss->core);
    sched_slot_view *v = calloc(n ? n : 1, sizeof *v);
    size_t k = 0;
    for (size_t i = 0; v && i < n; i++) {
        sched_device_info d;
        if (!sched_device(ss->core, (int32_t)i, &d))
            continue;
        v[k] = (sched_slot_view){.slot = (int32_t)i, .kind = d.kind, .index = d.index};
        snprintf(v[k].node, sizeof v[k].node, "%s", d.node ? d.node : "local");
        snprintf(v[k].owner, sizeof v[k].owner, "%s", d.owner ? d.owner : "");
        sched_job_info j;
        if (d.owner && sched_get_job(ss->core, d.owner, &j)) {
            snprintf(v[k].owner_user, sizeof v[k].owner_user, "%s", j.user ? j.user : "");
            v[k].owner_kind = j.kind;
        }
        k++;
    }
    pthread_mutex_unlock(&ss->lock);
    *out = v;
    *count = k;
    return v ? NULL : loom_err(LOOM_E_INTERNAL, "slots: out of memory");
}

/* Whether `plan` is the user's own "/USER" plan. */
static bool own_plan(const char *plan, const char *user)
{
    return user && plan[0] == '/' && strcmp(plan + 1, user) == 0;
}

loom_error *sched_service_submit(sched_service *ss, const sched_job_spec *spec)
{
    pthread_mutex_lock(&ss->lock);
    sched_plan_spec existing;
    if (spec->plan && spec->plan[0] && !sched_get_plan(ss->core, spec->plan, &existing)) {
        if (!own_plan(spec->plan, spec->user)) {
            pthread_mutex_unlock(&ss->lock);
            return loom_err(LOOM_E_NOT_FOUND,
                            "--consumer: no plan \"%s\" (an administrator creates plans: loom "
                            "plan add)",
                            spec->plan);
        }
        /* A user's own plan appears with their first job; no other plan is
         * made by a submission, or users could mint fair shares. */
        sched_plan_spec p = {.path = spec->plan, .weight = 1, .policy = SCHED_POLICY_FAIR};
        loom_error *e = sched_add_plan(ss->core, &p);
        if (!e)
            e = record_plan(ss, &p);
        if (e)
            log_warn("plan \"%s\" for the job: %s", spec->plan, loom_err_message(e));
        loom_err_free(e);
    }
    loom_error *e = sched_submit(ss->core, spec, now_s());
    pthread_mutex_unlock(&ss->lock);
    return e;
}

/* A device `from` was draining is free of its worker: the hand-over is
 * measured, logged and remembered for the job that now holds it. */
static void handed_back_locked(sched_service *ss, int32_t slot)
{
    char from[HANDOVER_JOB_ID_MAX];
    int64_t ms = handover_release(&ss->ho, slot, time_mono_ms(), from, sizeof from);
    if (ms < 0)
        return;
    sched_device_info d;
    const char *to = sched_device(ss->core, slot, &d) && d.owner ? d.owner : NULL;
    log_info("scheduler: device %d handed back by %s after %lld ms%s%s", slot, from,
             (long long)ms, to ? ", now " : " (now free)", to ? to : "");
    if (!to)
        return;
    handover_record *r = &ss->records[ss->nrecords++ % HANDOVER_RECORDS];
    snprintf(r->to, sizeof r->to, "%s", to);
    snprintf(r->from, sizeof r->from, "%s", from);
    r->ms = ms;
}

void sched_service_end(sched_service *ss, const char *id)
{
    pthread_mutex_lock(&ss->lock);
    loom_err_free(sched_end(ss->core, id));
    /* Its processes are gone: whatever it was still draining is free. */
    for (size_t slot = 0; slot < ss->ho.n; slot++) {
        const char *from = handover_draining(&ss->ho, (int32_t)slot);
        if (from && !strcmp(from, id))
            handed_back_locked(ss, (int32_t)slot);
    }
    journal_owners_locked(ss);
    pthread_mutex_unlock(&ss->lock);
}

void sched_service_handed_back(sched_service *ss, const char *id, const int32_t *held_index,
                               int nheld)
{
    pthread_mutex_lock(&ss->lock);
    for (size_t slot = 0; slot < ss->ho.n; slot++) {
        const char *from = handover_draining(&ss->ho, (int32_t)slot);
        sched_device_info d;
        if (!from || strcmp(from, id) || !sched_device(ss->core, (int32_t)slot, &d))
            continue;
        int32_t device = device_id_locked(ss, &d);
        int held = 0;
        for (int k = 0; k < nheld && !held; k++)
            held = held_index[k] == device;
        if (!held)
            handed_back_locked(ss, (int32_t)slot);
    }
    pthread_mutex_unlock(&ss->lock);
}

bool sched_service_job_handover(sched_service *ss, const char *id, char *from, size_t len,
                                int64_t *ms)
{
    pthread_mutex_lock(&ss->lock);
    bool found = false;
    size_t n = ss->nrecords < HANDOVER_RECORDS ? ss->nrecords : HANDOVER_RECORDS;
    for (size_t k = 0; k < n && !found; k++) {
        const handover_record *r = &ss->records[(ss->nrecords - 1 - k) % HANDOVER_RECORDS];
        if (!strcmp(r->to, id)) {
            snprintf(from, len, "%s", r->from);
            *ms = r->ms;
            found = true;
        }
    }
    pthread_mutex_unlock(&ss->lock);
    return found;
}

loom_error *sched_service_set_range(sched_service *ss, const char *id, int min, int max)
{
    pthread_mutex_lock(&ss->lock);
    loom_error *e = sched_set_job_range(ss->core, id, min, max);
    pthread_mutex_unlock(&ss->lock);
    return e;
}

/* The kind of a job's devices: its first one's (an inventory from Slurm
 * may hold both kinds), else the inventory's first device's. */
static int32_t job_kind_locked(sched_service *ss, const char *id)
{
    sched_job_info j;
    sched_device_info d;
    int32_t slot = sched_get_job(ss->core, id, &j) && j.count > 0 ? j.devices[0] : 0;
    return sched_device(ss->core, slot, &d) ? d.kind : LOOM_DEVICE_CPU;
}

int sched_service_job_devices(sched_service *ss, const char *id, int32_t *out, int cap,
                              int32_t *index, int32_t *kind)
{
    pthread_mutex_lock(&ss->lock);
    sched_job_info j;
    sched_device_info d;
    int n = -1;
    if (kind)
        *kind = job_kind_locked(ss, id);
    if (sched_get_job(ss->core, id, &j)) {
        n = j.count;
        for (int i = 0; i < n && i < cap; i++) {
            if (index)
                index[i] = sched_device(ss->core, j.devices[i], &d) ? (int32_t)d.index : -1;
            out[i] = j.devices[i];
        }
    }
    pthread_mutex_unlock(&ss->lock);
    return n;
}

int sched_service_job_grant(sched_service *ss, const char *id, int32_t *index, int cap,
                            int32_t *kind, int *total)
{
    pthread_mutex_lock(&ss->lock);
    sched_job_info j;
    sched_device_info d;
    int ready = -1;
    *total = -1;
    if (kind)
        *kind = job_kind_locked(ss, id);
    if (sched_get_job(ss->core, id, &j)) {
        ready = 0;
        *total = j.count;
        for (int i = 0; i < j.count; i++) {
            const char *from = handover_draining(&ss->ho, j.devices[i]);
            if (from && strcmp(from, id))
                continue; /* another job's worker is still on it */
            if (ready < cap)
                index[ready] = sched_device(ss->core, j.devices[i], &d) ? device_id_locked(ss, &d) : -1;
            ready++;
        }
    }
    pthread_mutex_unlock(&ss->lock);
    return ready;
}

size_t sched_service_decide(sched_service *ss, sched_action *out, size_t cap)
{
    pthread_mutex_lock(&ss->lock);
    const sched_decision *d;
    size_t n = sched_plan(ss->core, now_s(), &d);
    int64_t now_ms = time_mono_ms();
    for (size_t i = 0; i < n; i++) {
        /* A running job's released devices drain until its workers leave;
         * one it takes back was never in transit. */
        for (int32_t k = 0; d[i].old_count > 0 && k < d[i].n_released; k++)
            handover_take(&ss->ho, d[i].released[k], d[i].job_id, now_ms);
        for (int32_t k = 0; k < d[i].n_added; k++)
            handover_keep(&ss->ho, d[i].added[k], d[i].job_id);
        if (i >= cap)
            continue;
        snprintf(out[i].job_id, sizeof out[i].job_id, "%s", d[i].job_id);
        out[i].old_count = d[i].old_count;
        out[i].new_count = d[i].new_count;
    }
    journal_owners_locked(ss);
    pthread_mutex_unlock(&ss->lock);
    return n;
}

size_t sched_service_device_count(sched_service *ss)
{
    pthread_mutex_lock(&ss->lock);
    size_t n = sched_device_count(ss->core);
    pthread_mutex_unlock(&ss->lock);
    return n;
}

size_t sched_service_kind_count(sched_service *ss, int32_t kind)
{
    pthread_mutex_lock(&ss->lock);
    size_t n = 0, all = sched_device_count(ss->core);
    for (size_t i = 0; i < all; i++) {
        sched_device_info d;
        n += sched_device(ss->core, (int32_t)i, &d) && d.kind == kind;
    }
    pthread_mutex_unlock(&ss->lock);
    return n;
}

/* Copies the borrowed strings of w into out. */
static void reason_of(const sched_wait *w, sched_reason *out)
{
    *out = (sched_reason){.code = w->code, .need = w->need, .free = w->free, .limit = w->limit,
                          .count = w->count, .holder_kind = w->holder_kind};
    snprintf(out->plan, sizeof out->plan, "%s", w->plan ? w->plan : "");
    snprintf(out->holder, sizeof out->holder, "%s", w->holder ? w->holder : "");
    snprintf(out->holder_user, sizeof out->holder_user, "%s", w->holder_user ? w->holder_user : "");
}

/* A job waiting for devices: the job holding the first device held by
 * another, and how many jobs hold devices, so its reason names who has
 * them. Call with ss->lock. */
static void name_device_holders(sched_service *ss, const char *id, sched_wait *w)
{
    const char *seen[64];
    int n = 0;
    size_t devices = sched_device_count(ss->core);
    w->count = 0;
    for (size_t i = 0; i < devices; i++) {
        sched_device_info d;
        if (!sched_device(ss->core, (int32_t)i, &d) || !d.owner || strcmp(d.owner, id) == 0)
            continue;
        int known = 0;
        for (int k = 0; k < n && !known; k++)
            known = strcmp(seen[k], d.owner) == 0;
        if (known)
            continue;
        if (n < (int)(sizeof seen / sizeof seen[0]))
            seen[n++] = d.owner;
        w->count++;
    }
    sched_job_info holder;
    if (n > 0 && sched_get_job(ss->core, seen[0], &holder)) {
        w->holder = holder.id;
        w->holder_user = holder.user;
        w->holder_kind = holder.kind;
    }
}

bool sched_service_pending_reason(sched_service *ss, const char *id, sched_reason *out)
{
    *out = (sched_reason){.code = SCHED_WAIT_NONE};
    pthread_mutex_lock(&ss->lock);
    sched_wait w;
    bool waiting = sched_job_wait(ss->core, id, &w) && w.code != SCHED_WAIT_NONE;
    if (waiting) {
        if (w.code == SCHED_WAIT_DEVICES && !w.holder)
            name_device_holders(ss, id, &w);
        reason_of(&w, out);
    } else {
        /* Granted, but another job's workers are still leaving. */
        sched_job_info j;
        int draining = 0;
        const char *from = NULL;
        for (int i = 0; sched_get_job(ss->core, id, &j) && i < j.count; i++) {
            const char *f = handover_draining(&ss->ho, j.devices[i]);
            if (f && strcmp(f, id)) {
                draining++;
                from = f;
            }
        }
        sched_job_info holder;
        if ((waiting = draining > 0)) {
            w = (sched_wait){.code = SCHED_WAIT_HANDBACK, .count = draining, .holder = from};
            if (sched_get_job(ss->core, from, &holder))
                w.holder_kind = holder.kind;
            reason_of(&w, out);
        }
    }
    pthread_mutex_unlock(&ss->lock);
    return waiting;
}

int sched_reason_text(const sched_reason *r, bool show_holder, char *buf, size_t len)
{
    sched_wait w = {.code = r->code, .need = r->need, .free = r->free, .limit = r->limit,
                    .count = r->count, .plan = r->plan[0] ? r->plan : NULL,
                    .holder = show_holder && r->holder[0] ? r->holder : NULL,
                    .holder_kind = r->holder_kind};
    return sched_wait_text(&w, buf, len);
}

/* ---- members: who may submit to a plan ---------------------------------- */

loom_error *sched_service_plan_admits(sched_service *ss, const char *plan, const char *user,
                                      int64_t user_id, bool is_admin)
{
    sched_plan_spec spec;
    pthread_mutex_lock(&ss->lock);
    bool exists = sched_get_plan(ss->core, plan, &spec);
    pthread_mutex_unlock(&ss->lock);
    if (own_plan(plan, user))
        return NULL; /* made with the first job if missing */
    if (!exists)
        return loom_err(LOOM_E_NOT_FOUND,
                        "--consumer: no plan \"%s\" (an administrator creates plans: loom plan add)",
                        plan);
    if (is_admin)
        return NULL;
    /* A member of a plan may submit to it and to every plan beneath it;
     * a user's own "/USER" covers "/USER/..." too. */
    char path[256];
    snprintf(path, sizeof path, "%s", plan);
    for (;;) {
        if (own_plan(path, user))
            return NULL;
        int member = 0;
        loom_error *e = store_plan_member_has(ss->st, path, user_id, &member);
        if (e || member)
            return e;
        char *slash = strrchr(path, '/');
        if (!slash || strcmp(path, "/") == 0)
            break;
        slash[slash == path] = '\0'; /* "/p" goes up to "/" */
    }
    return loom_err(LOOM_E_FORBIDDEN,
                    "--consumer: user %s is not a member of plan \"%s\" (an administrator adds "
                    "members: loom plan member add %s %s)",
                    user, plan, plan, user);
}

loom_error *sched_service_plan_member_add(sched_service *ss, const char *plan, int64_t user_id,
                                          const char *user)
{
    sched_plan_spec spec;
    pthread_mutex_lock(&ss->lock);
    loom_error *e = sched_get_plan(ss->core, plan, &spec)
                        ? store_plan_member_add(ss->st, plan, user_id, user, time_now_ms())
                        : loom_err(LOOM_E_NOT_FOUND, "no plan \"%s\"", plan);
    pthread_mutex_unlock(&ss->lock);
    if (loom_err_code(e) == LOOM_E_CONFLICT) {
        loom_err_free(e);
        e = loom_err(LOOM_E_CONFLICT, "user %s is already a member of plan \"%s\"", user, plan);
    }
    return e;
}

loom_error *sched_service_plan_member_remove(sched_service *ss, const char *plan,
                                             int64_t user_id, const char *user)
{
    loom_error *e = store_plan_member_remove(ss->st, plan, user_id);
    if (loom_err_code(e) == LOOM_E_NOT_FOUND) {
        loom_err_free(e);
        e = loom_err(LOOM_E_NOT_FOUND, "user %s is not a member of plan \"%s\"", user, plan);
    }
    return e;
}

typedef struct member_list {
    sched_plan_member *items;
    size_t n, cap;
    int failed;
} member_list;

static void add_member(const store_plan_member *m, void *ctx)
{
    member_list *l = ctx;
    if (l->failed)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        sched_plan_member *grown = realloc(l->items, cap * sizeof *grown);
        if (!grown) {
            l->failed = 1;
            return;
        }
        l->items = grown;
        l->cap = cap;
    }
    sched_plan_member *v = &l->items[l->n++];
    snprintf(v->plan, sizeof v->plan, "%s", m->plan);
    snprintf(v->user, sizeof v->user, "%s", m->user);
    v->user_id = m->user_id;
    v->added_at_ms = m->added_at;
}

loom_error *sched_service_plan_members(sched_service *ss, const char *plan,
                                       sched_plan_member **out, size_t *count)
{
    *out = NULL;
    *count = 0;
    sched_plan_spec spec;
    pthread_mutex_lock(&ss->lock);
    bool exists = !plan || sched_get_plan(ss->core, plan, &spec);
    pthread_mutex_unlock(&ss->lock);
    if (!exists)
        return loom_err(LOOM_E_NOT_FOUND, "no plan \"%s\"", plan);
    member_list l = {0};
    loom_error *e = store_plan_member_each(ss->st, plan, add_member, &l);
    if (!e && l.failed)
        e = loom_err(LOOM_E_INTERNAL, "plan members: out of memory");
    if (e) {
        free(l.items);
        return e;
    }
    *out = l.items;
    *count = l.n;
    return NULL;
}

/*
 * sched/sched.c - the scheduler object, its inventory of devices (with the
 * free-slot bitmap that keeps assignment O(words)), job submission and end,
 * and reconstruction after a restart. The policy itself is in
 * sched_policy.c, the plan tree in sched_plans.c.
 */
#include "sched/sched_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

sched *sched_create(const sched_options *opt)
{
    sched *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (opt)
        s->opt = *opt;
    if (!(s->opt.hysteresis > 0))
        s->opt.hysteresis = 0;
    s->next_review = INFINITY;
    if (!sched_plans_init(s)) {
        sched_free(s);
        return NULL;
    }
    return s;
}

static void job_free(sched_job *j)
{
    if (!j)
        return;
    free(j->id);
    free(j->user);
    free(j->devices);
    free(j);
}

void sched_free(sched *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_jobs; i++)
        job_free(s->jobs[i]);
    free(s->jobs);
    for (size_t i = 0; i < s->n_devices; i++)
        free(s->devices[i].node);
    free(s->devices);
    free(s->free_bits);
    sched_plans_free(s);
    free(s->queue);
    free(s->plan_jobs);
    free(s->groups);
    free(s->ends);
    free(s->wf_items);
    wf_ctx_free(&s->wf);
    free(s->decisions);
    free(s->decision_slots);
    free(s);
}

/* ---- inventory --------------------------------------------------------- */

static bool same_node(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

int32_t sched_find_device(const sched *s, int32_t kind, int32_t index, const char *node)
{
    for (size_t i = 0; i < s->n_devices; i++) {
        const sched_device_rec *d = &s->devices[i];
        if (d->kind == kind && d->index == index && same_node(d->node, node))
            return (int32_t)i;
    }
    return -1;
}

static void slot_mark_free(sched *s, int32_t slot)
{
    s->free_bits[slot / 64] |= UINT64_C(1) << (slot % 64);
    s->n_free++;
}

static void slot_mark_taken(sched *s, int32_t slot)
{
    s->free_bits[slot / 64] &= ~(UINT64_C(1) << (slot % 64));
    s->n_free--;
}

int32_t sched_add_device(sched *s, int32_t kind, int32_t index, const char *node)
{
    if (s->n_devices >= INT32_MAX - 1 || sched_find_device(s, kind, index, node) >= 0)
        return -1;
    if (s->n_devices == s->devices_cap) {
        size_t cap = s->devices_cap ? s->devices_cap * 2 : 64;
        sched_device_rec *d = realloc(s->devices, cap * sizeof *d);
        if (!d)
            return -1;
        s->devices = d;
        s->devices_cap = cap;
    }
    size_t words = (s->n_devices + 1 + 63) / 64;
    if (words > s->free_words) {
        uint64_t *bits = realloc(s->free_bits, words * sizeof *bits);
        if (!bits)
            return -1;
        memset(bits + s->free_words, 0, (words - s->free_words) * sizeof *bits);
        s->free_bits = bits;
        s->free_words = words;
    }
    char *node_copy = NULL;
    if (node && !(node_copy = strdup(node)))
        return -1;
    int32_t slot = (int32_t)s->n_devices++;
    s->devices[slot] = (sched_device_rec){kind, index, node_copy, NULL};
    slot_mark_free(s, slot);
    return slot;
}

/* Slots above a removed one move down by one: in the jobs' lists, and in
 * the free bits, rebuilt from the owners (a slot is free iff unowned). */
bool sched_remove_device(sched *s, int32_t slot, char *owner, size_t len)
{
    if (slot < 0 || (size_t)slot >= s->n_devices)
        return false;
    sched_job *j = s->devices[slot].owner;
    if (owner && len)
        snprintf(owner, len, "%s", j ? j->id : "");
    if (j) {
        int32_t k = 0;
        for (int32_t i = 0; i < j->count; i++)
            if (j->devices[i] != slot)
                j->devices[k++] = j->devices[i];
        j->count = k;
    }
    free(s->devices[slot].node);
    memmove(&s->devices[slot], &s->devices[slot + 1],
            (s->n_devices - (size_t)slot - 1) * sizeof *s->devices);
    s->n_devices--;
    for (size_t i = 0; i < s->n_jobs; i++)
        for (int32_t k = 0; k < s->jobs[i]->count; k++)
            if (s->jobs[i]->devices[k] > slot)
                s->jobs[i]->devices[k]--;
    memset(s->free_bits, 0, s->free_words * sizeof *s->free_bits);
    s->n_free = 0;
    for (size_t i = 0; i < s->n_devices; i++)
        if (!s->devices[i].owner)
            slot_mark_free(s, (int32_t)i);
    /* The last round's decisions name slots by their old numbers. */
    s->n_decisions = 0;
    s->n_decision_slots = 0;
    return true;
}

size_t sched_device_count(const sched *s) { return s->n_devices; }
size_t sched_free_device_count(const sched *s) { return s->n_free; }

bool sched_device(const sched *s, int32_t slot, sched_device_info *out)
{
    if (slot < 0 || (size_t)slot >= s->n_devices)
        return false;
    const sched_device_rec *d = &s->devices[slot];
    *out = (sched_device_info){d->kind, d->index, d->node,
                               d->owner ? d->owner->id : NULL};
    return true;
}

void sched_take_slot(sched *s, int32_t slot, sched_job *owner)
{
    slot_mark_taken(s, slot);
    s->devices[slot].owner = owner;
}

bool sched_slot_free(const sched *s, int32_t slot)
{
    return (s->free_bits[slot / 64] >> (slot % 64)) & 1;
}

int32_t sched_take_free_slot(sched *s, sched_job *owner)
{
    for (size_t w = 0; w < s->free_words; w++) {
        if (!s->free_bits[w])
            continue;
        int32_t slot = (int32_t)(w * 64 + (size_t)__builtin_ctzll(s->free_bits[w]));
        sched_take_slot(s, slot, owner);
        return slot;
    }
    return -1;
}

void sched_release_slot(sched *s, int32_t slot)
{
    s->devices[slot].owner = NULL;
    slot_mark_free(s, slot);
}

bool sched_job_reserve(sched_job *j, int32_t n)
{
    if (n <= j->devices_cap)
        return true;
    int32_t cap = j->devices_cap ? j->devices_cap : 4;
    while (cap < n)
        cap *= 2;
    int32_t *d = realloc(j->devices, (size_t)cap * sizeof *d);
    if (!d)
        return false;
    j->devices = d;
    j->devices_cap = cap;
    return true;
}

/* ---- jobs -------------------------------------------------------------- */

sched_job *sched_job_find(const sched *s, const char *id)
{
    for (size_t i = 0; i < s->n_jobs; i++)
        if (strcmp(s->jobs[i]->id, id) == 0)
            return s->jobs[i];
    return NULL;
}

loom_error *sched_job_check(const sched *s, const sched_job_spec *spec, sched_job *job)
{
    if (!spec || !spec->id || !spec->id[0])
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "job: id is missing");
    const char *id = spec->id;
    const char *plan = spec->plan && spec->plan[0] ? spec->plan : "/";
    int32_t plan_idx = sched_plan_find(s, plan);
    if (plan_idx < 0)
        return loom_err(LOOM_ERR_NOT_FOUND, "job '%s': plan: '%s' does not exist", id,
                        plan);
    if (spec->kind < SCHED_JOB_TRAINING || spec->kind > SCHED_JOB_KERNEL)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "job '%s': kind: expected training (0), experiment (1) or "
                        "kernel (2), got %d", id, spec->kind);
    if (spec->pool < SCHED_POOL_ANY || spec->pool > SCHED_POOL_GPU)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "job '%s': pool: expected any (0), cpu (1) or gpu (2), got %d", id,
                        spec->pool);
    if (spec->max_devices < 1)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "job '%s': max_devices: expected >= 1, got %d", id,
                        spec->max_devices);
    int32_t min = spec->elastic ? (spec->min_devices ? spec->min_devices : 1)
                                : spec->max_devices;
    if (spec->elastic && (min < 1 || min > spec->max_devices))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "job '%s': min_devices: expected 1..max_devices (%d), got %d", id,
                        spec->max_devices, spec->min_devices);
    if (!(spec->expected_seconds >= 0) || !isfinite(spec->expected_seconds))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "job '%s': expected_seconds: expected a number >= 0 (0: unknown), "
                        "got %g", id, spec->expected_seconds);
    if (sched_job_find(s, id))
        return loom_err(LOOM_ERR_ALREADY_EXISTS, "job '%s' already exists", id);
    *job = (sched_job){
        .plan = plan_idx,
        .kind = spec->kind,
        .pool = spec->pool,
        .elastic = spec->elastic,
        .min_devices = min,
        .max_devices = spec->max_devices,
        .priority = spec->priority,
        .wait_if_too_large = spec->wait_if_too_large,
        .tag = spec->tag,
        .user = (char *)(spec->user && spec->user[0] ? spec->user : NULL),
        .expected_seconds = spec->expected_seconds,
        .end_estimate = INFINITY,
        .head_since = NAN,
        .held_shadow = INFINITY,
        .held_at = -1,
        .wait_plan = -1,
        .wait_holder = UINT64_MAX,
    };
    return NULL;
}

/* Why a job can never start as things stand (NULL if it can). */
static loom_error *never_fits(const sched *s, const sched_job *j, const char *id)
{
    int32_t need = sched_job_need(j);
    const char *field = j->elastic ? "min_devices" : "max_devices";
    size_t have = sched_pool_size(s, j->pool);
    if ((size_t)need > have)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED,
                        "job '%s': %s %d exceeds the %zu %sdevice(s) in the inventory "
                        "(submit with wait_if_too_large to queue it until devices are "
                        "added)", id, field, need, have,
                        !sched_inventory_mixed(s) ? ""
                        : j->pool == SCHED_POOL_GPU ? "GPU " : "CPU-slot ");
    for (int32_t p = j->plan; p >= 0; p = s->plans[p].parent) {
        int32_t cap = s->plans[p].cap_devices;
        if (cap > 0 && need > cap)
            return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED,
                            "job '%s': %s %d exceeds plan '%s' cap_devices %d (submit "
                            "with wait_if_too_large to queue it until the cap is raised)",
                            id, field, need, s->plans[p].path, cap);
    }
    return NULL;
}

static loom_error *job_add(sched *s, const sched_job *proto, const char *id,
                           sched_job **out)
{
    if (s->n_jobs == s->jobs_cap) {
        size_t cap = s->jobs_cap ? s->jobs_cap * 2 : 64;
        sched_job **jobs = realloc(s->jobs, cap * sizeof *jobs);
        if (!jobs)
            return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "job '%s': out of memory", id);
        s->jobs = jobs;
        s->jobs_cap = cap;
    }
    sched_job *j = malloc(sizeof *j);
    char *id_copy = strdup(id);
    /* proto->user is the spec's string until copied here */
    char *user_copy = proto->user ? strdup(proto->user) : NULL;
    if (!j || !id_copy || (proto->user && !user_copy)) {
        free(j);
        free(id_copy);
        free(user_copy);
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "job '%s': out of memory", id);
    }
    *j = *proto;
    j->id = id_copy;
    j->user = user_copy;
    j->seq = s->next_seq++;
    s->jobs[s->n_jobs++] = j;
    *out = j;
    return NULL;
}

loom_error *sched_submit(sched *s, const sched_job_spec *spec, double now)
{
    sched_job proto;
    loom_error *err = sched_job_check(s, spec, &proto);
    if (err)
        return err;
    err = never_fits(s, &proto, spec->id);
    if (err && !spec->wait_if_too_large)
        return err;
    loom_err_free(err);
    proto.state = SCHED_JOB_QUEUED;
    proto.submitted = now;
    sched_job *j;
    return job_add(s, &proto, spec->id, &j);
}

loom_error *sched_end(sched *s, const char *id)
{
    for (size_t i = 0; id && i < s->n_jobs; i++) {
        sched_job *j = s->jobs[i];
        if (strcmp(j->id, id) != 0)
            continue;
        for (int32_t k = 0; k < j->count; k++)
            sched_release_slot(s, j->devices[k]);
        /* Keep submission order: admission and decisions rely on it. */
        memmove(&s->jobs[i], &s->jobs[i + 1], (s->n_jobs - i - 1) * sizeof *s->jobs);
        s->n_jobs--;
        job_free(j);
        return NULL;
    }
    return loom_err(LOOM_ERR_NOT_FOUND, "job '%s' is not known to the scheduler",
                    id ? id : "(null)");
}

loom_error *sched_set_job_range(sched *s, const char *id, int32_t min_devices,
                                int32_t max_devices)
{
    sched_job *j = id ? sched_job_find(s, id) : NULL;
    if (!j)
        return loom_err(LOOM_ERR_NOT_FOUND, "job '%s' is not known to the scheduler",
                        id ? id : "(null)");
    if (!j->elastic)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "job '%s' is not elastic: it runs on exactly %d device(s)", id,
                        j->max_devices);
    if (min_devices < 1 || max_devices < min_devices)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "job '%s': devices must satisfy 1 <= min (%d) <= max (%d)", id,
                        min_devices, max_devices);
    j->min_devices = min_devices;
    j->max_devices = max_devices;
    /* Outside its new range the job is never pinned (sched_plan's rule 1),
     * so the change applies at the next plan. */
    return NULL;
}

loom_error *sched_set_job_end_estimate(sched *s, const char *id, double end)
{
    sched_job *j = id ? sched_job_find(s, id) : NULL;
    if (!j)
        return loom_err(LOOM_ERR_NOT_FOUND, "job '%s' is not known to the scheduler",
                        id ? id : "(null)");
    j->end_estimate = isnan(end) ? INFINITY : end;
    return NULL;
}

bool sched_job_wait(const sched *s, const char *id, sched_wait *out)
{
    const sched_job *j = id ? sched_job_find(s, id) : NULL;
    if (!j)
        return false;
    *out = (sched_wait){.code = j->state == SCHED_JOB_QUEUED ? j->wait_code
                                                              : SCHED_WAIT_NONE,
                        .need = j->wait_need, .free = j->wait_free,
                        .limit = j->wait_limit, .count = j->wait_count};
    if (j->wait_plan >= 0 && (size_t)j->wait_plan < s->n_plans)
        out->plan = s->plans[j->wait_plan].path;
    for (size_t i = 0; j->wait_holder != UINT64_MAX && i < s->n_jobs; i++)
        if (s->jobs[i]->seq == j->wait_holder) {
            out->holder = s->jobs[i]->id;
            out->holder_user = s->jobs[i]->user;
            out->holder_kind = s->jobs[i]->kind;
        }
    return true;
}

int sched_wait_text(const sched_wait *w, char *buf, size_t len)
{
    const char *plan = w->plan ? w->plan : "/";
    switch (w->code) {
    case SCHED_WAIT_DEVICES:
        if (w->holder && w->count > 1)
            return snprintf(buf, len, "waiting for %d device%s, %d free (held by %s and %d "
                            "other job%s)", w->need, w->need == 1 ? "" : "s", w->free,
                            w->holder, w->count - 1, w->count == 2 ? "" : "s");
        if (w->holder)
            return snprintf(buf, len, "waiting for %d device%s, %d free (held by %s)", w->need,
                            w->need == 1 ? "" : "s", w->free, w->holder);
        return snprintf(buf, len, "waiting for %d device%s, %d free", w->need,
                        w->need == 1 ? "" : "s", w->free);
    case SCHED_WAIT_CAP:
        return snprintf(buf, len, "plan %s is at its cap of %d", plan, w->limit);
    case SCHED_WAIT_PRIORITY:
        return snprintf(buf, len, "behind %d job%s of higher priority in %s", w->count,
                        w->count == 1 ? "" : "s", plan);
    case SCHED_WAIT_RESERVED:
        if (w->holder)
            return snprintf(buf, len, "reserved for a larger job (%s)", w->holder);
        return snprintf(buf, len, "reserved for a larger job");
    case SCHED_WAIT_TOO_LARGE:
        if (w->plan)
            return snprintf(buf, len, "needs %d devices, more than plan %s's cap of %d",
                            w->need, plan, w->limit);
        return snprintf(buf, len, "needs %d devices, more than the %d in the inventory",
                        w->need, w->limit);
    case SCHED_WAIT_HANDBACK:
        if (w->holder)
            return snprintf(buf, len, "waiting for %d device(s) to be handed back by a "
                            "shrinking job (%s)", w->count, w->holder);
        return snprintf(buf, len, "waiting for %d device(s) to be handed back by a shrinking job",
                        w->count);
    default:
        return snprintf(buf, len, "%s", "");
    }
}

bool sched_get_job(const sched *s, const char *id, sched_job_info *out)
{
    const sched_job *j = id ? sched_job_find(s, id) : NULL;
    if (!j)
        return false;
    *out = (sched_job_info){
        .id = j->id,
        .plan = s->plans[j->plan].path,
        .user = j->user,
        .kind = j->kind,
        .state = j->state,
        .elastic = j->elastic,
        .min_devices = j->min_devices,
        .max_devices = j->max_devices,
        .priority = j->priority,
        .tag = j->tag,
        .count = j->count,
        .devices = j->devices,
        .submitted = j->submitted,
        .started = j->started,
        .last_resize = j->last_resize,
    };
    return true;
}

size_t sched_job_count(const sched *s) { return s->n_jobs; }

size_t sched_queued_count(const sched *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_jobs; i++)
        n += s->jobs[i]->state == SCHED_JOB_QUEUED;
    return n;
}

/* ---- reconstruction ---------------------------------------------------- */

static loom_error *restore_check(const sched *s, const sched_restore_entry *e, size_t n,
                                 int64_t *claim)
{
    for (size_t i = 0; i < n; i++) {
        sched_job proto;
        loom_error *err = sched_job_check(s, &e[i].job, &proto);
        if (err)
            return loom_err_wrap(err, "restore entry %zu", i);
        for (size_t k = 0; k < i; k++)
            if (strcmp(e[k].job.id, e[i].job.id) == 0)
                return loom_err(LOOM_ERR_ALREADY_EXISTS,
                                "restore entry %zu: job '%s' is listed twice", i,
                                e[i].job.id);
        if (e[i].n_devices < 0 || (e[i].n_devices > 0 && !e[i].devices))
            return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                            "restore entry %zu: job '%s': devices: expected %d slots",
                            i, e[i].job.id, e[i].n_devices);
        for (int32_t d = 0; d < e[i].n_devices; d++) {
            int32_t slot = e[i].devices[d];
            if (slot < 0 || (size_t)slot >= s->n_devices)
                return loom_err(LOOM_ERR_NOT_FOUND,
                                "restore entry %zu: job '%s': device slot %d is not "
                                "in the inventory (%zu devices)",
                                i, e[i].job.id, slot, s->n_devices);
            const sched_device_rec *dev = &s->devices[slot];
            const char *holder = dev->owner ? dev->owner->id
                                 : claim[slot] >= 0 ? e[claim[slot]].job.id : NULL;
            if (holder)
                return loom_err(LOOM_ERR_ALREADY_EXISTS,
                                "restore: device slot %d (%s:%d%s%s) is held by both "
                                "job '%s' and job '%s'; refusing a double assignment",
                                slot, dev->kind == LOOM_DEVICE_CUDA ? "cuda" : "cpu",
                                dev->index, dev->node ? " on " : "",
                                dev->node ? dev->node : "", holder, e[i].job.id);
            claim[slot] = (int64_t)i;
        }
    }
    return NULL;
}

loom_error *sched_restore(sched *s, const sched_restore_entry *e, size_t n)
{
    if (n == 0)
        return NULL;
    int64_t *claim = malloc((s->n_devices ? s->n_devices : 1) * sizeof *claim);
    if (!claim)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "restore: out of memory");
    for (size_t i = 0; i < s->n_devices; i++)
        claim[i] = -1;
    loom_error *err = restore_check(s, e, n, claim);
    free(claim);
    if (err)
        return err;

    size_t first = s->n_jobs;
    for (size_t i = 0; i < n && !err; i++) {
        sched_job proto;
        sched_job *j;
        err = sched_job_check(s, &e[i].job, &proto);
        if (!err) {
            proto.state = e[i].n_devices > 0 ? SCHED_JOB_RUNNING : SCHED_JOB_QUEUED;
            proto.submitted = proto.started = proto.last_resize = e[i].last_resize;
            err = job_add(s, &proto, e[i].job.id, &j);
        }
        if (!err && !sched_job_reserve(j, e[i].n_devices))
            err = loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "restore: out of memory");
        for (int32_t d = 0; !err && d < e[i].n_devices; d++) {
            int32_t slot = e[i].devices[d];
            slot_mark_taken(s, slot);
            s->devices[slot].owner = j;
            j->devices[j->count++] = slot;
        }
    }
    if (err) /* out of memory half way: undo what was added */
        while (s->n_jobs > first)
            sched_end(s, s->jobs[s->n_jobs - 1]->id);
    return err;
}

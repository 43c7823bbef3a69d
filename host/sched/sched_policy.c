/*
 * sched/sched_policy.c - one scheduling round, sched_plan(): admission of
 * queued jobs, hysteresis pins, the top-down water-fill through the plan
 * tree (share weights between plans, the plan's policy between its jobs),
 * and the sticky device moves that become the decisions. The rules are
 * stated in sched.h; this file keeps to O(jobs log jobs + plans) per round.
 */
#include "sched/sched_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

#define NO_LIMIT INT64_MAX

/* ---- scratch ------------------------------------------------------------ */

static bool scratch_reserve(sched *s)
{
    size_t jobs = s->n_jobs ? s->n_jobs : 1;
    if (s->scratch_jobs_cap < jobs) {
        sched_job **q = realloc(s->queue, jobs * sizeof *q);
        if (q)
            s->queue = q;
        sched_job **b = q ? realloc(s->plan_jobs, jobs * sizeof *b) : NULL;
        if (b)
            s->plan_jobs = b;
        if (!q || !b)
            return false;
        s->scratch_jobs_cap = jobs;
    }
    /* wf items: at most every job of one plan, or every child plan plus the
     * plan's own group. */
    size_t items = s->n_jobs + s->n_plans + 1;
    if (s->wf_items_cap < items) {
        wf_item *p = realloc(s->wf_items, items * sizeof *p);
        if (!p)
            return false;
        s->wf_items = p;
        s->wf_items_cap = items;
    }
    if (s->decisions_cap < s->n_jobs) {
        sched_decision *d = realloc(s->decisions, s->n_jobs * sizeof *d);
        if (!d)
            return false;
        s->decisions = d;
        s->decisions_cap = s->n_jobs;
    }
    /* Every slot moves at most twice per round (released, then taken). */
    size_t slots = 2 * s->n_devices + 1;
    if (s->decision_slots_cap < slots) {
        int32_t *d = realloc(s->decision_slots, slots * sizeof *d);
        if (!d)
            return false;
        s->decision_slots = d;
        s->decision_slots_cap = slots;
    }
    return true;
}

/* ---- limits and needs --------------------------------------------------- */

int64_t sched_plan_limit(const sched *s, int32_t p)
{
    int64_t limit = s->plans[p].cap_devices > 0 ? s->plans[p].cap_devices : NO_LIMIT;
    if (p == 0 && (int64_t)s->pool_devices < limit)
        limit = (int64_t)s->pool_devices;
    return limit;
}

/* Sums each active job's `lo` into its plan and up the tree into p.need. */
static void sum_needs(sched *s)
{
    for (size_t p = 0; p < s->n_plans; p++)
        s->plans[p].need = 0;
    for (size_t i = 0; i < s->n_jobs; i++)
        if (s->jobs[i]->active)
            s->plans[s->jobs[i]->plan].need += s->jobs[i]->lo;
    for (size_t k = s->n_plans; k-- > 1;) {
        const sched_plan_node *p = &s->plans[s->topo[k]];
        s->plans[p->parent].need += p->need;
    }
}

static bool needs_within_limits(const sched *s)
{
    for (size_t p = 0; p < s->n_plans; p++)
        if (s->plans[p].need > sched_plan_limit(s, (int32_t)p))
            return false;
    return true;
}

/* ---- the water-fill through the tree ------------------------------------ */

static int own_priority_cmp(const void *a, const void *b)
{
    const sched_job *x = *(sched_job *const *)a, *y = *(sched_job *const *)b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Fair within a set of jobs: weight 1 each, within [lo, hi]. */
static void fill_jobs_evenly(sched *s, sched_job **jobs, size_t n, int64_t total)
{
    wf_item *it = s->wf_items;
    for (size_t i = 0; i < n; i++)
        it[i] = (wf_item){1.0, jobs[i]->lo, jobs[i]->hi, jobs[i]->count, jobs[i]->seq, 0};
    if (!wf_fill(&s->wf, it, n, total))
        log_warn("sched: out of memory dividing devices; jobs keep their minimum");
    for (size_t i = 0; i < n; i++)
        jobs[i]->target = (int32_t)it[i].out;
}

static int user_seq_cmp(const void *a, const void *b)
{
    const sched_job *x = *(sched_job *const *)a, *y = *(sched_job *const *)b;
    if (!x->user || !y->user) {
        if (x->user != y->user)
            return x->user ? 1 : -1;
    } else {
        int c = strcmp(x->user, y->user);
        if (c)
            return c;
    }
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static bool same_user(const sched_job *a, const sched_job *b)
{
    return a->user == b->user || (a->user && b->user && strcmp(a->user, b->user) == 0);
}

/* Fair: evenly between the users of the plan's jobs (anonymous jobs are one
 * user), then evenly between each user's jobs, so a user with ten jobs
 * does not get ten times the share of a user with one. */
static void fill_jobs_by_user(sched *s, sched_job **jobs, size_t n, int64_t total)
{
    bool several = false;
    for (size_t i = 1; i < n && !several; i++)
        several = !same_user(jobs[0], jobs[i]);
    if (!several) {
        fill_jobs_evenly(s, jobs, n, total);
        return;
    }
    qsort(jobs, n, sizeof *jobs, user_seq_cmp);
    wf_item *it = s->wf_items;
    size_t users = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || !same_user(jobs[i - 1], jobs[i]))
            it[users++] = (wf_item){1.0, 0, 0, 0, jobs[i]->seq, 0};
        wf_item *u = &it[users - 1];
        u->lo += jobs[i]->lo;
        u->hi += jobs[i]->hi;
        u->current += jobs[i]->count;
    }
    if (!wf_fill(&s->wf, it, users, total))
        log_warn("sched: out of memory dividing devices between users");
    /* Park each user's share in its first job: the fills below reuse it. */
    for (size_t i = 0, u = 0; i < n; i++)
        if (i == 0 || !same_user(jobs[i - 1], jobs[i]))
            jobs[i]->target = (int32_t)it[u++].out;
    for (size_t first = 0; first < n;) {
        size_t end = first + 1;
        while (end < n && same_user(jobs[first], jobs[end]))
            end++;
        fill_jobs_evenly(s, jobs + first, end - first, jobs[first]->target);
        first = end;
    }
}

/* Priority: everyone their `lo`, then the rest to the highest priority
 * first, equal priorities evenly. */
static void fill_jobs_by_priority(sched *s, sched_job **jobs, size_t n, int64_t total)
{
    qsort(jobs, n, sizeof *jobs, own_priority_cmp);
    int64_t rest = total;
    for (size_t i = 0; i < n; i++) {
        jobs[i]->target = jobs[i]->lo;
        rest -= jobs[i]->lo;
    }
    if (rest < 0) { /* inconsistent restore: scale the minimums evenly */
        fill_jobs_evenly(s, jobs, n, total);
        return;
    }
    for (size_t g = 0; g < n && rest > 0;) {
        size_t end = g;
        int64_t room = 0, lo = 0;
        while (end < n && jobs[end]->priority == jobs[g]->priority) {
            room += jobs[end]->hi - jobs[end]->lo;
            lo += jobs[end]->lo;
            end++;
        }
        if (rest >= room) {
            for (size_t i = g; i < end; i++)
                jobs[i]->target = jobs[i]->hi;
            rest -= room;
        } else {
            fill_jobs_evenly(s, jobs + g, end - g, lo + rest);
            rest = 0;
        }
        g = end;
    }
}

/* Buckets the active jobs by plan and computes each subtree's need, upper
 * bound (what it could use, caps applied) and current holding. */
static void tree_bottom_up(sched *s, int64_t *current)
{
    size_t n_plans = s->n_plans;
    for (size_t p = 0; p < n_plans; p++) {
        s->plans[p].jobs_count = 0;
        s->plans[p].need = 0;
        s->plans[p].upper = 0;
        current[p] = 0;
    }
    for (size_t i = 0; i < s->n_jobs; i++)
        if (s->jobs[i]->active)
            s->plans[s->jobs[i]->plan].jobs_count++;
    int32_t at = 0;
    for (size_t p = 0; p < n_plans; p++) {
        s->plans[p].jobs_first = at;
        at += s->plans[p].jobs_count;
        s->plans[p].jobs_count = 0;
    }
    for (size_t i = 0; i < s->n_jobs; i++) {
        sched_job *j = s->jobs[i];
        if (!j->active)
            continue;
        sched_plan_node *p = &s->plans[j->plan];
        s->plan_jobs[p->jobs_first + p->jobs_count++] = j;
        p->need += j->lo;
        p->upper += j->hi;
        current[j->plan] += j->count;
    }
    for (size_t k = n_plans; k-- > 0;) {
        int32_t idx = s->topo[k];
        sched_plan_node *p = &s->plans[idx];
        if (p->cap_devices > 0 && p->upper > p->cap_devices)
            p->upper = p->cap_devices;
        if (p->need > p->upper) /* only after an inconsistent restore */
            p->upper = p->need;
        if (idx > 0) {
            s->plans[p->parent].need += p->need;
            s->plans[p->parent].upper += p->upper;
            current[p->parent] += current[idx];
        }
    }
}

/* Divides each plan's allocation between its child plans (by weight) and
 * its own jobs (one more child of weight 1), then among those jobs by the
 * plan's policy. */
static void tree_top_down(sched *s, const int64_t *current)
{
    int64_t root = s->plans[0].upper;
    if ((int64_t)s->pool_devices < root)
        root = (int64_t)s->pool_devices;
    s->plans[0].alloc = (int32_t)root;

    for (size_t k = 0; k < s->n_plans; k++) {
        sched_plan_node *p = &s->plans[s->topo[k]];
        int64_t alloc = p->alloc;
        int64_t own_lo = 0, own_hi = 0, own_current = 0;
        sched_job **own = s->plan_jobs + p->jobs_first;
        for (int32_t i = 0; i < p->jobs_count; i++) {
            own_lo += own[i]->lo;
            own_hi += own[i]->hi;
            own_current += own[i]->count;
        }
        int64_t own_alloc = alloc;
        if (p->child_count > 0) {
            wf_item *it = s->wf_items;
            size_t n = 0;
            int64_t sum_lo = 0;
            const int32_t *children = s->child_index + p->first_child;
            for (int32_t c = 0; c < p->child_count; c++) {
                sched_plan_node *child = &s->plans[children[c]];
                child->alloc = 0;
                if (child->upper == 0)
                    continue;
                int64_t guaranteed = child->min_devices < child->upper
                                         ? child->min_devices : child->upper;
                int64_t lo = child->need > guaranteed ? child->need : guaranteed;
                it[n++] = (wf_item){child->weight, lo, child->upper,
                                    current[children[c]], (uint64_t)children[c], 0};
                sum_lo += lo;
            }
            size_t n_children = n;
            if (p->jobs_count > 0) {
                it[n++] = (wf_item){1.0, own_lo, own_hi, own_current, UINT64_MAX, 0};
                sum_lo += own_lo;
            }
            /* Guarantees promised beyond what the plan got: keep only the
             * hard needs of running and admitted jobs. */
            if (sum_lo > alloc)
                for (size_t i = 0; i < n_children; i++)
                    it[i].lo = s->plans[it[i].seq].need;
            if (!wf_fill(&s->wf, it, n, alloc))
                log_warn("sched: out of memory dividing devices between plans");
            for (size_t i = 0; i < n_children; i++)
                s->plans[it[i].seq].alloc = (int32_t)it[i].out;
            own_alloc = p->jobs_count > 0 ? it[n - 1].out : 0;
        }
        if (p->jobs_count == 0)
            continue;
        if (p->policy == SCHED_POLICY_PRIORITY)
            fill_jobs_by_priority(s, own, (size_t)p->jobs_count, own_alloc);
        else
            fill_jobs_by_user(s, own, (size_t)p->jobs_count, own_alloc);
    }
}

static void fill_tree(sched *s, int64_t *current)
{
    tree_bottom_up(s, current);
    tree_top_down(s, current);
}

/* ---- applying the targets ----------------------------------------------- */

static sched_decision *decision_new(sched *s, sched_job *j)
{
    sched_decision *d = &s->decisions[s->n_decisions++];
    *d = (sched_decision){.job_id = j->id, .tag = j->tag, .old_count = j->count};
    return d;
}

static void apply_targets(sched *s, double now)
{
    /* Shrinks first, so their slots are free before anyone grows. */
    for (size_t i = 0; i < s->n_jobs; i++) {
        sched_job *j = s->jobs[i];
        if (!j->active || j->target >= j->count)
            continue;
        sched_decision *d = decision_new(s, j);
        int32_t *released = s->decision_slots + s->n_decision_slots;
        while (j->count > j->target)
            released[d->n_released++] = sched_place_give_back(s, j);
        s->n_decision_slots += (size_t)d->n_released;
        d->released = released;
        d->new_count = j->count;
        j->last_resize = now;
    }
    for (size_t i = 0; i < s->n_jobs; i++) {
        sched_job *j = s->jobs[i];
        if (!j->active || j->target <= j->count)
            continue;
        if (!sched_job_reserve(j, j->target)) {
            log_warn("sched: out of memory growing job '%s'", j->id);
            continue;
        }
        sched_decision *d = decision_new(s, j);
        int32_t *added = s->decision_slots + s->n_decision_slots;
        while (j->count < j->target) {
            int32_t slot = sched_place_take(s, j, j->target - j->count);
            if (slot < 0)
                break; /* cannot happen: targets never exceed the inventory */
            j->devices[j->count++] = slot;
            added[d->n_added++] = slot;
        }
        s->n_decision_slots += (size_t)d->n_added;
        d->added = added;
        d->new_count = j->count;
        if (j->state == SCHED_JOB_QUEUED) {
            j->state = SCHED_JOB_RUNNING;
            j->started = now;
        }
        j->last_resize = now;
    }
}

/* ---- the round ---------------------------------------------------------- */

/* One round over s's jobs and free devices (one pool's, or all). */
static void plan_round(sched *s, double now)
{
    int64_t *current = malloc((s->n_plans ? s->n_plans : 1) * sizeof *current);
    if (!current) {
        log_error("sched: out of memory planning; allocations unchanged");
        return;
    }

    /* Running jobs: their need, and whether hysteresis pins them. */
    double hold = s->opt.hysteresis;
    bool any_pin = false;
    for (size_t i = 0; i < s->n_jobs; i++) {
        sched_job *j = s->jobs[i];
        j->active = j->state == SCHED_JOB_RUNNING;
        j->pinned = false;
        j->target = j->count;
        if (!j->active)
            continue;
        j->lo = sched_job_need(j);
        j->hi = j->max_devices;
        j->pinned = j->elastic && hold > 0 && now - j->last_resize < hold &&
                    j->count >= j->min_devices && j->count <= j->max_devices;
        any_pin |= j->pinned;
    }

    sum_needs(s);
    if (!sched_admit(s, now)) {
        free(current);
        log_error("sched: out of memory admitting jobs; allocations unchanged");
        return;
    }

    /* Pinned jobs stay as they are, unless that keeps an admitted job out. */
    if (any_pin) {
        for (size_t i = 0; i < s->n_jobs; i++)
            if (s->jobs[i]->pinned)
                s->jobs[i]->lo = s->jobs[i]->count;
        sum_needs(s);
        if (!needs_within_limits(s)) {
            any_pin = false;
            for (size_t i = 0; i < s->n_jobs; i++)
                if (s->jobs[i]->pinned) {
                    s->jobs[i]->pinned = false;
                    s->jobs[i]->lo = s->jobs[i]->min_devices;
                }
        } else {
            for (size_t i = 0; i < s->n_jobs; i++)
                if (s->jobs[i]->pinned)
                    s->jobs[i]->hi = s->jobs[i]->count;
        }
    }

    fill_tree(s, current);

    /* A pin never leaves a device idle: let pinned jobs grow (not shrink)
     * into what is left, everyone else keeping what the first pass gave. */
    if (any_pin) {
        int64_t given = 0;
        bool could_grow = false;
        for (size_t i = 0; i < s->n_jobs; i++) {
            sched_job *j = s->jobs[i];
            if (!j->active)
                continue;
            given += j->target;
            could_grow |= j->pinned && j->count < j->max_devices;
        }
        if (could_grow && given < (int64_t)s->pool_devices) {
            for (size_t i = 0; i < s->n_jobs; i++) {
                sched_job *j = s->jobs[i];
                if (!j->active)
                    continue;
                j->lo = j->target;
                if (j->pinned)
                    j->hi = j->max_devices;
            }
            fill_tree(s, current);
        }
    }
    free(current);

    apply_targets(s, now);
    s->reserved = s->n_free < (size_t)s->reserve_head ? s->n_free : (size_t)s->reserve_head;

    for (size_t i = 0; i < s->n_jobs; i++) {
        const sched_job *j = s->jobs[i];
        if (j->pinned && j->last_resize + hold < s->next_review)
            s->next_review = j->last_resize + hold;
    }
}

size_t sched_plan(sched *s, double now, const sched_decision **out)
{
    s->n_decisions = 0;
    s->n_decision_slots = 0;
    s->next_review = INFINITY;
    s->pool_devices = s->n_devices;
    *out = s->decisions;
    if (!scratch_reserve(s)) { /* for every job: the decisions of all pools */
        log_error("sched: out of memory planning; allocations unchanged");
        return 0;
    }
    *out = s->decisions; /* scratch_reserve may have moved them */
    if (!sched_inventory_mixed(s)) {
        plan_round(s, now);
        return s->n_decisions;
    }
    /* Each kind its own round; what waits and what is held, summed. */
    size_t reserved = 0, waiting = 0;
    const int32_t kinds[] = {LOOM_DEVICE_CPU, LOOM_DEVICE_CUDA};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        sched_pool_round saved;
        if (!sched_pool_enter(s, kinds[k], &saved)) {
            log_error("sched: out of memory planning; allocations unchanged");
            continue;
        }
        plan_round(s, now);
        reserved += s->reserved;
        waiting += s->waiting_for_devices;
        sched_pool_leave(s, kinds[k], &saved);
    }
    s->reserved = reserved;
    s->waiting_for_devices = waiting;
    return s->n_decisions;
}

double sched_next_review(const sched *s) { return s->next_review; }
size_t sched_reserved_count(const sched *s) { return s->reserved; }
size_t sched_waiting_for_devices(const sched *s) { return s->waiting_for_devices; }

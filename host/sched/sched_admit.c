/*
 * sched/sched_admit.c - admission, the part of sched_plan() that decides
 * which queued jobs start this round (rules in sched.h): the per-plan
 * queues, the deficit order that walks them, the EASY reservation of the
 * first job that does not fit, and the reason every other job waits.
 *
 * Cost per round: O(q log q) to sort the q queued jobs, then per job
 * considered one walk down the plan tree (O(depth x children)); the
 * reservation sorts the active jobs' ends once (O(a log a)).
 */
#include "sched/sched_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One round's admission state. Reservations live in the plans: the root's
 * for the inventory, a capped plan's for its cap (res_job, res_shadow,
 * res_extra). */
typedef struct admit_ctx {
    sched *s;
    double now;
    bool fifo, backfill;
    bool stop;                /* plain FIFO reached its head */
} admit_ctx;

static int64_t free_now(const sched *s)
{
    int64_t f = sched_plan_limit(s, 0) - s->plans[0].need;
    return f > 0 ? f : 0;
}

static void set_wait(sched_job *j, int32_t code, int32_t plan, int32_t limit)
{
    j->wait_code = code;
    j->wait_plan = plan;
    j->wait_limit = limit;
    j->wait_holder = UINT64_MAX;
}

/* ---- the queues --------------------------------------------------------- */

static int user_cmp(const char *a, const char *b)
{
    if (!a || !b)
        return (a != NULL) - (b != NULL);
    return strcmp(a, b);
}

static int queue_cmp(const void *a, const void *b)
{
    const sched_job *x = *(sched_job *const *)a, *y = *(sched_job *const *)b;
    if (x->plan != y->plan)
        return x->plan < y->plan ? -1 : 1;
    if (x->admit_priority != y->admit_priority)
        return x->admit_priority > y->admit_priority ? -1 : 1;
    if (x->by_user) {
        int c = user_cmp(x->user, y->user);
        if (c)
            return c;
    }
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static bool group_push(sched *s, size_t *n, int32_t plan, const char *user, int32_t first)
{
    if (*n == s->groups_cap) {
        size_t cap = s->groups_cap ? 2 * s->groups_cap : 16;
        sched_queue_group *g = realloc(s->groups, cap * sizeof *g);
        if (!g)
            return false;
        s->groups = g;
        s->groups_cap = cap;
    }
    s->groups[(*n)++] = (sched_queue_group){plan, user, first, 0, first, 0};
    return true;
}

/* Fills s->queue with the queued jobs in consideration order and cuts it
 * into groups (one per plan and user; one in all in a FIFO mode). */
static bool build_queues(admit_ctx *c, size_t *n_groups)
{
    sched *s = c->s;
    size_t nq = 0;
    for (size_t i = 0; i < s->n_jobs; i++) {
        sched_job *j = s->jobs[i];
        if (j->state != SCHED_JOB_QUEUED)
            continue;
        bool prio = s->plans[j->plan].policy == SCHED_POLICY_PRIORITY;
        j->admit_priority = prio && !c->fifo ? j->priority : 0;
        j->by_user = !prio && !c->fifo;
        j->wait_code = SCHED_WAIT_NONE;
        j->wait_plan = -1;
        j->considered = false;
        s->queue[nq++] = j;
    }
    for (size_t p = 0; p < s->n_plans; p++) {
        s->plans[p].blocked = false;
        s->plans[p].res_job = NULL;
        s->plans[p].pending = 0;
        s->plans[p].groups_first = s->plans[p].groups_count = 0;
    }
    *n_groups = 0;
    if (nq == 0)
        return true;
    /* s->jobs is in submission order already: FIFO needs no sort. */
    if (!c->fifo)
        qsort(s->queue, nq, sizeof *s->queue, queue_cmp);
    for (size_t k = 0; k < nq; k++) {
        const sched_job *j = s->queue[k];
        const sched_queue_group *last = *n_groups ? &s->groups[*n_groups - 1] : NULL;
        bool same = last && (c->fifo || (last->plan == j->plan &&
                                         (!j->by_user || !user_cmp(last->user, j->user))));
        if (!same && !group_push(s, n_groups, c->fifo ? 0 : j->plan,
                                 j->by_user ? j->user : NULL, (int32_t)k))
            return false;
        sched_queue_group *g = &s->groups[*n_groups - 1];
        g->count++;
        sched_plan_node *p = &s->plans[g->plan];
        if (!same && p->groups_count++ == 0)
            p->groups_first = (int32_t)(*n_groups - 1);
        p->pending++;
    }
    for (size_t k = s->n_plans; k-- > 1;) {
        const sched_plan_node *p = &s->plans[s->topo[k]];
        s->plans[p->parent].pending += p->pending;
    }
    return true;
}

/* Each user's active need in a plan split into several user groups. */
static void group_usage(sched *s)
{
    for (size_t i = 0; i < s->n_jobs; i++) {
        const sched_job *j = s->jobs[i];
        const sched_plan_node *p = &s->plans[j->plan];
        if (!j->active || p->groups_count < 2)
            continue;
        /* groups of a plan are sorted by user: binary search */
        int32_t lo = p->groups_first, hi = lo + p->groups_count - 1;
        while (lo <= hi) {
            int32_t mid = lo + (hi - lo) / 2;
            int cmp = user_cmp(s->groups[mid].user, j->user);
            if (cmp == 0) {
                s->groups[mid].usage += j->lo;
                break;
            }
            if (cmp < 0)
                lo = mid + 1;
            else
                hi = mid - 1;
        }
    }
}

/* ---- the deficit order -------------------------------------------------- */

static int64_t group_left(const sched_queue_group *g) { return g->first + g->count - g->next; }

/* The own group with the least usage (ties: the older next job). */
static sched_queue_group *own_group(sched *s, const sched_plan_node *p)
{
    sched_queue_group *best = NULL;
    for (int32_t k = 0; k < p->groups_count; k++) {
        sched_queue_group *g = &s->groups[p->groups_first + k];
        if (!group_left(g))
            continue;
        if (!best || g->usage < best->usage ||
            (g->usage == best->usage && s->queue[g->next]->seq < s->queue[best->next]->seq))
            best = g;
    }
    return best;
}

/* Lower is more deserving: below the guaranteed minimum first, then the
 * least need per unit of share weight. */
static bool deficit_less(bool below_a, double ratio_a, double weight_a, bool below_b,
                         double ratio_b, double weight_b)
{
    if (below_a != below_b)
        return below_a;
    if (ratio_a != ratio_b)
        return ratio_a < ratio_b;
    return weight_a > weight_b;
}

/* Walks down from the root to the group whose next job goes next. */
static sched_queue_group *next_group(sched *s)
{
    int32_t at = 0;
    for (;;) {
        const sched_plan_node *p = &s->plans[at];
        if (p->pending <= 0 || p->blocked)
            return NULL;
        sched_queue_group *own = own_group(s, p);
        int32_t best = -1;
        bool best_below = false;
        double best_ratio = own ? (double)p->own_need : INFINITY, best_weight = 1;
        const int32_t *children = s->child_index + p->first_child;
        for (int32_t k = 0; k < p->child_count; k++) {
            const sched_plan_node *ch = &s->plans[children[k]];
            if (ch->pending <= 0 || ch->blocked)
                continue;
            bool below = ch->need < ch->min_devices;
            double ratio = (double)ch->need / ch->weight;
            if ((best < 0 && !own) ||
                deficit_less(below, ratio, ch->weight, best_below, best_ratio, best_weight)) {
                best = children[k];
                best_below = below;
                best_ratio = ratio;
                best_weight = ch->weight;
            }
        }
        if (best < 0)
            return own;
        at = best;
    }
}

/* A job left the queue of plan `p` (admitted or given a reason). */
static void pending_drop(sched *s, int32_t p, int64_t n)
{
    for (; p >= 0; p = s->plans[p].parent)
        s->plans[p].pending -= n;
}

/* ---- the reservations -------------------------------------------------- */

static int end_cmp(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

static bool in_subtree(const sched *s, int32_t plan, int32_t top)
{
    for (int32_t p = plan; p >= 0; p = s->plans[p].parent)
        if (p == top)
            return true;
    return false;
}

/* Gives `head` the reservation of plan `at` (the root: the inventory; else
 * its cap): dates its start from the expected ends of the active jobs that
 * hold what it needs, and counts what will be free beyond its need then. */
static bool reserve(admit_ctx *c, int32_t at, sched_job *head)
{
    sched *s = c->s;
    sched_plan_node *p = &s->plans[at];
    p->res_job = head;
    if (isnan(head->head_since))
        head->head_since = c->now;
    if (head->held_at != at)
        head->held_shadow = INFINITY;
    head->held_at = at;
    /* (end, need, elastic) of each active job in the plan's subtree */
    size_t n = 0;
    if (s->ends_cap < 3 * s->n_jobs) {
        double *e = realloc(s->ends, 3 * s->n_jobs * sizeof *e);
        if (!e)
            return false;
        s->ends = e;
        s->ends_cap = 3 * s->n_jobs;
    }
    for (size_t i = 0; i < s->n_jobs; i++) {
        const sched_job *j = s->jobs[i];
        if (!j->active || (at > 0 && !in_subtree(s, j->plan, at)))
            continue;
        double *e = s->ends + 3 * n++;
        e[0] = j->end_estimate > c->now ? j->end_estimate : c->now;
        e[1] = j->lo;
        e[2] = j->elastic;
    }
    qsort(s->ends, n, 3 * sizeof *s->ends, end_cmp);
    int64_t avail = sched_plan_limit(s, at) - p->need, need = sched_job_need(head);
    bool elastic = false;
    for (size_t k = 0; k < n && isfinite(s->ends[3 * k]); k++) {
        const double *e = s->ends + 3 * k;
        avail += (int64_t)e[1];
        elastic |= e[2] != 0;
        if (avail >= need) {
            /* An elastic job shrunk to make room for jobs that passed ends
             * later than estimated; following it would let passing jobs
             * push the head back without end. So a date that counts on an
             * elastic job never moves later; one made of fixed jobs only
             * is recomputed each round (plain EASY). */
            if (!elastic || e[0] < head->held_shadow)
                head->held_shadow = e[0];
            p->res_shadow = head->held_shadow;
            p->res_extra = avail - need;
            return true;
        }
    }
    /* Undated: smaller jobs pass for a while, then the devices are held. */
    double after = s->opt.reservation_after;
    if (after == 0)
        after = SCHED_DEFAULT_RESERVATION_AFTER;
    p->res_shadow = after > 0 && c->now < head->head_since + after ? INFINITY : -INFINITY;
    p->res_extra = 0;
    return true;
}

/* One reservation lets `j` start now when `j` ends before it or fits in
 * what the head will not need. */
static bool passes(const sched_plan_node *p, const sched_job *j, double now)
{
    if (p->res_shadow == INFINITY)
        return true;
    if (j->expected_seconds > 0 && now + j->expected_seconds <= p->res_shadow)
        return true;
    return sched_job_need(j) <= p->res_extra;
}

/* A job that fits now may start if it delays no reservation on its way to
 * the root; returns the blocking plan, or -1 (and takes the extra devices
 * it uses). */
static int32_t reservation_in_the_way(admit_ctx *c, const sched_job *j)
{
    sched *s = c->s;
    for (int32_t p = j->plan; p >= 0; p = s->plans[p].parent)
        if (s->plans[p].res_job && !passes(&s->plans[p], j, c->now))
            return p;
    for (int32_t p = j->plan; p >= 0; p = s->plans[p].parent) {
        sched_plan_node *n = &s->plans[p];
        bool by_time = n->res_shadow == INFINITY ||
                       (j->expected_seconds > 0 && c->now + j->expected_seconds <= n->res_shadow);
        if (n->res_job && !by_time)
            n->res_extra -= sched_job_need(j);
    }
    return -1;
}

/* ---- one job ------------------------------------------------------------ */

static bool can_ever_fit(const sched *s, const sched_job *j, int32_t *plan, int32_t *limit)
{
    int32_t need = sched_job_need(j);
    if ((size_t)need > s->pool_devices) {
        *plan = -1;
        *limit = (int32_t)s->pool_devices;
        return false;
    }
    for (int32_t p = j->plan; p >= 0; p = s->plans[p].parent)
        if (s->plans[p].cap_devices > 0 && need > s->plans[p].cap_devices) {
            *plan = p;
            *limit = s->plans[p].cap_devices;
            return false;
        }
    return true;
}

static void start(sched *s, sched_job *j, double now)
{
    int64_t need = sched_job_need(j);
    for (int32_t p = j->plan; p >= 0; p = s->plans[p].parent)
        s->plans[p].need += need;
    s->plans[j->plan].own_need += need;
    if (j->group >= 0)
        s->groups[j->group].usage += need;
    j->active = true;
    j->lo = (int32_t)need;
    j->hi = j->max_devices;
    j->end_estimate = j->expected_seconds > 0 ? now + j->expected_seconds : INFINITY;
    j->head_since = NAN;
    j->held_shadow = INFINITY;
    j->wait_code = SCHED_WAIT_NONE;
}

/* Admits `j` or records why it waits. False when out of memory. */
static bool consider(admit_ctx *c, sched_job *j)
{
    sched *s = c->s;
    int32_t plan, limit;
    j->considered = true;
    if (!can_ever_fit(s, j, &plan, &limit)) {
        set_wait(j, SCHED_WAIT_TOO_LARGE, plan, limit);
        return true; /* waits for more devices, blocking nobody */
    }
    int64_t need = sched_job_need(j);
    int32_t full = -1;
    for (int32_t p = j->plan; p >= 0; p = s->plans[p].parent) {
        if (s->plans[p].blocked) { /* plain FIFO: a job above waits for this cap */
            set_wait(j, SCHED_WAIT_CAP, p, (int32_t)sched_plan_limit(s, p));
            return true;
        }
        if (full < 0 && s->plans[p].need + need > sched_plan_limit(s, p))
            full = p;
    }
    if (full >= 0) {
        if (full > 0)
            set_wait(j, SCHED_WAIT_CAP, full, (int32_t)sched_plan_limit(s, full));
        else
            set_wait(j, SCHED_WAIT_DEVICES, -1, 0);
        if (s->plans[full].res_job)
            return true;
        if (!c->backfill) { /* plain FIFO: the head blocks what is behind it */
            s->plans[full].blocked = full > 0;
            s->plans[full].res_job = j;
            c->stop = full == 0;
            return true;
        }
        return reserve(c, full, j);
    }
    int32_t in_the_way = reservation_in_the_way(c, j);
    if (in_the_way >= 0) {
        set_wait(j, SCHED_WAIT_RESERVED, -1, 0);
        j->wait_holder = s->plans[in_the_way].res_job->seq;
        return true;
    }
    start(s, j, c->now);
    return true;
}

/* Jobs that held a reservation before keep it: they are considered first,
 * the longest-waiting first, so a reservation is not lost to a plan that
 * happens to be further below its share this round. */
static int head_cmp(const void *a, const void *b)
{
    const sched_job *x = *(sched_job *const *)a, *y = *(sched_job *const *)b;
    if (x->head_since != y->head_since)
        return x->head_since < y->head_since ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static bool consider_former_heads(admit_ctx *c)
{
    sched *s = c->s;
    size_t n = 0;
    for (size_t i = 0; i < s->n_jobs; i++)
        if (s->jobs[i]->state == SCHED_JOB_QUEUED && !isnan(s->jobs[i]->head_since))
            s->plan_jobs[n++] = s->jobs[i];
    qsort(s->plan_jobs, n, sizeof *s->plan_jobs, head_cmp);
    bool ok = true;
    for (size_t k = 0; k < n && ok && !c->stop; k++)
        ok = consider(c, s->plan_jobs[k]);
    return ok;
}

/* ---- reasons ------------------------------------------------------------ */

/* Fills in the numbers of every waiting job's reason, and what the loop did
 * not reach. In a priority plan, waiting behind higher priorities is the
 * reason that matters. */
static void finish_reasons(admit_ctx *c, size_t n_groups)
{
    sched *s = c->s;
    int64_t avail = free_now(s);
    s->waiting_for_devices = 0;
    for (size_t g = 0; g < n_groups; g++) {
        const sched_queue_group *grp = &s->groups[g];
        int32_t waiting = 0, above = 0, level = 0;
        for (int32_t k = grp->first; k < grp->first + grp->count; k++) {
            sched_job *j = s->queue[k];
            if (j->active)
                continue;
            if (waiting == 0 || j->admit_priority != level) {
                above = waiting;
                level = j->admit_priority;
            }
            waiting++;
            j->wait_need = sched_job_need(j);
            j->wait_free = (int32_t)avail;
            int32_t plan, limit;
            if (j->wait_code == SCHED_WAIT_NONE && !can_ever_fit(s, j, &plan, &limit))
                set_wait(j, SCHED_WAIT_TOO_LARGE, plan, limit);
            if (j->wait_code == SCHED_WAIT_NONE) {
                for (int32_t p = j->plan; p >= 0 && j->wait_code == SCHED_WAIT_NONE;
                     p = s->plans[p].parent)
                    if (s->plans[p].blocked)
                        set_wait(j, SCHED_WAIT_CAP, p, (int32_t)sched_plan_limit(s, p));
                const sched_job *head = s->plans[0].res_job;
                if (j->wait_code == SCHED_WAIT_NONE) {
                    set_wait(j, head && j->wait_need <= avail ? SCHED_WAIT_RESERVED
                                                              : SCHED_WAIT_DEVICES,
                             -1, 0);
                    if (j->wait_code == SCHED_WAIT_RESERVED)
                        j->wait_holder = head->seq;
                }
            }
            bool in_priority_plan = s->plans[j->plan].policy == SCHED_POLICY_PRIORITY;
            if (in_priority_plan && above > 0 && j->wait_code != SCHED_WAIT_TOO_LARGE) {
                j->wait_count = above;
                set_wait(j, SCHED_WAIT_PRIORITY, j->plan, 0);
            }
            s->waiting_for_devices += j->wait_code != SCHED_WAIT_CAP &&
                                      j->wait_code != SCHED_WAIT_TOO_LARGE;
        }
    }
}

bool sched_admit(sched *s, double now)
{
    admit_ctx c = {.s = s, .now = now};
    c.fifo = s->opt.admission != SCHED_ADMIT_FAIR;
    c.backfill = s->opt.admission != SCHED_ADMIT_FIFO;
    size_t n_groups;
    if (!build_queues(&c, &n_groups))
        return false;
    for (size_t g = 0; g < n_groups; g++)
        for (int32_t k = s->groups[g].first; k < s->groups[g].first + s->groups[g].count; k++)
            s->queue[k]->group = c.fifo ? -1 : (int32_t)g;
    for (size_t p = 0; p < s->n_plans; p++)
        s->plans[p].own_need = 0;
    for (size_t i = 0; i < s->n_jobs; i++)
        if (s->jobs[i]->active)
            s->plans[s->jobs[i]->plan].own_need += s->jobs[i]->lo;
    if (!c.fifo)
        group_usage(s);

    bool ok = c.fifo || consider_former_heads(&c);
    while (ok && !c.stop && free_now(s) > 0) {
        sched_queue_group *g = c.fifo ? (n_groups && group_left(&s->groups[0])
                                             ? &s->groups[0] : NULL)
                                      : next_group(s);
        if (!g)
            break;
        sched_job *j = s->queue[g->next++];
        pending_drop(s, g->plan, 1);
        if (!j->considered)
            ok = consider(&c, j);
    }
    finish_reasons(&c, n_groups);
    /* A reservation and its date hold only while their job keeps them:
     * one that lost its reservation queues like any other job again. */
    for (size_t k = 0; k < s->n_jobs; k++) {
        sched_job *j = s->jobs[k];
        if (j->state == SCHED_JOB_QUEUED && !j->active &&
            (j->held_at < 0 || s->plans[j->held_at].res_job != j)) {
            j->held_shadow = INFINITY;
            j->held_at = -1;
            j->head_since = NAN;
        }
    }
    /* Idle devices, up to the head's need, wait for it: nobody else that
     * waits could use them without delaying it. */
    const sched_job *head = s->plans[0].res_job;
    s->reserve_head = head ? sched_job_need(head) : 0;
    return ok;
}

/*
 * sched/sched_plans.c - the tree of resource plans: validation (paths,
 * weights, minimums, caps, unknown parents, cycles), add/update/remove, bulk
 * loading in any order, and the child lists and top-down order the policy
 * walks.
 */
#include "sched/sched_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

#define PLAN_PATH_MAX 256

const sched_limit_info sched_limit_infos[SCHED_LIMITS] = {
    [SCHED_LIMIT_PROCS] = {"max_procs", "--job-max-procs", 16, (uint64_t)1 << 22, 0},
    [SCHED_LIMIT_MEMORY] = {"max_memory", "--job-max-memory", (uint64_t)16 << 20,
                            (uint64_t)1 << 50, 1},
    [SCHED_LIMIT_DISK] = {"max_disk", "--job-max-disk", (uint64_t)1 << 20, (uint64_t)1 << 50, 1},
};

int32_t sched_plan_find(const sched *s, const char *path)
{
    for (size_t i = 0; i < s->n_plans; i++)
        if (strcmp(s->plans[i].path, path) == 0)
            return (int32_t)i;
    return -1;
}

static bool path_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

static bool path_valid(const char *path)
{
    size_t len = strlen(path);
    if (len == 0 || len >= PLAN_PATH_MAX || path[0] != '/')
        return false;
    if (len == 1)
        return true;
    if (path[len - 1] == '/')
        return false;
    for (size_t i = 1; i < len; i++) {
        if (path[i] == '/') {
            if (path[i - 1] == '/')
                return false;
        } else if (!path_char_ok(path[i])) {
            return false;
        }
    }
    return true;
}

/* "/a/b" -> "/a", "/a" -> "/". `out` holds PLAN_PATH_MAX bytes. */
static void path_dirname(const char *path, char *out)
{
    const char *slash = strrchr(path, '/');
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    memcpy(out, path, n);
    out[n] = '\0';
}

/* Checks the fields that need no other plan. */
static loom_error *spec_check_fields(const sched_plan_spec *spec)
{
    if (!spec || !spec->path)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "plan: path is missing");
    const char *p = spec->path;
    if (!path_valid(p))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "plan '%s': path: expected '/' followed by '/'-separated "
                        "names of letters, digits, '.', '_' or '-' (at most %d bytes)",
                        p, PLAN_PATH_MAX - 1);
    if (!(spec->weight > 0))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "plan '%s': weight: expected a share weight > 0, got %g", p,
                        spec->weight);
    if (spec->min_devices < 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "plan '%s': min_devices: expected >= 0, got %d", p,
                        spec->min_devices);
    if (spec->cap_devices < 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "plan '%s': cap_devices: expected >= 0 (0: no cap), got %d", p,
                        spec->cap_devices);
    if (spec->cap_devices > 0 && spec->min_devices > spec->cap_devices)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "plan '%s': min_devices %d exceeds cap_devices %d", p,
                        spec->min_devices, spec->cap_devices);
    if (spec->policy != SCHED_POLICY_FAIR && spec->policy != SCHED_POLICY_PRIORITY)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "plan '%s': policy: expected fair (%d) or priority (%d), got %d",
                        p, SCHED_POLICY_FAIR, SCHED_POLICY_PRIORITY, spec->policy);
    for (int i = 0; i < SCHED_LIMITS; i++) {
        const sched_limit_info *l = &sched_limit_infos[i];
        uint64_t v = spec->job_limits[i];
        if (v && (v < l->min || v > l->max))
            return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                            "plan '%s': %s: expected 0 (the host's %s) or a whole number%s "
                            "from %llu to %llu, got %llu",
                            p, l->field, l->serve_flag, l->bytes ? " of bytes" : "",
                            (unsigned long long)l->min, (unsigned long long)l->max,
                            (unsigned long long)v);
    }
    if (spec->parent && strcmp(p, "/") == 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "plan '/': parent: the root plan has no parent");
    if (spec->parent && !path_valid(spec->parent))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "plan '%s': parent: '%s' is not a plan path", p, spec->parent);
    return NULL;
}

/* The parent path a spec names: explicit, else derived from the path. */
static const char *spec_parent(const sched_plan_spec *spec, char *buf)
{
    if (spec->parent)
        return spec->parent;
    path_dirname(spec->path, buf);
    return buf;
}

bool sched_plans_reindex(sched *s)
{
    size_t n = s->n_plans;
    int32_t *child = malloc(n * sizeof *child);
    int32_t *topo = malloc(n * sizeof *topo);
    if (!child || !topo) {
        free(child);
        free(topo);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        s->plans[i].child_count = 0;
    for (size_t i = 1; i < n; i++)
        s->plans[s->plans[i].parent].child_count++;
    int32_t at = 0;
    for (size_t i = 0; i < n; i++) {
        s->plans[i].first_child = at;
        at += s->plans[i].child_count;
        s->plans[i].child_count = 0;
    }
    for (size_t i = 1; i < n; i++) {
        sched_plan_node *parent = &s->plans[s->plans[i].parent];
        child[parent->first_child + parent->child_count++] = (int32_t)i;
    }
    /* Breadth first from the root: parents before children. */
    size_t head = 0, tail = 0;
    topo[tail++] = 0;
    s->plans[0].depth = 0;
    while (head < tail) {
        sched_plan_node *p = &s->plans[topo[head++]];
        for (int32_t k = 0; k < p->child_count; k++) {
            int32_t c = child[p->first_child + k];
            s->plans[c].depth = p->depth + 1;
            topo[tail++] = c;
        }
    }
    free(s->child_index);
    free(s->topo);
    s->child_index = child;
    s->topo = topo;
    return true;
}

static loom_error *plan_insert(sched *s, const sched_plan_spec *spec, int32_t parent)
{
    if (s->n_plans == s->plans_cap) {
        size_t cap = s->plans_cap ? s->plans_cap * 2 : 8;
        sched_plan_node *p = realloc(s->plans, cap * sizeof *p);
        if (!p)
            return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "plan '%s': out of memory",
                            spec->path);
        s->plans = p;
        s->plans_cap = cap;
    }
    sched_plan_node *node = &s->plans[s->n_plans];
    *node = (sched_plan_node){0};
    node->path = strdup(spec->path);
    if (!node->path)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "plan '%s': out of memory",
                        spec->path);
    node->parent = parent;
    node->weight = spec->weight;
    node->min_devices = spec->min_devices;
    node->cap_devices = spec->cap_devices;
    node->policy = spec->policy;
    memcpy(node->job_limits, spec->job_limits, sizeof node->job_limits);
    s->n_plans++;
    return NULL;
}

bool sched_plans_init(sched *s)
{
    sched_plan_spec root = {.path = "/", .weight = 1, .policy = SCHED_POLICY_FAIR};
    loom_error *err = plan_insert(s, &root, -1);
    if (err) {
        loom_err_free(err);
        return false;
    }
    return sched_plans_reindex(s);
}

void sched_plans_free(sched *s)
{
    for (size_t i = 0; i < s->n_plans; i++)
        free(s->plans[i].path);
    free(s->plans);
    free(s->child_index);
    free(s->topo);
}

loom_error *sched_add_plan(sched *s, const sched_plan_spec *spec)
{
    loom_error *err = spec_check_fields(spec);
    if (err)
        return err;
    if (sched_plan_find(s, spec->path) >= 0)
        return loom_err(LOOM_ERR_ALREADY_EXISTS, "plan '%s' already exists", spec->path);
    char buf[PLAN_PATH_MAX];
    const char *parent_path = spec_parent(spec, buf);
    if (strcmp(parent_path, spec->path) == 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "plan '%s': parent: a plan cannot be its own parent (cycle)",
                        spec->path);
    int32_t parent = sched_plan_find(s, parent_path);
    if (parent < 0)
        return loom_err(LOOM_ERR_NOT_FOUND,
                        "plan '%s': parent: plan '%s' does not exist (add it first)",
                        spec->path, parent_path);
    err = plan_insert(s, spec, parent);
    if (err)
        return err;
    if (!sched_plans_reindex(s)) {
        free(s->plans[--s->n_plans].path);
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "plan '%s': out of memory",
                        spec->path);
    }
    return NULL;
}

/* Devices the running jobs in the subtree of `plan` need at their minimum. */
static int64_t running_need_below(const sched *s, int32_t plan)
{
    int64_t need = 0;
    for (size_t i = 0; i < s->n_jobs; i++) {
        const sched_job *j = s->jobs[i];
        if (j->state != SCHED_JOB_RUNNING)
            continue;
        for (int32_t p = j->plan; p >= 0; p = s->plans[p].parent)
            if (p == plan) {
                need += sched_job_need(j);
                break;
            }
    }
    return need;
}

loom_error *sched_update_plan(sched *s, const sched_plan_spec *spec)
{
    loom_error *err = spec_check_fields(spec);
    if (err)
        return err;
    int32_t idx = sched_plan_find(s, spec->path);
    if (idx < 0)
        return loom_err(LOOM_ERR_NOT_FOUND, "plan '%s' does not exist", spec->path);
    int32_t parent = s->plans[idx].parent;
    if (spec->parent) {
        parent = sched_plan_find(s, spec->parent);
        if (parent < 0)
            return loom_err(LOOM_ERR_NOT_FOUND,
                            "plan '%s': parent: plan '%s' does not exist",
                            spec->path, spec->parent);
        for (int32_t p = parent; p >= 0; p = s->plans[p].parent)
            if (p == idx)
                return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                                "plan '%s': parent: '%s' is inside '%s', so it "
                                "would make a cycle",
                                spec->path, spec->parent, spec->path);
    }
    if (spec->cap_devices > 0) {
        int64_t need = running_need_below(s, idx);
        if (need > spec->cap_devices)
            return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                            "plan '%s': cap_devices %d is below the %lld devices its "
                            "running jobs need at their minimum; end jobs first",
                            spec->path, spec->cap_devices, (long long)need);
    }
    sched_plan_node *node = &s->plans[idx];
    int32_t old_parent = node->parent;
    node->parent = parent;
    node->weight = spec->weight;
    node->min_devices = spec->min_devices;
    node->cap_devices = spec->cap_devices;
    node->policy = spec->policy;
    memcpy(node->job_limits, spec->job_limits, sizeof node->job_limits);
    if (old_parent != parent && !sched_plans_reindex(s)) {
        node->parent = old_parent;
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "plan '%s': out of memory",
                        spec->path);
    }
    return NULL;
}

loom_error *sched_remove_plan(sched *s, const char *path)
{
    int32_t idx = path ? sched_plan_find(s, path) : -1;
    if (idx < 0)
        return loom_err(LOOM_ERR_NOT_FOUND, "plan '%s' does not exist",
                        path ? path : "(null)");
    if (idx == 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "plan '/': the root cannot be removed");
    if (s->plans[idx].child_count > 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "plan '%s' still has %d child plan(s); remove them first", path,
                        s->plans[idx].child_count);
    size_t jobs = 0;
    for (size_t i = 0; i < s->n_jobs; i++)
        jobs += s->jobs[i]->plan == idx;
    if (jobs > 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "plan '%s' still has %zu unfinished job(s)", path, jobs);

    free(s->plans[idx].path);
    memmove(&s->plans[idx], &s->plans[idx + 1],
            (s->n_plans - (size_t)idx - 1) * sizeof *s->plans);
    s->n_plans--;
    for (size_t i = 0; i < s->n_plans; i++)
        if (s->plans[i].parent > idx)
            s->plans[i].parent--;
    for (size_t i = 0; i < s->n_jobs; i++)
        if (s->jobs[i]->plan > idx)
            s->jobs[i]->plan--;
    if (!sched_plans_reindex(s))
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED,
                        "plan '%s': removed, but out of memory rebuilding the tree", path);
    return NULL;
}

/* Bulk loading: each spec's parent is an existing plan (ref = -(index+2)),
 * another spec (ref = its position) or unknown. */
static int64_t load_parent_ref(const sched *s, const sched_plan_spec *specs, size_t n,
                               size_t i)
{
    char buf[PLAN_PATH_MAX];
    const char *parent = spec_parent(&specs[i], buf);
    for (size_t k = 0; k < n; k++)
        if (strcmp(specs[k].path, parent) == 0)
            return (int64_t)k;
    int32_t existing = sched_plan_find(s, parent);
    return existing >= 0 ? -(int64_t)existing - 2 : -1;
}

/* Describes the cycle that `start` leads into as "a -> b -> a". */
static loom_error *cycle_error(const sched_plan_spec *specs, const int64_t *ref,
                               size_t n, size_t start)
{
    /* n steps from anywhere on the walk land on the cycle; print it from
     * its first-listed plan so the message does not depend on the walk. */
    size_t on_cycle = start;
    for (size_t k = 0; k < n; k++)
        on_cycle = (size_t)ref[on_cycle];
    size_t entry = on_cycle;
    for (size_t at = (size_t)ref[entry]; at != entry; at = (size_t)ref[at])
        if (at < on_cycle)
            on_cycle = at;
    char text[1024];
    size_t len = 0;
    size_t at = on_cycle;
    do {
        int w = snprintf(text + len, sizeof text - len, "'%s' -> ", specs[at].path);
        if (w < 0 || (size_t)w >= sizeof text - len)
            break;
        len += (size_t)w;
        at = (size_t)ref[at];
    } while (at != on_cycle);
    snprintf(text + len, sizeof text - len, "'%s'", specs[on_cycle].path);
    return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                    "plan '%s': parent: the plans form a cycle: %s (child -> parent)",
                    specs[on_cycle].path, text);
}

loom_error *sched_load_plans(sched *s, const sched_plan_spec *specs, size_t n)
{
    if (n == 0)
        return NULL;
    int64_t *ref = malloc(n * sizeof *ref);
    size_t *depth = malloc(n * sizeof *depth);
    loom_error *err = NULL;
    if (!ref || !depth) {
        err = loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "plans: out of memory");
        goto out;
    }
    for (size_t i = 0; i < n && !err; i++) {
        err = spec_check_fields(&specs[i]);
        if (err)
            break;
        if (sched_plan_find(s, specs[i].path) >= 0) {
            err = loom_err(LOOM_ERR_ALREADY_EXISTS, "plan '%s' already exists",
                           specs[i].path);
            break;
        }
        for (size_t k = 0; k < i; k++)
            if (strcmp(specs[k].path, specs[i].path) == 0) {
                err = loom_err(LOOM_ERR_ALREADY_EXISTS,
                               "plan '%s' is listed twice (entries %zu and %zu)",
                               specs[i].path, k, i);
                break;
            }
        if (err)
            break;
        ref[i] = load_parent_ref(s, specs, n, i);
        if (ref[i] == -1) {
            char buf[PLAN_PATH_MAX];
            err = loom_err(LOOM_ERR_NOT_FOUND,
                           "plan '%s': parent: plan '%s' is neither known nor listed",
                           specs[i].path, spec_parent(&specs[i], buf));
        }
    }
    if (err)
        goto out;
    /* Depth = steps to a plan that already exists; more than n steps means
     * the walk went round a cycle. */
    for (size_t i = 0; i < n; i++) {
        size_t steps = 0;
        for (int64_t at = (int64_t)i; at >= 0; at = ref[at])
            if (++steps > n) {
                err = cycle_error(specs, ref, n, i);
                goto out;
            }
        depth[i] = steps;
    }
    /* Parents before children: insert by depth. */
    size_t first_new = s->n_plans;
    for (size_t d = 1; d <= n && !err; d++)
        for (size_t i = 0; i < n && !err; i++) {
            if (depth[i] != d)
                continue;
            int32_t parent = ref[i] >= 0 ? sched_plan_find(s, specs[ref[i]].path)
                                         : (int32_t)(-ref[i] - 2);
            err = plan_insert(s, &specs[i], parent);
        }
    if (!err && !sched_plans_reindex(s))
        err = loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "plans: out of memory");
    if (err) {
        while (s->n_plans > first_new)
            free(s->plans[--s->n_plans].path);
        sched_plans_reindex(s);
    }
out:
    free(ref);
    free(depth);
    return err;
}

bool sched_get_plan(const sched *s, const char *path, sched_plan_spec *out)
{
    int32_t idx = path ? sched_plan_find(s, path) : -1;
    if (idx < 0)
        return false;
    const sched_plan_node *p = &s->plans[idx];
    *out = (sched_plan_spec){
        .path = p->path,
        .parent = p->parent >= 0 ? s->plans[p->parent].path : NULL,
        .weight = p->weight,
        .min_devices = p->min_devices,
        .cap_devices = p->cap_devices,
        .policy = p->policy,
    };
    memcpy(out->job_limits, p->job_limits, sizeof out->job_limits);
    return true;
}

bool sched_plan_usage(const sched *s, const char *path, int32_t *held, int32_t *given)
{
    int32_t idx = path ? sched_plan_find(s, path) : -1;
    if (idx < 0)
        return false;
    *held = 0;
    *given = s->plans[idx].alloc;
    for (size_t i = 0; i < s->n_jobs; i++) {
        int32_t p = s->jobs[i]->plan;
        while (p >= 0 && p != idx)
            p = s->plans[p].parent;
        if (p == idx)
            *held += s->jobs[i]->count;
    }
    return true;
}

void sched_plan_limits(const sched *s, const char *path, const uint64_t host[SCHED_LIMITS],
                       uint64_t value[SCHED_LIMITS], const char *from[SCHED_LIMITS])
{
    for (int i = 0; i < SCHED_LIMITS; i++) {
        value[i] = host[i];
        from[i] = NULL;
    }
    /* The plan itself, else its nearest ancestor path that is a plan
     * (a user's own plan may be gone); the root when none is. */
    char at[PLAN_PATH_MAX];
    snprintf(at, sizeof at, "%s", path && path[0] == '/' ? path : "/");
    int32_t idx = sched_plan_find(s, at);
    while (idx < 0 && strcmp(at, "/") != 0) {
        char up[PLAN_PATH_MAX];
        path_dirname(at, up);
        memcpy(at, up, sizeof at);
        idx = sched_plan_find(s, at);
    }
    int unset = SCHED_LIMITS;
    for (int32_t p = idx; p >= 0 && unset > 0; p = s->plans[p].parent)
        for (int i = 0; i < SCHED_LIMITS; i++)
            if (!from[i] && s->plans[p].job_limits[i]) {
                value[i] = s->plans[p].job_limits[i];
                from[i] = s->plans[p].path;
                unset--;
            }
}

/*
 * sched/sim_trace.c - reads a simulator trace (format in sim.h) with cJSON
 * and checks it up front, so a malformed trace fails with the entry and
 * field named instead of a simulation that hangs or lies.
 */
#include "sched/sim.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

#define TRACE_MAX_BYTES (256u << 20)

/* A number field: missing -> `fallback` when optional; must lie in
 * [min, max]; `integer` refuses fractions. */
static loom_error *get_number(const cJSON *obj, const char *field, bool required,
                              double fallback, double min, double max, bool integer,
                              const char *where, double *out)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!item) {
        if (required)
            return loom_err(LOOM_ERR_INVALID_ARGUMENT, "%s.%s: missing (expected a number)",
                            where, field);
        *out = fallback;
        return NULL;
    }
    double v = cJSON_IsNumber(item) ? item->valuedouble : NAN;
    if (!cJSON_IsNumber(item) || !isfinite(v) || v < min || v > max ||
        (integer && v != floor(v))) {
        /* Integer bounds are printed whole: 2147483647, not 2.14748e+09. */
        const char *fmt_open = integer ? "%s.%s: expected an integer >= %.0f"
                                       : "%s.%s: expected a number >= %g";
        const char *fmt_range = integer ? "%s.%s: expected an integer in %.0f..%.0f"
                                        : "%s.%s: expected a number in %g..%g";
        if (max >= 1e300)
            return loom_err(LOOM_ERR_INVALID_ARGUMENT, fmt_open, where, field, min);
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, fmt_range, where, field, min, max);
    }
    *out = v;
    return NULL;
}

/* Refuses a key outside `allowed` (NULL-terminated), naming it, so a typo
 * ("max_device") is not silently a default. */
static loom_error *check_keys(const cJSON *obj, const char *const *allowed,
                              const char *where)
{
    for (const cJSON *item = obj->child; item; item = item->next) {
        bool known = false;
        for (size_t k = 0; allowed[k] && !known; k++)
            known = item->string && strcmp(item->string, allowed[k]) == 0;
        if (known)
            continue;
        char list[256] = "";
        for (size_t k = 0, at = 0; allowed[k] && at < sizeof list; k++)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", k ? ", " : "",
                                   allowed[k]);
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s: unknown key '%s' (expected one of: %s)", where,
                        item->string ? item->string : "", list);
    }
    return NULL;
}

static loom_error *get_string(const cJSON *obj, const char *field, const char *where,
                              char **out)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, field);
    *out = NULL;
    if (!item)
        return NULL;
    if (!cJSON_IsString(item) || !item->valuestring[0])
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "%s.%s: expected a non-empty string",
                        where, field);
    *out = strdup(item->valuestring);
    return *out ? NULL : loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory", where);
}

static loom_error *parse_speedup_table(const cJSON *arr, const char *where, sim_job *job)
{
    int n = cJSON_GetArraySize(arr);
    if (n < 1)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s.scaling: expected a non-empty speedup table", where);
    job->speedup = calloc((size_t)n, sizeof *job->speedup);
    if (!job->speedup)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory", where);
    job->n_speedup = (size_t)n;
    for (int i = 0; i < n; i++) {
        const cJSON *v = cJSON_GetArrayItem(arr, i);
        if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || !isfinite(v->valuedouble))
            return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                            "%s.scaling[%d]: expected a speedup > 0", where, i);
        job->speedup[i] = v->valuedouble;
    }
    job->scaling = SIM_SCALING_TABLE;
    return NULL;
}

static loom_error *parse_scaling(const cJSON *obj, const char *where, sim_job *job)
{
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(obj, "scaling");
    job->scaling = SIM_SCALING_LINEAR;
    if (!sc || (cJSON_IsString(sc) && strcmp(sc->valuestring, "linear") == 0))
        return NULL;
    if (cJSON_IsArray(sc))
        return parse_speedup_table(sc, where, job);
    const cJSON *type = cJSON_IsObject(sc) ? cJSON_GetObjectItemCaseSensitive(sc, "type")
                                           : NULL;
    if (!cJSON_IsString(type))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s.scaling: expected \"linear\", {\"type\": \"amdahl\", "
                        "\"serial_fraction\": f}, {\"type\": \"table\", \"speedup\": "
                        "[...]} or an array of speedups", where);
    char sub[160];
    snprintf(sub, sizeof sub, "%s.scaling", where);
    static const char *const keys[] = {"type", "serial_fraction", "speedup", NULL};
    loom_error *err = check_keys(sc, keys, sub);
    if (err)
        return err;
    if (strcmp(type->valuestring, "linear") == 0)
        return NULL;
    if (strcmp(type->valuestring, "amdahl") == 0) {
        job->scaling = SIM_SCALING_AMDAHL;
        return get_number(sc, "serial_fraction", true, 0, 0, 1, false, sub,
                          &job->serial_fraction);
    }
    if (strcmp(type->valuestring, "table") == 0) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(sc, "speedup");
        if (!cJSON_IsArray(arr))
            return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                            "%s.speedup: expected an array of speedups", sub);
        return parse_speedup_table(arr, where, job);
    }
    return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                    "%s.type: expected linear, amdahl or table, got '%s'", sub,
                    type->valuestring);
}

static loom_error *parse_job(const cJSON *obj, size_t index, int32_t devices,
                             sim_job *job)
{
    char where[64];
    snprintf(where, sizeof where, "jobs[%zu]", index);
    if (!cJSON_IsObject(obj))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "%s: expected an object", where);
    static const char *const keys[] = {"id", "arrival", "max_devices", "min_devices",
                                       "work", "scaling", "priority", "plan",
                                       "elastic", "user", NULL};
    loom_error *err = check_keys(obj, keys, where);
    if (!err)
        err = get_string(obj, "id", where, &job->id);
    if (!err && !job->id) {
        char id[32];
        snprintf(id, sizeof id, "job-%zu", index);
        if (!(job->id = strdup(id)))
            err = loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "%s: out of memory", where);
    }
    double v;
    if (!err)
        err = get_number(obj, "arrival", true, 0, 0, 1e300, false, where, &job->arrival);
    if (!err)
        err = get_number(obj, "work", true, 0, 1e-9, 1e300, false, where, &job->work);
    if (!err && !(err = get_number(obj, "max_devices", true, 0, 1, INT32_MAX, true,
                                   where, &v)))
        job->max_devices = (int32_t)v;
    if (!err && !(err = get_number(obj, "min_devices", false, 1, 1, job->max_devices,
                                   true, where, &v)))
        job->min_devices = (int32_t)v;
    if (!err && !(err = get_number(obj, "priority", false, 0, INT32_MIN, INT32_MAX, true,
                                   where, &v)))
        job->priority = (int32_t)v;
    if (!err)
        err = get_string(obj, "plan", where, &job->plan);
    if (!err)
        err = get_string(obj, "user", where, &job->user);
    job->elastic = true;
    const cJSON *el = cJSON_GetObjectItemCaseSensitive(obj, "elastic");
    if (!err && el) {
        if (!cJSON_IsBool(el))
            err = loom_err(LOOM_ERR_INVALID_ARGUMENT, "%s.elastic: expected true or false",
                           where);
        job->elastic = cJSON_IsTrue(el);
    }
    if (!err)
        err = parse_scaling(obj, where, job);
    if (err)
        return err;
    /* What can never run is refused here rather than left waiting forever. */
    if (job->elastic && job->min_devices > devices)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s.min_devices: %d exceeds the trace's %d devices", where,
                        job->min_devices, devices);
    if (!job->elastic && job->max_devices > devices)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s.max_devices: fixed job needs %d devices, the trace has %d",
                        where, job->max_devices, devices);
    return NULL;
}

static loom_error *parse_plan(const cJSON *obj, size_t index, sched_plan_spec *plan)
{
    char where[64];
    snprintf(where, sizeof where, "plans[%zu]", index);
    if (!cJSON_IsObject(obj))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "%s: expected an object", where);
    char *path = NULL, *parent = NULL;
    static const char *const keys[] = {"path", "parent", "weight", "min_devices",
                                       "cap_devices", "policy", NULL};
    loom_error *err = check_keys(obj, keys, where);
    if (err)
        return err;
    err = get_string(obj, "path", where, &path);
    plan->path = path;
    if (!err && !path)
        err = loom_err(LOOM_ERR_INVALID_ARGUMENT, "%s.path: missing", where);
    if (!err)
        err = get_string(obj, "parent", where, &parent);
    plan->parent = parent;
    double v;
    if (!err)
        err = get_number(obj, "weight", false, 1, -1e300, 1e300, false, where,
                         &plan->weight);
    if (!err && !(err = get_number(obj, "min_devices", false, 0, -1e9, INT32_MAX, true,
                                   where, &v)))
        plan->min_devices = (int32_t)v;
    if (!err && !(err = get_number(obj, "cap_devices", false, 0, -1e9, INT32_MAX, true,
                                   where, &v)))
        plan->cap_devices = (int32_t)v;
    const cJSON *pol = cJSON_GetObjectItemCaseSensitive(obj, "policy");
    plan->policy = SCHED_POLICY_FAIR;
    if (!err && pol) {
        if (cJSON_IsString(pol) && strcmp(pol->valuestring, "priority") == 0)
            plan->policy = SCHED_POLICY_PRIORITY;
        else if (!cJSON_IsString(pol) || strcmp(pol->valuestring, "fair") != 0)
            err = loom_err(LOOM_ERR_INVALID_ARGUMENT,
                           "%s.policy: expected \"fair\" or \"priority\"", where);
    }
    return err;
}

void sim_trace_free(sim_trace *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_jobs; i++) {
        free(t->jobs[i].id);
        free(t->jobs[i].plan);
        free(t->jobs[i].user);
        free(t->jobs[i].speedup);
    }
    for (size_t i = 0; i < t->n_plans; i++) {
        free((char *)t->plans[i].path);
        free((char *)t->plans[i].parent);
    }
    free(t->jobs);
    free(t->plans);
    free(t);
}

static loom_error *parse_root(const cJSON *root, sim_trace *t)
{
    if (!cJSON_IsObject(root))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "expected a JSON object at the top");
    static const char *const keys[] = {"devices", "hysteresis", "resize_cost", "plans",
                                       "jobs", NULL};
    loom_error *err = check_keys(root, keys, "trace");
    if (err)
        return err;
    double v;
    err = get_number(root, "devices", true, 0, 1, 1 << 20, true, "trace", &v);
    if (err)
        return err;
    t->devices = (int32_t)v;
    if ((err = get_number(root, "hysteresis", false, 0, 0, 1e300, false, "trace",
                          &t->hysteresis)) ||
        (err = get_number(root, "resize_cost", false, 0, 0, 1e300, false, "trace",
                          &t->resize_cost)))
        return err;

    const cJSON *plans = cJSON_GetObjectItemCaseSensitive(root, "plans");
    if (plans && !cJSON_IsArray(plans))
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "plans: expected an array");
    size_t np = plans ? (size_t)cJSON_GetArraySize(plans) : 0;
    if (np && !(t->plans = calloc(np, sizeof *t->plans)))
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    for (size_t i = 0; i < np; i++) {
        t->n_plans++;
        if ((err = parse_plan(cJSON_GetArrayItem(plans, (int)i), i, &t->plans[i])))
            return err;
    }

    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    if (!cJSON_IsArray(jobs) || cJSON_GetArraySize(jobs) == 0)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "jobs: expected a non-empty array");
    size_t nj = (size_t)cJSON_GetArraySize(jobs);
    if (!(t->jobs = calloc(nj, sizeof *t->jobs)))
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    size_t i = 0;
    for (const cJSON *j = jobs->child; j; j = j->next, i++) {
        t->n_jobs++;
        if ((err = parse_job(j, i, t->devices, &t->jobs[i])))
            return err;
        for (size_t k = 0; k < i; k++)
            if (strcmp(t->jobs[k].id, t->jobs[i].id) == 0)
                return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                                "jobs[%zu].id: '%s' is already used by jobs[%zu]", i,
                                t->jobs[i].id, k);
    }
    return NULL;
}

/* Plans are checked by the scheduler itself (cycles, unknown parents,
 * shares), and each job's plan and size against them, so sim_run cannot
 * fail half way through a trace. */
static loom_error *check_against_scheduler(const sim_trace *t)
{
    sched *s = sched_create(NULL);
    if (!s)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    for (int32_t d = 0; d < t->devices; d++)
        sched_add_device(s, LOOM_DEVICE_CPU, d, NULL);
    loom_error *err = sched_load_plans(s, t->plans, t->n_plans);
    if (err)
        err = loom_err_wrap(err, "plans");
    for (size_t i = 0; !err && i < t->n_jobs; i++) {
        const sim_job *j = &t->jobs[i];
        sched_job_spec spec = {.id = j->id, .plan = j->plan, .elastic = j->elastic,
                               .min_devices = j->min_devices,
                               .max_devices = j->max_devices, .priority = j->priority};
        if ((err = sched_submit(s, &spec, j->arrival)))
            err = loom_err_wrap(err, "jobs[%zu]", i);
    }
    sched_free(s);
    return err;
}

loom_error *sim_trace_parse(const char *json, const char *name, sim_trace **out)
{
    *out = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, false);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long offset = at && at >= json ? (long)(at - json) : -1;
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "%s: not valid JSON (near byte %ld)",
                        name, offset);
    }
    while (end && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
        end++;
    if (end && *end) {
        long offset = (long)(end - json);
        cJSON_Delete(root);
        return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                        "%s: unexpected text after the trace at byte %ld", name, offset);
    }
    sim_trace *t = calloc(1, sizeof *t);
    loom_error *err = t ? parse_root(root, t)
                        : loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    cJSON_Delete(root);
    if (!err)
        err = check_against_scheduler(t);
    if (err) {
        sim_trace_free(t);
        return loom_err_wrap(err, "%s", name);
    }
    *out = t;
    return NULL;
}

loom_error *sim_trace_load(const char *path, sim_trace **out)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return loom_err(LOOM_ERR_NOT_FOUND, "%s: cannot open: %s", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 + 1 > cap) {
            cap = cap ? cap * 2 : 131072;
            char *p = cap <= TRACE_MAX_BYTES ? realloc(buf, cap) : NULL;
            if (!p) {
                free(buf);
                fclose(f);
                return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED,
                                "%s: too large (limit %u MiB) or out of memory", path,
                                TRACE_MAX_BYTES >> 20);
            }
            buf = p;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0)
            break;
    }
    bool failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return loom_err(LOOM_ERR_UNAVAILABLE, "%s: read error", path);
    }
    buf[len] = '\0';
    loom_error *err = sim_trace_parse(buf, path, out);
    free(buf);
    return err;
}

double sim_speedup(const sim_job *job, int32_t n)
{
    if (n <= 0)
        return 0;
    switch (job->scaling) {
    case SIM_SCALING_AMDAHL:
        return 1.0 / (job->serial_fraction + (1.0 - job->serial_fraction) / n);
    case SIM_SCALING_TABLE:
        return job->speedup[(size_t)n <= job->n_speedup ? (size_t)n - 1
                                                         : job->n_speedup - 1];
    default:
        return (double)n;
    }
}

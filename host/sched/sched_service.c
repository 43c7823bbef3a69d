/* sched/sched_service.c - see sched_service.h. */
#include "sched/sched_service.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

struct sched_service {
    pthread_mutex_t lock;
    sched *core;
    store *st;
};

static double now_s(void) { return (double)time_mono_ms() / 1000.0; }

static int status_of(loom_error *e)
{
    switch (loom_err_code(e)) {
    case LOOM_ERR_NOT_FOUND: return 404;
    case LOOM_ERR_ALREADY_EXISTS: return 409;
    case LOOM_ERR_RESOURCE_EXHAUSTED: return 409;
    case LOOM_ERR_INVALID_ARGUMENT: return 400;
    default: return 500;
    }
}

/* Moves a loom_error into err and returns its HTTP status. */
static int take_error(loom_error *e, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s", loom_err_message(e));
    int status = status_of(e);
    loom_err_free(e);
    return status;
}

typedef struct plan_list {
    sched_plan_spec *specs;
    char (*paths)[256];
    size_t n, cap;
} plan_list;

static int policy_parse(const char *text, int32_t *out)
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
    policy_parse(p->policy, &policy);
    l->specs[l->n] = (sched_plan_spec){.weight = p->weight, .min_devices = p->min_devices,
                                       .cap_devices = p->cap_devices, .policy = policy};
    l->n++;
}

sched_service *sched_service_create(store *st, const sched_service_options *opt, char *err,
                                    size_t errlen)
{
    sched_service *ss = calloc(1, sizeof *ss);
    sched_options so = {.hysteresis = opt ? opt->hysteresis : 0};
    if (!ss || !(ss->core = sched_create(&so))) {
        snprintf(err, errlen, "out of memory");
        free(ss);
        return NULL;
    }
    pthread_mutex_init(&ss->lock, NULL);
    ss->st = st;
    int32_t added = sched_add_local_devices(ss->core, opt ? opt->cpu_slots : 0, true);
    log_info("scheduler: %d device(s) (%s)", added,
             sched_cuda_device_count() > 0 ? "CUDA" : "CPU slots");
    plan_list l = {0};
    store_plan_each(st, collect_plan, &l);
    for (size_t i = 0; i < l.n; i++)
        l.specs[i].path = l.paths[i];
    /* The root's settings are an update, not a plan of its own. */
    size_t k = 0;
    for (size_t i = 0; i < l.n; i++) {
        if (!strcmp(l.paths[i], "/")) {
            loom_error *e = sched_update_plan(ss->core, &l.specs[i]);
            if (e) {
                log_warn("stored plan \"/\" not applied: %s", loom_err_message(e));
                loom_err_free(e);
            }
            continue;
        }
        l.specs[k] = l.specs[i];
        l.specs[k].path = l.paths[i];
        k++;
    }
    loom_error *e = k ? sched_load_plans(ss->core, l.specs, k) : NULL;
    free(l.specs);
    free(l.paths);
    if (e) {
        snprintf(err, errlen, "stored resource plans: %s", loom_err_message(e));
        loom_err_free(e);
        sched_service_destroy(ss);
        return NULL;
    }
    return ss;
}

void sched_service_destroy(sched_service *ss)
{
    if (!ss)
        return;
    sched_free(ss->core);
    pthread_mutex_destroy(&ss->lock);
    free(ss);
}

static cJSON *plan_json(const sched_plan_spec *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", p->path);
    cJSON_AddNumberToObject(o, "share", p->weight);
    cJSON_AddNumberToObject(o, "min", p->min_devices);
    cJSON_AddNumberToObject(o, "cap", p->cap_devices);
    cJSON_AddStringToObject(o, "policy", p->policy == SCHED_POLICY_PRIORITY ? "priority" : "fair");
    return o;
}

int sched_service_plan_put(sched_service *ss, const cJSON *body, int create, char *err,
                           size_t errlen)
{
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(body, "path");
    if (!cJSON_IsString(path)) {
        snprintf(err, errlen, "path: expected a plan path such as \"/project/training\"");
        return 400;
    }
    pthread_mutex_lock(&ss->lock);
    sched_plan_spec cur;
    int exists = sched_get_plan(ss->core, path->valuestring, &cur);
    sched_plan_spec spec = {.path = path->valuestring, .weight = 1, .policy = SCHED_POLICY_FAIR};
    char path_copy[256];
    snprintf(path_copy, sizeof path_copy, "%s", path->valuestring);
    spec.path = path_copy;
    if (exists) {
        spec.weight = cur.weight;
        spec.min_devices = cur.min_devices;
        spec.cap_devices = cur.cap_devices;
        spec.policy = cur.policy;
    }
    int status = 0;
    if (create && exists) {
        snprintf(err, errlen, "plan \"%s\" already exists (use update)", spec.path);
        status = 409;
    } else if (!create && !exists) {
        snprintf(err, errlen, "no plan \"%s\"", spec.path);
        status = 404;
    }
    const struct {
        const char *key;
        int is_int;
        void *dst;
    } fields[] = {{"share", 0, &spec.weight}, {"min", 1, &spec.min_devices}, {"cap", 1, &spec.cap_devices}};
    for (size_t i = 0; !status && i < sizeof fields / sizeof *fields; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, fields[i].key);
        if (!v)
            continue;
        if (!cJSON_IsNumber(v) || (fields[i].is_int && v->valuedouble != floor(v->valuedouble))) {
            snprintf(err, errlen, "plan \"%s\": %s: expected a %s", spec.path, fields[i].key,
                     fields[i].is_int ? "whole number" : "number");
            status = 400;
        } else if (fields[i].is_int) {
            *(int32_t *)fields[i].dst = (int32_t)v->valuedouble;
        } else {
            *(double *)fields[i].dst = v->valuedouble;
        }
    }
    const cJSON *pol = cJSON_GetObjectItemCaseSensitive(body, "policy");
    if (!status && pol && (!cJSON_IsString(pol) || policy_parse(pol->valuestring, &spec.policy))) {
        snprintf(err, errlen, "plan \"%s\": policy: expected \"fair\" or \"priority\"", spec.path);
        status = 400;
    }
    loom_error *e = NULL;
    if (!status)
        e = create ? sched_add_plan(ss->core, &spec) : sched_update_plan(ss->core, &spec);
    if (e)
        status = take_error(e, err, errlen);
    if (!status) {
        store_plan rec = {.weight = spec.weight, .min_devices = spec.min_devices,
                          .cap_devices = spec.cap_devices};
        snprintf(rec.path, sizeof rec.path, "%s", spec.path);
        snprintf(rec.policy, sizeof rec.policy, "%s",
                 spec.policy == SCHED_POLICY_PRIORITY ? "priority" : "fair");
        if (store_plan_put(ss->st, &rec) != 0) {
            snprintf(err, errlen, "cannot record plan \"%s\"", spec.path);
            status = 500;
        }
    }
    pthread_mutex_unlock(&ss->lock);
    return status;
}

int sched_service_plan_remove(sched_service *ss, const char *path, char *err, size_t errlen)
{
    pthread_mutex_lock(&ss->lock);
    loom_error *e = sched_remove_plan(ss->core, path);
    int status = e ? take_error(e, err, errlen) : 0;
    if (!status)
        store_plan_remove(ss->st, path);
    pthread_mutex_unlock(&ss->lock);
    return status;
}

static void add_plan_item(const store_plan *p, void *ctx)
{
    cJSON_AddItemToArray(ctx, cJSON_CreateString(p->path));
}

cJSON *sched_service_plans(sched_service *ss)
{
    cJSON *paths = cJSON_CreateArray();
    cJSON *out = cJSON_CreateArray();
    pthread_mutex_lock(&ss->lock);
    sched_plan_spec root;
    if (sched_get_plan(ss->core, "/", &root))
        cJSON_AddItemToArray(out, plan_json(&root));
    store_plan_each(ss->st, add_plan_item, paths);
    const cJSON *p;
    cJSON_ArrayForEach(p, paths) {
        sched_plan_spec spec;
        if (strcmp(p->valuestring, "/") && sched_get_plan(ss->core, p->valuestring, &spec))
            cJSON_AddItemToArray(out, plan_json(&spec));
    }
    pthread_mutex_unlock(&ss->lock);
    cJSON_Delete(paths);
    return out;
}

cJSON *sched_service_plan(sched_service *ss, const char *path)
{
    pthread_mutex_lock(&ss->lock);
    sched_plan_spec spec;
    cJSON *o = sched_get_plan(ss->core, path, &spec) ? plan_json(&spec) : NULL;
    pthread_mutex_unlock(&ss->lock);
    return o;
}

cJSON *sched_service_slots(sched_service *ss)
{
    cJSON *a = cJSON_CreateArray();
    pthread_mutex_lock(&ss->lock);
    size_t n = sched_device_count(ss->core);
    for (size_t i = 0; i < n; i++) {
        sched_device_info d;
        if (!sched_device(ss->core, (int32_t)i, &d))
            continue;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "slot", (double)i);
        cJSON_AddStringToObject(o, "kind", d.kind == LOOM_DEVICE_CUDA ? "gpu" : "cpu");
        cJSON_AddNumberToObject(o, "index", d.index);
        cJSON_AddStringToObject(o, "node", d.node ? d.node : "local");
        if (d.owner)
            cJSON_AddStringToObject(o, "owner", d.owner);
        else
            cJSON_AddNullToObject(o, "owner");
        cJSON_AddItemToArray(a, o);
    }
    pthread_mutex_unlock(&ss->lock);
    return a;
}

int sched_service_submit(sched_service *ss, const sched_job_spec *spec, char *err, size_t errlen)
{
    pthread_mutex_lock(&ss->lock);
    sched_plan_spec existing;
    if (spec->plan && spec->plan[0] && !sched_get_plan(ss->core, spec->plan, &existing) &&
        strchr(spec->plan + 1, '/') == NULL) {
        /* A user's own plan appears with their first job. */
        sched_plan_spec p = {.path = spec->plan, .weight = 1, .policy = SCHED_POLICY_FAIR};
        loom_error *e = sched_add_plan(ss->core, &p);
        if (!e) {
            store_plan rec = {.weight = 1};
            snprintf(rec.path, sizeof rec.path, "%s", spec->plan);
            snprintf(rec.policy, sizeof rec.policy, "fair");
            store_plan_put(ss->st, &rec);
        }
        loom_err_free(e);
    }
    loom_error *e = sched_submit(ss->core, spec, now_s());
    int status = e ? take_error(e, err, errlen) : 0;
    pthread_mutex_unlock(&ss->lock);
    return status;
}

void sched_service_end(sched_service *ss, const char *id)
{
    pthread_mutex_lock(&ss->lock);
    loom_err_free(sched_end(ss->core, id));
    pthread_mutex_unlock(&ss->lock);
}

int sched_service_set_range(sched_service *ss, const char *id, int min, int max, char *err,
                            size_t errlen)
{
    pthread_mutex_lock(&ss->lock);
    loom_error *e = sched_set_job_range(ss->core, id, min, max);
    int status = e ? take_error(e, err, errlen) : 0;
    pthread_mutex_unlock(&ss->lock);
    return status;
}

int sched_service_job_devices(sched_service *ss, const char *id, int32_t *out, int cap,
                              int32_t *index, int32_t *kind)
{
    pthread_mutex_lock(&ss->lock);
    sched_job_info j;
    sched_device_info d;
    int n = -1;
    if (kind)
        *kind = sched_device(ss->core, 0, &d) ? d.kind : LOOM_DEVICE_CPU;
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

size_t sched_service_decide(sched_service *ss, sched_action *out, size_t cap)
{
    pthread_mutex_lock(&ss->lock);
    const sched_decision *d;
    size_t n = sched_plan(ss->core, now_s(), &d);
    for (size_t i = 0; i < n && i < cap; i++) {
        snprintf(out[i].job_id, sizeof out[i].job_id, "%s", d[i].job_id);
        out[i].old_count = d[i].old_count;
        out[i].new_count = d[i].new_count;
    }
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

bool sched_service_pending_reason(sched_service *ss, const char *id, char *buf, size_t len)
{
    if (len)
        buf[0] = '\0';
    pthread_mutex_lock(&ss->lock);
    sched_wait w;
    bool waiting = sched_job_wait(ss->core, id, &w) && w.code != SCHED_WAIT_NONE;
    if (waiting)
        sched_wait_text(&w, buf, len);
    pthread_mutex_unlock(&ss->lock);
    return waiting;
}

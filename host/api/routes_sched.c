/* api/routes_sched.c - the scheduler over REST: the devices and who holds
 * them, and the resource plans (a plan's path has slashes, so single-plan
 * routes take it as ?path=). The JSON bodies are read and written here; the
 * service sees sched_plan_change and answers with sched_plan_view. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/routes.h"
#include "api/api.h"
#include "api/request_body.h"

/* A plan path is kept in the scheduler's record whole, or refused. */
#define PLAN_PATH_MAX (sizeof ((sched_plan_view *)0)->path - 1)
#define PLAN_DEVICES_MAX 1000000000

static loom_error *plan_path_fits(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > PLAN_PATH_MAX ? loom_err(LOOM_E_INVALID, "path: %zu bytes, longer than the limit of %zu",
                                        n, PLAN_PATH_MAX)
                             : NULL;
}

static cJSON *plan_json(const sched_plan_view *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", p->path);
    cJSON_AddNumberToObject(o, "share", p->weight);
    cJSON_AddNumberToObject(o, "min", p->min_devices);
    cJSON_AddNumberToObject(o, "cap", p->cap_devices);
    cJSON_AddStringToObject(o, "policy", sched_policy_name(p->policy));
    cJSON_AddNumberToObject(o, "held", p->held);   /* devices its jobs hold now */
    cJSON_AddNumberToObject(o, "given", p->given); /* its share in the last round */
    for (int i = 0; i < SCHED_LIMITS; i++)
        cJSON_AddNumberToObject(o, sched_limit_infos[i].field, (double)p->job_limits[i]);
    return o;
}

/* A held slot's owner to a caller who may not see its holder. */
#define SLOT_HOLDER_HIDDEN "another user's"

/* What holds a slot, in a word. */
static const char *holder_kind(int32_t kind)
{
    return kind == SCHED_JOB_KERNEL ? "model" : kind == SCHED_JOB_EXPERIMENT ? "tuning" : "exec";
}

/* Whether the caller may see who holds a slot: an administrator, the
 * holder's own user, or whoever may see the exec holding it. */
static int holder_visible(api_services *d, const http_request *req, int64_t caller,
                          const sched_slot_view *v)
{
    if (req->is_admin || (v->owner_user[0] && req->user && strcmp(v->owner_user, req->user) == 0))
        return 1;
    return v->owner_kind != SCHED_JOB_KERNEL && exec_visible_to(d->execs, caller, v->owner);
}

/* A held slot's holder, to a caller who may see it: what it is (a tuning
 * task's experiment is an exec the task submitted), its id and user. */
static void add_holder(cJSON *o, const sched_slot_view *v, const hpo_exec_task *tasks,
                       size_t ntasks)
{
    const hpo_exec_task *t = v->owner_kind == SCHED_JOB_KERNEL
                                 ? NULL
                                 : hpo_exec_task_find(tasks, ntasks, v->owner);
    cJSON_AddStringToObject(o, "owner", v->owner);
    cJSON_AddStringToObject(o, "holder", t ? "tuning" : holder_kind(v->owner_kind));
    if (t)
        cJSON_AddStringToObject(o, "hpoName", t->task);
    cJSON_AddStringToObject(o, "user", v->owner_user);
}

/* Every device and whether it is held: the exec, tuning task's experiment
 * or model's kernel instance holding it, its kind and its user, named only
 * to whoever may see it; to others a held slot is "another user's". */
static void slots(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    int64_t caller = api_caller_id(d, req);
    sched_slot_view *v;
    size_t n;
    loom_error *e = sched_service_slots(d->sched, &v, &n);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    hpo_exec_task *tasks = NULL;
    size_t ntasks = 0;
    loom_err_free(hpo_exec_tasks(d->hpo, &tasks, &ntasks)); /* without: no task named */
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "slot", v[i].slot);
        cJSON_AddStringToObject(o, "kind", v[i].kind == LOOM_DEVICE_CUDA ? "gpu" : "cpu");
        cJSON_AddNumberToObject(o, "index", v[i].index);
        cJSON_AddStringToObject(o, "node", v[i].node);
        cJSON_AddBoolToObject(o, "held", v[i].owner[0] != 0);
        if (!v[i].owner[0])
            cJSON_AddNullToObject(o, "owner");
        else if (holder_visible(d, req, caller, &v[i]))
            add_holder(o, &v[i], tasks, ntasks);
        else
            cJSON_AddStringToObject(o, "owner", SLOT_HOLDER_HIDDEN);
        cJSON_AddItemToArray(a, o);
    }
    free(tasks);
    free(v);
    http_reply_json(res, 200, a);
}

static void list_plans(void *ctx, const http_request *req, http_response *res)
{
    (void)req;
    api_services *d = ctx;
    sched_plan_view *v;
    size_t n;
    loom_error *e = sched_service_plans(d->sched, &v, &n);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, plan_json(&v[i]));
    free(v);
    http_reply_json(res, 200, a);
}

/* The job limits of a plan body ("max_procs", "max_memory", "max_disk"):
 * whole numbers, 0 to inherit; their bounds are the scheduler's to check. */
static loom_error *plan_limits_parse(const cJSON *body, sched_plan_change *c)
{
    for (int i = 0; i < SCHED_LIMITS; i++) {
        const sched_limit_info *l = &sched_limit_infos[i];
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, l->field);
        if (!v)
            continue;
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
            v->valuedouble < 0 || v->valuedouble > (double)l->max)
            return loom_err(LOOM_E_INVALID,
                            "plan \"%s\": %s: expected 0 (the host's %s) or a whole number%s "
                            "from %llu to %llu",
                            c->path, l->field, l->serve_flag, l->bytes ? " of bytes" : "",
                            (unsigned long long)l->min, (unsigned long long)l->max);
        c->has_limit[i] = 1;
        c->job_limits[i] = (uint64_t)v->valuedouble;
    }
    return NULL;
}

/* Reads {"path", "share", "min", "cap", "policy", "max_procs", "max_memory",
 * "max_disk"} (all optional but the path, which ?path= may give) into a
 * change; NULL, or the field at fault. */
static loom_error *plan_change_parse(const cJSON *body, const char *qpath, sched_plan_change *c)
{
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(body, "path");
    if (path && !cJSON_IsString(path))
        return loom_err(LOOM_E_INVALID, "path: expected a plan path such as \"/project/training\"");
    c->path = path ? path->valuestring : qpath;
    if (!c->path)
        return loom_err(LOOM_E_INVALID, "path: expected a plan path such as \"/project/training\"");
    loom_error *long_path = plan_path_fits(c->path);
    if (long_path)
        return long_path;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "share");
    if (v && !cJSON_IsNumber(v))
        return loom_err(LOOM_E_INVALID, "plan \"%s\": share: expected a number", c->path);
    c->has_weight = v != NULL;
    c->weight = v ? v->valuedouble : 0;
    const char *ints[] = {"min", "cap"};
    int *has[] = {&c->has_min, &c->has_cap};
    int32_t *dst[] = {&c->min_devices, &c->cap_devices};
    for (int i = 0; i < 2; i++) {
        v = cJSON_GetObjectItemCaseSensitive(body, ints[i]);
        if (!v)
            continue;
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) ||
            fabs(v->valuedouble) > PLAN_DEVICES_MAX)
            return loom_err(LOOM_E_INVALID,
                            "plan \"%s\": %s: expected a whole number from -%d to %d (the limit)",
                            c->path, ints[i], PLAN_DEVICES_MAX, PLAN_DEVICES_MAX);
        *has[i] = 1;
        *dst[i] = (int32_t)v->valuedouble;
    }
    v = cJSON_GetObjectItemCaseSensitive(body, "policy");
    if (v && (!cJSON_IsString(v) || sched_policy_parse(v->valuestring, &c->policy) != 0))
        return loom_err(LOOM_E_INVALID, "plan \"%s\": policy: expected \"fair\" or \"priority\"",
                        c->path);
    c->has_policy = v != NULL;
    return plan_limits_parse(body, c);
}

static void put_plan(api_services *d, const http_request *req, http_response *res, int create)
{
    cJSON *body = api_body_json(req, res);
    if (!body)
        return;
    sched_plan_change change = {0};
    sched_plan_view now;
    loom_error *e = plan_change_parse(body, http_query(req, "path"), &change);
    if (!e)
        e = sched_service_plan_put(d->sched, &change, create, &now);
    cJSON_Delete(body);
    if (e)
        api_reply_error(res, e);
    else
        http_reply_json(res, create ? 201 : 200, plan_json(&now));
}

static void add_plan(void *ctx, const http_request *req, http_response *res)
{
    put_plan(ctx, req, res, 1);
}

static void update_plan(void *ctx, const http_request *req, http_response *res)
{
    put_plan(ctx, req, res, 0);
}

static void show_plan(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const char *path = http_query(req, "path");
    if (!path) {
        api_error(res, LOOM_E_INVALID, "path: expected ?path=/plan/path");
        return;
    }
    loom_error *long_path = plan_path_fits(path);
    if (long_path) {
        api_reply_error(res, long_path);
        return;
    }
    sched_plan_view v;
    loom_error *e = sched_service_plan(d->sched, path, &v);
    if (e)
        api_reply_error(res, e);
    else
        http_reply_json(res, 200, plan_json(&v));
}

static void remove_plan(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const char *path = http_query(req, "path");
    if (!path) {
        api_error(res, LOOM_E_INVALID, "path: expected ?path=/plan/path");
        return;
    }
    loom_error *long_path = plan_path_fits(path);
    if (long_path) {
        api_reply_error(res, long_path);
        return;
    }
    loom_error *e = sched_service_plan_remove(d->sched, path);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "removed", path);
    http_reply_json(res, 200, o);
}

/* The plan of ?path= and the user named (the route's segment or the body's
 * "user") resolved to their immutable id; false after replying. */
static bool member_target(api_services *d, const http_request *req, http_response *res, const char *user,
                          const char **plan, int64_t *user_id)
{
    *plan = http_query(req, "path");
    if (!*plan) {
        api_error(res, LOOM_E_INVALID, "path: expected ?path=/plan/path");
        return false;
    }
    loom_error *e = auth_user_id(d->auth, user, user_id);
    if (e) {
        loom_err_free(e);
        api_error(res, LOOM_E_NOT_FOUND, "user: no user \"%s\"", user);
        return false;
    }
    return true;
}

static void list_members(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    sched_plan_member *v;
    size_t n;
    loom_error *e = sched_service_plan_members(d->sched, http_query(req, "path"), &v, &n);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "plan", v[i].plan);
        cJSON_AddStringToObject(o, "user", v[i].user);
        cJSON_AddNumberToObject(o, "addTime", (double)v[i].added_at_ms);
        cJSON_AddItemToArray(a, o);
    }
    free(v);
    http_reply_json(res, 200, a);
}

static void add_member(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    cJSON *body = api_body_json(req, res);
    if (!body)
        return;
    const cJSON *user = cJSON_GetObjectItemCaseSensitive(body, "user");
    const char *plan;
    int64_t id;
    if (!cJSON_IsString(user))
        api_error(res, LOOM_E_INVALID, "user: expected a user name");
    else if (member_target(d, req, res, user->valuestring, &plan, &id)) {
        loom_error *e = sched_service_plan_member_add(d->sched, plan, id, user->valuestring);
        if (e) {
            api_reply_error(res, e);
        } else {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "plan", plan);
            cJSON_AddStringToObject(o, "user", user->valuestring);
            http_reply_json(res, 201, o);
        }
    }
    cJSON_Delete(body);
}

static void remove_member(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const char *plan;
    int64_t id;
    if (!member_target(d, req, res, req->params[0], &plan, &id))
        return;
    loom_error *e = sched_service_plan_member_remove(d->sched, plan, id, req->params[0]);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "plan", plan);
    cJSON_AddStringToObject(o, "removed", req->params[0]);
    http_reply_json(res, 200, o);
}

const http_route loom_sched_routes[] = {
    {"GET", LOOM_ROUTE_SLOTS, slots, HTTP_USER},
    {"GET", LOOM_ROUTE_PLANS, list_plans, HTTP_USER},
    {"POST", LOOM_ROUTE_PLANS, add_plan, HTTP_ADMIN},
    {"GET", LOOM_ROUTE_PLAN, show_plan, HTTP_USER},
    {"PUT", LOOM_ROUTE_PLAN, update_plan, HTTP_ADMIN},
    {"DELETE", LOOM_ROUTE_PLAN, remove_plan, HTTP_ADMIN},
    {"GET", LOOM_ROUTE_PLAN_MEMBERS, list_members, HTTP_ADMIN},
    {"POST", LOOM_ROUTE_PLAN_MEMBERS, add_member, HTTP_ADMIN},
    {"DELETE", LOOM_ROUTE_PLAN_MEMBERS "/{}", remove_member, HTTP_ADMIN},
};
const size_t loom_sched_route_count = sizeof loom_sched_routes / sizeof *loom_sched_routes;

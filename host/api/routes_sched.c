/* api/routes_sched.c - the scheduler over REST: the devices and who holds
 * them, and the resource plans (a plan's path has slashes, so single-plan
 * routes take it as ?path=). */
#include <stdio.h>

#include "api/server.h"

static void slots(void *ctx, const http_request *req, http_response *res)
{
    (void)req;
    loomd *d = ctx;
    http_reply_json(res, 200, sched_service_slots(d->sched));
}

static void list_plans(void *ctx, const http_request *req, http_response *res)
{
    (void)req;
    loomd *d = ctx;
    http_reply_json(res, 200, sched_service_plans(d->sched));
}

static void put_plan(loomd *d, const http_request *req, http_response *res, int create)
{
    cJSON *body = http_body_json(req, res);
    if (!body)
        return;
    const char *qpath = http_query(req, "path");
    if (qpath && !cJSON_GetObjectItemCaseSensitive(body, "path"))
        cJSON_AddStringToObject(body, "path", qpath);
    char err[512];
    int status = sched_service_plan_put(d->sched, body, create, err, sizeof err);
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(body, "path");
    cJSON *out = status == 0 && cJSON_IsString(path) ? sched_service_plan(d->sched, path->valuestring) : NULL;
    cJSON_Delete(body);
    if (status)
        http_reply_error(res, status, "%s", err);
    else
        http_reply_json(res, create ? 201 : 200, out);
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
    loomd *d = ctx;
    const char *path = http_query(req, "path");
    cJSON *o = path ? sched_service_plan(d->sched, path) : NULL;
    if (!o)
        http_reply_error(res, path ? 404 : 400, path ? "no plan \"%s\"" : "path: expected ?path=/plan/path",
                         path ? path : "");
    else
        http_reply_json(res, 200, o);
}

static void remove_plan(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
    const char *path = http_query(req, "path");
    char err[512];
    int status = path ? sched_service_plan_remove(d->sched, path, err, sizeof err) : 400;
    if (!path)
        snprintf(err, sizeof err, "path: expected ?path=/plan/path");
    if (status) {
        http_reply_error(res, status, "%s", err);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "removed", path);
    http_reply_json(res, 200, o);
}

const http_route loom_sched_routes[] = {
    {"GET", "/loom/v1/slots", slots, HTTP_USER},
    {"GET", "/loom/v1/plans", list_plans, HTTP_USER},
    {"POST", "/loom/v1/plans", add_plan, HTTP_ADMIN},
    {"GET", "/loom/v1/plan", show_plan, HTTP_USER},
    {"PUT", "/loom/v1/plan", update_plan, HTTP_ADMIN},
    {"DELETE", "/loom/v1/plan", remove_plan, HTTP_ADMIN},
};
const size_t loom_sched_route_count = sizeof loom_sched_routes / sizeof *loom_sched_routes;

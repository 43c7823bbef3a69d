/* api/routes_v2.c - the Open Inference Protocol v2's HTTP routes (KServe's
 * and Triton's) over loom's model services: a model's metadata, whether it
 * is ready, inference (the same call as dlim's POST /dlim/v1/inference/
 * {name}), and the server's health. A model's routes need a token and see
 * only the caller's models (another user's is 404), as dlim's do; the
 * health checks are public, as KServe's probes expect, and say nothing but
 * that the host answers. Errors keep loom's one shape, whose "error" string
 * is the protocol's. */
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "api/api.h"
#include "api/routes.h"

#define OWNER(req) ((req)->is_admin ? NULL : (req)->user)

static void model_metadata(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    cJSON *json = NULL;
    loom_error *e = infer_metadata(d->infer, OWNER(req), req->params[0], &json);
    if (e)
        api_reply_error(res, e);
    else
        http_reply_json(res, 200, json);
}

/* Ready: started, with an instance serving now (not only once). */
static void model_ready(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    infer_model_view v;
    loom_error *e = infer_view(d->infer, OWNER(req), req->params[0], &v);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    if (v.state == MODEL_STARTED && v.stats.instances > 0) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", v.name);
        cJSON_AddBoolToObject(o, "ready", 1);
        http_reply_json(res, 200, o);
    } else if (v.state == MODEL_STARTED) {
        api_error(res, LOOM_E_UNAVAILABLE, "model \"%s\" is not ready: state started, but no "
                  "kernel instance serves it now (restarting)", v.name);
    } else {
        api_error(res, LOOM_E_UNAVAILABLE, "model \"%s\" is not ready: state %s%s%s", v.name,
                  model_state_text(v.state), v.stats.last_error[0] ? ": " : "",
                  v.stats.last_error);
    }
    infer_model_view_clear(&v);
}

static void health(http_response *res, const char *key)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, key, 1);
    http_reply_json(res, 200, o);
}

/* The host answers: it is alive, and (its services being open before it
 * listens) ready to serve. */
static void health_live(void *ctx, const http_request *req, http_response *res)
{
    (void)ctx;
    (void)req;
    health(res, "live");
}

static void health_ready(void *ctx, const http_request *req, http_response *res)
{
    (void)ctx;
    (void)req;
    health(res, "ready");
}

const http_route loom_v2_routes[] = {
    {"GET", LOOM_ROUTE_V2_HEALTH LOOM_ROUTE_V2_LIVE, health_live, HTTP_PUBLIC},
    {"GET", LOOM_ROUTE_V2_HEALTH LOOM_ROUTE_V2_READY, health_ready, HTTP_PUBLIC},
    {"GET", LOOM_ROUTE_V2_MODELS "/{}", model_metadata, HTTP_USER},
    {"GET", LOOM_ROUTE_V2_MODELS "/{}" LOOM_ROUTE_V2_READY, model_ready, HTTP_USER},
    {"POST", LOOM_ROUTE_V2_MODELS "/{}" LOOM_ROUTE_V2_INFER, api_inference, HTTP_USER},
};
const size_t loom_v2_route_count = sizeof loom_v2_routes / sizeof *loom_v2_routes;

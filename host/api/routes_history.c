/* api/routes_history.c - the host's history over REST (api/history.h
 * writes it): GET /loom/v1/history/devices, .../execs/{id}/metrics and
 * .../models/{name}, each with ?from=MS&to=MS (default: the window kept,
 * up to now). What the caller may see is what the live routes show: another
 * user's exec or model is 404, another user's holder "another user's". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/routes.h"
#include "util/fs.h"

/* Shown for a holder the caller may not see (as GET /loom/v1/slots). */
#define HIDDEN_HOLDER "another user's"

/* ?from= and ?to= as unix ms; 0, or -1 with the refusal replied. */
static int time_range(api_services *d, const http_request *req, http_response *res,
                      int64_t *from, int64_t *to)
{
    *to = time_now_ms();
    *from = *to - d->history_bounds.window_ms;
    const char *names[2] = {"from", "to"};
    int64_t *values[2] = {from, to};
    for (int i = 0; i < 2; i++) {
        const char *text = http_query(req, names[i]);
        if (!text)
            continue;
        char *end;
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if (!*text || *end || errno || v < 0) {
            api_error(res, LOOM_E_INVALID, "%s: expected a time in ms since 1970 (a whole "
                                           "number from 0), not \"%.64s\"",
                      names[i], text);
            return -1;
        }
        *values[i] = v;
    }
    if (*from > *to) {
        api_error(res, LOOM_E_INVALID, "from (%lld) is after to (%lld)", (long long)*from,
                  (long long)*to);
        return -1;
    }
    return 0;
}

static cJSON *range_json(int64_t from, int64_t to)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "from", (double)from);
    cJSON_AddNumberToObject(o, "to", (double)to);
    return o;
}

static void device_history(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    int64_t from, to;
    if (time_range(d, req, res, &from, &to) != 0)
        return;
    store_history_device *v = NULL;
    size_t n = 0;
    loom_error *e = store_history_devices(d->st, from, to, &v, &n);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    int64_t caller = api_caller_id(d, req);
    cJSON *o = range_json(from, to);
    cJSON *a = cJSON_AddArrayToObject(o, "changes");
    for (size_t i = 0; i < n; i++) {
        cJSON *c = cJSON_CreateObject();
        cJSON_AddNumberToObject(c, "t", (double)v[i].t);
        cJSON_AddNumberToObject(c, "slot", v[i].slot);
        int visible = req->is_admin || !v[i].holder[0] || strcmp(v[i].user, req->user) == 0 ||
                      (strcmp(v[i].kind, "model") != 0 &&
                       exec_visible_to(d->execs, caller, v[i].holder));
        if (!v[i].holder[0]) {
            cJSON_AddNullToObject(c, "holder");
        } else if (visible) {
            cJSON_AddStringToObject(c, "holder", v[i].holder);
            cJSON_AddStringToObject(c, "kind", v[i].kind);
            cJSON_AddStringToObject(c, "user", v[i].user);
        } else {
            cJSON_AddStringToObject(c, "holder", HIDDEN_HOLDER);
        }
        cJSON_AddItemToArray(a, c);
    }
    free(v);
    http_reply_json(res, 200, o);
}

/* A series' reply: the range, whose series (key_name: key), and each
 * row as point() makes it; frees rows. */
static void reply_series(http_response *res, int64_t from, int64_t to, const char *key_name,
                         const char *key, void *rows, size_t n,
                         cJSON *(*point)(const void *rows, size_t i))
{
    cJSON *o = range_json(from, to);
    cJSON_AddStringToObject(o, key_name, key);
    cJSON *a = cJSON_AddArrayToObject(o, "points");
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, point(rows, i));
    free(rows);
    http_reply_json(res, 200, o);
}

static cJSON *metric_json(const void *rows, size_t i)
{
    const store_history_metric *m = (const store_history_metric *)rows + i;
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "t", (double)m->t);
    cJSON_AddStringToObject(p, "name", m->name);
    if (m->step >= 0)
        cJSON_AddNumberToObject(p, "iteration", (double)m->step);
    cJSON_AddNumberToObject(p, "epoch", m->epoch);
    cJSON_AddNumberToObject(p, "value", m->value);
    return p;
}

static cJSON *model_json(const void *rows, size_t i)
{
    const store_history_model *m = (const store_history_model *)rows + i;
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "t", (double)m->t);
    cJSON_AddNumberToObject(p, "requestsPerSecond", m->requests_per_s);
    cJSON_AddNumberToObject(p, "instances", m->instances);
    return p;
}

static void exec_metrics(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const char *id = req->params[0];
    int64_t from, to;
    if (time_range(d, req, res, &from, &to) != 0)
        return;
    if (!exec_visible_to(d->execs, api_caller_id(d, req), id)) {
        api_error(res, LOOM_E_NOT_FOUND, "no exec \"%s\"", id);
        return;
    }
    store_history_metric *v = NULL;
    size_t n = 0;
    loom_error *e = store_history_metrics(d->st, id, from, to, &v, &n);
    if (e)
        api_reply_error(res, e);
    else
        reply_series(res, from, to, "exec", id, v, n, metric_json);
}

static void model_history(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const char *name = req->params[0];
    int64_t from, to;
    if (time_range(d, req, res, &from, &to) != 0)
        return;
    /* the model's own visibility: another user's is "not found" */
    infer_model_view mv;
    loom_error *e = infer_view(d->infer, req->is_admin ? NULL : req->user, name, &mv);
    if (!e)
        infer_model_view_clear(&mv);
    store_history_model *v = NULL;
    size_t n = 0;
    if (!e)
        e = store_history_models(d->st, name, from, to, &v, &n);
    if (e)
        api_reply_error(res, e);
    else
        reply_series(res, from, to, "model", name, v, n, model_json);
}

const http_route loom_history_routes[] = {
    {"GET", LOOM_ROUTE_HISTORY "/devices", device_history, HTTP_USER},
    {"GET", LOOM_ROUTE_HISTORY "/execs/{}/metrics", exec_metrics, HTTP_USER},
    {"GET", LOOM_ROUTE_HISTORY "/models/{}", model_history, HTTP_USER},
};
const size_t loom_history_route_count = sizeof loom_history_routes / sizeof *loom_history_routes;

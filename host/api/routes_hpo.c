/* api/routes_hpo.c - WMLA's tuning routes under
 * /platform/rest/deeplearning/v1/hypersearch: submit (multipart "data" =
 * the task JSON + "file" = the model archive; the reply is the task's name
 * as a JSON string), list, view, stop (PUT), restart, delete, the search
 * log, and the algorithm routes. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/routes.h"
#include "api/api.h"
#include "api/request_body.h"
#include "hpo/hpo.h"
#include "util/num_text.h"

#define OWNER(req) ((req)->is_admin ? NULL : (req)->user)

static void submit(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const http_field *data = http_field_get(req, "data");
    const http_field *file = http_field_get(req, "file");
    if (!data) {
        api_error(res, LOOM_E_INVALID, "data: expected a multipart part named 'data' holding the "
                                       "task (WMLA's hpoName, modelSpec, algoDef, hyperParams)");
        return;
    }
    hpo_submission sub = {.user = req->user, .is_admin = req->is_admin, .task_json = data->data,
                          .task_len = data->len, .archive = file ? file->data : NULL,
                          .archive_len = file && file->data ? file->len : 0,
                          .archive_path = file ? file->path : NULL};
    if (!data->data) {
        api_error(res, LOOM_E_INVALID, "data: expected the task as a plain part, not a file");
        return;
    }
    loom_error *who = auth_user_id(d->auth, req->user, &sub.user_id);
    if (who) { /* removed since its token was checked */
        api_reply_error(res, loom_err_recode(who, LOOM_E_UNAUTHENTICATED));
        return;
    }
    char name[128];
    loom_error *e = hpo_submit(d->hpo, &sub, name, sizeof name);
    if (e)
        api_reply_error(res, e);
    else
        http_reply_json(res, 200, cJSON_CreateString(name));
}

static void list(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    hpo_task_rec *t;
    size_t n;
    loom_error *e = hpo_list(d->hpo, OWNER(req), &t, &n);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "hpoName", t[i].name);
        cJSON_AddStringToObject(o, "state", hpo_task_state_text(t[i].state));
        cJSON_AddStringToObject(o, "creator", t[i].user);
        cJSON_AddNumberToObject(o, "createTime", (double)t[i].created_at);
        cJSON_AddItemToArray(a, o);
    }
    hpo_task_recs_free(t, n);
    http_reply_json(res, 200, a);
}

static cJSON *experiment_json(const hpo_exp_view *x)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", (double)x->rec.id);
    cJSON_AddStringToObject(o, "appId", x->rec.exec_id);
    cJSON_AddStringToObject(o, "state", hpo_exp_state_text(x->rec.state));
    if (x->rec.has_metric)
        cJSON_AddNumberToObject(o, "metricVal", x->rec.metric);
    else
        cJSON_AddNullToObject(o, "metricVal");
    cJSON_AddNumberToObject(o, "startTime", (double)x->rec.start_at);
    cJSON_AddNumberToObject(o, "endTime", (double)x->rec.end_at);
    if (x->rec.budget > 0)
        cJSON_AddNumberToObject(o, "budget", x->rec.budget);
    if (x->rec.message[0])
        cJSON_AddStringToObject(o, "message", x->rec.message);
    cJSON *hps = cJSON_AddArrayToObject(o, "hyperParams");
    for (uint32_t i = 0; i < x->nvalues; i++) {
        cJSON *h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "name", x->values[i].name);
        cJSON_AddStringToObject(h, "dataType", x->values[i].type);
        cJSON_AddStringToObject(h, "fixedVal", x->values[i].text);
        cJSON_AddItemToArray(hps, h);
    }
    return o;
}

static void view(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    hpo_task_view v;
    loom_error *e = hpo_describe(d->hpo, OWNER(req), req->params[0], &v);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "hpoName", v.rec.name);
    cJSON_AddStringToObject(o, "creator", v.rec.user);
    cJSON_AddStringToObject(o, "state", hpo_task_state_text(v.rec.state));
    cJSON_AddStringToObject(o, "message", v.rec.message);
    cJSON_AddStringToObject(o, "algorithm", v.algorithm);
    cJSON_AddStringToObject(o, "objectiveMetric", v.objective_metric);
    cJSON_AddStringToObject(o, "objective", v.maximize ? "maximize" : "minimize");
    cJSON_AddNumberToObject(o, "running", v.running);
    cJSON_AddNumberToObject(o, "complete", v.complete);
    cJSON_AddNumberToObject(o, "failed", v.failed);
    char progress[64];
    if (v.planned)
        snprintf(progress, sizeof progress, "%u/%u", v.complete + v.failed, v.planned);
    else
        snprintf(progress, sizeof progress, "%u/%zu", v.complete + v.failed, v.nexps);
    cJSON_AddStringToObject(o, "progress", progress);
    cJSON_AddNumberToObject(o, "duration", (double)v.duration_ms / 1000.0);
    cJSON_AddNumberToObject(o, "createTime", (double)v.rec.created_at);
    cJSON_AddNumberToObject(o, "startTime", (double)v.rec.started_at);
    cJSON_AddNumberToObject(o, "endTime", (double)v.rec.ended_at);
    cJSON *xs = cJSON_AddArrayToObject(o, "experiments");
    for (size_t i = 0; i < v.nexps; i++)
        cJSON_AddItemToArray(xs, experiment_json(&v.exps[i]));
    if (v.best >= 0)
        cJSON_AddItemToObject(o, "best", experiment_json(&v.exps[v.best]));
    else
        cJSON_AddNullToObject(o, "best");
    hpo_task_view_free(&v);
    num_text_json_shortest(o);
    http_reply_json(res, 200, o);
}

/* GET .../hypersearch/{name}/log[?offset=BYTES]: the task's search log
 * (its search plugin's output, host->log lines included), the owner's or
 * an administrator's; without offset its last part. At most
 * HPO_SEARCH_LOG_MAX_READ bytes a reply: "truncated" and "note" say when
 * more was asked than it holds, "next" is the offset to follow from. */
static void search_log(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const char *off = http_query(req, "offset");
    char *end;
    errno = 0;
    long long from = off ? strtoll(off, &end, 10) : -1;
    if (off && (*end || end == off || errno || from < 0)) {
        api_error(res, LOOM_E_INVALID, "offset: expected a byte offset from 0 to %lld, got "
                                       "\"%.64s\"", LLONG_MAX, off);
        return;
    }
    hpo_log_part p;
    loom_error *e = hpo_search_log(d->hpo, OWNER(req), req->params[0], from, &p);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    int64_t next = p.offset + (int64_t)p.len;
    int truncated = from < 0 ? p.offset > 0 : next < p.size;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "hpoName", req->params[0]);
    cJSON_AddStringToObject(o, "state", hpo_task_state_text(p.state));
    cJSON_AddNumberToObject(o, "offset", (double)p.offset);
    cJSON_AddNumberToObject(o, "next", (double)next);
    cJSON_AddNumberToObject(o, "size", (double)p.size);
    cJSON_AddBoolToObject(o, "truncated", truncated);
    if (truncated) {
        char note[256];
        snprintf(note, sizeof note, "bytes %lld to %lld of %lld (at most %u a reply; ask with "
                 "?offset= for %s)", (long long)p.offset, (long long)next, (long long)p.size,
                 HPO_SEARCH_LOG_MAX_READ, from < 0 ? "the start" : "the rest");
        cJSON_AddStringToObject(o, "note", note);
    }
    cJSON_AddStringToObject(o, "text", p.text);
    hpo_log_part_free(&p);
    http_reply_json(res, 200, o);
}

static void reply_done(http_response *res, loom_error *e, const char *name)
{
    if (e)
        api_reply_error(res, e);
    else
        http_reply_json(res, 200, cJSON_CreateString(name));
}

static void stop(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    reply_done(res, hpo_stop(d->hpo, OWNER(req), req->params[0]), req->params[0]);
}

static void restart(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    reply_done(res, hpo_restart(d->hpo, OWNER(req), req->params[0]), req->params[0]);
}

static void delete_one(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    reply_done(res, hpo_delete(d->hpo, OWNER(req), req->params[0]), req->params[0]);
}

static void delete_ended(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    unsigned n = 0;
    /* The caller's own ended tasks, administrators included. */
    loom_error *e = hpo_delete_ended(d->hpo, req->user, &n);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "deleted", n);
    http_reply_json(res, 200, o);
}

/* ---- algorithms ------------------------------------------------------------ */

static cJSON *algorithm_json(const char *name, const char *type, const char *plugin)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "type", type);
    if (plugin)
        cJSON_AddStringToObject(o, "plugin", plugin);
    return o;
}

/* WMLA's built-in names (when their plugin is loaded), then the user's
 * search plugins and installed Python optimizers. */
static void algorithm_list(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const char *type = http_query(req, "type");
    if (type && strcmp(type, "BUILD_IN") && strcmp(type, "PLUGIN")) {
        api_error(res, LOOM_E_INVALID, "type: expected BUILD_IN or PLUGIN");
        return;
    }
    hpo_algorithm_rec *py = NULL;
    size_t npy = 0;
    loom_error *e = hpo_algorithm_list(d->hpo, req->user, req->is_admin, &py, &npy);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *a = cJSON_CreateArray();
    registry_entry all[128];
    size_t n = registry_list(d->reg, LOOM_KIND_SEARCH, all, 128);
    if (n > 128)
        n = 128;
    for (size_t i = 0; i < hpo_builtin_algorithm_count && (!type || !strcmp(type, "BUILD_IN")); i++)
        for (size_t k = 0; k < n; k++)
            if (all[k].loaded && !strcmp(all[k].name, hpo_builtin_algorithms[i].plugin))
                cJSON_AddItemToArray(a, algorithm_json(hpo_builtin_algorithms[i].wmla_name,
                                                       "BUILD_IN", all[k].name));
    for (size_t k = 0; k < n && (!type || !strcmp(type, "PLUGIN")); k++)
        if (all[k].loaded && !strcmp(all[k].origin, "user"))
            cJSON_AddItemToArray(a, algorithm_json(all[k].name, "PLUGIN", NULL));
    for (size_t k = 0; k < npy && (!type || !strcmp(type, "PLUGIN")); k++)
        cJSON_AddItemToArray(a, algorithm_json(py[k].name, "PLUGIN", "python_optimizer"));
    free(py);
    http_reply_json(res, 200, a);
}

static void algorithm_get(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const char *name = req->params[0];
    hpo_algorithm_rec py;
    loom_error *none = hpo_algorithm_get(d->hpo, req->user, req->is_admin, name, &py);
    int installed = none == NULL;
    loom_err_free(none);
    if (installed) {
        cJSON *o = algorithm_json(name, "PLUGIN", "python_optimizer");
        cJSON_AddStringToObject(o, "creator", py.user);
        cJSON_AddStringToObject(o, "path", py.dir);
        cJSON_AddStringToObject(o, "python", py.python);
        cJSON_AddStringToObject(o, "logLevel", py.log_level);
        cJSON_AddBoolToObject(o, "published", py.published);
        http_reply_json(res, 200, o);
        return;
    }
    for (size_t i = 0; i < hpo_builtin_algorithm_count; i++)
        if (!strcasecmp(name, hpo_builtin_algorithms[i].wmla_name))
            name = hpo_builtin_algorithms[i].plugin;
    registry_entry e;
    if (registry_acquire(d->reg, LOOM_KIND_SEARCH, name, &e) != 0) {
        api_error(res, LOOM_E_NOT_FOUND, "no search algorithm \"%s\"", req->params[0]);
        return;
    }
    registry_release(d->reg, LOOM_KIND_SEARCH, e.name);
    cJSON *o = algorithm_json(req->params[0], strcmp(e.origin, "user") ? "BUILD_IN" : "PLUGIN",
                              e.name);
    cJSON_AddStringToObject(o, "version", e.version);
    cJSON_AddStringToObject(o, "description", e.description);
    cJSON_AddStringToObject(o, "format", e.format);
    http_reply_json(res, 200, o);
}

/* An installed Python optimizer, or a user's .so or .lua search plugin
 * (administrators, as `loom algorithm remove`). */
static void algorithm_delete(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    loom_error *e = hpo_algorithm_remove(d->hpo, req->user, req->is_admin, req->params[0]);
    if (loom_err_code(e) != LOOM_E_NOT_FOUND) {
        reply_done(res, e, req->params[0]);
        return;
    }
    loom_err_free(e);
    registry_entry p;
    if (registry_acquire(d->reg, LOOM_KIND_SEARCH, req->params[0], &p) != 0) {
        api_error(res, LOOM_E_NOT_FOUND, "no search algorithm \"%s\"", req->params[0]);
        return;
    }
    registry_release(d->reg, LOOM_KIND_SEARCH, p.name);
    if (!req->is_admin)
        api_error(res, LOOM_E_FORBIDDEN, "search plugin \"%s\": only administrators remove "
                                         "registered plugins", req->params[0]);
    else
        api_remove_plugin(d, LOOM_KIND_SEARCH, req->params[0], res);
}

static const char *json_str(const cJSON *o, const char *key)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(j) ? j->valuestring : NULL;
}

static void algorithm_install(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const http_field *data = http_field_get(req, "data");
    const http_field *file = http_field_get(req, "file");
    cJSON *j = data && data->data ? cJSON_ParseWithLength(data->data, data->len) : NULL;
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        api_error(res, LOOM_E_INVALID, "data: expected a multipart part named 'data' holding "
                                       "{\"name\", \"path\" or a 'file' part, \"condaHome\", "
                                       "\"condaEnv\", \"logLevel\"}");
        return;
    }
    const cJSON *remote = cJSON_GetObjectItemCaseSensitive(j, "remoteExec");
    if (remote && !cJSON_IsFalse(remote) && !cJSON_IsNull(remote) &&
        !(cJSON_IsString(remote) && !strcasecmp(remote->valuestring, "false"))) {
        cJSON_Delete(j);
        api_error(res, LOOM_E_UNSUPPORTED, "remoteExec: loom runs plugin optimizers on the host "
                                           "only (give false or leave it out)");
        return;
    }
    hpo_algorithm_install in = {
        .user = req->user, .is_admin = req->is_admin, .name = json_str(j, "name"),
        .path = json_str(j, "path"), .archive = file ? file->data : NULL,
        .archive_len = file && file->data ? file->len : 0,
        .archive_path = file ? file->path : NULL, .conda_home = json_str(j, "condaHome"),
        .conda_env = json_str(j, "condaEnv"), .log_level = json_str(j, "logLevel")};
    loom_error *e = hpo_algorithm_add(d->hpo, &in);
    char name[64];
    snprintf(name, sizeof name, "%s", in.name ? in.name : "");
    cJSON_Delete(j);
    reply_done(res, e, name);
}

/* An administrator lets every user name an installed optimizer, or takes
 * that back (`loom algorithm publish|unpublish NAME`). */
static void algorithm_publish(void *ctx, const http_request *req, http_response *res)
{
    reply_done(res, hpo_algorithm_publish(((api_services *)ctx)->hpo, req->params[0], 1), req->params[0]);
}

static void algorithm_unpublish(void *ctx, const http_request *req, http_response *res)
{
    reply_done(res, hpo_algorithm_publish(((api_services *)ctx)->hpo, req->params[0], 0), req->params[0]);
}

const http_route loom_hpo_routes[] = {
    {"POST", LOOM_ROUTE_HPO, submit, HTTP_USER | HTTP_SLOW},
    {"GET", LOOM_ROUTE_HPO, list, HTTP_USER},
    {"DELETE", LOOM_ROUTE_HPO, delete_ended, HTTP_USER | HTTP_SLOW},
    {"GET", LOOM_ROUTE_HPO_ALGORITHMS, algorithm_list, HTTP_USER},
    {"POST", LOOM_ROUTE_HPO_ALGORITHMS "/install", algorithm_install, HTTP_USER | HTTP_SLOW},
    {"GET", LOOM_ROUTE_HPO_ALGORITHMS "/{}", algorithm_get, HTTP_USER},
    {"DELETE", LOOM_ROUTE_HPO_ALGORITHMS "/{}", algorithm_delete, HTTP_USER | HTTP_SLOW},
    {"POST", LOOM_ROUTE_HPO_ALGORITHMS "/{}" LOOM_ROUTE_OP_PUBLISH, algorithm_publish, HTTP_ADMIN},
    {"POST", LOOM_ROUTE_HPO_ALGORITHMS "/{}" LOOM_ROUTE_OP_UNPUBLISH, algorithm_unpublish, HTTP_ADMIN},
    {"GET", LOOM_ROUTE_HPO "/{}", view, HTTP_USER},
    {"PUT", LOOM_ROUTE_HPO "/{}", stop, HTTP_USER},
    {"PUT", LOOM_ROUTE_HPO "/{}" LOOM_ROUTE_RESTART, restart, HTTP_USER},
    {"GET", LOOM_ROUTE_HPO "/{}" LOOM_ROUTE_LOG, search_log, HTTP_USER | HTTP_SLOW},
    {"DELETE", LOOM_ROUTE_HPO "/{}", delete_one, HTTP_USER | HTTP_SLOW},
};
const size_t loom_hpo_route_count = sizeof loom_hpo_routes / sizeof *loom_hpo_routes;

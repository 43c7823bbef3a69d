/* api/routes_exec.c - WMLA's training routes under
 * /platform/rest/deeplearning/v1/execs: submit (multipart "args" + "file",
 * or JSON {"args": ...}), list, view, log, stop, delete. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/routes.h"
#include "api/server.h"
#include "util/fs.h"

#define LOG_CHUNK_MAX ((size_t)1 << 20)

/* Users see their own execs (by immutable id); administrators see all. */
#define OWNER(req) loomd_caller_id(ctx, req)

/* WMLA's field names for an exec. */
static cJSON *exec_json(exec_view *v)
{
    const store_exec *e = &v->rec;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", e->id);
    cJSON_AddStringToObject(o, "creator", e->user);
    cJSON_AddStringToObject(o, "framework", e->framework);
    cJSON_AddStringToObject(o, "args", e->args);
    cJSON_AddStringToObject(o, "state", e->state);
    cJSON_AddStringToObject(o, "message", e->message);
    cJSON_AddNumberToObject(o, "numWorker", e->num_workers);
    cJSON_AddStringToObject(o, "resultDir", e->result_dir);
    cJSON_AddNumberToObject(o, "createTime", (double)e->created_at);
    cJSON_AddNumberToObject(o, "startTime", (double)e->started_at);
    cJSON_AddNumberToObject(o, "endTime", (double)e->ended_at);
    if (v->pending_reason[0])
        cJSON_AddStringToObject(o, "pendingReason", v->pending_reason);
    if (v->running && v->handover_ms >= 0) {
        cJSON *h = cJSON_AddObjectToObject(o, "handover");
        cJSON_AddNumberToObject(h, "ms", (double)v->handover_ms);
        if (v->handover_from[0])
            cJSON_AddStringToObject(h, "from", v->handover_from);
    }
    if (v->running) {
        cJSON *slots = cJSON_AddArrayToObject(o, "slots");
        for (int i = 0; i < v->nslots; i++)
            cJSON_AddItemToArray(slots, cJSON_CreateNumber(v->slots[i]));
    }
    if (v->training) {
        cJSON_AddItemToObject(o, "training", v->training);
        v->training = NULL; /* now the reply's */
    }
    if (v->workers) {
        cJSON *ws = cJSON_AddArrayToObject(o, "workers");
        for (int i = 0; i < v->nworkers; i++) {
            cJSON *w = cJSON_CreateObject();
            cJSON_AddNumberToObject(w, "rank", v->workers[i].rank);
            cJSON_AddNumberToObject(w, "pid", v->workers[i].pid);
            cJSON_AddStringToObject(w, "state", v->workers[i].exited ? "EXITED" : "RUNNING");
            cJSON_AddItemToArray(ws, w);
        }
    }
    return o;
}

/* Replies with the exec as it now is (status 200 or 201). */
static void reply_exec(loomd *d, int64_t owner, const char *id, int status, http_response *res)
{
    exec_view v;
    loom_error *e = exec_describe(d->execs, owner, id, &v);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    http_reply_json(res, status, exec_json(&v));
    exec_view_free(&v);
}

/* The args are stored whole or refused: never cut to the record's size. */
#define EXEC_ARGS_MAX (sizeof ((store_exec *)0)->args - 1)

static loom_error *args_fit(const char *args)
{
    size_t n = strlen(args);
    return n > EXEC_ARGS_MAX ? loom_err(LOOM_E_INVALID, "args: %zu bytes, longer than the limit of %zu",
                                        n, EXEC_ARGS_MAX)
                             : NULL;
}

static void submit(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
    exec_submission sub = {.user = req->user, .is_admin = req->is_admin};
    loom_error *who = auth_user_id(d->auth, req->user, &sub.user_id);
    if (who) { /* removed since its token was checked */
        api_reply_error(res, loom_err_recode(who, LOOM_E_UNAUTHENTICATED));
        return;
    }
    cJSON *json = NULL;
    if (req->nfields > 0) {
        const http_field *args = http_field_get(req, "args");
        const http_field *file = http_field_get(req, "file");
        if (!args) {
            api_error(res, LOOM_E_INVALID, "args: expected a multipart part named 'args' (dlicmd syntax)");
            return;
        }
        sub.args = args->data;
        if (file && file->len) {
            sub.archive = file->data;
            sub.archive_len = file->len;
            sub.archive_path = file->path; /* a file part: spooled, data is NULL */
        }
    } else {
        json = http_body_json(req, res);
        if (!json)
            return;
        cJSON *args = cJSON_GetObjectItemCaseSensitive(json, "args");
        if (!cJSON_IsString(args)) {
            cJSON_Delete(json);
            api_error(res, LOOM_E_INVALID, "args: expected a string in dlicmd syntax");
            return;
        }
        sub.args = args->valuestring;
    }
    char id[64];
    loom_error *e = args_fit(sub.args);
    if (!e)
        e = exec_submit(d->execs, &sub, id, sizeof id);
    cJSON_Delete(json);
    if (e)
        api_reply_error(res, e);
    else
        reply_exec(d, EXEC_ADMIN, id, 201, res);
}

static void list(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
    exec_view *v;
    size_t n;
    loom_error *e = exec_list(d->execs, OWNER(req), &v, &n);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, exec_json(&v[i]));
    exec_views_free(v, n);
    http_reply_json(res, 200, a);
}

static void view(void *ctx, const http_request *req, http_response *res)
{
    reply_exec(ctx, OWNER(req), req->params[0], 200, res);
}

/* GET .../log?worker=N&stream=stdout|stderr&offset=BYTES: the log from
 * offset on (at most 1 MiB); the client follows by asking again from
 * offset + length. */
static void log_chunk(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
    const char *w = http_query(req, "worker");
    const char *stream = http_query(req, "stream");
    const char *off = http_query(req, "offset");
    char *end;
    errno = 0;
    long worker = w ? strtol(w, &end, 10) : 0;
    if (w && (*end || end == w || errno || worker < -1 || worker > INT_MAX)) {
        api_error(res, LOOM_E_INVALID, "worker: expected a rank from -1 to %d, got \"%s\"", INT_MAX, w);
        return;
    }
    long long offset = off ? strtoll(off, &end, 10) : 0;
    if (off && (*end || end == off || errno || offset < 0)) {
        api_error(res, LOOM_E_INVALID, "offset: expected a byte offset from 0 to %lld, got \"%s\"",
                  LLONG_MAX, off);
        return;
    }
    char path[PATH_MAX];
    loom_error *e = exec_log_path(d->execs, OWNER(req), req->params[0], (int)worker,
                                  stream ? stream : "stdout", path, sizeof path);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    FILE *f = fopen(path, "rb");
    char *buf = malloc(LOG_CHUNK_MAX + 1);
    size_t n = 0;
    if (f && buf && fseeko(f, (off_t)offset, SEEK_SET) == 0)
        n = fread(buf, 1, LOG_CHUNK_MAX, f);
    if (f)
        fclose(f);
    if (!buf) {
        api_error(res, LOOM_E_INTERNAL, "out of memory");
        return;
    }
    http_reply_data(res, 200, "text/plain; charset=utf-8", buf, n);
}

static void stop(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
    loom_error *e = exec_stop(d->execs, OWNER(req), req->params[0]);
    if (e)
        api_reply_error(res, e);
    else
        reply_exec(d, OWNER(req), req->params[0], 200, res);
}

/* POST .../execs/{id}/resize {"workers": N} */
static void resize(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
    cJSON *body = http_body_json(req, res);
    if (!body)
        return;
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(body, "workers");
    if (!cJSON_IsNumber(w) || w->valuedouble != (double)(int)w->valuedouble) {
        cJSON_Delete(body);
        api_error(res, LOOM_E_INVALID, "workers: expected a whole number");
        return;
    }
    loom_error *e = exec_resize(d->execs, OWNER(req), req->params[0], (int)w->valuedouble);
    cJSON_Delete(body);
    if (e)
        api_reply_error(res, e);
    else
        reply_exec(d, OWNER(req), req->params[0], 200, res);
}

static void delete(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
    loom_error *e = exec_delete(d->execs, OWNER(req), req->params[0]);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "deleted", req->params[0]);
    http_reply_json(res, 200, o);
}

const http_route loom_exec_routes[] = {
    {"GET", LOOM_ROUTE_EXECS, list, HTTP_USER},
    {"POST", LOOM_ROUTE_EXECS, submit, HTTP_USER | HTTP_SLOW},
    {"GET", LOOM_ROUTE_EXECS "/{}", view, HTTP_USER},
    {"GET", LOOM_ROUTE_EXECS "/{}" LOOM_ROUTE_LOG, log_chunk, HTTP_USER},
    {"POST", LOOM_ROUTE_EXECS "/{}" LOOM_ROUTE_STOP, stop, HTTP_USER},
    {"POST", LOOM_ROUTE_EXECS "/{}" LOOM_ROUTE_RESIZE, resize, HTTP_USER},
    {"DELETE", LOOM_ROUTE_EXECS "/{}", delete, HTTP_USER | HTTP_SLOW},
};
const size_t loom_exec_route_count = sizeof loom_exec_routes / sizeof *loom_exec_routes;

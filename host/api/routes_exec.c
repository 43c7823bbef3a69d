/* api/routes_exec.c - WMLA's training routes under
 * /platform/rest/deeplearning/v1/execs: submit (multipart "args" + "file",
 * or JSON {"args": ...}), list, view, log, stop, delete. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/server.h"
#include "util/fs.h"

#define LOG_CHUNK_MAX ((size_t)1 << 20)

/* Users see their own execs; administrators see all. */
#define OWNER(req) ((req)->is_admin ? NULL : (req)->user)

static void submit(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
    exec_submission sub = {.user = req->user};
    cJSON *json = NULL;
    if (req->nfields > 0) {
        const http_field *args = http_field_get(req, "args");
        const http_field *file = http_field_get(req, "file");
        if (!args) {
            http_reply_error(res, 400, "args: expected a multipart part named 'args' (dlicmd syntax)");
            return;
        }
        sub.args = args->data;
        if (file && file->len) {
            sub.archive = file->data;
            sub.archive_len = file->len;
        }
    } else {
        json = http_body_json(req, res);
        if (!json)
            return;
        cJSON *args = cJSON_GetObjectItemCaseSensitive(json, "args");
        if (!cJSON_IsString(args)) {
            cJSON_Delete(json);
            http_reply_error(res, 400, "args: expected a string in dlicmd syntax");
            return;
        }
        sub.args = args->valuestring;
    }
    char id[64], err[1024];
    int status = exec_submit(d->execs, &sub, id, sizeof id, err, sizeof err);
    cJSON_Delete(json);
    if (status) {
        http_reply_error(res, status, "%s", err);
        return;
    }
    cJSON *o = exec_describe(d->execs, NULL, id);
    http_reply_json(res, 201, o);
}

static void list(void *ctx, const http_request *req, http_response *res)
{
    (void)req;
    loomd *d = ctx;
    http_reply_json(res, 200, exec_list(d->execs, OWNER(req)));
}

static void view(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
    cJSON *o = exec_describe(d->execs, OWNER(req), req->params[0]);
    if (!o) {
        http_reply_error(res, 404, "no exec \"%s\"", req->params[0]);
        return;
    }
    http_reply_json(res, 200, o);
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
    long worker = w ? strtol(w, &end, 10) : 0;
    if (w && (*end || end == w)) {
        http_reply_error(res, 400, "worker: expected a number, got \"%s\"", w);
        return;
    }
    long long offset = off ? strtoll(off, &end, 10) : 0;
    if (off && (*end || end == off || offset < 0)) {
        http_reply_error(res, 400, "offset: expected a byte offset, got \"%s\"", off);
        return;
    }
    char path[PATH_MAX], err[512];
    int status = exec_log_path(d->execs, OWNER(req), req->params[0], (int)worker, stream ? stream : "stdout",
                               path, sizeof path, err, sizeof err);
    if (status) {
        http_reply_error(res, status, "%s", err);
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
        http_reply_error(res, 500, "out of memory");
        return;
    }
    http_reply_data(res, 200, "text/plain; charset=utf-8", buf, n);
}

static void stop(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
    char err[512];
    int status = exec_stop(d->execs, OWNER(req), req->params[0], err, sizeof err);
    if (status) {
        http_reply_error(res, status, "%s", err);
        return;
    }
    http_reply_json(res, 200, exec_describe(d->execs, OWNER(req), req->params[0]));
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
        http_reply_error(res, 400, "workers: expected a whole number");
        return;
    }
    char err[512];
    int status = exec_resize(d->execs, OWNER(req), req->params[0], (int)w->valuedouble, err, sizeof err);
    cJSON_Delete(body);
    if (status) {
        http_reply_error(res, status, "%s", err);
        return;
    }
    http_reply_json(res, 200, exec_describe(d->execs, OWNER(req), req->params[0]));
}

static void delete(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
    char err[512];
    int status = exec_delete(d->execs, OWNER(req), req->params[0], err, sizeof err);
    if (status) {
        http_reply_error(res, status, "%s", err);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "deleted", req->params[0]);
    http_reply_json(res, 200, o);
}

const http_route loom_exec_routes[] = {
    {"GET", "/platform/rest/deeplearning/v1/execs", list, HTTP_USER},
    {"POST", "/platform/rest/deeplearning/v1/execs", submit, HTTP_USER},
    {"GET", "/platform/rest/deeplearning/v1/execs/{}", view, HTTP_USER},
    {"GET", "/platform/rest/deeplearning/v1/execs/{}/log", log_chunk, HTTP_USER},
    {"POST", "/platform/rest/deeplearning/v1/execs/{}/stop", stop, HTTP_USER},
    {"POST", "/platform/rest/deeplearning/v1/execs/{}/resize", resize, HTTP_USER},
    {"DELETE", "/platform/rest/deeplearning/v1/execs/{}", delete, HTTP_USER},
};
const size_t loom_exec_route_count = sizeof loom_exec_routes / sizeof *loom_exec_routes;

/* api/routes_exec.c - WMLA's training routes under
 * /platform/rest/deeplearning/v1/execs: submit (args in the query string,
 * a multipart "args" part or JSON {"args": ...}; the model as multipart
 * "file"; WMLA's sigName), list, view, log, result zip, stop, delete; and
 * WMLA's executor log route. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/routes.h"
#include "api/api.h"
#include "api/request_body.h"
#include "exec/dlicmd.h"
#include "util/tarball.h"
#include "util/fs.h"

#define LOG_CHUNK_MAX ((size_t)1 << 20)  /* a part of a log read with ?offset= */
#define LOG_WHOLE_MAX ((size_t)8 << 20)  /* a log read whole, or a tail */
#define LASTLINES_MAX 1000000
#define RESULT_ZIP_MAX ((size_t)256 << 20) /* a result folder's zip, held to send it */

/* Users see their own execs (by immutable id); administrators see all. */
#define OWNER(req) api_caller_id(ctx, req)

/* text's lines as an array of strings named `name` in o. */
static void add_lines(cJSON *o, const char *name, const char *text)
{
    cJSON *a = cJSON_AddArrayToObject(o, name);
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        char *line = n ? strndup(p, n) : NULL;
        if (line)
            cJSON_AddItemToArray(a, cJSON_CreateString(line));
        free(line);
        p += n + (p[n] == '\n');
    }
}

/* WMLA's field names for an exec. */
static cJSON *exec_json(exec_view *v)
{
    const store_exec *e = &v->rec;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", e->id);
    cJSON_AddStringToObject(o, "creator", e->user);
    cJSON_AddStringToObject(o, "framework", e->framework);
    cJSON_AddStringToObject(o, "args", e->args);
    cJSON_AddStringToObject(o, "state", exec_state_text(e->state));
    cJSON_AddStringToObject(o, "message", e->message);
    cJSON_AddNumberToObject(o, "numWorker", e->num_workers);
    if (e->plan[0])
        cJSON_AddStringToObject(o, "plan", e->plan);
    cJSON_AddStringToObject(o, "resultDir", e->result_dir);
    cJSON_AddNumberToObject(o, "createTime", (double)e->created_at);
    cJSON_AddNumberToObject(o, "startTime", (double)e->started_at);
    cJSON_AddNumberToObject(o, "endTime", (double)e->ended_at);
    if (v->python[0])
        cJSON_AddStringToObject(o, "python", v->python);
    if (v->warnings[0])
        add_lines(o, "warnings", v->warnings);
    if (v->has_limits) {
        cJSON *l = cJSON_AddObjectToObject(o, "limits");
        cJSON_AddNumberToObject(l, "processes", (double)v->limits.max_procs);
        cJSON_AddNumberToObject(l, "memoryBytes", (double)v->limits.max_memory_bytes);
        cJSON_AddBoolToObject(l, "memoryIsShare", v->limits.memory_is_share);
        cJSON_AddNumberToObject(l, "diskBytes", (double)v->limits.max_disk_bytes);
        /* The plan that set each, where one did (else the host's flag). */
        static const char *const from[SCHED_LIMITS] = {"processesPlan", "memoryPlan", "diskPlan"};
        for (int i = 0; i < SCHED_LIMITS; i++)
            if (v->limits.plan[i][0])
                cJSON_AddStringToObject(l, from[i], v->limits.plan[i]);
    }
    if (v->pending_reason[0])
        cJSON_AddStringToObject(o, "pendingReason", v->pending_reason);
    if (v->running && v->handover_ms >= 0) {
        cJSON *h = cJSON_AddObjectToObject(o, "handover");
        cJSON_AddNumberToObject(h, "ms", (double)v->handover_ms);
        if (v->handover_from[0])
            cJSON_AddStringToObject(h, "from", v->handover_from);
    }
    if (v->running) {
        /* How many workers it has now: an elastic exec runs on what the
         * scheduler grants, which may be fewer than numWorker. */
        if (e->state == EXEC_STATE_RUNNING)
            cJSON_AddNumberToObject(o, "workersNow", v->nslots);
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

/* The exec's JSON, naming the tuning task it is an experiment of (if
 * any): "hpoName" and "experimentId". */
static cJSON *exec_json_in(exec_view *v, const hpo_exec_task *tasks, size_t ntasks)
{
    cJSON *o = exec_json(v);
    const hpo_exec_task *t = hpo_exec_task_find(tasks, ntasks, v->rec.id);
    if (t) {
        cJSON_AddStringToObject(o, "hpoName", t->task);
        cJSON_AddNumberToObject(o, "experimentId", (double)t->experiment);
    }
    return o;
}

/* Replies with the exec as it now is (status 200 or 201). */
static void reply_exec(api_services *d, int64_t owner, const char *id, int status, http_response *res)
{
    exec_view v;
    loom_error *e = exec_describe(d->execs, owner, id, &v);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    hpo_exec_task *tasks = NULL;
    size_t ntasks = 0;
    loom_err_free(hpo_exec_tasks(d->hpo, &tasks, &ntasks)); /* without: no task named */
    http_reply_json(res, status, exec_json_in(&v, tasks, ntasks));
    free(tasks);
    exec_view_free(&v);
}

/* WMLA's sigName: the resource plan of that name when one exists ("NAME"
 * is the plan "/NAME"), else NULL with a warning. */
static const char *plan_of_sig(api_services *d, const char *sig, char *plan, size_t len, char *warn,
                               size_t wlen)
{
    snprintf(plan, len, "%s%s", sig[0] == '/' ? "" : "/", sig);
    sched_plan_view v;
    loom_error *e = sched_service_plan(d->sched, plan, &v);
    if (!e)
        return plan;
    loom_err_free(e);
    snprintf(warn, wlen, "sigName %.200s: no resource plan %.200s; the exec runs in your default "
                         "plan\n", sig, plan);
    return NULL;
}

/* The submission's arguments: the query string's args (WMLA's clients),
 * else the multipart part or the JSON body's. *json keeps the parsed body
 * the result points into. NULL after replying with the error. */
static const char *submission_args(const http_request *req, http_response *res, cJSON **json)
{
    const char *args = http_query(req, "args");
    if (args)
        return args;
    if (req->nfields > 0) {
        const http_field *f = http_field_get(req, "args");
        if (!f || f->path) {
            api_error(res, LOOM_E_INVALID, "args: expected ?args=... in the query string or a "
                                           "plain multipart part named 'args' (dlicmd syntax), "
                                           "not a file");
            return NULL;
        }
        return f->data ? f->data : ""; /* an empty part has no bytes */
    }
    *json = api_body_json(req, res);
    if (!*json)
        return NULL;
    cJSON *a = cJSON_GetObjectItemCaseSensitive(*json, "args");
    if (!cJSON_IsString(a)) {
        api_error(res, LOOM_E_INVALID, "args: expected a string in dlicmd syntax");
        return NULL;
    }
    return a->valuestring;
}

/* The plan a submission runs in, for WMLA's sigId. */
static void plan_named(const char *args, const char *user, char *out, size_t len)
{
    dlicmd d;
    loom_error *e = dlicmd_parse(args, &d);
    if (!e && d.consumer)
        snprintf(out, len, "%s", d.consumer);
    else
        snprintf(out, len, "/%s", user);
    loom_err_free(e);
    if (!e)
        dlicmd_free(&d);
}

/* The reply WMLA's clients read (id, sigId, submissionId) beside loom's
 * view of the exec and what the host did otherwise than asked. */
static void reply_submitted(api_services *d, const char *id, const char *args, const char *user,
                            const char *warnings, http_response *res)
{
    exec_view v;
    loom_error *e = exec_describe(d->execs, EXEC_ADMIN, id, &v);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *o = exec_json(&v);
    exec_view_free(&v);
    char plan[256];
    plan_named(args, user, plan, sizeof plan);
    cJSON_AddStringToObject(o, "sigId", plan);
    cJSON_AddStringToObject(o, "submissionId", id);
    cJSON *ws = cJSON_AddArrayToObject(o, "warnings");
    for (const char *p = warnings; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        char line[600];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        cJSON_AddItemToArray(ws, cJSON_CreateString(line));
        p += n + (nl ? 1 : 0);
    }
    http_reply_json(res, 201, o);
}

/* The user's dlicmd text as the structure exec_submit takes; text over
 * what an exec keeps is refused before it is parsed. */
static loom_error *parse_request(const char *args, dlicmd *out)
{
    memset(out, 0, sizeof *out);
    size_t n = strlen(args);
    if (n > EXEC_ARGS_MAX)
        return loom_err(LOOM_E_INVALID, "args: %zu bytes, longer than the limit of %zu", n,
                        EXEC_ARGS_MAX);
    return dlicmd_parse(args, out);
}

static void submit(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    exec_submission sub = {.user = req->user, .is_admin = req->is_admin};
    loom_error *who = auth_user_id(d->auth, req->user, &sub.user_id);
    if (who) { /* removed since its token was checked */
        api_reply_error(res, loom_err_recode(who, LOOM_E_UNAUTHENTICATED));
        return;
    }
    cJSON *json = NULL;
    const char *args = submission_args(req, res, &json);
    if (!args) {
        cJSON_Delete(json);
        return;
    }
    char warnings[2048] = "", plan[300], *with_plan = NULL;
    sub.args = args;
    const http_field *file = http_field_get(req, "file");
    if (file && file->len) {
        sub.archive = file->data;
        sub.archive_len = file->len;
        sub.archive_path = file->path; /* a file part: spooled, data is NULL */
    }
    const char *sig = http_query(req, "sigName");
    if (sig && *sig &&
        plan_of_sig(d, sig, plan, sizeof plan, warnings, sizeof warnings) &&
        asprintf(&with_plan, "--consumer '%s' %s", plan, args) > 0)
        sub.args = with_plan;
    sub.warnings = warnings; /* the sigName warning first, kept */
    sub.warnings_len = sizeof warnings;
    char id[64];
    dlicmd request;
    loom_error *e = parse_request(args, &request);
    sub.request = &request;
    if (!e && with_plan) { /* what the stored words say too */
        free(request.consumer);
        request.consumer = NULL;
        if (strlen(plan) > DLICMD_CONSUMER_MAX)
            e = loom_err(LOOM_E_INVALID, "sigName %s: its plan %s is longer than %d bytes", sig,
                         plan, DLICMD_CONSUMER_MAX);
        else if (!(request.consumer = strdup(plan)))
            e = loom_err(LOOM_E_INTERNAL, "out of memory");
        if (e)
            dlicmd_free(&request);
    }
    if (!e) {
        e = exec_submit(d->execs, &sub, id, sizeof id);
        dlicmd_free(&request);
    }
    if (e && with_plan && loom_err_code(e) == LOOM_E_FORBIDDEN) {
        /* A plan the user may not use is ignored, as WMLA's clients expect. */
        loom_err_free(e);
        snprintf(warnings, sizeof warnings, "sigName %.200s: you are not a member of the resource "
                                            "plan %.200s; the exec runs in your default plan\n",
                 sig, plan);
        sub.args = args;
        if (!(e = parse_request(args, &request))) {
            e = exec_submit(d->execs, &sub, id, sizeof id);
            dlicmd_free(&request);
        }
    }
    if (e)
        api_reply_error(res, e);
    else
        reply_submitted(d, id, sub.args, req->user, warnings, res);
    free(with_plan);
    cJSON_Delete(json);
}

static void list(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    exec_view *v;
    size_t n;
    loom_error *e = exec_list(d->execs, OWNER(req), &v, &n);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    hpo_exec_task *tasks = NULL;
    size_t ntasks = 0;
    loom_err_free(hpo_exec_tasks(d->hpo, &tasks, &ntasks)); /* without: no task named */
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, exec_json_in(&v[i], tasks, ntasks));
    free(tasks);
    exec_views_free(v, n);
    http_reply_json(res, 200, a);
}

static void view(void *ctx, const http_request *req, http_response *res)
{
    reply_exec(ctx, OWNER(req), req->params[0], 200, res);
}

/* Opens the exec's log file: ?worker=N&stream=S, or by default the
 * training driver's log for an elastic exec and worker 0's stdout
 * otherwise. Through exec_log_open: a link there is refused, not followed. */
static loom_error *log_file(api_services *d, const http_request *req, int *fd)
{
    int64_t owner = api_caller_id(d, req);
    const char *w = http_query(req, "worker");
    const char *stream = http_query(req, "stream");
    char *end;
    errno = 0;
    long worker = w ? strtol(w, &end, 10) : 0;
    if (w && (*end || end == w || errno || worker < -1 || worker > INT_MAX))
        return loom_err(LOOM_E_INVALID, "worker: expected a rank from -1 to %d, got \"%.64s\"",
                        INT_MAX, w);
    if (!w) {
        loom_error *e = exec_log_open(d->execs, owner, req->params[0], -1,
                                      stream ? stream : "stdout", fd);
        if (loom_err_code(e) != LOOM_E_NOT_FOUND)
            return e;
        loom_err_free(e);
    }
    return exec_log_open(d->execs, owner, req->params[0], (int)worker,
                         stream ? stream : "stdout", fd);
}

/* Reads up to `max` bytes of the open file fd from `offset` into a
 * malloc'd buffer; closes fd. */
static loom_error *read_part(int fd, long long offset, size_t max, char **out, size_t *n)
{
    *out = malloc(max + 1);
    *n = 0;
    while (*out && *n < max) {
        ssize_t r = pread(fd, *out + *n, max - *n, (off_t)offset + (off_t)*n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        *n += (size_t)r;
    }
    close(fd);
    if (!*out)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    (*out)[*n] = 0;
    return NULL;
}

/* The size of the open file fd (0 when fstat fails). */
static long long file_size(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? (long long)st.st_size : 0;
}

/* GET .../log[?worker=N&stream=stdout|stderr][&offset=BYTES]: without
 * offset the whole log (at most LOG_WHOLE_MAX; a larger one is refused,
 * naming the paging), with it the part from offset on (at most 1 MiB; the
 * client follows from offset + length). `Accept: application/json` gets
 * the text as one JSON string (WMLA's clients read r.json()), anything
 * else text/plain. */
static void log_chunk(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const char *off = http_query(req, "offset");
    const char *accept = http_header(req, "Accept");
    char *end;
    errno = 0;
    long long offset = off ? strtoll(off, &end, 10) : 0;
    if (off && (*end || end == off || errno || offset < 0)) {
        api_error(res, LOOM_E_INVALID, "offset: expected a byte offset from 0 to %lld, got \"%.64s\"",
                  LLONG_MAX, off);
        return;
    }
    int fd = -1;
    loom_error *e = log_file(d, req, &fd);
    long long size = e ? 0 : file_size(fd);
    if (!e && !off && size > (long long)LOG_WHOLE_MAX)
        e = loom_err(LOOM_E_TOO_LARGE, "the log is %lld bytes, more than the %zu a reply holds "
                                       "whole: read it in parts with ?offset=0, then offset plus "
                                       "the length of each part", size, LOG_WHOLE_MAX);
    char *buf = NULL;
    size_t n = 0;
    if (!e)
        e = read_part(fd, offset, off ? LOG_CHUNK_MAX : LOG_WHOLE_MAX, &buf, &n);
    else if (fd >= 0)
        close(fd);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    if (accept && strstr(accept, "application/json")) {
        cJSON *text = cJSON_CreateString(buf);
        free(buf);
        http_reply_json(res, 200, text);
        return;
    }
    http_reply_data(res, 200, "text/plain; charset=utf-8", buf, n);
}

/* GET .../execs/{id}/result: a zip of RESULT_DIR without the submitted
 * code, the job's tmp/ and the host's own files, links left out, its exact size in Content-Disposition's size= (WMLA's clients
 * read it to check the download). */
static void result(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    exec_view v;
    loom_error *e = exec_describe(d->execs, OWNER(req), req->params[0], &v);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    char dir[sizeof v.rec.result_dir];
    snprintf(dir, sizeof dir, "%s", v.rec.result_dir);
    exec_view_free(&v);
    char *zip = NULL;
    size_t n = 0;
    e = tarball_zip_tree(dir, exec_result_leaves_out, NULL, RESULT_ZIP_MAX, &zip, &n);
    if (e) {
        api_reply_error(res, loom_err_wrap(e, "result of %s", req->params[0]));
        return;
    }
    http_reply_data(res, 200, "application/zip", zip, n);
    snprintf(res->disposition, sizeof res->disposition,
             "attachment; filename=\"%.200s.zip\"; size=%zu", req->params[0], n);
}

/* The start of the last `lines` lines of buf[0..n) (a final newline ends
 * the last line, it does not start another). */
static size_t tail_start(const char *buf, size_t n, long lines)
{
    size_t i = n;
    if (i > 0 && buf[i - 1] == '\n')
        i--;
    while (i > 0) {
        if (buf[i - 1] == '\n' && --lines == 0)
            return i;
        i--;
    }
    return 0;
}

/* GET .../scheduler/applications/{id}/executor/{n}/logs/{stdout|stderr}
 * [?lastlines=N]: WMLA's executor n is worker n - 1. */
static void executor_log(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const char *ex = req->params[1], *stream = req->params[2];
    const char *last = http_query(req, "lastlines");
    char *end;
    long executor = strtol(ex, &end, 10);
    if (*end || end == ex || executor < 1 || executor > 1024) {
        api_error(res, LOOM_E_INVALID, "executor: expected 1 to 1024 (1 is the first worker), "
                                       "got \"%.64s\"", ex);
        return;
    }
    long lines = last ? strtol(last, &end, 10) : 0;
    if (last && (*end || end == last || lines < 1 || lines > LASTLINES_MAX)) {
        api_error(res, LOOM_E_INVALID, "lastlines: expected 1 to %d, got \"%.64s\"", LASTLINES_MAX,
                  last);
        return;
    }
    int fd = -1;
    loom_error *e = exec_log_open(d->execs, OWNER(req), req->params[0], (int)executor - 1, stream,
                                  &fd);
    long long size = e ? 0 : file_size(fd);
    long long from = size > (long long)LOG_WHOLE_MAX ? size - (long long)LOG_WHOLE_MAX : 0;
    if (!e && !last && from > 0)
        e = loom_err(LOOM_E_TOO_LARGE, "the log is %lld bytes: ask for its tail with ?lastlines=N "
                                       "or read it with .../execs/{id}/log?offset=", size);
    char *buf = NULL;
    size_t n = 0;
    if (!e)
        e = read_part(fd, from, LOG_WHOLE_MAX, &buf, &n);
    else if (fd >= 0)
        close(fd);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    size_t at = lines ? tail_start(buf, n, lines) : 0;
    memmove(buf, buf + at, n - at + 1);
    http_reply_data(res, 200, "text/plain; charset=utf-8", buf, n - at);
}

static void stop(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    loom_error *e = exec_stop(d->execs, OWNER(req), req->params[0]);
    if (e)
        api_reply_error(res, e);
    else
        reply_exec(d, OWNER(req), req->params[0], 200, res);
}

/* POST .../execs/{id}/resize {"workers": N} */
static void resize(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    cJSON *body = api_body_json(req, res);
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
    api_services *d = ctx;
    loom_error *e = exec_delete(d->execs, OWNER(req), req->params[0]);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "deleted", req->params[0]);
    http_reply_json(res, 200, o);
}

/* Every exec route runs on the work queue: a submission unpacks an archive,
 * a delete removes a folder, and the rest wait on the exec service's lock,
 * which a launch holds; none of it may hold a server thread. */
const http_route loom_exec_routes[] = {
    {"GET", LOOM_ROUTE_EXECS, list, HTTP_USER | HTTP_SLOW},
    {"POST", LOOM_ROUTE_EXECS, submit, HTTP_USER | HTTP_SLOW},
    {"GET", LOOM_ROUTE_EXECS "/{}", view, HTTP_USER | HTTP_SLOW},
    {"GET", LOOM_ROUTE_EXECS "/{}" LOOM_ROUTE_LOG, log_chunk, HTTP_USER | HTTP_SLOW},
    {"GET", LOOM_ROUTE_EXECS "/{}" LOOM_ROUTE_RESULT, result, HTTP_USER | HTTP_SLOW},
    {"GET", LOOM_ROUTE_EXECUTOR_LOG, executor_log, HTTP_USER | HTTP_SLOW},
    {"POST", LOOM_ROUTE_EXECS "/{}" LOOM_ROUTE_STOP, stop, HTTP_USER | HTTP_SLOW},
    {"POST", LOOM_ROUTE_EXECS "/{}" LOOM_ROUTE_RESIZE, resize, HTTP_USER | HTTP_SLOW},
    {"DELETE", LOOM_ROUTE_EXECS "/{}", delete, HTTP_USER | HTTP_SLOW},
};
const size_t loom_exec_route_count = sizeof loom_exec_routes / sizeof *loom_exec_routes;

/* api/routes_infer.c - dlim's model services under /dlim/v1: deploy (a
 * multipart upload of the model directory as a tar or a zip, "file", and an
 * optional "profile"), list, view, start, stop, the profile, undeploy, and
 * POST /dlim/v1/inference/{name}, whose body goes to the kernel as it is.
 * An inference request waits for its batch without holding a server
 * thread: the connection is suspended (http_defer) and answered from the
 * model service's thread. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/routes.h"
#include "api/api.h"
#include "api/request_body.h"
#include "util/fs.h"
#include "infer/model_spec.h"
#include "util/tarball.h"
#include "util/user_tree.h"

/* A model directory unpacked, at most. */
#define MODEL_UNPACKED_MAX ((uint64_t)1 << 30)

/* Users see their own models; administrators see all. */
#define OWNER(req) ((req)->is_admin ? NULL : (req)->user)

static int flag_set(const http_request *req, const char *key)
{
    const char *v = http_query(req, key);
    return v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0);
}

static cJSON *parsed_or_string(const char *text)
{
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    return j ? j : cJSON_CreateString(text ? text : "");
}

static cJSON *view_json(const infer_model_view *v, int with_profile)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", v->name);
    cJSON_AddStringToObject(o, "owner", v->owner);
    cJSON_AddStringToObject(o, "tag", v->tag);
    cJSON_AddStringToObject(o, "runtime", v->runtime);
    cJSON_AddStringToObject(o, "state", model_state_text(v->state));
    cJSON_AddNumberToObject(o, "createTime", (double)v->created_at);
    cJSON *k = cJSON_AddObjectToObject(o, "kernels");
    cJSON_AddNumberToObject(k, "running", v->stats.instances);
    cJSON_AddNumberToObject(k, "target", v->stats.target);
    cJSON_AddNumberToObject(k, "busy", v->stats.busy);
    cJSON_AddNumberToObject(k, "restarts", (double)v->stats.restarts);
    cJSON *r = cJSON_AddObjectToObject(o, "requests");
    cJSON_AddNumberToObject(r, "queued", (double)v->stats.queued);
    cJSON_AddNumberToObject(r, "served", (double)v->stats.served);
    cJSON_AddNumberToObject(r, "failed", (double)v->stats.failed);
    if (v->pending_reason[0])
        cJSON_AddStringToObject(o, "pendingReason", v->pending_reason);
    if (v->stats.last_error[0])
        cJSON_AddStringToObject(o, "lastError", v->stats.last_error);
    cJSON_AddItemToObject(o, "model", parsed_or_string(v->model_json));
    if (with_profile)
        cJSON_AddItemToObject(o, "profile", parsed_or_string(v->profile_json));
    return o;
}

static void reply_view(api_services *d, const http_request *req, const char *name, int status,
                       http_response *res)
{
    infer_model_view v;
    loom_error *e = infer_view(d->infer, OWNER(req), name, &v);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    http_reply_json(res, status, view_json(&v, 1));
    infer_model_view_clear(&v);
}

static void list_models(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    infer_model_view *views;
    size_t n;
    loom_error *e = infer_list(d->infer, OWNER(req), &views, &n);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        cJSON_AddItemToArray(a, view_json(&views[i], 0));
        infer_model_view_clear(&views[i]);
    }
    free(views);
    http_reply_json(res, 200, a);
}

/* The model directory for a model the trainer wrote: its weights and spec
 * from RESULT_DIR/model/, and a model.json for the native kernel. */
static loom_error *stage_from_exec(api_services *d, const http_request *req, const char *exec_id,
                                   const char *name, const char *staged)
{
    exec_view v;
    loom_error *e = exec_describe(d->execs, api_caller_id(d, req), exec_id, &v);
    if (e)
        return loom_err_wrap(e, "fromExec");
    char src[64], dst[PATH_MAX + 64];
    const char *files[] = {"model.safetensors", "edt.json"};
    for (int i = 0; !e && i < 2; i++) {
        /* The exec folder is the job's: copied from beneath it, following
         * no link it planted (util/user_tree). */
        snprintf(src, sizeof src, "model/%s", files[i]);
        e = utree_copy_file_in(v.rec.result_dir, src, staged, files[i], 0644);
        if (loom_err_code(e) == LOOM_E_NOT_FOUND) {
            loom_err_free(e);
            e = loom_err(LOOM_E_NOT_FOUND, "fromExec: exec %s has no %s (state %s): only a "
                         "finished training exec of the native framework leaves a model",
                         exec_id, src, exec_state_text(v.rec.state));
        } else if (e) {
            e = loom_err_wrap(e, "fromExec: exec %s", exec_id);
        }
    }
    exec_view_free(&v);
    if (e)
        return e;
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "tag", exec_id);
    cJSON_AddStringToObject(m, "runtime", "native");
    cJSON_AddStringToObject(m, "weight_path", "model.safetensors");
    cJSON_AddStringToObject(m, "schema_version", "1");
    cJSON *attrs = cJSON_AddArrayToObject(m, "attributes");
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "key", "model_spec");
    cJSON_AddStringToObject(a, "value", "edt.json");
    cJSON_AddItemToArray(attrs, a);
    /* One BLAS thread per instance: instances, not BLAS pools, share the
     * cores (two pools on two cores fight). */
    cJSON *envs = cJSON_AddArrayToObject(m, "mk_environments");
    cJSON *env = cJSON_CreateObject();
    cJSON_AddStringToObject(env, "name", "OPENBLAS_NUM_THREADS");
    cJSON_AddStringToObject(env, "value", "1");
    cJSON_AddItemToArray(envs, env);
    char *text = cJSON_Print(m);
    cJSON_Delete(m);
    snprintf(dst, sizeof dst, "%s/model.json", staged);
    e = text ? fs_write_file_atomic(dst, text, strlen(text), 0644)
             : loom_err(LOOM_E_INTERNAL, "cannot write %s: out of memory", dst);
    free(text);
    return e;
}

/* POST /dlim/v1/model with {"fromExec": ID, "name": NAME, "profile": {...}}. */
static void deploy_exec_model(api_services *d, const http_request *req, http_response *res)
{
    cJSON *j = api_body_json(req, res);
    if (!j)
        return;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "fromExec");
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(j, "name");
    const cJSON *pf = cJSON_GetObjectItemCaseSensitive(j, "profile");
    char name[64];
    if (!cJSON_IsString(id) || (nm && !cJSON_IsString(nm))) {
        cJSON_Delete(j);
        api_error(res, LOOM_E_INVALID, "expected {\"fromExec\": EXEC_ID, \"name\": MODEL_NAME} "
                  "(or a multipart upload of a model directory)");
        return;
    }
    snprintf(name, sizeof name, "%s", nm ? nm->valuestring : id->valuestring);
    static atomic_uint seq;
    char staged[PATH_MAX];
    snprintf(staged, sizeof staged, "%s/models/.staged-exec-%ld-%u", d->files, (long)getpid(),
             atomic_fetch_add(&seq, 1));
    char *profile = pf ? cJSON_PrintUnformatted(pf) : NULL;
    loom_error *e = fs_rm_rf(staged);
    if (!e)
        e = fs_mkdir_p(staged);
    e = loom_err_recode(e, LOOM_E_INTERNAL);
    if (!e)
        e = stage_from_exec(d, req, id->valuestring, name, staged);
    char deployed[64] = "";
    if (!e)
        e = infer_deploy(d->infer, req->user, staged, profile, deployed, sizeof deployed);
    loom_err_free(fs_rm_rf(staged)); /* best effort: a leftover costs only space */
    free(profile);
    cJSON_Delete(j);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    reply_view(d, req, deployed, 201, res);
}

/* The model directory in an unpacked archive: its top, or, when the top has
 * no model.json but one folder alone (a zip of the folder, as a file
 * manager or a browser's user makes it), that folder. */
static void model_dir_in(const char *staged, char *out, size_t size)
{
    snprintf(out, size, "%s", staged);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/model.json", staged);
    if (fs_is_file(path))
        return;
    DIR *dir = opendir(staged);
    if (!dir)
        return;
    char only[256] = "";
    int entries = 0;
    for (struct dirent *de; entries < 2 && (de = readdir(dir));)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 && ++entries == 1)
            snprintf(only, sizeof only, "%s", de->d_name);
    closedir(dir);
    struct stat st;
    if (entries == 1 && (size_t)snprintf(path, sizeof path, "%s/%s", staged, only) < sizeof path &&
        lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
        snprintf(out, size, "%s", path);
}

static void deploy_model(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    if (req->nfields == 0) {
        deploy_exec_model(d, req, res);
        return;
    }
    const http_field *file = http_field_get(req, "file");
    const http_field *profile = http_field_get(req, "profile");
    if (!file || file->len == 0) {
        api_error(res, LOOM_E_INVALID, "file: expected the model directory as a tar or zip "
                  "archive in a multipart part named 'file' (loom model deploy -p DIR)");
        return;
    }
    static atomic_uint seq;
    char staged[PATH_MAX];
    snprintf(staged, sizeof staged, "%s/models/.staged-%ld-%u", d->files, (long)getpid(),
             atomic_fetch_add(&seq, 1));
    loom_error *e = fs_rm_rf(staged);
    if (!e)
        e = fs_mkdir_p(staged);
    e = loom_err_recode(e, LOOM_E_INTERNAL);
    if (!e)
        e = loom_err_wrap(file->path ? tarball_unpack_file(file->path, staged, MODEL_UNPACKED_MAX)
                                     : tarball_unpack(file->data, file->len, staged,
                                                      MODEL_UNPACKED_MAX),
                          "file");
    char *profile_text = profile ? http_field_load(profile, MODEL_JSON_MAX) : NULL;
    if (!e && profile && !profile_text)
        e = loom_err(LOOM_E_TOO_LARGE, "profile: larger than %zu bytes", MODEL_JSON_MAX);
    char name[64] = "", model_dir[PATH_MAX];
    model_dir_in(staged, model_dir, sizeof model_dir);
    if (!e)
        e = infer_deploy(d->infer, req->user, model_dir, profile_text, name, sizeof name);
    free(profile_text);
    loom_err_free(fs_rm_rf(staged)); /* best effort: a leftover costs only space */
    if (e) {
        api_reply_error(res, e);
        return;
    }
    reply_view(d, req, name, 201, res);
}

static void view_model(void *ctx, const http_request *req, http_response *res)
{
    reply_view(ctx, req, req->params[0], 200, res);
}

static void undeploy_model(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    loom_error *e = infer_undeploy(d->infer, OWNER(req), req->params[0], flag_set(req, "force"));
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", req->params[0]);
    cJSON_AddStringToObject(o, "state", "undeployed");
    http_reply_json(res, 200, o);
}

static void start_model(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    loom_error *e = infer_start(d->infer, OWNER(req), req->params[0]);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    reply_view(d, req, req->params[0], 200, res);
}

static void stop_model(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    loom_error *e = infer_stop(d->infer, OWNER(req), req->params[0], flag_set(req, "force"));
    if (e) {
        api_reply_error(res, e);
        return;
    }
    reply_view(d, req, req->params[0], 200, res);
}

static void get_profile(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    infer_model_view v;
    loom_error *e = infer_view(d->infer, OWNER(req), req->params[0], &v);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    http_reply_json(res, 200, parsed_or_string(v.profile_json));
    infer_model_view_clear(&v);
}

static void put_profile(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    loom_error *e = infer_set_profile(d->infer, OWNER(req), req->params[0], req->body);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    get_profile(ctx, req, res);
}

/* A kernel's error body is its message: plain text, or a JSON object whose
 * "error" string is taken (the built-in kernels answer so), so the reply's
 * "error" is never JSON inside a string. */
static void kernel_error(http_response *res, const model_service_answer *a)
{
    enum { MESSAGE_MAX = 2000 }; /* a longer one is cut, and says so */
    cJSON *json = a->len && a->body[0] == '{' ? cJSON_ParseWithLength(a->body, a->len) : NULL;
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(json, "error");
    const char *text = cJSON_IsString(error) ? error->valuestring : a->body ? a->body : "";
    size_t len = cJSON_IsString(error) ? strlen(text) : a->len;
    if (len > MESSAGE_MAX)
        api_error(res, a->status, "%.*s... (%zu bytes in all)", MESSAGE_MAX, text, len);
    else
        api_error(res, a->status, "%.*s", (int)len, text);
    cJSON_Delete(json);
}

/* The model service's answer becomes the suspended connection's reply. */
static void inference_done(void *ctx, const model_service_answer *a)
{
    http_pending *p = ctx;
    http_response res = {0};
    if (a->status != 0) {
        kernel_error(&res, a);
    } else {
        char *body = malloc(a->len ? a->len : 1);
        if (!body) {
            api_error(&res, LOOM_E_INTERNAL, "out of memory");
        } else {
            memcpy(body, a->body, a->len);
            http_reply_data(&res, 200, a->content_type[0] ? a->content_type : "application/json",
                            body, a->len);
        }
    }
    http_pending_reply(p, &res);
}

void api_inference(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    (void)res; /* the reply goes through http_pending_reply */
    /* Deferred first: the answer may come before infer_request returns. */
    http_pending *p = http_defer(req);
    loom_error *e = infer_request(d->infer, OWNER(req), req->params[0], req->body, req->body_len,
                                  inference_done, p);
    if (e) {
        http_response now = {0};
        api_reply_error(&now, e);
        http_pending_reply(p, &now);
    }
}

const http_route loom_infer_routes[] = {
    {"GET", LOOM_ROUTE_MODELS, list_models, HTTP_USER},
    /* Unpacking a model, or waiting for its kernels to load or stop, is
     * slow: those run off the server's threads. */
    {"POST", LOOM_ROUTE_MODELS, deploy_model, HTTP_USER | HTTP_SLOW},
    {"GET", LOOM_ROUTE_DEPLOYMENTS, list_models, HTTP_USER},
    {"GET", LOOM_ROUTE_MODELS "/{}", view_model, HTTP_USER},
    {"DELETE", LOOM_ROUTE_MODELS "/{}", undeploy_model, HTTP_USER | HTTP_SLOW},
    {"POST", LOOM_ROUTE_MODELS "/{}" LOOM_ROUTE_OP_START, start_model, HTTP_USER | HTTP_SLOW},
    {"POST", LOOM_ROUTE_MODELS "/{}" LOOM_ROUTE_OP_STOP, stop_model, HTTP_USER | HTTP_SLOW},
    {"GET", LOOM_ROUTE_MODELS "/{}" LOOM_ROUTE_APPPROFILE, get_profile, HTTP_USER},
    {"PUT", LOOM_ROUTE_MODELS "/{}" LOOM_ROUTE_APPPROFILE, put_profile, HTTP_USER},
    {"POST", LOOM_ROUTE_INFERENCE "/{}", api_inference, HTTP_USER},
};
const size_t loom_infer_route_count = sizeof loom_infer_routes / sizeof *loom_infer_routes;

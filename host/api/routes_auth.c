/* api/routes_auth.c - who is asking, and logging on over REST: bearer
 * tokens (three header spellings) or Basic credentials on any route; a
 * token for Basic credentials, an API key or dlim's userpasswd (WMLA's
 * /auth/v1/logon and dlim's /dlim/v1/auth/token); WMLA's conductor log-on;
 * logging off, users (admin), API keys (self). The transport extracts the
 * credentials (http/credentials.h); the auth service checks them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/routes.h"
#include "api/api.h"
#include "api/request_body.h"
#include "http/credentials.h"
#include "util/fs.h"
#include "util/log.h"

/* The credentials' name and password and the auth service's buffers are
 * the same size, so nothing extracted is cut short on its way. */
_Static_assert(HTTP_CRED_USER_MAX == AUTH_NAME_MAX, "user names: one size");
_Static_assert(HTTP_CRED_PASSWORD_MAX == AUTH_PASSWORD_MAX_LEN + 1, "passwords: one size");

static const char *client_of(const http_request *req)
{
    return req->peer[0] ? req->peer : "local";
}

/* Passwords may travel in the clear only where nobody can listen: over
 * HTTPS, on a loopback listener, from a loopback peer, or when the host
 * was started with --allow-basic-over-http. */
static int password_may_travel(const api_services *d, const http_request *req)
{
    return d->basic_over_http_allowed || strncmp(client_of(req), "127.", 4) == 0 ||
           strcmp(client_of(req), "local") == 0;
}

static loom_error *password_refused_here(void)
{
    return loom_err(LOOM_E_FORBIDDEN,
                    "a password over plain HTTP on a non-loopback listener is refused: use HTTPS "
                    "(loom serve --tls-cert/--tls-key), or start the host with "
                    "--allow-basic-over-http");
}

/* The log-on routes check their own credentials once, so that a wrong
 * password counts once against the limiter. */
static int is_logon_path(const char *path)
{
    static const char *const logons[] = {LOOM_ROUTE_LOGON, LOOM_ROUTE_DLIM_TOKEN,
                                         LOOM_ROUTE_CONDUCTOR_LOGON};
    for (size_t i = 0; i < sizeof logons / sizeof *logons; i++) {
        size_t n = strlen(logons[i]);
        if (strncmp(path, logons[i], n) == 0 && (path[n] == 0 || strcmp(path + n, "/") == 0))
            return 1;
    }
    return 0;
}

/* Basic credentials sent with the request itself (WMLA's notebooks send
 * them on every call). */
static int basic_identity(api_services *d, const http_request *req, const http_credentials *cred,
                          auth_identity *who, loom_error **why)
{
    loom_error *e = NULL;
    if (!password_may_travel(d, req)) {
        log_warn("refused Basic credentials over plain HTTP from %s (see --allow-basic-over-http)",
                 client_of(req));
        e = password_refused_here();
    }
    if (!e)
        e = auth_check_basic(d->auth, client_of(req), cred->user, cred->password, time_now_ms(),
                             who);
    if (e) {
        /* Wrong credentials stay a plain 401; a refusal says why. */
        if (loom_err_code(e) == LOOM_E_UNAUTHENTICATED)
            loom_err_free(e);
        else
            *why = e;
        return -1;
    }
    return 0;
}

/* POST /dlim/v1/inference/{name} and POST /v2/models/{name}/infer: what
 * an inference-scoped key may call. */
static int inference_call(const http_request *req)
{
    if (strcmp(req->method, "POST") != 0)
        return 0;
    size_t n = strlen(LOOM_ROUTE_INFERENCE "/");
    if (strncmp(req->path, LOOM_ROUTE_INFERENCE "/", n) == 0)
        return req->path[n] && !strchr(req->path + n, '/');
    n = strlen(LOOM_ROUTE_V2_MODELS "/");
    if (strncmp(req->path, LOOM_ROUTE_V2_MODELS "/", n) != 0)
        return 0;
    const char *name = req->path + n, *slash = strchr(name, '/');
    return slash && slash > name && strcmp(slash, LOOM_ROUTE_V2_INFER) == 0;
}

int api_authenticate(void *ctx, const http_request *req, char *user, size_t userlen,
                       int *is_admin, loom_error **why)
{
    api_services *d = ctx;
    auth_identity who;
    http_credentials cred;
    loom_error *malformed = http_credentials_of(req, &cred);
    int known;
    if (cred.has_token) {
        known = loom_err_take(auth_check_token(d->auth, cred.token, time_now_ms(), &who), NULL,
                              0) == LOOM_OK;
    } else if (malformed && !is_logon_path(req->path)) {
        *why = malformed; /* a malformed Authorization: Basic says what is wrong */
        malformed = NULL;
        known = 0;
    } else if (cred.has_basic && !is_logon_path(req->path)) {
        known = basic_identity(d, req, &cred, &who, why) == 0;
    } else if (cred.has_cookie) {
        known = api_console_identity(d, req, cred.cookie, &who, why) == 0;
    } else {
        known = 0;
    }
    loom_err_free(malformed);
    http_credentials_clear(&cred);
    if (!known) {
        if (!*why)
            *why = loom_err(LOOM_E_UNAUTHENTICATED,
                            "authentication required: log on with POST " LOOM_ROUTE_LOGON " "
                            "(Authorization: Basic) and send Authorization: Bearer TOKEN, or "
                            "send Authorization: Basic with every request");
        return -1;
    }
    if (strcmp(who.scope, AUTH_SCOPE_INFERENCE) == 0) {
        /* A key for an inference client: its own models' inference, as the
         * user and never as an administrator, and nothing else. */
        if (!inference_call(req)) {
            *why = loom_err(LOOM_E_FORBIDDEN, "this token comes from an API key of scope \""
                            AUTH_SCOPE_INFERENCE "\": it may call only POST "
                            LOOM_ROUTE_INFERENCE "/{name} and POST " LOOM_ROUTE_V2_MODELS
                            "/{name}" LOOM_ROUTE_V2_INFER ", not %s %s", req->method, req->path);
            return -1;
        }
        snprintf(user, userlen, "%s", who.user);
        *is_admin = 0;
        return 0;
    }
    snprintf(user, userlen, "%s", who.user);
    *is_admin = strcmp(who.role, "admin") == 0;
    return 0;
}

int64_t api_caller_id(api_services *d, const http_request *req)
{
    if (req->is_admin)
        return EXEC_ADMIN;
    int64_t id = -1;
    return loom_err_take(auth_user_id(d->auth, req->user, &id), NULL, 0) == LOOM_OK ? id : -1;
}

loom_error *api_logon_password(api_services *d, const http_request *req, const char *user,
                               const char *password, char *token, size_t tlen, int64_t *expires)
{
    if (!password_may_travel(d, req))
        return password_refused_here();
    return auth_logon_password(d->auth, client_of(req), user, password, time_now_ms(), token, tlen,
                               expires);
}

/* dlim's {"method": "password", "userpasswd": base64("user:password")}. */
static loom_error *userpasswd_of(const cJSON *body, char *user, size_t ulen, char *password,
                                 size_t plen)
{
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(body, "method");
    const cJSON *up = cJSON_GetObjectItemCaseSensitive(body, "userpasswd");
    if (method && (!cJSON_IsString(method) || strcmp(method->valuestring, "password") != 0))
        return loom_err(LOOM_E_INVALID, "method: expected \"password\" (with userpasswd)");
    if (!cJSON_IsString(up))
        return loom_err(LOOM_E_INVALID, "userpasswd: expected a string, base64 of user:password");
    char header[2 * AUTH_PASSWORD_MAX_LEN];
    if ((size_t)snprintf(header, sizeof header, "Basic %s", up->valuestring) >= sizeof header)
        return loom_err(LOOM_E_INVALID, "userpasswd: longer than %zu characters", sizeof header - 7);
    loom_error *e = http_parse_basic(header, user, ulen, password, plen);
    explicit_bzero(header, sizeof header);
    return e ? loom_err_wrap(e, "userpasswd") : NULL;
}

/* A log-on from the body: {"apikey": ...} or dlim's userpasswd. */
static loom_error *logon_with_body(api_services *d, const http_request *req, const cJSON *body,
                                   char *token, size_t tlen, int64_t *expires)
{
    const cJSON *key = cJSON_GetObjectItemCaseSensitive(body, "apikey");
    if (cJSON_IsString(key))
        return auth_logon_apikey(d->auth, client_of(req), key->valuestring, time_now_ms(), token,
                                 tlen, expires);
    if (!cJSON_GetObjectItemCaseSensitive(body, "userpasswd"))
        return loom_err(LOOM_E_INVALID, "apikey: expected a string (or send userpasswd, or "
                                        "Authorization: Basic)");
    char user[AUTH_NAME_MAX], password[AUTH_PASSWORD_MAX_LEN + 1];
    loom_error *e = userpasswd_of(body, user, sizeof user, password, sizeof password);
    if (!e)
        e = api_logon_password(d, req, user, password, token, tlen, expires);
    explicit_bzero(password, sizeof password);
    return e;
}

/* Basic credentials, {"apikey": "..."} or {"method": "password",
 * "userpasswd": ...} in the body. The token is in the reply three times,
 * under each name a client reads: token (loom), accessToken (WMLA's
 * /auth/v1/logon), user_token (dlim). */
static void logon(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    char token[AUTH_SECRET_MAX];
    int64_t expires = 0;
    loom_error *e;
    http_credentials cred;
    loom_err_free(http_credentials_of(req, &cred)); /* malformed Basic: the body may hold some */
    if (cred.has_basic) {
        e = api_logon_password(d, req, cred.user, cred.password, token, sizeof token, &expires);
    } else if (req->body_len) {
        cJSON *body = api_body_json(req, res);
        if (!body) {
            http_credentials_clear(&cred);
            return;
        }
        e = logon_with_body(d, req, body, token, sizeof token, &expires);
        cJSON_Delete(body);
    } else {
        e = loom_err(LOOM_E_UNAUTHENTICATED,
                     "credentials required: Authorization: Basic, or {\"apikey\": ...}");
    }
    http_credentials_clear(&cred);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    auth_identity who;
    cJSON *o = cJSON_CreateObject();
    e = auth_check_token(d->auth, token, time_now_ms(), &who);
    if (!e) {
        cJSON_AddStringToObject(o, "user", who.user);
        cJSON_AddStringToObject(o, "role", who.role);
    }
    loom_err_free(e);
    cJSON_AddStringToObject(o, "token", token);
    cJSON_AddStringToObject(o, "accessToken", token);
    cJSON_AddStringToObject(o, "user_token", token);
    cJSON_AddNumberToObject(o, "expiresAt", (double)expires);
    http_reply_json(res, 200, o);
}

/* WMLA's conductor log-on: Basic credentials checked, no token (the
 * client sends the same credentials with every later call, which the cache
 * in auth_check_basic keeps cheap). */
static void conductor_logon(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    auth_identity who;
    http_credentials cred;
    loom_error *e = http_credentials_of(req, &cred);
    if (!e && !cred.has_basic)
        e = loom_err(LOOM_E_UNAUTHENTICATED, "credentials required: Authorization: Basic");
    if (!e && !password_may_travel(d, req))
        e = password_refused_here();
    if (!e)
        e = auth_check_basic(d->auth, client_of(req), cred.user, cred.password, time_now_ms(),
                             &who);
    http_credentials_clear(&cred);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "user", who.user);
    cJSON_AddStringToObject(o, "role", who.role);
    http_reply_json(res, 200, o);
}

static void logout(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    http_credentials cred;
    /* The caller's token was valid a moment ago (the route needs one); one
     * revoked meanwhile is as good as logged out. */
    loom_err_free(http_credentials_of(req, &cred));
    if (cred.has_token)
        loom_err_free(auth_logout(d->auth, cred.token));
    http_credentials_clear(&cred);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "loggedOut", req->user);
    http_reply_json(res, 200, o);
}

static void add_user_item(const auth_user *u, void *ctx)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", u->name);
    cJSON_AddStringToObject(o, "role", u->role);
    cJSON_AddNumberToObject(o, "createTime", (double)u->created_at_ms);
    cJSON_AddItemToArray(ctx, o);
}

static void list_users(void *ctx, const http_request *req, http_response *res)
{
    (void)req;
    api_services *d = ctx;
    cJSON *a = cJSON_CreateArray();
    loom_error *e = auth_user_list(d->auth, add_user_item, a, NULL);
    if (e) {
        cJSON_Delete(a);
        api_reply_error(res, e);
        return;
    }
    http_reply_json(res, 200, a);
}

static void add_user(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    cJSON *body = api_body_json(req, res);
    if (!body)
        return;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(body, "name");
    const cJSON *password = cJSON_GetObjectItemCaseSensitive(body, "password");
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(body, "role");
    loom_error *e = !cJSON_IsString(name) || !cJSON_IsString(password)
                        ? loom_err(LOOM_E_INVALID, "name and password: expected strings")
                        : auth_user_add(d->auth, name->valuestring, password->valuestring,
                                        cJSON_IsString(role) ? role->valuestring : "user");
    if (e) {
        api_reply_error(res, e);
    } else {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", name->valuestring);
        cJSON_AddStringToObject(o, "role", cJSON_IsString(role) ? role->valuestring : "user");
        http_reply_json(res, 201, o);
    }
    cJSON_Delete(body);
}

/* Model services and tuning tasks are kept by their owner's name: a user
 * who still owns any is not removed, so a user created later under the same
 * name can never inherit them. */
static loom_error *still_owns(api_services *d, const char *user)
{
    size_t models = 0, tasks = 0;
    infer_model_view *views = NULL;
    hpo_task_rec *recs = NULL;
    loom_error *e = infer_list(d->infer, user, &views, &models);
    if (!e)
        e = hpo_list(d->hpo, user, &recs, &tasks);
    for (size_t i = 0; i < models; i++)
        infer_model_view_clear(&views[i]);
    free(views);
    hpo_task_recs_free(recs, tasks);
    if (!e && (models || tasks))
        e = loom_err(LOOM_E_CONFLICT,
                     "user \"%s\" still owns %zu model service(s) and %zu tuning task(s): "
                     "undeploy and delete them first",
                     user, models, tasks);
    return e;
}

static void remove_user(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    loom_error *e = still_owns(d, req->params[0]);
    if (!e)
        e = auth_user_remove(d->auth, req->params[0]);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "removed", req->params[0]);
    http_reply_json(res, 200, o);
}

/* A user changes their own password; an admin anyone's. */
static void passwd(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    if (!req->is_admin && strcmp(req->user, req->params[0]) != 0) {
        api_error(res, LOOM_E_FORBIDDEN, "only an administrator changes another user's password");
        return;
    }
    cJSON *body = api_body_json(req, res);
    if (!body)
        return;
    const cJSON *password = cJSON_GetObjectItemCaseSensitive(body, "password");
    const cJSON *keep = cJSON_GetObjectItemCaseSensitive(body, "keepKeys");
    loom_error *e =
        !cJSON_IsString(password) ? loom_err(LOOM_E_INVALID, "password: expected a string")
        : keep && !cJSON_IsBool(keep) ? loom_err(LOOM_E_INVALID, "keepKeys: expected true or false")
        : auth_user_passwd(d->auth, req->params[0], password->valuestring, cJSON_IsTrue(keep));
    cJSON_Delete(body);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "changed", req->params[0]);
    http_reply_json(res, 200, o);
}

static void create_apikey(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    cJSON *body = api_body_json(req, res);
    if (!body)
        return;
    const cJSON *label = cJSON_GetObjectItemCaseSensitive(body, "label");
    const cJSON *scope = cJSON_GetObjectItemCaseSensitive(body, "scope");
    char key[AUTH_SECRET_MAX];
    loom_error *e = !cJSON_IsString(label) ? loom_err(LOOM_E_INVALID, "label: expected a string")
                    : scope && !cJSON_IsString(scope)
                        ? loom_err(LOOM_E_INVALID, "scope: expected \"" AUTH_SCOPE_ALL "\" or \""
                                   AUTH_SCOPE_INFERENCE "\"")
                        : auth_apikey_create_scoped(d->auth, req->user, label->valuestring,
                                                    scope ? scope->valuestring : AUTH_SCOPE_ALL,
                                                    key, sizeof key);
    if (e) {
        api_reply_error(res, e);
    } else {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "label", label->valuestring);
        cJSON_AddStringToObject(o, "scope", scope ? scope->valuestring : AUTH_SCOPE_ALL);
        cJSON_AddStringToObject(o, "apikey", key);
        http_reply_json(res, 201, o);
    }
    cJSON_Delete(body);
}

/* Whose keys a call is about: the caller's own, or with ?user= (or for an
 * administrator, all when the list has no ?user=) another's; NULL after
 * replying 403. */
static const char *apikey_owner(const http_request *req, http_response *res, int list)
{
    const char *user = http_query(req, "user");
    if (!user)
        return list && req->is_admin ? "" : req->user;
    if (!req->is_admin && strcmp(user, req->user) != 0) {
        api_error(res, LOOM_E_FORBIDDEN, "user: only an administrator manages another user's API keys");
        return NULL;
    }
    return user;
}

static void add_apikey_item(const auth_apikey *k, void *ctx)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "user", k->user);
    cJSON_AddStringToObject(o, "label", k->label);
    cJSON_AddStringToObject(o, "scope", k->scope);
    cJSON_AddNumberToObject(o, "createTime", (double)k->created_at_ms);
    cJSON_AddItemToArray(ctx, o);
}

/* The keys' labels and owners; the keys themselves were shown once. */
static void list_apikeys(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const char *user = apikey_owner(req, res, 1);
    if (!user)
        return;
    cJSON *a = cJSON_CreateArray();
    loom_error *e = auth_apikey_list(d->auth, *user ? user : NULL, add_apikey_item, a, NULL);
    if (e) {
        cJSON_Delete(a);
        api_reply_error(res, e);
        return;
    }
    http_reply_json(res, 200, a);
}

static void revoke_apikey(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const char *user = apikey_owner(req, res, 0);
    if (!user)
        return;
    loom_error *e = auth_apikey_revoke(d->auth, user, req->params[0]);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "user", user);
    cJSON_AddStringToObject(o, "revoked", req->params[0]);
    http_reply_json(res, 200, o);
}

const http_route loom_auth_routes[] = {
    {"POST", LOOM_ROUTE_LOGON, logon, HTTP_PUBLIC},
    {"GET", LOOM_ROUTE_LOGON, logon, HTTP_PUBLIC},
    {"POST", LOOM_ROUTE_DLIM_TOKEN, logon, HTTP_PUBLIC},
    {"GET", LOOM_ROUTE_CONDUCTOR_LOGON, conductor_logon, HTTP_PUBLIC},
    {"POST", LOOM_ROUTE_LOGOUT, logout, HTTP_USER},
    {"GET", LOOM_ROUTE_USERS, list_users, HTTP_ADMIN},
    {"POST", LOOM_ROUTE_USERS, add_user, HTTP_ADMIN},
    {"DELETE", LOOM_ROUTE_USERS "/{}", remove_user, HTTP_ADMIN},
    {"PUT", LOOM_ROUTE_USERS "/{}" LOOM_ROUTE_PASSWORD, passwd, HTTP_USER},
    {"POST", LOOM_ROUTE_APIKEYS, create_apikey, HTTP_USER},
    {"GET", LOOM_ROUTE_APIKEYS, list_apikeys, HTTP_USER},
    {"DELETE", LOOM_ROUTE_APIKEYS "/{}", revoke_apikey, HTTP_USER},
};
const size_t loom_auth_route_count = sizeof loom_auth_routes / sizeof *loom_auth_routes;

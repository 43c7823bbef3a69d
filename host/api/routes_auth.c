/* api/routes_auth.c - logging on and users over REST: a token for Basic
 * credentials or an API key (WMLA's /auth/v1/logon and dlim's
 * /dlim/v1/auth/token), logging off, users (admin), API keys (self). */
#include <stdio.h>
#include <string.h>

#include "api/routes.h"
#include "api/server.h"
#include "util/fs.h"

/* The bearer token of a request (Authorization: Bearer, or WMLA's
 * X-Auth-Token); 0 when it carries none. */
static int request_token(const http_request *req, char *token, size_t len)
{
    const char *authz = http_header(req, "Authorization");
    const char *x = http_header(req, "X-Auth-Token");
    if (authz) {
        loom_error *e = auth_parse_bearer(authz, token, len);
        if (!e)
            return 1;
        loom_err_free(e);
    }
    if (x && strlen(x) < len) {
        snprintf(token, len, "%s", x);
        return 1;
    }
    return 0;
}

int loomd_authenticate(void *ctx, const http_request *req, char *user, size_t userlen,
                       int *is_admin)
{
    loomd *d = ctx;
    char token[AUTH_SECRET_MAX + 8];
    if (!request_token(req, token, sizeof token))
        return -1;
    auth_identity who;
    loom_error *e = auth_check_token(d->auth, token, time_now_ms(), &who);
    if (e) {
        loom_err_free(e);
        return -1;
    }
    snprintf(user, userlen, "%s", who.user);
    *is_admin = strcmp(who.role, "admin") == 0;
    return 0;
}

int64_t loomd_caller_id(loomd *d, const http_request *req)
{
    if (req->is_admin)
        return EXEC_ADMIN;
    int64_t id = -1;
    return loom_err_take(auth_user_id(d->auth, req->user, &id), NULL, 0) == LOOM_OK ? id : -1;
}

/* Basic credentials, or {"apikey": "..."} in the body. */
static void logon(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
    char user[AUTH_NAME_MAX], password[AUTH_PASSWORD_MAX_LEN + 1], token[AUTH_SECRET_MAX];
    int64_t expires = 0;
    loom_error *e;
    const char *authz = http_header(req, "Authorization");
    const char *client = req->peer[0] ? req->peer : "local";
    loom_error *basic = authz ? auth_parse_basic(authz, user, sizeof user, password, sizeof password)
                              : loom_err(LOOM_E_UNAUTHENTICATED, "no Authorization header");
    if (!basic) {
        e = auth_logon_password(d->auth, client, user, password, time_now_ms(), token, sizeof token,
                                &expires);
    } else if (req->body_len) {
        loom_err_free(basic);
        cJSON *body = http_body_json(req, res);
        if (!body)
            return;
        const cJSON *key = cJSON_GetObjectItemCaseSensitive(body, "apikey");
        e = cJSON_IsString(key)
                ? auth_logon_apikey(d->auth, client, key->valuestring, time_now_ms(), token,
                                    sizeof token, &expires)
                : loom_err(LOOM_E_INVALID, "apikey: expected a string (or send Authorization: Basic)");
        cJSON_Delete(body);
    } else {
        loom_err_free(basic);
        e = loom_err(LOOM_E_UNAUTHENTICATED,
                     "credentials required: Authorization: Basic, or {\"apikey\": ...}");
    }
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
    cJSON_AddNumberToObject(o, "expiresAt", (double)expires);
    http_reply_json(res, 200, o);
}

static void logout(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
    char token[AUTH_SECRET_MAX + 8];
    /* The caller's token was valid a moment ago (the route needs one); one
     * revoked meanwhile is as good as logged out. */
    if (request_token(req, token, sizeof token))
        loom_err_free(auth_logout(d->auth, token));
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
    loomd *d = ctx;
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
    loomd *d = ctx;
    cJSON *body = http_body_json(req, res);
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

static void remove_user(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
    loom_error *e = auth_user_remove(d->auth, req->params[0]);
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
    loomd *d = ctx;
    if (!req->is_admin && strcmp(req->user, req->params[0]) != 0) {
        api_error(res, LOOM_E_FORBIDDEN, "only an administrator changes another user's password");
        return;
    }
    cJSON *body = http_body_json(req, res);
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
    loomd *d = ctx;
    cJSON *body = http_body_json(req, res);
    if (!body)
        return;
    const cJSON *label = cJSON_GetObjectItemCaseSensitive(body, "label");
    char key[AUTH_SECRET_MAX];
    loom_error *e = cJSON_IsString(label)
                        ? auth_apikey_create(d->auth, req->user, label->valuestring, key, sizeof key)
                        : loom_err(LOOM_E_INVALID, "label: expected a string");
    if (e) {
        api_reply_error(res, e);
    } else {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "label", label->valuestring);
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
    cJSON_AddNumberToObject(o, "createTime", (double)k->created_at_ms);
    cJSON_AddItemToArray(ctx, o);
}

/* The keys' labels and owners; the keys themselves were shown once. */
static void list_apikeys(void *ctx, const http_request *req, http_response *res)
{
    loomd *d = ctx;
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
    loomd *d = ctx;
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
    {"POST", LOOM_ROUTE_DLIM_TOKEN, logon, HTTP_PUBLIC},
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

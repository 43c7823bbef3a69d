/* api/routes_console.c - the web console: its files (web/, installed to
 * share/loom/web) at / and /console/..., Chart.js from Debian's
 * libjs-chart.js, and its cookie session. A browser page is a client like
 * the CLI, with one difference: the browser sends the session cookie by
 * itself, so a request the cookie authenticates is held to three rules
 * here: it comes from this host's own origin (Origin, when sent), it
 * carries the session's CSRF token (X-CSRF-Token) when it changes state,
 * and its replies never carry CORS headers (http/http.c). Bearer and Basic
 * callers are not affected. */
#include <ctype.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "api/api.h"
#include "api/request_body.h"
#include "api/routes.h"
#include "http/credentials.h"
#include "util/fs.h"
#include "util/user_tree.h"

/* Every console reply: only this host's own scripts, styles and
 * connections, no framing, no sniffing, no referrer. */
#define CONSOLE_CSP                                                                              \
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "           \
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
/* The largest file the console serves (Chart.js is about 200 KB). */
#define CONSOLE_FILE_MAX (8u << 20)
#define CONSOLE_CSRF_HEADER "X-CSRF-Token"
/* hex of a 32-byte keyed BLAKE2b, and its NUL */
#define CONSOLE_CSRF_LEN 65
/* Where Debian's libjs-chart.js puts Chart.js (UMD builds, window.Chart). */
static const char *const chart_js_paths[] = {
    "/usr/share/javascript/chart.js/chart.min.js",
    "/usr/share/javascript/chart.js/chart.umd.js",
    "/usr/share/javascript/chart.js/chart.js",
};

/* Room for a console reply's headers and its Set-Cookie (below 256). */
_Static_assert(sizeof "Content-Security-Policy" + sizeof CONSOLE_CSP + 128 + 256 <=
                   HTTP_EXTRA_HEADER_BYTES,
               "the console's headers fit a reply's extra headers");

static void console_headers(http_response *res)
{
    http_reply_header(res, "Content-Security-Policy", CONSOLE_CSP);
    http_reply_header(res, "X-Content-Type-Options", "nosniff");
    http_reply_header(res, "Referrer-Policy", "no-referrer");
    http_reply_header(res, "Cache-Control", "no-cache");
}

/* ---- the session's CSRF token ---------------------------------------- */

/* The CSRF token is a keyed hash of the session's token under a key made
 * when the host starts: nothing to store, different for every session, and
 * worthless without the cookie. A restarted host asks the page to fetch it
 * again (GET /console/session). */
static unsigned char csrf_key[crypto_generichash_KEYBYTES];
static pthread_once_t csrf_key_once = PTHREAD_ONCE_INIT;

static void make_csrf_key(void)
{
    randombytes_buf(csrf_key, sizeof csrf_key);
}

static void csrf_of(const char *token, char out[CONSOLE_CSRF_LEN])
{
    pthread_once(&csrf_key_once, make_csrf_key);
    unsigned char h[32];
    crypto_generichash(h, sizeof h, (const unsigned char *)token, strlen(token), csrf_key,
                       sizeof csrf_key);
    sodium_bin2hex(out, CONSOLE_CSRF_LEN, h, sizeof h);
}

static int changes_state(const char *method)
{
    return strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 &&
           strcmp(method, "OPTIONS") != 0;
}

/* Whether `origin` is this host as the request reached it:
 * scheme://Host. */
static int own_origin(const api_services *d, const http_request *req, const char *origin)
{
    const char *host = http_header(req, "Host");
    const char *scheme = d->https ? "https://" : "http://";
    size_t n = strlen(scheme);
    return host && *host && strncasecmp(origin, scheme, n) == 0 &&
           strcasecmp(origin + n, host) == 0;
}

int api_console_identity(api_services *d, const http_request *req, const char *token,
                         auth_identity *who, loom_error **why)
{
    loom_error *e = auth_check_token(d->auth, token, time_now_ms(), who);
    if (e) {
        loom_err_free(e); /* a stale cookie is no credential: a plain 401 */
        return -1;
    }
    const char *origin = http_header(req, "Origin");
    if (origin && !own_origin(d, req, origin)) {
        *why = loom_err(LOOM_E_FORBIDDEN,
                        "a request authenticated by the " HTTP_SESSION_COOKIE
                        " cookie must come from this host's own pages, not from origin \"%.256s\" "
                        "(other origins send Authorization: Bearer)",
                        origin);
        return -1;
    }
    if (changes_state(req->method)) {
        char want[CONSOLE_CSRF_LEN];
        csrf_of(token, want);
        const char *got = http_header(req, CONSOLE_CSRF_HEADER);
        int match = got && strlen(got) == CONSOLE_CSRF_LEN - 1 &&
                    sodium_memcmp(got, want, CONSOLE_CSRF_LEN - 1) == 0;
        sodium_memzero(want, sizeof want);
        if (!match) {
            *why = loom_err(LOOM_E_FORBIDDEN,
                            "%s %s with the " HTTP_SESSION_COOKIE " cookie needs header "
                            CONSOLE_CSRF_HEADER " with the session's token (given by POST "
                            LOOM_ROUTE_CONSOLE_LOGON " and GET " LOOM_ROUTE_CONSOLE_SESSION
                            "): %s",
                            req->method, req->path, got ? "it does not match" : "it is missing");
            return -1;
        }
    }
    if (strcmp(who->scope, AUTH_SCOPE_ALL) != 0) {
        *why = loom_err(LOOM_E_FORBIDDEN, "the " HTTP_SESSION_COOKIE " cookie holds a token of "
                                          "scope \"%s\": the console needs a password log-on",
                        who->scope);
        return -1;
    }
    return 0;
}

/* ---- log-on, session, log-off ---------------------------------------- */

static void set_session_cookie(const api_services *d, http_response *res, const char *token,
                               int64_t max_age_s)
{
    char cookie[256];
    snprintf(cookie, sizeof cookie,
             HTTP_SESSION_COOKIE "=%s; HttpOnly; SameSite=Strict; Path=/; Max-Age=%lld%s", token,
             (long long)max_age_s, d->https ? "; Secure" : "");
    http_reply_header(res, "Set-Cookie", cookie);
}

/* One form field's value (application/x-www-form-urlencoded), decoded;
 * 0 when absent or it does not fit. */
static int form_value(const char *body, const char *name, char *out, size_t len)
{
    size_t n = strlen(name);
    for (const char *p = body; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
        if (strncmp(p, name, n) != 0 || p[n] != '=')
            continue;
        size_t o = 0;
        for (const char *v = p + n + 1; *v && *v != '&'; v++) {
            char c = *v;
            if (c == '+') {
                c = ' ';
            } else if (c == '%') {
                if (!isxdigit((unsigned char)v[1]) || !isxdigit((unsigned char)v[2]))
                    return 0;
                char hex[3] = {v[1], v[2], 0};
                c = (char)strtol(hex, NULL, 16);
                v += 2;
            }
            if (o + 1 >= len || c == 0)
                return 0;
            out[o++] = c;
        }
        out[o] = 0;
        return 1;
    }
    return 0;
}

/* user and password from a JSON or a form body. */
static loom_error *logon_fields(const http_request *req, char *user, size_t ulen, char *password,
                                size_t plen)
{
    const char *ctype = http_header(req, "Content-Type");
    if (ctype && strncasecmp(ctype, "application/x-www-form-urlencoded", 33) == 0) {
        if (!form_value(req->body, "user", user, ulen) ||
            !form_value(req->body, "password", password, plen))
            return loom_err(LOOM_E_INVALID, "user and password: expected both fields in the form "
                                            "(at most %zu and %zu bytes)",
                            ulen - 1, plen - 1);
        return NULL;
    }
    cJSON *body = cJSON_ParseWithLength(req->body, req->body_len);
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(body, "user");
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(body, "password");
    loom_error *e = NULL;
    if (!cJSON_IsString(u) || !cJSON_IsString(p) || strlen(u->valuestring) >= ulen ||
        strlen(p->valuestring) >= plen)
        e = loom_err(LOOM_E_INVALID, "user and password: expected {\"user\": ..., \"password\": "
                                     "...} (at most %zu and %zu bytes)",
                     ulen - 1, plen - 1);
    else {
        snprintf(user, ulen, "%s", u->valuestring);
        snprintf(password, plen, "%s", p->valuestring);
        sodium_memzero(p->valuestring, strlen(p->valuestring));
    }
    cJSON_Delete(body);
    return e;
}

static cJSON *session_json(const auth_identity *who, const char *token)
{
    char csrf[CONSOLE_CSRF_LEN];
    csrf_of(token, csrf);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "user", who->user);
    cJSON_AddStringToObject(o, "role", who->role);
    cJSON_AddStringToObject(o, "csrfToken", csrf);
    cJSON_AddNumberToObject(o, "expiresAt", (double)who->expires_at_ms);
    return o;
}

static void console_logon(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    console_headers(res);
    char user[AUTH_NAME_MAX], password[AUTH_PASSWORD_MAX_LEN + 1], token[AUTH_SECRET_MAX];
    int64_t expires = 0;
    auth_identity who;
    loom_error *e = logon_fields(req, user, sizeof user, password, sizeof password);
    if (!e)
        e = api_logon_password(d, req, user, password, token, sizeof token, &expires);
    sodium_memzero(password, sizeof password);
    if (!e)
        e = auth_check_token(d->auth, token, time_now_ms(), &who);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    int64_t left_s = (expires - time_now_ms()) / 1000;
    set_session_cookie(d, res, token, left_s > 0 ? left_s : 0);
    http_reply_json(res, 200, session_json(&who, token));
    sodium_memzero(token, sizeof token);
}

/* The cookie's token, when the request was authenticated by it. */
static int session_token(const http_request *req, char *token, size_t len)
{
    http_credentials cred;
    loom_err_free(http_credentials_of(req, &cred));
    int has = cred.has_cookie && !cred.has_token && !cred.has_basic;
    if (has)
        snprintf(token, len, "%s", cred.cookie);
    http_credentials_clear(&cred);
    return has;
}

static void console_session(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    console_headers(res);
    char token[HTTP_CRED_TOKEN_MAX];
    auth_identity who;
    loom_error *e = NULL;
    if (!session_token(req, token, sizeof token))
        e = loom_err(LOOM_E_INVALID, "no " HTTP_SESSION_COOKIE " cookie: the console's session "
                                     "comes from POST " LOOM_ROUTE_CONSOLE_LOGON);
    else
        e = auth_check_token(d->auth, token, time_now_ms(), &who);
    if (e) {
        api_reply_error(res, e);
        return;
    }
    http_reply_json(res, 200, session_json(&who, token));
    sodium_memzero(token, sizeof token);
}

static void console_logout(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    console_headers(res);
    char token[HTTP_CRED_TOKEN_MAX];
    if (session_token(req, token, sizeof token))
        loom_err_free(auth_logout(d->auth, token)); /* gone already: logged out all the same */
    sodium_memzero(token, sizeof token);
    set_session_cookie(d, res, "", 0);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "loggedOut", 1);
    http_reply_json(res, 200, o);
}

/* ---- the console's files --------------------------------------------- */

static const char *content_type_of(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},   {".svg", "image/svg+xml"},
        {".png", "image/png"},                 {".json", "application/json"},
        {".ico", "image/x-icon"},              {".txt", "text/plain; charset=utf-8"},
    };
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof *types; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return NULL;
}

/* The file under the web folder a path names: "/" and "/console" are the
 * console's index.html. NULL when it names none: a segment that is empty
 * or starts with a dot ("..", hidden files), or a type the console does
 * not serve. */
static const char *web_rel_of(const char *path)
{
    if (strcmp(path, "/") == 0 || strcmp(path, LOOM_ROUTE_CONSOLE) == 0 ||
        strcmp(path, LOOM_ROUTE_CONSOLE "/") == 0)
        return "index.html";
    const char *rel = path + strlen(LOOM_ROUTE_CONSOLE "/");
    for (const char *seg = rel; *seg; seg += strcspn(seg, "/") + (seg[strcspn(seg, "/")] == '/'))
        if (*seg == '.' || *seg == '/')
            return NULL;
    size_t n = strlen(rel);
    if (n == 0 || rel[n - 1] == '/' || !content_type_of(rel))
        return NULL;
    return rel;
}

static void reply_file(http_response *res, const char *type, char *data, size_t len)
{
    http_reply_data(res, 200, type, data, len);
}

static void serve_chart_js(http_response *res)
{
    for (size_t i = 0; i < sizeof chart_js_paths / sizeof *chart_js_paths; i++) {
        char *data = NULL;
        size_t len = 0;
        /* the system's own file (its links are Debian's), not a user's tree */
        loom_error *e = fs_read_file(chart_js_paths[i], CONSOLE_FILE_MAX, &data, &len);
        if (!e) {
            reply_file(res, "text/javascript; charset=utf-8", data, len);
            return;
        }
        loom_err_free(e);
    }
    api_error(res, LOOM_E_NOT_FOUND, "Chart.js is not installed on this host: install Debian's "
                                     "libjs-chart.js (scripts/bootstrap does), which puts it in "
                                     "/usr/share/javascript/chart.js/; the console shows no charts "
                                     "without it");
}

static void console_file(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    console_headers(res);
    if (strcmp(req->path, LOOM_ROUTE_CONSOLE "/vendor/chart.js") == 0) {
        serve_chart_js(res);
        return;
    }
    const char *rel = web_rel_of(req->path);
    if (!rel) {
        api_error(res, LOOM_E_NOT_FOUND, "no console file %s", req->path);
        return;
    }
    int root = -1;
    char *data = NULL;
    size_t len = 0;
    /* links in the folder's own path are the operator's; none beneath it */
    loom_error *e = utree_host_root(d->web_dir, &root);
    if (e) {
        api_reply_error(res, loom_err_recode(loom_err_wrap(e, "the console's files (--web-dir %s)",
                                                           d->web_dir),
                                             LOOM_E_NOT_FOUND));
        return;
    }
    e = utree_read_file(root, rel, CONSOLE_FILE_MAX, &data, &len);
    close(root);
    if (e) {
        int32_t code = loom_err_code(e);
        loom_err_free(e);
        if (code == LOOM_E_TOO_LARGE)
            api_error(res, LOOM_E_INTERNAL, "console file %s: larger than %u bytes", req->path,
                      CONSOLE_FILE_MAX);
        else
            api_error(res, LOOM_E_NOT_FOUND, "no console file %s", req->path);
        return;
    }
    reply_file(res, content_type_of(rel), data, len);
}

/* The session's routes come before the files', whose {} would take them. */
const http_route loom_console_routes[] = {
    {"POST", LOOM_ROUTE_CONSOLE_LOGON, console_logon, HTTP_PUBLIC},
    {"POST", LOOM_ROUTE_CONSOLE_LOGOUT, console_logout, HTTP_USER},
    {"GET", LOOM_ROUTE_CONSOLE_SESSION, console_session, HTTP_USER},
    {"GET", "/", console_file, HTTP_PUBLIC},
    {"GET", LOOM_ROUTE_CONSOLE, console_file, HTTP_PUBLIC},
    {"GET", LOOM_ROUTE_CONSOLE "/{}", console_file, HTTP_PUBLIC},
    {"GET", LOOM_ROUTE_CONSOLE "/{}/{}", console_file, HTTP_PUBLIC},
    {"GET", LOOM_ROUTE_CONSOLE "/{}/{}/{}", console_file, HTTP_PUBLIC},
};
const size_t loom_console_route_count = sizeof loom_console_routes / sizeof *loom_console_routes;

/* http/http.c - see http.h. */
#include "http/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include "http/credentials.h"
#include "http/http_lane_internal.h"
#include "http/http_stream_internal.h"
#include "http/http_upload.h"
#include "http/json_text.h"
#include "http/mhd_dl.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/workqueue.h"

/* libmicrohttpd, opened by http_server_start before any daemon thread
 * exists (which is what makes the plain read in the callbacks safe). */
static const mhd_api *mhd;

struct http_server {
    struct MHD_Daemon *daemon;
    http_lane *lane; /* the port is accepted there (http/http_lane_internal.h) */
    lane_tls *tls;   /* HTTPS: the lane's certificate; libmicrohttpd gets plain relays */
    http_config cfg;
    int port;
    upload_slots uploads;
    workqueue *slow;
    http_stream_set streams; /* open streamed replies, ended at stop */
};

/* Per-request state kept by libmicrohttpd between calls. */
typedef struct request_state {
    http_server *srv;
    const http_route *route; /* admitted from the headers */
    char *body;
    size_t len, cap, limit;
    size_t plain_len;        /* a multipart body's plain parts, held in memory */
    int too_large;
    int multipart;
    int upload_slot;         /* holds one of the server's upload slots */
    int spool_fd[HTTP_MAX_FIELDS];
    char refusal[256];       /* why the body was refused part way */
    struct MHD_PostProcessor *pp;
    int queued, done;        /* a slow route: on the work queue; its reply is ready */
    http_response res;
    http_request req;
    /* A deferred reply (http_defer): the connection is suspended until
     * http_pending_reply stores the reply and resumes it. */
    int deferred, ready, suspended;
    pthread_mutex_t defer_lock; /* ready and suspended, between the two threads */
    http_response pending;
    http_pending pending_hook;
    http_stream *stream; /* the handler opened a streamed reply */
} request_state;

const char *http_query(const http_request *req, const char *key)
{
    return req->transport->query(req, key);
}

const char *http_header(const http_request *req, const char *key)
{
    return req->transport->header(req, key);
}

http_pending *http_defer(const http_request *req)
{
    return req->transport->defer(req);
}

void http_pending_reply(http_pending *p, http_response *res)
{
    p->reply(p, res);
}

static const char *mhd_query(const http_request *req, const char *key)
{
    return mhd->MHD_lookup_connection_value(req->connection, MHD_GET_ARGUMENT_KIND, key);
}

static const char *mhd_header(const http_request *req, const char *key)
{
    return mhd->MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND, key);
}

const http_field *http_field_get(const http_request *req, const char *name)
{
    for (int i = 0; i < req->nfields; i++)
        if (strcmp(req->fields[i].name, name) == 0)
            return &req->fields[i];
    return NULL;
}

char *http_field_load(const http_field *f, size_t max)
{
    if (f->len > max)
        return NULL;
    if (f->path) {
        char *text;
        loom_err_free(fs_read_file(f->path, max, &text, NULL)); /* NULL says it */
        return text;
    }
    char *copy = malloc(f->len + 1);
    if (copy) {
        if (f->len)
            memcpy(copy, f->data, f->len);
        copy[f->len] = 0;
    }
    return copy;
}

http_limits http_limits_resolve(const http_limits *given)
{
    http_limits l = given ? *given : (http_limits){0};
    if (!l.max_connections)
        l.max_connections = HTTP_DEFAULT_MAX_CONNECTIONS;
    if (!l.max_connections_per_ip)
        l.max_connections_per_ip = HTTP_DEFAULT_MAX_CONNECTIONS_PER_IP;
    if (!l.idle_timeout_s)
        l.idle_timeout_s = HTTP_DEFAULT_IDLE_TIMEOUT_S;
    if (!l.header_timeout_s)
        l.header_timeout_s = HTTP_DEFAULT_HEADER_TIMEOUT_S;
    if (!l.max_uploads)
        l.max_uploads = HTTP_DEFAULT_MAX_UPLOADS;
    if (!l.max_uploads_per_user)
        l.max_uploads_per_user = HTTP_DEFAULT_MAX_UPLOADS_PER_USER;
    if (!l.slow_threads)
        l.slow_threads = HTTP_DEFAULT_SLOW_THREADS;
    if (!l.header_bytes)
        l.header_bytes = HTTP_DEFAULT_HEADER_BYTES;
    if (l.header_bytes < HTTP_MIN_HEADER_BYTES)
        l.header_bytes = HTTP_MIN_HEADER_BYTES;
    if (!l.slow_queue)
        l.slow_queue = HTTP_DEFAULT_SLOW_QUEUE;
    return l;
}

void http_reply_data(http_response *res, int status, const char *content_type,
                     char *data, size_t len)
{
    free(res->body);
    res->status = status;
    snprintf(res->content_type, sizeof res->content_type, "%s", content_type);
    res->body = data;
    res->len = len;
}

int http_reply_header(http_response *res, const char *name, const char *value)
{
    size_t n = strlen(name) + 1, v = strlen(value) + 1;
    if (res->extra_len + n + v > sizeof res->extra_headers)
        return -1;
    memcpy(res->extra_headers + res->extra_len, name, n);
    memcpy(res->extra_headers + res->extra_len + n, value, v);
    res->extra_len += n + v;
    return 0;
}

static void reply_plain(http_response *res, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void http_reply_json(http_response *res, int status, cJSON *json)
{
    char *text = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    if (!text) {
        reply_plain(res, 500, "cannot encode the reply");
        return;
    }
    http_reply_data(res, status, "application/json", text, strlen(text));
}

/* A reply the transport makes without the routes' error table: a known
 * path with another method (405, which no service ever gives) and a reply
 * that cannot be encoded (500). */
static void reply_plain(http_response *res, int status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    cJSON_AddNumberToObject(o, "status", status);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    http_reply_data(res, status, "application/json", text, text ? strlen(text) : 0);
}

void http_server_reply_error(const http_server *s, http_response *res, loom_error *err)
{
    s->cfg.reply_error(res, err);
}

void http_server_fail(const http_server *s, http_response *res, int32_t code, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    s->cfg.reply_error(res, loom_err(code, "%s", msg));
}

/* ---- routing ------------------------------------------------------------ */

static int match(const char *pattern, const char *path, http_request *req)
{
    req->nparams = 0;
    char (*segments)[sizeof req->param_buf[0]] = req->param_buf;
    const char *p = pattern, *s = path;
    while (*p && *s) {
        if (p[0] == '{' && p[1] == '}') {
            const char *end = strchr(s, '/');
            size_t n = end ? (size_t)(end - s) : strlen(s);
            if (n == 0 || n >= sizeof req->param_buf[0] || req->nparams == HTTP_MAX_PARAMS)
                return 0;
            memcpy(segments[req->nparams], s, n);
            segments[req->nparams][n] = 0;
            req->params[req->nparams] = segments[req->nparams];
            req->nparams++;
            p += 2;
            s += n;
        } else if (*p == *s) {
            p++;
            s++;
        } else {
            return 0;
        }
    }
    /* A trailing slash is tolerated. */
    if (*s == '/' && s[1] == 0)
        s++;
    return *p == 0 && *s == 0;
}


/* Admits a request from its headers alone: its route and method, then who
 * asks. 0 with *out set, or -1 with the refusal in res. */
int http_server_admit(http_server *srv, http_request *req, http_response *res, const http_route **out)
{
    /* A segment that cannot be a route's {} (an id, a name) is refused as
     * such, not reported as a route that does not exist. */
    for (const char *seg = req->path; *seg;) {
        size_t n = strcspn(seg, "/");
        if (n >= sizeof req->param_buf[0]) {
            http_server_fail(srv, res, LOOM_E_INVALID, "path: a segment of %zu bytes, longer than the limit of %zu",
                      n, sizeof req->param_buf[0] - 1);
            return -1;
        }
        seg += n + (seg[n] == '/');
    }
    int path_known = 0;
    for (size_t i = 0; i < srv->cfg.nroutes; i++) {
        const http_route *r = &srv->cfg.routes[i];
        if (!match(r->pattern, req->path, req))
            continue;
        path_known = 1;
        if (strcmp(r->method, req->method) != 0)
            continue;
        int is_admin = 0;
        loom_error *why = NULL;
        int known = srv->cfg.authenticate &&
                    srv->cfg.authenticate(srv->cfg.ctx, req, req->user_buf, sizeof req->user_buf,
                                          &is_admin, &why) == 0;
        if (known) {
            req->user = req->user_buf;
            req->is_admin = is_admin;
        } else if (!srv->cfg.authenticate) {
            req->user = "admin";
            req->is_admin = 1;
        }
        int access = r->access & HTTP_ACCESS_MASK;
        if (access != HTTP_PUBLIC && !req->user) {
            if (why)
                http_server_reply_error(srv, res, why); /* the authenticator's reason */
            else
                http_server_fail(srv, res, LOOM_E_UNAUTHENTICATED, "authentication required");
            return -1;
        }
        loom_err_free(why);
        if (access == HTTP_ADMIN && !req->is_admin) {
            http_server_fail(srv, res, LOOM_E_FORBIDDEN, "%s %s is for administrators only", req->method, req->path);
            return -1;
        }
        *out = r;
        return 0;
    }
    if (path_known)
        reply_plain(res, 405, "method %s is not allowed on %s", req->method, req->path);
    else
        http_server_fail(srv, res, LOOM_E_NOT_FOUND, "no route for %s %s", req->method, req->path);
    return -1;
}

/* ---- libmicrohttpd glue ------------------------------------------------- */

static void refuse_body(request_state *st, int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void refuse_body(request_state *st, int32_t code, const char *fmt, ...)
{
    if (st->too_large)
        return; /* the first reason stands */
    st->too_large = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->refusal, sizeof st->refusal, fmt, ap);
    va_end(ap);
}

static int append(request_state *st, const char *data, size_t n)
{
    if (st->len + n > st->limit) {
        refuse_body(st, LOOM_E_TOO_LARGE, "request body exceeds the limit of %zu bytes", st->limit);
        return -1;
    }
    if (st->len + n + 1 > st->cap) {
        size_t cap = st->cap ? st->cap : 4096;
        while (cap < st->len + n + 1)
            cap *= 2;
        char *grown = realloc(st->body, cap);
        if (!grown) {
            refuse_body(st, LOOM_E_INTERNAL, "out of memory reading the request body");
            return -1;
        }
        st->body = grown;
        st->cap = cap;
    }
    memcpy(st->body + st->len, data, n);
    st->len += n;
    st->body[st->len] = 0;
    return 0;
}

/* The part named `key`, created on its first bytes; a file part gets its
 * spool file. NULL when refused (the reason is in st). */
static http_field *field_for(request_state *st, const char *key, const char *filename)
{
    http_request *req = &st->req;
    for (int i = 0; i < req->nfields; i++)
        if (strcmp(req->fields[i].name, key) == 0)
            return &req->fields[i];
    if (req->nfields == HTTP_MAX_FIELDS) {
        refuse_body(st, LOOM_E_INVALID, "multipart body: more than %d parts (the limit)",
                    HTTP_MAX_FIELDS);
        return NULL;
    }
    if (strlen(key) >= sizeof req->fields[0].name ||
        (filename && strlen(filename) >= sizeof req->fields[0].filename)) {
        refuse_body(st, LOOM_E_INVALID,
                    "multipart body: a part's name is longer than %zu bytes or its filename "
                    "longer than %zu (the limits)",
                    sizeof req->fields[0].name - 1, sizeof req->fields[0].filename - 1);
        return NULL;
    }
    int at = req->nfields;
    http_field *f = &req->fields[at];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", key);
    if (filename) {
        snprintf(f->filename, sizeof f->filename, "%s", filename);
        st->spool_fd[at] = upload_spool_create(st->srv->cfg.spool_dir, &f->path);
        if (st->spool_fd[at] < 0) {
            refuse_body(st, LOOM_E_INTERNAL, "cannot spool the upload under %s: %s",
                        st->srv->cfg.spool_dir, strerror(errno));
            return NULL;
        }
    }
    req->nfields++;
    return f;
}

static enum MHD_Result on_post_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *filename, const char *content_type,
                                     const char *transfer_encoding, const char *data,
                                     uint64_t off, size_t size)
{
    (void)kind;
    (void)content_type;
    (void)transfer_encoding;
    (void)off;
    request_state *st = cls;
    http_field *f = field_for(st, key, filename);
    if (!f)
        return MHD_NO;
    st->len += size; /* count every part against the upload limit */
    if (st->len > st->limit) {
        refuse_body(st, LOOM_E_TOO_LARGE, "request body exceeds the limit of %zu bytes", st->limit);
        return MHD_NO;
    }
    if (size == 0)
        return MHD_YES;
    if (f->path) {
        if (upload_spool_write(st->spool_fd[f - st->req.fields], data, size) != 0) {
            refuse_body(st, LOOM_E_INTERNAL, "cannot spool the upload under %s: %s",
                        st->srv->cfg.spool_dir, strerror(errno));
            return MHD_NO;
        }
        f->len += size;
        return MHD_YES;
    }
    /* Plain parts (args, names) are held in memory: the JSON body limit. */
    st->plain_len += size;
    if (st->plain_len > st->srv->cfg.max_body) {
        refuse_body(st, LOOM_E_TOO_LARGE,
                    "multipart body: its plain (non-file) parts exceed the limit of %zu bytes",
                    st->srv->cfg.max_body);
        return MHD_NO;
    }
    char *grown = realloc(f->data, f->len + size + 1);
    if (!grown) {
        refuse_body(st, LOOM_E_INTERNAL, "out of memory reading the request body");
        return MHD_NO;
    }
    f->data = grown;
    memcpy(f->data + f->len, data, size);
    f->len += size;
    f->data[f->len] = 0;
    return MHD_YES;
}

/* CORS headers for a browser's cross-origin call (http/cors.h); never on
 * a request carrying the console's session cookie, whose pages are this
 * host's own: no other origin may read what that cookie gets. */
static void add_cors_headers(const http_server *srv, struct MHD_Connection *conn,
                             struct MHD_Response *r)
{
    char session[HTTP_CRED_TOKEN_MAX];
    if (http_cookie_value(mhd->MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Cookie"),
                          HTTP_SESSION_COOKIE, session, sizeof session))
        return;
    cors_headers h;
    cors_reply_headers(srv->cfg.cors,
                       mhd->MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin"), &h);
    for (int i = 0; i < h.count; i++)
        mhd->MHD_add_response_header(r, h.name[i], h.value[i]);
}

/* The Date header's text for this second, made once a second per server
 * thread (formatting it for every response took a visible share of a
 * small request's time). */
const char *http_date_now(void)
{
    static _Thread_local time_t made = (time_t)-1;
    static _Thread_local char text[40];
    time_t now = time(NULL);
    if (now != made) {
        struct tm tm;
        gmtime_r(&now, &tm);
        static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
        static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                           "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
        /* IMF-fixdate (RFC 9110), in English whatever the locale */
        snprintf(text, sizeof text, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday % 7],
                 tm.tm_mday, months[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min,
                 tm.tm_sec);
        made = now;
    }
    return text;
}

/* Sends r with res's status and headers. */
static enum MHD_Result queue_response(const http_server *srv, struct MHD_Connection *conn,
                                      const http_response *res, struct MHD_Response *r)
{
    mhd->MHD_add_response_header(r, MHD_HTTP_HEADER_DATE, http_date_now());
    mhd->MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                                 res->content_type[0] ? res->content_type : "application/json");
    if (res->disposition[0])
        mhd->MHD_add_response_header(r, "Content-Disposition", res->disposition);
    for (size_t at = 0; at < res->extra_len;) {
        const char *name = res->extra_headers + at;
        const char *value = name + strlen(name) + 1;
        mhd->MHD_add_response_header(r, name, value);
        at = (size_t)(value - res->extra_headers) + strlen(value) + 1;
    }
    add_cors_headers(srv, conn, r);
    enum MHD_Result ret = mhd->MHD_queue_response(conn, (unsigned)res->status, r);
    mhd->MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_response(const http_server *srv, struct MHD_Connection *conn,
                                     http_response *res)
{
    /* Client text echoed into a reply may hold invalid UTF-8: escaped, so
     * the reply stays valid JSON. */
    if (res->body && (!res->content_type[0] || strncmp(res->content_type, "application/json", 16) == 0))
        res->body = json_text_repair_utf8(res->body, &res->len);
    struct MHD_Response *r = mhd->MHD_create_response_from_buffer(
        res->len, res->body ? res->body : (void *)"", res->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    res->body = NULL;
    return queue_response(srv, conn, res, r);
}

static const http_transport mhd_transport;

http_stream *http_stream_open(const http_request *req)
{
    if (req->transport != &mhd_transport)
        return NULL; /* the lane's connections do not stream */
    request_state *st = (request_state *)((char *)req - offsetof(request_state, req));
    if (!st->stream)
        st->stream = http_stream_new(&st->srv->streams, mhd, req->connection);
    return st->stream;
}


/* A reply that comes while the handler still runs is sent when it returns,
 * without suspending; a later one resumes the suspended connection. */
static void mhd_pending_reply(http_pending *p, http_response *res)
{
    request_state *st = (request_state *)((char *)p - offsetof(request_state, pending_hook));
    struct MHD_Connection *conn = st->req.connection;
    pthread_mutex_lock(&st->defer_lock);
    st->pending = *res;
    res->body = NULL;
    st->ready = 1;
    int suspended = st->suspended;
    pthread_mutex_unlock(&st->defer_lock);
    /* After the unlock: once resumed, the request may end and st be freed
     * on a server thread at any moment. */
    if (suspended)
        mhd->MHD_resume_connection(conn);
}

static http_pending *mhd_defer(const http_request *req)
{
    request_state *st = (request_state *)((char *)req - offsetof(request_state, req));
    pthread_mutex_init(&st->defer_lock, NULL);
    st->deferred = 1;
    st->pending_hook.reply = mhd_pending_reply;
    return &st->pending_hook;
}

static const http_transport mhd_transport = {mhd_header, mhd_query, mhd_defer};


/* After a deferring handler: the reply now, or suspend until it comes. */
static enum MHD_Result after_defer(request_state *st, struct MHD_Connection *conn);

static enum MHD_Result reply_now(const http_server *srv, struct MHD_Connection *conn, int32_t code,
                                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static enum MHD_Result reply_now(const http_server *srv, struct MHD_Connection *conn, int32_t code,
                                 const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    http_response res = {0};
    http_server_fail(srv, &res, code, "%s", msg);
    return send_response(srv, conn, &res);
}

/* A browser's preflight, answered before any credential is asked for
 * (browsers send none with it): 204 for a listed origin, 403 naming any
 * other. */
static enum MHD_Result answer_preflight(const http_server *srv, struct MHD_Connection *conn,
                                        const char *origin)
{
    if (!cors_origin_allowed(srv->cfg.cors, origin))
        return reply_now(srv, conn, LOOM_E_FORBIDDEN,
                         "origin \"%.256s\" may not call this host from a browser (not on its "
                         "--cors-origin list)",
                         origin);
    http_response res = {.status = 204};
    return send_response(srv, conn, &res);
}

/* Dotted quad text of an address, for every request: without inet_ntop,
 * whose printf was a visible share of a small request's time. */
void http_format_ipv4(struct in_addr addr, char out[16])
{
    const unsigned char *b = (const unsigned char *)&addr.s_addr;
    char *o = out;
    for (int i = 0; i < 4; i++) {
        unsigned v = b[i];
        if (v >= 100)
            *o++ = (char)('0' + v / 100);
        if (v >= 10)
            *o++ = (char)('0' + v / 10 % 10);
        *o++ = (char)('0' + v % 10);
        *o++ = i < 3 ? '.' : '\0';
    }
}

/* The first call, with the headers and no body byte yet: everything that
 * can refuse the request does so here, so a refused body is never read. */
static enum MHD_Result on_headers(http_server *srv, struct MHD_Connection *conn, const char *url,
                                  const char *method, void **con_cls)
{
    request_state *st = calloc(1, sizeof *st);
    if (!st)
        return MHD_NO;
    *con_cls = st;
    st->srv = srv;
    for (int i = 0; i < HTTP_MAX_FIELDS; i++)
        st->spool_fd[i] = -1;
    const char *origin = mhd->MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    if (cors_is_preflight(method, origin,
                          mhd->MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                           "Access-Control-Request-Method")))
        return answer_preflight(srv, conn, origin);
    http_request *req = &st->req;
    req->method = method;
    req->path = url;
    req->connection = conn;
    req->transport = &mhd_transport;
    const union MHD_ConnectionInfo *ci =
        mhd->MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
        http_format_ipv4(((const struct sockaddr_in *)ci->client_addr)->sin_addr, req->peer);
    http_response res = {0};
    if (http_server_admit(srv, req, &res, &st->route) != 0)
        return send_response(srv, conn, &res);
    const char *ctype = mhd->MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    st->multipart = ctype && strncasecmp(ctype, "multipart/form-data", 19) == 0;
    st->limit = st->multipart ? srv->cfg.max_upload : srv->cfg.max_body;
    const char *clen = mhd->MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (clen && strtoull(clen, NULL, 10) > st->limit)
        return reply_now(srv, conn, LOOM_E_TOO_LARGE, "request body of %s bytes exceeds the limit of %zu bytes",
                         clen, st->limit);
    if (st->multipart) {
        loom_error *e = upload_slot_take(&srv->uploads, req->user ? req->user : "");
        if (e) {
            http_server_reply_error(srv, &res, e);
            return send_response(srv, conn, &res);
        }
        st->upload_slot = 1;
        st->pp = mhd->MHD_create_post_processor(conn, 65536, on_post_field, st);
        if (!st->pp)
            return reply_now(srv, conn, LOOM_E_INVALID, "malformed multipart/form-data request");
    }
    return MHD_YES;
}

/* A slow route's handler, on the work queue; the connection waits
 * suspended and is resumed to send what it made. */
static void run_slow(void *arg)
{
    request_state *st = arg;
    st->route->handler(st->srv->cfg.ctx, &st->req, &st->res);
    if (!st->res.status)
        http_server_fail(st->srv, &st->res, LOOM_E_INTERNAL, "handler gave no reply");
    st->done = 1;
    mhd->MHD_resume_connection(st->req.connection);
}

static void close_spools(request_state *st)
{
    for (int i = 0; i < HTTP_MAX_FIELDS; i++)
        if (st->spool_fd[i] >= 0) {
            close(st->spool_fd[i]);
            st->spool_fd[i] = -1;
        }
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    http_server *srv = cls;
    request_state *st = *con_cls;
    if (!st)
        return on_headers(srv, conn, url, method, con_cls);
    if (st->deferred) /* resumed: the reply is ready */
        return st->ready ? send_response(st->srv, conn, &st->pending) : MHD_YES;
    if (*upload_data_size) {
        if (!st->too_large) {
            if (st->pp) {
                if (mhd->MHD_post_process(st->pp, upload_data, *upload_data_size) != MHD_YES)
                    refuse_body(st, LOOM_E_INVALID, "malformed multipart/form-data request body");
            } else {
                append(st, upload_data, *upload_data_size);
            }
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (st->done)
        return send_response(srv, conn, &st->res);
    if (st->too_large)
        return reply_now(srv, conn, st->too_large, "%s", st->refusal);
    close_spools(st);
    http_request *req = &st->req;
    req->body = st->body && !st->multipart ? st->body : "";
    req->body_len = st->multipart ? 0 : st->len;
    if ((st->route->access & HTTP_SLOW) && srv->slow) {
        mhd->MHD_suspend_connection(conn);
        loom_error *e = workqueue_submit(srv->slow, run_slow, st);
        if (e) {
            http_server_reply_error(st->srv, &st->res, e);
            st->done = 1;
            mhd->MHD_resume_connection(conn);
        }
        return MHD_YES;
    }
    st->route->handler(srv->cfg.ctx, req, &st->res);
    if (st->deferred)
        return after_defer(st, conn);
    struct MHD_Response *streamed = st->stream ? http_stream_response(st->stream, st->res.status) : NULL;
    st->stream = NULL;
    if (streamed)
        return queue_response(srv, conn, &st->res, streamed);
    if (!st->res.status)
        http_server_fail(st->srv, &st->res, LOOM_E_INTERNAL, "handler gave no reply");
    return send_response(srv, conn, &st->res);
}

static enum MHD_Result after_defer(request_state *st, struct MHD_Connection *conn)
{
    pthread_mutex_lock(&st->defer_lock);
    int ready = st->ready;
    if (!ready) {
        st->suspended = 1;
        mhd->MHD_suspend_connection(conn);
    }
    pthread_mutex_unlock(&st->defer_lock);
    return ready ? send_response(st->srv, conn, &st->pending) : MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    (void)toe;
    http_server *srv = cls;
    request_state *st = *con_cls;
    if (!st)
        return;
    if (st->pp)
        mhd->MHD_destroy_post_processor(st->pp);
    close_spools(st);
    if (st->upload_slot)
        upload_slot_give(&srv->uploads, st->req.user ? st->req.user : "");
    for (int i = 0; i < st->req.nfields; i++) {
        free(st->req.fields[i].data);
        if (st->req.fields[i].path) {
            unlink(st->req.fields[i].path);
            free(st->req.fields[i].path);
        }
    }
    free(st->res.body);
    free(st->body);
    free(st->pending.body);
    if (st->deferred)
        pthread_mutex_destroy(&st->defer_lock);
    free(st);
    *con_cls = NULL;
}

/* Room in the process's descriptors for the connection limit (each of
 * them `per` descriptors: 2 over HTTPS, where libmicrohttpd's end of a
 * relay is one): the soft limit goes up to the hard one, and a limit that
 * still does not fit (with 64 left for the store, logs and jobs' pipes) is
 * lowered, so accept never fails with EMFILE while the host believes it
 * has room. */
static void fit_descriptors(http_limits *l, unsigned per)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0)
        return;
    rlim_t need = (rlim_t)l->max_connections * per + 64;
    if (r.rlim_cur < r.rlim_max && r.rlim_cur < need) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
        getrlimit(RLIMIT_NOFILE, &r);
    }
    if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < need) {
        unsigned fit = r.rlim_cur > 128 ? (unsigned)((r.rlim_cur - 64) / per) : 64;
        log_warn("--max-connections %u does not fit in %llu open files: using %u", l->max_connections,
                 (unsigned long long)r.rlim_cur, fit);
        l->max_connections = fit;
    }
}

/* libmicrohttpd's count of a connection the lane handed over or relays,
 * so that --max-connections counts it until libmicrohttpd closes it. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)socket_context;
    http_server *s = cls;
    const union MHD_ConnectionInfo *ci =
        mhd->MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!s->lane || !ci || !ci->client_addr || ci->client_addr->sa_family != AF_INET)
        return;
    uint32_t ip = ((const struct sockaddr_in *)ci->client_addr)->sin_addr.s_addr;
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        http_lane_hold(s->lane, ip);
    else
        http_lane_release(s->lane, ip);
}

/* libmicrohttpd's messages, to stderr (the log) as its own logger does,
 * but for its failure to set TCP options (a relay's end, a socket pair,
 * has none, once per reply) and a stream's client gone. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    if (strncmp(fmt, "Setting %s option", 17) == 0)
        return;
    /* a streamed reply's client left: how every event stream ends */
    if (strncmp(fmt, "Failed to send the chunked response body", 40) == 0)
        return;
    vfprintf(stderr, fmt, ap);
}

/* libmicrohttpd never speaks TLS itself: over HTTPS the lane does, and
 * hands libmicrohttpd plain relays. */
static struct MHD_Daemon *start_daemon(http_server *s, const struct sockaddr_in *addr)
{
    const http_config *cfg = &s->cfg;
    const http_limits *l = &cfg->limits;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO | MHD_USE_ERROR_LOG |
                     MHD_ALLOW_SUSPEND_RESUME;
    if (s->lane) /* the lane accepts and hands over */
        flags |= MHD_USE_NO_LISTEN_SOCKET;
    /* A pool of epoll threads: an idle or slow connection costs a socket and
     * a little memory, never a thread, so many of them cannot starve the
     * others. */
    return mhd->MHD_start_daemon(
        flags, (uint16_t)cfg->port, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
        NULL, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)addr, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)4,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)l->header_bytes,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
        s, MHD_OPTION_CONNECTION_TIMEOUT, l->idle_timeout_s, MHD_OPTION_CONNECTION_LIMIT,
        l->max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT, l->max_connections_per_ip,
        MHD_OPTION_END);
}

const http_config *http_server_config(const http_server *s) { return &s->cfg; }

int http_server_adopt(http_server *s, int fd, const struct sockaddr *addr, socklen_t len)
{
    return mhd->MHD_add_connection(s->daemon, fd, addr, len) == MHD_YES ? 0 : -1;
}

loom_error *http_server_start(const http_config *cfg, http_server **out)
{
    *out = NULL;
    if (!cfg->reply_error)
        return loom_err(LOOM_E_INVALID, "http server: no error replier given");
    for (const char *const *p = cfg->lane_prefixes; p && *p; p++)
        if (!**p || strlen(*p) > HTTP_LANE_PREFIX_MAX)
            return loom_err(LOOM_E_INVALID,
                            "http server: the lane prefix \"%s\" is empty or longer than %d bytes", *p,
                            HTTP_LANE_PREFIX_MAX);
    loom_error *loaded = mhd_lib(&mhd);
    if (loaded)
        return loaded;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->port)};
    if (inet_pton(AF_INET, cfg->address, &addr.sin_addr) != 1)
        return loom_err(LOOM_E_INVALID, "--listen: \"%s\" is not an IPv4 address", cfg->address);
    int tls = cfg->tls_cert_pem && cfg->tls_key_pem;
    http_server *s = calloc(1, sizeof *s);
    if (!s)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    s->cfg = *cfg;
    s->cfg.limits = http_limits_resolve(&cfg->limits);
    fit_descriptors(&s->cfg.limits, tls ? 2 : 1);
    if (!s->cfg.spool_dir)
        s->cfg.spool_dir = "/tmp";
    const http_limits *l = &s->cfg.limits;
    http_stream_set_init(&s->streams);
    if (upload_slots_init(&s->uploads, l->max_uploads, l->max_uploads_per_user) != 0 ||
        !(s->slow = workqueue_create("the slow-request queue", (int)l->slow_threads, l->slow_queue))) {
        http_server_stop(s);
        return loom_err(LOOM_E_INTERNAL, "out of memory, or a thread cannot start");
    }
    loom_error *e = tls ? lane_tls_create(cfg->tls_cert_pem, cfg->tls_key_pem, &s->tls) : NULL;
    if (e) {
        http_server_stop(s);
        return e;
    }
    /* HTTPS: every connection is the lane's, which terminates TLS */
    if ((cfg->lane_prefixes && cfg->lane_prefixes[0]) || tls) {
        unsigned threads = cfg->lane_threads ? cfg->lane_threads : HTTP_DEFAULT_LANE_THREADS;
        e = http_lane_start(s, &addr, threads, s->tls, &s->lane);
        if (e) {
            http_server_stop(s);
            return loom_err_wrap(e, "cannot listen on %s:%d", cfg->address, cfg->port);
        }
        addr.sin_port = htons((uint16_t)http_lane_port(s->lane));
    }
    s->daemon = start_daemon(s, &addr);
    if (!s->daemon) {
        http_server_stop(s);
        return loom_err(LOOM_E_UNAVAILABLE, "cannot listen on %s:%d (address in use or not permitted)",
                        cfg->address, cfg->port);
    }
    e = s->lane ? http_lane_accept(s->lane) : NULL;
    if (e) {
        http_server_stop(s);
        return e;
    }
    const union MHD_DaemonInfo *info =
        s->lane ? NULL : mhd->MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = s->lane ? http_lane_port(s->lane) : info ? info->port : cfg->port;
    *out = s;
    return NULL;
}

int http_server_port(const http_server *s) { return s->port; }

/* libmicrohttpd's stop, on a thread of its own so that the host's stop is
 * bounded: libmicrohttpd 0.9.75 can leave a worker thread waiting for a
 * mutex for good when the host stops while many connections still trickle
 * their headers, and MHD_stop_daemon then joins it forever. */
typedef struct daemon_stop {
    struct MHD_Daemon *daemon;
    pthread_mutex_t lock;
    pthread_cond_t done_cond;
    int done;
} daemon_stop;

static void *run_daemon_stop(void *arg)
{
    daemon_stop *ds = arg;
    mhd->MHD_stop_daemon(ds->daemon);
    pthread_mutex_lock(&ds->lock);
    ds->done = 1;
    pthread_cond_signal(&ds->done_cond);
    pthread_mutex_unlock(&ds->lock);
    return NULL;
}

/* Stops the daemon within HTTP_STOP_DEADLINE_S: 1 when it stopped, 0 when
 * it was left to the process's exit (its memory with it). */
static int stop_daemon_bounded(struct MHD_Daemon *daemon)
{
    static daemon_stop ds = {.lock = PTHREAD_MUTEX_INITIALIZER,
                             .done_cond = PTHREAD_COND_INITIALIZER};
    ds.daemon = daemon;
    ds.done = 0;
    pthread_t t;
    if (pthread_create(&t, NULL, run_daemon_stop, &ds) != 0) {
        mhd->MHD_stop_daemon(daemon);
        return 1;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += HTTP_STOP_DEADLINE_S;
    pthread_mutex_lock(&ds.lock);
    while (!ds.done && pthread_cond_timedwait(&ds.done_cond, &ds.lock, &until) == 0)
        ;
    int done = ds.done;
    pthread_mutex_unlock(&ds.lock);
    if (done) {
        pthread_join(t, NULL);
        return 1;
    }
    pthread_detach(t);
    log_warn("libmicrohttpd did not stop within %d s (a worker thread is stuck); the host "
             "stops without waiting for it",
             HTTP_STOP_DEADLINE_S);
    return 0;
}

void http_server_stop(http_server *s)
{
    if (!s)
        return;
    /* Slow requests finish first (their connections are resumed), since a
     * daemon must not stop with a connection suspended; later ones are
     * refused as the host shutting down. */
    if (s->slow)
        workqueue_drain(s->slow);
    /* Streams end too: their connections resume to say so. */
    http_stream_set_end_all(&s->streams);
    /* The lane stops handing connections over before the daemon stops; it
     * is freed after, since the daemon's callbacks count connections in it. */
    http_lane_halt(s->lane);
    if (s->daemon && !stop_daemon_bounded(s->daemon))
        return; /* its threads may still use the lane and the server */
    http_lane_stop(s->lane);
    lane_tls_free(s->tls);
    workqueue_destroy(s->slow);
    upload_slots_destroy(&s->uploads);
    http_stream_set_destroy(&s->streams);
    free(s);
}

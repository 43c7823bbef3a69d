/* tests/unit/api/lane_harness.c - see lane_harness.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lane_harness.h"

/* Bytes the process holds on its heap (ASan keeps its own count). */
#if defined(__SANITIZE_ADDRESS__)
#define LANE_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LANE_TEST_ASAN 1
#endif
#endif
#ifdef LANE_TEST_ASAN
size_t __sanitizer_get_current_allocated_bytes(void); /* the sanitizers' allocator interface */
size_t heap_in_use(void) { return __sanitizer_get_current_allocated_bytes(); }
#else
#include <malloc.h>
size_t heap_in_use(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}
#endif

/* ---- the server under test ------------------------------------------------ */

int lane_harness_failures;
atomic_int waiting_replies; /* deferred replies not yet given */
atomic_long requests_handled;

typedef struct later {
    http_pending *pending;
    http_response res;
    unsigned delay_ms;
} later;

static void *reply_later(void *arg)
{
    later *l = arg;
    if (l->delay_ms)
        usleep(l->delay_ms * 1000u);
    http_pending_reply(l->pending, &l->res);
    free(l->res.body);
    free(l);
    atomic_fetch_sub(&waiting_replies, 1);
    return NULL;
}

/* Echoes what it was given; "now" replies at once, "probe" too with the
 * count of requests handled before it, "slow" after 300 ms, "slower" after
 * 2.5 s, any other name from another thread at once. */
void echo(void *ctx, const http_request *req, http_response *res)
{
    (void)ctx;
    const char *name = req->params[0];
    long handled = atomic_fetch_add(&requests_handled, 1);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "seen", (double)handled);
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddNumberToObject(o, "len", (double)req->body_len);
    cJSON_AddStringToObject(o, "body", req->body_len < 1000 ? req->body : "(long)");
    const char *x = http_query(req, "x"), *y = http_query(req, "y"), *tag = http_header(req, "X-Tag");
    cJSON_AddStringToObject(o, "x", x ? x : "(none)");
    cJSON_AddStringToObject(o, "y", y ? y : "(none)");
    cJSON_AddStringToObject(o, "tag", tag ? tag : "(none)");
    cJSON_AddStringToObject(o, "user", req->user ? req->user : "(none)");
    if (strcmp(name, "now") == 0 || strcmp(name, "probe") == 0) {
        http_reply_json(res, 200, o);
        return;
    }
    later *l = calloc(1, sizeof *l);
    l->pending = http_defer(req);
    http_reply_json(&l->res, 200, o);
    l->delay_ms = strcmp(name, "slow") == 0 ? 300 : strcmp(name, "slower") == 0 ? 2500 : 0;
    atomic_fetch_add(&waiting_replies, 1);
    pthread_t t;
    pthread_create(&t, NULL, reply_later, l);
    pthread_detach(t);
}

void plain(void *ctx, const http_request *req, http_response *res)
{
    (void)ctx;
    (void)req;
    http_reply_data(res, 200, "text/plain", strdup("plain"), 5);
}

int authenticate(void *ctx, const http_request *req, char *user, size_t userlen,
                        int *is_admin, loom_error **why)
{
    (void)ctx;
    (void)why;
    const char *auth = http_header(req, "Authorization");
    if (!auth || strcmp(auth, "Bearer good") != 0)
        return -1;
    snprintf(user, userlen, "alice");
    *is_admin = 0;
    return 0;
}

const http_route lane_test_routes[LANE_TEST_NROUTES] = {
    {"POST", "/echo/{}", echo, HTTP_USER},
    {"GET", "/plain", plain, HTTP_PUBLIC},
    {"POST", "/other", plain, HTTP_PUBLIC},
    {"POST", "/v2/models/{}/infer", echo, HTTP_USER},
};

const char *const lane_test_prefixes[] = {"POST /echo/", "POST /v2/models/", NULL};

http_server *start_with(const http_limits *limits, const cors_policy *cors, unsigned lane_threads,
                               int *port)
{
    http_config cfg = {
        .address = "127.0.0.1",
        .max_body = 64 * 1024,
        .max_upload = 1 << 20,
        .routes = lane_test_routes,
        .nroutes = LANE_TEST_NROUTES,
        .authenticate = authenticate,
        .reply_error = api_reply_error,
        .cors = cors,
        .lane_prefixes = lane_test_prefixes,
        .lane_threads = lane_threads,
    };
    if (limits)
        cfg.limits = *limits;
    http_server *s = NULL;
    loom_error *e = http_server_start(&cfg, &s);
    if (e) {
        fprintf(stderr, "lane harness: the server does not start: %s\n", loom_err_message(e));
        lane_harness_failures++;
    }
    loom_err_free(e);
    *port = s ? http_server_port(s) : 0;
    return s;
}

http_server *start(const http_limits *limits, const cors_policy *cors, int *port)
{
    return start_with(limits, cors, 0, port);
}

void stop(http_server *s)
{
    for (int i = 0; i < 500 && atomic_load(&waiting_replies) > 0; i++)
        usleep(10 * 1000);
    http_server_stop(s);
}

/* ---- a client ------------------------------------------------------------ */

client *dial(int port)
{
    client *c = calloc(1, sizeof *c);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) {
        fprintf(stderr, "lane harness: cannot connect to port %d: %s\n", port, strerror(errno));
        lane_harness_failures++;
    }
    return c;
}

void hang_up(client *c)
{
    close(c->fd);
    free(c);
}

void say(client *c, const char *text, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(c->fd, text + off, len - off, MSG_NOSIGNAL);
        if (n <= 0)
            return;
        off += (size_t)n;
    }
}

void says(client *c, const char *text) { say(c, text, strlen(text)); }

/* More bytes from the socket: 0 when it closed or timed out. */
int fill(client *c)
{
    if (c->len == sizeof c->buf)
        return 0;
    ssize_t n = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
    if (n <= 0)
        return 0;
    c->len += (size_t)n;
    return 1;
}

void consume(client *c, size_t n)
{
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

/* One reply (status 0 when none came); a 1xx one is returned as such. */
reply hear(client *c)
{
    reply r = {0};
    char *end;
    for (;;) {
        end = c->len ? memmem(c->buf, c->len, "\r\n\r\n", 4) : NULL;
        if (end || !fill(c))
            break;
    }
    if (!end)
        return r;
    size_t head_len = (size_t)(end - c->buf) + 4;
    size_t copy = head_len < sizeof r.head ? head_len : sizeof r.head - 1;
    memcpy(r.head, c->buf, copy);
    r.head[copy] = 0;
    sscanf(r.head, "HTTP/1.%*d %d", &r.status);
    consume(c, head_len);
    if (r.status < 200)
        return r;
    const char *cl = strcasestr(r.head, "\r\nContent-Length:");
    r.body_len = cl ? strtoul(cl + 17, NULL, 10) : 0;
    while (c->len < r.body_len && fill(c))
        ;
    if (c->len < r.body_len) {
        r.status = 0;
        return r;
    }
    r.body = malloc(r.body_len + 1);
    memcpy(r.body, c->buf, r.body_len);
    r.body[r.body_len] = 0;
    consume(c, r.body_len);
    r.json = cJSON_Parse(r.body);
    return r;
}

/* One request on a connection of its own. */
reply ask_once(int port, const char *text)
{
    client *c = dial(port);
    says(c, text);
    reply r = hear(c);
    hang_up(c);
    return r;
}

void forget(reply *r)
{
    free(r->body);
    cJSON_Delete(r->json);
    memset(r, 0, sizeof *r);
}

const char *field(const reply *r, const char *name)
{
    const cJSON *v = cJSON_GetObjectItem(r->json, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* 1 when the server closed the connection (nothing more comes). */
int closed_by_server(client *c)
{
    char b[256];
    ssize_t n;
    do
        n = recv(c->fd, b, sizeof b, 0);
    while (n > 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

char *echo_request(const char *name, const char *body, const char *extra)
{
    char *t = NULL;
    if (asprintf(&t,
                 "POST /echo/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer good\r\n"
                 "Content-Type: application/json\r\nContent-Length: %zu\r\n%s\r\n%s",
                 name, strlen(body), extra ? extra : "", body) < 0)
        return NULL;
    return t;
}

/* ---- the tests ------------------------------------------------------------- */

/* Sends an echo request on c: 1 when it was answered. */
int answered(client *c, const char *name)
{
    char *req = echo_request(name, "{}", NULL);
    says(c, req);
    free(req);
    reply r = hear(c);
    int ok = r.status == 200;
    forget(&r);
    return ok;
}


/*
 * tests/unit/api/test_http_lane.c - the HTTP lane (http/http_lane_internal.h) on a
 * real socket: requests under its prefix are answered by it (deferred
 * replies from another thread, kept-alive and pipelined connections,
 * Expect: 100-continue, HTTP/1.0, chunked bodies, %-decoded paths and
 * query arguments); any other request reaches libmicrohttpd on the same
 * port, however slowly its first bytes come; refusals (401, 404, 400, 413,
 * 431) name what was wrong; idle connections are closed, waiting ones are
 * not; a client gone before its reply costs nothing. The harness is
 * lane_harness.h; the edges (deadlines, limits, CORS, start and stop) are
 * test_http_lane_limits.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "http/http.h"
#include "http/lane_request.h"
#include "check.h"
#include "wait.h"

#include "lane_harness.h"

static void test_keep_alive_and_deferred(int port)
{
    client *c = dial(port);
    const char *names[] = {"a", "now", "b"};
    for (int i = 0; i < 3; i++) {
        char *req = echo_request(names[i], "{\"k\":1}", "X-Tag: t1\r\n");
        says(c, req);
        free(req);
        reply r = hear(c);
        CHECK_MSG(r.status == 200, "request %d on one connection: %d", i, r.status);
        CHECK_STR_EQ(field(&r, "name"), names[i]);
        CHECK_STR_EQ(field(&r, "body"), "{\"k\":1}");
        CHECK_STR_EQ(field(&r, "tag"), "t1");
        CHECK_STR_EQ(field(&r, "user"), "alice");
        CHECK_CONTAINS(r.head, "\r\nDate: ");
        CHECK_CONTAINS(r.head, "\r\nContent-Type: application/json");
        CHECK_MSG(strcasestr(r.head, "Connection: close") == NULL, "kept alive: %s", r.head);
        forget(&r);
    }
    hang_up(c);
}

static void test_pipelined(int port)
{
    client *c = dial(port);
    char *one = echo_request("slow", "1", NULL), *two = echo_request("now", "22", NULL);
    char both[1024];
    snprintf(both, sizeof both, "%s%s", one, two);
    says(c, both); /* the second waits for the first's (slow) reply */
    reply r1 = hear(c), r2 = hear(c);
    CHECK_MSG(r1.status == 200 && r2.status == 200, "two pipelined: %d %d", r1.status, r2.status);
    CHECK_STR_EQ(field(&r1, "body"), "1");
    CHECK_STR_EQ(field(&r2, "body"), "22");
    forget(&r1);
    forget(&r2);
    /* after a lane request, a pipelined request for libmicrohttpd cannot be
     * handed over (its bytes were read): refused, then the connection closes */
    snprintf(both, sizeof both, "%sGET /plain HTTP/1.1\r\nHost: x\r\n\r\n", one);
    says(c, both);
    r1 = hear(c);
    r2 = hear(c);
    CHECK(r1.status == 200);
    CHECK_MSG(r2.status == 400, "a pipelined non-lane request: %d", r2.status);
    CHECK_CONTAINS(r2.body, "pipelined");
    CHECK(closed_by_server(c));
    forget(&r1);
    forget(&r2);
    hang_up(c);
    /* one that starts like the prefix ("POST /") and turns out to be
     * another route's is refused too: no other handler runs on the lane */
    c = dial(port);
    char *now = echo_request("now", "{}", NULL);
    snprintf(both, sizeof both, "%sPOST /", now);
    says(c, both);
    r1 = hear(c); /* answered: the rest comes in a later read than "POST /" */
    CHECK(r1.status == 200);
    says(c, "other HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    r2 = hear(c);
    CHECK_MSG(r2.status == 400, "a pipelined request for another route that began like the prefix: %d",
              r2.status);
    CHECK_CONTAINS(r2.body, "pipelined");
    forget(&r1);
    forget(&r2);
    hang_up(c);
    /* a client that pipelines three requests and closes its side is
     * answered all three, then the connection closes (its end is seen
     * while the first reply is deferred) */
    c = dial(port);
    snprintf(both, sizeof both, "%s%s%s", one, now, now);
    says(c, both);
    shutdown(c->fd, SHUT_WR);
    for (int i = 0; i < 3; i++) {
        r1 = hear(c);
        CHECK_MSG(r1.status == 200, "pipelined request %d before the client's end: %d", i + 1, r1.status);
        forget(&r1);
    }
    CHECK(closed_by_server(c));
    free(now);
    free(one);
    free(two);
    hang_up(c);
}

static void test_handed_over(int port)
{
    /* the same port serves libmicrohttpd's routes, kept alive */
    client *c = dial(port);
    for (int i = 0; i < 2; i++) {
        says(c, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
        reply r = hear(c);
        CHECK_MSG(r.status == 200 && r.body && strcmp(r.body, "plain") == 0,
                  "GET /plain through libmicrohttpd: %d", r.status);
        forget(&r);
    }
    hang_up(c);
    /* first bytes a few at a time: the decision waits for enough of them */
    const char *slow_lane = "POST /echo/now HTTP/1.1\r\nAuthorization: Bearer good\r\nContent-Length: 0\r\n\r\n";
    const char *slow_other = "POST /echoes HTTP/1.1\r\nContent-Length: 0\r\n\r\n";
    const char *texts[] = {slow_lane, slow_other};
    int expect[] = {200, 404};
    for (int t = 0; t < 2; t++) {
        c = dial(port);
        say(c, texts[t], 3);
        usleep(50 * 1000);
        say(c, texts[t] + 3, 5);
        usleep(50 * 1000);
        says(c, texts[t] + 8);
        reply r = hear(c);
        CHECK_MSG(r.status == expect[t], "request %d sent in pieces: %d (expected %d)", t, r.status,
                  expect[t]);
        forget(&r);
        hang_up(c);
    }
}

/* The prefixes' matcher: a whole prefix, the start of one (more bytes
 * decide), none; the longest prefix does not hide a shorter one. */
static void test_prefix_match(void)
{
    static const char *const two[] = {"POST /dlim/v1/inference/", "POST /v2/models/", NULL};
    static const char *const none[] = {NULL};
    const struct {
        const char *bytes;
        lane_match want;
    } cases[] = {
        {"POST /v2/models/m/infer HTTP/1.1", LANE_MATCH_FULL},
        {"POST /v2/models/", LANE_MATCH_FULL},
        {"POST /dlim/v1/inference/echo", LANE_MATCH_FULL},
        {"POST /", LANE_MATCH_PARTIAL},
        {"POST /v2/mo", LANE_MATCH_PARTIAL},
        {"POST /dlim/v1/inf", LANE_MATCH_PARTIAL},
        {"GET /v2/models/m", LANE_MATCH_NONE},
        {"POST /v2/modelz/", LANE_MATCH_NONE},
        {"POST /dlim/v1/deployment", LANE_MATCH_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lane_match m = lane_prefix_match(two, cases[i].bytes, strlen(cases[i].bytes));
        CHECK_MSG(m == cases[i].want, "\"%s\": %d, expected %d", cases[i].bytes, (int)m,
                  (int)cases[i].want);
    }
    CHECK(lane_prefix_match(two, NULL, 0) == LANE_MATCH_PARTIAL);
    CHECK(lane_prefix_match(none, NULL, 0) == LANE_MATCH_NONE);
    CHECK(lane_prefix_match(none, "POST /", 6) == LANE_MATCH_NONE);
}

/* A request for libmicrohttpd read after an inference call's reply (on a
 * kept-alive connection, which the lane reads rather than peeks at) is
 * relayed to it, and so is every later one on that connection; one sent
 * while the call's reply was pending, in a later segment, is such a
 * request too. */
static void test_relayed_after_call(int port)
{
    client *c = dial(port);
    CHECK(answered(c, "now"));
    for (int i = 0; i < 2; i++) {
        says(c, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
        reply r = hear(c);
        CHECK_MSG(r.status == 200 && r.body && strcmp(r.body, "plain") == 0,
                  "GET /plain %d after an inference call on one connection: %d", i + 1, r.status);
        forget(&r);
    }
    CHECK_MSG(answered(c, "b"), "an inference call on the relayed connection (libmicrohttpd's now)");
    hang_up(c);
    c = dial(port);
    char *slow = echo_request("slow", "{}", NULL);
    long before = atomic_load(&requests_handled);
    says(c, slow);
    free(slow);
    /* read by the lane (its handler called: its reply is 250 ms away), so
     * the next request comes in a later segment, not pipelined with it */
    WAIT_UNTIL(atomic_load(&requests_handled) > before, 5000);
    says(c, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
    reply r1 = hear(c), r2 = hear(c);
    CHECK_MSG(r1.status == 200, "the slow call: %d", r1.status);
    CHECK_MSG(r2.status == 200 && r2.body && strcmp(r2.body, "plain") == 0,
              "GET /plain sent while the call's reply was pending: %d", r2.status);
    forget(&r1);
    forget(&r2);
    hang_up(c);
}

/* The lane's second prefix: its requests are the lane's (a request for
 * libmicrohttpd pipelined after one is refused, which only the lane does),
 * a route under it that does not exist is answered 404 on a connection
 * kept alive, and a GET on the same path (not the prefix) reaches
 * libmicrohttpd. */
static void test_second_prefix(int port)
{
    static const char infer[] = "POST /v2/models/m1/infer HTTP/1.1\r\nHost: x\r\n"
                                "Authorization: Bearer good\r\nContent-Length: 2\r\n\r\n{}";
    client *c = dial(port);
    says(c, infer);
    reply r = hear(c);
    CHECK_MSG(r.status == 200, "POST /v2/models/m1/infer: %d", r.status);
    CHECK_STR_EQ(field(&r, "name"), "m1");
    forget(&r);
    says(c, "POST /v2/models/m1/ready HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    r = hear(c);
    CHECK_MSG(r.status == 404, "a route under the second prefix that does not exist: %d", r.status);
    forget(&r);
    char both[512];
    snprintf(both, sizeof both, "%sGET /plain HTTP/1.1\r\nHost: x\r\n\r\n", infer);
    says(c, both);
    reply r1 = hear(c), r2 = hear(c);
    CHECK_MSG(r1.status == 200, "the second prefix's request, kept alive: %d", r1.status);
    CHECK_MSG(r2.status == 400 && r2.body && strstr(r2.body, "pipelined"),
              "a request for libmicrohttpd pipelined after the second prefix's: %d", r2.status);
    forget(&r1);
    forget(&r2);
    hang_up(c);
    r = ask_once(port, "GET /v2/models/m1/infer HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK_MSG(r.status == 405, "GET on the infer route, through libmicrohttpd: %d", r.status);
    forget(&r);
}

static void test_refusals(int port)
{
    client *c = dial(port);
    says(c, "POST /echo/a HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}");
    reply r = hear(c);
    CHECK_MSG(r.status == 401, "no credentials: %d", r.status);
    forget(&r);
    says(c, "POST /echo/a/b HTTP/1.1\r\nAuthorization: Bearer good\r\nContent-Length: 0\r\n\r\n");
    r = hear(c);
    CHECK_MSG(r.status == 404, "no such route under the prefix: %d", r.status);
    forget(&r);
    hang_up(c);

    c = dial(port);
    says(c, "POST /echo/a HTTP/1.1\r\nContent-Length: nine\r\n\r\n");
    r = hear(c);
    CHECK_MSG(r.status == 400, "a malformed request: %d", r.status);
    CHECK_CONTAINS(r.body, "malformed HTTP request");
    CHECK(closed_by_server(c));
    forget(&r);
    hang_up(c);

    /* a body over max_body (64 KiB): 413 from the headers, before it is sent */
    r = ask_once(port, "POST /echo/a HTTP/1.1\r\nAuthorization: Bearer good\r\nContent-Length: 65537\r\n\r\n");
    CHECK_MSG(r.status == 413, "Content-Length over the limit: %d", r.status);
    CHECK_CONTAINS(r.body, "65536");
    forget(&r);
    /* ... and a chunked one that grows past it */
    c = dial(port);
    says(c, "POST /echo/a HTTP/1.1\r\nAuthorization: Bearer good\r\nTransfer-Encoding: chunked\r\n\r\n");
    char chunk[8200];
    int head = snprintf(chunk, sizeof chunk, "2000\r\n");
    memset(chunk + head, 'z', 0x2000);
    memcpy(chunk + head + 0x2000, "\r\n", 2);
    for (int i = 0; i < 9; i++)
        say(c, chunk, (size_t)head + 0x2000 + 2);
    r = hear(c);
    CHECK_MSG(r.status == 413, "a chunked body past the limit: %d", r.status);
    forget(&r);
    hang_up(c);
    /* ... but its framing does not count: 60,000 bytes in one-byte chunks
     * (360,000 bytes sent) are within it */
    c = dial(port);
    says(c, "POST /echo/now HTTP/1.1\r\nAuthorization: Bearer good\r\nTransfer-Encoding: chunked\r\n\r\n");
    char *tiny = malloc(60000 * 6 + 5);
    for (int i = 0; i < 60000; i++)
        memcpy(tiny + i * 6, "1\r\nq\r\n", 6);
    memcpy(tiny + 60000 * 6, "0\r\n\r\n", 5);
    say(c, tiny, 60000 * 6 + 5);
    free(tiny);
    r = hear(c);
    const cJSON *len = cJSON_GetObjectItem(r.json, "len");
    CHECK_MSG(r.status == 200 && cJSON_IsNumber(len) && len->valuedouble == 60000,
              "a 60,000-byte body in one-byte chunks: %d, %s", r.status, r.body ? r.body : "");
    forget(&r);
    hang_up(c);

    /* headers: about 7 KB pass at the default --max-header-bytes on either
     * path; the lane refuses past 8192 - 1024 bytes, libmicrohttpd a little
     * later (its bookkeeping shares the buffer); past 64 headers, 431 too */
    size_t sizes[] = {7000, 7500, 8000};
    int expect[] = {200, 431, 431};
    for (int i = 0; i < 3; i++) {
        char *pad = malloc(sizes[i] + 1);
        memset(pad, 'p', sizes[i]);
        pad[sizes[i]] = 0;
        char *extra = NULL;
        if (asprintf(&extra, "X-Pad: %s\r\n", pad) < 0)
            extra = NULL;
        char *req = echo_request("now", "", extra);
        r = ask_once(port, req);
        CHECK_MSG(r.status == expect[i], "%zu bytes of headers: %d (expected %d)", sizes[i], r.status,
                  expect[i]);
        if (expect[i] == 431) {
            CHECK_CONTAINS(r.body, "--max-header-bytes 8192");
            const cJSON *st = cJSON_GetObjectItem(r.json, "status");
            CHECK(cJSON_IsNumber(st) && st->valueint == 431);
        }
        forget(&r);
        /* libmicrohttpd's routes agree */
        char *get = NULL;
        if (sizes[i] != 7500 && asprintf(&get, "GET /plain HTTP/1.1\r\n%s\r\n", extra) > 0) {
            r = ask_once(port, get);
            /* libmicrohttpd, its buffer full, at times has no room left to
             * make the 431 and closes without one */
            CHECK_MSG(r.status == expect[i] || (expect[i] == 431 && r.status == 0),
                      "%zu bytes of headers to libmicrohttpd: %d", sizes[i], r.status);
            forget(&r);
        }
        free(get);
        free(req);
        free(extra);
        free(pad);
    }
    char many[4096] = "";
    for (int i = 0; i < 70; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "X-H%d: v\r\n", i);
    char *req = echo_request("now", "", many);
    r = ask_once(port, req);
    CHECK_MSG(r.status == 431, "70 headers: %d", r.status);
    forget(&r);
    free(req);
}

static void test_protocol(int port)
{
    /* Expect: 100-continue is answered before the body is sent */
    client *c = dial(port);
    says(c, "POST /echo/a HTTP/1.1\r\nAuthorization: Bearer good\r\nContent-Length: 5\r\n"
            "Expect: 100-continue\r\n\r\n");
    reply r = hear(c);
    CHECK_MSG(r.status == 100, "100 Continue before the body: %d", r.status);
    says(c, "hello");
    r = hear(c);
    CHECK(r.status == 200);
    CHECK_STR_EQ(field(&r, "body"), "hello");
    forget(&r);
    hang_up(c);

    /* HTTP/1.0: closed after the reply unless asked to keep it alive */
    c = dial(port);
    says(c, "POST /echo/now HTTP/1.0\r\nAuthorization: Bearer good\r\nContent-Length: 0\r\n\r\n");
    r = hear(c);
    CHECK(r.status == 200);
    CHECK(closed_by_server(c));
    forget(&r);
    hang_up(c);
    c = dial(port);
    for (int i = 0; i < 2; i++) {
        says(c, "POST /echo/a HTTP/1.0\r\nConnection: keep-alive\r\nAuthorization: Bearer good\r\n"
                "Content-Length: 0\r\n\r\n");
        r = hear(c);
        CHECK_MSG(r.status == 200, "HTTP/1.0 keep-alive, request %d: %d", i, r.status);
        CHECK_MSG(strcasestr(r.head, "Connection: keep-alive") != NULL, "%s", r.head);
        forget(&r);
    }
    hang_up(c);

    /* a chunked body, a %-encoded path and query arguments */
    c = dial(port);
    says(c, "POST /echo/a%62c?x=1&y=two%20words HTTP/1.1\r\nAuthorization: Bearer good\r\n"
            "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n");
    r = hear(c);
    CHECK(r.status == 200);
    CHECK_STR_EQ(field(&r, "name"), "abc");
    CHECK_STR_EQ(field(&r, "body"), "abcdefg");
    CHECK_STR_EQ(field(&r, "x"), "1");
    CHECK_STR_EQ(field(&r, "y"), "two words");
    forget(&r);

    /* a body that comes in many reads */
    size_t big = 60000;
    char *body = malloc(big + 1);
    memset(body, 'b', big);
    body[big] = 0;
    char *req = echo_request("b", body, NULL);
    size_t len = strlen(req);
    for (size_t off = 0; off < len; off += 7000) {
        say(c, req + off, len - off < 7000 ? len - off : 7000);
        usleep(2000);
    }
    r = hear(c);
    const cJSON *n = cJSON_GetObjectItem(r.json, "len");
    CHECK_MSG(r.status == 200 && cJSON_IsNumber(n) && n->valuedouble == (double)big,
              "a 60,000-byte body in pieces: %d", r.status);
    forget(&r);
    free(req);
    free(body);
    hang_up(c);
}

static void test_client_gone(int port)
{
    /* the client leaves while its reply is pending; the reply comes to a
     * connection already closed, and the server goes on */
    for (int i = 0; i < 5; i++) {
        client *c = dial(port);
        long before = atomic_load(&requests_handled);
        char *req = echo_request("slow", "{}", NULL);
        says(c, req);
        free(req);
        WAIT_UNTIL(atomic_load(&requests_handled) > before, 5000);
        CHECK_MSG(atomic_load(&requests_handled) > before, "slow request %d reached its handler", i);
        hang_up(c);
    }
    WAIT_UNTIL(atomic_load(&waiting_replies) == 0, 5000);
    CHECK_MSG(atomic_load(&waiting_replies) == 0, "the five slow replies were given: %d left",
              atomic_load(&waiting_replies));
    client *c = dial(port);
    char *req = echo_request("a", "{}", NULL);
    says(c, req);
    free(req);
    reply r = hear(c);
    CHECK_MSG(r.status == 200, "after five clients left early: %d", r.status);
    forget(&r);
    hang_up(c);
}

/* Mangled requests (bytes changed, inserted, cut; a fixed seed), each
 * followed by the client's end of sending: whatever the lane makes of
 * them, it goes on answering. */
static void test_mangled(int port)
{
    const char *good = "POST /echo/a?x=1 HTTP/1.1\r\nAuthorization: Bearer good\r\n"
                       "Transfer-Encoding: chunked\r\nX-Tag: t\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
                       "POST /echo/now HTTP/1.1\r\nAuthorization: Bearer good\r\n"
                       "Content-Length: 4\r\n\r\nwxyz";
    const char alphabet[] = "\r\n :%?&=0123456789abcdefABCDEF\t\x7f\x80\xff";
    unsigned seed = 12345;
    size_t good_len = strlen(good);
    char text[512];
    int survived = 1;
    for (int i = 0; i < 300 && survived; i++) {
        memcpy(text, good, good_len);
        size_t len = good_len;
        int edits = 1 + rand_r(&seed) % 4;
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)rand_r(&seed) % len;
            char ch = alphabet[rand_r(&seed) % (int)(sizeof alphabet - 1)];
            switch (rand_r(&seed) % 3) {
            case 0: text[at] = ch; break;
            case 1:
                if (len + 1 < sizeof text) {
                    memmove(text + at + 1, text + at, len - at);
                    text[at] = ch;
                    len++;
                }
                break;
            default: len = at + 1; break;
            }
        }
        client *c = dial(port);
        say(c, text, len);
        shutdown(c->fd, SHUT_WR);
        /* whatever comes, the server closes the connection (well before the
         * client's 5 s wait or the idle timeout) */
        int closed = closed_by_server(c);
        CHECK_MSG(closed, "mangled request %d closed by the server: [%.*s]", i, (int)len, text);
        hang_up(c);
        if (i % 50 == 49) {
            c = dial(port);
            survived = answered(c, "now");
            CHECK_MSG(survived, "answering after %d mangled requests", i + 1);
            hang_up(c);
        }
    }
}

/* ---- a long pipeline ------------------------------------------------------- */

typedef struct flood {
    int fd;
    int requests;
} flood;

static void *send_flood(void *arg)
{
    flood *f = arg;
    char *slow = echo_request("slow", "{}", NULL), *now = echo_request("now", "{}", NULL);
    char *last = echo_request("now", "{}", "Connection: close\r\n");
    size_t slow_len = strlen(slow), now_len = strlen(now);
    /* a batch of requests per send, so the client keeps up with the server */
    size_t per = 64;
    char *batch = malloc(now_len * per);
    for (size_t i = 0; i < per; i++)
        memcpy(batch + i * now_len, now, now_len);
    int ok = send(f->fd, slow, slow_len, MSG_NOSIGNAL) == (ssize_t)slow_len;
    for (int sent = 0; ok && sent < f->requests - 2;) {
        size_t n = (size_t)(f->requests - 2 - sent) < per ? (size_t)(f->requests - 2 - sent) : per;
        for (size_t off = 0; ok && off < n * now_len;) {
            ssize_t w = send(f->fd, batch + off, n * now_len - off, MSG_NOSIGNAL);
            ok = w > 0;
            off += ok ? (size_t)w : 0;
        }
        sent += (int)n;
    }
    if (ok)
        ok = send(f->fd, last, strlen(last), MSG_NOSIGNAL) == (ssize_t)strlen(last);
    free(batch);
    free(slow);
    free(now);
    free(last);
    return NULL;
}

/* Occurrences of mark in buf[0, len) that end past `old` (those ending
 * inside the first `old` bytes were counted with the last read). */
static int count_marks(const char *buf, size_t len, size_t old, const char *mark)
{
    size_t m = strlen(mark);
    int n = 0;
    for (const char *p = buf; (p = memmem(p, (size_t)(buf + len - p), mark, m)) != NULL; p++)
        n += (size_t)(p - buf) + m > old;
    return n;
}

/* Replies counted as they come (status lines), until the server closes. */
static int count_replies(int fd, int *ok_count)
{
    static char buf[1 << 16];
    const size_t carry = 12; /* strlen("HTTP/1.1 200") : a mark cut by a read */
    size_t kept = 0;
    int all = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + kept, sizeof buf - kept, 0);
        if (n <= 0)
            break;
        size_t len = kept + (size_t)n;
        all += count_marks(buf, len, kept, "HTTP/1.");
        *ok_count += count_marks(buf, len, kept, "HTTP/1.1 200 ");
        kept = len < carry ? len : carry;
        memmove(buf, buf + len - kept, kept);
    }
    return all;
}

/* Tens of thousands of pipelined requests answered at once, queued behind
 * a deferred one: the lane answers each in turn without its stack growing
 * with the pipeline's length, and goes on serving. */
static void test_long_pipeline(int port)
{
    client *c = dial(port);
    struct timeval tv = {.tv_sec = 30};
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    flood f = {.fd = c->fd, .requests = 200000};
    pthread_t t;
    pthread_create(&t, NULL, send_flood, &f);
    int ok = 0, all = count_replies(c->fd, &ok);
    pthread_join(t, NULL);
    CHECK_MSG(all == f.requests && ok == f.requests, "a pipeline of %d: %d replies, %d of them 200",
              f.requests, all, ok);
    hang_up(c);
    c = dial(port);
    CHECK_MSG(answered(c, "now"), "answering after the long pipeline");
    hang_up(c);
}

typedef struct counted {
    int fd, all, ok;
} counted;

static void *count_in_background(void *arg)
{
    counted *k = arg;
    k->all = count_replies(k->fd, &k->ok);
    return NULL;
}

/* On a server with one lane loop, a connection with a long pipeline gets
 * turns of LANE_TURN_REQUESTS (64) replies: another connection's request
 * is answered after at most a few turns, not after the pipeline. */
static void test_fair_turns(void)
{
    int port;
    http_server *s = start_with(NULL, NULL, 1, &port);
    client *a = dial(port);
    struct timeval tv = {.tv_sec = 30};
    setsockopt(a->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    flood f = {.fd = a->fd, .requests = 400000};
    counted k = {.fd = a->fd};
    pthread_t sender, reader;
    long start = atomic_load(&requests_handled);
    pthread_create(&sender, NULL, send_flood, &f);
    pthread_create(&reader, NULL, count_in_background, &k);
    /* past the pipeline's first (slow) reply, a few turns into the rest */
    WAIT_UNTIL(atomic_load(&requests_handled) - start > 4 * 64, 10 * 1000);
    CHECK_MSG(atomic_load(&requests_handled) - start > 4 * 64, "the pipeline is being answered: %ld",
              atomic_load(&requests_handled) - start);
    client *b = dial(port);
    long before = atomic_load(&requests_handled);
    char *probe = echo_request("probe", "{}", NULL);
    says(b, probe);
    free(probe);
    reply r = hear(b);
    const cJSON *seen = cJSON_GetObjectItem(r.json, "seen");
    long waited = cJSON_IsNumber(seen) ? (long)seen->valuedouble - before : -1;
    CHECK_MSG(r.status == 200 && waited >= 0 && waited < 2000,
              "a request beside a long pipeline waited for %ld of its requests", waited);
    CHECK_MSG(before - start < f.requests - 2000,
              "the pipeline was still going when the probe came (%ld handled)", before - start);
    forget(&r);
    hang_up(b);
    pthread_join(sender, NULL);
    pthread_join(reader, NULL);
    CHECK_MSG(k.all == f.requests && k.ok == f.requests, "the pipeline: %d of %d replies (%d 200)", k.all,
              f.requests, k.ok);
    hang_up(a);
    stop(s);
}

/* Connections that sent a large body and stay open keep no large buffer:
 * 16 of them, each after a 60,000-byte request, hold far less than the
 * 16 x 72 KiB their buffers grew to. */
static void test_idle_buffers(int port)
{
    enum { CONNS = 16 };
    client *c[CONNS];
    for (int i = 0; i < CONNS; i++)
        c[i] = dial(port);
    size_t before = heap_in_use();
    char *body = malloc(60001);
    memset(body, 'b', 60000);
    body[60000] = 0;
    char *req = echo_request("now", body, NULL);
    int answered_all = 1;
    for (int i = 0; i < CONNS; i++) {
        says(c[i], req);
        reply r = hear(c[i]);
        answered_all &= r.status == 200;
        forget(&r);
    }
    free(req);
    free(body);
    size_t after = heap_in_use();
    long grew = (long)after - (long)before;
    CHECK_MSG(answered_all, "16 large requests answered");
    CHECK_MSG(grew < CONNS * 16 * 1024, "16 idle connections after large requests: the heap grew by %ld bytes",
              grew);
    for (int i = 0; i < CONNS; i++)
        hang_up(c[i]);
}

/* A connection the lane closes while a forked child still holds a copy of
 * its descriptor (as a kernel process does between fork and exec): the
 * bytes that come after the close wake nobody, and the server goes on. */
static void test_close_while_forked(int port)
{
    client *c = dial(port);
    says(c, "POST /echo/a HTTP/1.1\r\nAuthorization: Bearer good\r\nContent-Length: 2\r\n\r\n{}");
    reply r = hear(c); /* accepted and answered: the server holds its socket */
    forget(&r);
    pid_t child = fork();
    if (child == 0) {
        struct timespec t = {.tv_sec = 1};
        nanosleep(&t, NULL);
        _exit(0);
    }
    says(c, "POST /echo/a HTTP/1.1\r\nContent-Length: nope\r\n\r\n");
    r = hear(c);
    CHECK_MSG(r.status == 400, "a malformed request is refused and the connection closed: %d", r.status);
    forget(&r);
    says(c, "more bytes after the close");
    /* they wait in the socket the child holds; it ends with the child */
    CHECK_MSG(closed_by_server(c), "the connection ends once the child's copy is gone");
    hang_up(c);
    waitpid(child, NULL, 0);
    c = dial(port);
    CHECK_MSG(answered(c, "now"), "answering after a close while a child held the socket");
    hang_up(c);
}

int main(void)
{
    test_prefix_match();
    int port;
    http_server *s = start(NULL, NULL, &port);
    if (!s)
        return CHECK_DONE();
    test_keep_alive_and_deferred(port);
    test_pipelined(port);
    test_handed_over(port);
    test_second_prefix(port);
    test_relayed_after_call(port);
    test_refusals(port);
    test_protocol(port);
    test_client_gone(port);
    test_mangled(port);
    test_long_pipeline(port);
    test_idle_buffers(port);
    test_close_while_forked(port);
    stop(s);
    test_fair_turns();
    CHECK_MSG(lane_harness_failures == 0, "the harness failed %d time(s)", lane_harness_failures);
    return CHECK_DONE();
}

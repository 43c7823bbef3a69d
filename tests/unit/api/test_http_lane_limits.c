/*
 * tests/unit/api/test_http_lane_limits.c - the HTTP lane at its edges: a
 * request's header deadline on both paths, clients connecting while the
 * server starts and stops, CORS on the lane, and the connection limits
 * counted across the lane and libmicrohttpd.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api/status.h"
#include "http/http.h"
#include "check.h"
#include "lane_harness.h"
#include "wait.h"

/* Headers that trickle in, one line at a time, are answered 408 once the
 * header deadline passes, on both paths (the lane's own requests and those
 * it hands to libmicrohttpd), however steadily they come. */
static int trickle_until_answered(client *c, const char *first_line, double *seconds)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    says(c, first_line);
    for (int i = 0; i < 40; i++) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, 250) > 0)
            break;
        char line[64];
        snprintf(line, sizeof line, "X-Trickle-%d: y\r\n", i);
        says(c, line);
    }
    reply r = hear(c);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    int status = r.status;
    forget(&r);
    return status;
}

static void test_header_deadline(void)
{
    http_limits limits = {.header_timeout_s = 1};
    int port;
    http_server *s = start(&limits, NULL, &port);
    if (!s)
        return;
    static const char *const first_lines[] = {"GET /plain HTTP/1.1\r\n",
                                              "POST /echo/slow HTTP/1.1\r\n"};
    for (int k = 0; k < 2; k++) {
        client *c = dial(port);
        double took = 0;
        int status = trickle_until_answered(c, first_lines[k], &took);
        CHECK_MSG(status == 408, "%s trickled: answered %d", first_lines[k], status);
        CHECK_MSG(took >= 0.9 && took < 5, "answered after %.2f s (deadline 1 s): %s", took,
                  first_lines[k]);
        CHECK_MSG(closed_by_server(c), "and the connection closes");
        hang_up(c);
    }
    /* a request sent whole is still answered, on both paths */
    reply r = ask_once(port, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(r.status == 200);
    forget(&r);
    stop(s);
}

/* Clients that connect while the server starts: the lane must not take a
 * connection before libmicrohttpd, to which it hands it, has started (it
 * crashed the host when a monitor polled during a restart). */
static atomic_int hammering;

static void *hammer(void *arg)
{
    int port = *(int *)arg;
    static const char get[] = "GET /plain HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    while (atomic_load(&hammering)) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
        struct timeval tv = {.tv_sec = 1};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        /* one connection at a time, read to its end: a monitor's poll, not
         * a flood that the per-address limit would refuse */
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
            send(fd, get, sizeof get - 1, MSG_NOSIGNAL) > 0) {
            char buf[512];
            while (recv(fd, buf, sizeof buf, 0) > 0)
                ;
        }
        close(fd);
    }
    return NULL;
}

static void test_start_while_clients_connect(void)
{
    int probe = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    socklen_t alen = sizeof a;
    bind(probe, (struct sockaddr *)&a, sizeof a);
    getsockname(probe, (struct sockaddr *)&a, &alen);
    int port = ntohs(a.sin_port);
    close(probe);
    atomic_store(&hammering, 1);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, hammer, &port);
    int started = 0, answered_after = 0;
    for (int round = 0; round < 40; round++) {
        http_config cfg = {
            .address = "127.0.0.1",
            .port = port,
            .max_body = 64 * 1024,
            .routes = lane_test_routes,
            .nroutes = LANE_TEST_NROUTES,
            .authenticate = authenticate,
            .reply_error = api_reply_error,
            .lane_prefixes = lane_test_prefixes,
        };
        http_server *s = NULL;
        loom_error *e = http_server_start(&cfg, &s);
        loom_err_free(e);
        if (!s)
            continue; /* the port briefly taken by a hammering client's socket */
        started++;
        reply r = ask_once(port, "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
        answered_after += r.status == 200;
        if (r.status != 200)
            fprintf(stderr, "start %d: the probe got %d\n", round, r.status);
        forget(&r);
        http_server_stop(s);
    }
    atomic_store(&hammering, 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK_MSG(started >= 30, "the server started %d of 40 times", started);
    CHECK_MSG(answered_after == started, "answered after %d of %d starts", answered_after, started);
}

static void test_cors(void)
{
    const char *origins[] = {"https://ui.example"};
    cors_policy *p = NULL;
    loom_error *e = cors_policy_create(origins, 1, &p);
    CHECK(e == NULL);
    loom_err_free(e);
    int port;
    http_server *s = start(NULL, p, &port);
    client *c = dial(port);
    char *req = echo_request("a", "{}", "Origin: https://ui.example\r\n");
    says(c, req);
    free(req);
    reply r = hear(c);
    CHECK(r.status == 200);
    CHECK_CONTAINS(r.head, "Access-Control-Allow-Origin: https://ui.example");
    forget(&r);
    req = echo_request("a", "{}", "Origin: https://evil.example\r\n");
    says(c, req);
    free(req);
    r = hear(c);
    CHECK(r.status == 200);
    CHECK_MSG(strstr(r.head, "Access-Control-Allow-Origin") == NULL, "no CORS for an unlisted origin");
    forget(&r);
    hang_up(c);
    /* a refusal made while the headers are read carries them too */
    char pad[7600];
    memset(pad, 'p', sizeof pad - 1);
    pad[sizeof pad - 1] = 0;
    char *extra = NULL;
    if (asprintf(&extra, "Origin: https://ui.example\r\nX-Pad: %s\r\n", pad) < 0)
        extra = NULL;
    req = echo_request("a", "{}", extra);
    c = dial(port);
    says(c, req);
    r = hear(c);
    CHECK_MSG(r.status == 431, "headers too large, with an Origin: %d", r.status);
    CHECK_CONTAINS(r.head, "Access-Control-Allow-Origin: https://ui.example");
    forget(&r);
    hang_up(c);
    free(req);
    free(extra);
    c = dial(port);
    CHECK_MSG(answered(c, "now"), "the server answers after it");
    hang_up(c);
    stop(s);
    cors_policy_free(p);
}

/* Whether a new connection is answered (a place is free for it). */
static int new_one_answered(int port)
{
    client *d = dial(port);
    int ok = answered(d, "now");
    hang_up(d);
    return ok;
}

/* Two new connections, both answered, kept in *a and *b: 0 (none kept)
 * while the places of connections closed a moment ago are still counted. */
static int two_answered(int port, client **a, client **b)
{
    *a = dial(port);
    *b = dial(port);
    if (answered(*a, "now") && answered(*b, "now"))
        return 1;
    hang_up(*a);
    hang_up(*b);
    *a = *b = NULL;
    return 0;
}

static void test_limits(void)
{
    http_limits lim = {.max_connections_per_ip = 3, .idle_timeout_s = 1};
    int port;
    http_server *s = start(&lim, NULL, &port);
    client *c[4];
    for (int i = 0; i < 3; i++)
        c[i] = dial(port);
    c[3] = dial(port);
    CHECK_MSG(!answered(c[3], "now") && closed_by_server(c[3]),
              "a fourth connection from one address is closed");
    hang_up(c[3]);
    /* connections handed to libmicrohttpd count as well */
    for (int i = 0; i < 3; i++) {
        says(c[i], "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
        reply r = hear(c[i]);
        CHECK(r.status == 200);
        forget(&r);
    }
    c[3] = dial(port);
    CHECK_MSG(!answered(c[3], "now"), "a fourth, while three are libmicrohttpd's, is closed");
    hang_up(c[3]);
    /* one of them closed: its place is given back */
    hang_up(c[0]);
    int ok = 0;
    WAIT_UNTIL((ok = new_one_answered(port)) != 0, 5000);
    CHECK_MSG(ok, "a connection closed gives its place back");
    hang_up(c[1]);
    hang_up(c[2]);

    /* idle: a connection silent after its reply is closed after the
     * timeout; one waiting for a slow reply is not (two new connections,
     * once the closed ones' places are given back) */
    client *idle = NULL, *waiting = NULL;
    WAIT_UNTIL(two_answered(port, &idle, &waiting), 5000);
    CHECK_MSG(idle && waiting, "two places free again once three connections closed");
    if (!idle || !waiting) {
        stop(s);
        return;
    }
    char *req = echo_request("slower", "{}", NULL);
    says(waiting, req);
    free(req);
    time_t t0 = time(NULL);
    CHECK(closed_by_server(idle));
    CHECK_MSG(time(NULL) - t0 <= 4, "the idle one closed within the timeout and a sweep");
    reply r = hear(waiting);
    CHECK_MSG(r.status == 200, "the one waiting 2.5 s for its reply got it: %d", r.status);
    forget(&r);
    hang_up(idle);
    hang_up(waiting);
    stop(s);
}

/* A connection relayed to libmicrohttpd (a request for it read after an
 * inference call) counts once against the per-address limit, as long as
 * it is open. */
static void test_relay_counts(void)
{
    http_limits lim = {.max_connections_per_ip = 3};
    int port;
    http_server *s = start(&lim, NULL, &port);
    client *c[4];
    for (int i = 0; i < 2; i++) {
        c[i] = dial(port);
        CHECK(answered(c[i], "now"));
        says(c[i], "GET /plain HTTP/1.1\r\nHost: x\r\n\r\n");
        reply r = hear(c[i]);
        CHECK_MSG(r.status == 200, "relayed GET /plain %d: %d", i + 1, r.status);
        forget(&r);
    }
    c[2] = dial(port);
    CHECK_MSG(answered(c[2], "now"), "a third connection while two are relayed (limit 3)");
    c[3] = dial(port);
    CHECK_MSG(!answered(c[3], "now"), "a fourth is closed");
    hang_up(c[3]);
    hang_up(c[0]);
    int ok = 0;
    WAIT_UNTIL((ok = new_one_answered(port)) != 0, 5000);
    CHECK_MSG(ok, "a relayed connection closed gives its place back");
    hang_up(c[1]);
    hang_up(c[2]);
    stop(s);
}

int main(void)
{
    test_start_while_clients_connect();
    test_header_deadline();
    test_cors();
    test_limits();
    test_relay_counts();
    CHECK_MSG(lane_harness_failures == 0, "the harness failed %d time(s)", lane_harness_failures);
    return CHECK_DONE();
}

/*
 * tests/unit/api/lane_harness.h - what the HTTP lane's tests share: a server
 * with the lane in front (routes: POST /echo/{} and POST /v2/models/{}/infer
 * answered by the lane, later from another thread when asked; GET /plain
 * and POST /other by libmicrohttpd), and a client that speaks raw HTTP on a socket.
 */
#ifndef LOOM_TEST_LANE_HARNESS_H
#define LOOM_TEST_LANE_HARNESS_H

#include <stdatomic.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "api/status.h"
#include "http/http.h"

/* Bytes the process holds on its heap (ASan keeps its own count). */
size_t heap_in_use(void);

/* What went wrong inside the harness (a server that did not start, a
 * connect refused): each test's main checks it is 0. */
extern int lane_harness_failures;

/* ---- the server under test ---- */
extern atomic_int waiting_replies; /* deferred replies not yet given */
extern atomic_long requests_handled;
#define LANE_TEST_NROUTES 4
extern const http_route lane_test_routes[LANE_TEST_NROUTES];
/* The lane's: "POST /echo/" and "POST /v2/models/" */
extern const char *const lane_test_prefixes[];
int authenticate(void *ctx, const http_request *req, char *user, size_t userlen, int *is_admin,
                 loom_error **why);
http_server *start_with(const http_limits *limits, const cors_policy *cors, unsigned lane_threads,
                        int *port);
http_server *start(const http_limits *limits, const cors_policy *cors, int *port);
/* Stops it once every deferred reply went out (waiting at most 5 s). */
void stop(http_server *s);

/* ---- a client ---- */
typedef struct client {
    int fd;
    char buf[256 * 1024];
    size_t len; /* bytes read past the last reply */
} client;

typedef struct reply {
    int status;
    char head[4096];
    char *body;
    size_t body_len;
    cJSON *json;
} reply;

client *dial(int port);
void hang_up(client *c);
void say(client *c, const char *text, size_t len);
void says(client *c, const char *text);
/* Reads more: 0 when the connection ended or timed out. */
int fill(client *c);
void consume(client *c, size_t n);
/* The next reply; status 0 when none came whole. */
reply hear(client *c);
/* One request on a connection of its own. */
reply ask_once(int port, const char *text);
void forget(reply *r);
const char *field(const reply *r, const char *name);
int closed_by_server(client *c);
/* Whether an echo call named `name` on c is answered 200. */
int answered(client *c, const char *name);
/* An echo request for NAME with BODY and EXTRA header lines (malloc'd). */
char *echo_request(const char *name, const char *body, const char *extra);

#endif

/* api/routes_events.c - see events.h. */
#include "api/events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/routes.h"
#include "http/credentials.h"
#include "util/fs.h"

/* An event kind: its name, the GET route whose reply it carries and, for
 * one exec, task or model (a detail page's), the query key naming it. */
typedef struct event_kind {
    const char *name;
    const http_route *table;
    const size_t *count;
    const char *pattern;
    const char *subject_key; /* NULL: a list, sent on a stream without a subject */
} event_kind;

static const event_kind kinds[] = {
    {"slots", loom_sched_routes, &loom_sched_route_count, LOOM_ROUTE_SLOTS, NULL},
    {"execs", loom_exec_routes, &loom_exec_route_count, LOOM_ROUTE_EXECS, NULL},
    {"models", loom_infer_routes, &loom_infer_route_count, LOOM_ROUTE_MODELS, NULL},
    {"exec", loom_exec_routes, &loom_exec_route_count, LOOM_ROUTE_EXECS "/{}", "exec"},
    {"task", loom_hpo_routes, &loom_hpo_route_count, LOOM_ROUTE_HPO "/{}", "task"},
    {"model", loom_infer_routes, &loom_infer_route_count, LOOM_ROUTE_MODELS "/{}", "model"},
};
#define NKINDS (sizeof kinds / sizeof *kinds)
#define LISTS_ONLY NKINDS /* a subscriber's subject_kind without a subject */

typedef struct subscriber {
    http_stream *stream;
    char user[64];
    int is_admin;
    /* the token that opened it (Bearer or the console's cookie), checked
     * every round: logging off or its expiry ends the stream; "": Basic,
     * whose password was checked once, at the open */
    char token[HTTP_CRED_TOKEN_MAX];
    size_t subject_kind;           /* the one kind it follows, or LISTS_ONLY */
    char subject[EVENTS_SUBJECT_MAX]; /* that kind's exec id, task or model name */
    char *last[NKINDS]; /* each event's data as last sent */
    int64_t last_write_ms;
    struct subscriber *next;
} subscriber;

struct api_events {
    api_services *d;
    unsigned per_user;
    http_handler handlers[NKINDS];
    pthread_t thread;
    pthread_mutex_t lock; /* the list's links and the flags below */
    pthread_cond_t wake;
    int stop, started, fresh;
    subscriber *head; /* added by the route at the head; unlinked by the hub only */
};

/* The rendering requests carry no header and no query. */
static const char *no_value(const http_request *req, const char *name)
{
    (void)req;
    (void)name;
    return NULL;
}
static http_pending *no_defer(const http_request *req)
{
    (void)req;
    return NULL;
}
static const http_transport render_transport = {no_value, no_value, no_defer};

/* Kind k's reply for s: its route's, as s's user, about s's subject. */
static void render_reply(api_events *ev, size_t k, const subscriber *s, http_response *res)
{
    http_request req = {.method = "GET", .path = kinds[k].pattern, .transport = &render_transport,
                        .body = "", .is_admin = s->is_admin};
    snprintf(req.user_buf, sizeof req.user_buf, "%s", s->user);
    req.user = req.user_buf;
    if (kinds[k].subject_key) {
        _Static_assert(sizeof req.param_buf[0] >= EVENTS_SUBJECT_MAX, "a subject fits a parameter");
        memcpy(req.param_buf[0], s->subject, sizeof s->subject);
        req.params[0] = req.param_buf[0];
        req.nparams = 1;
    }
    ev->handlers[k](ev->d, &req, res);
}

/* Kind k's data for s: its route's 200 reply, or NULL. */
static char *render(api_events *ev, size_t k, const subscriber *s)
{
    http_response res = {0};
    render_reply(ev, k, s, &res);
    if (res.status != 200 || !res.body) {
        free(res.body);
        return NULL;
    }
    return res.body; /* JSON on one line: fits a data: line */
}

/* A stream follows the lists, or one kind's subject. */
static int follows(const subscriber *s, size_t k)
{
    return s->subject_kind == LISTS_ONLY ? !kinds[k].subject_key : s->subject_kind == k;
}

/* Sends what changed for s (or a keep-alive): -1 when its stream ended. */
static int update(api_events *ev, subscriber *s, int64_t now)
{
    if (!http_stream_alive(s->stream))
        return -1;
    auth_identity who;
    if (s->token[0] &&
        loom_err_take(auth_check_token(ev->d->auth, s->token, now, &who), NULL, 0) != LOOM_OK) {
        http_stream_end(s->stream);
        return -1;
    }
    int sent = 0;
    for (size_t k = 0; k < NKINDS; k++) {
        if (!follows(s, k))
            continue;
        char *data = render(ev, k, s);
        if (!data || (s->last[k] && strcmp(s->last[k], data) == 0)) {
            free(data);
            continue;
        }
        char head[64];
        int n = snprintf(head, sizeof head, "%sevent: %s\ndata: ", s->last_write_ms ? "" : "retry: 2000\n",
                         kinds[k].name);
        int rc = http_stream_send(s->stream, head, (size_t)n) ||
                 http_stream_send(s->stream, data, strlen(data)) ||
                 http_stream_send(s->stream, "\n\n", 2);
        free(s->last[k]);
        s->last[k] = data;
        s->last_write_ms = now;
        if (rc)
            return -1;
        sent = 1;
    }
    if (!sent && now - s->last_write_ms >= EVENTS_KEEPALIVE_MS) {
        s->last_write_ms = now;
        return http_stream_send(s->stream, ": keep-alive\n\n", 14);
    }
    return 0;
}

static void drop_subscriber(subscriber *s)
{
    explicit_bzero(s->token, sizeof s->token);
    http_stream_release(s->stream);
    for (size_t k = 0; k < NKINDS; k++)
        free(s->last[k]);
    free(s);
}

void api_events_tick(api_events *ev)
{
    pthread_mutex_lock(&ev->lock);
    subscriber *s = ev->head;
    ev->fresh = 0;
    pthread_mutex_unlock(&ev->lock);
    int64_t now = time_now_ms();
    while (s) {
        subscriber *next = s->next;
        if (update(ev, s, now) != 0) {
            pthread_mutex_lock(&ev->lock);
            subscriber **at = &ev->head;
            while (*at != s)
                at = &(*at)->next;
            *at = next;
            pthread_mutex_unlock(&ev->lock);
            drop_subscriber(s);
        }
        s = next;
    }
}

/* A round every EVENTS_TICK_MS, or at once for a new stream. */
static void *run(void *arg)
{
    api_events *ev = arg;
    pthread_mutex_lock(&ev->lock);
    while (!ev->stop) {
        pthread_mutex_unlock(&ev->lock);
        api_events_tick(ev);
        pthread_mutex_lock(&ev->lock);
        struct timespec until = time_after_ms(CLOCK_REALTIME, EVENTS_TICK_MS);
        while (!ev->stop && !ev->fresh &&
               pthread_cond_timedwait(&ev->wake, &ev->lock, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&ev->lock);
    return NULL;
}

static http_handler find_handler(const event_kind *k)
{
    for (size_t i = 0; i < *k->count; i++)
        if (strcmp(k->table[i].method, "GET") == 0 && strcmp(k->table[i].pattern, k->pattern) == 0)
            return k->table[i].handler;
    return NULL;
}

loom_error *api_events_start(api_services *d, unsigned per_user, api_events **out)
{
    *out = NULL;
    api_events *ev = calloc(1, sizeof *ev);
    if (!ev)
        return loom_err(LOOM_E_INTERNAL, "events: out of memory");
    ev->d = d;
    ev->per_user = per_user ? per_user : EVENTS_DEFAULT_STREAMS_PER_USER;
    pthread_mutex_init(&ev->lock, NULL);
    pthread_cond_init(&ev->wake, NULL);
    for (size_t k = 0; k < NKINDS; k++)
        if (!(ev->handlers[k] = find_handler(&kinds[k]))) {
            api_events_stop(ev);
            return loom_err(LOOM_E_INTERNAL, "events: no GET %s route to render \"%s\" with",
                            kinds[k].pattern, kinds[k].name);
        }
    if (pthread_create(&ev->thread, NULL, run, ev) != 0) {
        api_events_stop(ev);
        return loom_err(LOOM_E_INTERNAL, "events: cannot start its thread");
    }
    ev->started = 1;
    *out = ev;
    return NULL;
}

void api_events_stop(api_events *ev)
{
    if (!ev)
        return;
    if (ev->started) {
        pthread_mutex_lock(&ev->lock);
        ev->stop = 1;
        pthread_cond_signal(&ev->wake);
        pthread_mutex_unlock(&ev->lock);
        pthread_join(ev->thread, NULL);
    }
    while (ev->head) {
        subscriber *s = ev->head;
        ev->head = s->next;
        drop_subscriber(s);
    }
    pthread_mutex_destroy(&ev->lock);
    pthread_cond_destroy(&ev->wake);
    free(ev);
}

/* The query's subject (?exec=ID, ?task=NAME or ?model=NAME: at most one),
 * which the caller must be able to see now: its route's refusal (404 for
 * another user's) is the stream's. */
static loom_error *subject_of(api_events *ev, const http_request *req, subscriber *s,
                              http_response *res)
{
    s->subject_kind = LISTS_ONLY;
    for (size_t k = 0; k < NKINDS; k++) {
        const char *v = kinds[k].subject_key ? http_query(req, kinds[k].subject_key) : NULL;
        if (!v)
            continue;
        if (s->subject_kind != LISTS_ONLY)
            return loom_err(LOOM_E_INVALID, "%s: a stream follows one of exec, task or model, "
                            "not %s and %s", kinds[k].subject_key,
                            kinds[s->subject_kind].subject_key, kinds[k].subject_key);
        size_t len = strlen(v);
        if (len == 0 || len >= sizeof s->subject)
            return loom_err(LOOM_E_INVALID, "%s: expected a name of 1 to %zu bytes, got %zu",
                            kinds[k].subject_key, sizeof s->subject - 1, len);
        memcpy(s->subject, v, len + 1);
        s->subject_kind = k;
    }
    if (s->subject_kind != LISTS_ONLY) {
        render_reply(ev, s->subject_kind, s, res);
        if (res->status != 200)
            return NULL; /* res holds the route's refusal */
        free(res->body);
        *res = (http_response){0};
    }
    return NULL;
}

/* GET /loom/v1/events: a stream, within the caller's bound. */
static void events(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    api_events *ev = d->events;
    if (!ev) {
        api_reply_error(res, loom_err(LOOM_E_UNAVAILABLE, "live updates are not running on this host"));
        return;
    }
    subscriber *s = calloc(1, sizeof *s);
    if (!s) {
        api_reply_error(res, loom_err(LOOM_E_INTERNAL, "events: out of memory"));
        return;
    }
    snprintf(s->user, sizeof s->user, "%s", req->user);
    s->is_admin = req->is_admin;
    loom_error *bad = subject_of(ev, req, s, res);
    if (bad || res->status) {
        free(s);
        if (bad)
            api_reply_error(res, bad);
        return;
    }
    http_credentials cred;
    loom_err_free(http_credentials_of(req, &cred)); /* admitted: they are fine */
    if (cred.has_token || cred.has_cookie)
        memcpy(s->token, cred.has_token ? cred.token : cred.cookie, sizeof s->token);
    http_credentials_clear(&cred);
    pthread_mutex_lock(&ev->lock);
    unsigned open = 0;
    for (const subscriber *o = ev->head; o; o = o->next)
        open += strcmp(o->user, s->user) == 0;
    loom_error *e = NULL;
    if (ev->stop)
        e = loom_err(LOOM_E_UNAVAILABLE, "the host is stopping");
    else if (open >= ev->per_user)
        e = loom_err(LOOM_E_RATE_LIMITED,
                     "%s has %u event streams open, the limit (loom serve "
                     "--max-event-streams-per-user %u): close one first",
                     s->user, open, ev->per_user);
    else if (!(s->stream = http_stream_open(req)))
        e = loom_err(LOOM_E_UNSUPPORTED, "%s streams only over a plain connection to the host",
                     LOOM_ROUTE_EVENTS);
    if (!e) {
        s->next = ev->head;
        ev->head = s;
        ev->fresh = 1;
        pthread_cond_signal(&ev->wake);
    }
    pthread_mutex_unlock(&ev->lock);
    if (e) {
        explicit_bzero(s->token, sizeof s->token);
        free(s);
        api_reply_error(res, e);
        return;
    }
    http_reply_data(res, 200, "text/event-stream", NULL, 0);
    http_reply_header(res, "Cache-Control", "no-cache");
}

const http_route loom_events_routes[] = {
    {"GET", LOOM_ROUTE_EVENTS, events, HTTP_USER},
};
const size_t loom_events_route_count = sizeof loom_events_routes / sizeof *loom_events_routes;

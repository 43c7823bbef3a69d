/*
 * tests/unit/api/test_http_front.c - the front door's parts that need no
 * socket: invalid UTF-8 in a reply is escaped (never sent raw), upload
 * slots are capped per user (429) and in all (503) and given back, and the
 * work queue for slow routes runs every job, in order, refuses past its
 * bound and after it is drained.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "http/http_upload.h"
#include "http/json_text.h"
#include "check.h"
#include "util/workqueue.h"
#include "wait.h"

static char *repaired(const char *text, size_t *len)
{
    *len = strlen(text);
    return json_text_repair_utf8(strdup(text), len);
}

static void test_invalid_utf8_is_escaped(void)
{
    size_t len;
    char *t = repaired("{\"args\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}", &len);
    CHECK_MSG(strcmp(t, "{\"args\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}") == 0,
              "valid UTF-8 unchanged: %s", t);
    free(t);
    /* A lone continuation byte, a cut sequence, an overlong '/', a surrogate,
     * a byte never valid, a code point past U+10FFFF. */
    t = repaired("{\"a\":\"x\x80y\xe2\x82z\xc0\xaf\xed\xa0\x80\xff\xf4\x90\x80\x80\"}", &len);
    /* After z: 2 + 3 + 1 + 4 invalid bytes. */
    CHECK_MSG(strcmp(t, "{\"a\":\"x\\ufffdy\\ufffd\\ufffdz\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd"
                        "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"}") == 0,
              "each invalid byte escaped: %s", t);
    CHECK(len == strlen(t));
    cJSON *j = cJSON_Parse(t);
    CHECK_MSG(j && cJSON_IsString(cJSON_GetObjectItem(j, "a")), "the repaired text parses: %s", t);
    cJSON_Delete(j);
    free(t);
}

static void test_upload_slots(void)
{
    upload_slots s;
    CHECK(upload_slots_init(&s, 3, 2) == 0);
    loom_error *e;
    CHECK((e = upload_slot_take(&s, "alice")) == NULL);
    loom_err_free(e);
    CHECK((e = upload_slot_take(&s, "alice")) == NULL);
    loom_err_free(e);
    e = upload_slot_take(&s, "alice");
    CHECK_MSG(e && loom_err_code(e) == LOOM_E_RATE_LIMITED, "a third upload of one user: 429");
    CHECK(e && strstr(loom_err_message(e), "--max-uploads-per-user"));
    loom_err_free(e);
    CHECK((e = upload_slot_take(&s, "bob")) == NULL);
    loom_err_free(e);
    e = upload_slot_take(&s, "carol");
    CHECK_MSG(e && loom_err_code(e) == LOOM_E_UNAVAILABLE, "past the host's limit: 503");
    CHECK(e && strstr(loom_err_message(e), "--max-uploads"));
    loom_err_free(e);
    upload_slot_give(&s, "alice");
    CHECK((e = upload_slot_take(&s, "carol")) == NULL);
    loom_err_free(e);
    upload_slot_give(&s, "bob");
    CHECK((e = upload_slot_take(&s, "alice")) == NULL);
    loom_err_free(e);
    upload_slots_destroy(&s);
}

typedef struct order {
    pthread_mutex_t lock;
    int seen[64];
    int n;
} order;

typedef struct step {
    order *o;
    int value;
} step;

static void record(void *arg)
{
    step *s = arg;
    pthread_mutex_lock(&s->o->lock);
    s->o->seen[s->o->n++] = s->value;
    pthread_mutex_unlock(&s->o->lock);
}

/* A job that runs until the test lets it end, counting its starts. */
typedef struct gate {
    atomic_int started;
    atomic_int open;
} gate;

static void hold(void *arg)
{
    gate *g = arg;
    atomic_fetch_add(&g->started, 1);
    WAIT_UNTIL(atomic_load(&g->open), 10 * 1000);
}

static void test_workqueue(void)
{
    order o = {.lock = PTHREAD_MUTEX_INITIALIZER};
    step steps[20];
    workqueue *q = workqueue_create("test queue", 1, 32);
    CHECK(q != NULL);
    for (int i = 0; i < 20; i++) {
        steps[i] = (step){&o, i};
        loom_error *e = workqueue_submit(q, record, &steps[i]);
        CHECK(e == NULL);
        loom_err_free(e);
    }
    workqueue_drain(q);
    CHECK_MSG(o.n == 20, "every job ran before the drain returned: %d", o.n);
    int ordered = 1;
    for (int i = 0; i < o.n; i++)
        ordered &= o.seen[i] == i;
    CHECK_MSG(ordered, "one thread runs them in order");
    loom_error *e = workqueue_submit(q, record, &steps[0]);
    CHECK_MSG(e && loom_err_code(e) == LOOM_E_UNAVAILABLE, "a drained queue refuses");
    loom_err_free(e);
    workqueue_destroy(q);

    /* Bounded: one job runs, two wait, the next is refused. */
    gate g = {0};
    q = workqueue_create("small queue", 1, 2);
    CHECK((e = workqueue_submit(q, hold, &g)) == NULL);
    loom_err_free(e);
    WAIT_UNTIL(atomic_load(&g.started) == 1, 5000);
    CHECK_MSG(atomic_load(&g.started) == 1, "the worker took the first job");
    CHECK((e = workqueue_submit(q, hold, &g)) == NULL);
    loom_err_free(e);
    CHECK((e = workqueue_submit(q, hold, &g)) == NULL);
    loom_err_free(e);
    e = workqueue_submit(q, hold, &g);
    CHECK_MSG(e && loom_err_code(e) == LOOM_E_UNAVAILABLE && strstr(loom_err_message(e), "limit"),
              "past its bound the queue refuses, naming the limit");
    loom_err_free(e);
    CHECK_MSG(atomic_load(&g.started) == 1, "the first job still runs: %d started",
              atomic_load(&g.started));
    atomic_store(&g.open, 1);
    workqueue_destroy(q);
    CHECK_MSG(atomic_load(&g.started) == 3, "the two queued ran before the queue was freed: %d started",
              atomic_load(&g.started));
}

int main(void)
{
    test_invalid_utf8_is_escaped();
    test_upload_slots();
    test_workqueue();
    return CHECK_DONE();
}

/* train/coordinator_heartbeat.c - the control links' heartbeats, on the
 * coordinator's side (protocol.h): a worker sends one every
 * LOOM_HEARTBEAT_INTERVAL_MS from a thread of its own, whatever it is
 * doing; one not heard from for LOOM_HEARTBEAT_TIMEOUT_MS is lost (stopped,
 * hung, or its machine or link gone, which a Unix socket's close or a
 * reaped process would not show) and dropped as a dead worker is. The
 * other way, a thread of the coordinator's own sends each worker a
 * heartbeat every LOOM_HEARTBEAT_INTERVAL_MS, so that a worker notices a
 * coordinator gone (its machine, its link), but not one whose thread is
 * busy for a while (a driver logger may take seconds). Every send on a
 * worker's link takes the links' lock, so a heartbeat never falls between
 * a message and its blob. */
#include <poll.h>
#include <time.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>

#include "train/coordinator_internal.h"
#include "util/fs.h"

/* Heartbeats are not sent to a worker that has this much unread: it has
 * heard enough, and a full socket would block the coordinator. */
#define UNREAD_LIMIT_BYTES 4096
/* Messages read from one idle worker per call (heartbeats only, normally
 * one or two). */
#define IDLE_READS_MAX 64

void train_heard(edt_coordinator *c, uint32_t i)
{
    c->m.slots[i].heard_ms = time_mono_ms();
}

static int has_link(const edt_slot *s)
{
    return s->fd >= 0 && (s->state == SLOT_READY || s->state == SLOT_MEMBER);
}

static int readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
}

/* Reads what an idle worker sent: heartbeats. Anything else (or a closed
 * connection) drops it. Returns 1 when it was a member and was dropped. */
static int hear_idle(edt_coordinator *c, uint32_t i)
{
    edt_slot *s = &c->m.slots[i];
    for (int k = 0; k < IDLE_READS_MAX && readable(s->fd); k++) {
        msg m;
        loom_error *e = train_msg_recv(s->fd, time_mono_ms() + 1000, &m);
        if (!e && m.kind != MSG_HEARTBEAT)
            e = loom_err(LOOM_E_INVALID, "a %s message out of turn", train_msg_kind_name(m.kind));
        train_msg_free(&m);
        if (e) {
            int member = s->state == SLOT_MEMBER;
            char why[512];
            snprintf(why, sizeof why, "%s", loom_err_code(e) == LOOM_E_INVALID
                                                ? loom_err_message(e)
                                                : "its control connection closed");
            loom_err_free(e);
            train_drop_slot(c, i, why);
            return member;
        }
        train_heard(c, i);
    }
    return 0;
}

/* Sends a heartbeat unless enough wait unread. Under the links' lock. */
static void beat(edt_slot *s)
{
    int unread = 0;
    if (ioctl(s->fd, SIOCOUTQ, &unread) == 0 && unread > UNREAD_LIMIT_BYTES)
        return;
    msg m = {.kind = MSG_HEARTBEAT};
    /* A worker that cannot hear it is found by its own silence. */
    loom_err_free(train_msg_send(s->fd, &m, NULL, 0));
}

static void *beats_main(void *arg)
{
    edt_coordinator *c = arg;
    edt_beats *b = &c->beats;
    pthread_mutex_lock(&b->lock);
    while (!b->stop) {
        struct timespec at = time_after_ms(CLOCK_MONOTONIC, LOOM_HEARTBEAT_INTERVAL_MS);
        pthread_cond_timedwait(&b->wake, &b->lock, &at);
        for (uint32_t i = 0; !b->stop && i < c->m.nslots; i++)
            if (c->m.slots[i].beat && c->m.slots[i].fd >= 0)
                beat(&c->m.slots[i]);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

loom_error *train_beats_start(edt_coordinator *c)
{
    edt_beats *b = &c->beats;
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&b->wake, &monotonic);
    pthread_condattr_destroy(&monotonic);
    b->ready = 1;
    if (pthread_create(&b->thread, NULL, beats_main, c) != 0)
        return loom_err(LOOM_E_UNAVAILABLE, "cannot start the heartbeat thread");
    b->started = 1;
    return NULL;
}

void train_beats_stop(edt_coordinator *c)
{
    edt_beats *b = &c->beats;
    if (b->started) {
        pthread_mutex_lock(&b->lock);
        b->stop = 1;
        pthread_cond_signal(&b->wake);
        pthread_mutex_unlock(&b->lock);
        pthread_join(b->thread, NULL);
        b->started = 0;
    }
    if (b->ready)
        pthread_cond_destroy(&b->wake);
    b->ready = 0;
}

loom_error *train_slot_send(edt_coordinator *c, uint32_t i, const msg *m, const void *blob,
                            size_t len)
{
    edt_slot *s = &c->m.slots[i];
    pthread_mutex_lock(&c->beats.lock);
    loom_error *e = s->fd >= 0 ? train_msg_send(s->fd, m, blob, len)
                               : loom_err(LOOM_E_UNAVAILABLE, "no control connection");
    /* After an exit, nothing more: the worker is leaving. */
    if (m->kind == MSG_EXIT)
        s->beat = 0;
    pthread_mutex_unlock(&c->beats.lock);
    if (!e && (m->kind == MSG_PLAN || m->kind == MSG_WORK))
        s->awaiting = 1;
    return e;
}

void train_slot_link(edt_coordinator *c, uint32_t i, int fd)
{
    edt_slot *s = &c->m.slots[i];
    pthread_mutex_lock(&c->beats.lock);
    s->fd = fd;
    s->beat = fd >= 0;
    pthread_mutex_unlock(&c->beats.lock);
    s->awaiting = 0;
    train_heard(c, i);
}

int train_keep_alive(edt_coordinator *c)
{
    int lost = 0;
    for (uint32_t i = 0; i < c->m.nslots; i++) {
        edt_slot *s = &c->m.slots[i];
        if (!has_link(s))
            continue;
        if (!s->awaiting && hear_idle(c, i)) {
            lost++;
            continue;
        }
        if (!has_link(s))
            continue;
        int64_t now = time_mono_ms();
        /* Unread bytes may be the heartbeat the loop waiting for its
         * answer has not read yet. */
        if (now - s->heard_ms > LOOM_HEARTBEAT_TIMEOUT_MS && !readable(s->fd)) {
            char why[96];
            snprintf(why, sizeof why, "no heartbeat for %d s (lost: stopped, hung or cut off)",
                     LOOM_HEARTBEAT_TIMEOUT_MS / 1000);
            lost += s->state == SLOT_MEMBER;
            train_drop_silent_slot(c, i, why);
        }
    }
    return lost;
}

/* train/coordinator_heartbeat.c - the control links' heartbeats, on the
 * coordinator's side (protocol.h): a worker sends one every
 * LOOM_HEARTBEAT_INTERVAL_MS from a thread of its own, whatever it is
 * doing; one not heard from for LOOM_HEARTBEAT_TIMEOUT_MS is lost (stopped,
 * hung, or its machine or link gone, which a Unix socket's close or a
 * reaped process would not show) and dropped as a dead worker is. Workers
 * the coordinator is not waiting for get a heartbeat back, so that they
 * notice a coordinator gone silent. */
#include <poll.h>
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

static void tell(edt_coordinator *c, uint32_t i, int64_t now)
{
    edt_slot *s = &c->m.slots[i];
    int unread = 0;
    if (now - s->told_ms < LOOM_HEARTBEAT_INTERVAL_MS ||
        (ioctl(s->fd, SIOCOUTQ, &unread) == 0 && unread > UNREAD_LIMIT_BYTES))
        return;
    msg m = {.kind = MSG_HEARTBEAT};
    /* A worker that cannot hear it is found by its own silence. */
    loom_err_free(train_msg_send(s->fd, &m, NULL, 0));
    s->told_ms = now;
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
            train_drop_slot(c, i, why);
            continue;
        }
        if (!s->awaiting)
            tell(c, i, now);
    }
    return lost;
}

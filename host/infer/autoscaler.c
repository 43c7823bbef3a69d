/* infer/autoscaler.c - the control thread of a model service: requests past
 * their deadline fail, ended instances are joined, and one instance more
 * or fewer follows the load (see model_service.h). */
#include "infer/model_service_internal.h"

#include <stdio.h>
#include <unistd.h>

#include "util/log.h"

/* ---- the control thread: deadlines in the queue, scaling ------------------ */

static call *expire_locked(model_service *r, uint64_t now)
{
    call *expired = NULL, **link = &r->head, *prev = NULL;
    while (*link) {
        call *c = *link;
        if (c->deadline_ns && c->deadline_ns <= now) {
            *link = c->next;
            r->queued--;
            c->next = expired;
            expired = c;
        } else {
            prev = c;
            link = &c->next;
        }
    }
    r->tail = prev;
    return expired;
}

static void reap_locked(model_service *r)
{
    for (int i = 0; i < r->max_instances; i++)
        if (r->inst[i].state == INST_DONE) {
            pthread_mutex_unlock(&r->lock);
            pthread_join(r->inst[i].thread, NULL);
            pthread_mutex_lock(&r->lock);
            r->inst[i].state = INST_FREE;
        }
}

static void scale_locked(model_service *r, uint64_t now)
{
    int active = 0, serving = 0, busy = 0, idle = -1;
    for (int i = 0; i < r->max_instances; i++) {
        instance *in = &r->inst[i];
        if (in->state == INST_FREE || in->state == INST_DONE || in->retire)
            continue;
        active++;
        serving += in->state == INST_READY || in->state == INST_BUSY;
        busy += in->state == INST_BUSY;
        if (in->state == INST_READY || (idle < 0 && in->state == INST_WAITING))
            idle = i;
    }
    if (r->head || busy >= serving)
        r->spare_since_ns = now;
    if (r->start_failed)
        return; /* its kernel does not load: no instance more until stopped */
    if (active < r->profile.kernel_min) {
        kernel_instance_spawn_locked(r);
        return;
    }
    if (now < r->next_scale_ns)
        return;
    r->next_scale_ns = now + (uint64_t)(r->profile.schedule_interval_s * 1e9);
    if (r->head && active < r->max_instances) {
        kernel_instance_spawn_locked(r);
        log_info("model \"%s\": %zu request(s) queued: one more instance (%d)", r->name,
                 r->queued, active + 1);
    } else if (active > r->profile.kernel_min && idle >= 0 &&
               now - r->spare_since_ns >= (uint64_t)(r->profile.delay_release_s * 1e9)) {
        r->inst[idle].retire = 1;
        r->spare_since_ns = now;
        pthread_cond_broadcast(&r->work);
        pthread_cond_broadcast(&r->full);
        log_info("model \"%s\": capacity spare: one instance fewer (%d)", r->name, active - 1);
    }
}

void *autoscaler_main(void *arg)
{
    model_service *r = arg;
    pthread_mutex_lock(&r->lock);
    while (!r->stopping) {
        uint64_t now = model_service_now_ns();
        call *expired = expire_locked(r, now);
        reap_locked(r);
        if (!r->stopping)
            scale_locked(r, now);
        pthread_mutex_unlock(&r->lock);
        char msg[160];
        snprintf(msg, sizeof msg, "model \"%s\": the request waited longer than "
                 "task_execution_timeout (%g s)", r->name, r->profile.execution_timeout_s);
        model_service_fail_list(expired, LOOM_E_DEADLINE, msg);
        usleep(CONTROL_TICK_US);
        pthread_mutex_lock(&r->lock);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* infer/autoscaler.c - the control thread of a model service: requests past
 * their deadline fail, ended instances are joined, and one instance more
 * or fewer follows the load (see model_service.h): asked of the scheduler
 * for instances on devices of their own (grants.c), started or retired
 * here for the others. */
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

/* PLACE_OWN_DEVICE: the instances wanted, which the scheduler grants
 * within the plan's share. A request queued to a service scaled to zero
 * wants one at once (a cold start: it waits for the instance); then one
 * more every schedule_interval while requests queue, one fewer after
 * kernel_delay_release_time of spare capacity (the part not granted first). */
static void scale_target_locked(model_service *r, uint64_t now, int active)
{
    if (r->start_failed) {
        r->target = 0; /* its kernel does not load: no device held until stopped */
        return;
    }
    uint64_t interval = (uint64_t)(r->profile.schedule_interval_s * 1e9);
    if (r->head && r->target == 0) {
        r->target = 1;
        r->next_scale_ns = now + interval;
        log_info("model \"%s\": a request for a model scaled to zero: one instance", r->name);
        return;
    }
    if (now < r->next_scale_ns)
        return;
    r->next_scale_ns = now + interval;
    if (r->head && r->target < r->max_instances) {
        r->target++;
        log_info("model \"%s\": %zu request(s) queued: %d instance(s) wanted", r->name,
                 r->queued, r->target);
    } else if (!r->head && r->target > r->profile.kernel_min &&
               now - r->spare_since_ns >= (uint64_t)(r->profile.delay_release_s * 1e9)) {
        int from = r->target < active ? r->target : active;
        r->target = from - 1 > r->profile.kernel_min ? from - 1 : r->profile.kernel_min;
        r->spare_since_ns = now;
        log_info("model \"%s\": capacity spare: %d instance(s) wanted", r->name, r->target);
    }
}

/* The other placements: the service starts and retires its instances. */
static void scale_instances_locked(model_service *r, uint64_t now, int active, int idle)
{
    if (r->start_failed)
        return; /* its kernel does not load: no instance more until stopped */
    if (active < r->profile.kernel_min) {
        kernel_instance_spawn_locked(r, LOOM_DEVICE_CPU, 0);
        return;
    }
    if (now < r->next_scale_ns)
        return;
    r->next_scale_ns = now + (uint64_t)(r->profile.schedule_interval_s * 1e9);
    if (r->head && active < r->max_instances) {
        kernel_instance_spawn_locked(r, LOOM_DEVICE_CPU, 0);
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
    if (r->place == PLACE_OWN_DEVICE)
        scale_target_locked(r, now, active);
    else
        scale_instances_locked(r, now, active, idle);
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
        int follow = r->place == PLACE_OWN_DEVICE && !r->stopping;
        pthread_mutex_unlock(&r->lock);
        if (follow)
            grants_follow(r);
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

/* infer/kernel_instance.c - one kernel instance: its scheduler device, its
 * kernel process, restarts after a failure. */
#include "infer/model_service_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/log.h"

/* ---- an instance ------------------------------------------------------------ */

static void set_state(model_service *r, instance *in, inst_state s)
{
    pthread_mutex_lock(&r->lock);
    in->state = s;
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
}

/* Records why an instance could not serve. While no instance serves, the
 * queued requests fail with that reason instead of waiting for one that
 * may never come (a service without task_execution_timeout would hang). */
static void note_failure(model_service *r, loom_error *e, const char *what)
{
    char msg[sizeof r->last_error];
    snprintf(msg, sizeof msg, "%s: %s", what, loom_err_message(e));
    pthread_mutex_lock(&r->lock);
    snprintf(r->last_error, sizeof r->last_error, "%s", msg);
    if (!r->ready_once)
        r->start_failed = 1;
    int serving = 0;
    for (int i = 0; i < r->max_instances; i++)
        serving += r->inst[i].state == INST_READY || r->inst[i].state == INST_BUSY;
    call *stranded = serving ? NULL : model_service_take_queue_locked(r);
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
    log_warn("model \"%s\": %s", r->name, msg);
    loom_err_free(e);
    char answer[sizeof msg + 80];
    snprintf(answer, sizeof answer, "model \"%s\": no kernel instance can serve: %s", r->name,
             msg);
    model_service_fail_list(stranded, LOOM_E_UNAVAILABLE, answer);
}

static int leaving(model_service *r, instance *in)
{
    pthread_mutex_lock(&r->lock);
    int leave = in->retire || r->stopping;
    pthread_mutex_unlock(&r->lock);
    return leave;
}

/* Waits for the scheduler's device: 0 with its kind and index, -1 when
 * the instance is to leave first. */
static int wait_device(model_service *r, instance *in, const char *job, int32_t *kind, int32_t *index)
{
    for (;;) {
        int32_t slot;
        if (leaving(r, in))
            return -1;
        if (sched_service_job_devices(r->sched, job, &slot, 1, index, kind) > 0)
            return 0;
        usleep(DEVICE_POLL_US);
    }
}

/* The device an instance serves on: 0 with its kind and index, -1 when
 * the instance is to leave first. */
static int instance_device(model_service *r, instance *in, int32_t *kind, int32_t *index)
{
    switch (r->place) {
    case PLACE_CPU_UNGRANTED:
        *kind = LOOM_DEVICE_CPU;
        *index = 0;
        return leaving(r, in) ? -1 : 0;
    case PLACE_SHARED_GPU:
        return wait_device(r, in, r->job, kind, index);
    default: /* granted before the instance started */
        *kind = in->device_kind;
        *index = in->device_index;
        return leaving(r, in) ? -1 : 0;
    }
}

/* Whether the service has given up: its kernel failed to load before any
 * instance served, so starting it again would fail the same way. */
static int start_failed(model_service *r)
{
    pthread_mutex_lock(&r->lock);
    int failed = r->start_failed;
    pthread_mutex_unlock(&r->lock);
    return failed;
}

static void *instance_main(void *arg)
{
    instance *in = arg;
    model_service *r = in->r;
    batch *two = calloc(2, sizeof *two); /* too large for a thread's stack */
    if (!two) {
        note_failure(r, loom_err(LOOM_E_INTERNAL, "out of memory"), "a kernel instance");
        set_state(r, in, INST_DONE);
        return NULL;
    }
    loom_error *e = NULL;
    int32_t kind = LOOM_DEVICE_CPU, index = 0;
    while (instance_device(r, in, &kind, &index) == 0) {
        set_state(r, in, INST_STARTING);
        kernel_proc_spec ks = {.binary = r->binary, .model_dir = r->model_dir,
                               .work_dir = r->work_dir, .user = r->owner, .output = r->output,
                               .model = &r->model, .env = r->profile.env,
                               .nenv = r->profile.nenv, .device_kind = kind,
                               .device_index = index,
                               .start_timeout_ms = (unsigned)(r->profile.connection_timeout_s * 1000)};
        kernel_proc *k = NULL;
        e = kernel_proc_start(&ks, &k);
        if (e) {
            note_failure(r, e, "the kernel could not start");
            if (start_failed(r))
                break;
            set_state(r, in, INST_WAITING);
            usleep(RESTART_BACKOFF_US);
            continue;
        }
        pthread_mutex_lock(&r->lock);
        r->ready_once = 1;
        pthread_cond_broadcast(&r->changed);
        pthread_mutex_unlock(&r->lock);
        int rc = batching_serve(r, in, k, two);
        kernel_proc_stop(k);
        if (rc == 0)
            break;
        pthread_mutex_lock(&r->lock);
        r->restarts++;
        in->state = INST_WAITING;
        pthread_mutex_unlock(&r->lock);
    }
    v2_buf_free(&two[0].json);
    v2_buf_free(&two[1].json);
    free(two);
    set_state(r, in, INST_DONE);
    return NULL;
}

int kernel_instance_count_locked(const model_service *r, int counting_retired)
{
    int n = 0;
    for (int i = 0; i < r->max_instances; i++) {
        const instance *in = &r->inst[i];
        n += in->state != INST_FREE && in->state != INST_DONE && (counting_retired || !in->retire);
    }
    return n;
}

/* Starts one more instance. Call with r->lock; 0 or -1. */
int kernel_instance_spawn_locked(model_service *r, int32_t kind, int32_t index)
{
    for (int i = 0; i < r->max_instances; i++) {
        instance *in = &r->inst[i];
        if (in->state != INST_FREE)
            continue;
        in->r = r;
        in->retire = 0;
        in->seq = r->seq++;
        in->device_kind = kind;
        in->device_index = index;
        in->state = INST_WAITING;
        if (pthread_create(&in->thread, NULL, instance_main, in) != 0) {
            in->state = INST_FREE;
            return -1;
        }
        return 0;
    }
    return -1;
}

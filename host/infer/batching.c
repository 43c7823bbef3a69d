/* infer/batching.c - dynamic batching: queued requests gathered into a kernel's
 * batches (see model_service.h), sent, and their answers delivered. */
#include "infer/model_service_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "infer/kernel_wire.h"
#include "util/log.h"

/* ---- one batch ------------------------------------------------------------ */

/* A kernel's output tensors answered as v2 JSON (the host's encoding). */
static void deliver_tensors(model_service *r, call *c, const kernel_task *t, v2_buf *json)
{
    loom_error *e = v2_encode_answer(&r->model, &c->v2, t->answer, t->answer_len, json);
    if (e) {
        char msg[400];
        int32_t code = loom_err_take(e, msg, sizeof msg);
        log_warn("%s", msg);
        model_service_answer_error(c, code, msg);
        return;
    }
    model_service_answer a = {0, "application/json", json->data, json->len};
    c->done(c->ctx, &a);
    model_service_call_free(c);
}

/* The kernel's answer to one call; a JSON type whose body is not JSON is
 * the kernel's fault and is reported as such. */
static void deliver(model_service *r, call *c, const kernel_task *t, v2_buf *json)
{
    model_service_answer a = {t->status, t->content_type, t->answer, t->answer_len};
    if (t->status == 0 && strcmp(t->content_type, KERNEL_TENSORS_TYPE) == 0) {
        deliver_tensors(r, c, t, json);
        return;
    }
    if (t->status == 0 && strncmp(t->content_type, "application/json", 16) == 0) {
        cJSON *j = cJSON_ParseWithLength(t->answer, t->answer_len);
        if (!j) {
            char msg[160];
            snprintf(msg, sizeof msg, "model \"%s\": the kernel returned invalid output (its "
                     "answer is declared application/json but is not JSON)", r->name);
            model_service_answer_error(c, LOOM_E_INTERNAL, msg);
            return;
        }
        cJSON_Delete(j);
    }
    c->done(c->ctx, &a);
    model_service_call_free(c);
}


/* Fails a batch whose kernel process is gone. */
static void fail_batch(model_service *r, batch *b, loom_error *e)
{
    char msg[400];
    snprintf(msg, sizeof msg, "model \"%s\": %s", r->name, loom_err_message(e));
    int32_t code = loom_err_code(e);
    loom_err_free(e);
    pthread_mutex_lock(&r->lock);
    r->failed += b->n;
    snprintf(r->last_error, sizeof r->last_error, "%s", msg);
    pthread_mutex_unlock(&r->lock);
    log_warn("%s; its batch of %u failed, the instance restarts", msg, b->n);
    for (uint32_t i = 0; i < b->n; i++)
        model_service_answer_error(b->calls[i], code, msg);
    b->n = 0;
}

/* Hands a batch to the kernel; -1 when its process is gone (the batch
 * failed). */
static int send_batch(model_service *r, kernel_proc *k, batch *b)
{
    b->deadline_ns = model_service_now_ns() + NO_TIMEOUT_NS;
    for (uint32_t i = 0; i < b->n; i++) {
        b->tasks[i] = (kernel_task){.body = b->calls[i]->body, .len = b->calls[i]->len};
        if (b->calls[i]->deadline_ns && b->calls[i]->deadline_ns < b->deadline_ns)
            b->deadline_ns = b->calls[i]->deadline_ns;
    }
    loom_error *e = kernel_proc_send(k, b->tasks, b->n, b->deadline_ns);
    if (e) {
        fail_batch(r, b, e);
        return -1;
    }
    return 0;
}

/* Answers a collected batch's calls. */
static void deliver_batch(model_service *r, batch *b)
{
    for (uint32_t i = 0; i < b->n; i++)
        deliver(r, b->calls[i], &b->tasks[i], &b->json);
    pthread_mutex_lock(&r->lock);
    r->served += b->n;
    pthread_mutex_unlock(&r->lock);
    b->n = 0;
}

static int should_leave_locked(model_service *r, instance *in)
{
    if (r->stopping)
        return r->force || !r->head;
    return in->retire;
}

/* Up to the batch size of the calls queued now, without waiting (0 when
 * none). Call with r->lock. */
static uint32_t take_queued_locked(model_service *r, call **out)
{
    uint32_t want = (uint32_t)r->profile.batch_size;
    uint32_t n = 0;
    size_t bytes = 0;
    /* each body starts 8-byte aligned in the arena */
    while (r->head && n < want &&
           (n == 0 || bytes + ((r->head->len + 7) & ~(size_t)7) <= kernel_proc_batch_bytes())) {
        call *c = r->head;
        r->head = c->next;
        if (!r->head)
            r->tail = NULL;
        r->queued--;
        bytes += (c->len + 7) & ~(size_t)7;
        c->next = NULL;
        out[n++] = c;
    }
    return n;
}

/* Up to the batch size of queued calls into out (at least one): waits
 * briefly for more when fewer are queued. Returns 0 when the instance is
 * to leave. Call with r->lock. */
static uint32_t take_batch_locked(model_service *r, instance *in, call **out)
{
    while (!r->head && !should_leave_locked(r, in))
        pthread_cond_wait(&r->work, &r->lock);
    if (should_leave_locked(r, in))
        return 0;
    uint32_t want = (uint32_t)r->profile.batch_size;
    if (want > 1 && r->queued < want) {
        uint64_t until = model_service_now_ns() + MODEL_SERVICE_BATCH_WAIT_US * 1000ull;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t abs_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
                          MODEL_SERVICE_BATCH_WAIT_US * 1000ull;
        ts.tv_sec = (time_t)(abs_ns / 1000000000u);
        ts.tv_nsec = (long)(abs_ns % 1000000000u);
        while (r->queued < want && !r->stopping && !in->retire && model_service_now_ns() < until)
            if (pthread_cond_timedwait(&r->full, &r->lock, &ts) == ETIMEDOUT)
                break;
        if (!r->head)
            return take_batch_locked(r, in, out);
    }
    return take_queued_locked(r, out);
}


/* Whether to await the kernel's answer spinning first: with requests still
 * queued the machine is busy, and a core spent spinning is one the HTTP
 * threads and the kernel lack; a quiet service spins and answers sooner.
 * Call with r->lock. */
static int quiet_locked(model_service *r, uint32_t n)
{
    return !r->head && (n == 1 || n * 4 <= (uint32_t)r->profile.batch_size);
}

/* Serves until told to leave (0) or the kernel fails (-1). Two batches
 * overlap: once the kernel has answered one, the next goes to it before the
 * first's answers go out, when a full batch is queued by then (sending part
 * of one early made batches smaller and cost more than it saved), so the
 * kernel works while the host's threads reply. */
int batching_serve(model_service *r, instance *in, kernel_proc *k, batch *two)
{
    batch *cur = &two[0], *next = &two[1];
    for (;;) {
        if (!cur->n) {
            pthread_mutex_lock(&r->lock);
            in->state = INST_READY;
            cur->n = take_batch_locked(r, in, cur->calls);
            if (cur->n)
                in->state = INST_BUSY;
            int quiet = quiet_locked(r, cur->n);
            pthread_mutex_unlock(&r->lock);
            if (!cur->n)
                return 0;
            kernel_proc_spin(k, quiet);
            if (send_batch(r, k, cur) != 0)
                return -1;
        }
        loom_error *e = kernel_proc_collect(k, cur->tasks, cur->n, cur->deadline_ns);
        if (e) {
            fail_batch(r, cur, e);
            return -1;
        }
        pthread_mutex_lock(&r->lock);
        next->n = should_leave_locked(r, in) || r->queued < (size_t)r->profile.batch_size
                      ? 0 : take_queued_locked(r, next->calls);
        int quiet = quiet_locked(r, next->n);
        pthread_mutex_unlock(&r->lock);
        int failed = 0;
        if (next->n) {
            kernel_proc_spin(k, quiet);
            failed = send_batch(r, k, next) != 0;
        }
        deliver_batch(r, cur);
        if (failed)
            return -1;
        batch *t = cur;
        cur = next;
        next = t;
    }
}

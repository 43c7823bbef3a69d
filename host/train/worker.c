/* train/worker.c - see worker.h. The plan a worker receives names, in order:
 * whether to apply the step it reduced last (commit) or drop it, a new
 * generation to join and a root to take the state from (a joining worker's
 * weights and optimizer state arrive this way), optionally a checkpoint to
 * load first, and one action. Every wait has a deadline the plan gives. */
#include "train/worker.h"
#include "train/worker_internal.h"

#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "train/link_tls.h"
#include "util/error.h"
#include "plugin/so_loader.h"
#include "train/adapter.h"
#include "train/checkpoint.h"
#include "train/grad_overlap_internal.h"
#include "train/logger_set.h"
#include "train/plugin_marker.h"
#include "train/protocol.h"
#include "train/tensor_stage.h"
#include "util/fs.h"



void train_worker_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

int train_worker_fail(loom_error *e, const char *what)
{
    fprintf(stderr, "loom worker: %s: %s\n", what, loom_err_message(e));
    loom_err_free(e);
    return 1;
}

/* The worker loggers' names, for the coordinator to name the plugin a
 * worker died in. */
static void name_loggers(worker *w)
{
    cJSON *list = cJSON_Parse(w->loggers_json ? w->loggers_json : "[]"), *item;
    size_t used = 0;
    int count = 0;
    cJSON_ArrayForEach(item, list) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(item, "name");
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(item, "role");
        const char *r = cJSON_IsString(role) ? role->valuestring : "both";
        if (!cJSON_IsString(name) || (strcmp(r, "both") && strcmp(r, "worker")))
            continue;
        int n = snprintf(w->logger_names + used, sizeof w->logger_names - used, "%s%s",
                         count++ ? ", " : "", name->valuestring);
        if (n < 0 || (size_t)n >= sizeof w->logger_names - used)
            break;
        used += (size_t)n;
    }
    cJSON_Delete(list);
    if (count) {
        char names[sizeof w->logger_names];
        snprintf(names, sizeof names, "%s", w->logger_names);
        snprintf(w->logger_names, sizeof w->logger_names, "worker logger plugin%s %s",
                 count > 1 ? "s" : "", names);
    }
}

/* Marks the worker as in (1) or out of (0) its logger plugins. */
static void in_loggers(worker *w, int in)
{
    if (w->logger_names[0])
        plugin_marker_set(w->marker_fd, in ? w->logger_names : NULL);
}

static int parse_args(worker *w, int argc, char **argv)
{
    for (int i = 0; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--control")) w->control = v;
        else if (!strcmp(k, "--shm")) w->shm = v;
        else if (!strcmp(k, "--collectives")) w->collectives = v;
        else if (!strcmp(k, "--framework")) w->framework = v;
        else if (!strcmp(k, "--spec")) w->spec_path = v;
        else if (!strcmp(k, "--code-dir")) w->code_dir = v;
        else if (!strcmp(k, "--data-dir")) w->data_dir = v;
        else if (!strcmp(k, "--log-dir")) w->log_dir = v;
        else if (!strcmp(k, "--exec-id")) w->exec_id = v;
        else if (!strcmp(k, "--loggers")) w->loggers_json = v;
        else if (!strcmp(k, "--device")) w->device = v;
        else if (!strcmp(k, "--slot")) w->slot = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "--threads")) w->threads = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "--log-every")) w->log_every = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "--epochs")) w->epochs = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "--batch-size")) w->batch_size = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "--effective-batch-size"))
            w->effective_batch_size = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "--overlap-reduce")) w->overlap_reduce = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "--in-place-reduce")) w->in_place_reduce = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(k, "--seed")) w->seed = strtoull(v, NULL, 10);
        else {
            fprintf(stderr, "loom worker: unknown argument %s (workers are started by the trainer)\n", k);
            return -1;
        }
    }
    if (!w->log_every)
        w->log_every = 50;
    if (!w->device)
        w->device = "cpu";
    if (strcmp(w->device, "cpu") && strcmp(w->device, "cuda")) {
        fprintf(stderr, "loom worker: --device: expected cpu or cuda, got %s\n", w->device);
        return -1;
    }
    w->net = w->collectives && !strcmp(w->collectives, "net");
    if (w->collectives && !w->net && strcmp(w->collectives, "shm")) {
        fprintf(stderr, "loom worker: --collectives: expected shm or net, got %s\n", w->collectives);
        return -1;
    }
    if (!w->control || (!w->shm && !w->net) || !w->framework || !w->spec_path || !w->code_dir) {
        fprintf(stderr, "loom worker: --control, --shm (or --collectives net), --framework, --spec "
                        "and --code-dir are required\n");
        return -1;
    }
    return 0;
}



static int setup(worker *w)
{
    loom_error *refused = so_plugin_open(w->framework, 1, &w->plugin);
    if (refused) {
        fprintf(stderr, "loom worker: %s\n", loom_err_message(refused));
        loom_err_free(refused);
        return 1;
    }
    const loom_registration *regs;
    size_t n = so_plugin_registrations(w->plugin, &regs);
    for (size_t i = 0; i < n; i++)
        if (regs[i].kind == LOOM_KIND_FRAMEWORK)
            w->fw = regs[i].factory;
    loom_error *e = adapter_check_trainer(w->fw, w->framework);
    if (e) {
        fprintf(stderr, "loom worker: %s\n", loom_err_message(e));
        loom_err_free(e);
        return 1;
    }
    char *spec;
    if ((e = fs_read_file(w->spec_path, 16u << 20, &spec, NULL)) != NULL) {
        fprintf(stderr, "loom worker: the spec: %s\n", loom_err_message(e));
        loom_err_free(e);
        return 1;
    }
    loom_trainer_config cfg = {
        .struct_size = sizeof cfg,
        .rank = w->slot,
        .num_dataloader_threads = w->threads ? w->threads : 1,
        .seed = w->seed,
        /* A GPU worker sees only its own device (CUDA_VISIBLE_DEVICES). */
        .device = {.struct_size = sizeof(loom_device),
                   .kind = strcmp(w->device, "cuda") ? LOOM_DEVICE_CPU : LOOM_DEVICE_CUDA,
                   .index = 0},
        .spec_json = spec,
        .code_dir = w->code_dir,
        .data_dir = w->data_dir ? w->data_dir : w->code_dir,
    };
    int rc = train_worker_attach_collectives(w, &cfg);
    e = rc ? NULL : w->fw->create(w->fw, &cfg, &w->inst);
    free(spec);
    if (rc)
        return rc;
    if (e)
        return train_worker_fail(e, "the framework could not build the model");
    w->params.struct_size = w->grads.struct_size = sizeof(loom_tensor_view);
    if ((e = w->fw->buffers(w->inst, &w->params, &w->grads)))
        return train_worker_fail(e, "buffers");
    if ((e = adapter_state_tensors(w->fw, w->inst, &w->views, &w->roles, &w->nviews)))
        return train_worker_fail(e, "the framework's state tensors");
    if ((e = tensor_stage_init(&w->stage, w->views, w->nviews)))
        return train_worker_fail(e, "staging the state tensors");
    if (w->params.on_device || w->grads.on_device) {
        w->params_host = malloc((size_t)w->params.nbytes + 1);
        w->grads_host = malloc((size_t)w->grads.nbytes + 1);
        if (!w->params_host || !w->grads_host) {
            fprintf(stderr, "loom worker: out of memory for host copies of the buffers\n");
            return 1;
        }
    }
    if (w->overlap && (e = grad_overlap_bind(w->overlap, w->comm, (float *)w->grads.data,
                                             (size_t)(w->grads.nbytes / sizeof(float)))))
        return train_worker_fail(e, "collectives");
    if (!strcmp(w->device, "cuda")) {
#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA
        if ((e = comm_nccl_open(0, &w->gpu_comm)))
            return train_worker_fail(e, "nccl collectives");
#else
        fprintf(stderr, "loom worker: --device cuda, but this loom was built without CUDA\n");
        return 1;
#endif
    }
    /* A CPU worker's collectives read its buffers directly. */
    if (!w->gpu_comm) {
        const char *on_device = NULL;
        for (uint32_t i = 0; i < w->nviews && !on_device; i++)
            if (w->views[i].on_device)
                on_device = w->views[i].name ? w->views[i].name : "the flat buffers";
        if (!on_device && (w->params.on_device || w->grads.on_device))
            on_device = "the flat buffers";
        if (on_device) {
            fprintf(stderr, "loom worker: the adapter gave device memory (%s) to a CPU worker\n",
                    on_device);
            return 1;
        }
    }
    name_loggers(w);
    w->marker_fd = plugin_marker_open(w->log_dir);
    in_loggers(w, 1);
    w->loggers = logger_set_open(NULL, w->loggers_json, LOOM_LOGGER_WORKER, w->slot,
                                 w->exec_id, w->log_dir, getenv("RESULT_DIR"));
    in_loggers(w, 0);
    return 0;
}


/* Where a worker's time goes, per epoch: printed when the epoch changes
 * (bench/train/run.sh --only profile reads these lines). */
typedef struct step_profile {
    uint32_t epoch;
    uint64_t steps, rounds;
    uint64_t compute_ns, reduce_ns, wait_ns, apply_ns, between_ns;
    uint64_t replied_ns; /* when the last reply went out; 0: none yet */
} step_profile;

static step_profile profile;

static void profile_print(const worker *w)
{
    step_profile *p = &profile;
    grad_overlap *overlap = w->overlap;
    if (!p->steps)
        return;
    double n = (double)p->steps, ms = 1e6;
    char during[96] = "";
    uint64_t early = 0, total = 0;
    if (overlap)
        grad_overlap_counts(overlap, &early, &total);
    if (total)
        snprintf(during, sizeof during, "; %.0f%% of the all-reduce buckets during backward",
                 100.0 * (double)early / (double)total);
    train_worker_say("profile epoch %u: %llu steps in %llu rounds; per step ms: compute %.3f, all-reduce %.3f "
        "(waiting for peers %.3f), apply %.3f, between rounds %.3f (worker %u)%s; all-reduce %s",
        p->epoch + 1, (unsigned long long)p->steps, (unsigned long long)p->rounds,
        (double)p->compute_ns / n / ms, (double)p->reduce_ns / n / ms, (double)p->wait_ns / n / ms,
        (double)p->apply_ns / n / ms, (double)p->between_ns / n / ms, w->slot, during,
        comm_shm_in_place_bytes(w->comm) ? "in place in the shared segment" : "through staging");
}

/* A plan for `epoch` arrived: the time since the last reply was spent
 * between rounds (the coordinator's work, the slowest member's reply). */
static void profile_round(const worker *w, uint32_t epoch)
{
    step_profile *p = &profile;
    if (epoch != p->epoch) {
        profile_print(w);
        uint64_t replied = p->replied_ns;
        *p = (step_profile){.epoch = epoch, .replied_ns = replied};
    }
    if (p->replied_ns)
        p->between_ns += comm_now_ns() - p->replied_ns;
    p->replied_ns = 0;
}

static loom_error *apply_step(worker *w, uint32_t epoch, uint32_t epochs, uint64_t iteration,
                              uint64_t steps_per_epoch)
{
    uint64_t t0 = comm_now_ns();
    loom_step_info si = {.struct_size = sizeof si, .epoch = epoch, .epochs = epochs,
                         .iteration = iteration, .steps_per_epoch = steps_per_epoch};
    loom_error *e = w->fw->apply(w->inst, &si);
    profile.apply_ns += comm_now_ns() - t0;
    return e;
}

/* Sums of a step's metrics over its samples. */
typedef struct step_sums {
    /* every metric the adapter reports, loss first; the names are the
     * adapter's, which live as long as its instance (the ABI's promise) */
    const char *names[ADAPTER_MAX_METRICS];
    double sums[ADAPTER_MAX_METRICS];
    uint32_t count;
    uint32_t samples;
} step_sums;

static void sums_add(step_sums *s, const char *name, double value, uint32_t samples)
{
    uint32_t i = 0;
    while (i < s->count && strcmp(s->names[i], name))
        i++;
    if (i == s->count) {
        if (s->count == ADAPTER_MAX_METRICS)
            return; /* the adapter's lists hold no more */
        s->names[s->count++] = name;
    }
    s->sums[i] += value * samples;
}

/* Forward + backward over micro-batches [first, first + n) of the batch,
 * whose samples start at `*at`, accumulating into the gradient buffer. */
static loom_error *compute(worker *w, const msg_batch *batch, uint32_t first, uint32_t n,
                           size_t *at, step_sums *sums, uint64_t overlap_deadline)
{
    uint64_t t0 = comm_now_ns();
    loom_error *e = w->fw->zero_grad(w->inst);
    for (uint32_t k = first; !e && k < first + n; k++) {
        uint32_t size = batch->sizes[k];
        adapter_metrics m;
        adapter_metrics_init(&m);
        /* Only the step's last forward_backward leaves final gradients. */
        if (overlap_deadline && k + 1 == first + n && size)
            grad_overlap_arm(w->overlap, overlap_deadline);
        e = size ? w->fw->forward_backward(w->inst, batch->samples + *at, size,
                                           (float)batch->scales[k], &m.list)
                 : NULL;
        for (uint32_t i = 0, total = loom_metrics_total(&m.list); !e && i < total; i++) {
            const loom_metric *one = loom_metrics_at(&m.list, i);
            if (one->name)
                sums_add(sums, one->name, one->value, size);
        }
        *at += size;
        sums->samples += size;
    }
    profile.compute_ns += comm_now_ns() - t0;
    return e;
}

/* The step's all-reduce; with the overlap on, what is left of it once
 * backward returned (the profile counts only that). */
static loom_error *reduce(worker *w, uint64_t deadline)
{
    comm *c = train_worker_comm_for(w, &w->grads);
    uint64_t t0 = comm_now_ns(), waited = comm_wait_ns(c);
    loom_error *e = w->overlap ? grad_overlap_finish(w->overlap, deadline)
                               : comm_allreduce_avg_f32(c, (float *)w->grads.data,
                                                        (size_t)(w->grads.nbytes / sizeof(float)),
                                                        deadline);
    profile.reduce_ns += comm_now_ns() - t0;
    profile.wait_ns += comm_wait_ns(c) - waited;
    return e;
}

/* Fault injection for the tests of multi-step rounds:
 * LOOM_FAULT_EXIT_AT="SLOT:ITERATION" makes the worker in that slot exit
 * before the all-reduce of that global step, once per job (a marker in
 * its log folder keeps the replacement, which trains the step again, from
 * dying too). */
static void maybe_fault_exit(worker *w, uint64_t iteration)
{
    const char *spec = getenv("LOOM_FAULT_EXIT_AT");
    unsigned slot;
    unsigned long long at;
    if (!spec || sscanf(spec, "%u:%llu", &slot, &at) != 2 || slot != w->slot || iteration != at ||
        !w->log_dir)
        return;
    char marker[4200];
    snprintf(marker, sizeof marker, "%s/../fault-exit-fired", w->log_dir);
    FILE *f = fopen(marker, "wx");
    if (!f)
        return;
    fclose(f);
    train_worker_say("fault injection: exiting before the all-reduce of step %llu", at);
    _exit(9);
}

/* Fault injection for the test of rounds that keep failing:
 * LOOM_FAULT_STEP_ERROR="SLOT" makes every step of the worker in that slot
 * fail the way an adapter's error does, without the process dying. */
static loom_error *maybe_fault_step_error(const worker *w)
{
    const char *spec = getenv("LOOM_FAULT_STEP_ERROR");
    unsigned slot;
    if (!spec || sscanf(spec, "%u", &slot) != 1 || slot != w->slot)
        return NULL;
    return loom_err(LOOM_E_INTERNAL, "fault injection: the framework adapter failed this step");
}

/* The steps of a plan (p; NULL for an ASYNC work item, one step without
 * reduce): for each, forward + backward over its micro-batches (gradient
 * accumulation) and the average all-reduce; every step but the last is
 * applied at once, the last waits for the next plan's commit. r->steps
 * counts the steps reduced (after a failure: those applied). The mean
 * metrics go to r->train (the caller frees it), their sample count to
 * r->count. */
static loom_error *do_steps(worker *w, const msg_batch *batch, const msg_plan *p, msg_reply *r,
                            uint64_t timeout_ms)
{
    uint32_t nsteps = batch->nsteps > 1 ? batch->nsteps : 1, first = 0;
    step_sums sums = {0};
    size_t at = 0;
    loom_error *e = NULL;
    for (uint32_t s = 0; s < nsteps && !e; s++) {
        uint32_t n = batch->nsteps > 1 ? batch->step_mbs[s] : batch->count;
        uint64_t deadline = comm_deadline_after_ms((uint32_t)timeout_ms);
        e = maybe_fault_step_error(w);
        if (!e)
            e = compute(w, batch, first, n, &at, &sums, p && w->overlap ? deadline : 0);
        if (e && p && w->overlap)
            grad_overlap_abandon(w->overlap);
        first += n;
        /* Each step's collective has the whole step deadline. */
        if (!e && p) {
            maybe_fault_exit(w, p->iteration + s);
            e = reduce(w, deadline);
        }
        if (!e && p && s + 1 < nsteps)
            e = apply_step(w, p->epoch, p->epochs, p->iteration + s + 1, p->steps_per_epoch);
        if (!e) {
            r->steps = s + 1;
            profile.steps++;
            w->steps_done++;
        }
    }
    if (e && r->steps == nsteps)
        r->steps--; /* the last step's apply failed: it was not applied */
    if (e)
        return e;
    cJSON *train = cJSON_CreateObject();
    for (uint32_t i = 0; sums.samples && i < sums.count; i++)
        cJSON_AddNumberToObject(train, sums.names[i], sums.sums[i] / sums.samples);
    r->train = train;
    r->count = sums.samples;
    return NULL;
}

/* Evaluates test samples [begin, end); the metrics go to r->eval (the
 * caller frees it). */
static loom_error *do_validate(worker *w, uint64_t begin, uint64_t end, msg_reply *r)
{
    uint32_t n = end > begin ? (uint32_t)(end - begin) : 0;
    cJSON *ev = cJSON_CreateObject();
    r->eval = ev;
    r->count = n;
    if (!n)
        return NULL;
    uint64_t *idx = malloc((size_t)n * sizeof *idx);
    if (!idx)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    for (uint32_t i = 0; i < n; i++)
        idx[i] = begin + i;
    adapter_metrics m;
    adapter_metrics_init(&m);
    loom_error *e = w->fw->evaluate(w->inst, LOOM_SPLIT_TEST, idx, n, &m.list);
    free(idx);
    for (uint32_t i = 0, total = loom_metrics_total(&m.list); !e && i < total; i++)
        if (loom_metrics_at(&m.list, i)->name)
            cJSON_AddNumberToObject(ev, loom_metrics_at(&m.list, i)->name,
                                    loom_metrics_at(&m.list, i)->value);
    return e;
}




/* Saves the state (checkpoint) or the parameters (final model) to path. */
static loom_error *save_state(worker *w, const char *path, int final, const cJSON *meta)
{
    loom_error *e = tensor_stage_pull(&w->stage, w->views);
    if (e)
        return e;
    return checkpoint_save(path, w->stage.host, w->roles, w->stage.count, final, meta);
}

/* Sends m (and a blob after it) while the heartbeat thread waits. */
static loom_error *send_locked(worker *w, const msg *m, const void *blob, size_t len)
{
    pthread_mutex_lock(&w->send_lock);
    loom_error *e = train_msg_send(w->fd, m, blob, len);
    pthread_mutex_unlock(&w->send_lock);
    return e;
}

/* Every LOOM_HEARTBEAT_INTERVAL_MS until the worker ends, whatever its main
 * thread does (a step may take longer than the coordinator's timeout). */
static void *heartbeat_main(void *arg)
{
    worker *w = arg;
    msg beat = {.kind = MSG_HEARTBEAT};
    pthread_mutex_lock(&w->stop_lock);
    while (!w->stopping) {
        struct timespec at = time_after_ms(CLOCK_MONOTONIC, LOOM_HEARTBEAT_INTERVAL_MS);
        pthread_cond_timedwait(&w->stop_cond, &w->stop_lock, &at);
        if (w->stopping)
            break;
        pthread_mutex_unlock(&w->stop_lock);
        loom_error *e = send_locked(w, &beat, NULL, 0);
        pthread_mutex_lock(&w->stop_lock);
        if (e) { /* the coordinator is gone: the main thread finds out */
            loom_err_free(e);
            break;
        }
    }
    pthread_mutex_unlock(&w->stop_lock);
    return NULL;
}

static void heartbeat_stop(worker *w)
{
    if (!w->heartbeat_started)
        return;
    pthread_mutex_lock(&w->stop_lock);
    w->stopping = 1;
    pthread_cond_signal(&w->stop_cond);
    pthread_mutex_unlock(&w->stop_lock);
    pthread_join(w->heartbeat, NULL);
    w->heartbeat_started = 0;
}

/* Reaches the coordinator and proves the exec's secret (protocol.h): just
 * before the hello, so that the coordinator, which waits for the hello
 * once it accepted, is not kept waiting. */
static loom_error *connect_control(worker *w)
{
    int tls = !strncmp(w->control, "tls:", 4);
    loom_error *e = tls ? train_msg_connect_tcp(w->control + 4, &w->fd)
                        : train_msg_connect(w->control, &w->fd);
    if (!e && tls)
        e = train_tls_wrap(w->fd, TRAIN_TLS_WORKER, w->secret, &w->fd);
    if (!e)
        e = train_auth_answer(w->fd, w->secret, w->slot, time_mono_ms() + 60000);
    sodium_memzero(w->secret, sizeof w->secret);
    return e;
}

static int send_hello(worker *w)
{
    uint64_t ntrain = 0, ntest = 0;
    loom_error *e = w->fw->dataset_size(w->inst, LOOM_SPLIT_TRAIN, &ntrain);
    if (!e)
        e = w->fw->dataset_size(w->inst, LOOM_SPLIT_TEST, &ntest);
    if (e)
        return train_worker_fail(e, "dataset");
    if ((e = connect_control(w)))
        return train_worker_fail(e, "control");
    msg hello = {.kind = MSG_HELLO,
                 .u.hello = {.slot = w->slot, .pid = getpid(),
                             .params = w->params.nbytes / sizeof(float), .ntrain = ntrain,
                             .ntest = ntest,
                             .net_port = w->net ? comm_net_member_port(w->comm) : 0}};
    loom_err_free(train_msg_send(w->fd, &hello, NULL, 0)); /* a lost coordinator shows at the next read */
    w->heartbeat_started = pthread_create(&w->heartbeat, NULL, heartbeat_main, w) == 0;
    if (!w->heartbeat_started) {
        fprintf(stderr, "loom worker: cannot start the heartbeat thread\n");
        return 1;
    }
    train_worker_say("worker %u ready: %llu parameters, %llu training and %llu test samples", w->slot,
        (unsigned long long)(w->params.nbytes / sizeof(float)), (unsigned long long)ntrain,
        (unsigned long long)ntest);
    return 0;
}

/* Sends a reply (and the blob after it) and frees its metrics. 0, or 2
 * when the coordinator is gone. */
static int send_reply(worker *w, msg *reply, const void *blob, size_t len)
{
    loom_error *e = send_locked(w, reply, blob, len);
    cJSON_Delete((cJSON *)reply->u.reply.train);
    cJSON_Delete((cJSON *)reply->u.reply.eval);
    if (e) {
        loom_err_free(e);
        train_worker_say("coordinator gone; exiting");
        return 2;
    }
    return 0;
}

/* The loggers' on_train_begin, once, at the first work this worker is
 * given (a worker that replaces another gets its own). */
static void begin_loggers(worker *w, uint32_t workers)
{
    if (w->loggers_began)
        return;
    w->loggers_began = 1;
    loom_train_info info = {.struct_size = sizeof info, .epochs = w->epochs, .workers = workers,
                            .batch_size = w->batch_size,
                            .effective_batch_size = w->effective_batch_size,
                            .exec_id = w->exec_id};
    in_loggers(w, 1);
    logger_set_begin(w->loggers, &info);
    in_loggers(w, 0);
}

/* The loggers hear of a round's steps when they reached the next multiple
 * of log_every (once per round, with the round's mean metrics). `epoch`
 * counts from 0 as the protocol does; the loggers count from 1. */
static void log_step(worker *w, const cJSON *train, uint32_t steps, uint64_t iteration,
                     uint32_t epoch, uint32_t workers)
{
    if (w->steps_done / w->log_every != (w->steps_done - steps) / w->log_every) {
        in_loggers(w, 1);
        logger_set_train_json(w->loggers, train, iteration, epoch + 1, workers);
        in_loggers(w, 0);
    }
}

/* ASYNC: the parameter server's weights came with the work; the gradients
 * go back with the reply. Returns -1 to go on, else the exit status. */
static int serve_work(worker *w, const msg *m)
{
    const msg_work *work = &m->u.work;
    void *into = w->params_host ? (void *)w->params_host : w->params.data;
    loom_error *e = train_msg_recv_blob(w->fd, m, into, (size_t)w->params.nbytes, 0);
    if (!e && w->params_host)
        e = tensor_copy_from_host(&w->params, w->params_host);
    if (e) {
        train_worker_say("cannot read the weights: %s; exiting", loom_err_message(e));
        loom_err_free(e);
        return 2;
    }
    if ((e = adapter_state_loaded(w->fw, w->inst)))
        return train_worker_fail(e, "state_loaded");
    msg reply = {.kind = MSG_REPLY, .u.reply = {.round = work->version}};
    msg_reply *r = &reply.u.reply;
    begin_loggers(w, work->workers);
    e = do_steps(w, &work->batch, NULL, r, 0);
    r->ok = e == NULL;
    if (e)
        r->error = loom_err_message(e);
    else
        log_step(w, r->train, r->steps, work->iteration, work->epoch, work->workers);
    const void *grads = w->grads.data;
    if (w->grads_host) {
        grads = w->grads_host;
        loom_error *unread = tensor_copy_to_host(w->grads_host, &w->grads);
        if (unread) {
            train_worker_say("cannot read the gradients: %s; exiting", loom_err_message(unread));
            loom_err_free(unread);
            cJSON_Delete((cJSON *)r->train);
            loom_err_free(e);
            return 2;
        }
    }
    int rc = send_reply(w, &reply, grads, (size_t)w->grads.nbytes);
    loom_err_free(e);
    return rc ? rc : -1;
}

/* The job's mean metrics the coordinator recorded last round, for the
 * adapter's own loggers. */
static loom_error *hand_job_metrics(worker *w, const msg_plan *p)
{
    const msg_job_metrics *j = &p->job_metrics;
    adapter_metrics m;
    adapter_metrics_init(&m);
    const cJSON *v;
    cJSON_ArrayForEach(v, j->metrics) /* a full list keeps the first ADAPTER_MAX_METRICS */
        if (loom_metrics_add(&m.list, v->string, v->valuedouble) != LOOM_OK)
            break;
    loom_step_info si = {.struct_size = sizeof si, .epoch = j->epoch, .epochs = p->epochs,
                         .iteration = j->iteration, .steps_per_epoch = p->steps_per_epoch};
    return adapter_job_metrics(w->fw, w->inst, j->split, &m.list, &si, j->workers);
}

/* The plan's action, after its commit and join. */
static loom_error *do_action(worker *w, const msg_plan *p, msg_reply *r, int *pending)
{
    loom_error *e = NULL;
    switch (p->action) {
    case PLAN_STEP:
        e = do_steps(w, &p->batch, p, r, p->timeout_ms);
        if (!e) {
            *pending = 1;
            log_step(w, r->train, r->steps, p->iteration + r->steps - 1, p->epoch, p->workers);
        }
        return e;
    case PLAN_VALIDATE:
        /* A validate plan's epoch is the number of epochs done: the one
         * validated, counted from 1. A worker with no test samples this
         * time has nothing to log. */
        e = do_validate(w, p->begin, p->end, r);
        if (!e && r->count) {
            in_loggers(w, 1);
            logger_set_test_json(w->loggers, r->eval, p->iteration, p->epoch);
            in_loggers(w, 0);
        }
        return e;
    case PLAN_CHECKPOINT:
    case PLAN_FINISH:
        return p->path ? save_state(w, p->path, p->action == PLAN_FINISH, p->meta) : NULL;
    }
    return NULL;
}

/* One synchronous round. *pending: a reduced step waiting for the next
 * plan's commit. Returns -1 to go on, else the exit status. */
static int serve_plan(worker *w, const msg_plan *p, int *pending, int *finished)
{
    msg reply = {.kind = MSG_REPLY, .u.reply = {.round = p->round}};
    msg_reply *r = &reply.u.reply;
    loom_error *e = NULL;
    profile_round(w, p->epoch);
    profile.rounds += p->action == PLAN_STEP;
    /* The pending step was the previous plan's last; this plan's
     * iteration counts it. */
    begin_loggers(w, p->workers);
    if (*pending && p->commit)
        e = apply_step(w, p->epoch, p->epochs, p->iteration, p->steps_per_epoch);
    *pending = 0;
    if (!e && p->job_metrics.present)
        e = hand_job_metrics(w, p);
    if (!e && p->has_join) {
        e = train_worker_join_and_pull(w, &p->join, p->load);
        r->pull_failed = e != NULL;
    }
    if (!e)
        e = do_action(w, p, r, pending);
    r->ok = e == NULL;
    if (e) {
        r->error = loom_err_message(e);
        train_worker_say("round %u failed: %s", p->round, loom_err_message(e));
    }
    int finishing = p->action == PLAN_FINISH && !e;
    *finished |= finishing;
    int rc = send_reply(w, &reply, NULL, 0);
    profile.replied_ns = comm_now_ns();
    loom_err_free(e);
    if (rc)
        return rc;
    /* After finishing, wait for the coordinator's exit: leaving first
     * would look like a death before every reply is in. */
    if (finishing) {
        profile_print(w);
        in_loggers(w, 1);
        logger_set_end(w->loggers, LOOM_TRAIN_FINISHED, "finished");
        in_loggers(w, 0);
        train_worker_say("training finished");
    }
    return -1;
}

static int serve(worker *w)
{
    int rc = send_hello(w);
    if (rc)
        return rc;
    int pending = 0;  /* a reduced step waiting for commit */
    int finished = 0; /* the finish round is done */
    for (rc = -1; rc < 0;) {
        msg m;
        /* The coordinator's heartbeats come every
         * LOOM_HEARTBEAT_INTERVAL_MS, from a thread of its own. */
        loom_error *e = train_msg_recv(w->fd, time_mono_ms() + LOOM_HEARTBEAT_TIMEOUT_MS, &m);
        if (e && loom_err_code(e) == LOOM_E_DEADLINE) {
            train_worker_say("coordinator silent for %d s (no heartbeat); exiting",
                LOOM_HEARTBEAT_TIMEOUT_MS / 1000);
            loom_err_free(e);
            return 2;
        }
        if (e) {
            /* A message this worker cannot read leaves the coordinator's
             * plan unknown: leaving is the only safe answer. */
            train_worker_say("coordinator gone (%s); exiting", loom_err_message(e));
            loom_err_free(e);
            return 2;
        }
        if (m.kind == MSG_HEARTBEAT) {
            rc = -1;
        } else if (m.kind == MSG_WORK) {
            rc = serve_work(w, &m);
        } else if (m.kind == MSG_PLAN) {
            rc = serve_plan(w, &m.u.plan, &pending, &finished);
        } else if (m.kind == MSG_EXIT) {
            train_worker_say("%s", m.u.exit.reason ? m.u.exit.reason : "stopped by the coordinator");
            rc = m.u.exit.code;
            in_loggers(w, 1);
            if (!finished && w->loggers_began) /* a spare that never trained: no end */
                logger_set_end(w->loggers, LOOM_TRAIN_KILLED, "stopped");
            in_loggers(w, 0);
        } else {
            train_worker_say("a %s message from the coordinator, which sends plans, work and exits; exiting",
                train_msg_kind_name(m.kind));
            rc = 2;
        }
        train_msg_free(&m);
    }
    return rc;
}

int train_worker_main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    worker w;
    memset(&w, 0, sizeof w);
    w.fd = -1;
    w.marker_fd = -1;
    /* Taken (and wiped) before the framework or any user code runs. */
    loom_error *no_secret = train_secret_from_env(w.secret);
    if (no_secret)
        return train_worker_fail(no_secret, "control") + 1;
    pthread_mutex_init(&w.send_lock, NULL);
    pthread_mutex_init(&w.stop_lock, NULL);
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&w.stop_cond, &monotonic);
    pthread_condattr_destroy(&monotonic);
    if (parse_args(&w, argc, argv) != 0)
        return 2;
    int rc = setup(&w);
    if (rc == 0)
        rc = serve(&w);
    heartbeat_stop(&w);
    pthread_cond_destroy(&w.stop_cond);
    pthread_mutex_destroy(&w.stop_lock);
    pthread_mutex_destroy(&w.send_lock);
    in_loggers(&w, 1);
    logger_set_close(w.loggers);
    in_loggers(&w, 0);
    if (w.marker_fd >= 0)
        close(w.marker_fd);
    grad_overlap_free(w.overlap);
    comm_close(w.gpu_comm);
    comm_close(w.comm);
    tensor_stage_free(&w.stage);
    free(w.views);
    free(w.roles);
    free(w.params_host);
    free(w.grads_host);
    if (w.inst)
        w.fw->destroy(w.inst);
    if (w.fd >= 0)
        close(w.fd);
    so_plugin_close(w.plugin);
    return rc;
}

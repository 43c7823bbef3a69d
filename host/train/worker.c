/* train/worker.c - see worker.h. The plan a worker receives names, in order:
 * whether to apply the step it reduced last (commit) or drop it, a new
 * generation to join and a root to take the state from (a joining worker's
 * weights and optimizer state arrive this way), optionally a checkpoint to
 * load first, and one action. Every wait has a deadline the plan gives. */
#include "train/worker.h"

#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "util/error.h"
#include "plugin/so_loader.h"
#include "train/checkpoint.h"
#include "train/logger_set.h"
#include "train/protocol.h"
#include "train/tensor_stage.h"
#include "util/fs.h"

#define MAX_STATE_TENSORS 256

typedef struct worker {
    const char *control, *shm, *framework, *spec_path, *code_dir, *data_dir, *log_dir;
    const char *exec_id, *loggers_json;
    uint32_t slot, threads, log_every;
    uint64_t seed;
    so_plugin *plugin;
    const loom_framework_factory *fw;
    loom_framework_instance *inst;
    loom_tensor_view params, grads;
    loom_tensor_view views[MAX_STATE_TENSORS];
    int32_t roles[MAX_STATE_TENSORS];
    uint32_t nviews;
    tensor_stage stage; /* host copies of views: checkpoints, the final model */
    /* ASYNC on a GPU: host copies of params and grads for the parameter
     * server's messages (NULL when the buffers are host memory). */
    float *params_host, *grads_host;
    const char *device; /* "cpu" or "cuda" (the one CUDA_VISIBLE_DEVICES shows) */
    comm *comm;         /* shm: membership, and the collectives on CPU */
    comm *gpu_comm;     /* nccl on a GPU: the collectives; NULL on CPU */
    int fd;
    logger_set *loggers;
    uint64_t steps_done;
    int joined_once;
} worker;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static int fail(loom_error *e, const char *what)
{
    fprintf(stderr, "loom worker: %s: %s\n", what, loom_err_message(e));
    loom_err_free(e);
    return 1;
}

static int parse_args(worker *w, int argc, char **argv)
{
    for (int i = 0; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--control")) w->control = v;
        else if (!strcmp(k, "--shm")) w->shm = v;
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
    if (!w->control || !w->shm || !w->framework || !w->spec_path || !w->code_dir) {
        fprintf(stderr, "loom worker: --control, --shm, --framework, --spec and --code-dir are required\n");
        return -1;
    }
    return 0;
}

static int setup(worker *w)
{
    char err[1024];
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
    if (!w->fw || w->fw->style != LOOM_FRAMEWORK_TRAINER) {
        fprintf(stderr, "loom worker: %s is not a trainer-style framework adapter\n", w->framework);
        return 1;
    }
    char *spec = fs_read_file(w->spec_path, 16u << 20, NULL);
    if (!spec) {
        fprintf(stderr, "loom worker: cannot read the spec %s\n", w->spec_path);
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
    loom_error *e = w->fw->create(w->fw, &cfg, &w->inst);
    free(spec);
    if (e)
        return fail(e, "the framework could not build the model");
    w->params.struct_size = w->grads.struct_size = sizeof(loom_tensor_view);
    if ((e = w->fw->buffers(w->inst, &w->params, &w->grads)))
        return fail(e, "buffers");
    for (uint32_t i = 0; i < MAX_STATE_TENSORS; i++)
        w->views[i].struct_size = sizeof(loom_tensor_view);
    if ((e = w->fw->state_tensors(w->inst, w->views, w->roles, MAX_STATE_TENSORS, &w->nviews)))
        return fail(e, "state_tensors");
    if (w->nviews > MAX_STATE_TENSORS) {
        fprintf(stderr, "loom worker: the model has %u state tensors, more than %d\n", w->nviews,
                MAX_STATE_TENSORS);
        return 1;
    }
    if (tensor_stage_init(&w->stage, w->views, w->nviews, err, sizeof err) != 0) {
        fprintf(stderr, "loom worker: %s\n", err);
        return 1;
    }
    if (w->params.on_device || w->grads.on_device) {
        w->params_host = malloc((size_t)w->params.nbytes + 1);
        w->grads_host = malloc((size_t)w->grads.nbytes + 1);
        if (!w->params_host || !w->grads_host) {
            fprintf(stderr, "loom worker: out of memory for host copies of the buffers\n");
            return 1;
        }
    }
    if ((e = comm_shm_attach(w->shm, w->slot, &w->comm)))
        return fail(e, "collectives");
    if (!strcmp(w->device, "cuda")) {
#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA
        if ((e = comm_nccl_open(0, &w->gpu_comm)))
            return fail(e, "nccl collectives");
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
    w->fd = msg_connect(w->control, err, sizeof err);
    if (w->fd < 0) {
        fprintf(stderr, "loom worker: %s\n", err);
        return 1;
    }
    w->loggers = logger_set_open(NULL, w->loggers_json, LOOM_LOGGER_WORKER, w->slot,
                                 w->exec_id, w->log_dir, getenv("RESULT_DIR"));
    return 0;
}

static uint64_t *index_list(const cJSON *array, uint32_t *count)
{
    int n = cJSON_GetArraySize(array);
    uint64_t *idx = malloc(((size_t)n + 1) * sizeof *idx);
    *count = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, array) idx[(*count)++] = (uint64_t)v->valuedouble;
    return idx;
}

/* The comm a buffer travels on: nccl for device memory, shm for host
 * memory (a GPU adapter may keep small state, like step counters, on the
 * host). Both have the same members and ranks. */
static comm *comm_for(worker *w, const loom_tensor_view *v)
{
    return v->on_device && w->gpu_comm ? w->gpu_comm : w->comm;
}

static void add_metrics(cJSON *obj, const loom_metrics *m)
{
    for (uint32_t i = 0; i < m->count && i < LOOM_MAX_METRICS; i++)
        cJSON_AddNumberToObject(obj, m->items[i].name, m->items[i].value);
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A training step: forward + backward over each micro-batch (gradient
 * accumulation), then the average all-reduce. */
static loom_error *do_step(worker *w, const cJSON *plan, cJSON *reply, int reduce,
                           uint64_t deadline)
{
    loom_error *e = w->fw->zero_grad(w->inst);
    if (e)
        return e;
    const cJSON *mbs = cJSON_GetObjectItemCaseSensitive(plan, "mb");
    const cJSON *scales = cJSON_GetObjectItemCaseSensitive(plan, "scale");
    double loss_sum = 0, acc_sum = 0;
    uint32_t total = 0;
    int have_acc = 0;
    int k = 0;
    const cJSON *mb;
    cJSON_ArrayForEach(mb, mbs) {
        uint32_t n;
        uint64_t *idx = index_list(mb, &n);
        float scale = (float)cJSON_GetArrayItem(scales, k++)->valuedouble;
        loom_metrics m = {.struct_size = sizeof m};
        e = n ? w->fw->forward_backward(w->inst, idx, n, scale, &m) : NULL;
        free(idx);
        if (e)
            return e;
        for (uint32_t i = 0; i < m.count; i++) {
            if (!strcmp(m.items[i].name, "loss"))
                loss_sum += m.items[i].value * n;
            else if (!strcmp(m.items[i].name, "accuracy")) {
                acc_sum += m.items[i].value * n;
                have_acc = 1;
            }
        }
        total += n;
    }
    if (reduce) {
        e = comm_allreduce_avg_f32(comm_for(w, &w->grads), (float *)w->grads.data,
                                   (size_t)(w->grads.nbytes / sizeof(float)), deadline);
        if (e)
            return e;
    }
    cJSON *m = cJSON_AddObjectToObject(reply, "train");
    if (total) {
        cJSON_AddNumberToObject(m, "loss", loss_sum / total);
        if (have_acc)
            cJSON_AddNumberToObject(m, "accuracy", acc_sum / total);
    }
    cJSON_AddNumberToObject(reply, "count", total);
    w->steps_done++;
    return NULL;
}

static loom_error *do_validate(worker *w, const cJSON *plan, cJSON *reply)
{
    uint64_t begin = (uint64_t)num(plan, "begin"), end = (uint64_t)num(plan, "end");
    uint32_t n = end > begin ? (uint32_t)(end - begin) : 0;
    cJSON *ev = cJSON_AddObjectToObject(reply, "eval");
    cJSON_AddNumberToObject(reply, "count", n);
    if (!n)
        return NULL;
    uint64_t *idx = malloc((size_t)n * sizeof *idx);
    if (!idx)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    for (uint32_t i = 0; i < n; i++)
        idx[i] = begin + i;
    loom_metrics m = {.struct_size = sizeof m};
    loom_error *e = w->fw->evaluate(w->inst, LOOM_SPLIT_TEST, idx, n, &m);
    free(idx);
    if (!e)
        add_metrics(ev, &m);
    return e;
}

/* The nccl side of a generation, after the shm barrier made every member
 * arrive: a generation that only lost members shrinks the communicator
 * ("exclude": the leavers' ranks in the previous one); any other gets a new
 * one from the coordinator's unique id. Ranks follow the shm ranks. */
static loom_error *join_gpu_generation(worker *w, const cJSON *join, uint64_t deadline)
{
#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA
    uint32_t gen = (uint32_t)num(join, "gen");
    const cJSON *exclude = cJSON_GetObjectItemCaseSensitive(join, "exclude");
    if (cJSON_IsArray(exclude) && w->joined_once) {
        uint32_t ranks[256], n = 0;
        const cJSON *r;
        cJSON_ArrayForEach(r, exclude) if (n < 256) ranks[n++] = (uint32_t)r->valuedouble;
        loom_error *e = comm_nccl_shrink(w->gpu_comm, gen, ranks, n, deadline);
        if (!e && comm_rank(w->gpu_comm) == comm_rank(w->comm))
            return NULL;
        if (e)
            return e;
        return loom_err(LOOM_ERR_INTERNAL, "nccl shrink gave rank %u, the generation says %u",
                        comm_rank(w->gpu_comm), comm_rank(w->comm));
    }
    const char *hex = str(join, "nccl_id");
    uint8_t id[COMM_NCCL_ID_BYTES];
    size_t got = 0;
    if (!hex || strlen(hex) != 2 * sizeof id)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "join: no nccl_id for a GPU generation");
    if (sodium_hex2bin(id, sizeof id, hex, strlen(hex), NULL, &got, NULL) != 0 || got != sizeof id)
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "join: nccl_id is not hexadecimal");
    return comm_nccl_join(w->gpu_comm, gen, id, sizeof id, comm_world_size(w->comm),
                          comm_rank(w->comm), deadline);
#else
    (void)w, (void)join, (void)deadline;
    return loom_err(LOOM_ERR_INTERNAL, "built without CUDA");
#endif
}

/* Joins a generation and takes the state from its root. */
static loom_error *join_and_pull(worker *w, const cJSON *join, const char *load_path)
{
    uint64_t deadline = comm_deadline_after_ms((uint32_t)num(join, "timeout_ms"));
    /* Fault injection for the tests of EDT_PULL_*: a worker that has not
     * yet pulled the weights arrives this late at a later generation. */
    const char *delay = getenv("LOOM_FAULT_JOIN_DELAY_MS");
    if (delay && num(join, "gen") > 1 && !w->joined_once)
        usleep((useconds_t)strtoul(delay, NULL, 10) * 1000u);
    loom_error *e = comm_shm_join(w->comm, (uint32_t)num(join, "gen"), deadline);
    if (!e && w->gpu_comm)
        e = join_gpu_generation(w, join, deadline);
    if (e)
        return e;
    if (load_path) {
        char err[1024];
        if (checkpoint_load(load_path, w->stage.host, w->stage.count, NULL, err, sizeof err) != 0 ||
            tensor_stage_push(&w->stage, w->views, err, sizeof err) != 0)
            return loom_err(LOOM_ERR_INVALID_ARGUMENT, "%s", err);
    }
    int root = (int)num(join, "root");
    if (root < 0) {
        w->joined_once = 1;
        return NULL;
    }
    for (uint32_t i = 0; i < w->nviews; i++) {
        e = comm_broadcast(comm_for(w, &w->views[i]), w->views[i].data, (size_t)w->views[i].nbytes, (uint32_t)root,
                           deadline);
        if (e)
            return loom_err_wrap(e, "pulling the weights (tensor %s)", w->views[i].name);
    }
    if (LOOM_OPTIONAL_ENTRY(w->fw, loom_framework_factory, state_loaded) && (e = w->fw->state_loaded(w->inst)))
        return e;
    w->joined_once = 1; /* holds the weights now */
    return NULL;
}

static void step_info(const cJSON *plan, loom_step_info *si)
{
    memset(si, 0, sizeof *si);
    si->struct_size = sizeof *si;
    si->epoch = (uint32_t)num(plan, "epoch");
    si->epochs = (uint32_t)num(plan, "epochs");
    si->iteration = (uint64_t)num(plan, "iteration");
    si->steps_per_epoch = (uint64_t)num(plan, "steps_per_epoch");
}

static int serve(worker *w)
{
    cJSON *hello = cJSON_CreateObject();
    uint64_t ntrain = 0, ntest = 0;
    loom_error *e = w->fw->dataset_size(w->inst, LOOM_SPLIT_TRAIN, &ntrain);
    if (!e)
        e = w->fw->dataset_size(w->inst, LOOM_SPLIT_TEST, &ntest);
    if (e) {
        cJSON_Delete(hello);
        return fail(e, "dataset");
    }
    cJSON_AddStringToObject(hello, "t", "hello");
    cJSON_AddNumberToObject(hello, "slot", w->slot);
    cJSON_AddNumberToObject(hello, "pid", getpid());
    cJSON_AddNumberToObject(hello, "params", (double)(w->params.nbytes / sizeof(float)));
    cJSON_AddNumberToObject(hello, "train", (double)ntrain);
    cJSON_AddNumberToObject(hello, "test", (double)ntest);
    msg_send(w->fd, hello);
    cJSON_Delete(hello);
    say("worker %u ready: %llu parameters, %llu training and %llu test samples", w->slot,
        (unsigned long long)(w->params.nbytes / sizeof(float)), (unsigned long long)ntrain,
        (unsigned long long)ntest);

    int pending = 0;  /* a reduced step waiting for commit */
    int finished = 0; /* the finish round is done */
    for (;;) {
        char err[256];
        cJSON *plan = msg_recv(w->fd, 0, err, sizeof err);
        if (!plan) {
            say("coordinator gone (%s); exiting", err);
            return 2;
        }
        /* ASYNC: the parameter server's current weights come with the work. */
        if (cJSON_GetObjectItemCaseSensitive(plan, "blob")) {
            void *into = w->params_host ? (void *)w->params_host : w->params.data;
            if (msg_recv_blob(w->fd, plan, into, (size_t)w->params.nbytes, 0, err,
                              sizeof err) != 0 ||
                (w->params_host &&
                 tensor_copy_from_host(&w->params, w->params_host, err, sizeof err) != 0)) {
                say("cannot read the weights: %s; exiting", err);
                cJSON_Delete(plan);
                return 2;
            }
            if (LOOM_OPTIONAL_ENTRY(w->fw, loom_framework_factory, state_loaded) && (e = w->fw->state_loaded(w->inst))) {
                cJSON_Delete(plan);
                return fail(e, "state_loaded");
            }
        }
        const char *action = str(plan, "do");
        if (action && !strcmp(action, "async_step")) {
            cJSON *reply = cJSON_CreateObject();
            cJSON_AddStringToObject(reply, "t", "reply");
            cJSON_AddNumberToObject(reply, "round", num(plan, "round"));
            e = do_step(w, plan, reply, 0, 0);
            cJSON_AddBoolToObject(reply, "ok", e == NULL);
            if (e) {
                cJSON_AddStringToObject(reply, "error", loom_err_message(e));
                loom_err_free(e);
            } else if (w->steps_done % w->log_every == 0) {
                logger_set_train_json(w->loggers, cJSON_GetObjectItemCaseSensitive(reply, "train"),
                                      (uint64_t)num(plan, "iteration"), (uint32_t)num(plan, "epoch"),
                                      (uint32_t)num(plan, "workers"));
            }
            cJSON_Delete(plan);
            /* The gradients go back to the parameter server. */
            const void *grads = w->grads.data;
            if (w->grads_host) {
                grads = w->grads_host;
                if (tensor_copy_to_host(w->grads_host, &w->grads, err, sizeof err) != 0) {
                    say("cannot read the gradients: %s; exiting", err);
                    cJSON_Delete(reply);
                    return 2;
                }
            }
            int rc = msg_send_blob(w->fd, reply, grads, (size_t)w->grads.nbytes);
            cJSON_Delete(reply);
            if (rc != 0) {
                say("coordinator gone; exiting");
                return 2;
            }
            continue;
        }
        if (action && !strcmp(action, "exit")) {
            const char *reason = str(plan, "reason");
            say("%s", reason ? reason : "stopped by the coordinator");
            int code = (int)num(plan, "code");
            cJSON_Delete(plan);
            if (!finished)
                logger_set_end(w->loggers, LOOM_TRAIN_KILLED, "stopped");
            return code;
        }
        cJSON *reply = cJSON_CreateObject();
        cJSON_AddStringToObject(reply, "t", "reply");
        cJSON_AddNumberToObject(reply, "round", num(plan, "round"));
        e = NULL;
        if (pending && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(plan, "commit"))) {
            loom_step_info si;
            step_info(plan, &si);
            e = w->fw->apply(w->inst, &si);
        }
        pending = 0;
        const cJSON *join = cJSON_GetObjectItemCaseSensitive(plan, "join");
        if (!e && join) {
            e = join_and_pull(w, join, str(plan, "load"));
            if (e)
                cJSON_AddBoolToObject(reply, "pull_failed", 1);
        }
        uint64_t deadline = comm_deadline_after_ms((uint32_t)num(plan, "timeout_ms"));
        if (!e && action) {
            if (!strcmp(action, "step")) {
                e = do_step(w, plan, reply, 1, deadline);
                if (!e) {
                    pending = 1;
                    if (w->steps_done % w->log_every == 0)
                        logger_set_train_json(w->loggers,
                                              cJSON_GetObjectItemCaseSensitive(reply, "train"),
                                              (uint64_t)num(plan, "iteration"),
                                              (uint32_t)num(plan, "epoch"),
                                              (uint32_t)num(plan, "workers"));
                }
            } else if (!strcmp(action, "validate")) {
                e = do_validate(w, plan, reply);
            } else if (!strcmp(action, "checkpoint") || !strcmp(action, "finish")) {
                const char *path = str(plan, "path");
                if (path && (tensor_stage_pull(&w->stage, w->views, err, sizeof err) != 0 ||
                             checkpoint_save(path, w->stage.host, w->roles, w->stage.count,
                                             !strcmp(action, "finish"),
                                             cJSON_GetObjectItemCaseSensitive(plan, "meta"), err,
                                             sizeof err) != 0))
                    e = loom_err(LOOM_ERR_INTERNAL, "%s", err);
            }
        }
        cJSON_AddBoolToObject(reply, "ok", e == NULL);
        if (e) {
            cJSON_AddStringToObject(reply, "error", loom_err_message(e));
            say("round %d failed: %s", (int)num(plan, "round"), loom_err_message(e));
            loom_err_free(e);
        }
        int finishing = action && !strcmp(action, "finish") && !e;
        finished |= finishing;
        cJSON_Delete(plan);
        if (msg_send(w->fd, reply) != 0) {
            cJSON_Delete(reply);
            say("coordinator gone; exiting");
            return 2;
        }
        cJSON_Delete(reply);
        /* After finishing, wait for the coordinator's exit: leaving first
         * would look like a death before every reply is in. */
        if (finishing) {
            logger_set_end(w->loggers, LOOM_TRAIN_FINISHED, "finished");
            say("training finished");
        }
    }
}

int worker_main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    worker w;
    memset(&w, 0, sizeof w);
    w.fd = -1;
    if (parse_args(&w, argc, argv) != 0)
        return 2;
    int rc = setup(&w);
    if (rc == 0)
        rc = serve(&w);
    logger_set_close(w.loggers);
    comm_close(w.gpu_comm);
    comm_close(w.comm);
    tensor_stage_free(&w.stage);
    free(w.params_host);
    free(w.grads_host);
    if (w.inst)
        w.fw->destroy(w.inst);
    if (w.fd >= 0)
        close(w.fd);
    so_plugin_close(w.plugin);
    return rc;
}

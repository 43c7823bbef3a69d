/* exec/exec.c - see exec.h. One lock guards the running set and the store;
 * a supervisor thread reaps the workers of running execs. */
#include "exec/exec.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "exec/dlicmd.h"
#include "train/coordinator.h"
#include "train/edt_settings.h"
#include "plugin/host_api.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/spawn.h"
#include "util/tarball.h"

extern char **environ;

#define ARCHIVE_MAX_BYTES ((uint64_t)2 << 30)
#define STOP_GRACE_MS 5000
#define SUPERVISE_INTERVAL_US 50000

typedef struct worker {
    pid_t pid;
    int done;
    int status; /* waitpid status */
} worker;

typedef struct running_exec {
    struct running_exec *next;
    store_exec rec;
    char framework[LOOM_NAME_MAX];
    int nworkers;
    worker *workers;
    int stop_requested;
    int64_t kill_at_ms;
    char stop_reason[96];
    edt_coordinator *edt; /* trainer-style: the elastic trainer runs it */
} running_exec;

struct exec_service {
    store *st;
    registry *reg;
    char home[PATH_MAX];
    pthread_mutex_t lock;
    pthread_t thread;
    int thread_started;
    int stopping;
    running_exec *running;
    unsigned seq;
};

int exec_state_is_final(const char *s)
{
    return strcmp(s, "FINISHED") == 0 || strcmp(s, "KILLED") == 0 ||
           strcmp(s, "ERROR") == 0;
}

static void set_state(exec_service *es, store_exec *rec, const char *state,
                      const char *message)
{
    snprintf(rec->state, sizeof rec->state, "%s", state);
    if (message)
        snprintf(rec->message, sizeof rec->message, "%s", message);
    if (strcmp(state, "RUNNING") == 0 && !rec->started_at)
        rec->started_at = time_now_ms();
    if (exec_state_is_final(state))
        rec->ended_at = time_now_ms();
    if (store_exec_update(es->st, rec) != 0)
        log_error("exec %s: cannot record state %s", rec->id, state);
    log_info("exec %s: %s%s%s", rec->id, state, message ? ": " : "", message ? message : "");
}

static running_exec *find_running(exec_service *es, const char *id);

/* ---- the elastic trainer ------------------------------------------------ */

/* The coordinator reports its state changes here, from its own thread. While
 * the host shuts down they are not recorded: the exec stays RUNNING in the
 * store and resumes from its last checkpoint when the host starts again. */
static void trainer_state_changed(void *ctx, const char *exec_id, const char *state,
                                  const char *message)
{
    exec_service *es = ctx;
    pthread_mutex_lock(&es->lock);
    running_exec *r = es->stopping ? NULL : find_running(es, exec_id);
    if (r)
        set_state(es, &r->rec, state, message);
    pthread_mutex_unlock(&es->lock);
}

static void summary_path(const store_exec *rec, char *path, size_t len)
{
    snprintf(path, len, "%s/log/driver/training.json", rec->result_dir);
}

/* Reads the training spec and resolves the job's settings: everything that
 * can be wrong with a submission is found here, before anything is stored.
 * Returns 0, or an HTTP status with err. */
static int prepare_trainer(exec_service *es, const store_exec *rec, const registry_entry *fw,
                           const dlicmd *d, const char *data_dir, edt_job *job, char *err,
                           size_t errlen)
{
    memset(job, 0, sizeof *job);
    const char *spec_name = d->model_main ? d->model_main : EDT_SPEC_DEFAULT;
    snprintf(job->spec_path, sizeof job->spec_path, "%s/_submitted_code/%s", rec->result_dir,
             spec_name);
    char *text = fs_read_file(job->spec_path, 16u << 20, NULL);
    if (!text) {
        snprintf(err, errlen,
                 "%s: the model directory has no training spec \"%s\" (name another with --model-main)",
                 fw->name, spec_name);
        return 400;
    }
    const char *end = NULL;
    cJSON *spec = cJSON_ParseWithOpts(text, &end, 1);
    if (!cJSON_IsObject(spec)) {
        snprintf(err, errlen, "%s: malformed JSON near byte %ld (expected an object)", spec_name,
                 spec ? 0L : (long)(end ? end - text : 0));
        free(text);
        cJSON_Delete(spec);
        return 400;
    }
    free(text);
    int rc = edt_settings_resolve(spec, d->num_worker_given ? d->num_worker : 0, d->args,
                                  d->arg_count, d->msd_env, d->msd_env_count, &job->settings, err,
                                  errlen);
    cJSON_Delete(spec);
    if (rc != 0)
        return 400;
    if (d->sync_mode_async) {
        snprintf(err, errlen, "--syncMode ASYNC: the parameter-server mode is not available yet; use SYNC");
        edt_settings_free(&job->settings);
        return 501;
    }
    /* Without loggers named, the built-in jsonl one writes WMLA's
     * evaluation-metrics.txt for the driver and every worker. */
    registry_entry jsonl;
    if (!strcmp(job->settings.loggers_json, "[]") &&
        registry_acquire(es->reg, LOOM_KIND_LOGGER, "jsonl", &jsonl) == 0) {
        registry_release(es->reg, LOOM_KIND_LOGGER, "jsonl");
        free(job->settings.loggers_json);
        job->settings.loggers_json = strdup("[{\"name\": \"jsonl\", \"role\": \"both\"}]");
    }
    snprintf(job->exec_id, sizeof job->exec_id, "%s", rec->id);
    snprintf(job->result_dir, sizeof job->result_dir, "%s", rec->result_dir);
    snprintf(job->code_dir, sizeof job->code_dir, "%s/_submitted_code", rec->result_dir);
    snprintf(job->data_dir, sizeof job->data_dir, "%s", data_dir);
    snprintf(job->framework_path, sizeof job->framework_path, "%s", fw->path);
    ssize_t n = readlink("/proc/self/exe", job->loom_binary, sizeof job->loom_binary - 1);
    job->loom_binary[n > 0 ? n : 0] = 0;
    job->msd_env = d->msd_env;
    job->reg = es->reg;
    job->on_state = trainer_state_changed;
    job->ctx = es;
    return 0;
}

/* A finished trainer: keep its progress for `exec view`, then free it. */
static void trainer_ended(exec_service *es, running_exec *r)
{
    cJSON *summary = edt_describe(r->edt);
    char *text = summary ? cJSON_PrintUnformatted(summary) : NULL;
    char path[PATH_MAX + 32];
    summary_path(&r->rec, path, sizeof path);
    if (text)
        fs_write_file_atomic(path, text, strlen(text), 0644);
    free(text);
    cJSON_Delete(summary);
    edt_free(r->edt);
    r->edt = NULL;
    registry_release(es->reg, LOOM_KIND_FRAMEWORK, r->framework);
}

/* ---- restart reconciliation --------------------------------------------- */

typedef struct orphan_list {
    store_exec *items;
    int count, cap;
} orphan_list;

static void collect_unfinished(const store_exec *e, void *ctx)
{
    orphan_list *l = ctx;
    if (exec_state_is_final(e->state))
        return;
    if (l->count == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        store_exec *grown = realloc(l->items, (size_t)cap * sizeof *grown);
        if (!grown)
            return;
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->count++] = *e;
}

/* A training exec the host was running when it stopped: RECOVERING, then
 * the trainer resumes it from its newest checkpoint. Returns 1 when it
 * was taken over. */
static int resume_trainer(exec_service *es, store_exec *e)
{
    registry_entry fw;
    if (registry_acquire(es->reg, LOOM_KIND_FRAMEWORK, e->framework, &fw) != 0)
        return 0;
    const loom_framework_factory *f = fw.factory;
    dlicmd d;
    char err[512];
    edt_job job;
    running_exec *r = NULL;
    if (f->style != LOOM_FRAMEWORK_TRAINER || dlicmd_parse(e->args, &d, err, sizeof err) != 0) {
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, fw.name);
        return 0;
    }
    char data_dir[PATH_MAX];
    if (d.data_dir)
        snprintf(data_dir, sizeof data_dir, "%s", d.data_dir);
    else
        snprintf(data_dir, sizeof data_dir, "%s/data", es->home);
    int ok = prepare_trainer(es, e, &fw, &d, data_dir, &job, err, sizeof err) == 0 &&
             (r = calloc(1, sizeof *r)) != NULL;
    if (ok) {
        r->rec = *e;
        snprintf(r->framework, sizeof r->framework, "%s", fw.name);
        set_state(es, &r->rec, "RECOVERING", "the host restarted; resuming from the last checkpoint");
        job.resume = 1;
        pthread_mutex_lock(&es->lock);
        r->next = es->running;
        es->running = r;
        r->edt = edt_start(&job, err, sizeof err);
        if (!r->edt) {
            es->running = r->next;
            set_state(es, &r->rec, "ERROR", err);
            free(r);
            registry_release(es->reg, LOOM_KIND_FRAMEWORK, fw.name);
        }
        pthread_mutex_unlock(&es->lock);
    } else {
        set_state(es, e, "ERROR", err);
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, fw.name);
    }
    edt_settings_free(&job.settings);
    dlicmd_free(&d);
    return 1;
}

static void reconcile(exec_service *es)
{
    orphan_list l = {0};
    store_exec_each(es->st, collect_unfinished, &l);
    for (int i = 0; i < l.count; i++) {
        store_exec *e = &l.items[i];
        if (resume_trainer(es, e))
            continue;
        /* A launch-style program cannot be re-attached to: the previous host
         * was its parent. Stop what is left of it rather than leave it
         * running unsupervised. */
        if (e->pgid > 0)
            kill(-e->pgid, SIGKILL);
        char msg[160];
        snprintf(msg, sizeof msg,
                 "the host restarted while this exec was %s; its workers were stopped",
                 e->state);
        e->pgid = 0;
        set_state(es, e, "ERROR", msg);
    }
    free(l.items);
}

/* ---- supervision ------------------------------------------------------- */

static void finish(exec_service *es, running_exec *r)
{
    char msg[512] = "";
    const char *state = "FINISHED";
    for (int i = 0; i < r->nworkers; i++) {
        int st = r->workers[i].status;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            continue;
        state = "ERROR";
        if (WIFEXITED(st))
            snprintf(msg, sizeof msg, "worker %d exited with status %d (see log/worker-%d/stderr)",
                     i, WEXITSTATUS(st), i);
        else if (WIFSIGNALED(st))
            snprintf(msg, sizeof msg, "worker %d was killed by signal %d", i, WTERMSIG(st));
        break;
    }
    if (r->stop_requested) {
        state = "KILLED";
        snprintf(msg, sizeof msg, "%s", r->stop_reason[0] ? r->stop_reason : "stopped by request");
    }
    r->rec.pgid = 0;
    set_state(es, &r->rec, state, msg);
    registry_release(es->reg, LOOM_KIND_FRAMEWORK, r->framework);
}

static void supervise_once(exec_service *es)
{
    pthread_mutex_lock(&es->lock);
    int64_t now = time_mono_ms();
    for (running_exec **pp = &es->running; *pp;) {
        running_exec *r = *pp;
        if (r->edt) {
            if (edt_done(r->edt)) {
                trainer_ended(es, r);
                *pp = r->next;
                free(r);
            } else {
                pp = &r->next;
            }
            continue;
        }
        int alive = 0;
        for (int i = 0; i < r->nworkers; i++) {
            worker *w = &r->workers[i];
            if (w->done)
                continue;
            pid_t got = waitpid(w->pid, &w->status, WNOHANG);
            if (got == w->pid || (got < 0 && errno == ECHILD))
                w->done = 1;
            else
                alive++;
        }
        if (alive && r->stop_requested && now >= r->kill_at_ms)
            kill(-r->rec.pgid, SIGKILL);
        if (alive) {
            pp = &r->next;
            continue;
        }
        finish(es, r);
        *pp = r->next;
        free(r->workers);
        free(r);
    }
    pthread_mutex_unlock(&es->lock);
}

static void *supervisor(void *arg)
{
    exec_service *es = arg;
    for (;;) {
        pthread_mutex_lock(&es->lock);
        int stopping = es->stopping;
        pthread_mutex_unlock(&es->lock);
        if (stopping)
            break;
        supervise_once(es);
        usleep(SUPERVISE_INTERVAL_US);
    }
    return NULL;
}

exec_service *exec_service_create(store *st, registry *reg, const char *home)
{
    exec_service *es = calloc(1, sizeof *es);
    if (!es)
        return NULL;
    es->st = st;
    es->reg = reg;
    snprintf(es->home, sizeof es->home, "%s", home);
    pthread_mutex_init(&es->lock, NULL);
    reconcile(es);
    if (pthread_create(&es->thread, NULL, supervisor, es) == 0)
        es->thread_started = 1;
    return es;
}

void exec_service_destroy(exec_service *es)
{
    if (!es)
        return;
    int64_t deadline = time_mono_ms() + STOP_GRACE_MS;
    pthread_mutex_lock(&es->lock);
    es->stopping = 1;
    for (running_exec *r = es->running; r; r = r->next)
        if (r->edt)
            edt_stop(r->edt);
        else if (!r->stop_requested) {
            r->stop_requested = 1;
            r->kill_at_ms = deadline;
            snprintf(r->stop_reason, sizeof r->stop_reason,
                     "stopped because the host shut down");
            kill(-r->rec.pgid, SIGTERM);
        }
    pthread_mutex_unlock(&es->lock);
    if (es->thread_started)
        pthread_join(es->thread, NULL);
    /* Trainers stop at their next step; their execs stay RUNNING in the
     * store and resume when the host starts again. */
    for (running_exec **pp = &es->running; *pp;) {
        running_exec *r = *pp;
        if (!r->edt) {
            pp = &r->next;
            continue;
        }
        edt_free(r->edt);
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, r->framework);
        *pp = r->next;
        free(r);
    }
    /* The same grace a stop request gets, then SIGKILL (supervise_once). */
    while (es->running && time_mono_ms() < deadline + 2000) {
        supervise_once(es);
        if (es->running)
            usleep(SUPERVISE_INTERVAL_US);
    }
    while (es->running) { /* unkillable workers: record and let go */
        running_exec *r = es->running;
        es->running = r->next;
        set_state(es, &r->rec, "KILLED", "the host shut down; workers did not exit");
        free(r->workers);
        free(r);
    }
    pthread_mutex_destroy(&es->lock);
    free(es);
}

/* ---- submission -------------------------------------------------------- */

static int reserve_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* A relative path that stays inside its directory. */
static int path_is_contained(const char *p)
{
    if (!p || !*p || p[0] == '/')
        return 0;
    for (const char *s = p; s; s = strchr(s, '/')) {
        if (*s == '/')
            s++;
        if (s[0] == '.' && s[1] == '.' && (s[2] == '/' || s[2] == 0))
            return 0;
    }
    return 1;
}

typedef struct planned_worker {
    char **argv;
    char **env;
    char *cwd;
} planned_worker;

typedef struct plan {
    loom_launch_sink sink;
    planned_worker *workers;
    int count;
} plan;

static char **copy_strings(const char *const *src, uint32_t n)
{
    char **out = calloc((size_t)n + 1, sizeof *out);
    for (uint32_t i = 0; out && i < n; i++)
        out[i] = strdup(src[i] ? src[i] : "");
    return out;
}

static void free_strings(char **v)
{
    if (!v)
        return;
    for (char **p = v; *p; p++)
        free(*p);
    free(v);
}

static loom_error *plan_add_worker(const loom_launch_sink *sink,
                                   const char *const *argv, uint32_t argc,
                                   const char *const *env, uint32_t envc,
                                   const char *cwd)
{
    plan *p = (plan *)sink;
    if (argc == 0 || !argv || !argv[0] || !*argv[0])
        return loom_err(LOOM_ERR_INVALID_ARGUMENT, "worker %d: empty argv", p->count);
    for (uint32_t i = 0; i < envc; i++)
        if (!env[i] || !strchr(env[i], '=') || env[i][0] == '=')
            return loom_err(LOOM_ERR_INVALID_ARGUMENT,
                            "worker %d: environment entry \"%s\" is not KEY=VALUE",
                            p->count, env[i] ? env[i] : "(null)");
    planned_worker *grown = realloc(p->workers, (size_t)(p->count + 1) * sizeof *grown);
    if (!grown)
        return loom_err(LOOM_ERR_RESOURCE_EXHAUSTED, "out of memory");
    p->workers = grown;
    planned_worker *w = &p->workers[p->count++];
    w->argv = copy_strings(argv, argc);
    w->env = copy_strings(env, envc);
    w->cwd = cwd ? strdup(cwd) : NULL;
    return NULL;
}

static void plan_free(plan *p)
{
    for (int i = 0; i < p->count; i++) {
        free_strings(p->workers[i].argv);
        free_strings(p->workers[i].env);
        free(p->workers[i].cwd);
    }
    free(p->workers);
}

/* The worker's environment: the host's, then the job's variables, then the
 * --msd-env pairs, then the adapter's; later entries win. */
static char **build_env(const char *const *layers[], const int counts[], int nlayers)
{
    size_t total = 0;
    for (char **e = environ; *e; e++)
        total++;
    for (int l = 0; l < nlayers; l++)
        total += (size_t)counts[l];
    char **out = calloc(total + 1, sizeof *out);
    if (!out)
        return NULL;
    size_t n = 0;
    for (char **e = environ; *e; e++)
        out[n++] = strdup(*e);
    for (int l = 0; l < nlayers; l++)
        for (int i = 0; i < counts[l]; i++) {
            const char *kv = layers[l][i];
            size_t klen = (size_t)(strchr(kv, '=') - kv);
            size_t j = 0;
            for (; j < n; j++)
                if (strncmp(out[j], kv, klen) == 0 && out[j][klen] == '=')
                    break;
            if (j < n) {
                free(out[j]);
                out[j] = strdup(kv);
            } else {
                out[n++] = strdup(kv);
            }
        }
    return out;
}

static void remove_exec_dir(const char *dir)
{
    if (fs_rm_rf(dir) != 0)
        log_warn("cannot remove %s: %s", dir, strerror(errno));
}

int exec_submit(exec_service *es, const exec_submission *sub, char *id,
                size_t idlen, char *err, size_t errlen)
{
    dlicmd d;
    if (dlicmd_parse(sub->args ? sub->args : "", &d, err, errlen) != 0)
        return 400;
    int status = 500;
    registry_entry fw;
    int pinned = 0;
    running_exec *r = NULL;
    plan p = {.sink = {.struct_size = sizeof(loom_launch_sink), .add_worker = plan_add_worker}};
    p.sink.host_data = &p;
    char dir[PATH_MAX] = "";

    if (registry_acquire(es->reg, LOOM_KIND_FRAMEWORK, d.exec_start, &fw) != 0) {
        snprintf(err, errlen, "--exec-start: no framework named \"%s\" (see loom framework list)",
                 d.exec_start);
        status = 404;
        goto out;
    }
    pinned = 1;
    const loom_framework_factory *factory = fw.factory;
    if (strcmp(d.device_type, "gpu") == 0 && !fs_is_dir("/proc/driver/nvidia/gpus")) {
        snprintf(err, errlen, "--workerDeviceType gpu: this host has no GPU");
        status = 400;
        goto out;
    }
    if (d.model_main && !path_is_contained(d.model_main)) {
        snprintf(err, errlen,
                 "--model-main \"%s\": expected a path relative to the model directory, without \"..\"",
                 d.model_main);
        status = 400;
        goto out;
    }
    if (d.model_dir && !sub->archive) {
        snprintf(err, errlen,
                 "--model-dir given but the request carries no model directory (a tar in the 'file' part)");
        status = 400;
        goto out;
    }

    r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    store_exec *rec = &r->rec;
    pthread_mutex_lock(&es->lock);
    snprintf(rec->id, sizeof rec->id, "%s-%lld-%u", sub->user, (long long)time_now_ms(), ++es->seq);
    pthread_mutex_unlock(&es->lock);
    snprintf(rec->user, sizeof rec->user, "%s", sub->user);
    snprintf(rec->framework, sizeof rec->framework, "%s", fw.name);
    snprintf(r->framework, sizeof r->framework, "%s", fw.name);
    snprintf(rec->args, sizeof rec->args, "%s", sub->args);
    rec->num_workers = d.num_worker;
    rec->created_at = time_now_ms();
    snprintf(dir, sizeof dir, "%s/execs/%s", es->home, rec->id);
    snprintf(rec->result_dir, sizeof rec->result_dir, "%s", dir);

    char code_dir[PATH_MAX], log_dir[PATH_MAX], data_dir[PATH_MAX];
    snprintf(code_dir, sizeof code_dir, "%s/_submitted_code", dir);
    snprintf(log_dir, sizeof log_dir, "%s/log", dir);
    if (d.data_dir)
        snprintf(data_dir, sizeof data_dir, "%s", d.data_dir);
    else
        snprintf(data_dir, sizeof data_dir, "%s/data", es->home);
    if (fs_mkdir_p(code_dir) != 0 || fs_mkdir_p(log_dir) != 0 ||
        fs_mkdir_p(data_dir) != 0) {
        snprintf(err, errlen, "cannot create the exec's directories under %s: %s", dir,
                 strerror(errno));
        goto out;
    }
    if (sub->archive &&
        tarball_unpack(sub->archive, sub->archive_len, code_dir, ARCHIVE_MAX_BYTES, err,
                       errlen) != 0) {
        status = 400;
        goto out;
    }
    if (d.model_main) {
        char main_path[PATH_MAX];
        snprintf(main_path, sizeof main_path, "%s/%s", code_dir, d.model_main);
        if (!fs_is_file(main_path)) {
            snprintf(err, errlen, "--model-main \"%s\": no such file in the model directory",
                     d.model_main);
            status = 400;
            goto out;
        }
    }

    if (factory->style == LOOM_FRAMEWORK_TRAINER) {
        edt_job job;
        status = prepare_trainer(es, rec, &fw, &d, data_dir, &job, err, errlen);
        if (status)
            goto out;
        rec->num_workers = (int)job.settings.engines;
        snprintf(rec->state, sizeof rec->state, "SUBMITTED");
        if (store_exec_insert(es->st, rec, err, errlen) != 0) {
            edt_settings_free(&job.settings);
            status = 500;
            goto out;
        }
        set_state(es, rec, "LAUNCHING", NULL);
        pthread_mutex_lock(&es->lock);
        r->next = es->running;
        es->running = r;
        char why[512];
        r->edt = edt_start(&job, why, sizeof why);
        if (!r->edt) {
            es->running = r->next;
            set_state(es, rec, "ERROR", why);
        }
        pthread_mutex_unlock(&es->lock);
        edt_settings_free(&job.settings);
        snprintf(id, idlen, "%s", rec->id);
        if (r->edt)
            pinned = 0; /* released when the trainer ends */
        else
            free(r);
        r = NULL;
        status = 0;
        goto done;
    }

    /* Ask the adapter for the processes before anything is stored: a plan
     * it refuses is the submitter's error (400), not a failed exec. */
    loom_launch_request req = {
        .struct_size = sizeof req,
        .num_workers = (uint32_t)d.num_worker,
        .worker_device_num = (uint32_t)d.worker_device_num,
        .master_port = (uint32_t)reserve_port(),
        .exec_id = rec->id,
        .code_dir = code_dir,
        .model_main = d.model_main,
        .data_dir = data_dir,
        .result_dir = dir,
        .log_dir = log_dir,
        .device_type = d.device_type,
        .master_addr = "127.0.0.1",
        .args = (const char *const *)d.args,
        .arg_count = (uint32_t)d.arg_count,
        .msd_env_count = (uint32_t)d.msd_env_count,
        .msd_env = (const char *const *)d.msd_env,
    };
    loom_error *e = factory->plan_launch(factory, &req, &p.sink);
    if (!e && p.count == 0)
        e = loom_err(LOOM_ERR_INVALID_ARGUMENT, "the framework planned no worker");
    if (e) {
        snprintf(err, errlen, "framework %s: %s", fw.name, loom_err_message(e));
        status = loom_err_code(e) == LOOM_ERR_INVALID_ARGUMENT ||
                         loom_err_code(e) == LOOM_ERR_NOT_FOUND
                     ? 400
                     : 500;
        loom_err_free(e);
        goto out;
    }
    rec->num_workers = p.count;
    snprintf(rec->state, sizeof rec->state, "SUBMITTED");
    if (store_exec_insert(es->st, rec, err, errlen) != 0)
        goto out;

    /* From here on the exec exists: failures are its state, not the reply. */
    r->workers = calloc((size_t)p.count, sizeof *r->workers);
    r->nworkers = p.count;
    set_state(es, rec, "LAUNCHING", NULL);
    char job_env_store[6][PATH_MAX + 32];
    snprintf(job_env_store[0], sizeof job_env_store[0], "DATA_DIR=%s", data_dir);
    snprintf(job_env_store[1], sizeof job_env_store[1], "RESULT_DIR=%s", dir);
    snprintf(job_env_store[2], sizeof job_env_store[2], "LOG_DIR=%s", log_dir);
    snprintf(job_env_store[3], sizeof job_env_store[3], "DLI_EXECID=%s", rec->id);
    snprintf(job_env_store[4], sizeof job_env_store[4], "FABRIC_HOME=%s", es->home);
    const char *job_env[7] = {job_env_store[0], job_env_store[1], job_env_store[2],
                              job_env_store[3], job_env_store[4], NULL, NULL};
    pthread_mutex_lock(&es->lock);
    char launch_err[512] = "";
    for (int i = 0; i < p.count && !launch_err[0]; i++) {
        char wdir[PATH_MAX], out_path[PATH_MAX + 16], err_path[PATH_MAX + 16];
        snprintf(wdir, sizeof wdir, "%s/worker-%d", log_dir, i);
        fs_mkdir_p(wdir);
        snprintf(out_path, sizeof out_path, "%s/stdout", wdir);
        snprintf(err_path, sizeof err_path, "%s/stderr", wdir);
        /* CPU workers see no GPU; GPU placement comes from the scheduler. */
        snprintf(job_env_store[5], sizeof job_env_store[5], "CUDA_VISIBLE_DEVICES=");
        job_env[5] = job_env_store[5];
        int wenv_count = 0;
        while (p.workers[i].env[wenv_count])
            wenv_count++;
        const char *const *layers[3] = {job_env, (const char *const *)d.msd_env,
                                        (const char *const *)p.workers[i].env};
        int counts[3] = {6, d.msd_env_count, wenv_count};
        char **envp = build_env(layers, counts, 3);
        spawn_spec spec = {
            .argv = p.workers[i].argv,
            .envp = envp,
            .cwd = p.workers[i].cwd ? p.workers[i].cwd : code_dir,
            .stdout_path = out_path,
            .stderr_path = err_path,
            .pgid = rec->pgid, /* the first worker leads the group */
        };
        pid_t pid = envp ? spawn_process(&spec, launch_err, sizeof launch_err) : -1;
        free_strings(envp);
        if (pid < 0) {
            if (!launch_err[0])
                snprintf(launch_err, sizeof launch_err, "out of memory");
            break;
        }
        if (rec->pgid == 0)
            rec->pgid = pid;
        r->workers[i].pid = pid;
    }
    if (launch_err[0]) {
        /* Stop the workers already started; the exec records why. */
        if (rec->pgid > 0)
            kill(-rec->pgid, SIGKILL);
        for (int i = 0; i < p.count; i++)
            if (r->workers[i].pid > 0)
                waitpid(r->workers[i].pid, NULL, 0);
        rec->pgid = 0;
        set_state(es, rec, "ERROR", launch_err);
        pthread_mutex_unlock(&es->lock);
        free(r->workers);
        free(r);
        r = NULL;
        snprintf(id, idlen, "%s", rec->id);
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, fw.name);
        pinned = 0;
        status = 0;
        goto done;
    }
    set_state(es, rec, "RUNNING", NULL);
    r->next = es->running;
    es->running = r;
    pthread_mutex_unlock(&es->lock);
    snprintf(id, idlen, "%s", rec->id);
    r = NULL;
    pinned = 0; /* released when the exec ends */
    status = 0;
    goto done;
out:
    if (dir[0])
        remove_exec_dir(dir);
done:
    if (pinned)
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, fw.name);
    if (r) {
        free(r->workers);
        free(r);
    }
    plan_free(&p);
    dlicmd_free(&d);
    return status;
}

static running_exec *find_running(exec_service *es, const char *id)
{
    for (running_exec *r = es->running; r; r = r->next)
        if (strcmp(r->rec.id, id) == 0)
            return r;
    return NULL;
}

int exec_stop(exec_service *es, const char *id, char *err, size_t errlen)
{
    pthread_mutex_lock(&es->lock);
    int rc = 0;
    running_exec *r = find_running(es, id);
    store_exec rec;
    if (r && r->edt) {
        r->stop_requested = 1;
        edt_stop(r->edt);
    } else if (r) {
        if (!r->stop_requested) {
            r->stop_requested = 1;
            r->kill_at_ms = time_mono_ms() + STOP_GRACE_MS;
            kill(-r->rec.pgid, SIGTERM);
        }
    } else if (store_exec_get(es->st, id, &rec) != 0) {
        snprintf(err, errlen, "no exec \"%s\"", id);
        rc = 404;
    } else {
        snprintf(err, errlen, "exec \"%s\" is already %s", id, rec.state);
        rc = 409;
    }
    pthread_mutex_unlock(&es->lock);
    return rc;
}

int exec_resize(exec_service *es, const char *id, int workers, char *err, size_t errlen)
{
    pthread_mutex_lock(&es->lock);
    int rc = 0;
    running_exec *r = find_running(es, id);
    store_exec rec;
    if (r && r->edt) {
        if (edt_resize(r->edt, workers > 0 ? (uint32_t)workers : 0, err, errlen) != 0)
            rc = 400;
    } else if (r) {
        snprintf(err, errlen, "exec \"%s\" runs a launch-style framework (%s); only elastic training jobs resize",
                 id, r->framework);
        rc = 409;
    } else if (store_exec_get(es->st, id, &rec) != 0) {
        snprintf(err, errlen, "no exec \"%s\"", id);
        rc = 404;
    } else {
        snprintf(err, errlen, "exec \"%s\" is %s", id, rec.state);
        rc = 409;
    }
    pthread_mutex_unlock(&es->lock);
    return rc;
}

int exec_delete(exec_service *es, const char *id, char *err, size_t errlen)
{
    pthread_mutex_lock(&es->lock);
    int rc = 0;
    store_exec rec;
    if (store_exec_get(es->st, id, &rec) != 0) {
        snprintf(err, errlen, "no exec \"%s\"", id);
        rc = 404;
    } else if (find_running(es, id) || !exec_state_is_final(rec.state)) {
        snprintf(err, errlen, "exec \"%s\" is %s; stop it first", id, rec.state);
        rc = 409;
    } else if (store_exec_delete(es->st, id) != 0) {
        snprintf(err, errlen, "cannot delete exec \"%s\" from the store", id);
        rc = 500;
    } else {
        remove_exec_dir(rec.result_dir);
    }
    pthread_mutex_unlock(&es->lock);
    return rc;
}

static cJSON *describe(const store_exec *e, const running_exec *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", e->id);
    cJSON_AddStringToObject(o, "creator", e->user);
    cJSON_AddStringToObject(o, "framework", e->framework);
    cJSON_AddStringToObject(o, "args", e->args);
    cJSON_AddStringToObject(o, "state", e->state);
    cJSON_AddStringToObject(o, "message", e->message);
    cJSON_AddNumberToObject(o, "numWorker", e->num_workers);
    cJSON_AddStringToObject(o, "resultDir", e->result_dir);
    cJSON_AddNumberToObject(o, "createTime", (double)e->created_at);
    cJSON_AddNumberToObject(o, "startTime", (double)e->started_at);
    cJSON_AddNumberToObject(o, "endTime", (double)e->ended_at);
    if (r && r->edt) {
        cJSON_AddItemToObject(o, "training", edt_describe(r->edt));
    } else if (!r) {
        char path[PATH_MAX + 32];
        summary_path(e, path, sizeof path);
        char *text = fs_read_file(path, 16u << 20, NULL);
        cJSON *summary = text ? cJSON_Parse(text) : NULL;
        free(text);
        if (summary)
            cJSON_AddItemToObject(o, "training", summary);
    }
    if (r && !r->edt) {
        cJSON *ws = cJSON_AddArrayToObject(o, "workers");
        for (int i = 0; i < r->nworkers; i++) {
            cJSON *w = cJSON_CreateObject();
            cJSON_AddNumberToObject(w, "rank", i);
            cJSON_AddNumberToObject(w, "pid", r->workers[i].pid);
            cJSON_AddStringToObject(w, "state", r->workers[i].done ? "EXITED" : "RUNNING");
            cJSON_AddItemToArray(ws, w);
        }
    }
    return o;
}

cJSON *exec_describe(exec_service *es, const char *id)
{
    pthread_mutex_lock(&es->lock);
    cJSON *o = NULL;
    running_exec *r = find_running(es, id);
    store_exec rec;
    if (r)
        o = describe(&r->rec, r);
    else if (store_exec_get(es->st, id, &rec) == 0)
        o = describe(&rec, NULL);
    pthread_mutex_unlock(&es->lock);
    return o;
}

typedef struct list_ctx {
    exec_service *es;
    cJSON *array;
} list_ctx;

static void add_to_list(const store_exec *e, void *ctx)
{
    list_ctx *l = ctx;
    cJSON_AddItemToArray(l->array, describe(e, find_running(l->es, e->id)));
}

cJSON *exec_list(exec_service *es)
{
    list_ctx l = {es, cJSON_CreateArray()};
    pthread_mutex_lock(&es->lock);
    store_exec_each(es->st, add_to_list, &l);
    pthread_mutex_unlock(&es->lock);
    return l.array;
}

int exec_log_path(exec_service *es, const char *id, int worker, const char *stream,
                  char *path, size_t pathlen, char *err, size_t errlen)
{
    store_exec rec;
    pthread_mutex_lock(&es->lock);
    int found = store_exec_get(es->st, id, &rec) == 0;
    pthread_mutex_unlock(&es->lock);
    if (!found) {
        snprintf(err, errlen, "no exec \"%s\"", id);
        return 404;
    }
    if (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0) {
        snprintf(err, errlen, "stream: expected stdout or stderr, got \"%s\"", stream);
        return 400;
    }
    if (worker < 0 || worker >= rec.num_workers) {
        snprintf(err, errlen, "worker: exec \"%s\" has workers 0 to %d", id, rec.num_workers - 1);
        return 400;
    }
    snprintf(path, pathlen, "%s/log/worker-%d/%s", rec.result_dir, worker, stream);
    return 0;
}

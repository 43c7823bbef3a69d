/* exec/exec.c - see exec.h. One lock guards the running list and the store.
 * An exec is submitted (checked, stored), waits for devices (PENDING) until
 * the scheduler grants them, runs (launch-style processes, or the elastic
 * trainer that the scheduler also grows and shrinks), and ends. A
 * supervisor thread reaps processes, notices ended trainers and runs the
 * scheduler. */
#include "exec/exec.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/tarball.h"

#define ARCHIVE_MAX_BYTES ((uint64_t)2 << 30)
#define STOP_GRACE_MS 5000
#define SUPERVISE_INTERVAL_US 50000
#define MAX_DECISIONS 4096
#define MAX_DEVICES 4096

int exec_state_is_final(const char *s)
{
    return strcmp(s, "FINISHED") == 0 || strcmp(s, "KILLED") == 0 || strcmp(s, "ERROR") == 0;
}

void exec_set_state(exec_service *es, store_exec *rec, const char *state, const char *message)
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

running_exec *exec_find_running(exec_service *es, const char *id)
{
    for (running_exec *r = es->running; r; r = r->next)
        if (strcmp(r->rec.id, id) == 0)
            return r;
    return NULL;
}

void exec_free_running(running_exec *r)
{
    if (!r)
        return;
    launch_plan_free(&r->plan);
    strings_free(r->msd_env);
    free(r->workers);
    if (r->job) {
        strings_free(r->job->msd_env);
        edt_settings_free(&r->job->settings);
        free(r->job);
    }
    free(r);
}

static void unlink_running(exec_service *es, running_exec *r)
{
    for (running_exec **pp = &es->running; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            return;
        }
}

/* Whether `owner` (NULL: anyone) may see an exec of `user`. */
static int visible(const char *owner, const char *user)
{
    return owner == NULL || strcmp(owner, user) == 0;
}

/* Finds an exec `owner` may see: a running one in *r, else its stored
 * record in *rec. Returns 0 when there is none (for that owner). Call with
 * es->lock. */
static int lookup(exec_service *es, const char *owner, const char *id, running_exec **r,
                  store_exec *rec)
{
    *r = exec_find_running(es, id);
    if (*r)
        return visible(owner, (*r)->rec.user);
    return store_exec_get(es->st, id, rec) == 0 && visible(owner, rec->user);
}

/* ---- scheduling --------------------------------------------------------- */

/* Runs the scheduler and carries out its decisions: pending execs start on
 * the devices granted, running trainers grow or shrink. Call with es->lock. */
static void schedule_locked(exec_service *es)
{
    static sched_action actions[MAX_DECISIONS];
    size_t n = sched_service_decide(es->sched, actions, MAX_DECISIONS);
    for (size_t i = 0; i < n && i < MAX_DECISIONS; i++) {
        running_exec *r = exec_find_running(es, actions[i].job_id);
        if (!r || actions[i].new_count <= 0)
            continue;
        char err[512] = "";
        /* The devices granted, by their own index (CUDA ordinal, CPU slot). */
        static int32_t slots[MAX_DEVICES], index[MAX_DEVICES];
        int32_t kind = LOOM_DEVICE_CPU;
        int nd = sched_service_job_devices(es->sched, r->rec.id, slots, MAX_DEVICES, index, &kind);
        nd = nd < 0 ? 0 : nd > MAX_DEVICES ? MAX_DEVICES : nd;
        if (r->pending) {
            int rc;
            if (r->job)
                rc = trainer_start(es, r, index, nd, kind, err, sizeof err);
            else
                rc = launch_start(es, r, index, nd, err, sizeof err);
            r->pending = 0;
            if (rc != 0) {
                /* Ends at the next supervision with its reason. */
                exec_set_state(es, &r->rec, "ERROR", err);
                r->stop_requested = 1;
                continue;
            }
            if (!r->edt)
                exec_set_state(es, &r->rec, "RUNNING", NULL);
        } else if (r->edt && actions[i].new_count != actions[i].old_count) {
            if (loom_err_take(edt_set_devices(r->edt, index, (uint32_t)nd), err, sizeof err))
                log_warn("exec %s: resize to %d refused: %s", r->rec.id, actions[i].new_count, err);
            else
                log_info("exec %s: scheduler moves it from %d to %d device(s)", r->rec.id,
                         actions[i].old_count, actions[i].new_count);
        }
    }
}

/* Hands an exec to the scheduler and to the running list, pending until
 * the scheduler grants its devices. Call with es->lock. 0, or an HTTP
 * status with err. */
static int enqueue_locked(exec_service *es, running_exec *r, const dlicmd *d, char *err,
                          size_t errlen)
{
    char plan[128];
    if (d->consumer)
        snprintf(plan, sizeof plan, "%s", d->consumer);
    else
        snprintf(plan, sizeof plan, "/%s", r->rec.user);
    sched_job_spec spec = {
        .id = r->rec.id,
        .plan = plan,
        .kind = SCHED_JOB_TRAINING,
        .elastic = r->elastic,
        .min_devices = 1,
        .max_devices = r->devices,
        .priority = d->priority,
        .wait_if_too_large = d->queue_if_too_large,
    };
    int status = sched_service_submit(es->sched, &spec, err, errlen);
    if (status == 409 && !r->elastic && strstr(err, "inventory")) {
        snprintf(err, errlen,
                 "this exec needs %d device(s) and the host has %zu: it could never start "
                 "(add --queue-if-too-large true to queue it until devices are added)",
                 r->devices, sched_service_device_count(es->sched));
    }
    if (status)
        return status;
    r->pending = 1;
    r->next = es->running;
    es->running = r;
    return 0;
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

static void data_dir_of(exec_service *es, const dlicmd *d, char *out, size_t len)
{
    if (d->data_dir)
        snprintf(out, len, "%s", d->data_dir);
    else
        snprintf(out, len, "%s/data", es->home);
}

/* A training exec the host was running when it stopped: RECOVERING, back
 * to the scheduler, and the trainer resumes it from its newest checkpoint.
 * Returns 1 when it was taken over. */
static int resume_trainer(exec_service *es, store_exec *e)
{
    registry_entry fw;
    if (registry_acquire(es->reg, LOOM_KIND_FRAMEWORK, e->framework, &fw) != 0)
        return 0;
    const loom_framework_factory *f = fw.factory;
    dlicmd d;
    char err[512];
    if (f->style != LOOM_FRAMEWORK_TRAINER || dlicmd_parse(e->args, &d, err, sizeof err) != 0) {
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, fw.name);
        return 0;
    }
    char data_dir[PATH_MAX];
    data_dir_of(es, &d, data_dir, sizeof data_dir);
    running_exec *r = calloc(1, sizeof *r);
    edt_job *job = calloc(1, sizeof *job);
    int status = r && job ? trainer_prepare(es, e, &fw, &d, data_dir, job, err, sizeof err) : 500;
    if (status == 0) {
        r->rec = *e;
        r->job = job;
        r->elastic = 1;
        r->devices = (int)job->settings.engines;
        job->resume = 1;
        snprintf(r->framework, sizeof r->framework, "%s", fw.name);
        exec_set_state(es, &r->rec, "RECOVERING",
                       "the host restarted; resuming from the last checkpoint");
        pthread_mutex_lock(&es->lock);
        status = enqueue_locked(es, r, &d, err, sizeof err);
        if (status == 0)
            schedule_locked(es);
        pthread_mutex_unlock(&es->lock);
        if (status == 0)
            r = NULL;
        else
            job = NULL; /* freed with r */
    }
    if (status) {
        exec_set_state(es, e, "ERROR", err);
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, fw.name);
        if (r && r->job != job)
            free(job);
        exec_free_running(r);
    }
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
                 "the host restarted while this exec was %s; its workers were stopped", e->state);
        e->pgid = 0;
        exec_set_state(es, e, "ERROR", msg);
    }
    free(l.items);
}

/* ---- supervision -------------------------------------------------------- */

/* A launch-style exec whose workers all ended. */
static void finish_launch(exec_service *es, running_exec *r)
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
    exec_set_state(es, &r->rec, state, msg);
}

/* Returns 1 when the exec has ended and was removed. */
static int supervise_exec(exec_service *es, running_exec *r, int64_t now)
{
    if (r->pending)
        return 0;
    if (r->edt) {
        if (!edt_done(r->edt))
            return 0;
        trainer_ended(es, r);
    } else if (r->nworkers == 0) {
        /* Failed to start: its state says why. */
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, r->framework);
    } else {
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
        if (alive)
            return 0;
        finish_launch(es, r);
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, r->framework);
    }
    sched_service_end(es->sched, r->rec.id);
    unlink_running(es, r);
    exec_free_running(r);
    return 1;
}

static void supervise_once(exec_service *es)
{
    pthread_mutex_lock(&es->lock);
    int64_t now = time_mono_ms();
    for (running_exec *r = es->running, *next; r; r = next) {
        next = r->next;
        supervise_exec(es, r, now);
    }
    /* Freed devices, expired hysteresis: the scheduler decides again. */
    if (!es->stopping)
        schedule_locked(es);
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

exec_service *exec_service_create(store *st, registry *reg, sched_service *sched,
                                  const char *home)
{
    exec_service *es = calloc(1, sizeof *es);
    if (!es)
        return NULL;
    es->st = st;
    es->reg = reg;
    es->sched = sched;
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
    for (running_exec *r = es->running; r; r = r->next) {
        if (r->edt) {
            edt_stop(r->edt);
        } else if (!r->pending && r->nworkers && !r->stop_requested) {
            r->stop_requested = 1;
            r->kill_at_ms = deadline;
            snprintf(r->stop_reason, sizeof r->stop_reason, "stopped because the host shut down");
            kill(-r->rec.pgid, SIGTERM);
        }
    }
    pthread_mutex_unlock(&es->lock);
    if (es->thread_started)
        pthread_join(es->thread, NULL);
    /* Trainers stop at their next step, and pending execs are left as they
     * are: both stay in the store unfinished and are taken up again when
     * the host starts. Their state changes are not recorded now. */
    for (running_exec *r = es->running, *next; r; r = next) {
        next = r->next;
        if (r->edt) {
            edt_free(r->edt);
            registry_release(es->reg, LOOM_KIND_FRAMEWORK, r->framework);
        } else if (r->pending) {
            registry_release(es->reg, LOOM_KIND_FRAMEWORK, r->framework);
        } else {
            continue;
        }
        unlink_running(es, r);
        r->edt = NULL;
        exec_free_running(r);
    }
    /* Launch-style workers get the stop grace, then SIGKILL. */
    while (es->running && time_mono_ms() < deadline + 2000) {
        pthread_mutex_lock(&es->lock);
        for (running_exec *r = es->running, *next; r; r = next) {
            next = r->next;
            supervise_exec(es, r, time_mono_ms());
        }
        pthread_mutex_unlock(&es->lock);
        if (es->running)
            usleep(SUPERVISE_INTERVAL_US);
    }
    while (es->running) { /* unkillable workers: record and let go */
        running_exec *r = es->running;
        es->running = r->next;
        exec_set_state(es, &r->rec, "KILLED", "the host shut down; workers did not exit");
        exec_free_running(r);
    }
    pthread_mutex_destroy(&es->lock);
    free(es);
}

/* ---- submission --------------------------------------------------------- */

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

static void remove_exec_dir(const char *dir)
{
    if (fs_rm_rf(dir) != 0)
        log_warn("cannot remove %s: %s", dir, strerror(errno));
}

/* Checks the submission against the framework and prepares how it will
 * run, without storing anything. 0, or an HTTP status with err. */
static int prepare(exec_service *es, const exec_submission *sub, const dlicmd *d,
                   const registry_entry *fw, running_exec *r, char *err, size_t errlen)
{
    const loom_framework_factory *factory = fw->factory;
    store_exec *rec = &r->rec;
    if (strcmp(d->device_type, "gpu") == 0 && sched_cuda_device_count() == 0) {
        snprintf(err, errlen, "--workerDeviceType gpu: this host has no GPU");
        return 400;
    }
    if (d->model_main && !path_is_contained(d->model_main)) {
        snprintf(err, errlen,
                 "--model-main \"%s\": expected a path relative to the model directory, without \"..\"",
                 d->model_main);
        return 400;
    }
    if (d->model_dir && !sub->archive) {
        snprintf(err, errlen,
                 "--model-dir given but the request carries no model directory (a tar in the 'file' part)");
        return 400;
    }
    snprintf(r->code_dir, sizeof r->code_dir, "%s/_submitted_code", rec->result_dir);
    snprintf(r->log_dir, sizeof r->log_dir, "%s/log", rec->result_dir);
    data_dir_of(es, d, r->data_dir, sizeof r->data_dir);
    if (fs_mkdir_p(r->code_dir) != 0 || fs_mkdir_p(r->log_dir) != 0 || fs_mkdir_p(r->data_dir) != 0) {
        snprintf(err, errlen, "cannot create the exec's directories under %s: %s",
                 rec->result_dir, strerror(errno));
        return 500;
    }
    if (sub->archive && tarball_unpack(sub->archive, sub->archive_len, r->code_dir,
                                       ARCHIVE_MAX_BYTES, err, errlen) != 0)
        return 400;
    if (d->model_main) {
        char main_path[PATH_MAX * 2];
        snprintf(main_path, sizeof main_path, "%s/%s", r->code_dir, d->model_main);
        if (!fs_is_file(main_path)) {
            snprintf(err, errlen, "--model-main \"%s\": no such file in the model directory",
                     d->model_main);
            return 400;
        }
    }
    if (factory->style == LOOM_FRAMEWORK_TRAINER) {
        r->job = calloc(1, sizeof *r->job);
        if (!r->job) {
            snprintf(err, errlen, "out of memory");
            return 500;
        }
        int status = trainer_prepare(es, rec, fw, d, r->data_dir, r->job, err, errlen);
        if (status) {
            free(r->job);
            r->job = NULL;
            return status;
        }
        r->elastic = 1;
        r->devices = (int)r->job->settings.engines;
        rec->num_workers = r->devices;
        return 0;
    }
    /* Ask the adapter for the processes before anything is stored: a plan
     * it refuses is the submitter's error (400), not a failed exec. */
    loom_launch_request req = {
        .struct_size = sizeof req,
        .num_workers = (uint32_t)d->num_worker,
        .worker_device_num = (uint32_t)d->worker_device_num,
        .master_port = (uint32_t)reserve_port(),
        .exec_id = rec->id,
        .code_dir = r->code_dir,
        .model_main = d->model_main,
        .data_dir = r->data_dir,
        .result_dir = rec->result_dir,
        .log_dir = r->log_dir,
        .device_type = d->device_type,
        .master_addr = "127.0.0.1",
        .args = (const char *const *)d->args,
        .arg_count = (uint32_t)d->arg_count,
        .msd_env_count = (uint32_t)d->msd_env_count,
        .msd_env = (const char *const *)d->msd_env,
    };
    launch_plan_init(&r->plan);
    loom_error *e = factory->plan_launch(factory, &req, &r->plan.sink);
    if (!e && r->plan.count == 0)
        e = loom_err(LOOM_ERR_INVALID_ARGUMENT, "the framework planned no worker");
    if (e) {
        snprintf(err, errlen, "framework %s: %s", fw->name, loom_err_message(e));
        int code = loom_err_code(e);
        loom_err_free(e);
        return code == LOOM_ERR_INVALID_ARGUMENT || code == LOOM_ERR_NOT_FOUND ? 400 : 500;
    }
    r->msd_env = strings_copy((const char *const *)d->msd_env, (uint32_t)d->msd_env_count);
    r->worker_device_num = d->worker_device_num;
    r->gpu = strcmp(d->device_type, "gpu") == 0;
    rec->num_workers = r->plan.count;
    r->devices = r->plan.count * d->worker_device_num;
    return 0;
}

int exec_submit(exec_service *es, const exec_submission *sub, char *id, size_t idlen, char *err,
                size_t errlen)
{
    dlicmd d;
    if (dlicmd_parse(sub->args ? sub->args : "", &d, err, errlen) != 0)
        return 400;
    registry_entry fw;
    if (registry_acquire(es->reg, LOOM_KIND_FRAMEWORK, d.exec_start, &fw) != 0) {
        snprintf(err, errlen, "--exec-start: no framework named \"%s\" (see loom framework list)",
                 d.exec_start);
        dlicmd_free(&d);
        return 404;
    }
    running_exec *r = calloc(1, sizeof *r);
    if (!r) {
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, fw.name);
        dlicmd_free(&d);
        snprintf(err, errlen, "out of memory");
        return 500;
    }
    store_exec *rec = &r->rec;
    pthread_mutex_lock(&es->lock);
    snprintf(rec->id, sizeof rec->id, "%s-%lld-%u", sub->user, (long long)time_now_ms(), ++es->seq);
    pthread_mutex_unlock(&es->lock);
    snprintf(rec->user, sizeof rec->user, "%s", sub->user);
    snprintf(rec->framework, sizeof rec->framework, "%s", fw.name);
    snprintf(r->framework, sizeof r->framework, "%s", fw.name);
    snprintf(rec->args, sizeof rec->args, "%s", sub->args);
    rec->created_at = time_now_ms();
    snprintf(rec->result_dir, sizeof rec->result_dir, "%s/execs/%s", es->home, rec->id);
    snprintf(rec->state, sizeof rec->state, "SUBMITTED");

    int status = prepare(es, sub, &d, &fw, r, err, errlen);
    /* The scheduler accepts or refuses the job before anything is stored:
     * one too large for this host is the submitter's error. */
    pthread_mutex_lock(&es->lock);
    if (status == 0)
        status = enqueue_locked(es, r, &d, err, errlen);
    if (status == 0 && store_exec_insert(es->st, rec, err, errlen) != 0) {
        sched_service_end(es->sched, rec->id);
        unlink_running(es, r);
        status = 500;
    }
    if (status == 0) {
        exec_set_state(es, rec, "PENDING", NULL);
        schedule_locked(es);
        snprintf(id, idlen, "%s", rec->id);
    }
    pthread_mutex_unlock(&es->lock);
    if (status) {
        remove_exec_dir(rec->result_dir);
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, fw.name);
        exec_free_running(r);
    }
    dlicmd_free(&d);
    return status;
}

int exec_stop(exec_service *es, const char *owner, const char *id, char *err, size_t errlen)
{
    pthread_mutex_lock(&es->lock);
    int rc = 0;
    store_exec rec;
    running_exec *r = NULL;
    if (!lookup(es, owner, id, &r, &rec)) {
        snprintf(err, errlen, "no exec \"%s\"", id);
        rc = 404;
    } else if (r && r->pending) {
        /* Never started: it ends here. */
        sched_service_end(es->sched, id);
        exec_set_state(es, &r->rec, "KILLED", "stopped by request before it started");
        registry_release(es->reg, LOOM_KIND_FRAMEWORK, r->framework);
        unlink_running(es, r);
        exec_free_running(r);
    } else if (r && r->edt) {
        r->stop_requested = 1;
        edt_stop(r->edt);
    } else if (r) {
        if (!r->stop_requested) {
            r->stop_requested = 1;
            r->kill_at_ms = time_mono_ms() + STOP_GRACE_MS;
            if (r->rec.pgid > 0)
                kill(-r->rec.pgid, SIGTERM);
        }
    } else {
        snprintf(err, errlen, "exec \"%s\" is already %s", id, rec.state);
        rc = 409;
    }
    pthread_mutex_unlock(&es->lock);
    return rc;
}

int exec_resize(exec_service *es, const char *owner, const char *id, int workers, char *err,
                size_t errlen)
{
    pthread_mutex_lock(&es->lock);
    int rc = 0;
    store_exec rec;
    running_exec *r = NULL;
    if (!lookup(es, owner, id, &r, &rec)) {
        snprintf(err, errlen, "no exec \"%s\"", id);
        rc = 404;
    } else if (r && r->elastic) {
        if (workers < 1 || workers > r->devices) {
            snprintf(err, errlen, "workers: expected 1 to %d (the job's engines), got %d",
                     r->devices, workers);
            rc = 400;
        } else {
            /* The job asks for at most `workers`; the scheduler grants what
             * the other jobs leave. */
            rc = sched_service_set_range(es->sched, id, 1, workers, err, errlen);
            if (!rc)
                schedule_locked(es);
        }
    } else if (r) {
        snprintf(err, errlen,
                 "exec \"%s\" runs a launch-style framework (%s); only elastic training jobs resize",
                 id, r->framework);
        rc = 409;
    } else {
        snprintf(err, errlen, "exec \"%s\" is %s", id, rec.state);
        rc = 409;
    }
    pthread_mutex_unlock(&es->lock);
    return rc;
}

int exec_delete(exec_service *es, const char *owner, const char *id, char *err, size_t errlen)
{
    pthread_mutex_lock(&es->lock);
    int rc = 0;
    store_exec rec;
    if (store_exec_get(es->st, id, &rec) != 0 || !visible(owner, rec.user)) {
        snprintf(err, errlen, "no exec \"%s\"", id);
        rc = 404;
    } else if (exec_find_running(es, id) || !exec_state_is_final(rec.state)) {
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

static cJSON *describe(exec_service *es, const store_exec *e, const running_exec *r)
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
    if (r) {
        int32_t dev[64];
        int n = sched_service_job_devices(es->sched, e->id, dev, 64, NULL, NULL);
        cJSON *slots = cJSON_AddArrayToObject(o, "slots");
        for (int i = 0; i < n && i < 64; i++)
            cJSON_AddItemToArray(slots, cJSON_CreateNumber(dev[i]));
    }
    if (r && r->edt) {
        cJSON_AddItemToObject(o, "training", edt_describe(r->edt));
    } else if (!r) {
        char path[PATH_MAX + 32];
        trainer_summary_path(e, path, sizeof path);
        char *text = fs_read_file(path, 16u << 20, NULL);
        cJSON *summary = text ? cJSON_Parse(text) : NULL;
        free(text);
        if (summary)
            cJSON_AddItemToObject(o, "training", summary);
    }
    if (r && !r->edt && r->workers) {
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

cJSON *exec_describe(exec_service *es, const char *owner, const char *id)
{
    pthread_mutex_lock(&es->lock);
    cJSON *o = NULL;
    running_exec *r = exec_find_running(es, id);
    store_exec rec;
    if (r && visible(owner, r->rec.user))
        o = describe(es, &r->rec, r);
    else if (!r && store_exec_get(es->st, id, &rec) == 0 && visible(owner, rec.user))
        o = describe(es, &rec, NULL);
    pthread_mutex_unlock(&es->lock);
    return o;
}

typedef struct list_ctx {
    exec_service *es;
    const char *owner;
    cJSON *array;
} list_ctx;

static void add_to_list(const store_exec *e, void *ctx)
{
    list_ctx *l = ctx;
    if (visible(l->owner, e->user))
        cJSON_AddItemToArray(l->array, describe(l->es, e, exec_find_running(l->es, e->id)));
}

cJSON *exec_list(exec_service *es, const char *owner)
{
    list_ctx l = {es, owner, cJSON_CreateArray()};
    pthread_mutex_lock(&es->lock);
    store_exec_each(es->st, add_to_list, &l);
    pthread_mutex_unlock(&es->lock);
    return l.array;
}

int exec_log_path(exec_service *es, const char *owner, const char *id, int worker,
                  const char *stream, char *path, size_t pathlen, char *err, size_t errlen)
{
    store_exec rec;
    pthread_mutex_lock(&es->lock);
    int found = store_exec_get(es->st, id, &rec) == 0 && visible(owner, rec.user);
    pthread_mutex_unlock(&es->lock);
    if (!found) {
        snprintf(err, errlen, "no exec \"%s\"", id);
        return 404;
    }
    if (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0) {
        snprintf(err, errlen, "stream: expected stdout or stderr, got \"%s\"", stream);
        return 400;
    }
    if (worker == -1) { /* the training driver's log */
        snprintf(path, pathlen, "%s/log/driver/%s", rec.result_dir, stream);
        return 0;
    }
    if (worker < 0 || worker >= rec.num_workers) {
        snprintf(err, errlen, "worker: exec \"%s\" has workers 0 to %d", id, rec.num_workers - 1);
        return 400;
    }
    snprintf(path, pathlen, "%s/log/worker-%d/%s", rec.result_dir, worker, stream);
    return 0;
}

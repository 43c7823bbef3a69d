/* hpo/hpo.c - see hpo.h: the service's calls and its loop thread (one pass
 * per task: hpo_loop.c). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "hpo/hpo_internal.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/tarball.h"

#define MODEL_MAX_BYTES ((uint64_t)1 << 30)

const hpo_builtin_algorithm hpo_builtin_algorithms[] = {
    {"Random", "random"},     {"ExperimentGridSearch", "grid"}, {"Tpe", "tpe"},
    {"Hyperband", "hyperband"}, {"Bayesian", "bayesian"},
};
const size_t hpo_builtin_algorithm_count =
    sizeof hpo_builtin_algorithms / sizeof *hpo_builtin_algorithms;

loom_error *hpo_resolve_algorithm(hpo_service *svc, const char *algorithm, hpo_task *t)
{
    const char *plugin = algorithm;
    for (size_t i = 0; i < hpo_builtin_algorithm_count; i++)
        if (!strcasecmp(algorithm, hpo_builtin_algorithms[i].wmla_name))
            plugin = hpo_builtin_algorithms[i].plugin;
    registry_entry e;
    if (registry_acquire(svc->reg, LOOM_KIND_SEARCH, plugin, &e) == 0) {
        snprintf(t->plugin, sizeof t->plugin, "%s", e.name);
        snprintf(t->plugin_path, sizeof t->plugin_path, "%s", e.path);
        /* The plugin-host child loads its own copy: the host keeps no pin. */
        registry_release(svc->reg, LOOM_KIND_SEARCH, e.name);
        return NULL;
    }
    loom_error *err = hpo_resolve_installed(svc, algorithm, t);
    if (!err || loom_err_code(err) != LOOM_E_NOT_FOUND)
        return err;
    loom_err_free(err);
    return loom_err(LOOM_E_INVALID,
                    "algoDef.algorithm: no search algorithm named \"%s\" (built in: Random, "
                    "Tpe, Bayesian, Hyperband, ExperimentGridSearch; or one registered with "
                    "loom algorithm add)", algorithm);
}

void hpo_task_free(hpo_task *t)
{
    if (!t)
        return;
    search_client_free(t->search);
    store_hpo_exps_free(t->exps, t->nexps);
    hpo_task_spec_free(&t->spec);
    store_hpo_task_free(&t->rec);
    free(t);
}

/* ---- the loop -------------------------------------------------------------- */

static void *loop(void *arg)
{
    hpo_service *svc = arg;
    pthread_mutex_lock(&svc->lock);
    while (!svc->stop) {
        for (hpo_task **pt = &svc->active; *pt;) {
            hpo_task *t = *pt;
            if (hpo_tick(svc, t)) {
                *pt = t->next;
                hpo_task_free(t);
            } else {
                pt = &t->next;
            }
        }
        struct timespec until = time_after_ms(CLOCK_REALTIME, svc->opt.tick_ms);
        if (!svc->stop)
            pthread_cond_timedwait(&svc->wake, &svc->lock, &until);
    }
    pthread_mutex_unlock(&svc->lock);
    return NULL;
}

/* A stored task made active again: its spec parsed, its experiments read. */
static loom_error *activate(hpo_service *svc, const hpo_task_rec *rec, hpo_task **out)
{
    hpo_task *t = calloc(1, sizeof *t);
    if (!t)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    t->rec = *rec;
    t->rec.task_json = rec->task_json ? strdup(rec->task_json) : NULL;
    t->rec.algo_state = rec->algo_state ? strdup(rec->algo_state) : NULL;
    snprintf(t->dir, sizeof t->dir, "%s/hpo/%s", svc->home, rec->name);
    loom_error *e = t->rec.task_json ? wmla_task_parse(t->rec.task_json, strlen(t->rec.task_json),
                                                       &t->spec)
                                     : loom_err(LOOM_E_INTERNAL, "out of memory");
    if (!e)
        e = hpo_resolve_algorithm(svc, t->spec.algorithm, t);
    if (!e)
        e = store_hpo_exp_list(svc->st, rec->name, &t->exps, &t->nexps);
    t->cap = t->nexps;
    if (e) {
        hpo_task_free(t);
        return e;
    }
    *out = t;
    return NULL;
}

typedef struct resume_ctx {
    hpo_service *svc;
} resume_ctx;

static void resume_one(const hpo_task_rec *rec, void *arg)
{
    hpo_service *svc = ((resume_ctx *)arg)->svc;
    hpo_task_state state = rec->state;
    switch (state) {
    case HPO_TASK_SUBMITTED:
    case HPO_TASK_RUNNING:
    case HPO_TASK_STOPPING:
        break;
    default:
        return; /* ended */
    }
    hpo_task *t = NULL;
    loom_error *e = activate(svc, rec, &t);
    if (e) {
        hpo_task_rec copy = *rec;
        copy.state = HPO_TASK_FAILED;
        loom_err_take(e, copy.message, sizeof copy.message);
        copy.ended_at = time_now_ms();
        loom_err_free(store_hpo_task_update(svc->st, &copy));
        return;
    }
    t->reconcile = 1;
    t->stopping = state == HPO_TASK_STOPPING; /* its stop is carried out */
    t->next = svc->active;
    svc->active = t;
    log_info("tuning task %s resumes (%zu experiment(s) recorded)", rec->name, t->nexps);
}

loom_error *hpo_service_create(store *st, registry *reg, exec_service *es, const char *home,
                               const hpo_options *opt, hpo_service **out)
{
    *out = NULL;
    loom_error *e = NULL;
    hpo_service *svc = calloc(1, sizeof *svc);
    if (!svc)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    svc->st = st;
    svc->reg = reg;
    svc->es = es;
    snprintf(svc->home, sizeof svc->home, "%s", home);
    ssize_t n = readlink("/proc/self/exe", svc->binary, sizeof svc->binary - 1);
    svc->binary[n > 0 ? n : 0] = 0;
    if (opt)
        svc->opt = *opt;
    if (!svc->opt.plugin_deadline_ms)
        svc->opt.plugin_deadline_ms = 5000;
    if (!svc->opt.tick_ms)
        svc->opt.tick_ms = 5;
    pthread_mutex_init(&svc->lock, NULL);
    pthread_cond_init(&svc->wake, NULL);
    resume_ctx ctx = {svc};
    e = store_hpo_task_each(st, resume_one, &ctx);
    if (!e && pthread_create(&svc->thread, NULL, loop, svc) != 0)
        e = loom_err(LOOM_E_INTERNAL, "cannot start the tuning loop: %s", strerror(errno));
    if (e) {
        while (svc->active) {
            hpo_task *t = svc->active;
            svc->active = t->next;
            hpo_task_free(t);
        }
        pthread_mutex_destroy(&svc->lock);
        pthread_cond_destroy(&svc->wake);
        free(svc);
        return e;
    }
    *out = svc;
    return NULL;
}

void hpo_service_destroy(hpo_service *svc)
{
    if (!svc)
        return;
    pthread_mutex_lock(&svc->lock);
    svc->stop = 1;
    pthread_cond_signal(&svc->wake);
    pthread_mutex_unlock(&svc->lock);
    pthread_join(svc->thread, NULL);
    while (svc->active) {
        hpo_task *t = svc->active;
        svc->active = t->next;
        hpo_task_free(t);
    }
    pthread_mutex_destroy(&svc->lock);
    pthread_cond_destroy(&svc->wake);
    free(svc);
}

/* ---- calls ----------------------------------------------------------------- */

int hpo_single_subdir(const char *dir, char *name, size_t len)
{
    DIR *d = opendir(dir);
    int n = 0, is_dir = 0;
    struct dirent *ent;
    while (d && (ent = readdir(d)) != NULL) {
        if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, ".."))
            continue;
        n++;
        char path[PATH_MAX + NAME_MAX + 2];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        is_dir = fs_is_dir(path);
        snprintf(name, len, "%s", ent->d_name);
    }
    if (d)
        closedir(d);
    return n == 1 && is_dir;
}

/* The model directory, unpacked once; a native model's edt.json is kept
 * as the template its "$name" strings are filled from. */
static loom_error *prepare_dir(const char *dir, const hpo_submission *sub)
{
    char model[PATH_MAX + 16], path[PATH_MAX + 64];
    snprintf(model, sizeof model, "%s/model", dir);
    loom_error *e = fs_mkdir_p(model);
    if (e)
        return loom_err_recode(e, LOOM_E_INTERNAL);
    e = sub->archive_path
                        ? tarball_unpack_file(sub->archive_path, model, MODEL_MAX_BYTES)
                        : tarball_unpack(sub->archive, sub->archive_len, model, MODEL_MAX_BYTES);
    if (e)
        return loom_err_wrap(e, "file (the model directory)");
    /* WMLA's clients send the model folder itself (one top-level folder);
     * loom's CLI sends its contents. Both become the model directory. */
    char only[NAME_MAX + 1];
    if (hpo_single_subdir(model, only, sizeof only)) {
        char tmp[PATH_MAX + 16], inner[PATH_MAX + 16 + NAME_MAX];
        snprintf(tmp, sizeof tmp, "%s/model.top", dir);
        snprintf(inner, sizeof inner, "%s/%s", tmp, only);
        if (rename(model, tmp) != 0 || rename(inner, model) != 0)
            return loom_err(LOOM_E_INTERNAL, "cannot move %s up: %s", only, strerror(errno));
        loom_err_free(fs_rm_rf(tmp)); /* the empty shell left: only space */
    }
    snprintf(path, sizeof path, "%s/edt.json", model);
    if (fs_is_file(path)) {
        char tmpl[PATH_MAX + 64];
        snprintf(tmpl, sizeof tmpl, "%s/edt.template.json", dir);
        if ((e = fs_copy_file(path, tmpl, 0644)) != NULL)
            return loom_err_recode(e, LOOM_E_INTERNAL);
    }
    return NULL;
}

loom_error *hpo_submit(hpo_service *svc, const hpo_submission *sub, char *name, size_t namelen)
{
    hpo_task *t = calloc(1, sizeof *t);
    if (!t)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    loom_error *e = wmla_task_parse(sub->task_json, sub->task_len, &t->spec);
    snprintf(t->rec.user, sizeof t->rec.user, "%s", sub->user); /* whose optimizers it names */
    t->rec.is_admin = sub->is_admin;
    if (!e)
        e = hpo_resolve_algorithm(svc, t->spec.algorithm, t);
    if (!e && (!sub->archive || !sub->archive_len) && !sub->archive_path)
        e = loom_err(LOOM_E_INVALID, "file: expected the model directory as a tar (gzip'd or not) "
                                     "in the 'file' part (loom hpo submit --model-dir DIR)");
    if (e) {
        hpo_task_free(t);
        return e;
    }
    hpo_task_rec *r = &t->rec;
    snprintf(r->name, sizeof r->name, "%s", t->spec.name);
    r->user_id = sub->user_id;
    r->state = HPO_TASK_SUBMITTED;
    r->task_json = strndup(sub->task_json, sub->task_len);
    r->next_id = 1;
    r->created_at = time_now_ms();
    snprintf(t->dir, sizeof t->dir, "%s/hpo/%s", svc->home, r->name);
    pthread_mutex_lock(&svc->lock);
    hpo_task_rec old;
    loom_error *found = r->task_json ? store_hpo_task_get(svc->st, r->name, &old) : NULL;
    if (!r->task_json) {
        e = loom_err(LOOM_E_INTERNAL, "out of memory");
    } else if (!found) {
        store_hpo_task_free(&old);
        e = loom_err(LOOM_E_CONFLICT, "hpoName: a tuning task \"%s\" exists (delete it first)",
                     r->name);
    } else if (loom_err_code(found) != LOOM_E_NOT_FOUND) {
        e = found; /* the store failed: not a free name */
        found = NULL;
    } else {
        e = loom_err_recode(fs_rm_rf(t->dir), LOOM_E_INTERNAL); /* a failed submit's leftovers */
        if (!e)
            e = prepare_dir(t->dir, sub);
        if (!e)
            e = store_hpo_task_insert(svc->st, r);
        if (e)
            loom_err_free(fs_rm_rf(t->dir)); /* removed again by the next submit of the name */
    }
    loom_err_free(found);
    if (!e) {
        t->next = svc->active;
        svc->active = t;
        snprintf(name, namelen, "%s", r->name);
        pthread_cond_signal(&svc->wake);
        log_info("tuning task %s submitted by %s: %s over %u parameter(s)", r->name, r->user,
                 t->plugin, t->spec.param_count);
    }
    pthread_mutex_unlock(&svc->lock);
    if (e)
        hpo_task_free(t);
    return e;
}

static hpo_task *find_active(hpo_service *svc, const char *name)
{
    for (hpo_task *t = svc->active; t; t = t->next)
        if (!strcmp(t->rec.name, name))
            return t;
    return NULL;
}

loom_error *hpo_get_visible(hpo_service *svc, const char *owner, const char *name,
                               hpo_task_rec *out)
{
    loom_error *e = store_hpo_task_get(svc->st, name, out);
    if (!e && owner && strcmp(owner, out->user)) {
        store_hpo_task_free(out);
        e = loom_err(LOOM_E_NOT_FOUND, "no tuning task \"%s\"", name);
    }
    return e;
}

loom_error *hpo_stop(hpo_service *svc, const char *owner, const char *name)
{
    hpo_task_rec rec;
    pthread_mutex_lock(&svc->lock);
    loom_error *e = hpo_get_visible(svc, owner, name, &rec);
    int have_rec = e == NULL;
    hpo_task *t = e ? NULL : find_active(svc, name);
    if (!e && !t) {
        e = loom_err(LOOM_E_CONFLICT, "tuning task \"%s\" is already %s", name,
                     hpo_task_state_text(rec.state));
    } else if (t) {
        t->stopping = 1;
        for (size_t i = 0; i < t->nexps; i++) {
            hpo_exp_rec *x = &t->exps[i];
            if (x->state == HPO_EXP_NOTRUN) {
                x->state = HPO_EXP_STOPPED;
                hpo_exp_save(svc, t, x);
            } else if (hpo_exp_is_live(x) && x->exec_id[0]) {
                loom_err_free(exec_stop(svc->es, EXEC_ADMIN, x->exec_id));
            }
        }
        /* Seen at once: STOPPING until its experiments have ended, then
         * STOPPED (the loop's next pass). */
        if (t->rec.state != HPO_TASK_STOPPING) {
            t->rec.state = HPO_TASK_STOPPING;
            e = store_hpo_task_update(svc->st, &t->rec);
        }
        pthread_cond_signal(&svc->wake);
    }
    if (have_rec)
        store_hpo_task_free(&rec);
    pthread_mutex_unlock(&svc->lock);
    return e;
}

/* A task that ended by a stop or a failure carries on from its state. */
static bool restartable(hpo_task_state s)
{
    switch (s) {
    case HPO_TASK_STOPPED:
    case HPO_TASK_FAILED:
        return true;
    default:
        return false;
    }
}

loom_error *hpo_restart(hpo_service *svc, const char *owner, const char *name)
{
    hpo_task_rec rec;
    pthread_mutex_lock(&svc->lock);
    loom_error *e = hpo_get_visible(svc, owner, name, &rec);
    int have_rec = e == NULL;
    if (!e && (find_active(svc, name) || !restartable(rec.state)))
        e = loom_err(LOOM_E_CONFLICT, "tuning task \"%s\" is %s; only a STOPPED or FAILED one "
                                      "restarts", name, hpo_task_state_text(rec.state));
    hpo_task *t = NULL;
    if (!e) {
        rec.state = HPO_TASK_RUNNING;
        rec.message[0] = 0;
        rec.search_finished = 0;
        rec.ended_at = 0;
        e = activate(svc, &rec, &t);
    }
    if (!e && (e = store_hpo_task_update(svc->st, &t->rec)) == NULL) {
        t->next = svc->active;
        svc->active = t;
        pthread_cond_signal(&svc->wake);
    } else {
        hpo_task_free(t);
    }
    if (have_rec)
        store_hpo_task_free(&rec);
    pthread_mutex_unlock(&svc->lock);
    return e;
}

/* Lock held; the task is not active. */
static loom_error *delete_locked(hpo_service *svc, const char *name)
{
    hpo_exp_rec *xs = NULL;
    size_t n = 0;
    loom_error *e = store_hpo_exp_list(svc->st, name, &xs, &n);
    for (size_t i = 0; !e && i < n; i++)
        if (xs[i].exec_id[0])
            loom_err_free(exec_delete(svc->es, EXEC_ADMIN, xs[i].exec_id));
    store_hpo_exps_free(xs, n);
    if (!e)
        e = store_hpo_task_delete(svc->st, name);
    if (!e) {
        char dir[PATH_MAX + 160];
        snprintf(dir, sizeof dir, "%s/hpo/%s", svc->home, name);
        loom_error *left = fs_rm_rf(dir); /* the record is gone: only space */
        if (left)
            log_warn("tuning task %s: %s", name, loom_err_message(left));
        loom_err_free(left);
    }
    return e;
}

loom_error *hpo_delete(hpo_service *svc, const char *owner, const char *name)
{
    hpo_task_rec rec;
    pthread_mutex_lock(&svc->lock);
    loom_error *e = hpo_get_visible(svc, owner, name, &rec);
    if (!e) {
        if (find_active(svc, name))
            e = loom_err(LOOM_E_CONFLICT, "tuning task \"%s\" is %s; stop it first", name,
                         hpo_task_state_text(rec.state));
        else
            e = delete_locked(svc, name);
        store_hpo_task_free(&rec);
    }
    pthread_mutex_unlock(&svc->lock);
    return e;
}

loom_error *hpo_delete_ended(hpo_service *svc, const char *owner, unsigned *count)
{
    *count = 0;
    hpo_task_rec *all = NULL;
    size_t n = 0;
    loom_error *e = hpo_list(svc, owner, &all, &n);
    pthread_mutex_lock(&svc->lock);
    for (size_t i = 0; !e && i < n; i++) {
        if (find_active(svc, all[i].name) || all[i].state == HPO_TASK_SUBMITTED ||
            all[i].state == HPO_TASK_RUNNING)
            continue;
        if (!(e = delete_locked(svc, all[i].name)))
            (*count)++;
    }
    pthread_mutex_unlock(&svc->lock);
    hpo_task_recs_free(all, n);
    return e;
}

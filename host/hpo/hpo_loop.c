/* hpo/hpo_loop.c - one pass of the tuning loop over a task: start its
 * search, follow its experiments' execs, report the ended ones to the
 * algorithm, ask it for more while there is room, end the task when the
 * search and its experiments are done. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpo/hpo_internal.h"
#include "hpo/hpo_request.h"
#include "util/fs.h"
#include "util/job_sandbox.h"
#include "util/log.h"
#include "util/num_text.h"
#include "util/tarball.h"
#include "util/user_tree.h"

#define VAL_DICT_MAX_BYTES (16u << 20)

int hpo_exp_is_live(const hpo_exp_rec *x)
{
    return hpo_exp_state_is_open(x->state);
}

void hpo_exp_save(hpo_service *svc, hpo_task *t, hpo_exp_rec *x)
{
    (void)t;
    loom_error *e = store_hpo_exp_put(svc->st, x);
    if (e) {
        log_warn("tuning task %s: experiment %llu: %s", x->task, (unsigned long long)x->id,
                 loom_err_message(e));
        loom_err_free(e);
    }
}

static void save_task(hpo_service *svc, hpo_task *t)
{
    loom_error *e = store_hpo_task_update(svc->st, &t->rec);
    if (e) {
        log_warn("tuning task %s: %s", t->rec.name, loom_err_message(e));
        loom_err_free(e);
    }
}

void hpo_end_task(hpo_service *svc, hpo_task *t, hpo_task_state state, const char *message)
{
    for (size_t i = 0; i < t->nexps; i++) {
        hpo_exp_rec *x = &t->exps[i];
        if (x->state == HPO_EXP_NOTRUN) {
            x->state = HPO_EXP_STOPPED;
            x->end_at = time_now_ms();
            hpo_exp_save(svc, t, x);
        } else if (hpo_exp_is_live(x) && x->exec_id[0]) {
            loom_err_free(exec_stop(svc->es, EXEC_ADMIN, x->exec_id));
        }
    }
    t->rec.state = state;
    snprintf(t->rec.message, sizeof t->rec.message, "%s", message ? message : "");
    t->rec.ended_at = time_now_ms();
    if (t->search) {
        char *saved = NULL;
        if (!loom_err_take(search_client_save(t->search, &saved), NULL, 0) && saved) {
            free(t->rec.algo_state);
            t->rec.algo_state = saved;
        } else {
            free(saved);
        }
        search_client_free(t->search);
        t->search = NULL;
    }
    loom_err_free(store_hpo_commit(svc->st, &t->rec, t->exps, t->nexps));
    log_info("tuning task %s %s%s%s", t->rec.name, hpo_task_state_text(state), message && *message ? ": " : "",
             message ? message : "");
}

/* ---- values ---------------------------------------------------------------- */

static char *values_to_json(const hpo_task_spec *s, const loom_value *v)
{
    cJSON *a = cJSON_CreateArray();
    for (uint32_t i = 0; i < s->param_count; i++)
        cJSON_AddItemToArray(a, hpo_value_to_json(&v[i]));
    char *text = cJSON_PrintUnformatted(a);
    cJSON_Delete(a);
    return text;
}

/* Decodes a stored values array into out (param_count values). */
static int values_from_json(const hpo_task_spec *s, const char *json, loom_value *out)
{
    cJSON *a = cJSON_Parse(json ? json : "");
    int ok = cJSON_IsArray(a) && (uint32_t)cJSON_GetArraySize(a) == s->param_count;
    for (uint32_t i = 0; ok && i < s->param_count; i++)
        ok = hpo_value_from_json(&s->params[i], cJSON_GetArrayItem(a, (int)i), &out[i]);
    cJSON_Delete(a);
    return ok;
}

/* config.json: {name: value}, plus the budget under ResourceName. */
static cJSON *config_of(const hpo_task *t, const hpo_exp_rec *x)
{
    cJSON *a = cJSON_Parse(x->values_json ? x->values_json : "[]");
    cJSON *o = cJSON_CreateObject();
    for (uint32_t i = 0; i < t->spec.param_count; i++)
        cJSON_AddItemToObject(o, t->spec.params[i].name,
                              cJSON_Duplicate(cJSON_GetArrayItem(a, (int)i), 1));
    if (x->budget > 0 && t->spec.resource_name[0])
        cJSON_AddNumberToObject(o, t->spec.resource_name, x->budget);
    cJSON_Delete(a);
    return o;
}

/* In a native (edt) model's edt.json, a string "$name" stands for the
 * hyperparameter (or the budget) of that name. */
static void substitute(cJSON *node, const cJSON *config)
{
    for (cJSON *c = node ? node->child : NULL; c; c = c->next) {
        if (cJSON_IsString(c) && c->valuestring[0] == '$') {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(config, c->valuestring + 1);
            if (v) {
                cJSON *copy = cJSON_Duplicate(v, 1);
                if (node->type == cJSON_Array) {
                    int i = 0;
                    for (cJSON *k = node->child; k != c; k = k->next)
                        i++;
                    cJSON_ReplaceItemInArray(node, i, copy);
                } else {
                    cJSON_ReplaceItemInObjectCaseSensitive(node, c->string, copy);
                }
                c = copy;
            }
        } else {
            substitute(c, config);
        }
    }
}

/* A scratch file of the next archive: no fsync, nothing to survive. Its
 * numbers are written as their shortest exact text (0.1, not
 * 0.10000000000000001): the model reads them. */
static loom_error *write_json(const char *path, cJSON *j)
{
    num_text_json_shortest(j);
    char *text = cJSON_Print(j);
    FILE *f = text ? fopen(path, "w") : NULL;
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0)
        ok = 0;
    free(text);
    return ok ? NULL : loom_err(LOOM_E_INTERNAL, "cannot write %s: %s", path, strerror(errno));
}

/* The model directory with this experiment's config.json, as a tar. */
static loom_error *experiment_archive(hpo_task *t, const hpo_exp_rec *x, char **tar, size_t *len)
{
    char model[PATH_MAX + 16], path[PATH_MAX + 64];
    snprintf(model, sizeof model, "%s/model", t->dir);
    cJSON *config = config_of(t, x);
    snprintf(path, sizeof path, "%s/config.json", model);
    loom_error *e = write_json(path, config);
    snprintf(path, sizeof path, "%s/edt.template.json", t->dir);
    char *tmpl = NULL;
    if (!e && fs_is_file(path))
        e = fs_read_file(path, 1 << 20, &tmpl, NULL);
    if (tmpl) {
        cJSON *spec = cJSON_Parse(tmpl);
        substitute(spec, config);
        snprintf(path, sizeof path, "%s/edt.json", model);
        e = spec ? write_json(path, spec) : NULL;
        cJSON_Delete(spec);
        free(tmpl);
    }
    cJSON_Delete(config);
    return e ? e : tarball_pack_dir(model, tar, len);
}

/* A promoted configuration (Hyperband's): the finished experiment with the
 * same values and the largest smaller budget, whose exec an elastic job
 * continues from its checkpoint, so it trains only the extra budget. NULL
 * when there is none. */
static const char *promoted_from(const hpo_task *t, const hpo_exp_rec *x)
{
    const hpo_exp_rec *best = NULL;
    for (size_t i = 0; x->budget > 0 && x->values_json && i < t->nexps; i++) {
        const hpo_exp_rec *p = &t->exps[i];
        if (p != x && p->state == HPO_EXP_FINISHED && p->exec_id[0] && p->budget > 0 &&
            p->budget < x->budget && p->values_json && !strcmp(p->values_json, x->values_json) &&
            (!best || p->budget > best->budget))
            best = p;
    }
    return best ? best->exec_id : NULL;
}

static void submit_experiment(hpo_service *svc, hpo_task *t, hpo_exp_rec *x)
{
    char *tar = NULL;
    size_t len = 0;
    loom_error *e = experiment_archive(t, x, &tar, &len);
    /* The request is a structure (hpo_request.h); its words are only kept
     * with the exec, so that a restarted host runs it the same way. */
    char *args = NULL;
    dlicmd request;
    if (!e && (e = hpo_exp_request(t->spec.args, x->id, x->budget, &request, &args)) == NULL) {
        exec_submission sub = {.user = t->rec.user, .user_id = t->rec.user_id,
                               .is_admin = t->rec.is_admin, .request = &request, .args = args,
                               .archive = tar, .archive_len = len,
                               .continue_from = promoted_from(t, x)};
        e = exec_submit(svc->es, &sub, x->exec_id, sizeof x->exec_id);
        dlicmd_free(&request);
    }
    free(args);
    free(tar);
    x->attempts++;
    if (e) {
        x->state = HPO_EXP_ERROR;
        loom_err_take(e, x->message, sizeof x->message);
        x->end_at = time_now_ms();
    } else {
        x->state = HPO_EXP_SUBMITTED;
        if (!x->start_at)
            x->start_at = time_now_ms();
    }
    hpo_exp_save(svc, t, x);
}

/* ---- results --------------------------------------------------------------- */

/* The last entry of val_dict_list.json that has the metric; every numeric
 * field of it goes to metrics. */
static int read_objective(const char *result_dir, const char *metric, double *value,
                          loom_metric *metrics, uint32_t *nmetrics, char *names, size_t nameslen)
{
    static const char *const files[] = {"val_dict_list.json", "val_dict_list-worker0.json"};
    *nmetrics = 0;
    names[0] = 0;
    for (size_t f = 0; f < 2; f++) {
        /* The experiment's exec folder is the job's: read beneath it. */
        char *text = NULL;
        loom_err_free(utree_read_file_in(result_dir, files[f], VAL_DICT_MAX_BYTES, &text, NULL));
        cJSON *list = text ? cJSON_Parse(text) : NULL;
        free(text);
        if (!cJSON_IsArray(list)) {
            cJSON_Delete(list);
            continue;
        }
        int found = 0;
        for (int i = cJSON_GetArraySize(list) - 1; i >= 0 && !found; i--) {
            const cJSON *entry = cJSON_GetArrayItem(list, i);
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(entry, metric);
            if (i == cJSON_GetArraySize(list) - 1)
                for (const cJSON *c = entry ? entry->child : NULL; c; c = c->next)
                    if (cJSON_IsNumber(c) && strlen(names) + strlen(c->string) + 3 < nameslen)
                        strcat(strcat(names, names[0] ? ", " : ""), c->string);
            if (cJSON_IsNumber(m) && isfinite(m->valuedouble)) {
                found = 1;
                *value = m->valuedouble;
            }
        }
        (void)metrics;
        cJSON_Delete(list);
        return found;
    }
    return 0;
}

static void observe(hpo_service *svc, hpo_task *t, hpo_exp_rec *x, int status);

/* What an experiment whose exec has not ended is: RUNNING once its exec
 * runs (or recovers), SUBMITTED while it waits. */
static hpo_exp_state exp_state_of_live_exec(exec_state s)
{
    switch (s) {
    case EXEC_STATE_RUNNING:
    case EXEC_STATE_RECOVERING:
        return HPO_EXP_RUNNING;
    default:
        return HPO_EXP_SUBMITTED;
    }
}

/* Follows one experiment's exec; reports it when it ended. */
static void poll_experiment(hpo_service *svc, hpo_task *t, hpo_exp_rec *x)
{
    exec_view v;
    loom_error *e = exec_describe(svc->es, EXEC_ADMIN, x->exec_id, &v);
    if (e) {
        x->state = HPO_EXP_ERROR;
        snprintf(x->message, sizeof x->message, "its exec %s is gone: %s", x->exec_id,
                 loom_err_message(e));
        loom_err_free(e);
        x->end_at = time_now_ms();
        observe(svc, t, x, LOOM_EXPERIMENT_FAILED);
        return;
    }
    exec_state s = v.rec.state;
    if (!exec_state_is_final(s)) {
        hpo_exp_state mine = exp_state_of_live_exec(s);
        if (mine != x->state) {
            x->state = mine;
            if (mine == HPO_EXP_RUNNING && v.rec.started_at)
                x->start_at = v.rec.started_at;
            hpo_exp_save(svc, t, x);
        }
        exec_view_free(&v);
        return;
    }
    if (t->reconcile && s != EXEC_STATE_FINISHED && x->attempts < 2 && !t->stopping) {
        /* Interrupted by the host's restart: run once more, same values. */
        x->state = HPO_EXP_NOTRUN;
        snprintf(x->message, sizeof x->message, "exec %s was interrupted by a host restart "
                 "(KILLED); run again", x->exec_id);
        hpo_exp_save(svc, t, x);
        exec_view_free(&v);
        return;
    }
    x->end_at = v.rec.ended_at ? v.rec.ended_at : time_now_ms();
    int status = LOOM_EXPERIMENT_FINISHED;
    if (s == EXEC_STATE_FINISHED) {
        char names[256];
        loom_metric m[LOOM_MAX_METRICS];
        uint32_t nm;
        x->has_metric = read_objective(v.rec.result_dir, t->spec.objective_metric, &x->metric, m,
                                       &nm, names, sizeof names);
        x->state = HPO_EXP_FINISHED;
        if (!x->has_metric)
            snprintf(x->message, sizeof x->message,
                     "no '%s' in exec %s's val_dict_list.json (its last entry has: %s)",
                     t->spec.objective_metric, x->exec_id, names[0] ? names : "nothing");
    } else if (t->stopping || s == EXEC_STATE_KILLED) {
        /* Ended by its task's stop (a trainer stopped while it started
         * ends in ERROR, not KILLED): STOPPED, whatever its exec says. */
        x->state = t->stopping ? HPO_EXP_STOPPED : HPO_EXP_KILLED;
        if (t->stopping)
            snprintf(x->message, sizeof x->message, "stopped with its task (exec %s %s%s%s)",
                     x->exec_id, exec_state_text(s), v.rec.message[0] ? ": " : "", v.rec.message);
        status = LOOM_EXPERIMENT_KILLED;
    } else {
        /* The exec names where its output is; the id says which exec. */
        x->state = HPO_EXP_FAILED;
        snprintf(x->message, sizeof x->message, "exec %s %s%s%s", x->exec_id, exec_state_text(s),
                 v.rec.message[0] ? ": " : "", v.rec.message);
        status = LOOM_EXPERIMENT_FAILED;
    }
    exec_view_free(&v);
    observe(svc, t, x, status); /* saves x, with the state after it */
}

/* ---- the search ------------------------------------------------------------ */

static hpo_exp_rec *find_exp(hpo_task *t, uint64_t id)
{
    for (size_t i = 0; i < t->nexps; i++)
        if (t->exps[i].id == id)
            return &t->exps[i];
    return NULL;
}

static int grow_exps(hpo_task *t, size_t more)
{
    if (t->nexps + more <= t->cap)
        return 0;
    size_t cap = t->cap ? t->cap : 16;
    while (cap < t->nexps + more)
        cap *= 2;
    hpo_exp_rec *grown = realloc(t->exps, cap * sizeof *grown);
    if (!grown)
        return -1;
    t->exps = grown;
    t->cap = cap;
    return 0;
}

/* The algorithm's state after this pass's observe and suggest calls, and
 * the experiments they changed, in one transaction: one save per pass, not
 * one per call. A host that dies before it finds the experiments
 * unobserved and the state from before, and observes them again. Returns
 * 0, or -1 when the task failed. */
static int flush(hpo_service *svc, hpo_task *t)
{
    if (!t->need_flush)
        return 0;
    t->need_flush = 0;
    char *saved = NULL;
    loom_error *e = t->search ? search_client_save(t->search, &saved) : NULL;
    if (e) {
        char msg[700];
        loom_err_take(e, msg, sizeof msg);
        hpo_end_task(svc, t, HPO_TASK_FAILED, msg);
        return -1;
    }
    if (saved) {
        free(t->rec.algo_state);
        t->rec.algo_state = saved;
    }
    e = store_hpo_commit(svc->st, &t->rec, t->exps, t->nexps);
    if (e) {
        log_warn("tuning task %s: %s", t->rec.name, loom_err_message(e));
        loom_err_free(e);
    }
    return 0;
}

/* Stops, proposals and "finished" from a suggest or observe; the
 * proposals are committed by the pass's flush, before any of them runs.
 * Returns 0, or -1 when the task failed. */
static int apply_outcome(hpo_service *svc, hpo_task *t, search_outcome *o)
{
    char why[700];
    if (o->refused[0]) {
        snprintf(why, sizeof why, "search '%s' %s", t->plugin, o->refused);
        hpo_end_task(svc, t, HPO_TASK_FAILED, why);
        return -1;
    }
    for (uint32_t i = 0; i < o->nstops; i++) {
        hpo_exp_rec *x = find_exp(t, o->stops[i]);
        if (x && hpo_exp_is_live(x) && x->exec_id[0])
            loom_err_free(exec_stop(svc->es, EXEC_ADMIN, x->exec_id));
    }
    if (o->finished)
        t->rec.search_finished = 1;
    if (grow_exps(t, o->nproposals) != 0) {
        hpo_end_task(svc, t, HPO_TASK_FAILED, "out of memory");
        return -1;
    }
    for (uint32_t i = 0; i < o->nproposals; i++) {
        const search_proposal *p = &o->proposals[i];
        for (uint32_t k = 0; k < t->spec.param_count; k++) {
            /* Check again here: the child's word is not proof. */
            loom_error *outside = hpo_value_in_space(&t->spec.params[k], &p->values[k]);
            if (outside) {
                char msg[800];
                snprintf(msg, sizeof msg, "search '%s' proposed a value outside the space: %s",
                         t->plugin, loom_err_message(outside));
                loom_err_free(outside);
                hpo_end_task(svc, t, HPO_TASK_FAILED, msg);
                return -1;
            }
        }
        hpo_exp_rec *x = &t->exps[t->nexps++];
        memset(x, 0, sizeof *x);
        snprintf(x->task, sizeof x->task, "%s", t->rec.name);
        x->id = p->id;
        x->state = HPO_EXP_NOTRUN;
        x->budget = p->budget;
        x->values_json = values_to_json(&t->spec, p->values);
        x->dirty = 1;
        if (p->id >= t->rec.next_id)
            t->rec.next_id = p->id + 1;
    }
    t->need_flush = 1;
    return 0;
}

static void observe(hpo_service *svc, hpo_task *t, hpo_exp_rec *x, int status)
{
    if (status == LOOM_EXPERIMENT_FINISHED && x->has_metric)
        t->failed_in_row = 0;
    else if (status != LOOM_EXPERIMENT_KILLED)
        t->failed_in_row++;
    if (!t->search || x->observed) {
        hpo_exp_save(svc, t, x);
        return;
    }
    loom_value *values = calloc(t->spec.param_count + 1, sizeof *values);
    if (!values || !values_from_json(&t->spec, x->values_json, values)) {
        free(values);
        return;
    }
    loom_observation o = {.struct_size = sizeof o, .status = status, .experiment_id = x->id,
                          .has_objective = x->has_metric, .objective = x->metric,
                          .budget = x->budget, .value_count = t->spec.param_count,
                          .values = values};
    search_outcome out;
    loom_error *e = search_client_observe(t->search, t->rec.next_id, &o, &out);
    free(values);
    x->observed = 1;
    x->dirty = 1;
    t->need_flush = 1;
    t->want_suggest = 1;
    if (e) {
        char msg[700];
        loom_err_take(e, msg, sizeof msg);
        hpo_end_task(svc, t, HPO_TASK_FAILED, msg);
        return;
    }
    apply_outcome(svc, t, &out);
    search_outcome_free(&out, t->spec.param_count);
}

static loom_error *start_search(hpo_service *svc, hpo_task *t)
{
    const hpo_task_spec *s = &t->spec;
    char output[PATH_MAX + 32];
    snprintf(output, sizeof output, "%s/search.log", t->dir);
    loom_search_option options[HPO_MAX_OPTIONS + 8];
    if (s->option_count)
        memcpy(options, s->options, s->option_count * sizeof *options);
    if (t->nextra)
        memcpy(options + s->option_count, t->extra, t->nextra * sizeof *options);
    loom_search_config cfg = {
        .struct_size = sizeof cfg, .maximize = s->maximize, .max_experiments = s->max_jobs,
        .max_parallel = s->max_parallel,
        .seed = s->has_seed ? s->seed : (uint64_t)t->rec.created_at,
        .objective_metric = s->objective_metric, .param_count = s->param_count,
        .params = s->params, .option_count = s->option_count + t->nextra, .options = options,
        .experiment_count = s->experiment_count,
        .experiments = (const loom_value *const *)s->experiments};
    /* A Python optimizer reads its folder, the runner and its interpreter's tree. */
    char runner_dir[PATH_MAX], python_root[PATH_MAX];
    const char *reads[4] = {NULL};
    if (t->nextra) {
        snprintf(runner_dir, sizeof runner_dir, "%s", t->extra_text[2]);
        char *slash = strrchr(runner_dir, '/');
        if (slash)
            *slash = 0;
        /* .../bin/python -> ... */
        snprintf(python_root, sizeof python_root, "%s", t->extra_text[1]);
        for (int up = 0; up < 2 && (slash = strrchr(python_root, '/')) && slash != python_root; up++)
            *slash = 0;
        reads[0] = t->extra_text[0];
        reads[1] = runner_dir;
        reads[2] = python_root;
    }
    /* The search serves this task only: it runs under its owner's account,
     * writing only its own folder (user code, a Python optimizer, above all). */
    char work[PATH_MAX + 32];
    snprintf(work, sizeof work, "%s/search", t->dir);
    loom_error *unmade = fs_mkdir_p(work);
    if (unmade)
        return loom_err_recode(loom_err_wrap(unmade, "the search's folder"), LOOM_E_INTERNAL);
    /* its owner's account passes through the task's folder to its own */
    loom_error *shared = job_sandbox_share(t->dir, t->rec.user, t->rec.user_id);
    if (shared)
        return shared;
    search_client_spec spec = {.binary = svc->binary, .plugin_path = t->plugin_path,
                               .name = t->plugin, .output = output, .read_dirs = reads,
                               .deadline_ms = svc->opt.plugin_deadline_ms,
                               .owner = t->rec.user, .owner_id = t->rec.user_id,
                               .work_dir = work};
    loom_error *e = search_client_start(&spec, &cfg, &t->search);
    if (!e && t->rec.algo_state)
        e = search_client_load(t->search, t->rec.algo_state);
    return e;
}

/* ---- one pass ---------------------------------------------------------------- */

static void count(const hpo_task *t, uint32_t *live, uint32_t *ok, uint32_t *ended)
{
    *live = *ok = *ended = 0;
    for (size_t i = 0; i < t->nexps; i++) {
        const hpo_exp_rec *x = &t->exps[i];
        if (hpo_exp_is_live(x))
            (*live)++;
        else
            (*ended)++;
        if (x->state == HPO_EXP_FINISHED && x->has_metric)
            (*ok)++;
    }
}

static void finish_if_done(hpo_service *svc, hpo_task *t, uint32_t live, uint32_t ok)
{
    if (live > 0 || !t->rec.search_finished)
        return;
    char msg[512];
    uint32_t reported_nothing = 0;
    for (size_t i = 0; i < t->nexps; i++)
        reported_nothing += t->exps[i].state == HPO_EXP_FINISHED && !t->exps[i].has_metric;
    if (ok > 0) {
        snprintf(msg, sizeof msg, "%s", t->rec.message); /* why the search ended, if a limit */
        hpo_end_task(svc, t, HPO_TASK_FINISHED, msg);
    } else if (reported_nothing > 0) {
        snprintf(msg, sizeof msg, "no experiment reported the objective metric '%s' (%s)",
                 t->spec.objective_metric, t->exps[t->nexps - 1].message);
        hpo_end_task(svc, t, HPO_TASK_FAILED, msg);
    } else {
        snprintf(msg, sizeof msg, "all %zu experiment(s) failed%s%s", t->nexps,
                 t->nexps ? "; the last: " : "", t->nexps ? t->exps[t->nexps - 1].message : "");
        hpo_end_task(svc, t, HPO_TASK_FAILED, msg);
    }
}

static int check_limits(hpo_service *svc, hpo_task *t)
{
    int64_t now = time_now_ms();
    if (t->spec.max_run_time_s > 0 && !t->rec.search_finished &&
        now - t->rec.started_at >= t->spec.max_run_time_s * 1000) {
        t->rec.search_finished = 1;
        snprintf(t->rec.message, sizeof t->rec.message, "maxRunTime %llds reached",
                 (long long)t->spec.max_run_time_s);
        for (size_t i = 0; i < t->nexps; i++)
            if (hpo_exp_is_live(&t->exps[i]) && t->exps[i].exec_id[0])
                loom_err_free(exec_stop(svc->es, EXEC_ADMIN, t->exps[i].exec_id));
        save_task(svc, t);
    }
    if (t->spec.max_jobs && t->nexps >= t->spec.max_jobs && !t->rec.search_finished) {
        t->rec.search_finished = 1;
        snprintf(t->rec.message, sizeof t->rec.message, "maxJobNum %u reached", t->spec.max_jobs);
        save_task(svc, t);
    }
    if (t->failed_in_row >= HPO_MAX_FAILED_IN_ROW && !t->rec.search_finished) {
        t->rec.search_finished = 1;
        save_task(svc, t);
    }
    return 0;
}

/* RUNNING, or STOPPING until its experiments have ended. */
static int task_going(const hpo_task *t)
{
    return t->rec.state == HPO_TASK_RUNNING || t->rec.state == HPO_TASK_STOPPING;
}

int hpo_tick(hpo_service *svc, hpo_task *t)
{
    /* A stopping task needs no search: nothing more is asked of it. */
    if (!t->search && !t->stopping && t->rec.state != HPO_TASK_FAILED) {
        loom_error *e = start_search(svc, t);
        if (e) {
            char msg[700];
            loom_err_take(e, msg, sizeof msg);
            hpo_end_task(svc, t, HPO_TASK_FAILED, msg);
            return 1;
        }
        t->want_suggest = 1;
        if (t->rec.state == HPO_TASK_SUBMITTED) {
            t->rec.state = HPO_TASK_RUNNING;
            if (!t->rec.started_at)
                t->rec.started_at = time_now_ms();
            save_task(svc, t);
        }
    }
    for (size_t i = 0; i < t->nexps && task_going(t); i++) {
        hpo_exp_rec *x = &t->exps[i];
        if ((x->state == HPO_EXP_SUBMITTED || x->state == HPO_EXP_RUNNING) && x->exec_id[0])
            poll_experiment(svc, t, x);
        else if (x->state == HPO_EXP_ERROR && !x->observed)
            observe(svc, t, x, LOOM_EXPERIMENT_FAILED);
    }
    t->reconcile = 0;
    if (!task_going(t))
        return 1;
    check_limits(svc, t);
    uint32_t live, ok, ended;
    count(t, &live, &ok, &ended);
    if (t->stopping) {
        if (flush(svc, t) != 0)
            return 1;
        if (live == 0)
            hpo_end_task(svc, t, HPO_TASK_STOPPED, "stopped by request");
        return live == 0;
    }
    if (!t->rec.search_finished && !t->stopping && live < t->spec.max_parallel &&
        t->want_suggest) {
        uint32_t room = t->spec.max_parallel - live;
        if (t->spec.max_jobs && t->spec.max_jobs - t->nexps < room)
            room = t->spec.max_jobs - (uint32_t)t->nexps;
        search_outcome out;
        loom_error *e = search_client_suggest(t->search, t->rec.next_id, room, &out);
        if (e) {
            char msg[700];
            loom_err_take(e, msg, sizeof msg);
            hpo_end_task(svc, t, HPO_TASK_FAILED, msg);
            return 1;
        }
        /* Nothing proposed means "wait": ask again after a result. */
        t->want_suggest = out.nproposals > 0 || out.nstops > 0;
        int rc = apply_outcome(svc, t, &out);
        search_outcome_free(&out, t->spec.param_count);
        if (rc != 0)
            return 1;
    }
    if (flush(svc, t) != 0)
        return 1;
    for (size_t i = 0; i < t->nexps; i++)
        if (t->exps[i].state == HPO_EXP_NOTRUN && !t->stopping)
            submit_experiment(svc, t, &t->exps[i]);
    count(t, &live, &ok, &ended);
    finish_if_done(svc, t, live, ok);
    return !task_going(t);
}

/* hpo/hpo_view.c - what a client sees of tuning tasks (hpo.h), read from
 * the store, so a view never waits for the loop or a search plugin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpo/hpo_internal.h"
#include "util/fs.h"

typedef struct list_ctx {
    const char *owner;
    hpo_task_rec *rows;
    size_t n, cap;
    int failed;
} list_ctx;

static void add_row(const hpo_task_rec *r, void *arg)
{
    list_ctx *c = arg;
    if (c->owner && strcmp(c->owner, r->user))
        return;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        hpo_task_rec *grown = realloc(c->rows, cap * sizeof *grown);
        if (!grown) {
            c->failed = 1;
            return;
        }
        c->rows = grown;
        c->cap = cap;
    }
    hpo_task_rec *t = &c->rows[c->n++];
    *t = *r;
    t->task_json = NULL;
    t->algo_state = NULL;
}

loom_error *hpo_list(hpo_service *svc, const char *owner, hpo_task_rec **out, size_t *count)
{
    list_ctx c = {.owner = owner};
    loom_error *e = store_hpo_task_each(svc->st, add_row, &c);
    if (!e && c.failed)
        e = loom_err(LOOM_E_INTERNAL, "out of memory");
    if (e) {
        free(c.rows);
        return e;
    }
    *out = c.rows;
    *count = c.n;
    return NULL;
}

void hpo_task_recs_free(hpo_task_rec *t, size_t count)
{
    for (size_t i = 0; i < count; i++)
        store_hpo_task_free(&t[i]);
    free(t);
}

static void fill_values(const hpo_task_spec *s, hpo_exp_view *x)
{
    cJSON *a = cJSON_Parse(x->rec.values_json ? x->rec.values_json : "[]");
    x->values = calloc(s->param_count + 1, sizeof *x->values);
    for (uint32_t i = 0; x->values && i < s->param_count; i++) {
        hpo_value_view *v = &x->values[x->nvalues++];
        loom_value val;
        snprintf(v->name, sizeof v->name, "%s", s->params[i].name);
        snprintf(v->type, sizeof v->type, "%s", hpo_type_name(s->params[i].type));
        if (hpo_value_from_json(&s->params[i], cJSON_GetArrayItem(a, (int)i), &val))
            hpo_value_format(&val, v->text, sizeof v->text);
    }
    cJSON_Delete(a);
}

loom_error *hpo_describe(hpo_service *svc, const char *owner, const char *name, hpo_task_view *out)
{
    memset(out, 0, sizeof *out);
    out->best = -1;
    loom_error *e = store_hpo_task_get(svc->st, name, &out->rec);
    if (e)
        return e;
    if (owner && strcmp(owner, out->rec.user)) {
        store_hpo_task_free(&out->rec);
        return loom_err(LOOM_E_NOT_FOUND, "no tuning task \"%s\"", name);
    }
    hpo_task_spec spec;
    e = wmla_task_parse(out->rec.task_json, strlen(out->rec.task_json), &spec);
    if (e) {
        store_hpo_task_free(&out->rec);
        return loom_err_recode(loom_err_wrap(e, "stored task %s", name), LOOM_E_INTERNAL);
    }
    snprintf(out->algorithm, sizeof out->algorithm, "%s", spec.algorithm);
    snprintf(out->objective_metric, sizeof out->objective_metric, "%s", spec.objective_metric);
    out->maximize = spec.maximize;
    out->planned = spec.experiment_count && (!spec.max_jobs || spec.max_jobs > spec.experiment_count)
                       ? spec.experiment_count
                       : spec.max_jobs;
    hpo_exp_rec *xs = NULL;
    size_t n = 0;
    e = store_hpo_exp_list(svc->st, name, &xs, &n);
    out->exps = calloc(n + 1, sizeof *out->exps);
    if (!e && !out->exps)
        e = loom_err(LOOM_E_INTERNAL, "out of memory");
    for (size_t i = 0; !e && i < n; i++) {
        hpo_exp_view *x = &out->exps[out->nexps++];
        x->rec = xs[i];
        xs[i].values_json = NULL;
        fill_values(&spec, x);
        hpo_exp_state s = x->rec.state;
        if (hpo_exp_is_live(&x->rec))
            out->running += s != HPO_EXP_NOTRUN;
        else if (s == HPO_EXP_FINISHED)
            out->complete++;
        else
            out->failed++;
        if (s == HPO_EXP_FINISHED && x->rec.has_metric &&
            (out->best < 0 || (spec.maximize ? x->rec.metric > out->exps[out->best].rec.metric
                                             : x->rec.metric < out->exps[out->best].rec.metric)))
            out->best = (int)i;
    }
    store_hpo_exps_free(xs, n);
    hpo_task_spec_free(&spec);
    int64_t end = out->rec.ended_at ? out->rec.ended_at : time_now_ms();
    out->duration_ms = out->rec.started_at ? end - out->rec.started_at : 0;
    if (e)
        hpo_task_view_free(out);
    return e;
}

void hpo_task_view_free(hpo_task_view *v)
{
    for (size_t i = 0; v->exps && i < v->nexps; i++) {
        store_hpo_exp_free(&v->exps[i].rec);
        free(v->exps[i].values);
    }
    free(v->exps);
    store_hpo_task_free(&v->rec);
    memset(v, 0, sizeof *v);
}

loom_error *hpo_exec_tasks(hpo_service *svc, hpo_exec_task **out, size_t *count)
{
    return store_hpo_exec_tasks(svc->st, out, count);
}

static int by_exec_id(const void *key, const void *item)
{
    return strcmp(key, ((const hpo_exec_task *)item)->exec_id);
}

const hpo_exec_task *hpo_exec_task_find(const hpo_exec_task *all, size_t count,
                                        const char *exec_id)
{
    return all && count ? bsearch(exec_id, all, count, sizeof *all, by_exec_id) : NULL;
}

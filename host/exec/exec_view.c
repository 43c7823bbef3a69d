/* exec/exec_view.c - what a client sees of execs: one exec or the list,
 * as its owner or an administrator may see it (pending reasons without
 * other users' exec ids), and where a worker's log is. See exec.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "util/fs.h"
#include "util/user_tree.h"

char *exec_folder_read(const char *result_dir, const char *rel, size_t max)
{
    char *text = NULL;
    loom_err_free(utree_read_file_in(result_dir, rel, max, &text, NULL));
    return text;
}

void exec_reason_text(const sched_reason *r, int (*may_see)(const char *id, void *ctx), void *ctx,
                      char *buf, size_t len)
{
    bool shown = r->holder[0] && (!may_see || may_see(r->holder, ctx));
    sched_reason_text(r, shown, buf, len);
}

typedef struct reason_viewer {
    exec_service *es;
    int64_t owner;
} reason_viewer;

/* Whether the viewer may see the running exec `id`. Call with es->lock. */
static int viewer_sees(const char *id, void *ctx)
{
    const reason_viewer *rv = ctx;
    const running_exec *r = exec_find_running(rv->es, id);
    return r && exec_visible(rv->owner, r->rec.user_id);
}

/* Why a pending exec waits, as `owner` (EXEC_ADMIN: an administrator) may see
 * it, so exec ids do not leak. Call with es->lock. */
static void pending_reason(exec_service *es, int64_t owner, const char *id, char *buf,
                           size_t len)
{
    reason_viewer rv = {es, owner};
    sched_reason r;
    if (len)
        buf[0] = '\0';
    if (sched_service_pending_reason(es->sched, id, &r))
        exec_reason_text(&r, owner == EXEC_ADMIN ? NULL : viewer_sees, &rv, buf, len);
}

/* Fills a view of the exec (running: r set) as `owner` may see it. Call
 * with es->lock. */
static void describe(exec_service *es, int64_t owner, const store_exec *e,
                     const running_exec *r, exec_view *v)
{
    memset(v, 0, sizeof *v);
    v->rec = *e;
    v->running = r != NULL;
    if (r && r->pending)
        pending_reason(es, owner, e->id, v->pending_reason, sizeof v->pending_reason);
    if (r) {
        int n = sched_service_job_devices(es->sched, e->id, v->slots, 64, NULL, NULL);
        v->nslots = n < 0 ? 0 : n > 64 ? 64 : n;
        v->handover_ms = -1;
        if (sched_service_job_handover(es->sched, e->id, v->handover_from,
                                       sizeof v->handover_from, &v->handover_ms)) {
            reason_viewer rv = {es, owner};
            if (owner && !viewer_sees(v->handover_from, &rv))
                v->handover_from[0] = '\0';
        }
    }
    if (r && r->edt) {
        v->training = edt_describe(r->edt);
    } else if (!r) {
        char *text = exec_folder_read(e->result_dir, TRAINER_SUMMARY, 16u << 20);
        v->training = text ? cJSON_Parse(text) : NULL;
        free(text);
    }
    /* What it runs under (launch-style and elastic), or as the host sets
     * it now. */
    if (r && !r->job && (r->edt || r->nworkers > 0)) {
        v->limits = r->limits;
        v->has_limits = 1;
    } else if (!r && !v->training) {
        exec_job_limits_for(es, e, e->num_workers, &v->limits);
        v->has_limits = 1;
    }
    if (r && !r->edt && r->workers && r->nworkers > 0) {
        v->workers = calloc((size_t)r->nworkers, sizeof *v->workers);
        for (int i = 0; v->workers && i < r->nworkers; i++)
            v->workers[i] = (exec_worker_view){.rank = i, .pid = (int)r->workers[i].pid,
                                               .exited = r->workers[i].done};
        v->nworkers = v->workers ? r->nworkers : 0;
    }
}

void exec_view_free(exec_view *v)
{
    if (!v)
        return;
    free(v->workers);
    cJSON_Delete(v->training);
    v->workers = NULL;
    v->training = NULL;
}

void exec_views_free(exec_view *v, size_t count)
{
    for (size_t i = 0; v && i < count; i++)
        exec_view_free(&v[i]);
    free(v);
}

/* The Python the job ran, as RESULT_DIR/log/python says (the host writes
 * it for launch-style Python jobs, the edtPyTorch adapter for its own).
 * One exec's view only: a listing would read a file per exec. */
static void read_python(exec_view *v)
{
    char *python = exec_folder_read(v->rec.result_dir, "log/python", sizeof v->python - 1);
    if (python) {
        python[strcspn(python, "\n")] = '\0';
        snprintf(v->python, sizeof v->python, "%s", python);
        free(python);
    }
}

loom_error *exec_describe(exec_service *es, int64_t owner, const char *id, exec_view *out)
{
    pthread_mutex_lock(&es->lock);
    store_exec rec;
    running_exec *r = NULL;
    int found = exec_lookup(es, owner, id, &r, &rec);
    if (found)
        describe(es, owner, r ? &r->rec : &rec, r, out);
    pthread_mutex_unlock(&es->lock);
    if (found) {
        read_python(out);
        loom_err_free(store_exec_warnings_get(es->st, out->rec.id, out->warnings, sizeof out->warnings));
    }
    return found ? NULL : loom_err(LOOM_E_NOT_FOUND, "no exec \"%s\"", id);
}

typedef struct list_ctx {
    int64_t owner;
    store_exec *items;
    size_t n, cap;
    int failed;
} list_ctx;

static void add_to_list(const store_exec *e, void *ctx)
{
    list_ctx *l = ctx;
    if (l->failed || !exec_visible(l->owner, e->user_id))
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        store_exec *grown = realloc(l->items, cap * sizeof *grown);
        if (!grown) {
            l->failed = 1;
            return;
        }
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n++] = *e;
}

loom_error *exec_list(exec_service *es, int64_t owner, exec_view **out, size_t *count)
{
    list_ctx l = {.owner = owner};
    *out = NULL;
    *count = 0;
    pthread_mutex_lock(&es->lock);
    loom_error *err = store_exec_each(es->st, add_to_list, &l);
    if (!err && l.failed)
        err = loom_err(LOOM_E_INTERNAL, "execs: out of memory");
    exec_view *v = err ? NULL : calloc(l.n ? l.n : 1, sizeof *v);
    if (!err && !v)
        err = loom_err(LOOM_E_INTERNAL, "execs: out of memory");
    for (size_t i = 0; !err && i < l.n; i++)
        describe(es, owner, &l.items[i], exec_find_running(es, l.items[i].id), &v[i]);
    pthread_mutex_unlock(&es->lock);
    free(l.items);
    if (err)
        return err;
    *out = v;
    *count = l.n;
    return NULL;
}

int exec_visible_to(exec_service *es, int64_t owner, const char *id)
{
    store_exec rec;
    running_exec *r = NULL;
    pthread_mutex_lock(&es->lock);
    int found = exec_lookup(es, owner, id, &r, &rec);
    pthread_mutex_unlock(&es->lock);
    return found;
}

loom_error *exec_log_open(exec_service *es, int64_t owner, const char *id, int worker,
                          const char *stream, int *fd)
{
    store_exec rec;
    running_exec *r = NULL;
    pthread_mutex_lock(&es->lock);
    int found = exec_lookup(es, owner, id, &r, &rec);
    if (found && r)
        rec = r->rec;
    pthread_mutex_unlock(&es->lock);
    if (!found)
        return loom_err(LOOM_E_NOT_FOUND, "no exec \"%s\"", id);
    if (strcmp(stream, "stdout") != 0 && strcmp(stream, "stderr") != 0)
        return loom_err(LOOM_E_INVALID, "stream: expected stdout or stderr, got \"%s\"", stream);
    if (worker != -1 && (worker < 0 || worker >= rec.num_workers))
        return loom_err(LOOM_E_INVALID, "worker: exec \"%s\" has workers 0 to %d", id,
                        rec.num_workers - 1);
    char rel[64];
    if (worker == -1) /* the training driver's log */
        snprintf(rel, sizeof rel, "log/driver/%s", stream);
    else
        snprintf(rel, sizeof rel, "log/worker-%d/%s", worker, stream);
    loom_error *e = utree_open_read_in(rec.result_dir, rel, fd);
    return e ? loom_err_wrap(e, "exec %s: the log", id) : NULL;
}

/* "worker-N" or "driver": a folder of the host's logs under log/. */
static int is_log_folder(const char *name, size_t n)
{
    if (n == 6 && strncmp(name, "driver", 6) == 0)
        return 1;
    if (n <= 7 || strncmp(name, "worker-", 7) != 0)
        return 0;
    for (size_t i = 7; i < n; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    return 1;
}

int exec_result_leaves_out(const void *ctx, const char *rel, int is_dir)
{
    (void)ctx;
    if (is_dir)
        return strcmp(rel, "_submitted_code") == 0 || strcmp(rel, "tmp") == 0;
    if (strcmp(rel, "log/python") == 0 || strncmp(rel, "log/.edtPyTorch-", 16) == 0)
        return 1;
    /* log/worker-N/plugin: which plugin a worker runs, a binary marker */
    if (strncmp(rel, "log/", 4) != 0)
        return 0;
    const char *folder = rel + 4, *slash = strchr(folder, '/');
    return slash && is_log_folder(folder, (size_t)(slash - folder)) &&
           strcmp(slash + 1, "plugin") == 0;
}

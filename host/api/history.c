/* api/history.c - see history.h. */
#include "api/history.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/fs.h"
#include "util/log.h"

/* A training exec followed: what of its progress is written already. */
typedef struct followed_exec {
    char id[64];
    int64_t iteration; /* the last iteration written (-1: none) */
    int epochs;        /* epochsDone entries written */
    int seen;          /* held a device this tick */
} followed_exec;

typedef struct followed_model {
    char name[64];
    uint64_t served;
    int64_t at_ms;
} followed_model;

struct api_history {
    api_services *d;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop, started;
    unsigned ticks;
    /* each slot's holder as last written ("" free); nslots of them */
    char (*holders)[64];
    size_t nslots;
    followed_exec execs[HISTORY_MAX_EXECS];
    size_t nexecs;
    followed_model models[HISTORY_MAX_MODELS];
    size_t nmodels;
};

static const char *holder_kind(int32_t kind)
{
    return kind == SCHED_JOB_KERNEL ? "model" : kind == SCHED_JOB_EXPERIMENT ? "tuning" : "exec";
}

static void write_failed(const char *what, loom_error *e)
{
    if (e)
        log_warn("history: cannot record %s: %s", what, loom_err_message(e));
    loom_err_free(e);
}

static followed_exec *follow(api_history *h, const char *id)
{
    for (size_t i = 0; i < h->nexecs; i++)
        if (strcmp(h->execs[i].id, id) == 0)
            return &h->execs[i];
    if (h->nexecs == HISTORY_MAX_EXECS)
        return NULL;
    followed_exec *f = &h->execs[h->nexecs++];
    memset(f, 0, sizeof *f);
    snprintf(f->id, sizeof f->id, "%s", id);
    f->iteration = -1;
    return f;
}

static void add_metric(api_history *h, const char *exec, int64_t now, int64_t step, int epoch,
                       const char *name, double value)
{
    store_history_metric m = {.t = now, .step = step, .epoch = epoch, .value = value};
    snprintf(m.name, sizeof m.name, "%s", name);
    write_failed("a metric", store_history_metric_add(h->d->st, &h->d->history_bounds, exec, &m));
}

/* What the exec's progress holds that is not written yet: this iteration's
 * running loss, and each epoch finished since. */
static void sample_exec(api_history *h, followed_exec *f, int64_t now)
{
    exec_view v;
    if (loom_err_take(exec_describe(h->d->execs, EXEC_ADMIN, f->id, &v), NULL, 0) != LOOM_OK)
        return;
    const cJSON *t = v.training;
    /* every iteration's running loss since the last look (the trainer
     * keeps the last ones), an exec that ended since included */
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(t, "recentLosses"))
    {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(r, "iteration");
        const cJSON *ep = cJSON_GetObjectItemCaseSensitive(r, "epoch");
        const cJSON *loss = cJSON_GetObjectItemCaseSensitive(r, "loss");
        if (!cJSON_IsNumber(it) || !cJSON_IsNumber(loss) || (int64_t)it->valuedouble <= f->iteration)
            continue;
        f->iteration = (int64_t)it->valuedouble;
        add_metric(h, f->id, now, f->iteration, cJSON_IsNumber(ep) ? ep->valueint + 1 : 0,
                   "train_loss", loss->valuedouble);
    }
    const cJSON *done = cJSON_GetObjectItemCaseSensitive(t, "epochsDone");
    int n = cJSON_GetArraySize(done);
    for (int i = f->epochs; i < n; i++) {
        const cJSON *e = cJSON_GetArrayItem(done, i);
        const cJSON *train = cJSON_GetObjectItemCaseSensitive(e, "train");
        const cJSON *num = cJSON_GetObjectItemCaseSensitive(e, "epoch");
        int at = cJSON_IsNumber(num) ? num->valueint : i + 1;
        static const char *const names[][2] = {{"loss", "epoch_train_loss"},
                                               {"accuracy", "epoch_train_accuracy"}};
        for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
            const cJSON *x = cJSON_GetObjectItemCaseSensitive(train, names[k][0]);
            if (cJSON_IsNumber(x))
                add_metric(h, f->id, now, -1, at, names[k][1], x->valuedouble);
        }
        const cJSON *sps = cJSON_GetObjectItemCaseSensitive(e, "samplesPerSecond");
        if (cJSON_IsNumber(sps))
            add_metric(h, f->id, now, -1, at, "epoch_samples_per_second", sps->valuedouble);
    }
    if (n > f->epochs) {
        /* the last test evaluation, at the newest epoch done (the view
         * keeps only the last one) */
        const cJSON *test = cJSON_GetObjectItemCaseSensitive(t, "testMetrics");
        const cJSON *m;
        cJSON_ArrayForEach(m, test)
        {
            char name[STORE_HISTORY_NAME_MAX];
            if (cJSON_IsNumber(m) && m->string &&
                (size_t)snprintf(name, sizeof name, "epoch_test_%s", m->string) < sizeof name)
                add_metric(h, f->id, now, -1, n, name, m->valuedouble);
        }
        f->epochs = n;
    }
    exec_view_free(&v);
}

static bool holders_fit(api_history *h, size_t n)
{
    if (n <= h->nslots)
        return true;
    char(*grown)[64] = realloc(h->holders, n * sizeof *h->holders);
    if (!grown)
        return false;
    /* "?": unknown, so that the first look writes every device */
    for (size_t i = h->nslots; i < n; i++)
        snprintf(grown[i], sizeof grown[i], "?");
    h->holders = grown;
    h->nslots = n;
    return true;
}

/* `slot` is held by `holder` ("" free) since t: written when it is news. */
static void device_held(api_history *h, int32_t slot, const char *holder, const char *user,
                        int32_t kind, int64_t t)
{
    if (slot < 0 || !holders_fit(h, (size_t)slot + 1))
        return;
    if (strcmp(h->holders[slot], holder) != 0) {
        store_history_device row = {.t = t, .slot = slot};
        snprintf(row.holder, sizeof row.holder, "%s", holder);
        snprintf(row.kind, sizeof row.kind, "%s", holder[0] ? holder_kind(kind) : "");
        snprintf(row.user, sizeof row.user, "%s", user);
        write_failed("a device's holder",
                     store_history_device_add(h->d->st, &h->d->history_bounds, &row));
        snprintf(h->holders[slot], sizeof h->holders[slot], "%s", holder);
    }
    if (holder[0] && kind != SCHED_JOB_KERNEL) {
        followed_exec *f = follow(h, holder);
        if (f)
            f->seen = 1;
    }
}

/* Every change of holder since the last tick, at the time it happened (a
 * job that held devices for a few ms between two ticks included), then
 * the devices as they are now: news only when changes were lost, and how
 * an exec that holds its devices unchanged stays followed. */
static void sample_devices(api_history *h, int64_t now)
{
    for (size_t i = 0; i < h->nexecs; i++)
        h->execs[i].seen = 0;
    owner_change changes[64];
    size_t got;
    do {
        got = sched_service_owner_changes(h->d->sched, changes, 64, NULL);
        for (size_t i = 0; i < got; i++)
            device_held(h, changes[i].slot, changes[i].holder, changes[i].user, changes[i].kind,
                        changes[i].t_ms);
    } while (got == 64);
    sched_slot_view *v = NULL;
    size_t n = 0;
    if (loom_err_take(sched_service_slots(h->d->sched, &v, &n), NULL, 0) != LOOM_OK)
        return;
    for (size_t i = 0; i < n; i++)
        device_held(h, v[i].slot, v[i].owner, v[i].owner_user, v[i].owner_kind, now);
    free(v);
}

static void sample_execs(api_history *h, int64_t now)
{
    for (size_t i = 0; i < h->nexecs;) {
        sample_exec(h, &h->execs[i], now);
        /* one that holds no device any more had its last look: forgotten */
        if (!h->execs[i].seen)
            h->execs[i] = h->execs[--h->nexecs];
        else
            i++;
    }
}

static void sample_models(api_history *h, int64_t now)
{
    infer_model_view *v = NULL;
    size_t n = 0;
    if (loom_err_take(infer_list(h->d->infer, NULL, &v, &n), NULL, 0) != LOOM_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        if (v[i].state == MODEL_STOPPED)
            continue;
        followed_model *m = NULL;
        for (size_t k = 0; k < h->nmodels && !m; k++)
            if (strcmp(h->models[k].name, v[i].name) == 0)
                m = &h->models[k];
        if (!m && h->nmodels < HISTORY_MAX_MODELS) {
            m = &h->models[h->nmodels++];
            snprintf(m->name, sizeof m->name, "%s", v[i].name);
            m->served = v[i].stats.served;
            m->at_ms = now;
            continue; /* a rate needs two looks */
        }
        if (!m || now <= m->at_ms)
            continue;
        uint64_t served = v[i].stats.served >= m->served ? v[i].stats.served - m->served : 0;
        store_history_model row = {.t = now,
                                   .requests_per_s = (double)served * 1000.0 / (double)(now - m->at_ms),
                                   .instances = v[i].stats.instances};
        write_failed("a model's rate",
                     store_history_model_add(h->d->st, &h->d->history_bounds, m->name, &row));
        m->served = v[i].stats.served;
        m->at_ms = now;
    }
    for (size_t i = 0; i < n; i++)
        infer_model_view_clear(&v[i]);
    free(v);
}

void api_history_tick(api_history *h)
{
    int64_t now = time_now_ms();
    sample_devices(h, now);
    sample_execs(h, now);
    if (h->ticks++ % HISTORY_MODEL_EVERY == 0)
        sample_models(h, now);
}

static void *run(void *arg)
{
    api_history *h = arg;
    pthread_mutex_lock(&h->lock);
    while (!h->stop) {
        pthread_mutex_unlock(&h->lock);
        api_history_tick(h);
        pthread_mutex_lock(&h->lock);
        struct timespec until = time_after_ms(CLOCK_REALTIME, HISTORY_TICK_MS);
        while (!h->stop && pthread_cond_timedwait(&h->wake, &h->lock, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

loom_error *api_history_start(api_services *d, api_history **out)
{
    *out = NULL;
    api_history *h = calloc(1, sizeof *h);
    if (!h)
        return loom_err(LOOM_E_INTERNAL, "history: out of memory");
    h->d = d;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->wake, NULL);
    if (pthread_create(&h->thread, NULL, run, h) != 0) {
        api_history_stop(h);
        return loom_err(LOOM_E_INTERNAL, "history: cannot start its thread");
    }
    h->started = 1;
    *out = h;
    return NULL;
}

void api_history_stop(api_history *h)
{
    if (!h)
        return;
    if (h->started) {
        pthread_mutex_lock(&h->lock);
        h->stop = 1;
        pthread_cond_signal(&h->wake);
        pthread_mutex_unlock(&h->lock);
        pthread_join(h->thread, NULL);
    }
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->wake);
    free(h->holders);
    free(h);
}

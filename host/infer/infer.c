/* infer/infer.c - see infer.h. */
#include "infer/infer.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "infer/v2_codec.h"
#include "store/store_infer.h"
#include "util/fs.h"
#include "util/job_sandbox.h"
#include "util/log.h"
#include "util/user_tree.h"

typedef struct running {
    char name[64], owner[64];
    char kernel[LOOM_NAME_MAX]; /* the registered kernel it pins, or "" */
    model_service *r;
    struct running *next;
} running;

struct infer_service {
    store *st;
    sched_service *sched;
    registry *reg;
    char home[PATH_MAX], binary[PATH_MAX], plugin_dir[PATH_MAX];
    pthread_mutex_t admin;   /* deploy, start, stop, undeploy, profile: one at a time */
    pthread_rwlock_t routes; /* the running list: requests read, start/stop write */
    running *running;
    pthread_t restarter;
    int restarter_live;
};

void infer_model_view_clear(infer_model_view *v)
{
    free(v->model_json);
    free(v->profile_json);
    v->model_json = v->profile_json = NULL;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int visible(const char *owner, const infer_record *rec)
{
    return !owner || strcmp(owner, rec->owner) == 0;
}

/* The record of a model the caller may see, or LOOM_E_NOT_FOUND. */
static loom_error *lookup(infer_service *s, const char *owner, const char *name,
                          infer_record *rec)
{
    loom_error *e = store_model_get(s->st, name, rec);
    if (!e && !visible(owner, rec)) {
        store_model_clear(rec);
        e = loom_err(LOOM_E_NOT_FOUND, "no model named \"%s\"", name);
    }
    return e;
}

static running *find_running(infer_service *s, const char *name)
{
    for (running *m = s->running; m; m = m->next)
        if (strcmp(m->name, name) == 0)
            return m;
    return NULL;
}

static void model_paths(const infer_service *s, const char *name, char *dir, char *model,
                        char *work)
{
    snprintf(dir, PATH_MAX, "%s/models/%s", s->home, name);
    snprintf(model, PATH_MAX, "%s/models/%s/model", s->home, name);
    snprintf(work, PATH_MAX, "%s/models/%s/work", s->home, name);
}

/* A model's folders: its owner's kernels read its files, write its work
 * folder, and no other account reaches either (README's home table). */
static loom_error *keep_private(const infer_service *s, const char *name, const char *owner)
{
    char dir[PATH_MAX], model[PATH_MAX], work[PATH_MAX];
    model_paths(s, name, dir, model, work);
    loom_error *e = fs_mkdir_p(work);
    if (e)
        return loom_err_recode(e, LOOM_E_INTERNAL);
    if (chmod(work, 0700) != 0 || chmod(dir, 0711) != 0)
        return loom_err_sys(LOOM_E_INTERNAL, errno, "cannot chmod %s", work);
    return job_sandbox_share(model, owner, 0);
}

/* ---- registered kernels ------------------------------------------------------------ */

/* so, lua, ffi, native: a kernel registered under one of these names
 * (the native one is) is reached by that runtime, not by name. */
static int reserved_runtime(const char *name)
{
    for (int r = 0; r < MODEL_RUNTIME_REGISTERED; r++)
        if (strcasecmp(name, model_runtime_name((model_runtime)r)) == 0)
            return 1;
    return 0;
}

/* "a, b, c": the registered kernels' names, for an error that says what
 * model.json's runtime may name. */
static void registered_names(registry *reg, char *buf, size_t len)
{
    size_t n = reg ? registry_list(reg, LOOM_KIND_KERNEL, NULL, 0) : 0;
    registry_entry *all = n ? calloc(n, sizeof *all) : NULL;
    n = all ? registry_list(reg, LOOM_KIND_KERNEL, all, n) : 0;
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && used < len; i++)
        if (all[i].loaded && !reserved_runtime(all[i].name) &&
            (strcmp(all[i].format, "so") == 0 || strcmp(all[i].format, "lua") == 0))
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                                     all[i].name);
    if (!buf[0])
        snprintf(buf, len, "none");
    free(all);
}

/* How many kernels the file at `path` registered: `loom kernel run` serves
 * a file that registers one. */
static size_t kernels_in_file(registry *reg, const char *path)
{
    size_t n = registry_list(reg, LOOM_KIND_KERNEL, NULL, 0), in_file = 0;
    registry_entry *all = n ? calloc(n, sizeof *all) : NULL;
    n = all ? registry_list(reg, LOOM_KIND_KERNEL, all, n) : 0;
    for (size_t i = 0; i < n; i++)
        in_file += strcmp(all[i].path, path) == 0;
    free(all);
    return in_file;
}

/* A registered kernel's name (model.json's runtime) resolved to its file:
 * spec becomes a so or lua model of that file, and the entry stays pinned
 * (registry_release(s->reg, LOOM_KIND_KERNEL, pinned)) so the kernel cannot
 * be removed while a model serves it. Refused with what is registered. */
static loom_error *resolve_registered(infer_service *s, model_spec *spec, char *pinned,
                                      size_t pinned_len)
{
    registry_entry k;
    if (reserved_runtime(spec->kernel_name))
        return loom_err(LOOM_E_INVALID, "model.json: runtime: \"%s\": runtimes are spelt in "
                        "lower case (so, lua, ffi, native)", spec->kernel_name);
    if (!s->reg || registry_acquire(s->reg, LOOM_KIND_KERNEL, spec->kernel_name, &k) != 0) {
        char names[1024];
        registered_names(s->reg, names, sizeof names);
        return loom_err(LOOM_E_INVALID, "model.json: runtime: \"%s\" is neither so, lua, ffi "
                        "nor native, and no kernel of that name is registered (registered "
                        "kernels: %s; loom kernel add FILE registers one)",
                        spec->kernel_name, names);
    }
    loom_error *e = NULL;
    int lua = strcmp(k.format, "lua") == 0;
    if (!lua && strcmp(k.format, "so") != 0)
        e = loom_err(LOOM_E_INVALID, "model.json: runtime: \"%s\" is the host's own %s "
                     "kernel: say runtime \"%s\" with its fields", spec->kernel_name, k.format,
                     k.name);
    else if (kernels_in_file(s->reg, k.path) != 1)
        e = loom_err(LOOM_E_INVALID, "model.json: runtime: kernel \"%s\"'s file registers "
                     "%zu kernels; a model is served by a file that registers one",
                     spec->kernel_name, kernels_in_file(s->reg, k.path));
    if (e) {
        registry_release(s->reg, LOOM_KIND_KERNEL, k.name);
        return e;
    }
    spec->runtime = lua ? MODEL_RUNTIME_LUA : MODEL_RUNTIME_SO;
    snprintf(spec->kernel_path, sizeof spec->kernel_path, "%s", k.path);
    if (pinned)
        snprintf(pinned, pinned_len, "%s", k.name);
    else
        registry_release(s->reg, LOOM_KIND_KERNEL, k.name);
    return NULL;
}

/* ---- deploy, profile, undeploy --------------------------------------------------- */

/* A model's folder holds its kernels' work/ folder, which they write as the
 * owner's uid: removed through util/user_tree, following no link. */
static void remove_model_dir(const char *dir)
{
    loom_error *e = utree_delete(dir);
    if (e)
        log_warn("cannot remove the model folder: %s", loom_err_message(e));
    loom_err_free(e);
}

static loom_error *check_profile_text(const char *text, const char *source, char **normalized)
{
    cJSON *j = cJSON_Parse(text);
    if (!j)
        return loom_err(LOOM_E_INVALID, "%s: not JSON", source);
    model_profile p;
    loom_error *e = model_profile_parse(j, source, &p);
    if (!e) {
        *normalized = cJSON_PrintUnformatted(j);
        if (!*normalized)
            e = loom_err(LOOM_E_INTERNAL, "out of memory");
    }
    cJSON_Delete(j);
    return e;
}

loom_error *infer_deploy(infer_service *s, const char *user, const char *staged,
                         const char *profile_json, char *name_out, size_t name_len)
{
    model_spec spec;
    char *model_json = NULL, *profile = NULL;
    loom_error *e = model_spec_read(staged, &spec, &model_json);
    if (!e && spec.runtime == MODEL_RUNTIME_REGISTERED)
        e = resolve_registered(s, &spec, NULL, 0);
    if (!e && profile_json)
        e = check_profile_text(profile_json, "profile", &profile);
    if (!e && !profile) {
        cJSON *def = model_profile_default_json(spec.name);
        profile = cJSON_PrintUnformatted(def);
        cJSON_Delete(def);
    }
    if (e) {
        free(model_json);
        free(profile);
        return e;
    }
    char dir[PATH_MAX], model[PATH_MAX], work[PATH_MAX];
    model_paths(s, spec.name, dir, model, work);
    infer_record rec = {.model_json = model_json, .profile_json = profile,
                        .created_at = wall_ms()};
    snprintf(rec.name, sizeof rec.name, "%s", spec.name);
    snprintf(rec.owner, sizeof rec.owner, "%s", user);
    snprintf(rec.dir, sizeof rec.dir, "%s", dir);
    pthread_mutex_lock(&s->admin);
    infer_record old;
    loom_error *absent = store_model_get(s->st, spec.name, &old);
    if (!absent) {
        store_model_clear(&old);
        e = loom_err(LOOM_E_CONFLICT, "a model named \"%s\" is already deployed: undeploy it "
                     "first, or give model.json another name", spec.name);
    } else {
        loom_err_free(absent);
        remove_model_dir(dir); /* left by a deploy that failed half-way */
        if ((e = fs_mkdir_p(work)) != NULL)
            e = loom_err_recode(loom_err_wrap(e, "cannot place the model"), LOOM_E_INTERNAL);
        else if (rename(staged, model) != 0)
            e = loom_err_sys(LOOM_E_INTERNAL, errno, "cannot place the model in %s", dir);
        else if ((e = keep_private(s, spec.name, user)) == NULL)
            e = store_model_insert(s->st, &rec);
        if (e)
            remove_model_dir(dir);
    }
    pthread_mutex_unlock(&s->admin);
    if (!e)
        snprintf(name_out, name_len, "%s", spec.name);
    store_model_clear(&rec);
    return e;
}

/* The stored profile `stored` with `patch` merged in, checked, as text. */
static loom_error *merged_profile(const char *stored, const char *patch_json, char **out)
{
    *out = NULL;
    cJSON *patch = cJSON_Parse(patch_json);
    if (!patch)
        return loom_err(LOOM_E_INVALID, "profile: not JSON");
    cJSON *profile = cJSON_Parse(stored);
    loom_error *e = profile ? model_profile_merge(profile, patch, "profile")
                            : loom_err(LOOM_E_INTERNAL, "the stored profile is not JSON");
    model_profile checked;
    if (!e)
        e = model_profile_parse(profile, "profile", &checked);
    if (!e && !(*out = cJSON_PrintUnformatted(profile)))
        e = loom_err(LOOM_E_INTERNAL, "out of memory");
    cJSON_Delete(profile);
    cJSON_Delete(patch);
    return e;
}

loom_error *infer_set_profile(infer_service *s, const char *owner, const char *name,
                              const char *profile_json)
{
    char *profile = NULL;
    infer_record rec;
    pthread_mutex_lock(&s->admin);
    loom_error *e = lookup(s, owner, name, &rec);
    if (!e) {
        if (rec.started || find_running(s, name))
            e = loom_err(LOOM_E_CONFLICT, "model \"%s\" is started: stop it before changing "
                         "its profile", name);
        else if ((e = merged_profile(rec.profile_json, profile_json, &profile)) == NULL)
            e = store_model_set_profile(s->st, name, profile);
        store_model_clear(&rec);
    }
    pthread_mutex_unlock(&s->admin);
    free(profile);
    return e;
}

/* ---- start and stop ------------------------------------------------------------- */

/* Frees a running entry taken out of the list, unpinning its kernel. */
static void release_running(infer_service *s, running *m)
{
    if (m->kernel[0])
        registry_release(s->reg, LOOM_KIND_KERNEL, m->kernel);
    free(m);
}

/* Starts the service of `rec`. Call with s->admin. */
static loom_error *start_locked(infer_service *s, const infer_record *rec)
{
    if (find_running(s, rec->name))
        return loom_err(LOOM_E_CONFLICT, "model \"%s\" is already started", rec->name);
    char dir[PATH_MAX], model_dir[PATH_MAX], work[PATH_MAX];
    model_paths(s, rec->name, dir, model_dir, work);
    model_spec spec;
    model_profile profile;
    loom_error *e = model_spec_read(model_dir, &spec, NULL);
    if (e)
        return e;
    if (spec.runtime == MODEL_RUNTIME_NATIVE) /* the trainer's own kernel */
        snprintf(spec.kernel_path, sizeof spec.kernel_path, "%s/native.so", s->plugin_dir);
    char pinned[LOOM_NAME_MAX] = "";
    if (spec.runtime == MODEL_RUNTIME_REGISTERED &&
        (e = resolve_registered(s, &spec, pinned, sizeof pinned)) != NULL)
        return e;
    cJSON *pj = cJSON_Parse(rec->profile_json);
    e = model_profile_parse(pj, "profile", &profile);
    cJSON_Delete(pj);
    if (!e)
        e = keep_private(s, rec->name, rec->owner); /* an older home's too */
    running *m = e ? NULL : calloc(1, sizeof *m);
    if (!e && !m)
        e = loom_err(LOOM_E_INTERNAL, "out of memory");
    if (e) {
        if (pinned[0])
            registry_release(s->reg, LOOM_KIND_KERNEL, pinned);
        return e;
    }
    snprintf(m->kernel, sizeof m->kernel, "%s", pinned);
    snprintf(m->name, sizeof m->name, "%s", rec->name);
    snprintf(m->owner, sizeof m->owner, "%s", rec->owner);
    model_service_spec rs = {.name = rec->name, .owner = rec->owner, .binary = s->binary,
                      .model_dir = model_dir, .work_dir = work, .model = &spec,
                      .profile = &profile, .sched = s->sched};
    e = model_service_start(&rs, &m->r);
    if (!e)
        e = store_model_set_started(s->st, rec->name, 1);
    if (e) {
        model_service_stop(m->r, 1);
        release_running(s, m);
        return e;
    }
    pthread_rwlock_wrlock(&s->routes);
    m->next = s->running;
    s->running = m;
    pthread_rwlock_unlock(&s->routes);
    log_info("model \"%s\" of %s started", rec->name, rec->owner);
    return NULL;
}

loom_error *infer_start(infer_service *s, const char *owner, const char *name)
{
    infer_record rec;
    pthread_mutex_lock(&s->admin);
    loom_error *e = lookup(s, owner, name, &rec);
    if (!e) {
        e = start_locked(s, &rec);
        store_model_clear(&rec);
    }
    pthread_mutex_unlock(&s->admin);
    return e;
}

/* Takes a model out of the running list (requests no longer reach it) and
 * stops its service. Call with s->admin. */
static void stop_locked(infer_service *s, const char *name, int force)
{
    pthread_rwlock_wrlock(&s->routes);
    running *m = NULL;
    for (running **link = &s->running; *link; link = &(*link)->next)
        if (strcmp((*link)->name, name) == 0) {
            m = *link;
            *link = m->next;
            break;
        }
    pthread_rwlock_unlock(&s->routes);
    if (m) {
        model_service_stop(m->r, force);
        release_running(s, m);
    }
}

loom_error *infer_stop(infer_service *s, const char *owner, const char *name, int force)
{
    infer_record rec;
    pthread_mutex_lock(&s->admin);
    loom_error *e = lookup(s, owner, name, &rec);
    if (!e) {
        if (!rec.started && !find_running(s, name))
            e = loom_err(LOOM_E_CONFLICT, "model \"%s\" is not started", name);
        else
            e = store_model_set_started(s->st, name, 0);
        if (!e)
            stop_locked(s, name, force);
        store_model_clear(&rec);
    }
    pthread_mutex_unlock(&s->admin);
    return e;
}

loom_error *infer_undeploy(infer_service *s, const char *owner, const char *name, int force)
{
    infer_record rec;
    pthread_mutex_lock(&s->admin);
    loom_error *e = lookup(s, owner, name, &rec);
    if (!e) {
        int started = rec.started || find_running(s, name);
        if (started && !force)
            e = loom_err(LOOM_E_CONFLICT, "model \"%s\" is started: stop it first, or undeploy "
                         "with -f (force), which stops it", name);
        if (!e && started)
            stop_locked(s, name, 1);
        if (!e)
            e = store_model_delete(s->st, name);
        if (!e)
            remove_model_dir(rec.dir);
        store_model_clear(&rec);
    }
    pthread_mutex_unlock(&s->admin);
    return e;
}

/* ---- views ---------------------------------------------------------------------- */

/* The scheduler's reason as `viewer` (NULL: an administrator) may see it. */
static void reason_for(const sched_reason *why, const char *viewer, char *buf, size_t len)
{
    bool show = !viewer || (why->holder_user[0] && strcmp(why->holder_user, viewer) == 0);
    sched_reason_text(why, show, buf, len);
}

static void fill_view(infer_service *s, const char *viewer, infer_record *rec,
                      infer_model_view *v)
{
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", rec->name);
    snprintf(v->owner, sizeof v->owner, "%s", rec->owner);
    v->created_at = rec->created_at;
    cJSON *m = cJSON_Parse(rec->model_json);
    const cJSON *tag = cJSON_GetObjectItemCaseSensitive(m, "tag");
    const cJSON *rt = cJSON_GetObjectItemCaseSensitive(m, "runtime");
    snprintf(v->tag, sizeof v->tag, "%s", cJSON_IsString(tag) ? tag->valuestring : "");
    snprintf(v->runtime, sizeof v->runtime, "%s", cJSON_IsString(rt) ? rt->valuestring : "");
    cJSON_Delete(m);
    v->model_json = rec->model_json;
    v->profile_json = rec->profile_json;
    rec->model_json = rec->profile_json = NULL;
    pthread_rwlock_rdlock(&s->routes);
    running *r = find_running(s, rec->name);
    if (r)
        model_service_get_stats(r->r, &v->stats);
    pthread_rwlock_unlock(&s->routes);
    v->state = !r                     ? (rec->started ? MODEL_STARTING : MODEL_STOPPED)
               : v->stats.start_failed ? MODEL_FAILED
               : v->stats.serving_once ? MODEL_STARTED
                                       : MODEL_STARTING;
    if (r && v->stats.waiting)
        reason_for(&v->stats.wait_reason, viewer, v->pending_reason, sizeof v->pending_reason);
}

loom_error *infer_view(infer_service *s, const char *owner, const char *name,
                       infer_model_view *out)
{
    infer_record rec;
    loom_error *e = lookup(s, owner, name, &rec);
    if (e)
        return e;
    fill_view(s, owner, &rec, out);
    return NULL;
}

loom_error *infer_list(infer_service *s, const char *owner, infer_model_view **out,
                       size_t *count)
{
    infer_record *all = NULL;
    size_t n = 0, k = 0;
    *out = NULL;
    *count = 0;
    loom_error *e = store_model_all(s->st, &all, &n);
    infer_model_view *views = e ? NULL : calloc(n ? n : 1, sizeof *views);
    if (!e && !views)
        e = loom_err(LOOM_E_INTERNAL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!e && visible(owner, &all[i]))
            fill_view(s, owner, &all[i], &views[k++]);
        store_model_clear(&all[i]);
    }
    free(all);
    if (e) {
        free(views);
        return e;
    }
    *out = views;
    *count = k;
    return NULL;
}

loom_error *infer_metadata(infer_service *s, const char *owner, const char *name,
                           cJSON **json_out)
{
    *json_out = NULL;
    infer_record rec;
    loom_error *e = lookup(s, owner, name, &rec);
    if (e)
        return e;
    model_spec *spec = calloc(1, sizeof *spec); /* large: not on an HTTP thread's stack */
    cJSON *m = spec ? cJSON_Parse(rec.model_json) : NULL;
    const cJSON *rt = cJSON_GetObjectItemCaseSensitive(m, "runtime");
    if (spec) {
        snprintf(spec->name, sizeof spec->name, "%s", rec.name);
        int known = 0;
        for (int r = 0; r <= MODEL_RUNTIME_NATIVE; r++)
            if (cJSON_IsString(rt) && strcmp(rt->valuestring, model_runtime_name(r)) == 0) {
                spec->runtime = (model_runtime)r;
                known = 1;
            }
        if (!known && cJSON_IsString(rt)) /* a kernel registered with the host */
            snprintf(spec->kernel_name, sizeof spec->kernel_name, "%s", rt->valuestring);
        /* Checked at deploy: a refusal here leaves the lists empty. */
        loom_err_free(model_spec_tensors(m, spec));
        *json_out = v2_metadata(spec);
    }
    cJSON_Delete(m);
    store_model_clear(&rec);
    free(spec);
    return *json_out ? NULL : loom_err(LOOM_E_INTERNAL, "out of memory");
}

/* ---- requests ------------------------------------------------------------------- */

loom_error *infer_request(infer_service *s, const char *owner, const char *name,
                          const char *body, size_t len, model_service_done_fn done, void *ctx)
{
    pthread_rwlock_rdlock(&s->routes);
    running *m = find_running(s, name);
    loom_error *e = NULL;
    if (m && owner && strcmp(owner, m->owner) != 0)
        m = NULL;
    if (m)
        e = model_service_submit(m->r, body, len, done, ctx);
    pthread_rwlock_unlock(&s->routes);
    if (m)
        return e;
    infer_record rec;
    e = lookup(s, owner, name, &rec);
    if (e)
        return e;
    int starting = rec.started;
    store_model_clear(&rec);
    /* Recorded as started, not yet serving: the host is starting it (after
     * a restart, or a start under way). */
    if (starting)
        return loom_err(LOOM_E_UNAVAILABLE,
                        "model \"%s\" is starting: no kernel instance serves it yet; try again "
                        "shortly (loom model view %s)",
                        name, name);
    return loom_err(LOOM_E_UNAVAILABLE, "model \"%s\" is not started (loom model start %s)",
                    name, name);
}

/* ---- the service ------------------------------------------------------------------ */

static void *restart_models(void *arg)
{
    infer_service *s = arg;
    infer_record *all = NULL;
    size_t n = 0;
    char why[512];
    if (loom_err_take(store_model_all(s->st, &all, &n), why, sizeof why))
        log_warn("models: cannot list them to start them again: %s", why);
    for (size_t i = 0; i < n; i++) {
        loom_error *kept = keep_private(s, all[i].name, all[i].owner); /* an older home's */
        if (loom_err_take(kept, why, sizeof why))
            log_warn("model \"%s\": %s", all[i].name, why);
        if (all[i].started) {
            pthread_mutex_lock(&s->admin);
            loom_error *e = find_running(s, all[i].name) ? NULL : start_locked(s, &all[i]);
            pthread_mutex_unlock(&s->admin);
            if (loom_err_take(e, why, sizeof why))
                log_warn("model \"%s\" was started before the host stopped, but cannot start "
                         "again: %s", all[i].name, why);
        }
        store_model_clear(&all[i]);
    }
    free(all);
    return NULL;
}

loom_error *infer_service_create(const infer_options *opt, infer_service **out)
{
    *out = NULL;
    infer_service *s = calloc(1, sizeof *s);
    if (!s)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    s->st = opt->st;
    s->sched = opt->sched;
    s->reg = opt->reg;
    snprintf(s->home, sizeof s->home, "%s", opt->home);
    snprintf(s->plugin_dir, sizeof s->plugin_dir, "%s", opt->plugin_dir ? opt->plugin_dir : "");
    if (opt->binary) {
        snprintf(s->binary, sizeof s->binary, "%s", opt->binary);
    } else {
        ssize_t n = readlink("/proc/self/exe", s->binary, sizeof s->binary - 1);
        s->binary[n > 0 ? n : 0] = 0;
    }
    char models[PATH_MAX + 8];
    snprintf(models, sizeof models, "%s/models", s->home);
    loom_error *unmade = fs_mkdir_p(models); /* each deploy then says why it fails */
    if (unmade)
        log_warn("%s", loom_err_message(unmade));
    loom_err_free(unmade);
    chmod(models, 0711);
    pthread_mutex_init(&s->admin, NULL);
    pthread_rwlock_init(&s->routes, NULL);
    s->restarter_live = pthread_create(&s->restarter, NULL, restart_models, s) == 0;
    *out = s;
    return NULL;
}

void infer_service_stop_all(infer_service *s)
{
    if (!s)
        return;
    if (s->restarter_live)
        pthread_join(s->restarter, NULL);
    s->restarter_live = 0;
    pthread_mutex_lock(&s->admin);
    pthread_rwlock_wrlock(&s->routes);
    running *all = s->running;
    s->running = NULL;
    pthread_rwlock_unlock(&s->routes);
    while (all) {
        running *m = all;
        all = m->next;
        model_service_stop(m->r, 1);
        release_running(s, m);
    }
    pthread_mutex_unlock(&s->admin);
}

void infer_service_destroy(infer_service *s)
{
    if (!s)
        return;
    infer_service_stop_all(s);
    pthread_mutex_destroy(&s->admin);
    pthread_rwlock_destroy(&s->routes);
    free(s);
}

/* api/routes_plugin.c - the plugin registry over REST: list, show, add
 * (upload a .so or .lua) and remove. A user plugin is copied into the home
 * directory and recorded in the store, so it survives restarts; the copy is
 * written before the record, and a copy without a record is swept at start. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "api/routes.h"
#include "api/api.h"
#include "api/request_body.h"
#include "plugin/lua_plugin.h"
#include "plugin/so_loader.h"
#include "util/fs.h"
#include "util/log.h"

static cJSON *entry_json(const registry_entry *e)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", e->kind >= 0 ? loom_kind_name((loom_kind)e->kind) : "unknown");
    cJSON_AddStringToObject(o, "name", e->name);
    cJSON_AddStringToObject(o, "version", e->version);
    cJSON_AddStringToObject(o, "description", e->description);
    char abi[32];
    snprintf(abi, sizeof abi, "%u.%u", e->abi_major, e->abi_minor);
    cJSON_AddStringToObject(o, "abi", e->loaded ? abi : "");
    cJSON_AddStringToObject(o, "format", e->format);
    cJSON_AddStringToObject(o, "origin", e->origin);
    cJSON_AddStringToObject(o, "path", e->path);
    cJSON_AddStringToObject(o, "state", e->loaded ? "loaded" : "failed");
    if (!e->loaded)
        cJSON_AddStringToObject(o, "error", e->error);
    if (e->loaded && e->kind == LOOM_KIND_FRAMEWORK)
        cJSON_AddStringToObject(o, "style", e->style == LOOM_FRAMEWORK_TRAINER ? "trainer" : "launch");
    return o;
}

/* Lists entries of one kind (or all, kind < 0) as a JSON array. */
static cJSON *list_json(registry *reg, int kind)
{
    size_t n = registry_list(reg, kind, NULL, 0);
    registry_entry *entries = calloc(n ? n : 1, sizeof *entries);
    cJSON *a = cJSON_CreateArray();
    if (!entries)
        return a;
    n = registry_list(reg, kind, entries, n);
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, entry_json(&entries[i]));
    free(entries);
    return a;
}

static int kind_param(const char *text, http_response *res, loom_kind *kind)
{
    if (loom_kind_parse(text, kind) != 0) {
        api_error(res, LOOM_E_INVALID, "kind: expected framework, search (or algorithm), kernel or logger, got \"%s\"",
                         text ? text : "");
        return -1;
    }
    return 0;
}

static void list_plugins(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const char *k = http_query(req, "kind");
    loom_kind kind = 0;
    if (k && kind_param(k, res, &kind) != 0)
        return;
    http_reply_json(res, 200, list_json(d->reg, k ? (int)kind : -1));
}

static void list_frameworks(void *ctx, const http_request *req, http_response *res)
{
    (void)req;
    api_services *d = ctx;
    http_reply_json(res, 200, list_json(d->reg, LOOM_KIND_FRAMEWORK));
}

static void show_plugin(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    loom_kind kind;
    if (kind_param(req->params[0], res, &kind) != 0)
        return;
    registry_entry e;
    if (registry_acquire(d->reg, kind, req->params[1], &e) != 0) {
        api_error(res, LOOM_E_NOT_FOUND, "no %s named \"%s\"", loom_kind_name(kind), req->params[1]);
        return;
    }
    registry_release(d->reg, kind, req->params[1]);
    http_reply_json(res, 200, entry_json(&e));
}

/* Moves the uploaded file (spooled under the home, as plugins/ is) to
 * `path`, or writes it there when it was held in memory. The error names
 * the plugin file, not the host's path, which means nothing to the user. */
static loom_error *store_upload(const http_field *f, const char *path)
{
    int errnum = 0;
    if (!f->path) {
        loom_error *e = fs_write_file_atomic(path, f->data, f->len, 0644);
        errnum = loom_err_errno(e);
        loom_err_free(e);
    } else if (rename(f->path, path) != 0 || chmod(path, 0644) != 0) {
        errnum = errno;
    }
    return errnum ? loom_err_sys(LOOM_E_INTERNAL, errnum, "cannot store the plugin file") : NULL;
}

static void add_plugin(void *ctx, const http_request *req, http_response *res)
{
    api_services *d = ctx;
    const http_field *kind_f = http_field_get(req, "kind");
    const http_field *name_f = http_field_get(req, "name");
    const http_field *file_f = http_field_get(req, "file");
    loom_kind kind;
    if (kind_param(kind_f ? kind_f->data : NULL, res, &kind) != 0)
        return;
    if (!file_f || file_f->len == 0) {
        api_error(res, LOOM_E_INVALID, "file: expected the plugin (.so or .lua) as a multipart part named 'file'");
        return;
    }
    const char *fname = file_f->filename[0] ? file_f->filename : "";
    size_t fl = strlen(fname);
    const char *ext = fl > 4 && strcmp(fname + fl - 4, ".lua") == 0 ? "lua"
                      : fl > 3 && strcmp(fname + fl - 3, ".so") == 0 ? "so" : NULL;
    if (!ext) {
        api_error(res, LOOM_E_INVALID, "file: \"%s\" is neither a .so nor a .lua file", fname);
        return;
    }
    const char *rename = name_f && name_f->len ? name_f->data : NULL;

    pthread_mutex_lock(&d->admin_lock);
    char path[PATH_MAX], err[1024];
    snprintf(path, sizeof path, "%s/plugins/%s-%lld-%u.%s", d->files, loom_kind_name(kind),
             (long long)time_now_ms(), ++d->upload_seq, ext);
    loom_error *unstored = store_upload(file_f, path);
    if (unstored) {
        api_reply_error(res, unstored);
        goto out;
    }
    loom_error *refused = registry_load(d->reg, path, "user", rename, (int)kind, 0);
    if (refused) {
        int code = loom_err_take(refused, err, sizeof err);
        unlink(path);
        /* The uploaded copy's path means nothing to the user: name theirs. */
        char *at = strstr(err, path);
        char shown[1200];
        if (at)
            snprintf(shown, sizeof shown, "%.*s%s%s", (int)(at - err), err, fname, at + strlen(path));
        else
            snprintf(shown, sizeof shown, "%s", err);
        api_error(res, code == LOOM_E_CONFLICT ? LOOM_E_CONFLICT : LOOM_E_INVALID, "%s", shown);
        goto out;
    }
    /* Record everything the file registered (one Lua file may register
     * several plugins): each is a row, and the rows share the file. */
    size_t n = registry_list(d->reg, (int)kind, NULL, 0);
    registry_entry *entries = calloc(n ? n : 1, sizeof *entries);
    n = entries ? registry_list(d->reg, (int)kind, entries, n) : 0;
    registry_entry *added = NULL;
    loom_error *e = NULL;
    size_t recorded = 0;
    for (size_t i = 0; i < n && !e; i++) {
        if (strcmp(entries[i].path, path) != 0)
            continue;
        added = added ? added : &entries[i];
        store_plugin rec = {.added_at = time_now_ms()};
        snprintf(rec.kind, sizeof rec.kind, "%s", loom_kind_name(kind));
        snprintf(rec.name, sizeof rec.name, "%s", entries[i].name);
        snprintf(rec.file, sizeof rec.file, "%s", path);
        e = store_plugin_add(d->st, &rec);
        recorded += !e;
    }
    if (!added)
        e = loom_err(LOOM_E_INTERNAL, "the registry does not list %s", fname);
    if (e) {
        for (size_t i = 0; i < n; i++)
            if (strcmp(entries[i].path, path) == 0) {
                loom_err_free(registry_remove(d->reg, kind, entries[i].name));
                if (recorded > 0) {
                    recorded--;
                    loom_err_free(store_plugin_remove(d->st, loom_kind_name(kind), entries[i].name));
                }
            }
        unlink(path);
        api_reply_error(res, loom_err_recode(loom_err_wrap(e, "cannot record the plugin"),
                                             LOOM_E_INTERNAL));
    } else {
        log_info("registered %s \"%s\" from %s", loom_kind_name(kind), added->name, fname);
        http_reply_json(res, 201, entry_json(added));
    }
    free(entries);
out:
    pthread_mutex_unlock(&d->admin_lock);
}

void api_remove_plugin(api_services *d, loom_kind kind, const char *name, http_response *res)
{
    pthread_mutex_lock(&d->admin_lock);
    registry_entry e;
    char err[512];
    if (registry_acquire(d->reg, kind, name, &e) != 0) {
        api_error(res, LOOM_E_NOT_FOUND, "no %s named \"%s\"", loom_kind_name(kind), name);
    } else {
        registry_release(d->reg, kind, name);
        loom_error *refused = registry_remove(d->reg, kind, e.name);
        if (refused) {
            int code = loom_err_take(refused, err, sizeof err);
            api_error(res, code == LOOM_E_FORBIDDEN ? LOOM_E_FORBIDDEN : LOOM_E_CONFLICT, "%s", err);
        } else {
            loom_err_free(store_plugin_remove(d->st, loom_kind_name(kind), e.name));
            /* The stored file goes with the last plugin it registered. */
            int users = 1;
            loom_error *counted = store_plugin_file_users(d->st, e.path, &users);
            if (counted)
                log_warn("plugin file %s kept: %s", e.path, loom_err_message(counted));
            loom_err_free(counted);
            if (users == 0)
                unlink(e.path);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "removed", e.name);
            http_reply_json(res, 200, o);
        }
    }
    pthread_mutex_unlock(&d->admin_lock);
}

static void remove_plugin(void *ctx, const http_request *req, http_response *res)
{
    loom_kind kind;
    if (kind_param(req->params[0], res, &kind) == 0)
        api_remove_plugin(ctx, kind, req->params[1], res);
}

typedef struct user_plugin_ctx {
    store_plugin *rows;
    size_t count, cap;
} user_plugin_ctx;

static void collect_row(const store_plugin *p, void *arg)
{
    user_plugin_ctx *c = arg;
    if (c->count == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        void *grown = realloc(c->rows, cap * sizeof *c->rows);
        if (!grown)
            return;
        c->rows = grown;
        c->cap = cap;
    }
    c->rows[c->count++] = *p;
}

/* Loads the file of rows[first] once, registering every recorded plugin
 * of that kind it provides (rows sharing the file). */
static void load_file(api_services *d, const user_plugin_ctx *c, size_t first)
{
    const store_plugin *p = &c->rows[first];
    loom_kind kind;
    if (loom_kind_parse(p->kind, &kind) != 0) {
        log_warn("store: plugin \"%s\" has unknown kind \"%s\"; skipped", p->name, p->kind);
        return;
    }
    const char *names[64];
    size_t n = 0;
    for (size_t i = first; i < c->count && n < sizeof names / sizeof *names; i++)
        if (strcmp(c->rows[i].file, p->file) == 0 && strcmp(c->rows[i].kind, p->kind) == 0)
            names[n++] = c->rows[i].name;
    loom_error *refused = registry_load_recorded(d->reg, p->file, "user", names, n, (int)kind);
    if (refused)
        log_warn("user %s \"%s\" not loaded: %s", p->kind, p->name, loom_err_message(refused));
    loom_err_free(refused);
}

void api_load_user_plugins(api_services *d)
{
    user_plugin_ctx c = {0};
    loom_error *e = store_plugin_each(d->st, collect_row, &c);
    if (e)
        log_error("user plugins: %s", loom_err_message(e));
    loom_err_free(e);
    for (size_t i = 0; i < c.count; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(c.rows[j].file, c.rows[i].file) == 0 &&
                   strcmp(c.rows[j].kind, c.rows[i].kind) == 0;
        if (!seen)
            load_file(d, &c, i);
    }
    /* Sweep copies a crash left behind between writing and recording. */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/plugins", d->files);
    DIR *dh = opendir(dir);
    struct dirent *de;
    while (dh && (de = readdir(dh))) {
        if (de->d_name[0] == '.')
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        int known = 0;
        for (size_t i = 0; i < c.count && !known; i++)
            known = strcmp(c.rows[i].file, path) == 0;
        if (!known) {
            log_info("removing unrecorded plugin file %s", path);
            unlink(path);
        }
    }
    if (dh)
        closedir(dh);
    free(c.rows);
}

const http_route loom_plugin_routes[] = {
    {"GET", LOOM_ROUTE_PLUGINS, list_plugins, HTTP_USER},
    /* A .so runs in the host: installing and removing plugins is for
     * administrators. */
    {"POST", LOOM_ROUTE_PLUGINS, add_plugin, HTTP_ADMIN | HTTP_SLOW},
    {"GET", LOOM_ROUTE_PLUGINS "/{}/{}", show_plugin, HTTP_USER},
    {"DELETE", LOOM_ROUTE_PLUGINS "/{}/{}", remove_plugin, HTTP_ADMIN},
    {"GET", LOOM_ROUTE_FRAMEWORKS, list_frameworks, HTTP_USER},
};
const size_t loom_plugin_route_count = sizeof loom_plugin_routes / sizeof *loom_plugin_routes;

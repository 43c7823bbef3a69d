/* plugin/registry.c - see registry.h. */
#include "plugin/registry.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "plugin/lua_plugin.h"
#include "plugin/registry_probe.h"
#include "plugin/so_loader.h"
#include "util/log.h"

typedef struct loaded_file {
    struct loaded_file *next;
    char path[PATH_MAX];
    dev_t dev;
    ino_t ino;
    so_plugin *so;
    lua_plugin *lua;
    probe_result *probe; /* described by a child, not loaded here */
    int is_lua;
    unsigned abi_major, abi_minor;
    int entries; /* registered entries that point here */
} loaded_file;

typedef struct slot {
    registry_entry e;
    loaded_file *file; /* NULL for a recorded failure */
    int pins;
} slot;

struct registry {
    pthread_mutex_t lock;
    loaded_file *files;
    slot *slots;
    size_t count, cap;
    char *probe_binary; /* see registry_set_probe */
};

registry *registry_create(void)
{
    registry *r = calloc(1, sizeof *r);
    if (r)
        pthread_mutex_init(&r->lock, NULL);
    return r;
}

static void file_close(loaded_file *f)
{
    if (f->so)
        so_plugin_close(f->so);
    if (f->lua)
        lua_plugin_close(f->lua);
    registry_probe_free(f->probe);
    free(f);
}

void registry_destroy(registry *r)
{
    if (!r)
        return;
    while (r->files) {
        loaded_file *f = r->files;
        r->files = f->next;
        file_close(f);
    }
    free(r->slots);
    free(r->probe_binary);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

void registry_set_probe(registry *r, const char *binary)
{
    pthread_mutex_lock(&r->lock);
    free(r->probe_binary);
    r->probe_binary = binary ? strdup(binary) : NULL;
    pthread_mutex_unlock(&r->lock);
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static slot *find_slot(registry *r, int kind, const char *name, int loaded_only)
{
    for (size_t i = 0; i < r->count; i++) {
        slot *s = &r->slots[i];
        if (s->e.kind == kind && strcasecmp(s->e.name, name) == 0 &&
            (!loaded_only || s->e.loaded))
            return s;
    }
    return NULL;
}

static slot *append_slot(registry *r)
{
    if (r->count == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        slot *grown = realloc(r->slots, cap * sizeof *grown);
        if (!grown)
            return NULL;
        r->slots = grown;
        r->cap = cap;
    }
    slot *s = &r->slots[r->count++];
    memset(s, 0, sizeof *s);
    return s;
}

static void record_failure(registry *r, const char *path, const char *origin,
                           const char *message)
{
    /* A file that failed again replaces its earlier failure record. */
    for (size_t i = 0; i < r->count; i++)
        if (!r->slots[i].e.loaded && strcmp(r->slots[i].e.path, path) == 0) {
            snprintf(r->slots[i].e.error, sizeof r->slots[i].e.error, "%s", message);
            return;
        }
    slot *s = append_slot(r);
    if (!s)
        return;
    s->e.kind = -1;
    const char *base = strrchr(path, '/');
    snprintf(s->e.name, sizeof s->e.name, "%s", base ? base + 1 : path);
    snprintf(s->e.path, sizeof s->e.path, "%s", path);
    snprintf(s->e.origin, sizeof s->e.origin, "%s", origin);
    snprintf(s->e.format, sizeof s->e.format, "%s", has_suffix(path, ".lua") ? "lua" : "so");
    snprintf(s->e.error, sizeof s->e.error, "%s", message);
}

static void forget_failure(registry *r, const char *path)
{
    for (size_t i = 0; i < r->count; i++)
        if (!r->slots[i].e.loaded && strcmp(r->slots[i].e.path, path) == 0) {
            r->slots[i] = r->slots[--r->count];
            return;
        }
}

/* Checks the path and opens the file (.so or .lua) into *out. */
static loom_error *open_file(registry *r, const char *path, const char *origin,
                             const char *rename, loaded_file **out)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return loom_err(LOOM_E_NOT_FOUND, "%s: no such file", path);
    for (loaded_file *f = r->files; f; f = f->next)
        if (f->dev == st.st_dev && f->ino == st.st_ino)
            return loom_err(LOOM_E_CONFLICT, "%s: already loaded (as %s)", path, f->path);
    int is_lua = has_suffix(path, ".lua");
    if (!is_lua && !has_suffix(path, ".so"))
        return loom_err(LOOM_E_INVALID, "%s: not a plugin file: expected a .so or .lua file", path);
    if (rename && !loom_name_valid(rename))
        return loom_err(LOOM_E_INVALID, "name \"%s\" is not valid: use 1-63 of A-Z a-z 0-9 _ - .",
                        rename);
    loaded_file *f = calloc(1, sizeof *f);
    if (!f)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    snprintf(f->path, sizeof f->path, "%s", path);
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->is_lua = is_lua;
    loom_error *e;
    if (r->probe_binary && strcmp(origin, "builtin") != 0) {
        e = registry_probe_run(r->probe_binary, path, &f->probe);
        if (!e) {
            f->abi_major = f->probe->abi_major;
            f->abi_minor = f->probe->abi_minor;
        }
    } else if (is_lua) {
        e = lua_plugin_open(path, NULL, &f->lua);
        f->abi_major = LOOM_ABI_MAJOR;
        f->abi_minor = LOOM_ABI_MINOR;
    } else {
        e = so_plugin_open(path, 1, &f->so);
        if (!e)
            so_plugin_abi(f->so, &f->abi_major, &f->abi_minor);
    }
    if (e) {
        free(f);
        return e;
    }
    *out = f;
    return NULL;
}

static void fill_entry(registry_entry *e, const loom_registration *reg, const char *name,
                       const loaded_file *f, const char *origin)
{
    e->kind = reg->kind;
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->version, sizeof e->version, "%s", reg->version ? reg->version : "");
    snprintf(e->description, sizeof e->description, "%s",
             reg->description ? reg->description : "");
    snprintf(e->path, sizeof e->path, "%s", f->path);
    snprintf(e->format, sizeof e->format, "%s", f->is_lua ? "lua" : "so");
    snprintf(e->origin, sizeof e->origin, "%s", origin);
    e->abi_major = f->abi_major;
    e->abi_minor = f->abi_minor;
    e->loaded = 1;
    e->factory = reg->factory;
    e->style = reg->factory && reg->kind == LOOM_KIND_FRAMEWORK
                   ? ((const loom_framework_factory *)reg->factory)->style
                   : reg->style;
}

/* Whether `name` is one of names[0..count). */
static int named(const char *name, const char *const *names, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strcasecmp(name, names[i]) == 0)
            return 1;
    return 0;
}

/* Loads `path` and registers its factories of want_kind (all kinds when
 * negative) under their names, or its only one under `rename`; with
 * `names`, only the recorded ones (see registry_load_recorded). */
static loom_error *load_locked(registry *r, const char *path, const char *origin,
                               const char *rename, int want_kind, const char *const *names,
                               size_t nnames)
{
    loaded_file *f = NULL;
    loom_error *e = open_file(r, path, origin, rename, &f);
    if (e)
        return e;
    const loom_registration *regs = NULL;
    size_t n = f->probe ? (regs = f->probe->regs, f->probe->count)
               : f->lua ? lua_plugin_registrations(f->lua, &regs)
                        : so_plugin_registrations(f->so, &regs);

    /* Pick what to register, then check every name before registering any. */
    const loom_registration *chosen[LOOM_KIND_COUNT * 4];
    size_t m = 0;
    for (size_t i = 0; i < n && m < sizeof chosen / sizeof *chosen; i++)
        if (want_kind < 0 || (int)regs[i].kind == want_kind)
            chosen[m++] = &regs[i];
    if (names && m == 1 && nnames == 1) {
        rename = names[0]; /* a single factory, recorded under its name */
    } else if (names) {
        size_t k = 0;
        for (size_t i = 0; i < m; i++)
            if (named(chosen[i]->name, names, nnames))
                chosen[k++] = chosen[i];
        m = k;
    }
    if (m == 0)
        e = loom_err(LOOM_E_INVALID, "%s: provides no %s", path,
                     want_kind >= 0 ? loom_kind_name((loom_kind)want_kind) : "plugin");
    else if (rename && m > 1)
        e = loom_err(LOOM_E_INVALID, "%s: registers %zu plugins; a new name applies to one only",
                     path, m);
    for (size_t i = 0; !e && i < m; i++) {
        slot *clash = find_slot(r, chosen[i]->kind, rename ? rename : chosen[i]->name, 1);
        if (clash)
            e = loom_err(LOOM_E_CONFLICT, "a %s named \"%s\" is already registered (from %s)",
                         loom_kind_name(chosen[i]->kind), clash->e.name, clash->e.path);
    }
    for (size_t i = 0; !e && i < m; i++) {
        slot *s = append_slot(r);
        if (!s) {
            e = loom_err(LOOM_E_INTERNAL, "out of memory");
            /* Roll back what this call appended. */
            while (r->count && r->slots[r->count - 1].file == f)
                r->count--;
            break;
        }
        fill_entry(&s->e, chosen[i], rename ? rename : chosen[i]->name, f, origin);
        s->file = f;
        f->entries++;
    }
    if (e) {
        file_close(f);
        return e;
    }
    f->next = r->files;
    r->files = f;
    forget_failure(r, path);
    return NULL;
}

loom_error *registry_load(registry *r, const char *path, const char *origin, const char *rename,
                          int want_kind, int record)
{
    pthread_mutex_lock(&r->lock);
    loom_error *e = load_locked(r, path, origin, rename, want_kind, NULL, 0);
    if (e && record)
        record_failure(r, path, origin, loom_err_message(e));
    pthread_mutex_unlock(&r->lock);
    return e;
}

loom_error *registry_load_recorded(registry *r, const char *path, const char *origin,
                                   const char *const *names, size_t count, int want_kind)
{
    pthread_mutex_lock(&r->lock);
    loom_error *e = load_locked(r, path, origin, NULL, want_kind, names, count);
    if (e)
        record_failure(r, path, origin, loom_err_message(e));
    pthread_mutex_unlock(&r->lock);
    return e;
}

int registry_add_factory(registry *r, loom_kind kind, const char *name, const char *version,
                         const char *description, const void *factory)
{
    loom_error *why = loom_name_valid(name) ? loom_factory_validate(kind, factory)
                                            : loom_err(LOOM_E_INVALID, "bad name");
    if (why) {
        log_warn("host factory %s refused: %s", name ? name : "(null)", loom_err_message(why));
        loom_err_free(why);
        return -1;
    }
    pthread_mutex_lock(&r->lock);
    int rc = -1;
    slot *s = find_slot(r, (int)kind, name, 1) ? NULL : append_slot(r);
    if (s) {
        registry_entry *e = &s->e;
        e->kind = kind;
        snprintf(e->name, sizeof e->name, "%s", name);
        snprintf(e->version, sizeof e->version, "%s", version);
        snprintf(e->description, sizeof e->description, "%s", description);
        snprintf(e->path, sizeof e->path, "(in the host)");
        snprintf(e->format, sizeof e->format, "host");
        snprintf(e->origin, sizeof e->origin, "builtin");
        e->abi_major = LOOM_ABI_MAJOR;
        e->abi_minor = LOOM_ABI_MINOR;
        e->loaded = 1;
        e->factory = factory;
        rc = 0;
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

int registry_alias(registry *r, loom_kind kind, const char *name, const char *alias)
{
    if (!loom_name_valid(alias))
        return -1;
    pthread_mutex_lock(&r->lock);
    int rc = -1;
    slot *target = find_slot(r, (int)kind, name, 1);
    if (target && !find_slot(r, (int)kind, alias, 1)) {
        size_t index = (size_t)(target - r->slots);
        slot *s = append_slot(r); /* may move the array */
        if (s) {
            target = &r->slots[index];
            *s = *target;
            s->pins = 0;
            snprintf(s->e.name, sizeof s->e.name, "%s", alias);
            snprintf(s->e.description, sizeof s->e.description, "another name of %s: %s",
                     target->e.name, target->e.description);
            if (s->file)
                s->file->entries++;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int plugin_file(const struct dirent *d)
{
    return has_suffix(d->d_name, ".so") || has_suffix(d->d_name, ".lua");
}

int registry_load_dir(registry *r, const char *dir, const char *origin)
{
    struct dirent **names;
    int n = scandir(dir, &names, plugin_file, by_name);
    if (n < 0) {
        log_warn("plugin directory %s cannot be read; no %s plugins loaded", dir, origin);
        return 0;
    }
    int loaded = 0;
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        free(names[i]);
        loom_error *e = registry_load(r, path, origin, NULL, -1, 1);
        if (!e)
            loaded++;
        else
            log_warn("plugin skipped: %s", loom_err_message(e));
        loom_err_free(e);
    }
    free(names);
    return loaded;
}

int registry_acquire(registry *r, loom_kind kind, const char *name,
                     registry_entry *out)
{
    pthread_mutex_lock(&r->lock);
    slot *s = name ? find_slot(r, (int)kind, name, 1) : NULL;
    if (s) {
        s->pins++;
        *out = s->e;
    }
    pthread_mutex_unlock(&r->lock);
    return s ? 0 : -1;
}

void registry_release(registry *r, loom_kind kind, const char *name)
{
    pthread_mutex_lock(&r->lock);
    slot *s = find_slot(r, (int)kind, name, 1);
    if (s && s->pins > 0)
        s->pins--;
    pthread_mutex_unlock(&r->lock);
}

loom_error *registry_remove(registry *r, loom_kind kind, const char *name)
{
    pthread_mutex_lock(&r->lock);
    loom_error *e = NULL;
    slot *s = find_slot(r, (int)kind, name, 1);
    if (!s) {
        e = loom_err(LOOM_E_NOT_FOUND, "no %s named \"%s\"", loom_kind_name(kind), name);
    } else if (strcmp(s->e.origin, "builtin") == 0) {
        e = loom_err(LOOM_E_FORBIDDEN, "%s \"%s\" is built in and cannot be removed",
                     loom_kind_name(kind), s->e.name);
    } else if (s->pins > 0) {
        e = loom_err(LOOM_E_CONFLICT, "%s \"%s\" is in use by %d running instance(s)",
                     loom_kind_name(kind), s->e.name, s->pins);
    } else {
        loaded_file *f = s->file;
        *s = r->slots[--r->count];
        if (--f->entries == 0) {
            for (loaded_file **p = &r->files; *p; p = &(*p)->next)
                if (*p == f) {
                    *p = f->next;
                    break;
                }
            file_close(f);
        }
    }
    pthread_mutex_unlock(&r->lock);
    return e;
}

size_t registry_list(registry *r, int kind, registry_entry *out, size_t cap)
{
    pthread_mutex_lock(&r->lock);
    size_t n = 0;
    for (size_t i = 0; i < r->count; i++) {
        if (kind >= 0 && r->slots[i].e.kind != kind)
            continue;
        if (n < cap)
            out[n] = r->slots[i].e;
        n++;
    }
    pthread_mutex_unlock(&r->lock);
    return n;
}

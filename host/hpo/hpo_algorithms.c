/* hpo/hpo_algorithms.c - WMLA's plugin optimizers installed on the host
 * (hpo.h): a folder with optimizer.py, copied to HOME/algorithms/NAME and
 * run by the built-in python_optimizer search plugin. Each is its
 * installer's until an administrator publishes it: another user's task
 * would otherwise run its code and hand it that user's results. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hpo/hpo_internal.h"
#include "util/fs.h"
#include "util/job_sandbox.h"
#include "util/log.h"
#include "util/tarball.h"

#define OPTIMIZER_MAX_BYTES ((uint64_t)256 << 20)
#define DEFAULT_PYTHON "/usr/bin/python3"

/* Whether `user` may use (list, view, name in a task) the optimizer. */
static int usable(const hpo_algorithm_rec *a, const char *user, int is_admin)
{
    return is_admin || a->published || (user && !strcmp(a->user, user));
}

loom_error *hpo_algorithm_list(hpo_service *svc, const char *user, int is_admin,
                               hpo_algorithm_rec **out, size_t *count)
{
    loom_error *e = store_hpo_algorithm_list(svc->st, out, count);
    size_t kept = 0;
    for (size_t i = 0; !e && i < *count; i++)
        if (usable(&(*out)[i], user, is_admin))
            (*out)[kept++] = (*out)[i];
    *count = kept;
    return e;
}

/* The optimizer named so, whoever owns it. */
static loom_error *find(hpo_service *svc, const char *name, hpo_algorithm_rec *out)
{
    return store_hpo_algorithm_get(svc->st, name, out);
}

loom_error *hpo_algorithm_get(hpo_service *svc, const char *user, int is_admin, const char *name,
                              hpo_algorithm_rec *out)
{
    loom_error *e = find(svc, name, out);
    if (!e && !usable(out, user, is_admin)) /* the same answer as for no optimizer */
        e = loom_err(LOOM_E_NOT_FOUND, "no plugin optimizer \"%s\"", name);
    return e;
}

/* A search runs under its task owner's account: an optimizer's folder is
 * its installer's to read (group their account, 0750), or everyone's once
 * published (0755); no other account lists or reads it. */
static loom_error *open_to_searches(const hpo_algorithm_rec *a)
{
    if (!a->published)
        return job_sandbox_share(a->dir, a->user, 0);
    if (chmod(a->dir, 0755) != 0)
        return loom_err(LOOM_E_INTERNAL, "%s: cannot set its mode: %s", a->dir, strerror(errno));
    return NULL;
}

loom_error *hpo_resolve_installed(hpo_service *svc, const char *name, hpo_task *t)
{
    hpo_algorithm_rec a;
    loom_error *e = hpo_algorithm_get(svc, t->rec.user, t->rec.is_admin, name, &a);
    if (e)
        return e;
    if ((e = open_to_searches(&a)) != NULL)
        return e;
    registry_entry pe;
    if (registry_acquire(svc->reg, LOOM_KIND_SEARCH, "python_optimizer", &pe) != 0)
        return loom_err(LOOM_E_UNAVAILABLE, "algoDef.algorithm \"%s\" is a Python optimizer, and "
                                            "this host has no python_optimizer plugin", name);
    snprintf(t->plugin, sizeof t->plugin, "%s", pe.name);
    snprintf(t->plugin_path, sizeof t->plugin_path, "%s", pe.path);
    registry_release(svc->reg, LOOM_KIND_SEARCH, pe.name);
    char plugins_dir[PATH_MAX];
    snprintf(plugins_dir, sizeof plugins_dir, "%s", pe.path);
    char *slash = strrchr(plugins_dir, '/');
    if (slash)
        *slash = 0;
    static const char *const keys[] = {"__optimizer_dir", "__python", "__runner", "__name",
                                       "__log_level"};
    snprintf(t->extra_text[0], PATH_MAX, "%s", a.dir);
    snprintf(t->extra_text[1], PATH_MAX, "%s", a.python);
    snprintf(t->extra_text[2], PATH_MAX, "%.4000s/python_optimizer/loom_optimizer_runner.py",
             plugins_dir);
    snprintf(t->extra_text[3], PATH_MAX, "%s", a.name);
    snprintf(t->extra_text[4], PATH_MAX, "%s", a.log_level);
    for (t->nextra = 0; t->nextra < 5; t->nextra++) {
        t->extra[t->nextra].name = keys[t->nextra];
        t->extra[t->nextra].value = t->extra_text[t->nextra];
    }
    return NULL;
}

/* The interpreter an install names. */
static loom_error *interpreter(const hpo_algorithm_install *in, char *out, size_t len)
{
    if (in->conda_env && in->conda_env[0] && !(in->conda_home && in->conda_home[0]))
        return loom_err(LOOM_E_INVALID, "condaEnv \"%s\" needs condaHome", in->conda_env);
    if (in->conda_home && in->conda_home[0] && in->conda_env && in->conda_env[0])
        snprintf(out, len, "%s/envs/%s/bin/python", in->conda_home, in->conda_env);
    else if (in->conda_home && in->conda_home[0])
        snprintf(out, len, "%s/bin/python", in->conda_home);
    else
        snprintf(out, len, "%s", DEFAULT_PYTHON);
    if (access(out, X_OK) != 0)
        return loom_err(LOOM_E_INVALID, "%s: no Python interpreter at %s",
                        in->conda_home && in->conda_home[0] ? "condaHome/condaEnv" : "the host",
                        out);
    return NULL;
}

/* The optimizer's folder into `dir`: from the archive (its one top-level
 * folder, if it has one, is the optimizer's) or the host's path. */
static loom_error *copy_in(const hpo_algorithm_install *in, const char *dir)
{
    char *tar = NULL;
    size_t len = 0;
    loom_error *e = NULL;
    if (in->path && in->path[0]) {
        if (!fs_is_dir(in->path))
            return loom_err(LOOM_E_INVALID, "path: %s is no folder on the host", in->path);
        e = tarball_pack_dir(in->path, &tar, &len);
    }
    if (!e)
        e = loom_err_recode(fs_mkdir_p(dir), LOOM_E_INTERNAL);
    if (!e)
        e = !tar && in->archive_path
                ? tarball_unpack_file(in->archive_path, dir, OPTIMIZER_MAX_BYTES)
                : tarball_unpack(tar ? tar : in->archive, tar ? len : in->archive_len, dir,
                                 OPTIMIZER_MAX_BYTES);
    free(tar);
    if (e)
        return loom_err_wrap(e, in->path && in->path[0] ? "path" : "file");
    char only[256], path[PATH_MAX + 300];
    if (hpo_single_subdir(dir, only, sizeof only)) {
        char tmp[PATH_MAX + 16], inner[PATH_MAX + 300];
        snprintf(tmp, sizeof tmp, "%s.top", dir);
        snprintf(inner, sizeof inner, "%s/%s", tmp, only);
        if (rename(dir, tmp) != 0 || rename(inner, dir) != 0)
            return loom_err(LOOM_E_INTERNAL, "cannot move %s up: %s", only, strerror(errno));
        loom_err_free(fs_rm_rf(tmp)); /* the empty shell left: only space */
    }
    snprintf(path, sizeof path, "%s/optimizer.py", dir);
    if (!fs_is_file(path))
        return loom_err(LOOM_E_INVALID, "%s: no optimizer.py in the folder (WMLA's plugin "
                                        "optimizer defines class PluginOptimizer there)",
                        in->path && in->path[0] ? "path" : "file");
    return NULL;
}

static int valid_name(const char *n)
{
    if (!n || !n[0] || strlen(n) >= 64)
        return 0;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-' || *p == '.'))
            return 0;
    return n[0] != '.';
}

loom_error *hpo_algorithm_add(hpo_service *svc, const hpo_algorithm_install *in)
{
    if (!valid_name(in->name))
        return loom_err(LOOM_E_INVALID, "name: expected 1 to 63 letters, digits, '_', '-' or '.'");
    int has_path = in->path && in->path[0];
    if (has_path == ((in->archive && in->archive_len) || in->archive_path != NULL))
        return loom_err(LOOM_E_INVALID, "give either 'path' (a folder on the host) or the folder "
                                        "as an archive in the 'file' part");
    if (has_path && !in->is_admin)
        return loom_err(LOOM_E_FORBIDDEN, "path: only administrators install from the host's "
                                          "folders; upload the folder as 'file'");
    if (((in->conda_home && in->conda_home[0]) || (in->conda_env && in->conda_env[0])) &&
        !in->is_admin)
        return loom_err(LOOM_E_FORBIDDEN, "condaHome, condaEnv: only administrators choose the "
                                          "interpreter (a program on the host); leave them out "
                                          "for /usr/bin/python3");
    const char *level = in->log_level && in->log_level[0] ? in->log_level : "INFO";
    if (strcasecmp(level, "DEBUG") && strcasecmp(level, "INFO") && strcasecmp(level, "WARNING") &&
        strcasecmp(level, "ERROR"))
        return loom_err(LOOM_E_INVALID, "logLevel: expected DEBUG, INFO, WARNING or ERROR");
    hpo_algorithm_rec a = {0};
    registry_entry pe;
    if (registry_acquire(svc->reg, LOOM_KIND_SEARCH, in->name, &pe) == 0) {
        registry_release(svc->reg, LOOM_KIND_SEARCH, pe.name);
        return loom_err(LOOM_E_CONFLICT, "name: a search plugin \"%s\" exists", in->name);
    }
    for (size_t i = 0; i < hpo_builtin_algorithm_count; i++)
        if (!strcasecmp(in->name, hpo_builtin_algorithms[i].wmla_name))
            return loom_err(LOOM_E_CONFLICT, "name: \"%s\" is a built-in algorithm", in->name);
    loom_error *e = interpreter(in, a.python, sizeof a.python);
    if (e)
        return e;
    snprintf(a.name, sizeof a.name, "%s", in->name);
    snprintf(a.user, sizeof a.user, "%s", in->user);
    snprintf(a.log_level, sizeof a.log_level, "%s", level);
    snprintf(a.dir, sizeof a.dir, "%.4000s/algorithms/%s", svc->home, in->name);
    a.added_at = time_now_ms();
    pthread_mutex_lock(&svc->lock);
    hpo_algorithm_rec old;
    loom_error *absent = find(svc, in->name, &old);
    if (!absent) {
        e = loom_err(LOOM_E_CONFLICT, "name: a plugin optimizer \"%s\" is installed", in->name);
    } else {
        loom_err_free(absent); /* the name is free: install it */
        e = loom_err_recode(fs_rm_rf(a.dir), LOOM_E_INTERNAL); /* a failed install's leftovers */
        if (!e)
            e = copy_in(in, a.dir);
        if (!e)
            e = open_to_searches(&a);
    }
    if (!e)
        e = store_hpo_algorithm_insert(svc->st, &a);
    if (e && loom_err_code(e) != LOOM_E_CONFLICT)
        loom_err_free(fs_rm_rf(a.dir)); /* removed again by the next install of the name */
    pthread_mutex_unlock(&svc->lock);
    return e;
}

loom_error *hpo_algorithm_remove(hpo_service *svc, const char *user, int is_admin,
                                 const char *name)
{
    hpo_algorithm_rec a;
    loom_error *e = hpo_algorithm_get(svc, user, is_admin, name, &a);
    if (e)
        return e;
    if (!is_admin && strcmp(user, a.user))
        return loom_err(LOOM_E_FORBIDDEN, "plugin optimizer \"%s\" was installed by another user",
                        name);
    pthread_mutex_lock(&svc->lock);
    for (hpo_task *t = svc->active; t && !e; t = t->next)
        if (t->nextra && !strcmp(t->extra_text[3], name))
            e = loom_err(LOOM_E_CONFLICT, "plugin optimizer \"%s\" is in use by tuning task %s",
                         name, t->rec.name);
    if (!e)
        e = store_hpo_algorithm_delete(svc->st, name);
    loom_error *left = e ? NULL : fs_rm_rf(a.dir); /* the record is gone: only space */
    if (left)
        log_warn("plugin optimizer \"%s\": %s", name, loom_err_message(left));
    loom_err_free(left);
    pthread_mutex_unlock(&svc->lock);
    return e;
}

loom_error *hpo_algorithm_publish(hpo_service *svc, const char *name, int published)
{
    return store_hpo_algorithm_publish(svc->st, name, published);
}

/* exec/exec_data.c - where an exec's DATA_DIR may be. A job reads its data
 * directory with its owner's rights but the folder is chosen by the
 * submitter, so it is kept to places meant for sharing data: the data
 * store (HOME/data), Debian's data packages (/usr/share/datasets) and the
 * roots an administrator lists (--data-root). The rest of the state home
 * (other users' execs, tuning folders, optimizers, models) is never one,
 * nor is a folder holding the home. Paths are resolved (links, "..")
 * before the check, and every refusal reads the same whether or not the
 * folder exists, so the check tells no one what exists outside. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/exec_internal.h"
#include "util/fs.h"
#include "util/user_tree.h"

/* Debian's data packages install under this folder. */
#define EXEC_DATA_SYSTEM_ROOT "/usr/share/datasets"

/* 1 when `path` is `root` or beneath it (both resolved). */
static int beneath(const char *path, const char *root)
{
    size_t n = strlen(root);
    if (n == 1 && root[0] == '/')
        return 1;
    return strncmp(path, root, n) == 0 && (path[n] == 0 || path[n] == '/');
}

loom_error *exec_service_set_data_roots(exec_service *es, const char *state_home,
                                        const char *const *roots, int count)
{
    if (count > EXEC_DATA_ROOTS_MAX)
        return loom_err(LOOM_E_INVALID, "--data-root: at most %d roots, got %d",
                        EXEC_DATA_ROOTS_MAX, count);
    char home[PATH_MAX];
    if (!realpath(es->home, home))
        return loom_err(LOOM_E_INTERNAL, "%s: %s", es->home, strerror(errno));
    es->state_home[0] = 0;
    if (state_home && !realpath(state_home, es->state_home))
        return loom_err(LOOM_E_INTERNAL, "%s: %s", state_home, strerror(errno));
    for (int i = 0; i < count; i++) {
        char *real = es->data_roots[i];
        if (!realpath(roots[i], real) || !fs_is_dir(real))
            return loom_err(LOOM_E_INVALID, "--data-root %s: expected an existing folder",
                            roots[i]);
        if (es->state_home[0] && (beneath(real, es->state_home) || beneath(es->state_home, real)))
            return loom_err(LOOM_E_INVALID, "--data-root %s: the state home %s is never a "
                            "data root, nor what holds it", roots[i], es->state_home);
        if (beneath(real, home))
            return loom_err(LOOM_E_INVALID,
                            "--data-root %s: inside the state home %s, which is never a data "
                            "root (its data store %s/data always is)",
                            roots[i], home, home);
    }
    es->data_root_count = count;
    return NULL;
}

/* The allowed roots, as a sentence's list, into out. */
static void describe_roots(const exec_service *es, char *out, size_t len)
{
    size_t n = (size_t)snprintf(out, len, "%s/data, " EXEC_DATA_SYSTEM_ROOT, es->home);
    for (int i = 0; i < es->data_root_count && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, ", %s", es->data_roots[i]);
}

/* 0 when the resolved folder `real` is a place DATA_DIR may be. */
static int allowed(const exec_service *es, const char *real)
{
    char home[PATH_MAX], store_path[PATH_MAX + 8], store_root[PATH_MAX], system_root[PATH_MAX];
    snprintf(store_path, sizeof store_path, "%s/data", es->home);
    if (!realpath(es->home, home))
        return -1;
    if (!realpath(store_path, store_root)) /* not made yet: nothing is under it */
        snprintf(store_root, sizeof store_root, "%s/data", home);
    if (beneath(real, store_root))
        return 0;
    if (beneath(real, home) || beneath(home, real))
        return -1; /* the home, anything in it, or a folder holding it */
    if (es->state_home[0] && (beneath(real, es->state_home) || beneath(es->state_home, real)))
        return -1; /* the state home apart from the shared folder: the same */
    if (realpath(EXEC_DATA_SYSTEM_ROOT, system_root) && beneath(real, system_root))
        return 0;
    for (int i = 0; i < es->data_root_count; i++)
        if (beneath(real, es->data_roots[i]))
            return 0;
    return -1;
}

/* --data-dir: an existing folder under an allowed root, resolved into out.
 * Missing, not a folder, or outside: one answer. */
static loom_error *given_data_dir(const exec_service *es, const char *dir, char *out, size_t len)
{
    char real[PATH_MAX];
    if (dir[0] == '/' && realpath(dir, real) && fs_is_dir(real) && allowed(es, real) == 0 &&
        strlen(real) < len) {
        snprintf(out, len, "%s", real);
        return NULL;
    }
    char roots[EXEC_DATA_ROOTS_MAX * (PATH_MAX + 2) + PATH_MAX * 2];
    describe_roots(es, roots, sizeof roots);
    return loom_err(LOOM_E_INVALID,
                    "--data-dir \"%s\": expected an existing folder under one of the data roots "
                    "%s (the rest of the state home never is one)",
                    dir, roots);
}

/* Makes the data store (the host's own folder) and data_path beneath it
 * through util/user_tree: a link a job planted in the store is refused,
 * 400, and nothing is made outside it. */
static loom_error *make_store_folder(const char *store_root, const char *data_path)
{
    loom_error *made = fs_mkdir_p(store_root);
    if (made)
        return loom_err_recode(loom_err_wrap(made, "the data store"), LOOM_E_INTERNAL);
    if (!data_path)
        return NULL;
    int root = -1;
    loom_error *e = utree_host_root(store_root, &root);
    if (!e)
        e = utree_mkdirs(root, data_path, 0755);
    if (root >= 0)
        close(root);
    if (e && loom_err_code(e) == LOOM_E_FORBIDDEN) {
        loom_err_free(e);
        return loom_err(LOOM_E_INVALID, "--cs-datastore-meta data_path: \"%s\" leads out of the "
                        "data store %s through a link", data_path, store_root);
    }
    return e ? loom_err_wrap(e, "--cs-datastore-meta data_path") : NULL;
}

loom_error *exec_data_dir(exec_service *es, const dlicmd *d, char *out, size_t len)
{
    if (d->data_dir)
        return given_data_dir(es, d->data_dir, out, len);
    /* WMLA's data store: HOME/data, or data_path under it (made if missing;
     * dlicmd refused an absolute data_path and one with ".."). */
    char dir[PATH_MAX * 2], store_root[PATH_MAX + 8], root[PATH_MAX], real[PATH_MAX];
    snprintf(store_root, sizeof store_root, "%s/data", es->home);
    snprintf(dir, sizeof dir, "%s/%s", store_root, d->data_path ? d->data_path : "");
    loom_error *made = make_store_folder(store_root, d->data_path);
    if (made)
        return made;
    if (!realpath(store_root, root) || !realpath(dir, real))
        return loom_err(LOOM_E_INTERNAL, "%s: %s", dir, strerror(errno));
    if (!beneath(real, root))
        return loom_err(LOOM_E_INVALID,
                        "--cs-datastore-meta data_path: %s leads out of the data store %s", real,
                        root);
    if (strlen(real) >= len)
        return loom_err(LOOM_E_INVALID, "--cs-datastore-meta data_path: %s: longer than %zu "
                        "bytes", real, len - 1);
    snprintf(out, len, "%s", real);
    return NULL;
}

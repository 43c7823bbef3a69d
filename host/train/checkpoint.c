/* train/checkpoint.c - see checkpoint.h. */
#include "train/checkpoint.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/safetensors.h"
#include "util/log.h"
#include "util/user_tree.h"

#define CHECKPOINT_MAX_BYTES ((uint64_t)16 << 30)

loom_error *checkpoint_save(const char *path, const loom_tensor_view *views, const int32_t *roles,
                            uint32_t n, int params_only, const cJSON *meta)
{
    st_writer *w = safetensors_writer_new();
    if (!w)
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory", path);
    loom_error *e = NULL;
    for (uint32_t i = 0; i < n && !e; i++)
        if (!params_only || roles[i] == LOOM_TENSOR_PARAMETER)
            e = safetensors_writer_add_view(w, &views[i]);
    if (!e && meta) {
        char *text = cJSON_PrintUnformatted(meta);
        if (!text || safetensors_writer_set_metadata(w, CHECKPOINT_META_KEY, text) != 0)
            e = loom_err(LOOM_E_INTERNAL, "%s: cannot record the trainer position", path);
        free(text);
    }
    if (!e)
        e = safetensors_writer_commit(w, path);
    safetensors_writer_free(w);
    return e;
}

loom_error *checkpoint_load(const char *path, loom_tensor_view *views, uint32_t n,
                            cJSON **meta_out)
{
    st_file *f;
    loom_error *e = safetensors_open(path, CHECKPOINT_MAX_BYTES, &f);
    if (e)
        return e;
    for (uint32_t i = 0; i < n && !e; i++) {
        st_tensor_info t;
        if (safetensors_find(f, views[i].name, &t) != 0)
            e = loom_err(LOOM_E_INVALID, "%s: no tensor '%s' (the checkpoint is of another model)",
                         path, views[i].name);
        else if (t.dtype != views[i].dtype || t.nbytes != views[i].nbytes ||
                 t.ndim != views[i].ndim ||
                 memcmp(t.shape, views[i].shape, sizeof(int64_t) * t.ndim) != 0)
            e = loom_err(LOOM_E_INVALID, "%s: tensor '%s' has another dtype or shape than the model's",
                         path, views[i].name);
        else
            memcpy(views[i].data, t.data, t.nbytes);
    }
    if (!e && meta_out) {
        const char *text = safetensors_metadata(f, CHECKPOINT_META_KEY);
        *meta_out = text ? cJSON_Parse(text) : NULL;
    }
    safetensors_close(f);
    return e;
}

/* checkpoint_inspect on the file `name` beneath the folder descriptor dir. */
static loom_error *inspect_beneath(int dir, const char *name, const char *label, cJSON **meta)
{
    *meta = NULL;
    int fd;
    loom_error *e = utree_open_read(dir, name, &fd);
    st_file *f = NULL;
    if (!e)
        e = safetensors_open_fd(fd, label, CHECKPOINT_MAX_BYTES, &f);
    if (e)
        return loom_err_wrap(e, "%s", label);
    const char *text = safetensors_metadata(f, CHECKPOINT_META_KEY);
    cJSON *m = text ? cJSON_Parse(text) : NULL;
    safetensors_close(f);
    if (!cJSON_IsObject(m)) {
        cJSON_Delete(m);
        return loom_err(LOOM_E_INVALID, "%s: no trainer position (metadata '%s')", label,
                        CHECKPOINT_META_KEY);
    }
    *meta = m;
    return NULL;
}

int checkpoint_find_latest(const char *dir, char *path, size_t pathlen, int *epoch, cJSON **meta_out,
                           char *skipped, size_t skippedlen)
{
    if (skipped && skippedlen)
        skipped[0] = 0;
    if (meta_out)
        *meta_out = NULL;
    int epochs[1024], n = 0;
    int root = -1;
    DIR *d = NULL;
    if (loom_err_take(utree_root(dir, &root), NULL, 0) == LOOM_OK)
        loom_err_free(utree_list(root, "", &d));
    struct dirent *de;
    while (d && (de = readdir(d)) && n < 1024) {
        int e;
        char tail[32];
        if (sscanf(de->d_name, "epoch-%d.safetensor%31s", &e, tail) == 2 && !strcmp(tail, "s"))
            epochs[n++] = e;
    }
    if (d)
        closedir(d);
    /* Newest first. */
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (epochs[j] > epochs[i]) {
                int t = epochs[i];
                epochs[i] = epochs[j];
                epochs[j] = t;
            }
    for (int i = 0; i < n; i++) {
        char candidate[PATH_MAX], name[64], why[512];
        snprintf(name, sizeof name, "epoch-%d.safetensors", epochs[i]);
        snprintf(candidate, sizeof candidate, "%s/%s", dir, name);
        cJSON *meta;
        if (loom_err_take(inspect_beneath(root, name, candidate, &meta), why, sizeof why) ==
            LOOM_OK) {
            if (meta_out)
                *meta_out = meta;
            else
                cJSON_Delete(meta);
            snprintf(path, pathlen, "%s", candidate);
            *epoch = epochs[i];
            close(root);
            return 0;
        }
        if (skipped) {
            size_t used = strlen(skipped);
            snprintf(skipped + used, skippedlen - used, "%s%s", used ? "; " : "", why);
        }
    }
    if (root >= 0)
        close(root);
    return -1;
}

int checkpoint_best_epoch(const cJSON *val_list)
{
    int best = -1, by_loss = 0;
    double best_value = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, val_list) {
        const cJSON *step = cJSON_GetObjectItemCaseSensitive(v, "step");
        const cJSON *loss = cJSON_GetObjectItemCaseSensitive(v, "loss");
        const cJSON *acc = cJSON_GetObjectItemCaseSensitive(v, "accuracy");
        if (!cJSON_IsNumber(step))
            continue;
        if (cJSON_IsNumber(loss)) {
            if (!by_loss || best < 0 || loss->valuedouble < best_value) {
                best = (int)step->valuedouble;
                best_value = loss->valuedouble;
            }
            by_loss = 1;
        } else if (!by_loss && cJSON_IsNumber(acc) && (best < 0 || acc->valuedouble > best_value)) {
            best = (int)step->valuedouble;
            best_value = acc->valuedouble;
        }
    }
    return best;
}

static int epoch_descending(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x < y) - (x > y);
}

int checkpoint_prune(const char *dir, int keep, int best_epoch)
{
    if (keep <= 0)
        return 0;
    int *epochs = NULL, n = 0, cap = 0, removed = 0;
    /* The job's folder: listed and pruned beneath its descriptor, never
     * through a link it planted (util/user_tree). */
    int root = -1;
    DIR *d = NULL;
    loom_error *e = utree_root(dir, &root);
    if (!e)
        e = utree_list(root, "", &d);
    if (e)
        log_warn("checkpoints not pruned: %s", loom_err_message(e));
    loom_err_free(e);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        int e;
        char tail[32];
        if (sscanf(de->d_name, "epoch-%d.safetensor%31s", &e, tail) != 2 || strcmp(tail, "s"))
            continue;
        if (n == cap) {
            int *grown = realloc(epochs, (size_t)(cap = cap ? cap * 2 : 64) * sizeof *epochs);
            if (!grown)
                break;
            epochs = grown;
        }
        epochs[n++] = e;
    }
    if (d)
        closedir(d);
    if (epochs)
        qsort(epochs, (size_t)n, sizeof *epochs, epoch_descending);
    for (int i = keep; i < n; i++) {
        if (epochs[i] == best_epoch)
            continue;
        char name[64];
        snprintf(name, sizeof name, "epoch-%d.safetensors", epochs[i]);
        removed += root >= 0 && loom_err_take(utree_unlink(root, name), NULL, 0) == LOOM_OK;
    }
    free(epochs);
    if (root >= 0)
        close(root);
    return removed;
}

/* train/checkpoint.c - see checkpoint.h. */
#include "train/checkpoint.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/safetensors.h"

#define CHECKPOINT_MAX_BYTES ((uint64_t)16 << 30)

int checkpoint_save(const char *path, const loom_tensor_view *views, const int32_t *roles,
                    uint32_t n, int params_only, const cJSON *meta, char *err, size_t errlen)
{
    st_writer *w = st_writer_new();
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++)
        if (!params_only || roles[i] == LOOM_TENSOR_PARAMETER)
            rc = st_writer_add_view(w, &views[i], err, errlen);
    if (rc == 0 && meta) {
        char *text = cJSON_PrintUnformatted(meta);
        rc = text ? st_writer_set_metadata(w, CHECKPOINT_META_KEY, text) : -1;
        free(text);
        if (rc)
            snprintf(err, errlen, "cannot record the trainer position");
    }
    if (rc == 0)
        rc = st_writer_commit(w, path, err, errlen);
    st_writer_free(w);
    return rc;
}

int checkpoint_load(const char *path, loom_tensor_view *views, uint32_t n, cJSON **meta_out,
                    char *err, size_t errlen)
{
    st_file *f = st_open(path, CHECKPOINT_MAX_BYTES, err, errlen);
    if (!f)
        return -1;
    int rc = 0;
    for (uint32_t i = 0; i < n && rc == 0; i++) {
        st_tensor_info t;
        if (st_find(f, views[i].name, &t) != 0) {
            snprintf(err, errlen, "%s: no tensor '%s' (the checkpoint is of another model)", path,
                     views[i].name);
            rc = -1;
        } else if (t.dtype != views[i].dtype || t.nbytes != views[i].nbytes ||
                   t.ndim != views[i].ndim ||
                   memcmp(t.shape, views[i].shape, sizeof(int64_t) * t.ndim) != 0) {
            snprintf(err, errlen, "%s: tensor '%s' has another dtype or shape than the model's", path,
                     views[i].name);
            rc = -1;
        } else {
            memcpy(views[i].data, t.data, t.nbytes);
        }
    }
    if (rc == 0 && meta_out) {
        const char *text = st_metadata(f, CHECKPOINT_META_KEY);
        *meta_out = text ? cJSON_Parse(text) : NULL;
    }
    st_close(f);
    return rc;
}

cJSON *checkpoint_inspect(const char *path, char *err, size_t errlen)
{
    st_file *f = st_open(path, CHECKPOINT_MAX_BYTES, err, errlen);
    if (!f)
        return NULL;
    const char *text = st_metadata(f, CHECKPOINT_META_KEY);
    cJSON *meta = text ? cJSON_Parse(text) : NULL;
    if (!cJSON_IsObject(meta)) {
        snprintf(err, errlen, "%s: no trainer position (metadata '%s')", path, CHECKPOINT_META_KEY);
        cJSON_Delete(meta);
        meta = NULL;
    }
    st_close(f);
    return meta;
}

int checkpoint_find_latest(const char *dir, char *path, size_t pathlen, int *epoch, char *skipped,
                           size_t skippedlen)
{
    if (skipped && skippedlen)
        skipped[0] = 0;
    int epochs[1024], n = 0;
    DIR *d = opendir(dir);
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
        char candidate[PATH_MAX], why[512];
        snprintf(candidate, sizeof candidate, "%s/epoch-%d.safetensors", dir, epochs[i]);
        cJSON *meta = checkpoint_inspect(candidate, why, sizeof why);
        if (meta) {
            cJSON_Delete(meta);
            snprintf(path, pathlen, "%s", candidate);
            *epoch = epochs[i];
            return 0;
        }
        if (skipped) {
            size_t used = strlen(skipped);
            snprintf(skipped + used, skippedlen - used, "%s%s", used ? "; " : "", why);
        }
    }
    return -1;
}

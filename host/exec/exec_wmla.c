/* exec/exec_wmla.c - the shapes WMLA's clients submit in, made into
 * loom's: the model archive's two layouts, WMLA's device flags.
 * See exec_internal.h. */
#include "exec/exec_internal.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/sched_service.h"
#include "util/fs.h"

/* The last component of a path, without trailing slashes, into out. */
static void last_component(const char *path, char *out, size_t len)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    size_t start = n;
    while (start > 0 && path[start - 1] != '/')
        start--;
    snprintf(out, len, "%.*s", (int)(n - start), path + start);
}

/* The only entry of dir (its name into `name`): 1 when there is exactly
 * one, 0 otherwise, -1 when dir cannot be read. */
static int only_entry(const char *dir, char *name, size_t len)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int count = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        if (++count == 1)
            snprintf(name, len, "%s", ent->d_name);
    }
    closedir(d);
    return count == 1;
}

/* Moves every entry of `from` up into `to` (its parent), then removes it.
 * The folder is first renamed aside, so an entry named like it cannot
 * collide with it. */
static loom_error *hoist(const char *to, const char *from)
{
    char aside[PATH_MAX + 32], src[PATH_MAX * 2 + 8], dst[PATH_MAX * 2 + 8];
    snprintf(aside, sizeof aside, "%s/.loom-model-%d", to, (int)getpid());
    if (rename(from, aside) != 0)
        return loom_err(LOOM_E_INTERNAL, "%s: cannot move: %s", from, strerror(errno));
    DIR *d = opendir(aside);
    if (!d)
        return loom_err(LOOM_E_INTERNAL, "%s: cannot read: %s", aside, strerror(errno));
    loom_error *e = NULL;
    struct dirent *ent;
    while (!e && (ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        snprintf(src, sizeof src, "%s/%s", aside, ent->d_name);
        snprintf(dst, sizeof dst, "%s/%s", to, ent->d_name);
        if (rename(src, dst) != 0)
            e = loom_err(LOOM_E_INTERNAL, "%s: cannot move: %s", src, strerror(errno));
    }
    closedir(d);
    if (!e && rmdir(aside) != 0)
        e = loom_err(LOOM_E_INTERNAL, "%s: cannot remove: %s", aside, strerror(errno));
    return e;
}

loom_error *exec_model_layout(const char *code_dir, const char *model_dir)
{
    if (!model_dir)
        return NULL;
    char top[NAME_MAX + 1] = "", want[NAME_MAX + 1], path[PATH_MAX * 2];
    int one = only_entry(code_dir, top, sizeof top);
    if (one < 0)
        return loom_err(LOOM_E_INTERNAL, "%s: cannot read: %s", code_dir, strerror(errno));
    snprintf(path, sizeof path, "%s/%s", code_dir, top);
    if (one == 0 || !fs_is_dir(path))
        return NULL; /* the files are at the archive's root */
    last_component(model_dir, want, sizeof want);
    if (strcmp(top, want) != 0)
        return loom_err(LOOM_E_INVALID,
                        "model archive: its top-level folder \"%s\" does not match --model-dir "
                        "\"%s\": name the folder \"%s\", or put the files at the archive's root",
                        top, model_dir, want);
    return hoist(code_dir, path);
}

void exec_wmla_devices(exec_service *es, dlicmd *d)
{
    if (!d->gpu_per_worker || d->device_type_given)
        return;
    /* the inventory's GPUs (on Slurm, the nodes'), as exec_prepare checks */
    int gpus = sched_service_kind_count(es->sched, LOOM_DEVICE_CUDA) > 0;
    d->device_type = gpus ? DEVICE_KIND_GPU : DEVICE_KIND_CPU;
    if (!gpus)
        loom_err_free(dlicmd_warn(d, "--gpuPerWorker: this host has no GPU; each worker gets "
                                     "that many CPU devices instead"));
}

void exec_note_warnings(exec_service *es, const char *id, const exec_submission *sub,
                        const dlicmd *d)
{
    char all[STORE_EXEC_WARNINGS_MAX];
    int wanted = sub->warnings && sub->warnings_len;
    size_t n = (size_t)snprintf(all, sizeof all, "%s", wanted ? sub->warnings : "");
    for (int i = 0; i < d->warning_count && n < sizeof all; i++)
        n += (size_t)snprintf(all + n, sizeof all - n, "%s\n", d->warnings[i]);
    if (wanted)
        snprintf(sub->warnings, sub->warnings_len, "%s", all);
    loom_error *e = all[0] ? store_exec_warnings_set(es->st, id, all) : NULL;
    if (e) /* the submission stands; its warnings were in the reply */
        log_warn("exec %s: %s", id, loom_err_message(e));
    loom_err_free(e);
}

loom_error *exec_framework_missing(const char *asked, const char *framework, int wmla)
{
    if (wmla)
        return loom_err(LOOM_E_NOT_FOUND,
                        "--exec-start %s: runs on loom's framework \"%s\", which is not installed "
                        "on this host (see loom framework list)",
                        asked, framework);
    return loom_err(LOOM_E_NOT_FOUND,
                    "--exec-start: no framework named \"%s\" (see loom framework list)", asked);
}

/* train/recovery.c - progress that survives losing every worker.
 *
 * Now and then, at a step boundary, the root member writes the whole state
 * (weights and optimizer state) to a file in the job's checkpoint folder
 * while the coordinator notes where training stands (the sampler, the
 * epoch's metrics). When every member holding the state is lost, training
 * goes back to that point: the sampler's position, so the samples trained
 * since are trained again and counted once, and the file, which the next
 * root loads instead of the initial weights. The copy is made at most
 * every EDT_RECOVERY_INTERVAL_MS and no more often than COST_FACTOR times
 * its own cost, and at each epoch's end. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train/coordinator_internal.h"
#include "util/fs.h"
#include "util/user_tree.h"

/* A copy's round takes at most 1/COST_FACTOR of the time; its indirect
 * costs (the file's write-back, colder caches) about as much again, so
 * keeping the copy costs under 3 % of throughput. */
#define COST_FACTOR 64

/* The copies the coordinator keeps; hidden, so no resume takes them for a
 * checkpoint. */
static void copy_path(const edt_coordinator *c, unsigned which, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s/checkpoint/.recovery-%u.safetensors", c->job.result_dir, which);
}

/* Removes both copies and any half-written one a killed worker left behind
 * (the writer's "NAME.tmp.PID.N"). */
static void remove_copies(const edt_coordinator *c)
{
    /* The job's folder: listed beneath it, never through a link. */
    DIR *dir = NULL;
    int root;
    if (loom_err_take(utree_root(c->job.result_dir, &root), NULL, 0) != LOOM_OK)
        return;
    loom_error *e = utree_list(root, "checkpoint", &dir);
    close(root);
    if (e) {
        loom_err_free(e);
        return;
    }
    struct dirent *ent;
    while ((ent = readdir(dir)) != NULL)
        if (strncmp(ent->d_name, ".recovery-", 10) == 0)
            unlinkat(dirfd(dir), ent->d_name, 0);
    closedir(dir);
}

loom_error *recovery_begin(edt_coordinator *c)
{
    edt_recovery *r = &c->rc;
    remove_copies(c);
    snprintf(r->path, sizeof r->path, "%s", c->load_path);
    if (sampler_copy(&r->smp, &c->pr.smp) != 0)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    progress_mark(c, &r->pr);
    r->saved_ms = time_mono_ms();
    return NULL;
}

int recovery_due(edt_coordinator *c, char *path, size_t pathlen)
{
    const edt_recovery *r = &c->rc;
    if (c->pr.epoch >= c->job.settings.epochs || c->pr.iteration == r->pr.iteration)
        return 0;
    if (time_mono_ms() < r->retry_ms)
        return 0;
    int64_t wait = c->job.settings.recovery_interval_ms;
    if (wait < COST_FACTOR * r->cost_ms)
        wait = COST_FACTOR * r->cost_ms;
    if (c->pr.epoch == r->pr.epoch && time_mono_ms() - r->saved_ms < wait)
        return 0;
    copy_path(c, r->next_file, path, pathlen);
    return 1;
}

void recovery_saved(edt_coordinator *c, const char *path, int64_t round_ms)
{
    edt_recovery *r = &c->rc;
    /* Without memory for the sampler's copy the older point stays. */
    if (sampler_copy(&r->smp, &c->pr.smp) != 0)
        return;
    snprintf(r->path, sizeof r->path, "%s", path);
    progress_mark(c, &r->pr);
    r->next_file ^= 1;
    r->saved_ms = time_mono_ms();
    r->cost_ms = round_ms;
    r->copies++;
    r->total_ms += round_ms;
}

void recovery_not_saved(edt_coordinator *c)
{
    int64_t wait = c->job.settings.recovery_interval_ms;
    c->rc.retry_ms = time_mono_ms() + (wait > 1000 ? wait : 1000);
}

loom_error *recovery_rewind(edt_coordinator *c)
{
    edt_recovery *r = &c->rc;
    uint64_t lost = c->pr.iteration - r->pr.iteration;
    if (sampler_copy(&c->pr.smp, &r->smp) != 0)
        return loom_err(LOOM_E_INTERNAL, "out of memory rewinding the sampler");
    progress_rewind(c, &r->pr);
    c->pr.rewound_steps += lost;
    c->pr.rewinds++;
    c->commit_next = 0; /* the reduced step died with its workers */
    snprintf(c->load_path, sizeof c->load_path, "%s", r->path);
    train_driver_say(c, "every worker holding the state was lost: rewound %llu step(s) to epoch %u, "
                  "step %llu (%s)", (unsigned long long)lost, r->pr.epoch + 1,
               (unsigned long long)r->pr.iteration,
               r->path[0] ? r->path : "the initial weights");
    return NULL;
}

void recovery_end(edt_coordinator *c)
{
    if (c->job.result_dir[0])
        remove_copies(c);
    sampler_free(&c->rc.smp);
}

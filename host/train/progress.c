/* train/progress.c - where training stands: the epoch's samples, loss and
 * clock, the epochs done, validation results (val_dict_list.json, the
 * driver's loggers) and the snapshot edt_describe answers with. Both the
 * synchronous loop and the parameter server report here, so the two modes
 * record an epoch the same way. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "train/checkpoint.h"
#include "train/coordinator_internal.h"
#include "train/progress_line.h"
#include "util/fs.h"
#include "util/num_text.h"
#include "util/user_tree.h"

/* What happens now, from where training stands. */
static progress_stage current_stage(const edt_coordinator *c, int ended)
{
    const edt_progress *p = &c->pr;
    if (p->finished)
        return PROGRESS_FINISHED;
    if (ended)
        return PROGRESS_ENDED;
    if (!p->sampler_ready)
        return PROGRESS_STARTING;
    if (p->pending_validate)
        return PROGRESS_VALIDATING;
    if (p->pending_checkpoint)
        return PROGRESS_CHECKPOINTING;
    if (p->epoch >= c->job.settings.epochs)
        return PROGRESS_SAVING;
    return PROGRESS_TRAINING;
}

static const char *const stage_names[] = {
    [PROGRESS_STARTING] = "starting",         [PROGRESS_TRAINING] = "training",
    [PROGRESS_VALIDATING] = "validating",     [PROGRESS_CHECKPOINTING] = "checkpointing",
    [PROGRESS_SAVING] = "saving",             [PROGRESS_FINISHED] = "finished",
    [PROGRESS_ENDED] = "ended"};

/* The running epoch's samples per second; 0 before its first step. */
static double epoch_rate(const edt_progress *p)
{
    if (!p->sampler_ready || p->epoch_clock_pending || p->smp.committed == 0)
        return 0;
    double secs = (double)(time_mono_ms() - p->epoch_started_ms) / 1000.0;
    return secs > 0 ? (double)p->smp.committed / secs : 0;
}

/* The person's line (progress_line.h). An epoch that ended is shown as
 * done, never as the next one past the last. */
static void add_progress_line(cJSON *o, const edt_coordinator *c, progress_stage stage,
                              double rate, uint32_t starting, uint32_t members)
{
    const edt_progress *p = &c->pr;
    uint32_t epochs = c->job.settings.epochs;
    int between = stage != PROGRESS_TRAINING && stage != PROGRESS_ENDED;
    progress_facts f = {.stage = stage, .framework = c->job.framework_name,
                        .starting = starting, .workers = members, .epochs = epochs,
                        .rate = rate, .have_loss = p->loss_n > 0,
                        .loss = p->loss_n ? p->loss_sum / (double)p->loss_n : 0,
                        .test = p->last_test};
    f.epoch = between ? p->epoch : p->epoch + 1;
    if (f.epoch > epochs)
        f.epoch = epochs;
    if (f.epoch < 1)
        f.epoch = 1;
    if (p->sampler_ready) {
        f.total = p->smp.n;
        f.done = between ? p->smp.n : p->smp.committed;
    }
    char line[PROGRESS_LINE_MAX];
    progress_line(&f, line, sizeof line);
    cJSON_AddStringToObject(o, "progress", line);
}

void train_update_snapshot(edt_coordinator *c, int ended)
{
    const edt_progress *p = &c->pr;
    pthread_mutex_lock(&c->ctl.lock);
    int64_t resize_latency_ms = c->ctl.resize_latency_ms;
    pthread_mutex_unlock(&c->ctl.lock);
    progress_stage stage = current_stage(c, ended);
    uint32_t members = train_count_in(c, SLOT_MEMBER);
    uint32_t starting = train_count_in(c, SLOT_STARTING) + train_count_in(c, SLOT_READY);
    double rate = epoch_rate(p);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "phase", stage_names[stage]);
    add_progress_line(o, c, stage, rate, ended ? 0 : starting, ended ? 0 : members);
    cJSON_AddNumberToObject(o, "epochSamplesPerSecond", rate);
    cJSON_AddNumberToObject(o, "workers", train_count_in(c, SLOT_MEMBER));
    cJSON_AddStringToObject(o, "deviceKind", train_is_gpu_job(c) ? "gpu" : "cpu");
    cJSON *devices = cJSON_AddArrayToObject(o, "workerDevices");
    for (uint32_t i = 0; i < c->m.nslots; i++)
        if (c->m.slots[i].state == SLOT_MEMBER && c->m.slots[i].device >= 0)
            cJSON_AddItemToArray(devices, cJSON_CreateNumber(c->m.slots[i].device));
    cJSON_AddNumberToObject(o, "targetWorkers", train_current_target(c));
    cJSON_AddNumberToObject(o, "maxWorkers", c->job.settings.engines);
    cJSON_AddNumberToObject(o, "generation", c->m.generation);
    cJSON_AddNumberToObject(o, "epoch", p->epoch);
    cJSON_AddNumberToObject(o, "epochs", c->job.settings.epochs);
    cJSON_AddNumberToObject(o, "iteration", (double)p->iteration);
    cJSON_AddNumberToObject(o, "effectiveBatchSize", c->job.settings.effective_batch_size);
    cJSON_AddNumberToObject(o, "batchSize", c->job.settings.batch_size);
    cJSON_AddNumberToObject(o, "samplesPerSecond", p->last_rate);
    if (p->sampler_ready) {
        cJSON_AddNumberToObject(o, "epochSamplesDone", (double)p->smp.committed);
        cJSON_AddNumberToObject(o, "epochSamples", (double)p->smp.n);
    }
    if (p->loss_n)
        cJSON_AddNumberToObject(o, "trainLoss", p->loss_sum / (double)p->loss_n);
    /* the running loss at each of the last iterations, oldest first */
    cJSON *recent = cJSON_AddArrayToObject(o, "recentLosses");
    uint64_t first = p->nrecent > EDT_RECENT_LOSSES ? p->nrecent - EDT_RECENT_LOSSES : 0;
    for (uint64_t k = first; recent && k < p->nrecent; k++) {
        const edt_recent_loss *r = &p->recent[k % EDT_RECENT_LOSSES];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "iteration", (double)r->iteration);
        cJSON_AddNumberToObject(e, "epoch", r->epoch);
        cJSON_AddNumberToObject(e, "loss", r->loss);
        cJSON_AddItemToArray(recent, e);
    }
    if (p->last_test)
        cJSON_AddItemToObject(o, "testMetrics", cJSON_Duplicate(p->last_test, 1));
    if (c->rc.copies) {
        cJSON_AddNumberToObject(o, "stateCopies", (double)c->rc.copies);
        cJSON_AddNumberToObject(o, "stateCopyMs", (double)c->rc.total_ms);
    }
    if (resize_latency_ms >= 0)
        cJSON_AddNumberToObject(o, "lastResizeMs", (double)resize_latency_ms);
    cJSON_AddItemToObject(o, "epochsDone", cJSON_Duplicate(p->epochs_done, 1));
    cJSON *plugin_failures = logger_set_failures(c->driver_loggers); /* plugins that crashed or hung */
    if (plugin_failures)
        cJSON_AddItemToObject(o, "pluginFailures", plugin_failures);
    pthread_mutex_lock(&c->ctl.lock);
    cJSON_Delete(c->ctl.snapshot);
    c->ctl.snapshot = o;
    pthread_mutex_unlock(&c->ctl.lock);
}

void train_start_epoch_clock(edt_coordinator *c)
{
    if (c->pr.epoch_clock_pending) {
        c->pr.epoch_started_ms = time_mono_ms();
        c->pr.epoch_clock_pending = 0;
    }
}

void train_add_metrics(edt_coordinator *c, const cJSON *train, uint64_t n)
{
    const cJSON *loss = cJSON_GetObjectItemCaseSensitive(train, "loss");
    const cJSON *acc = cJSON_GetObjectItemCaseSensitive(train, "accuracy");
    if (cJSON_IsNumber(loss)) {
        c->pr.loss_sum += loss->valuedouble * (double)n;
        c->pr.loss_n += n;
        edt_recent_loss *r = &c->pr.recent[c->pr.nrecent++ % EDT_RECENT_LOSSES];
        *r = (edt_recent_loss){.iteration = c->pr.iteration, .epoch = c->pr.epoch,
                               .loss = c->pr.loss_sum / (double)c->pr.loss_n};
    }
    if (cJSON_IsNumber(acc)) {
        c->pr.acc_sum += acc->valuedouble * (double)n;
        c->pr.have_acc = 1;
    }
}

/* What identifies the file's current contents; all zero when absent. */
static void val_file_signature(const char *path, uint64_t sig[4])
{
    struct stat st;
    memset(sig, 0, sizeof(uint64_t) * 4);
    if (stat(path, &st) == 0) {
        sig[0] = (uint64_t)st.st_dev;
        sig[1] = (uint64_t)st.st_ino;
        sig[2] = (uint64_t)st.st_size;
        sig[3] = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
    }
}

void train_note_val_list_file(edt_coordinator *c)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/val_dict_list.json", c->job.result_dir);
    val_file_signature(path, c->pr.val_file_sig);
}

/* A file the trainer wrote in the exec folder is the job's to rewrite
 * (WMLA's scripts write val_dict_list.json themselves, in place): given,
 * through its descriptor, to the account the workers run as. */
static void give_to_job(edt_coordinator *c, const char *rel)
{
    if (c->m.worker_uid == geteuid())
        return;
    int fd = -1;
    loom_error *e = utree_open_read_in(c->job.result_dir, rel, &fd);
    if (!e && fchown(fd, c->m.worker_uid, (gid_t)-1) != 0)
        e = loom_err(LOOM_E_INTERNAL, "%s: cannot give it to uid %u: %s", rel,
                     (unsigned)c->m.worker_uid, strerror(errno));
    if (fd >= 0)
        close(fd);
    if (e)
        train_driver_say(c, "%s", loom_err_message(e));
    loom_err_free(e);
}

/* Writes val_dict_list.json, unless the job wrote one of its own (a user's
 * callback, as WMLA's scripts do): then that file stays as it is. */
static void write_val_list(edt_coordinator *c)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/val_dict_list.json", c->job.result_dir);
    uint64_t now[4];
    val_file_signature(path, now);
    if (!c->pr.val_file_theirs && memcmp(now, c->pr.val_file_sig, sizeof now) != 0) {
        c->pr.val_file_theirs = 1;
        train_driver_say(c, "val_dict_list.json was written by the job itself; the trainer leaves it "
                      "as it is");
    }
    if (c->pr.val_file_theirs)
        return;
    /* Numbers as their shortest exact text (cJSON's falls back to 17
     * digits where 16 read back: 0.79999999999999993 for 0.7999999999999999). */
    cJSON *shown = cJSON_Duplicate(c->pr.val_list, 1);
    num_text_json_shortest(shown);
    char *text = shown ? cJSON_Print(shown) : NULL;
    cJSON_Delete(shown);
    if (text) { /* the exec folder is the job's: written beneath it */
        loom_error *e = utree_write_file_in(c->job.result_dir, "val_dict_list.json", text,
                                            strlen(text), 0644);
        if (!e)
            give_to_job(c, "val_dict_list.json");
        loom_err_free(e);
        free(text);
        val_file_signature(path, c->pr.val_file_sig);
    }
}

/* The epoch's entry of epochsDone. */
static cJSON *epoch_record(edt_progress *p, double secs, cJSON *train)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "epoch", p->epoch + 1);
    cJSON_AddNumberToObject(e, "samples", (double)p->smp.committed);
    cJSON_AddNumberToObject(e, "expected", (double)p->smp.n);
    cJSON_AddNumberToObject(e, "duplicates", (double)p->smp.duplicates);
    cJSON_AddBoolToObject(e, "exactlyOnce", sampler_epoch_complete(&p->smp));
    cJSON_AddNumberToObject(e, "seconds", secs);
    cJSON_AddNumberToObject(e, "samplesPerSecond", p->last_rate);
    cJSON_AddNumberToObject(e, "rewoundSteps", (double)p->rewound_steps);
    cJSON_AddItemToObject(e, "train", train);
    return e;
}

void train_end_epoch(edt_coordinator *c)
{
    edt_progress *p = &c->pr;
    double secs = (double)(time_mono_ms() - p->epoch_started_ms) / 1000.0;
    p->last_rate = secs > 0 ? (double)p->smp.committed / secs : 0;
    cJSON *train = cJSON_CreateObject();
    if (p->loss_n) {
        cJSON_AddNumberToObject(train, "loss", p->loss_sum / (double)p->loss_n);
        if (p->have_acc)
            cJSON_AddNumberToObject(train, "accuracy", p->acc_sum / (double)p->loss_n);
    }
    cJSON_AddItemToArray(p->epochs_done, epoch_record(p, secs, train));
    char rewound[96] = "";
    if (p->rewinds)
        snprintf(rewound, sizeof rewound, "; rewound %llu step(s) after losing every worker",
                 (unsigned long long)p->rewound_steps);
    train_driver_say(c, "epoch %u/%u: %llu of %llu samples, each once: %s; %.2f s, %.0f samples/s, "
                  "train loss %.4f, %u worker(s)%s",
               p->epoch + 1, c->job.settings.epochs, (unsigned long long)p->smp.committed,
               (unsigned long long)p->smp.n, sampler_epoch_complete(&p->smp) ? "yes" : "NO", secs,
               p->last_rate, p->loss_n ? p->loss_sum / (double)p->loss_n : 0,
               train_count_in(c, SLOT_MEMBER), rewound);
    p->rewound_steps = 0;
    p->rewinds = 0;
    uint32_t done = p->epoch + 1;
    if (done > p->logged_through) {
        logger_set_train_json(c->driver_loggers, train, p->iteration, done,
                              train_count_in(c, SLOT_MEMBER));
        p->logged_through = done;
    }
    const edt_settings *s = &c->job.settings;
    p->pending_validate = s->validation_freq && done > p->validated_through &&
                          (done % s->validation_freq == 0 || done == s->epochs);
    p->pending_checkpoint = s->checkpoint_freq && done > p->checkpointed_through &&
                            done % s->checkpoint_freq == 0 &&
                            (done < s->epochs || s->checkpoint_last);
    p->epoch++;
    p->loss_sum = p->acc_sum = 0;
    p->loss_n = 0;
    if (p->epoch < s->epochs) {
        sampler_begin_epoch(&p->smp, p->epoch);
        /* The clock starts at the epoch's first step: validation and the
         * checkpoint belong to neither epoch's rate. */
        p->epoch_clock_pending = 1;
    }
}

void train_keep_job_metrics(edt_coordinator *c, int32_t split, cJSON *metrics, uint32_t epoch)
{
    cJSON_Delete(c->job_metrics_doc);
    c->job_metrics_doc = metrics;
    c->job_metrics = (msg_job_metrics){.present = metrics != NULL, .split = split,
                                       .epoch = epoch, .workers = train_count_in(c, SLOT_MEMBER),
                                       .iteration = c->pr.iteration, .metrics = metrics};
}

void train_record_validation(edt_coordinator *c, cJSON *metrics, uint64_t n)
{
    edt_progress *p = &c->pr;
    cJSON *entry = cJSON_CreateObject();
    cJSON_AddNumberToObject(entry, "step", p->epoch);
    cJSON *v;
    cJSON_ArrayForEach(v, metrics) cJSON_AddNumberToObject(entry, v->string, v->valuedouble);
    cJSON_AddItemToArray(p->val_list, entry);
    p->validated_through = p->epoch;
    write_val_list(c);
    logger_set_test_json(c->driver_loggers, metrics, p->iteration, p->epoch);
    /* the epoch validated, counted from 0 as the adapters count it */
    train_keep_job_metrics(c, LOOM_SPLIT_TEST, cJSON_Duplicate(metrics, 1), p->epoch ? p->epoch - 1 : 0);
    char line[256] = "";
    cJSON_ArrayForEach(v, metrics) {
        size_t used = strlen(line);
        snprintf(line + used, sizeof line - used, " %s %.4f", v->string, v->valuedouble);
    }
    train_driver_say(c, "validation after epoch %u on %llu test samples:%s", p->epoch,
               (unsigned long long)n, line);
    cJSON_Delete(p->last_test);
    p->last_test = metrics;
}

void checkpoint_saved(edt_coordinator *c, const char *path)
{
    c->pr.checkpointed_through = c->pr.epoch;
    train_driver_say(c, "checkpoint %s", path);
    if (c->job.checkpoints_keep <= 0)
        return;
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/checkpoint", c->job.result_dir);
    int best = checkpoint_best_epoch(c->pr.val_list);
    int removed = checkpoint_prune(dir, c->job.checkpoints_keep, best);
    if (removed)
        train_driver_say(c, "removed %d older checkpoint(s): the newest %d%s are kept (loom serve "
                      "--checkpoints-keep)",
                   removed, c->job.checkpoints_keep, best >= 0 ? " and the best" : "");
}

void train_save_model_spec(edt_coordinator *c)
{
    /* Within the exec folder, the job's: copied beneath it. */
    char spec_copy[PATH_MAX + 32];
    snprintf(spec_copy, sizeof spec_copy, "model/%s", EDT_SPEC_DEFAULT);
    const char *rel = utree_rel_of(c->job.result_dir, c->job.spec_path);
    loom_error *e = rel ? utree_copy_file_in(c->job.result_dir, rel, c->job.result_dir,
                                             spec_copy, 0644)
                        : NULL;
    if (e)
        train_driver_say(c, "the training spec was not kept beside the model: %s",
                   loom_err_message(e));
    loom_err_free(e);
}

void progress_mark(const edt_coordinator *c, edt_progress_mark *m)
{
    const edt_progress *p = &c->pr;
    *m = (edt_progress_mark){.epoch = p->epoch, .iteration = p->iteration,
                             .pending_validate = p->pending_validate,
                             .pending_checkpoint = p->pending_checkpoint,
                             .epoch_clock_pending = p->epoch_clock_pending,
                             .epoch_started_ms = p->epoch_started_ms, .loss_sum = p->loss_sum,
                             .acc_sum = p->acc_sum, .loss_n = p->loss_n, .have_acc = p->have_acc,
                             .nepochs_done = cJSON_GetArraySize(p->epochs_done)};
}

void progress_rewind(edt_coordinator *c, const edt_progress_mark *m)
{
    edt_progress *p = &c->pr;
    p->epoch = m->epoch;
    p->iteration = m->iteration;
    /* Validated or checkpointed since the mark: the owner has it already
     * (evaluation-metrics.txt, val_dict_list.json, checkpoint/). */
    p->pending_validate = m->pending_validate && m->epoch > p->validated_through;
    p->pending_checkpoint = m->pending_checkpoint && m->epoch > p->checkpointed_through;
    p->epoch_clock_pending = m->epoch_clock_pending;
    p->epoch_started_ms = m->epoch_started_ms;
    p->loss_sum = m->loss_sum;
    p->acc_sum = m->acc_sum;
    p->loss_n = m->loss_n;
    p->have_acc = m->have_acc;
    while (cJSON_GetArraySize(p->epochs_done) > m->nepochs_done)
        cJSON_DeleteItemFromArray(p->epochs_done, cJSON_GetArraySize(p->epochs_done) - 1);
}

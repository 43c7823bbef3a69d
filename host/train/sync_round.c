/* train/sync_round.c - synchronous training, one round at a time.
 *
 * Each round the coordinator sends every member a plan and waits for every
 * member's reply. A plan says, in order: commit (apply the step the
 * previous round reduced) or not; a generation to join and a root to pull
 * the state from; then one action: step, validate, checkpoint or finish. A
 * step's samples count as used only when every member reported its
 * all-reduce done; otherwise they go back to the epoch's pool and the next
 * plan says not to apply. So a worker dying anywhere costs one step's work,
 * never a sample twice or not at all.
 *
 * A stable generation runs several steps per round (EDT_STEPS_PER_ROUND,
 * within EDT_ROUND_MS as measured), so the coordinator's messages cost
 * less per step. Workers apply every step of the round but the last at
 * once. When such a round fails, the steps every survivor applied count
 * (those of the survivor furthest along; the others pull its state at the
 * next generation) and the rest go back to the pool. A round never crosses
 * an epoch's end, and a generation's first round has one step, so a grow
 * or a hand-over waits at most one bounded round more than before. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "train/coordinator_internal.h"
#include "util/fs.h"
#include "util/user_tree.h"

typedef struct round_plan {
    plan_action action;
    int join;
    int root;
    uint64_t *taken; /* step: the samples, step after step */
    size_t ntaken;
    uint32_t nsteps;                  /* step: how many */
    size_t step_taken[MSG_MAX_STEPS]; /* step: each one's samples */
    char path[PATH_MAX];
    int recovery;       /* CHECKPOINT: the coordinator's copy of the state */
    int64_t started_ms;
    uint64_t started_ns;
} round_plan;

/* The fields every member's plan shares. */
static msg_plan common_plan(edt_coordinator *c, const round_plan *p)
{
    msg_plan m = {.round = c->round, .commit = c->commit_next, .epoch = c->pr.epoch,
                  .epochs = c->job.settings.epochs, .iteration = c->pr.iteration,
                  .steps_per_epoch = c->pr.steps_per_epoch, .workers = train_count_in(c, SLOT_MEMBER),
                  .timeout_ms = c->job.settings.step_timeout_ms, .action = p->action,
                  .has_join = p->join};
    if (p->join) {
        msg_join *j = &m.join;
        j->generation = c->m.generation;
        j->root = p->root;
        j->timeout_ms = p->root >= 0 ? c->job.settings.pull_timeout_s * 1000
                                     : c->job.settings.step_timeout_ms;
        j->shrink = train_is_gpu_job(c) && c->m.nccl_shrink;
        if (j->shrink) {
            j->nexclude = c->m.nccl_nexclude;
            memcpy(j->exclude, c->m.nccl_exclude, sizeof(uint32_t) * j->nexclude);
        } else if (train_is_gpu_job(c)) {
            memcpy(j->nccl_id, c->m.nccl_id_hex, sizeof j->nccl_id);
        }
        if (c->m.net) {
            j->nnet = c->m.nnet;
            j->net = c->m.net_peers;
        }
    }
    return m;
}

/* A member's batch for the round: each step's share of that step's samples
 * in micro-batches of at most batch_size; each carries the scale that makes
 * the averaged gradient the mean over the step's samples: count * world /
 * step_samples. The arrays hold p->ntaken / world + 2 * nsteps + 2. */
static void member_batch(const round_plan *p, uint32_t world, uint32_t rank, uint32_t b,
                         msg_batch *batch)
{
    size_t step_start = 0, at = 0;
    batch->count = 0;
    batch->nsteps = p->nsteps;
    for (uint32_t k = 0; k < p->nsteps; k++) {
        size_t n = p->step_taken[k];
        size_t share = n / world + (rank < n % world);
        size_t first = step_start + rank * (n / world) + (rank < n % world ? rank : n % world);
        memcpy(batch->samples + at, p->taken + first, share * sizeof(uint64_t));
        at += share;
        uint32_t before = batch->count;
        for (size_t done = 0; done < share; done += b) {
            size_t m = share - done < b ? share - done : b;
            batch->sizes[batch->count] = (uint32_t)m;
            batch->scales[batch->count++] = (double)m * world / (double)n;
        }
        batch->step_mbs[k] = batch->count - before;
        step_start += n;
    }
}

/* Sends each member its plan. */
static void send_plans(edt_coordinator *c, const round_plan *p)
{
    c->round++;
    msg m = {.kind = MSG_PLAN, .u.plan = common_plan(c, p)};
    msg_plan *plan = &m.u.plan;
    plan->job_metrics = c->job_metrics; /* dropped once sent: each round's go once */
    uint32_t world = plan->workers, rank = 0, b = c->job.settings.batch_size;
    if (world == 0) /* train_plan_membership refuses an empty generation */
        return;
    size_t most = p->ntaken / world + 2 * (size_t)p->nsteps + 2;
    uint64_t *samples = malloc(sizeof(uint64_t) * most);
    uint32_t *sizes = malloc(sizeof(uint32_t) * most);
    uint32_t *step_mbs = malloc(sizeof(uint32_t) * (p->nsteps + 1));
    double *scales = malloc(sizeof(double) * most);
    int have_memory = samples && sizes && step_mbs && scales;
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddNumberToObject(meta, "epoch", c->pr.epoch);
    cJSON_AddNumberToObject(meta, "iteration", (double)c->pr.iteration);
    cJSON_AddNumberToObject(meta, "seed", (double)c->job.settings.seed);
    cJSON_AddStringToObject(meta, "exec", c->job.exec_id);
    for (uint32_t i = 0; i < c->m.nslots; i++) {
        edt_slot *s = &c->m.slots[i];
        if (s->state != SLOT_MEMBER)
            continue;
        plan->load = p->join && c->load_path[0] && p->root >= 0 && (int)rank == p->root
                         ? c->load_path : NULL;
        plan->path = rank == 0 && p->path[0] ? p->path : NULL;
        plan->meta = meta;
        plan->begin = c->m.ntest * rank / world;
        plan->end = c->m.ntest * (rank + 1) / world;
        plan->batch = (msg_batch){.samples = samples, .sizes = sizes, .scales = scales,
                                  .step_mbs = step_mbs};
        if (have_memory && p->action == PLAN_STEP)
            member_batch(p, world, rank, b, &plan->batch);
        loom_error *e = have_memory ? train_slot_send(c, i, &m, NULL, 0)
                                    : loom_err(LOOM_E_INTERNAL, "out of memory");
        if (e) {
            loom_err_free(e);
            s->reply = (msg){.kind = MSG_REPLY,
                             .u.reply = {.ok = 0, .error = "control connection lost"}};
            s->has_reply = 1;
        }
        rank++;
    }
    cJSON_Delete(meta);
    train_keep_job_metrics(c, 0, NULL, 0);
    free(samples);
    free(sizes);
    free(step_mbs);
    free(scales);
    c->commit_next = 0; /* workers applied it on receipt */
    if (p->join)
        c->load_path[0] = 0;
}

/* Reads the reply (or a heartbeat) a member sent; drops the member when
 * it cannot. */
static int read_reply(edt_coordinator *c, uint32_t i)
{
    edt_slot *s = &c->m.slots[i];
    msg reply;
    loom_error *e = train_msg_recv(s->fd, time_mono_ms() + 5000, &reply);
    if (!e && reply.kind == MSG_HEARTBEAT) {
        train_msg_free(&reply);
        train_heard(c, i);
        return 1;
    }
    if (!e && reply.kind != MSG_REPLY) {
        e = loom_err(LOOM_E_INVALID, "a %s message where a reply was due", train_msg_kind_name(reply.kind));
        train_msg_free(&reply);
    }
    if (e) {
        char why[512];
        if (loom_err_code(e) == LOOM_E_INVALID)
            snprintf(why, sizeof why, "its reply was refused: %s", loom_err_message(e));
        else if (loom_err_code(e) == LOOM_E_DEADLINE)
            snprintf(why, sizeof why, "its reply was not read: %s", loom_err_message(e));
        else
            snprintf(why, sizeof why, "its control connection closed (the process died)");
        loom_err_free(e);
        train_drop_slot(c, i, why);
        return 0;
    }
    s->reply = reply;
    s->has_reply = 1;
    s->awaiting = 0;
    train_heard(c, i);
    return 1;
}

/* A member that failed its round; after too many failed pulls of the
 * weights it is stopped: PULL_FAILED. */
static void note_failure(edt_coordinator *c, uint32_t i)
{
    edt_slot *s = &c->m.slots[i];
    const msg_reply *r = &s->reply.u.reply;
    train_driver_say(c, "worker %u: %s", i, r->error ? r->error : "failed");
    if (r->pull_failed && !s->has_state && ++s->pull_failures >= (int)c->job.settings.pull_limit) {
        char reason[256];
        snprintf(reason, sizeof reason,
                 "PULL_FAILED: could not pull the weights within %u s, %d time(s); stopping",
                 c->job.settings.pull_timeout_s, s->pull_failures);
        train_driver_say(c, "worker %u %s", i, reason);
        train_send_exit(c, i, reason, 3);
    }
}

/* A round whose members all lived but one failed with an error of its own
 * (its adapter's, say) would fail the same way forever: after
 * max_worker_failures such rounds in a row the job ends, naming the worker
 * and its error. A round that lost a member is the deaths' rule's. */
static void note_error_round(edt_coordinator *c, int all_ok, int lost, int reported)
{
    if (all_ok || lost || reported < 0) {
        if (all_ok)
            c->m.error_rounds = 0;
        return;
    }
    const msg_reply *r = &c->m.slots[reported].reply.u.reply;
    if (++c->m.error_rounds >= c->job.settings.max_worker_failures && !c->m.failing[0])
        snprintf(c->m.failing, sizeof c->m.failing,
                 "worker %d failed %u rounds in a row (EDT_MAX_WORKER_FAILURES): %s", reported,
                 c->m.error_rounds, r->error ? r->error : "failed");
}

/* Waits for every member's reply. Members that die or miss the deadline are
 * dropped. Returns 1 when every member replied ok. */
static int collect_replies(edt_coordinator *c, int64_t deadline)
{
    int all_ok = 1, lost = 0;
    for (;;) {
        struct pollfd fds[MAX_SLOTS];
        uint32_t who[MAX_SLOTS], n = 0;
        for (uint32_t i = 0; i < c->m.nslots; i++)
            if (c->m.slots[i].state == SLOT_MEMBER && !c->m.slots[i].has_reply) {
                fds[n] = (struct pollfd){.fd = c->m.slots[i].fd, .events = POLLIN};
                who[n++] = i;
            }
        if (n == 0)
            break;
        int64_t left = deadline - time_mono_ms();
        if (left <= 0) {
            for (uint32_t k = 0; k < n; k++)
                train_drop_slot(c, who[k], "no reply within the step deadline");
            all_ok = 0;
            lost = 1;
            break;
        }
        int r = poll(fds, n, left > 200 ? 200 : (int)left);
        if (r < 0 && errno != EINTR)
            break;
        for (uint32_t k = 0; k < n; k++)
            if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) && !read_reply(c, who[k]))
                all_ok = 0, lost = 1;
        /* A member that died without closing its socket yet, or that
         * went silent (stopped, or its machine lost). */
        if (train_reap(c) > 0 || train_keep_alive(c) > 0)
            all_ok = 0, lost = 1;
        train_accept_hellos(c, 0);
    }
    int reported = -1;
    for (uint32_t i = 0; i < c->m.nslots; i++) {
        edt_slot *s = &c->m.slots[i];
        if (s->state == SLOT_MEMBER && s->has_reply && !s->reply.u.reply.ok) {
            all_ok = 0;
            note_failure(c, i);
            if (!s->reply.u.reply.pull_failed && reported < 0)
                reported = (int)i;
        }
    }
    note_error_round(c, all_ok, lost, reported);
    return all_ok;
}

static void clear_replies(edt_coordinator *c)
{
    for (uint32_t i = 0; i < c->m.nslots; i++) {
        train_msg_free(&c->m.slots[i].reply);
        c->m.slots[i].has_reply = 0;
    }
}

/* Weighted average over the members' replies of their train (or eval)
 * metrics, weighted by "count". */
static cJSON *combine(edt_coordinator *c, int eval, uint64_t *total)
{
    cJSON *sum = cJSON_CreateObject();
    double weight = 0;
    for (uint32_t i = 0; i < c->m.nslots; i++) {
        edt_slot *s = &c->m.slots[i];
        if (s->state != SLOT_MEMBER || !s->has_reply)
            continue;
        const msg_reply *r = &s->reply.u.reply;
        double n = (double)r->count;
        if (n <= 0)
            continue;
        weight += n;
        const cJSON *metrics = eval ? r->eval : r->train, *v;
        cJSON_ArrayForEach(v, metrics) {
            cJSON *acc = cJSON_GetObjectItemCaseSensitive(sum, v->string);
            if (!acc)
                acc = cJSON_AddNumberToObject(sum, v->string, 0);
            cJSON_SetNumberValue(acc, acc->valuedouble + v->valuedouble * n);
        }
    }
    cJSON *v;
    cJSON_ArrayForEach(v, sum) cJSON_SetNumberValue(v, weight > 0 ? v->valuedouble / weight : 0);
    if (total)
        *total = (uint64_t)weight;
    return sum;
}

/* How many steps this round runs: one in a generation's first round (a
 * grow is measured at its first step) and until a step's time is known;
 * else as many as fit EDT_ROUND_MS, at most EDT_STEPS_PER_ROUND. */
static uint32_t steps_for_round(const edt_coordinator *c, int join)
{
    const edt_settings *s = &c->job.settings;
    if (join || c->step_ms <= 0 || s->steps_per_round <= 1)
        return 1;
    double fit = (double)s->round_ms / c->step_ms;
    if (fit <= 1)
        return 1;
    return fit >= s->steps_per_round ? s->steps_per_round : (uint32_t)fit;
}

/* What this round does: validation and a checkpoint when an epoch asked for
 * them, the final save when every epoch is done, else the next steps (never
 * past the epoch's end). */
static void choose_action(edt_coordinator *c, round_plan *p)
{
    const edt_job *j = &c->job;
    if (recovery_due(c, p->path, sizeof p->path)) {
        p->action = PLAN_CHECKPOINT;
        p->recovery = 1;
    } else if (c->pr.pending_validate) {
        p->action = PLAN_VALIDATE;
    } else if (c->pr.pending_checkpoint) {
        p->action = PLAN_CHECKPOINT;
        snprintf(p->path, sizeof p->path, "%s/checkpoint/epoch-%u.safetensors", j->result_dir,
                 c->pr.epoch);
    } else if (c->pr.epoch >= j->settings.epochs) {
        p->action = PLAN_FINISH;
        loom_err_free(utree_mkdirs_in(j->result_dir, "model", 0755)); /* the job's folder */
        snprintf(p->path, sizeof p->path, "%s/model/model.safetensors", j->result_dir);
    } else {
        p->action = PLAN_STEP;
        uint32_t want = steps_for_round(c, p->join);
        do {
            size_t n = sampler_take(&c->pr.smp, p->taken + p->ntaken,
                                    j->settings.effective_batch_size);
            p->step_taken[p->nsteps++] = n;
            p->ntaken += n;
        } while (p->nsteps < want && sampler_remaining(&c->pr.smp) > 0);
        train_start_epoch_clock(c);
    }
}

/* Every member holds the weights now. */
static void members_hold_state(edt_coordinator *c)
{
    for (uint32_t i = 0; i < c->m.nslots; i++)
        if (c->m.slots[i].state == SLOT_MEMBER)
            c->m.slots[i].has_state = 1;
}

/* This epoch's profile, per step, in the driver log (bench/train/run.sh
 * --only profile reads it); the workers print their side. */
static void print_profile(edt_coordinator *c)
{
    round_profile *f = &c->prof;
    if (f->steps) {
        double n = (double)f->steps, ms = 1e6;
        train_driver_say(c, "profile epoch %u: %llu steps in %llu rounds; per step ms: sampling %.3f, "
                   "sending plans %.3f, waiting for replies %.3f, recording %.3f",
                   c->pr.epoch + 1, (unsigned long long)f->steps, (unsigned long long)f->rounds,
                   (double)f->sample_ns / n / ms, (double)f->send_ns / n / ms,
                   (double)f->wait_ns / n / ms, (double)f->record_ns / n / ms);
    }
    memset(f, 0, sizeof *f);
}

/* Steps [0, n) of the round count: their samples are used and the
 * iteration moves on; later steps' samples go back to the pool. `whole`:
 * every step counts, the round's metrics with them, and the next plan
 * applies the last; a grow's latency is measured at its first step. */
static void commit_steps(edt_coordinator *c, const round_plan *p, uint32_t n, int whole)
{
    size_t at = 0;
    for (uint32_t k = 0; k < p->nsteps; k++) {
        if (k < n)
            sampler_commit(&c->pr.smp, p->taken + at, p->step_taken[k]);
        else
            sampler_give_back(&c->pr.smp, p->taken + at, p->step_taken[k]);
        at += p->step_taken[k];
    }
    c->pr.iteration += n;
    c->prof.steps += n;
    if (!whole) {
        if (n > 0 && sampler_remaining(&c->pr.smp) == 0)
            train_end_epoch(c);
        return;
    }
    uint64_t count;
    cJSON *m = combine(c, 0, &count);
    train_add_metrics(c, m, count);
    train_keep_job_metrics(c, LOOM_SPLIT_TRAIN, m, c->pr.epoch);
    c->commit_next = 1;
    members_hold_state(c);
    pthread_mutex_lock(&c->ctl.lock);
    int measured = c->ctl.measuring_resize == 3;
    if (measured) {
        c->ctl.resize_latency_ms = time_mono_ms() - c->ctl.resize_requested_ms;
        c->ctl.measuring_resize = 0;
    }
    int64_t latency = c->ctl.resize_latency_ms;
    pthread_mutex_unlock(&c->ctl.lock);
    if (measured)
        train_driver_say(c, "resize applied: first step with the new workers %lld ms after the request",
                   (long long)latency);
    if (sampler_remaining(&c->pr.smp) == 0) {
        print_profile(c);
        train_end_epoch(c);
    }
}

/* A round that failed: the steps the survivor furthest along applied
 * count; survivors behind it lose their state and pull its at the next
 * generation (which a failed round always forms). A worker that replied ok
 * applied all but the last step, which the next plan drops. */
static void settle_failed_round(edt_coordinator *c, const round_plan *p)
{
    uint32_t most = 0, applied[MAX_SLOTS];
    for (uint32_t i = 0; i < c->m.nslots; i++) {
        edt_slot *s = &c->m.slots[i];
        applied[i] = 0;
        if (s->state != SLOT_MEMBER || !s->has_reply || !s->has_state)
            continue;
        const msg_reply *r = &s->reply.u.reply;
        applied[i] = r->ok ? p->nsteps - 1 : (r->steps < p->nsteps ? r->steps : p->nsteps - 1);
        if (applied[i] > most)
            most = applied[i];
    }
    for (uint32_t i = 0; i < c->m.nslots; i++)
        if (c->m.slots[i].state == SLOT_MEMBER && applied[i] < most)
            c->m.slots[i].has_state = 0;
    if (most > 0)
        train_driver_say(c, "a round failed after %u of its %u steps; those %u count", most, p->nsteps,
                   most);
    commit_steps(c, p, most, 0);
}

/* Records a round's outcome. Returns 1 when training finished. */
static int record_round(edt_coordinator *c, const round_plan *p, int ok)
{
    if (p->action == PLAN_STEP && ok) {
        commit_steps(c, p, p->nsteps, 1);
        double step_ms = (double)(comm_now_ns() - p->started_ns) / 1e6 / p->nsteps;
        /* Smoothed: one slow round (a validation's page faults, a busy
         * machine) must not shrink or stretch the next one much. */
        c->step_ms = c->step_ms > 0 ? 0.7 * c->step_ms + 0.3 * step_ms : step_ms;
    } else if (p->action == PLAN_STEP) {
        settle_failed_round(c, p);
    } else if (ok && p->action == PLAN_VALIDATE) {
        uint64_t n;
        cJSON *metrics = combine(c, 1, &n);
        train_record_validation(c, metrics, n);
        c->pr.pending_validate = 0;
    } else if (p->recovery) {
        if (ok)
            recovery_saved(c, p->path, time_mono_ms() - p->started_ms);
        else
            recovery_not_saved(c);
    } else if (ok && p->action == PLAN_CHECKPOINT) {
        checkpoint_saved(c, p->path);
        c->pr.pending_checkpoint = 0;
    } else if (ok && p->action == PLAN_FINISH) {
        train_save_model_spec(c);
        train_driver_say(c, "finished: model in %s/model", c->job.result_dir);
        return 1;
    }
    if (ok && p->join)
        members_hold_state(c);
    return 0;
}

/* One round: membership at the boundary, the plans, the replies. Returns 1
 * when training finished, 0 to go on, -1 with *err to end. */
static int one_round(edt_coordinator *c, uint64_t *taken, int *failed_round, loom_error **err)
{
    train_reap(c);
    train_keep_alive(c);
    train_accept_hellos(c, 0);
    int join = 0, root = -1;
    loom_error *e = train_plan_membership(c, *failed_round, &join, &root);
    if (e && loom_err_code(e) == LOOM_E_LIMIT) {
        *err = e;
        return -1;
    }
    if (e) {
        loom_err_free(e);
        /* Nobody left now; replacements may still be starting. */
        if (train_count_in(c, SLOT_STARTING) + train_count_in(c, SLOT_READY) > 0) {
            train_update_snapshot(c, 0);
            train_accept_hellos(c, 100);
            return 0;
        }
        *err = loom_err(LOOM_E_UNAVAILABLE, "every worker died; the job cannot go on");
        return -1;
    }
    round_plan p = {.join = join, .root = root, .taken = taken, .started_ms = time_mono_ms(),
                    .started_ns = comm_now_ns()};
    int64_t t0 = (int64_t)comm_now_ns();
    choose_action(c, &p);
    int64_t t1 = (int64_t)comm_now_ns();
    pthread_mutex_lock(&c->ctl.lock);
    if (c->ctl.measuring_resize == 1 && c->m.grew)
        c->ctl.measuring_resize = 3;
    pthread_mutex_unlock(&c->ctl.lock);
    c->m.grew = 0;
    send_plans(c, &p);
    int64_t t2 = (int64_t)comm_now_ns();
    const edt_settings *s = &c->job.settings;
    uint32_t nsteps = p.nsteps ? p.nsteps : 1;
    int64_t deadline = time_mono_ms() + (int64_t)s->step_timeout_ms * nsteps +
                       (join ? (int64_t)s->pull_timeout_s * 1000 : 0) + 2000;
    int ok = collect_replies(c, deadline);
    int64_t t3 = (int64_t)comm_now_ns();
    *failed_round = !ok;
    if (ok)
        train_note_progress(c);
    if (p.action == PLAN_STEP) { /* before recording: the epoch may end there */
        c->prof.rounds++;
        c->prof.sample_ns += t1 - t0;
        c->prof.send_ns += t2 - t1;
        c->prof.wait_ns += t3 - t2;
    }
    int finished = record_round(c, &p, ok);
    clear_replies(c);
    if (!finished) /* the coordinator's end says finished */
        train_update_snapshot(c, 0);
    if (p.action == PLAN_STEP)
        c->prof.record_ns += (int64_t)comm_now_ns() - t3;
    return finished;
}

edt_end train_run_sync(edt_coordinator *c, loom_error **err)
{
    uint64_t *taken = malloc(sizeof(uint64_t) * c->job.settings.effective_batch_size *
                             c->job.settings.steps_per_round);
    if (!taken) {
        *err = loom_err(LOOM_E_INTERNAL, "out of memory");
        return EDT_END_ERROR;
    }
    edt_end end = EDT_END_ERROR;
    int failed_round = 0;
    for (;;) {
        if (train_stop_asked(c)) {
            end = EDT_END_KILLED;
            *err = loom_err(LOOM_E_UNAVAILABLE, "stopped by request");
            break;
        }
        int r = one_round(c, taken, &failed_round, err);
        if (r < 0)
            break;
        if (r > 0) {
            end = EDT_END_FINISHED;
            break;
        }
    }
    free(taken);
    return end;
}

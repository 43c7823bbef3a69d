/* train/protocol_codec.c - the one place the control messages of
 * protocol.h turn into JSON and back. Decoding checks every field it reads
 * (type, range) and names the message and field when one is wrong. */
#include "train/protocol.h"

#include <loom/loom.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
    [MSG_HELLO] = "hello", [MSG_PLAN] = "plan", [MSG_WORK] = "work",
    [MSG_EXIT] = "exit",   [MSG_REPLY] = "reply", [MSG_HEARTBEAT] = "heartbeat",
};
static const char *const action_names[] = {
    [PLAN_STEP] = "step", [PLAN_VALIDATE] = "validate",
    [PLAN_CHECKPOINT] = "checkpoint", [PLAN_FINISH] = "finish",
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *train_msg_kind_name(msg_kind kind)
{
    return kind > 0 && (size_t)kind < COUNT(kind_names) ? kind_names[kind] : NULL;
}

const char *train_plan_action_name(plan_action action)
{
    return action > 0 && (size_t)action < COUNT(action_names) ? action_names[action] : NULL;
}

/* ---- encoding ----------------------------------------------------------- */

/* Sample indices as a JSON array, written as raw text: cJSON prints each
 * number with printf's %g and reads it back to check, which made formatting
 * indices most of the coordinator's work per step. */
static cJSON *index_array(const uint64_t *idx, size_t n)
{
    char *text = malloc(n * 21 + 3), *at = text;
    if (!text) { /* cJSON's own numbers: slower, but every index is there */
        cJSON *array = cJSON_CreateArray();
        for (size_t i = 0; i < n; i++)
            cJSON_AddItemToArray(array, cJSON_CreateNumber((double)idx[i]));
        return array;
    }
    *at++ = '[';
    for (size_t i = 0; i < n; i++) {
        char digits[20];
        int k = 0;
        uint64_t v = idx[i];
        do
            digits[k++] = (char)('0' + v % 10);
        while ((v /= 10) != 0);
        if (i)
            *at++ = ',';
        while (k)
            *at++ = digits[--k];
    }
    *at++ = ']';
    *at = 0;
    cJSON *raw = cJSON_CreateRaw(text);
    free(text);
    return raw;
}

static void encode_batch(cJSON *o, const msg_batch *b)
{
    cJSON *mbs = cJSON_AddArrayToObject(o, "mb");
    cJSON *scales = cJSON_AddArrayToObject(o, "scale");
    size_t at = 0;
    for (uint32_t k = 0; k < b->count; k++) {
        cJSON_AddItemToArray(mbs, index_array(b->samples + at, b->sizes[k]));
        cJSON_AddItemToArray(scales, cJSON_CreateNumber(b->scales[k]));
        at += b->sizes[k];
    }
    if (b->nsteps > 1) {
        cJSON *steps = cJSON_AddArrayToObject(o, "steps");
        for (uint32_t k = 0; k < b->nsteps; k++)
            cJSON_AddItemToArray(steps, cJSON_CreateNumber(b->step_mbs[k]));
    }
}

static void encode_join(cJSON *o, const msg_join *j)
{
    cJSON *jo = cJSON_AddObjectToObject(o, "join");
    cJSON_AddNumberToObject(jo, "gen", j->generation);
    cJSON_AddNumberToObject(jo, "root", j->root);
    cJSON_AddNumberToObject(jo, "timeout_ms", j->timeout_ms);
    if (j->shrink) {
        cJSON *ex = cJSON_AddArrayToObject(jo, "exclude");
        for (uint32_t k = 0; k < j->nexclude; k++)
            cJSON_AddItemToArray(ex, cJSON_CreateNumber(j->exclude[k]));
    } else if (j->nccl_id[0]) {
        cJSON_AddStringToObject(jo, "nccl_id", j->nccl_id);
    }
    if (j->nnet) {
        cJSON *net = cJSON_AddArrayToObject(jo, "net");
        for (uint32_t k = 0; k < j->nnet; k++) {
            cJSON *peer = cJSON_CreateArray();
            cJSON_AddItemToArray(peer, cJSON_CreateNumber(j->net[k].slot));
            cJSON_AddItemToArray(peer, cJSON_CreateString(j->net[k].address));
            cJSON_AddItemToArray(peer, cJSON_CreateNumber(j->net[k].port));
            cJSON_AddItemToArray(net, peer);
        }
    }
}

static void encode_plan(cJSON *o, const msg_plan *p)
{
    cJSON_AddNumberToObject(o, "round", p->round);
    cJSON_AddBoolToObject(o, "commit", p->commit);
    cJSON_AddNumberToObject(o, "epoch", p->epoch);
    cJSON_AddNumberToObject(o, "epochs", p->epochs);
    cJSON_AddNumberToObject(o, "iteration", (double)p->iteration);
    cJSON_AddNumberToObject(o, "steps_per_epoch", (double)p->steps_per_epoch);
    cJSON_AddNumberToObject(o, "workers", p->workers);
    cJSON_AddNumberToObject(o, "timeout_ms", p->timeout_ms);
    if (p->has_join)
        encode_join(o, &p->join);
    if (p->has_join && p->load)
        cJSON_AddStringToObject(o, "load", p->load);
    cJSON_AddStringToObject(o, "do", train_plan_action_name(p->action));
    if (p->job_metrics.present) {
        cJSON *j = cJSON_AddObjectToObject(o, "job_metrics");
        cJSON_AddNumberToObject(j, "split", p->job_metrics.split);
        cJSON_AddNumberToObject(j, "epoch", p->job_metrics.epoch);
        cJSON_AddNumberToObject(j, "workers", p->job_metrics.workers);
        cJSON_AddNumberToObject(j, "iteration", (double)p->job_metrics.iteration);
        cJSON_AddItemToObject(j, "metrics", p->job_metrics.metrics
                                                ? cJSON_Duplicate(p->job_metrics.metrics, 1)
                                                : cJSON_CreateObject());
    }
    if (p->action == PLAN_STEP) {
        encode_batch(o, &p->batch);
    } else if (p->action == PLAN_VALIDATE) {
        cJSON_AddNumberToObject(o, "begin", (double)p->begin);
        cJSON_AddNumberToObject(o, "end", (double)p->end);
    } else if (p->path) {
        cJSON_AddStringToObject(o, "path", p->path);
        if (p->meta)
            cJSON_AddItemToObject(o, "meta", cJSON_Duplicate(p->meta, 1));
    }
}

static void encode_reply(cJSON *o, const msg_reply *r)
{
    cJSON_AddNumberToObject(o, "round", (double)r->round);
    cJSON_AddBoolToObject(o, "ok", r->ok);
    if (!r->ok && r->error)
        cJSON_AddStringToObject(o, "error", r->error);
    if (r->pull_failed)
        cJSON_AddBoolToObject(o, "pull_failed", 1);
    cJSON_AddNumberToObject(o, "count", (double)r->count);
    if (r->steps)
        cJSON_AddNumberToObject(o, "steps", r->steps);
    if (r->train)
        cJSON_AddItemToObject(o, "train", cJSON_Duplicate(r->train, 1));
    if (r->eval)
        cJSON_AddItemToObject(o, "eval", cJSON_Duplicate(r->eval, 1));
}

cJSON *train_msg_encode(const msg *m)
{
    const char *kind = train_msg_kind_name(m->kind);
    if (!kind)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "t", kind);
    switch (m->kind) {
    case MSG_HELLO:
        cJSON_AddNumberToObject(o, "slot", m->u.hello.slot);
        cJSON_AddNumberToObject(o, "pid", (double)m->u.hello.pid);
        cJSON_AddNumberToObject(o, "params", (double)m->u.hello.params);
        cJSON_AddNumberToObject(o, "train", (double)m->u.hello.ntrain);
        cJSON_AddNumberToObject(o, "test", (double)m->u.hello.ntest);
        if (m->u.hello.net_port)
            cJSON_AddNumberToObject(o, "net_port", m->u.hello.net_port);
        break;
    case MSG_PLAN:
        encode_plan(o, &m->u.plan);
        break;
    case MSG_WORK:
        cJSON_AddNumberToObject(o, "version", (double)m->u.work.version);
        cJSON_AddNumberToObject(o, "epoch", m->u.work.epoch);
        cJSON_AddNumberToObject(o, "iteration", (double)m->u.work.iteration);
        cJSON_AddNumberToObject(o, "workers", m->u.work.workers);
        encode_batch(o, &m->u.work.batch);
        break;
    case MSG_EXIT:
        cJSON_AddStringToObject(o, "reason", m->u.exit.reason ? m->u.exit.reason : "");
        cJSON_AddNumberToObject(o, "code", m->u.exit.code);
        break;
    case MSG_REPLY:
        encode_reply(o, &m->u.reply);
        break;
    case MSG_HEARTBEAT:
        break;
    }
    return o;
}

/* ---- decoding ----------------------------------------------------------- */

/* Every field each kind may carry (NULL-terminated); any other is refused,
 * so a field one side adds cannot be silently ignored by the other. */
static const char *const hello_fields[] = {"t", "blob", "slot", "pid", "params", "train", "test",
                                           "net_port", NULL};
static const char *const plan_fields[] = {"t", "blob", "round", "commit", "epoch", "epochs",
                                          "iteration", "steps_per_epoch", "workers", "timeout_ms",
                                          "join", "load", "do", "mb", "scale", "steps", "begin",
                                          "end", "path", "meta", "job_metrics", NULL};
static const char *const work_fields[] = {"t", "blob", "version", "epoch", "iteration", "workers",
                                          "mb", "scale", NULL};
static const char *const exit_fields[] = {"t", "blob", "reason", "code", NULL};
static const char *const reply_fields[] = {"t", "blob", "round", "ok", "error", "pull_failed",
                                           "count", "steps", "train", "eval", NULL};
static const char *const heartbeat_fields[] = {"t", NULL};
static const char *const join_fields[] = {"gen", "root", "timeout_ms", "exclude", "nccl_id", "net",
                                          NULL};
static const char *const job_metrics_fields[] = {"split", "epoch", "workers", "iteration", "metrics",
                                                 NULL};
static const char *const *const kind_fields[] = {
    [MSG_HELLO] = hello_fields, [MSG_PLAN] = plan_fields, [MSG_WORK] = work_fields,
    [MSG_EXIT] = exit_fields,   [MSG_REPLY] = reply_fields, [MSG_HEARTBEAT] = heartbeat_fields,
};

static loom_error *known_fields_only(const cJSON *o, const char *what, const char *const *fields)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, o) {
        size_t k = 0;
        while (fields[k] && strcmp(fields[k], item->string))
            k++;
        if (!fields[k])
            return loom_err(LOOM_E_INVALID, "%s message: unknown field \"%s\"", what, item->string);
    }
    return NULL;
}

/* Field readers: `what` names the message in errors. A missing optional
 * field leaves *out as it is. */
static loom_error *get_uint(const cJSON *o, const char *what, const char *key, int required,
                            double max, uint64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        return required ? loom_err(LOOM_E_INVALID, "%s message: no \"%s\"", what, key) : NULL;
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || !(v->valuedouble <= max) ||
        v->valuedouble != floor(v->valuedouble))
        return loom_err(LOOM_E_INVALID, "%s message: \"%s\": expected a whole number from 0 to %.0f",
                        what, key, max);
    *out = (uint64_t)v->valuedouble;
    return NULL;
}

#define U32_MAX_D 4294967295.0
#define U53_MAX_D 9007199254740992.0

static loom_error *get_u32(const cJSON *o, const char *what, const char *key, int required,
                           uint32_t *out)
{
    uint64_t v = *out;
    loom_error *e = get_uint(o, what, key, required, U32_MAX_D, &v);
    *out = (uint32_t)v;
    return e;
}

static loom_error *get_u64(const cJSON *o, const char *what, const char *key, int required,
                           uint64_t *out)
{
    return get_uint(o, what, key, required, U53_MAX_D, out);
}

static loom_error *get_string(const cJSON *o, const char *what, const char *key, int required,
                              const char **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        return required ? loom_err(LOOM_E_INVALID, "%s message: no \"%s\"", what, key) : NULL;
    if (!cJSON_IsString(v))
        return loom_err(LOOM_E_INVALID, "%s message: \"%s\": expected a string", what, key);
    *out = v->valuestring;
    return NULL;
}

static loom_error *get_bool(const cJSON *o, const char *what, const char *key, int *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        return NULL;
    if (!cJSON_IsBool(v))
        return loom_err(LOOM_E_INVALID, "%s message: \"%s\": expected true or false", what, key);
    *out = cJSON_IsTrue(v);
    return NULL;
}

/* An object of name -> number (metrics). */
static loom_error *get_metrics(const cJSON *o, const char *what, const char *key,
                               const cJSON **out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key), *item;
    if (!v)
        return NULL;
    if (!cJSON_IsObject(v))
        return loom_err(LOOM_E_INVALID, "%s message: \"%s\": expected an object of numbers", what, key);
    cJSON_ArrayForEach(item, v) if (!cJSON_IsNumber(item))
        return loom_err(LOOM_E_INVALID, "%s message: \"%s.%s\": expected a number", what, key,
                        item->string);
    *out = v;
    return NULL;
}

static loom_error *decode_batch(const cJSON *o, const char *what, msg_batch *b)
{
    const cJSON *mbs = cJSON_GetObjectItemCaseSensitive(o, "mb");
    const cJSON *scales = cJSON_GetObjectItemCaseSensitive(o, "scale");
    if (!cJSON_IsArray(mbs) || !cJSON_IsArray(scales) ||
        cJSON_GetArraySize(mbs) != cJSON_GetArraySize(scales))
        return loom_err(LOOM_E_INVALID, "%s message: expected arrays \"mb\" and \"scale\" of one length",
                        what);
    size_t total = 0;
    const cJSON *mb, *v;
    cJSON_ArrayForEach(mb, mbs) {
        if (!cJSON_IsArray(mb))
            return loom_err(LOOM_E_INVALID, "%s message: \"mb\": expected arrays of sample indices", what);
        total += (size_t)cJSON_GetArraySize(mb);
    }
    b->count = (uint32_t)cJSON_GetArraySize(mbs);
    b->samples = malloc((total + 1) * sizeof *b->samples);
    b->sizes = malloc(((size_t)b->count + 1) * sizeof *b->sizes);
    b->scales = malloc(((size_t)b->count + 1) * sizeof *b->scales);
    if (!b->samples || !b->sizes || !b->scales)
        return loom_err(LOOM_E_INTERNAL, "out of memory for a batch of %zu samples", total);
    size_t at = 0;
    uint32_t k = 0;
    cJSON_ArrayForEach(mb, mbs) {
        const cJSON *scale = cJSON_GetArrayItem(scales, (int)k);
        if (!cJSON_IsNumber(scale))
            return loom_err(LOOM_E_INVALID, "%s message: \"scale\": expected numbers", what);
        b->scales[k] = scale->valuedouble;
        b->sizes[k] = (uint32_t)cJSON_GetArraySize(mb);
        cJSON_ArrayForEach(v, mb) {
            if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > U53_MAX_D)
                return loom_err(LOOM_E_INVALID, "%s message: \"mb\": expected sample indices", what);
            b->samples[at++] = (uint64_t)v->valuedouble;
        }
        k++;
    }
    return NULL;
}

/* A plan's "steps": how many of the batch's micro-batches each step takes;
 * they must add up to all of them. */
static loom_error *decode_steps(const cJSON *o, msg_batch *b)
{
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(o, "steps"), *v;
    if (!steps)
        return NULL;
    int n = cJSON_GetArraySize(steps);
    if (!cJSON_IsArray(steps) || n < 1 || n > MSG_MAX_STEPS)
        return loom_err(LOOM_E_INVALID, "plan message: \"steps\": expected an array of 1 to %d "
                        "micro-batch counts", MSG_MAX_STEPS);
    b->step_mbs = malloc((size_t)n * sizeof *b->step_mbs);
    if (!b->step_mbs)
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    uint64_t sum = 0;
    cJSON_ArrayForEach(v, steps) {
        if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > b->count ||
            v->valuedouble != floor(v->valuedouble))
            return loom_err(LOOM_E_INVALID, "plan message: \"steps\": expected micro-batch counts");
        b->step_mbs[b->nsteps++] = (uint32_t)v->valuedouble;
        sum += (uint32_t)v->valuedouble;
    }
    if (sum != b->count)
        return loom_err(LOOM_E_INVALID, "plan message: \"steps\" add up to %llu micro-batches, "
                        "the plan has %u", (unsigned long long)sum, b->count);
    return NULL;
}

/* "net": [[slot, "address", port], ...], one per rank. */
static loom_error *decode_net_peers(const cJSON *net, const char *what, msg_join *j)
{
    if (!net)
        return NULL;
    int n = cJSON_IsArray(net) ? cJSON_GetArraySize(net) : -1;
    if (n < 1 || n > MSG_MAX_RANKS)
        return loom_err(LOOM_E_INVALID, "%s: \"net\": expected 1 to %d members", what,
                        MSG_MAX_RANKS);
    if (!(j->net = calloc((size_t)n, sizeof *j->net)))
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    const cJSON *peer;
    cJSON_ArrayForEach(peer, net) {
        const cJSON *slot = cJSON_GetArrayItem(peer, 0), *addr = cJSON_GetArrayItem(peer, 1),
                    *port = cJSON_GetArrayItem(peer, 2);
        if (!cJSON_IsArray(peer) || cJSON_GetArraySize(peer) != 3 || !cJSON_IsNumber(slot) ||
            !(slot->valuedouble >= 0) || slot->valuedouble >= MSG_MAX_RANKS ||
            !cJSON_IsString(addr) || strlen(addr->valuestring) > MSG_NET_ADDRESS_MAX ||
            !cJSON_IsNumber(port) || !(port->valuedouble >= 1) || port->valuedouble > 65535) {
            free(j->net);
            j->net = NULL;
            j->nnet = 0;
            return loom_err(LOOM_E_INVALID, "%s: \"net\"[%u]: expected [slot, \"address\" "
                            "(at most %d characters), port 1..65535]", what, j->nnet,
                            MSG_NET_ADDRESS_MAX);
        }
        msg_net_peer *p = &j->net[j->nnet++];
        p->slot = (uint32_t)slot->valuedouble;
        memcpy(p->address, addr->valuestring, strlen(addr->valuestring) + 1);
        p->port = (uint32_t)port->valuedouble;
    }
    return NULL;
}

static loom_error *decode_join(const cJSON *jo, msg_join *j)
{
    const char *what = "plan's join";
    if (!cJSON_IsObject(jo))
        return loom_err(LOOM_E_INVALID, "plan message: \"join\": expected an object");
    uint64_t root = 0;
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(jo, "root");
    loom_error *e = known_fields_only(jo, what, join_fields);
    if (!e)
        e = get_u32(jo, what, "gen", 1, &j->generation);
    if (!e)
        e = get_u32(jo, what, "timeout_ms", 1, &j->timeout_ms);
    if (!e && !(cJSON_IsNumber(r) && r->valuedouble == -1))
        e = get_u64(jo, what, "root", 1, &root);
    j->root = cJSON_IsNumber(r) && r->valuedouble == -1 ? -1 : (int32_t)root;
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(jo, "exclude"), *v;
    const char *id = NULL;
    if (!e && ex) {
        if (!cJSON_IsArray(ex) || cJSON_GetArraySize(ex) > MSG_MAX_RANKS)
            return loom_err(LOOM_E_INVALID, "%s: \"exclude\": expected at most %d ranks", what,
                            MSG_MAX_RANKS);
        j->shrink = 1;
        cJSON_ArrayForEach(v, ex) {
            if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble >= MSG_MAX_RANKS)
                return loom_err(LOOM_E_INVALID, "%s: \"exclude\": expected ranks", what);
            j->exclude[j->nexclude++] = (uint32_t)v->valuedouble;
        }
    }
    if (!e)
        e = get_string(jo, what, "nccl_id", 0, &id);
    if (!e && id && strlen(id) > MSG_NCCL_ID_HEX)
        e = loom_err(LOOM_E_INVALID, "%s: \"nccl_id\": longer than %d characters", what, MSG_NCCL_ID_HEX);
    if (!e && id)
        memcpy(j->nccl_id, id, strlen(id) + 1);
    if (!e)
        e = decode_net_peers(cJSON_GetObjectItemCaseSensitive(jo, "net"), what, j);
    return e;
}

static loom_error *decode_job_metrics(const cJSON *o, msg_job_metrics *j)
{
    const char *what = "plan's job_metrics";
    if (!cJSON_IsObject(o))
        return loom_err(LOOM_E_INVALID, "plan message: \"job_metrics\": expected an object");
    uint32_t split = 0;
    loom_error *e = known_fields_only(o, what, job_metrics_fields);
    if (!e) e = get_u32(o, what, "split", 1, &split);
    if (!e && split != LOOM_SPLIT_TRAIN && split != LOOM_SPLIT_TEST)
        e = loom_err(LOOM_E_INVALID, "%s message: \"split\": expected 0 (train) or 1 (test)", what);
    if (!e) e = get_u32(o, what, "epoch", 1, &j->epoch);
    if (!e) e = get_u32(o, what, "workers", 1, &j->workers);
    if (!e) e = get_u64(o, what, "iteration", 1, &j->iteration);
    if (!e) e = get_metrics(o, what, "metrics", &j->metrics);
    if (!e && !j->metrics)
        e = loom_err(LOOM_E_INVALID, "%s message: no \"metrics\"", what);
    j->split = (int32_t)split;
    j->present = e == NULL;
    return e;
}

static loom_error *decode_plan(const cJSON *o, msg_plan *p)
{
    const char *what = "plan", *action = NULL;
    loom_error *e = get_u32(o, what, "round", 1, &p->round);
    if (!e) e = get_bool(o, what, "commit", &p->commit);
    if (!e) e = get_u32(o, what, "epoch", 1, &p->epoch);
    if (!e) e = get_u32(o, what, "epochs", 1, &p->epochs);
    if (!e) e = get_u64(o, what, "iteration", 1, &p->iteration);
    if (!e) e = get_u64(o, what, "steps_per_epoch", 1, &p->steps_per_epoch);
    if (!e) e = get_u32(o, what, "workers", 1, &p->workers);
    if (!e) e = get_u32(o, what, "timeout_ms", 1, &p->timeout_ms);
    if (!e) e = get_string(o, what, "load", 0, &p->load);
    if (!e) e = get_string(o, what, "do", 1, &action);
    if (e)
        return e;
    const cJSON *join = cJSON_GetObjectItemCaseSensitive(o, "join");
    if (join && (e = decode_join(join, &p->join)))
        return e;
    p->has_join = join != NULL;
    const cJSON *job_metrics = cJSON_GetObjectItemCaseSensitive(o, "job_metrics");
    if (job_metrics && (e = decode_job_metrics(job_metrics, &p->job_metrics)))
        return e;
    for (size_t k = 1; k < COUNT(action_names) && !p->action; k++)
        if (!strcmp(action, action_names[k]))
            p->action = (plan_action)k;
    if (!p->action)
        return loom_err(LOOM_E_INVALID,
                        "plan message: unknown action \"%s\" (expected step, validate, checkpoint or finish)",
                        action);
    if (p->action == PLAN_STEP) {
        e = decode_batch(o, what, &p->batch);
        return e ? e : decode_steps(o, &p->batch);
    }
    if (p->action == PLAN_VALIDATE) {
        e = get_u64(o, what, "begin", 1, &p->begin);
        return e ? e : get_u64(o, what, "end", 1, &p->end);
    }
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "meta");
    if (meta && !cJSON_IsObject(meta))
        return loom_err(LOOM_E_INVALID, "plan message: \"meta\": expected an object");
    p->meta = meta;
    return get_string(o, what, "path", 0, &p->path);
}

static loom_error *decode_reply(const cJSON *o, msg_reply *r)
{
    const char *what = "reply";
    loom_error *e = get_u64(o, what, "round", 1, &r->round);
    if (!e) e = get_bool(o, what, "ok", &r->ok);
    if (!e) e = get_string(o, what, "error", 0, &r->error);
    if (!e) e = get_bool(o, what, "pull_failed", &r->pull_failed);
    if (!e) e = get_u64(o, what, "count", 0, &r->count);
    if (!e) e = get_u32(o, what, "steps", 0, &r->steps);
    if (!e) e = get_metrics(o, what, "train", &r->train);
    if (!e) e = get_metrics(o, what, "eval", &r->eval);
    return e;
}

static loom_error *decode_body(const cJSON *o, msg *m)
{
    loom_error *e = NULL;
    switch (m->kind) {
    case MSG_HELLO: {
        msg_hello *h = &m->u.hello;
        uint64_t pid = 0;
        e = get_u32(o, "hello", "slot", 1, &h->slot);
        if (!e) e = get_u64(o, "hello", "pid", 0, &pid);
        if (!e) e = get_u64(o, "hello", "params", 1, &h->params);
        if (!e) e = get_u64(o, "hello", "train", 1, &h->ntrain);
        if (!e) e = get_u64(o, "hello", "test", 1, &h->ntest);
        if (!e) e = get_u32(o, "hello", "net_port", 0, &h->net_port);
        if (!e && h->net_port > 65535)
            e = loom_err(LOOM_E_INVALID, "hello: \"net_port\": expected a port, 1..65535");
        h->pid = (int64_t)pid;
        return e;
    }
    case MSG_PLAN:
        return decode_plan(o, &m->u.plan);
    case MSG_WORK:
        e = get_u64(o, "work", "version", 1, &m->u.work.version);
        if (!e) e = get_u32(o, "work", "epoch", 1, &m->u.work.epoch);
        if (!e) e = get_u64(o, "work", "iteration", 1, &m->u.work.iteration);
        if (!e) e = get_u32(o, "work", "workers", 1, &m->u.work.workers);
        return e ? e : decode_batch(o, "work", &m->u.work.batch);
    case MSG_EXIT: {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(o, "code");
        if (!cJSON_IsNumber(code) || code->valuedouble < 0 || code->valuedouble > 255)
            return loom_err(LOOM_E_INVALID, "exit message: \"code\": expected an exit status (0-255)");
        m->u.exit.code = (int32_t)code->valuedouble;
        return get_string(o, "exit", "reason", 0, &m->u.exit.reason);
    }
    case MSG_REPLY:
        return decode_reply(o, &m->u.reply);
    case MSG_HEARTBEAT:
        break;
    }
    return NULL;
}

loom_error *train_msg_decode(cJSON *doc, msg *out)
{
    memset(out, 0, sizeof *out);
    out->doc = doc;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(doc, "t");
    loom_error *e = NULL;
    if (!cJSON_IsObject(doc) || !cJSON_IsString(t)) {
        e = loom_err(LOOM_E_INVALID, "malformed message: expected an object with a kind in \"t\"");
        goto out;
    }
    for (size_t k = 1; k < COUNT(kind_names) && !out->kind; k++)
        if (!strcmp(t->valuestring, kind_names[k]))
            out->kind = (msg_kind)k;
    if (!out->kind)
        e = loom_err(LOOM_E_INVALID, "unknown message kind \"%s\" (expected hello, plan, work, exit, reply or heartbeat)",
                     t->valuestring);
    if (!e)
        e = known_fields_only(doc, train_msg_kind_name(out->kind), kind_fields[out->kind]);
    if (!e)
        e = get_u64(doc, train_msg_kind_name(out->kind), "blob", 0, &out->blob);
    if (!e)
        e = decode_body(doc, out);
out:
    if (e)
        train_msg_free(out);
    return e;
}

static void batch_free(msg_batch *b)
{
    free(b->samples);
    free(b->sizes);
    free(b->scales);
    free(b->step_mbs);
}

void train_msg_free(msg *m)
{
    if (!m)
        return;
    if (m->kind == MSG_PLAN) {
        batch_free(&m->u.plan.batch);
        free(m->u.plan.join.net);
    }
    else if (m->kind == MSG_WORK)
        batch_free(&m->u.work.batch);
    cJSON_Delete(m->doc);
    memset(m, 0, sizeof *m);
}

/* train/edt_settings.c - see edt_settings.h. */
#include "train/edt_settings.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/protocol.h"

typedef struct knob {
    const char *json;  /* key in the spec's "training" block */
    const char *flag;  /* program argument after "--" */
    const char *alias; /* another spelling of the flag, or NULL */
    size_t offset;     /* uint32_t field of edt_settings */
    uint32_t min, max;
} knob;

#define KNOB(json, flag, alias, field, min, max)                               \
    {json, flag, alias, offsetof(edt_settings, field), min, max}

static const knob knobs[] = {
    KNOB("epochs", "--epochs", NULL, epochs, 1, 100000),
    KNOB("batch_size", "--batch-size", "--batchsize", batch_size, 1, 1u << 20),
    KNOB("engines_number", "--engines", NULL, engines, 1, 1024),
    KNOB("effective_batch_size", "--effective-batch-size", NULL, effective_batch_size, 1, 1u << 24),
    KNOB("validation_freq", "--validation-freq", NULL, validation_freq, 0, 100000),
    KNOB("checkpoint_freq", "--checkpoint-freq", NULL, checkpoint_freq, 0, 100000),
    KNOB("num_dataloader_threads", "--num-dataloader-threads", NULL, dataloader_threads, 1, 64),
    KNOB("log_every", "--log-every", NULL, log_every, 1, 1000000),
};
#define NKNOBS (sizeof knobs / sizeof *knobs)

static loom_error *parse_u32(const char *what, const char *text, uint32_t min, uint32_t max,
                             uint32_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < (long long)min || v > (long long)max)
        return loom_err(LOOM_E_INVALID, "%s: expected a whole number from %u to %u, got \"%s\"", what,
                        min, max, text);
    *out = (uint32_t)v;
    return NULL;
}

static uint32_t *field(edt_settings *s, const knob *k) { return (uint32_t *)((char *)s + k->offset); }

static void set_defaults(edt_settings *s)
{
    memset(s, 0, sizeof *s);
    s->epochs = 1;
    s->batch_size = 64;
    s->validation_freq = 1;
    s->checkpoint_freq = 1;
    s->dataloader_threads = 1;
    s->log_every = 50;
    s->seed = 1;
    s->pull_timeout_s = 30;
    s->pull_limit = 3;
    s->step_timeout_ms = 60000;
    s->max_staleness = UINT32_MAX; /* resolved from the engines at the end */
    s->max_worker_failures = 3;
    s->recovery_interval_ms = 10000;
    s->steps_per_round = 8;
    s->round_ms = 20;
    s->in_place_reduce = 1;
    s->checkpoint_last = 1; /* every checkpoint_freq-th epoch, the last included */
}

/* The spec's "training" block: the knobs, the seed; *loggers is its
 * "loggers" array (or NULL). */
static loom_error *from_spec(const cJSON *spec, edt_settings *s, int *have, const cJSON **loggers)
{
    const cJSON *training = cJSON_GetObjectItemCaseSensitive(spec, "training");
    if (training && !cJSON_IsObject(training))
        return loom_err(LOOM_E_INVALID, "spec: \"training\" must be an object");
    for (size_t i = 0; i < NKNOBS; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(training, knobs[i].json);
        if (!v)
            continue;
        /* Range first: converting an out-of-range double is undefined. */
        if (!cJSON_IsNumber(v) || !(v->valuedouble >= knobs[i].min) ||
            !(v->valuedouble <= knobs[i].max) || v->valuedouble != floor(v->valuedouble))
            return loom_err(LOOM_E_INVALID, "spec: training.%s: expected a whole number from %u to %u",
                            knobs[i].json, knobs[i].min, knobs[i].max);
        *field(s, &knobs[i]) = (uint32_t)v->valuedouble;
        have[i] = 1;
    }
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(training, "seed");
    if (seed) {
        if (!cJSON_IsNumber(seed) || !(seed->valuedouble >= 0) ||
            !(seed->valuedouble <= 9007199254740992.0) || seed->valuedouble != floor(seed->valuedouble))
            return loom_err(LOOM_E_INVALID, "spec: training.seed: expected a whole number from 0 to 2^53");
        s->seed = (uint64_t)seed->valuedouble;
    }
    *loggers = cJSON_GetObjectItemCaseSensitive(training, "loggers");
    if (*loggers && !cJSON_IsArray(*loggers))
        return loom_err(LOOM_E_INVALID, "spec: training.loggers: expected an array");
    return NULL;
}

/* The program arguments after "--": "--flag value" or "--flag=value". */
static loom_error *from_args(char *const *args, int nargs, edt_settings *s, int *have)
{
    for (int a = 0; a < nargs; a++) {
        const char *word = args[a];
        const char *eq = strchr(word, '=');
        size_t flen = eq ? (size_t)(eq - word) : strlen(word);
        const char *value = eq ? eq + 1 : (a + 1 < nargs ? args[a + 1] : NULL);
        int matched = 0;
        loom_error *e = NULL;
        for (size_t i = 0; i < NKNOBS && !matched; i++) {
            const knob *k = &knobs[i];
            if ((strlen(k->flag) == flen && strncmp(word, k->flag, flen) == 0) ||
                (k->alias && strlen(k->alias) == flen && strncmp(word, k->alias, flen) == 0)) {
                if (!value)
                    return loom_err(LOOM_E_INVALID, "%.*s needs a value", (int)flen, word);
                if ((e = parse_u32(k->flag, value, k->min, k->max, field(s, k))))
                    return e;
                have[i] = 1;
                matched = 1;
            }
        }
        if (!matched && flen == 6 && strncmp(word, "--seed", 6) == 0 && value) {
            uint32_t v = 0;
            if ((e = parse_u32("--seed", value, 0, 0xFFFFFFFFu, &v)))
                return e;
            s->seed = v;
            matched = 1;
        }
        if (!matched)
            return loom_err(LOOM_E_INVALID,
                            "unknown training argument \"%s\" (known: --epochs --batch-size --engines "
                            "--effective-batch-size --validation-freq --checkpoint-freq "
                            "--num-dataloader-threads --log-every --seed)",
                            word);
        if (!eq)
            a++;
    }
    return NULL;
}

/* The EDT_* environment pairs; other pairs are the job's own. */
static loom_error *from_env(char *const *env, int nenv, edt_settings *s)
{
    static const struct {
        const char *name;
        size_t offset;
        uint32_t min, max;
    } vars[] = {
        {"EDT_PULL_WEIGHT_TIME_OUT", offsetof(edt_settings, pull_timeout_s), 1, 86400},
        {"EDT_PULL_FAILED_LIMITS", offsetof(edt_settings, pull_limit), 1, 1000},
        {"EDT_MAX_STALENESS", offsetof(edt_settings, max_staleness), 0, 1000000},
        {"LOOM_EDT_STEP_TIMEOUT_MS", offsetof(edt_settings, step_timeout_ms), 100, 86400000},
        {"EDT_MAX_WORKER_FAILURES", offsetof(edt_settings, max_worker_failures), 1, 1000},
        {"EDT_RECOVERY_INTERVAL_MS", offsetof(edt_settings, recovery_interval_ms), 0, 86400000},
        {"EDT_STEPS_PER_ROUND", offsetof(edt_settings, steps_per_round), 1, MSG_MAX_STEPS},
        {"EDT_ROUND_MS", offsetof(edt_settings, round_ms), 1, 10000},
        {"EDT_OVERLAP_REDUCE", offsetof(edt_settings, overlap_reduce), 0, 1},
        {"EDT_IN_PLACE_REDUCE", offsetof(edt_settings, in_place_reduce), 0, 1},
        {"EDT_CHECKPOINT_LAST", offsetof(edt_settings, checkpoint_last), 0, 1},
    };
    for (int i = 0; i < nenv; i++) {
        /* The seed of the sampler's permutation and of the initial weights,
         * for jobs whose arguments are a script's own (edtPyTorch). */
        if (!strncmp(env[i], "EDT_SEED=", 9)) {
            uint32_t seed = 0;
            loom_error *e = parse_u32("EDT_SEED", env[i] + 9, 0, 0xFFFFFFFFu, &seed);
            if (e)
                return e;
            s->seed = seed;
        }
        for (size_t k = 0; k < sizeof vars / sizeof *vars; k++) {
            size_t n = strlen(vars[k].name);
            if (strncmp(env[i], vars[k].name, n) || env[i][n] != '=')
                continue;
            loom_error *e = parse_u32(vars[k].name, env[i] + n + 1, vars[k].min, vars[k].max,
                                      (uint32_t *)((char *)s + vars[k].offset));
            if (e)
                return e;
        }
    }
    return NULL;
}

/* The exclusive rule between engines and the effective batch size. */
static loom_error *engines_and_batch(edt_settings *s, const int *have)
{
    uint32_t b = s->batch_size;
    if (have[3]) {
        if (s->effective_batch_size % b != 0)
            return loom_err(LOOM_E_INVALID,
                            "effective batch size %u is not a multiple of the batch size %u",
                            s->effective_batch_size, b);
        uint32_t from_batch = s->effective_batch_size / b;
        if (!have[2] || from_batch > s->engines)
            s->engines = from_batch;
        else
            s->effective_batch_size = s->engines * b;
    } else {
        if (!have[2])
            s->engines = 1;
        s->effective_batch_size = s->engines * b;
    }
    if (s->max_staleness == UINT32_MAX)
        s->max_staleness = 2 * s->engines;
    if (s->engines > 1024)
        return loom_err(LOOM_E_INVALID, "engines: %u is more than 1024", s->engines);
    return NULL;
}

loom_error *edt_settings_resolve(const cJSON *spec, int num_worker, char *const *args, int nargs,
                                 char *const *env, int nenv, edt_settings *s)
{
    set_defaults(s);
    int have[NKNOBS] = {0};
    const cJSON *loggers = NULL;
    loom_error *e = from_spec(spec, s, have, &loggers);
    if (!e)
        e = from_args(args, nargs, s, have);
    if (e)
        return e;
    if (num_worker > 0) {
        s->engines = (uint32_t)num_worker;
        have[2] = 1;
    }
    if ((e = from_env(env, nenv, s)) || (e = engines_and_batch(s, have)))
        return e;
    s->loggers_json = loggers ? cJSON_PrintUnformatted(loggers) : strdup("[]");
    return s->loggers_json ? NULL : loom_err(LOOM_E_INTERNAL, "out of memory");
}

void edt_settings_free(edt_settings *s)
{
    free(s->loggers_json);
    s->loggers_json = NULL;
}

/* train/edt_settings.c - see edt_settings.h. */
#include "train/edt_settings.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int parse_u32(const char *what, const char *text, uint32_t min, uint32_t max, uint32_t *out,
                     char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < (long long)min || v > (long long)max) {
        snprintf(err, errlen, "%s: expected a whole number from %u to %u, got \"%s\"", what, min,
                 max, text);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

static uint32_t *field(edt_settings *s, const knob *k) { return (uint32_t *)((char *)s + k->offset); }

int edt_settings_resolve(const cJSON *spec, int num_worker, char *const *args, int nargs,
                         char *const *env, int nenv, edt_settings *s, char *err, size_t errlen)
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
    s->max_staleness = UINT32_MAX; /* resolved from the engines below */
    int have[NKNOBS] = {0};

    const cJSON *training = cJSON_GetObjectItemCaseSensitive(spec, "training");
    if (training && !cJSON_IsObject(training)) {
        snprintf(err, errlen, "spec: \"training\" must be an object");
        return -1;
    }
    for (size_t i = 0; i < NKNOBS; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(training, knobs[i].json);
        if (!v)
            continue;
        /* Range first: converting an out-of-range double is undefined. */
        if (!cJSON_IsNumber(v) || !(v->valuedouble >= knobs[i].min) ||
            !(v->valuedouble <= knobs[i].max) || v->valuedouble != floor(v->valuedouble)) {
            snprintf(err, errlen, "spec: training.%s: expected a whole number from %u to %u",
                     knobs[i].json, knobs[i].min, knobs[i].max);
            return -1;
        }
        *field(s, &knobs[i]) = (uint32_t)v->valuedouble;
        have[i] = 1;
    }
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(training, "seed");
    if (seed) {
        if (!cJSON_IsNumber(seed) || !(seed->valuedouble >= 0) ||
            !(seed->valuedouble <= 9007199254740992.0) || seed->valuedouble != floor(seed->valuedouble)) {
            snprintf(err, errlen, "spec: training.seed: expected a whole number from 0 to 2^53");
            return -1;
        }
        s->seed = (uint64_t)seed->valuedouble;
    }
    const cJSON *loggers = cJSON_GetObjectItemCaseSensitive(training, "loggers");
    if (loggers && !cJSON_IsArray(loggers)) {
        snprintf(err, errlen, "spec: training.loggers: expected an array");
        return -1;
    }

    for (int a = 0; a < nargs; a++) {
        const char *word = args[a];
        const char *eq = strchr(word, '=');
        size_t flen = eq ? (size_t)(eq - word) : strlen(word);
        const char *value = eq ? eq + 1 : (a + 1 < nargs ? args[a + 1] : NULL);
        int matched = 0;
        for (size_t i = 0; i < NKNOBS && !matched; i++) {
            const knob *k = &knobs[i];
            if ((strlen(k->flag) == flen && strncmp(word, k->flag, flen) == 0) ||
                (k->alias && strlen(k->alias) == flen && strncmp(word, k->alias, flen) == 0)) {
                if (!value) {
                    snprintf(err, errlen, "%.*s needs a value", (int)flen, word);
                    return -1;
                }
                if (parse_u32(k->flag, value, k->min, k->max, field(s, k), err, errlen) != 0)
                    return -1;
                have[i] = 1;
                matched = 1;
            }
        }
        if (!matched && flen == 6 && strncmp(word, "--seed", 6) == 0 && value) {
            uint32_t v;
            if (parse_u32("--seed", value, 0, 0xFFFFFFFFu, &v, err, errlen) != 0)
                return -1;
            s->seed = v;
            matched = 1;
        }
        if (!matched) {
            snprintf(err, errlen,
                     "unknown training argument \"%s\" (known: --epochs --batch-size --engines "
                     "--effective-batch-size --validation-freq --checkpoint-freq "
                     "--num-dataloader-threads --log-every --seed)",
                     word);
            return -1;
        }
        if (!eq)
            a++;
    }
    if (num_worker > 0) {
        s->engines = (uint32_t)num_worker;
        have[2] = 1;
    }
    for (int i = 0; i < nenv; i++) {
        const char *kv = env[i];
        if (strncmp(kv, "EDT_PULL_WEIGHT_TIME_OUT=", 25) == 0) {
            if (parse_u32("EDT_PULL_WEIGHT_TIME_OUT", kv + 25, 1, 86400, &s->pull_timeout_s, err, errlen))
                return -1;
        } else if (strncmp(kv, "EDT_PULL_FAILED_LIMITS=", 23) == 0) {
            if (parse_u32("EDT_PULL_FAILED_LIMITS", kv + 23, 1, 1000, &s->pull_limit, err, errlen))
                return -1;
        } else if (strncmp(kv, "EDT_MAX_STALENESS=", 18) == 0) {
            if (parse_u32("EDT_MAX_STALENESS", kv + 18, 0, 1000000, &s->max_staleness, err, errlen))
                return -1;
        } else if (strncmp(kv, "LOOM_EDT_STEP_TIMEOUT_MS=", 25) == 0) {
            if (parse_u32("LOOM_EDT_STEP_TIMEOUT_MS", kv + 25, 100, 86400000, &s->step_timeout_ms, err, errlen))
                return -1;
        }
    }

    /* The exclusive rule between engines and the effective batch size. */
    uint32_t b = s->batch_size;
    if (have[3]) {
        if (s->effective_batch_size % b != 0) {
            snprintf(err, errlen,
                     "effective batch size %u is not a multiple of the batch size %u",
                     s->effective_batch_size, b);
            return -1;
        }
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
    if (s->engines > 1024) {
        snprintf(err, errlen, "engines: %u is more than 1024", s->engines);
        return -1;
    }
    char *text = loggers ? cJSON_PrintUnformatted(loggers) : strdup("[]");
    s->loggers_json = text;
    return text ? 0 : -1;
}

void edt_settings_free(edt_settings *s)
{
    free(s->loggers_json);
    s->loggers_json = NULL;
}

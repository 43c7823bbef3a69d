/* exec/dlicmd.c - see dlicmd.h. */
#include "exec/dlicmd.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS 4096

/* Keep in step with dlicmd_parse_words: the CLI's help is printed from
 * this table, and a test checks that every flag the parser compares
 * against is here. */
const dlicmd_flag dlicmd_flags[] = {
    {"--exec-start", "FRAMEWORK", "the framework adapter to run (required): command, python, "
                                  "distPyTorch, edt, ... (see 'loom framework list')"},
    {"--model-dir", "DIR", "the model directory: uploaded, and unpacked into "
                           "RESULT_DIR/_submitted_code where the workers run"},
    {"--model-main", "FILE", "the program in it to run (edt: the model spec, default edt.json)"},
    {"--numWorker", "N", "workers, 1 to 1024 (default 1); edt: the most it may grow to"},
    {"--workerDeviceNum", "K", "devices per worker, 1 to 64 (default 1)"},
    {"--workerDeviceType", "cpu|gpu", "the kind of device (default cpu)"},
    {"--msd-env", "KEY=VALUE", "an environment variable for every worker (repeatable)"},
    {"--msd-priority", "P", "priority inside its resource plan, -1000 to 1000 (default 0)"},
    {"--consumer", "PLAN", "the resource plan it runs under (default the user's own /USER)"},
    {"--data-dir", "DIR", "the workers' DATA_DIR on the host (default $LOOM_HOME/data)"},
    {"--syncMode", "SYNC|ASYNC", "edt: all-reduce every step (SYNC, default) or a parameter "
                                 "server (ASYNC)"},
    {"--queue-if-too-large", "true|false", "wait PENDING for more devices than the host has, "
                                           "instead of being refused (default false)"},
};
const size_t dlicmd_flag_count = sizeof dlicmd_flags / sizeof *dlicmd_flags;

loom_error *dlicmd_split(const char *text, char ***out, int *count)
{
    *out = NULL;
    loom_error *err = NULL;
    size_t len = strlen(text);
    char **words = calloc(MAX_WORDS + 1, sizeof *words);
    char *word = malloc(len + 1);
    int n = 0;
    if (!words || !word)
        goto oom;
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (!*p)
            break;
        size_t w = 0;
        while (*p && !(*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
            if (*p == '\'') {
                const char *end = strchr(p + 1, '\'');
                if (!end) {
                    err = loom_err(LOOM_E_INVALID, "args: unterminated single quote at offset %ld",
                                   (long)(p - text));
                    goto fail;
                }
                memcpy(word + w, p + 1, (size_t)(end - p - 1));
                w += (size_t)(end - p - 1);
                p = end + 1;
            } else if (*p == '"') {
                const char *start = p++;
                while (*p && *p != '"') {
                    if (*p == '\\' && (p[1] == '"' || p[1] == '\\' || p[1] == '$' || p[1] == '`'))
                        p++;
                    word[w++] = *p++;
                }
                if (*p != '"') {
                    err = loom_err(LOOM_E_INVALID, "args: unterminated double quote at offset %ld",
                                   (long)(start - text));
                    goto fail;
                }
                p++;
            } else if (*p == '\\' && p[1]) {
                word[w++] = p[1];
                p += 2;
            } else {
                word[w++] = *p++;
            }
        }
        if (n == MAX_WORDS) {
            err = loom_err(LOOM_E_INVALID, "args: more than %d words", MAX_WORDS);
            goto fail;
        }
        words[n] = strndup(word, w);
        if (!words[n])
            goto oom;
        n++;
    }
    free(word);
    *count = n;
    *out = words;
    return NULL;
oom:
    err = loom_err(LOOM_E_INTERNAL, "args: out of memory");
fail:
    free(word);
    dlicmd_free_words(words);
    return err;
}

void dlicmd_free_words(char **words)
{
    if (!words)
        return;
    for (char **w = words; *w; w++)
        free(*w);
    free(words);
}

static loom_error *parse_int(const char *flag, const char *value, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < lo || v > hi)
        return loom_err(LOOM_E_INVALID, "%s: expected a whole number from %d to %d, got \"%s\"",
                        flag, lo, hi, value);
    *out = (int)v;
    return NULL;
}

static loom_error *push(char ***vec, int *count, const char *value)
{
    char **grown = realloc(*vec, (size_t)(*count + 2) * sizeof *grown);
    if (!grown)
        return loom_err(LOOM_E_INTERNAL, "args: out of memory");
    *vec = grown;
    grown[*count] = strdup(value);
    if (!grown[*count])
        return loom_err(LOOM_E_INTERNAL, "args: out of memory");
    grown[++*count] = NULL;
    return NULL;
}

static loom_error *set_string(char **dst, const char *flag, const char *value)
{
    if (*dst)
        return loom_err(LOOM_E_INVALID, "%s given twice", flag);
    if (!*value)
        return loom_err(LOOM_E_INVALID, "%s: empty value", flag);
    *dst = strdup(value);
    return *dst ? NULL : loom_err(LOOM_E_INTERNAL, "args: out of memory");
}

/* One of the words the flag may be, or an error naming the flag. */
static loom_error *set_choice(const char *flag, const char *value, const char *a, const char *b,
                              int *is_b)
{
    if (strcmp(value, a) && strcmp(value, b))
        return loom_err(LOOM_E_INVALID, "%s: expected %s or %s, got \"%s\"", flag, a, b, value);
    *is_b = strcmp(value, b) == 0;
    return NULL;
}

static loom_error *apply_flag(dlicmd *d, const char *flag, const char *value)
{
    int is_b = 0;
    loom_error *e;
    if (strcmp(flag, "--exec-start") == 0)
        return set_string(&d->exec_start, flag, value);
    if (strcmp(flag, "--model-dir") == 0)
        return set_string(&d->model_dir, flag, value);
    if (strcmp(flag, "--model-main") == 0)
        return set_string(&d->model_main, flag, value);
    if (strcmp(flag, "--workerDeviceType") == 0) {
        e = set_choice(flag, value, "cpu", "gpu", &is_b);
        return e ? e : set_string(&d->device_type, flag, value);
    }
    if (strcmp(flag, "--consumer") == 0) {
        if (strlen(value) > DLICMD_CONSUMER_MAX)
            return loom_err(LOOM_E_INVALID, "%s: %zu bytes, longer than the limit of %d", flag,
                            strlen(value), DLICMD_CONSUMER_MAX);
        return set_string(&d->consumer, flag, value);
    }
    if (strcmp(flag, "--data-dir") == 0)
        return set_string(&d->data_dir, flag, value);
    if (strcmp(flag, "--numWorker") == 0) {
        d->num_worker_given = 1;
        return parse_int(flag, value, 1, 1024, &d->num_worker);
    }
    if (strcmp(flag, "--workerDeviceNum") == 0)
        return parse_int(flag, value, 1, 64, &d->worker_device_num);
    if (strcmp(flag, "--msd-priority") == 0)
        return parse_int(flag, value, -1000, 1000, &d->priority);
    if (strcmp(flag, "--syncMode") == 0) {
        e = set_choice(flag, value, "SYNC", "ASYNC", &is_b);
        d->sync_mode_async = !e && is_b;
        return e;
    }
    if (strcmp(flag, "--queue-if-too-large") == 0) {
        /* true/false, or 1/0 */
        int is_false = 0;
        e = set_choice(flag, value, "true", "false", &is_false);
        if (e && (!strcmp(value, "0") || !strcmp(value, "1"))) {
            loom_err_free(e);
            e = NULL;
            is_false = value[0] == '0';
        }
        d->queue_if_too_large = !e && !is_false;
        return e;
    }
    if (strcmp(flag, "--msd-env") == 0) {
        const char *eq = strchr(value, '=');
        if (!eq || eq == value)
            return loom_err(LOOM_E_INVALID, "--msd-env: expected KEY=VALUE, got \"%s\"", value);
        return push(&d->msd_env, &d->msd_env_count, value);
    }
    return loom_err(LOOM_E_INVALID,
                    "unknown flag %s (known: --exec-start --model-dir --model-main "
                    "--numWorker --workerDeviceNum --workerDeviceType --msd-env "
                    "--msd-priority --consumer --data-dir --syncMode --queue-if-too-large)",
                    flag);
}

loom_error *dlicmd_parse_words(int argc, char *const *argv, dlicmd *d)
{
    memset(d, 0, sizeof *d);
    d->num_worker = 1;
    d->worker_device_num = 1;
    loom_error *e = NULL;
    int i = 0;
    for (; i < argc && !e; i++) {
        const char *word = argv[i];
        if (strcmp(word, "--") == 0) {
            i++;
            break;
        }
        if (strncmp(word, "--", 2) != 0) {
            e = loom_err(LOOM_E_INVALID,
                         "unexpected \"%s\": flags start with --, and program arguments go after "
                         "\"--\"",
                         word);
            break;
        }
        /* --flag=value or --flag value */
        char flag[64];
        const char *value;
        const char *eq = strchr(word, '=');
        if (eq) {
            snprintf(flag, sizeof flag, "%.*s", (int)(eq - word), word);
            value = eq + 1;
        } else {
            snprintf(flag, sizeof flag, "%s", word);
            if (i + 1 >= argc) {
                e = loom_err(LOOM_E_INVALID, "%s needs a value", flag);
                break;
            }
            value = argv[++i];
        }
        e = apply_flag(d, flag, value);
    }
    for (; i < argc && !e; i++)
        e = push(&d->args, &d->arg_count, argv[i]);
    if (!e && !d->exec_start)
        e = loom_err(LOOM_E_INVALID, "--exec-start is required (the framework to run, e.g. command)");
    if (!e && !d->device_type && !(d->device_type = strdup("cpu")))
        e = loom_err(LOOM_E_INTERNAL, "args: out of memory");
    if (e)
        dlicmd_free(d);
    return e;
}

loom_error *dlicmd_parse(const char *text, dlicmd *out)
{
    int n;
    char **words;
    loom_error *e = dlicmd_split(text, &words, &n);
    if (e) {
        memset(out, 0, sizeof *out);
        return e;
    }
    e = dlicmd_parse_words(n, words, out);
    dlicmd_free_words(words);
    return e;
}

void dlicmd_free(dlicmd *d)
{
    free(d->exec_start);
    free(d->model_dir);
    free(d->model_main);
    free(d->device_type);
    free(d->consumer);
    free(d->data_dir);
    for (int i = 0; i < d->msd_env_count; i++)
        free(d->msd_env[i]);
    free(d->msd_env);
    for (int i = 0; i < d->arg_count; i++)
        free(d->args[i]);
    free(d->args);
    memset(d, 0, sizeof *d);
}

char *dlicmd_join(int argc, char *const *argv)
{
    size_t cap = 1;
    for (int i = 0; i < argc; i++)
        cap += strlen(argv[i]) * 4 + 3;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    char *o = out;
    for (int i = 0; i < argc; i++) {
        if (i)
            *o++ = ' ';
        /* Single quotes keep everything literal; a quote inside is '\'' */
        *o++ = '\'';
        for (const char *p = argv[i]; *p; p++) {
            if (*p == '\'') {
                memcpy(o, "'\\''", 4);
                o += 4;
            } else {
                *o++ = *p;
            }
        }
        *o++ = '\'';
    }
    *o = 0;
    return out;
}

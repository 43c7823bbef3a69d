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

char **dlicmd_split(const char *text, int *count, char *err, size_t errlen)
{
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
                    snprintf(err, errlen, "args: unterminated single quote at offset %ld",
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
                    snprintf(err, errlen, "args: unterminated double quote at offset %ld",
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
            snprintf(err, errlen, "args: more than %d words", MAX_WORDS);
            goto fail;
        }
        words[n] = strndup(word, w);
        if (!words[n])
            goto oom;
        n++;
    }
    free(word);
    *count = n;
    return words;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    free(word);
    dlicmd_free_words(words);
    return NULL;
}

void dlicmd_free_words(char **words)
{
    if (!words)
        return;
    for (char **w = words; *w; w++)
        free(*w);
    free(words);
}

static int parse_int(const char *flag, const char *value, int lo, int hi,
                     int *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < lo || v > hi) {
        snprintf(err, errlen, "%s: expected a whole number from %d to %d, got \"%s\"",
                 flag, lo, hi, value);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int push(char ***vec, int *count, const char *value)
{
    char **grown = realloc(*vec, (size_t)(*count + 2) * sizeof *grown);
    if (!grown)
        return -1;
    *vec = grown;
    grown[*count] = strdup(value);
    if (!grown[*count])
        return -1;
    grown[++*count] = NULL;
    return 0;
}

static int set_string(char **dst, const char *flag, const char *value, char *err,
                      size_t errlen)
{
    if (*dst) {
        snprintf(err, errlen, "%s given twice", flag);
        return -1;
    }
    if (!*value) {
        snprintf(err, errlen, "%s: empty value", flag);
        return -1;
    }
    *dst = strdup(value);
    return *dst ? 0 : -1;
}

int dlicmd_parse_words(int argc, char *const *argv, dlicmd *d, char *err,
                       size_t errlen)
{
    memset(d, 0, sizeof *d);
    d->num_worker = 1;
    d->worker_device_num = 1;
    int i = 0;
    for (; i < argc; i++) {
        const char *word = argv[i];
        if (strcmp(word, "--") == 0) {
            i++;
            break;
        }
        if (strncmp(word, "--", 2) != 0) {
            snprintf(err, errlen,
                     "unexpected \"%s\": flags start with --, and program arguments go after \"--\"",
                     word);
            goto fail;
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
                snprintf(err, errlen, "%s needs a value", flag);
                goto fail;
            }
            value = argv[++i];
        }
        int rc;
        if (strcmp(flag, "--exec-start") == 0)
            rc = set_string(&d->exec_start, flag, value, err, errlen);
        else if (strcmp(flag, "--model-dir") == 0)
            rc = set_string(&d->model_dir, flag, value, err, errlen);
        else if (strcmp(flag, "--model-main") == 0)
            rc = set_string(&d->model_main, flag, value, err, errlen);
        else if (strcmp(flag, "--workerDeviceType") == 0) {
            rc = set_string(&d->device_type, flag, value, err, errlen);
            if (rc == 0 && strcmp(value, "cpu") != 0 && strcmp(value, "gpu") != 0) {
                snprintf(err, errlen, "--workerDeviceType: expected cpu or gpu, got \"%s\"", value);
                rc = -1;
            }
        } else if (strcmp(flag, "--consumer") == 0)
            rc = set_string(&d->consumer, flag, value, err, errlen);
        else if (strcmp(flag, "--data-dir") == 0)
            rc = set_string(&d->data_dir, flag, value, err, errlen);
        else if (strcmp(flag, "--numWorker") == 0) {
            rc = parse_int(flag, value, 1, 1024, &d->num_worker, err, errlen);
            d->num_worker_given = 1;
        }
        else if (strcmp(flag, "--workerDeviceNum") == 0)
            rc = parse_int(flag, value, 1, 64, &d->worker_device_num, err, errlen);
        else if (strcmp(flag, "--msd-priority") == 0)
            rc = parse_int(flag, value, -1000, 1000, &d->priority, err, errlen);
        else if (strcmp(flag, "--syncMode") == 0) {
            rc = 0;
            if (strcmp(value, "ASYNC") == 0)
                d->sync_mode_async = 1;
            else if (strcmp(value, "SYNC") != 0) {
                snprintf(err, errlen, "--syncMode: expected SYNC or ASYNC, got \"%s\"", value);
                rc = -1;
            }
        } else if (strcmp(flag, "--queue-if-too-large") == 0) {
            rc = 0;
            if (!strcmp(value, "true") || !strcmp(value, "1"))
                d->queue_if_too_large = 1;
            else if (strcmp(value, "false") && strcmp(value, "0")) {
                snprintf(err, errlen, "--queue-if-too-large: expected true or false, got \"%s\"", value);
                rc = -1;
            }
        } else if (strcmp(flag, "--msd-env") == 0) {
            const char *e = strchr(value, '=');
            if (!e || e == value) {
                snprintf(err, errlen, "--msd-env: expected KEY=VALUE, got \"%s\"", value);
                rc = -1;
            } else {
                rc = push(&d->msd_env, &d->msd_env_count, value);
            }
        } else {
            snprintf(err, errlen,
                     "unknown flag %s (known: --exec-start --model-dir --model-main "
                     "--numWorker --workerDeviceNum --workerDeviceType --msd-env "
                     "--msd-priority --consumer --data-dir --syncMode --queue-if-too-large)",
                     flag);
            rc = -1;
        }
        if (rc != 0)
            goto fail;
    }
    for (; i < argc; i++)
        if (push(&d->args, &d->arg_count, argv[i]) != 0) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
    if (!d->exec_start) {
        snprintf(err, errlen, "--exec-start is required (the framework to run, e.g. command)");
        goto fail;
    }
    if (!d->device_type)
        d->device_type = strdup("cpu");
    return 0;
fail:
    dlicmd_free(d);
    return -1;
}

int dlicmd_parse(const char *text, dlicmd *out, char *err, size_t errlen)
{
    int n;
    char **words = dlicmd_split(text, &n, err, errlen);
    if (!words) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    int rc = dlicmd_parse_words(n, words, out, err, errlen);
    dlicmd_free_words(words);
    return rc;
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

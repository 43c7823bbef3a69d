/* exec/dlicmd.c - see dlicmd.h. */
#include "exec/dlicmd.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_WORDS 4096

/* Keep in step with dlicmd_parse_words: the CLI's help is printed from
 * this table, and a test checks that every flag the parser compares
 * against is here. */
const dlicmd_flag dlicmd_flags[] = {
    {"--exec-start", "FRAMEWORK", "the framework adapter to run (required): command, python, "
                                  "distPyTorch, edt, ... (see 'loom framework list'); WMLA's "
                                  "PyTorch and tensorflow run as python, edtPyTorch elastically"},
    {"--model-dir", "DIR", "the model directory: uploaded, and unpacked into "
                           "RESULT_DIR/_submitted_code where the workers run"},
    {"--model-main", "FILE", "the program in it to run (edt: the model spec, default edt.json)"},
    {"--numWorker", "N", "workers, 1 to 1024 (default 1); edt: the most it may grow to"},
    {"--workerDeviceNum", "K", "devices per worker, 1 to 64 (default 1)"},
    {"--workerDeviceType", "cpu|gpu", "the kind of device (default cpu)"},
    {"--msd-env", "KEY=VALUE", "an environment variable for every worker (repeatable)"},
    {"--msd-priority", "P", "priority inside its resource plan, -1000 to 1000 (default 0)"},
    {"--consumer", "PLAN", "the resource plan it runs under (default the user's own /USER)"},
    {"--data-dir", "DIR", "the workers' DATA_DIR: an existing folder under the data store "
                          "($LOOM_HOME/data, the default), /usr/share/datasets or a folder "
                          "loom serve --data-root lists"},
    {"--syncMode", "SYNC|ASYNC", "edt: all-reduce every step (SYNC, default) or a parameter "
                                 "server (ASYNC)"},
    {"--queue-if-too-large", "true|false", "wait PENDING for more devices than the host has, "
                                           "instead of being refused (default false)"},
    {"--cs-datastore-meta", "type=fs[,data_path=P]", "WMLA: DATA_DIR is P under the host's data "
                                                     "store ($LOOM_HOME/data); P may not leave it"},
    {"--edt-options", "maxWorkers=N", "WMLA: the most workers elastic training grows to"},
    {"--gpuPerWorker", "N", "WMLA: devices per worker (GPUs when the host has them)"},
    {"--python-version", "X.Y", "WMLA: accepted; jobs run the host's Python (a warning "
                                "says so)"},
    {"--conda-env-name", "NAME", "WMLA: accepted; no conda environments (a warning says so)"},
    {"--debug-level", "LEVEL", "WMLA: debug, info, warn or error: the job's DEBUG_LEVEL"},
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

/* ---- WMLA's flags ---------------------------------------------------- */

static loom_error *warn(dlicmd *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static loom_error *warn(dlicmd *d, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return push(&d->warnings, &d->warning_count, text);
}

loom_error *dlicmd_warn(dlicmd *d, const char *text)
{
    return push(&d->warnings, &d->warning_count, text);
}

/* A relative path that stays where it starts: no leading '/', no "..". */
static int stays_inside(const char *p)
{
    if (!*p || p[0] == '/')
        return 0;
    for (const char *s = p; s; s = strchr(s, '/')) {
        while (*s == '/')
            s++;
        if (s[0] == '.' && s[1] == '.' && (s[2] == '/' || s[2] == 0))
            return 0;
    }
    return 1;
}

/* Calls pair(d, flag, key, value) for each "key=value" of a
 * comma-separated list. */
static loom_error *each_pair(dlicmd *d, const char *flag, const char *list,
                             loom_error *(*pair)(dlicmd *, const char *, const char *, const char *))
{
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return loom_err(LOOM_E_INTERNAL, "args: out of memory");
    loom_error *e = NULL;
    for (char *item = strtok_r(copy, ",", &save); item && !e; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq || eq == item) {
            e = loom_err(LOOM_E_INVALID, "%s: expected key=value pairs separated by commas, got "
                                         "\"%s\"", flag, item);
            break;
        }
        *eq = 0;
        e = pair(d, flag, item, eq + 1);
    }
    free(copy);
    return e;
}

static loom_error *datastore_pair(dlicmd *d, const char *flag, const char *key, const char *value)
{
    if (strcmp(key, "type") == 0)
        return strcmp(value, "fs") == 0
                   ? NULL
                   : loom_err(LOOM_E_UNSUPPORTED, "%s type=%s: loom's data store is a folder on "
                                                  "the host (type=fs)", flag, value);
    if (strcmp(key, "data_path") == 0) {
        if (!stays_inside(value))
            return loom_err(LOOM_E_INVALID,
                            "%s data_path \"%s\" leaves the data store: expected a path relative "
                            "to it, without \"..\"", flag, value);
        return set_string(&d->data_path, "data_path", value);
    }
    return loom_err(LOOM_E_INVALID, "%s: unknown key \"%s\" (known: type, data_path)", flag, key);
}

static loom_error *edt_pair(dlicmd *d, const char *flag, const char *key, const char *value)
{
    if (strcmp(key, "maxWorkers") == 0)
        return parse_int("--edt-options maxWorkers", value, 1, 1024, &d->max_workers);
    return loom_err(LOOM_E_INVALID, "%s: unknown key \"%s\" (known: maxWorkers)", flag, key);
}

static int digits(const char **p)
{
    const char *start = *p;
    while (**p >= '0' && **p <= '9')
        ++*p;
    return *p > start;
}

static loom_error *python_version(dlicmd *d, const char *flag, const char *value)
{
    const char *p = value;
    int ok = digits(&p) && *p++ == '.' && digits(&p);
    if (ok && *p == '.') {
        p++;
        ok = digits(&p);
    }
    if (!ok || *p)
        return loom_err(LOOM_E_INVALID, "%s: expected X.Y (e.g. 3.11), got \"%s\"", flag, value);
    loom_error *e = set_string(&d->python_version, flag, value);
    return e ? e : warn(d, "%s %s: jobs run the host's Python interpreter; loom does not switch "
                           "versions", flag, value);
}

static loom_error *debug_level(dlicmd *d, const char *flag, const char *value)
{
    static const char *const levels[] = {"debug", "info", "warn", "warning", "error"};
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++) {
        if (strcasecmp(value, levels[i]) != 0)
            continue;
        loom_error *e = set_string(&d->debug_level, flag, levels[i]);
        char pair[32];
        snprintf(pair, sizeof pair, "DEBUG_LEVEL=%s", levels[i]);
        return e ? e : push(&d->msd_env, &d->msd_env_count, pair);
    }
    return loom_err(LOOM_E_INVALID, "%s: expected debug, info, warn or error, got \"%s\"", flag,
                    value);
}

static loom_error *unknown_flag(const char *flag)
{
    char known[1024] = "";
    size_t n = 0;
    for (size_t i = 0; i < dlicmd_flag_count && n < sizeof known; i++)
        n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? " " : "",
                              dlicmd_flags[i].name);
    return loom_err(LOOM_E_INVALID, "unknown flag %s (known: %s)", flag, known);
}

static loom_error *wmla_flag(dlicmd *d, const char *flag, const char *value)
{
    if (strcmp(flag, "--cs-datastore-meta") == 0)
        return each_pair(d, flag, value, datastore_pair);
    if (strcmp(flag, "--edt-options") == 0)
        return each_pair(d, flag, value, edt_pair);
    if (strcmp(flag, "--gpuPerWorker") == 0) {
        d->gpu_per_worker_given = 1; /* 0 is a CPU worker (notebooks on CPU clusters send it) */
        return parse_int(flag, value, 0, 64, &d->gpu_per_worker);
    }
    if (strcmp(flag, "--python-version") == 0)
        return python_version(d, flag, value);
    if (strcmp(flag, "--conda-env-name") == 0) {
        loom_error *e = set_string(&d->conda_env, flag, value);
        return e ? e : warn(d, "%s %s: loom has no conda environments; the job runs in the host's "
                               "Python environment", flag, value);
    }
    if (strcmp(flag, "--debug-level") == 0)
        return debug_level(d, flag, value);
    return unknown_flag(flag);
}

/* What WMLA's flags mean together with loom's, once all are read. */
static loom_error *wmla_settle(dlicmd *d)
{
    if (d->data_path && d->data_dir)
        return loom_err(LOOM_E_INVALID, "--data-dir and --cs-datastore-meta data_path both name "
                                        "DATA_DIR: give one");
    if (d->gpu_per_worker_given && !d->gpu_per_worker) {
        if (d->device_type_given && d->device_type == DEVICE_KIND_GPU)
            return loom_err(LOOM_E_INVALID, "--gpuPerWorker 0 (a CPU worker) and "
                                            "--workerDeviceType gpu disagree");
        d->device_type = DEVICE_KIND_CPU;
    }
    if (d->gpu_per_worker) {
        if (d->worker_device_num != 1 && d->worker_device_num != d->gpu_per_worker)
            return loom_err(LOOM_E_INVALID, "--gpuPerWorker %d and --workerDeviceNum %d disagree",
                            d->gpu_per_worker, d->worker_device_num);
        d->worker_device_num = d->gpu_per_worker;
    }
    if (!d->max_workers)
        return NULL;
    if (d->num_worker_given && d->num_worker > d->max_workers)
        return loom_err(LOOM_E_INVALID, "--numWorker %d is more than --edt-options maxWorkers=%d",
                        d->num_worker, d->max_workers);
    loom_error *e = NULL;
    if (d->num_worker_given && d->num_worker < d->max_workers)
        e = warn(d, "--numWorker %d: elastic training starts with as many workers as devices are "
                    "free, up to maxWorkers=%d", d->num_worker, d->max_workers);
    d->num_worker = d->max_workers;
    d->num_worker_given = 1;
    return e;
}

/* WMLA's framework names and loom's adapters (the README has the table). */
static const struct {
    const char *wmla, *loom;
} framework_names[] = {
    {"PyTorch", "python"},
    {"tensorflow", "python"},
    {"edtPyTorch", "edtPyTorch"},
};

const char *dlicmd_framework_name(const char *exec_start, int *wmla)
{
    for (size_t i = 0; i < sizeof framework_names / sizeof *framework_names; i++)
        if (strcasecmp(exec_start, framework_names[i].wmla) == 0) {
            if (wmla)
                *wmla = 1;
            return framework_names[i].loom;
        }
    if (wmla)
        *wmla = 0;
    return exec_start;
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
        if (d->device_type_given)
            return loom_err(LOOM_E_INVALID, "%s given twice", flag);
        d->device_type_given = 1;
        return loom_err_wrap(device_kind_parse(value, &d->device_type), "%s", flag);
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
    return wmla_flag(d, flag, value);
}

loom_error *dlicmd_env_first(dlicmd *d, const char *pair)
{
    const char *eq = strchr(pair, '=');
    if (!eq || eq == pair)
        return loom_err(LOOM_E_INVALID, "--msd-env: expected KEY=VALUE, got \"%s\"", pair);
    loom_error *e = push(&d->msd_env, &d->msd_env_count, pair);
    if (e)
        return e;
    char *first = d->msd_env[d->msd_env_count - 1];
    memmove(d->msd_env + 1, d->msd_env, (size_t)(d->msd_env_count - 1) * sizeof *d->msd_env);
    d->msd_env[0] = first;
    return NULL;
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
    if (!e)
        e = wmla_settle(d);
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
    free(d->consumer);
    free(d->data_dir);
    for (int i = 0; i < d->msd_env_count; i++)
        free(d->msd_env[i]);
    free(d->msd_env);
    for (int i = 0; i < d->arg_count; i++)
        free(d->args[i]);
    free(d->args);
    free(d->data_path);
    free(d->python_version);
    free(d->conda_env);
    free(d->debug_level);
    for (int i = 0; i < d->warning_count; i++)
        free(d->warnings[i]);
    free(d->warnings);
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

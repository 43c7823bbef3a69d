/* sched/slurm_step.c - the srun command line of one worker (see
 * slurm_step.h); finding and cancelling jobs is slurm_step_jobs.c. */
#include "sched/slurm_step.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether every byte of s is a letter, a digit or in `extra`. */
static bool made_of(const char *s, const char *extra)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && !strchr(extra, c))
            return false;
    }
    return true;
}

static loom_error *check_node(const char *node)
{
    if (!node || !node[0])
        return loom_err(LOOM_E_INVALID, "Slurm step: node: a node name expected");
    if (strlen(node) >= SLURM_NODE_NAME_MAX)
        return loom_err(LOOM_E_LIMIT, "Slurm step: node '%.32s...': at most %d bytes", node,
                        SLURM_NODE_NAME_MAX - 1);
    /* One node, not a hostlist expression ('[', ','), and never an option. */
    if (!made_of(node, "._-") || node[0] == '-')
        return loom_err(LOOM_E_INVALID,
                        "Slurm step: node '%s': one node name expected (letters, digits, '.', "
                        "'_', '-'; not starting with '-')",
                        node);
    return NULL;
}

loom_error *slurm_step_job_name(const char *exec_id, uint32_t slot, char *out, size_t outlen)
{
    if (!exec_id || !exec_id[0])
        return loom_err(LOOM_E_INVALID, "Slurm step: exec id: an exec id expected");
    if (strlen(exec_id) >= SLURM_STEP_EXEC_ID_MAX)
        return loom_err(LOOM_E_LIMIT, "Slurm step: exec id '%.32s...': at most %d bytes",
                        exec_id, SLURM_STEP_EXEC_ID_MAX - 1);
    /* ':' separates the name's parts; ',' and spaces would read as lists. */
    if (!made_of(exec_id, "._@+-"))
        return loom_err(LOOM_E_INVALID,
                        "Slurm step: exec id '%s': letters, digits and '._@+-' expected", exec_id);
    int n = snprintf(out, outlen, "%s%s:%u", SLURM_STEP_NAME_PREFIX, exec_id, slot);
    if (n < 0 || (size_t)n >= outlen)
        return loom_err(LOOM_E_LIMIT, "Slurm step: the job name of %s:%u needs %d bytes", exec_id,
                        slot, n + 1);
    return NULL;
}

/* --export=NAME,NAME... (NONE without any): names only, so no value is
 * ever on srun's command line. */
static loom_error *export_option(const char *const *names, char **out)
{
    size_t count = 0, len = sizeof "--export=NONE";
    for (; names && names[count]; count++) {
        const char *n = names[count];
        if (count >= SLURM_STEP_EXPORTS_MAX)
            return loom_err(LOOM_E_LIMIT, "Slurm step: exports: at most %d variables",
                            SLURM_STEP_EXPORTS_MAX);
        if (strlen(n) >= SLURM_STEP_EXPORT_NAME_MAX)
            return loom_err(LOOM_E_LIMIT, "Slurm step: export '%.32s...': at most %d bytes", n,
                            SLURM_STEP_EXPORT_NAME_MAX - 1);
        /* A variable's name: never a value (NAME=...), a list or srun's
         * own ALL and NONE. */
        if (!n[0] || !made_of(n, "_") || (n[0] >= '0' && n[0] <= '9') || !strcmp(n, "ALL") ||
            !strcmp(n, "NONE"))
            return loom_err(LOOM_E_INVALID,
                            "Slurm step: export '%s': a variable's name expected (letters, "
                            "digits, '_', not starting with a digit; not ALL or NONE)",
                            n);
        len += strlen(n) + 1;
    }
    char *opt = malloc(len);
    if (!opt)
        return loom_err(LOOM_E_INTERNAL, "Slurm step: out of memory");
    strcpy(opt, "--export=");
    if (!count)
        strcat(opt, "NONE");
    for (size_t i = 0; i < count; i++) {
        if (i)
            strcat(opt, ",");
        strcat(opt, names[i]);
    }
    *out = opt;
    return NULL;
}

static loom_error *check_command(const slurm_step_spec *s)
{
    if (!s->chdir || s->chdir[0] != '/')
        return loom_err(LOOM_E_INVALID, "Slurm step: chdir '%s': an absolute path expected",
                        s->chdir ? s->chdir : "");
    if (strlen(s->chdir) >= SLURM_STEP_ARG_MAX)
        return loom_err(LOOM_E_LIMIT, "Slurm step: chdir: at most %d bytes",
                        SLURM_STEP_ARG_MAX - 1);
    if (!s->argv || !s->argv[0] || s->argv[0][0] != '/')
        return loom_err(LOOM_E_INVALID,
                        "Slurm step: argv[0] '%s': an absolute path expected (the worker's "
                        "environment has no PATH unless exported)",
                        s->argv && s->argv[0] ? s->argv[0] : "");
    size_t i = 0;
    for (; s->argv[i]; i++) {
        if (i >= SLURM_STEP_ARGS_MAX)
            return loom_err(LOOM_E_LIMIT, "Slurm step: argv: at most %d words",
                            SLURM_STEP_ARGS_MAX);
        if (strlen(s->argv[i]) >= SLURM_STEP_ARG_MAX)
            return loom_err(LOOM_E_LIMIT, "Slurm step: argv[%zu]: at most %d bytes", i,
                            SLURM_STEP_ARG_MAX - 1);
    }
    return NULL;
}

static loom_error *check_spec(const slurm_step_spec *s)
{
    loom_error *e = check_node(s->node);
    if (e)
        return e;
    if (s->uid == 0 || s->gid == 0)
        return loom_err(LOOM_E_INVALID,
                        "Slurm step: uid %u, gid %u: a loom user's account expected, never root's",
                        s->uid, s->gid);
    if (s->cpus < 1 || s->cpus > SLURM_STEP_CPUS_MAX)
        return loom_err(LOOM_E_INVALID, "Slurm step: cpus %u: 1..%d expected", s->cpus,
                        SLURM_STEP_CPUS_MAX);
    if (s->gpus > SLURM_STEP_GPUS_MAX)
        return loom_err(LOOM_E_INVALID, "Slurm step: gpus %u: 0..%d expected", s->gpus,
                        SLURM_STEP_GPUS_MAX);
    if (s->srun && (!s->srun[0] || strlen(s->srun) >= SLURM_STEP_ARG_MAX))
        return loom_err(LOOM_E_INVALID, "Slurm step: srun: a program expected (under %d bytes)",
                        SLURM_STEP_ARG_MAX);
    return check_command(s);
}

/* Appends a formatted word to argv[*n]; false when out of memory. */
static bool add(char **argv, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *w = len < 0 ? NULL : malloc((size_t)len + 1);
    if (!w)
        return false;
    va_start(ap, fmt);
    vsnprintf(w, (size_t)len + 1, fmt, ap);
    va_end(ap);
    argv[(*n)++] = w;
    return true;
}

#define SLURM_STEP_OWN_WORDS 16 /* srun and its options before "--" */

loom_error *slurm_step_argv(const slurm_step_spec *s, char ***out)
{
    *out = NULL;
    loom_error *e = check_spec(s);
    char name[96], *export = NULL;
    if (!e)
        e = slurm_step_job_name(s->exec_id, s->slot, name, sizeof name);
    if (!e)
        e = export_option(s->exports, &export);
    if (e)
        return e;
    size_t words = 0;
    while (s->argv[words])
        words++;
    char **argv = calloc(SLURM_STEP_OWN_WORDS + words + 1, sizeof *argv);
    size_t n = 0;
    /* One node, one task: the worker; srun stays its launcher for its life.
     * --kill-on-bad-exit ends the step when the worker fails; --input=none
     * keeps srun off the host's stdin. */
    bool ok = argv && add(argv, &n, "%s", s->srun ? s->srun : "srun") && add(argv, &n, "-w") &&
              add(argv, &n, "%s", s->node) && add(argv, &n, "-N1") && add(argv, &n, "-n1") &&
              add(argv, &n, "--cpus-per-task=%u", s->cpus) &&
              (!s->gpus || add(argv, &n, "--gres=gpu:%u", s->gpus)) &&
              add(argv, &n, "--uid=%u", s->uid) && add(argv, &n, "--gid=%u", s->gid) &&
              add(argv, &n, "-J") && add(argv, &n, "%s", name) &&
              add(argv, &n, "--kill-on-bad-exit=1") && add(argv, &n, "--input=none") &&
              add(argv, &n, "--chdir=%s", s->chdir);
    if (ok) {
        argv[n++] = export; /* argv owns it now */
        export = NULL;
        ok = add(argv, &n, "--");
    }
    for (size_t i = 0; ok && i < words; i++)
        ok = add(argv, &n, "%s", s->argv[i]);
    free(export);
    if (!ok) {
        slurm_step_argv_free(argv);
        return loom_err(LOOM_E_INTERNAL, "Slurm step: out of memory");
    }
    *out = argv;
    return NULL;
}

void slurm_step_argv_free(char **argv)
{
    if (!argv)
        return;
    for (size_t i = 0; argv[i]; i++)
        free(argv[i]);
    free(argv);
}

/*
 * tests/unit/sched/test_slurm_step.c - the srun command line of a worker on
 * a Slurm node (sched/slurm_step.h): every word in its place, the GPU and
 * export options, and each field's refusal named (a node list, root, CPUs,
 * an exec id that would change the job name's shape, a value or srun's
 * ALL/NONE among the exported names, a relative chdir or program, the
 * limits on words).
 */
#include <stdlib.h>
#include <string.h>

#include "../../check.h"
#include "sched/slurm_step.h"

static const char *const worker_argv[] = {"/usr/bin/loom", "worker", "--slot", "3", NULL};
static const char *const worker_env[] = {"LOOM_SECRET", "PATH", NULL};

static slurm_step_spec good_spec(void)
{
    return (slurm_step_spec){.node = "node2", .uid = 200001, .gid = 200001, .cpus = 2,
                             .exec_id = "alice-1732790000000-7", .slot = 3,
                             .exports = worker_env, .chdir = "/shared/execs/x",
                             .argv = worker_argv};
}

/* The argv joined with spaces (for comparing whole lines). */
static char *joined(char **argv)
{
    size_t len = 1;
    for (size_t i = 0; argv[i]; i++)
        len += strlen(argv[i]) + 1;
    char *s = calloc(1, len);
    for (size_t i = 0; s && argv[i]; i++) {
        if (i)
            strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

static void test_argv(void)
{
    slurm_step_spec s = good_spec();
    char **argv = NULL;
    CHECK_OK(slurm_step_argv(&s, &argv));
    char *line = argv ? joined(argv) : NULL;
    CHECK_STR_EQ(line, "srun -w node2 -N1 -n1 --cpus-per-task=2 --uid=200001 --gid=200001 "
                       "-J loom:alice-1732790000000-7:3 --kill-on-bad-exit=1 --input=none "
                       "--chdir=/shared/execs/x --export=LOOM_SECRET,PATH -- "
                       "/usr/bin/loom worker --slot 3");
    free(line);
    slurm_step_argv_free(argv);

    /* a GPU worker, its own srun, nothing exported */
    s.gpus = 1;
    s.exports = NULL;
    s.srun = "/opt/slurm/bin/srun";
    CHECK_OK(slurm_step_argv(&s, &argv));
    line = argv ? joined(argv) : NULL;
    CHECK_STR_EQ(line, "/opt/slurm/bin/srun -w node2 -N1 -n1 --cpus-per-task=2 --gres=gpu:1 "
                       "--uid=200001 --gid=200001 -J loom:alice-1732790000000-7:3 "
                       "--kill-on-bad-exit=1 --input=none --chdir=/shared/execs/x "
                       "--export=NONE -- /usr/bin/loom worker --slot 3");
    free(line);
    slurm_step_argv_free(argv);
    slurm_step_argv_free(NULL);

    /* a word with spaces stays one word: no shell */
    const char *spaced[] = {"/bin/echo", "a b; rm -rf /", NULL};
    s = good_spec();
    s.argv = spaced;
    CHECK_OK(slurm_step_argv(&s, &argv));
    size_t n = 0;
    while (argv && argv[n])
        n++;
    CHECK(n >= 2 && !strcmp(argv[n - 1], "a b; rm -rf /") && !strcmp(argv[n - 2], "/bin/echo") &&
          !strcmp(argv[n - 3], "--"));
    slurm_step_argv_free(argv);
}

/* Builds with `s` and expects a refusal whose message holds `needle`. */
static void refused(const slurm_step_spec *s, const char *needle)
{
    char **argv = (char **)1;
    loom_error *e = slurm_step_argv(s, &argv);
    CHECK_MSG(e != NULL, "accepted; expected a refusal naming '%s'", needle);
    CHECK(argv == NULL);
    if (e)
        CHECK_CONTAINS(loom_err_message(e), needle);
    loom_err_free(e);
}

static void test_refusals(void)
{
    slurm_step_spec s;
    static char long_word[SLURM_STEP_ARG_MAX + 8];
    memset(long_word, 'a', sizeof long_word - 1);
    long_word[0] = '/';

    const char *nodes[] = {"", "node[1-2]", "node1,node2", "-node1", "node 1", "nodé", NULL};
    for (size_t i = 0; nodes[i]; i++) {
        s = good_spec();
        s.node = nodes[i];
        refused(&s, "node");
    }
    s = good_spec();
    s.node = NULL;
    refused(&s, "node");
    s.node = long_word + 1;
    refused(&s, "at most 63 bytes");

    s = good_spec();
    s.uid = 0;
    refused(&s, "never root");
    s = good_spec();
    s.gid = 0;
    refused(&s, "never root");
    s = good_spec();
    s.cpus = 0;
    refused(&s, "cpus 0: 1..");
    s.cpus = SLURM_STEP_CPUS_MAX + 1;
    refused(&s, "cpus");
    s = good_spec();
    s.gpus = SLURM_STEP_GPUS_MAX + 1;
    refused(&s, "gpus");

    const char *ids[] = {"", "a:b", "a,b", "a b", "a/b", NULL};
    for (size_t i = 0; ids[i]; i++) {
        s = good_spec();
        s.exec_id = ids[i];
        refused(&s, "exec id");
    }
    s = good_spec();
    s.exec_id = long_word + 1;
    refused(&s, "exec id");

    const char *bad_names[][2] = {{"LOOM_SECRET=x", NULL}, {"ALL", NULL}, {"NONE", NULL},
                                  {"1ABC", NULL},          {"", NULL},    {"A,B", NULL}};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        s = good_spec();
        s.exports = bad_names[i];
        refused(&s, "export");
    }
    const char *many[SLURM_STEP_EXPORTS_MAX + 2];
    for (size_t i = 0; i <= SLURM_STEP_EXPORTS_MAX; i++)
        many[i] = "V";
    many[SLURM_STEP_EXPORTS_MAX + 1] = NULL;
    s = good_spec();
    s.exports = many;
    refused(&s, "at most 64 variables");

    s = good_spec();
    s.chdir = "shared/x";
    refused(&s, "chdir");
    s.chdir = NULL;
    refused(&s, "chdir");
    s.chdir = long_word;
    refused(&s, "chdir: at most");

    const char *relative[] = {"loom", "worker", NULL}, *empty[] = {NULL};
    s = good_spec();
    s.argv = relative;
    refused(&s, "argv[0] 'loom': an absolute path");
    s.argv = empty;
    refused(&s, "argv[0]");
    s.argv = NULL;
    refused(&s, "argv[0]");
    const char *words[SLURM_STEP_ARGS_MAX + 2];
    for (size_t i = 0; i <= SLURM_STEP_ARGS_MAX; i++)
        words[i] = "/bin/true";
    words[SLURM_STEP_ARGS_MAX + 1] = NULL;
    s.argv = words;
    refused(&s, "at most 256 words");
    const char *big[] = {"/bin/echo", long_word, NULL};
    s.argv = big;
    refused(&s, "argv[1]: at most");
    s = good_spec();
    s.srun = "";
    refused(&s, "srun");
}

static void test_job_name(void)
{
    char name[96];
    CHECK_OK(slurm_step_job_name("bob-1-2", 0, name, sizeof name));
    CHECK_STR_EQ(name, "loom:bob-1-2:0");
    loom_error *e = slurm_step_job_name("bob-1-2", 4000000000u, name, 12);
    CHECK(e != NULL && loom_err_code(e) == LOOM_E_LIMIT);
    loom_err_free(e);
}

int main(void)
{
    test_argv();
    test_refusals();
    test_job_name();
    return CHECK_DONE();
}

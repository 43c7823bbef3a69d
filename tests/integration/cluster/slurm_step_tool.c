/*
 * tests/integration/cluster/slurm_step_tool.c - sched/slurm_step.h from the
 * command line, for the Slurm lab's tests (not installed):
 *
 *   slurm_step_tool run --node N --uid U --gid G --cpus C [--gpus G]
 *       --exec-id E --slot S [--export A,B] --chdir D [--pid-file F] -- CMD...
 *     starts srun as the host does (spawn_process, this environment), writes
 *     its pid to F, waits for it and exits with its status (128+N: signal N)
 *   slurm_step_tool leftovers [--exec-id E] [--uid-min A --uid-max B]
 *     one line per job: JOBID NAME UID STATE NODE
 *   slurm_step_tool cancel JOBID
 *   slurm_step_tool libslurm     exits 0 when built with libslurm
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sched/slurm_step.h"
#include "util/spawn.h"

extern char **environ;

#define TOOL_EXPORTS_MAX 64

static int failed(loom_error *e)
{
    fprintf(stderr, "slurm_step_tool: %s\n", loom_err_message(e));
    loom_err_free(e);
    return 1;
}

static uint32_t number(const char *s)
{
    char *end = NULL;
    unsigned long v = strtoul(s, &end, 10);
    if (!s[0] || *end || v > UINT32_MAX) {
        fprintf(stderr, "slurm_step_tool: '%s': a number expected\n", s);
        exit(2);
    }
    return (uint32_t)v;
}

/* Splits "A,B" in place into names[] (NULL-terminated). */
static void split_names(char *list, const char **names)
{
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t && n < TOOL_EXPORTS_MAX;
         t = strtok_r(NULL, ",", &save))
        names[n++] = t;
    names[n] = NULL;
}

static int run(int argc, char **argv)
{
    slurm_step_spec s = {0};
    const char *pid_file = NULL, *names[TOOL_EXPORTS_MAX + 1] = {NULL};
    int i = 0;
    for (; i + 1 < argc && strcmp(argv[i], "--"); i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--node"))
            s.node = v;
        else if (!strcmp(k, "--uid"))
            s.uid = number(v);
        else if (!strcmp(k, "--gid"))
            s.gid = number(v);
        else if (!strcmp(k, "--cpus"))
            s.cpus = number(v);
        else if (!strcmp(k, "--gpus"))
            s.gpus = number(v);
        else if (!strcmp(k, "--exec-id"))
            s.exec_id = v;
        else if (!strcmp(k, "--slot"))
            s.slot = number(v);
        else if (!strcmp(k, "--export")) {
            split_names(argv[i + 1], names);
            s.exports = names;
        } else if (!strcmp(k, "--chdir"))
            s.chdir = v;
        else if (!strcmp(k, "--pid-file"))
            pid_file = v;
        else {
            fprintf(stderr, "slurm_step_tool run: unknown option '%s'\n", k);
            return 2;
        }
    }
    if (i >= argc || strcmp(argv[i], "--")) {
        fprintf(stderr, "slurm_step_tool run: '-- CMD...' expected\n");
        return 2;
    }
    s.argv = (const char *const *)argv + i + 1;
    char **srun = NULL;
    loom_error *e = slurm_step_argv(&s, &srun);
    if (e)
        return failed(e);
    spawn_spec spec = {.argv = srun, .envp = environ, .pgid = -1};
    pid_t pid = -1;
    e = spawn_process(&spec, &pid);
    slurm_step_argv_free(srun);
    if (e)
        return failed(e);
    if (pid_file) {
        FILE *f = fopen(pid_file, "w");
        if (!f || fprintf(f, "%d\n", (int)pid) < 0 || fclose(f) != 0) {
            perror(pid_file);
            return 1;
        }
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        ;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int leftovers(int argc, char **argv)
{
    slurm_step_filter f = {0};
    for (int i = 0; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--exec-id"))
            f.exec_id = argv[i + 1];
        else if (!strcmp(argv[i], "--uid-min"))
            f.uid_min = number(argv[i + 1]);
        else if (!strcmp(argv[i], "--uid-max"))
            f.uid_max = number(argv[i + 1]);
        else {
            fprintf(stderr, "slurm_step_tool leftovers: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    slurm_step_job *jobs = NULL;
    size_t n = 0;
    loom_error *e = slurm_step_leftovers(NULL, &f, &jobs, &n);
    if (e)
        return failed(e);
    for (size_t i = 0; i < n; i++)
        printf("%u %s %u %s %s\n", jobs[i].job_id, jobs[i].name, jobs[i].user_id, jobs[i].state,
               jobs[i].node[0] ? jobs[i].node : "-");
    free(jobs);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "run"))
        return run(argc - 2, argv + 2);
    if (argc >= 2 && !strcmp(argv[1], "leftovers"))
        return leftovers(argc - 2, argv + 2);
    if (argc == 3 && !strcmp(argv[1], "cancel")) {
        loom_error *e = slurm_step_cancel(NULL, number(argv[2]));
        return e ? failed(e) : 0;
    }
    if (argc == 2 && !strcmp(argv[1], "libslurm"))
        return slurm_step_libslurm() ? 0 : 1;
    fprintf(stderr, "usage: slurm_step_tool run OPTIONS -- CMD... | leftovers [--exec-id E] "
                    "[--uid-min A --uid-max B] | cancel JOBID | libslurm\n");
    return 2;
}

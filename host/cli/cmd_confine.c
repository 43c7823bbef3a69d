/* cli/cmd_confine.c - `loom confine`, the step every job process goes
 * through (not listed in the usage: the host runs it): confine this process
 * (util/sandbox.h), then exec the job's program, which inherits the
 * confinement and cannot undo it. */
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "util/job_env.h"
#include "util/job_sandbox.h"
#include "util/sandbox.h"

static const char confine_usage[] =
    "usage: loom confine [--system] [--read PATH]... [--write PATH]... [--device PATH]...\n"
    "                    [--uid N --gid N] [--tmpdir DIR] [--env-fd N] -- PROGRAM [ARGS]\n"
    "\n"
    "Runs PROGRAM confined: it reads (and executes) only beneath the --read\n"
    "paths, writes only beneath the --write paths, and uses only the --device\n"
    "nodes; --system adds the system's folders and devices. As root, --uid and\n"
    "--gid name its account, which then owns the --write paths. --tmpdir\n"
    "creates DIR and points TMPDIR at it. --env-fd reads PROGRAM's whole\n"
    "environment from descriptor N (NUL-separated KEY=VALUE) and applies it\n"
    "only when running PROGRAM, after confining. The host starts job\n"
    "processes so, with an empty environment of their own.\n";

extern char **environ;

/* Reads the job's environment from the descriptor named by --env-fd. */
static int read_env_fd(const char *text, char **block, char ***env)
{
    char *end;
    errno = 0;
    long fd = strtol(text, &end, 10);
    if (errno || *end || end == text || fd < 0 || fd > 1024) {
        fprintf(stderr, "loom confine: --env-fd: expected a descriptor number, got \"%s\"\n",
                text);
        return -1;
    }
    int rc = job_env_from_fd((int)fd, block, env);
    if (rc != 0)
        fprintf(stderr, "loom confine: --env-fd %ld: %s\n", fd,
                errno == E2BIG ? "the environment is over 2 MiB" : strerror(errno));
    close((int)fd);
    return rc;
}

static int parse_id(const char *flag, const char *text, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (errno || *end || end == text || v == 0 || v > 0x7fffffffUL) {
        fprintf(stderr, "loom confine: %s: expected a number from 1 to 2147483647, got \"%s\"\n",
                flag, text);
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

/* The NVIDIA device nodes present, one per GPU. */
static void add_gpu_nodes(const char **devices, int *n, int cap, glob_t *g)
{
    if (glob("/dev/nvidia[0-9]*", 0, NULL, g) != 0)
        return;
    for (size_t i = 0; i < g->gl_pathc && *n < cap - 1; i++)
        devices[(*n)++] = g->gl_pathv[i];
}

int cmd_confine(int argc, char **argv)
{
    if (cli_wants_help(argc, argv)) {
        fputs(confine_usage, stdout);
        return 0;
    }
    int cap = argc + 64, nr = 0, nw = 0, nd = 0, sep = -1, ids = 0;
    const char **rd = calloc((size_t)cap, sizeof *rd), **wr = calloc((size_t)cap, sizeof *wr),
               **dev = calloc((size_t)cap, sizeof *dev);
    const char *tmpdir = NULL;
    char *env_block = NULL, **job_env = NULL;
    unsigned uid = 0, gid = 0;
    int bad = !rd || !wr || !dev, system_paths = 0;
    glob_t g = {0};
    for (int i = 0; i < argc && !bad && sep < 0; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--")) {
            sep = i;
        } else if (!strcmp(a, "--system")) {
            system_paths = 1;
        } else if (v && !strcmp(a, "--read")) {
            rd[nr++] = argv[++i];
        } else if (v && !strcmp(a, "--write")) {
            wr[nw++] = argv[++i];
        } else if (v && !strcmp(a, "--device")) {
            dev[nd++] = argv[++i];
        } else if (v && !strcmp(a, "--tmpdir")) {
            tmpdir = argv[++i];
        } else if (v && !strcmp(a, "--env-fd") && !job_env) {
            bad = read_env_fd(argv[++i], &env_block, &job_env) != 0;
        } else if (v && (!strcmp(a, "--uid") || !strcmp(a, "--gid"))) {
            bad = parse_id(a, argv[++i], a[2] == 'u' ? &uid : &gid) != 0;
            ids |= a[2] == 'u' ? 1 : 2;
        } else {
            fprintf(stderr, "loom confine: unexpected \"%s\" (see loom confine --help)\n", a);
            bad = 1;
        }
    }
    for (const char *const *p = job_sandbox_system_read; !bad && system_paths && *p; p++)
        rd[nr++] = *p;
    for (const char *const *p = job_sandbox_devices; !bad && system_paths && *p; p++)
        dev[nd++] = *p;
    if (!bad && system_paths)
        add_gpu_nodes(dev, &nd, cap, &g);
    if (!bad && (sep < 0 || sep + 1 >= argc)) {
        fprintf(stderr, "loom confine: expected -- PROGRAM [ARGS] at the end\n");
        bad = 1;
    }
    if (!bad && ids != 0 && ids != 3) {
        fprintf(stderr, "loom confine: --uid and --gid go together\n");
        bad = 1;
    }
    /* The job's own temporary folder, inside what it writes. */
    if (!bad && tmpdir && mkdir(tmpdir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "loom confine: --tmpdir %s: %s\n", tmpdir, strerror(errno));
        bad = 1;
    }
    loom_error *e = NULL;
    if (!bad) {
        /* Started as the account already (srun --uid on a Slurm node):
         * nothing to switch, and the tree was given to it by the host. */
        int already = ids == 3 && geteuid() != 0 && getuid() == uid && geteuid() == uid &&
                      getgid() == gid && getegid() == gid;
        sandbox_spec spec = {.read = rd, .write = wr, .device = dev,
                             .switch_ids = ids == 3 && !already, .uid = uid, .gid = gid};
        e = sandbox_apply(&spec);
    }
    globfree(&g);
    free(rd);
    free(wr);
    free(dev);
    if (!bad && !e && job_env)
        environ = job_env; /* confined now: PROGRAM may have it, PATH included */
    if (!bad && !e && tmpdir && setenv("TMPDIR", tmpdir, 1) != 0) {
        fprintf(stderr, "loom confine: --tmpdir %s: %s\n", tmpdir, strerror(errno));
        bad = 1;
    }
    if (bad || e) {
        if (e)
            fprintf(stderr, "loom confine: %s\n", loom_err_message(e));
        loom_err_free(e);
        free(job_env);
        free(env_block);
        return 126;
    }
    execvp(argv[sep + 1], argv + sep + 1);
    fprintf(stderr, "loom confine: cannot run \"%s\": %s\n", argv[sep + 1], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}

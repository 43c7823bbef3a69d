/* cli/cmd_serve.c - `loom serve`: the host daemon in the foreground until
 * SIGTERM or SIGINT. */
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "auth/auth.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "util/fs.h"
#include "util/gnutls_dl.h"
#include "util/job_env.h"
#include "util/job_sandbox.h"
#include "util/log.h"
#include "util/log_pump.h"
#include "api/events.h"
#include "api/history.h"
#include "util/num_text.h"
#include "util/proc_group.h"
#include "train/protocol.h"

static const char serve_usage[] =
    "usage: loom serve [--home DIR] [--listen ADDR:PORT] [--plugin-dir DIR]\n"
    "                  [--cpu-slots N] [--hysteresis SECONDS] [--admin-password-file F]\n"
    "                  [--slurm PARTITION [--slurm-conf FILE] [--slurm-cpus-per-slot N]]\n"
    "                  [--shared-dir DIR]\n"
    "                  [--tls-cert PEM --tls-key PEM]\n"
    "                  [--job-uid-range FIRST-LAST | none] [--require-isolation]\n"
    "                  [--max-connections N] [--max-connections-per-ip N]\n"
    "                  [--idle-timeout SECONDS] [--header-timeout SECONDS]\n"
    "                  [--max-header-bytes B] [--max-uploads N]\n"
    "                  [--max-uploads-per-user N] [--slow-threads N]\n"
    "                  [--max-event-streams-per-user N]\n"
    "                  [--cors-origin ORIGIN]... [--allow-basic-over-http] [--web-dir DIR]\n"
    "                  [--history-hours H] [--history-points N]\n"
    "                  [--python PATH] [--job-path DIRS] [--data-root DIR]...\n"
    "                  [--worker-link unix|tcp[:ADDR]|tls[:ADDR]]\n"
    "                  [--max-queued-execs N] [--log-max-bytes B] [--checkpoints-keep K]\n"
    "                  [--archive-max-entries N] [--archive-max-bytes B]\n"
    "                  [--job-max-procs N] [--job-max-memory B] [--job-max-disk B]\n"
    "\n"
    "Runs the loom host: REST API, state store, plugin registry and job\n"
    "supervision. It stops cleanly on SIGTERM or SIGINT.\n"
    "\n"
    "  --home DIR          state directory (default $LOOM_HOME, else\n"
    "                      " CLIENT_ROOT_HOME " as root, ~/.loom otherwise)\n"
    "  --listen ADDR:PORT  address to listen on (default 127.0.0.1:9280;\n"
    "                      port 0 picks a free one)\n"
    "  --plugin-dir DIR    built-in plugins (default: next to the binary)\n"
    "  --cpu-slots N       devices to share when there is no GPU (default: the\n"
    "                      number of cores)\n"
    "  --slurm PARTITION   share the devices of a Slurm partition's nodes instead\n"
    "                      of this machine's: their GPUs (gres gpu:N), else CPU\n"
    "                      slots; Slurm's configuration from --slurm-conf FILE,\n"
    "                      else $SLURM_CONF (see README, \"Cluster\")\n"
    "  --slurm-cpus-per-slot N  CPUs of a node without GPUs per slot (default 1)\n"
    "  --shared-dir DIR    the folders jobs reach (execs, models, tuning, data,\n"
    "                      plugins) in DIR, which every node mounts at the same\n"
    "                      path, instead of in the home, which keeps the host's\n"
    "                      state alone (DIR must exist: see README, \"Cluster\")\n"
    "  --hysteresis S      seconds before the scheduler resizes a job again\n"
    "                      (default 5)\n"
    "  --tls-cert, --tls-key  serve HTTPS with this certificate and key (the\n"
    "                      CLI then needs LOOM_CA_CERT when the certificate is\n"
    "                      not signed by a system-trusted authority)\n"
    "  --admin-password-file F  on a new home, the first administrator's\n"
    "                      password (else a random one is printed once)\n"
    "  --job-uid-range FIRST-LAST  when the host runs as root, each user's jobs\n"
    "                      run as uid FIRST + the user's id (default\n"
    "                      200000-299999); none (not as root): as the host's\n"
    "                      user\n"
    "  --cors-origin ORIGIN  a browser page on ORIGIN (scheme://host[:port]) may call\n"
    "                      the API with the user's credentials (repeatable)\n"
    "  --allow-basic-over-http  accept passwords (Basic, userpasswd) over plain\n"
    "                      HTTP on a non-loopback listener (default: refused)\n"
    "  --web-dir DIR       the web console's files, served at / (default: the\n"
    "                      share/loom/web installed beside the binary)\n"
    "  --history-hours H   how far back the host's history (devices' holders,\n"
    "                      training metrics, models' rates) goes (default 24)\n"
    "  --history-points N  the most points it keeps of one series (default\n"
    "                      10000)\n"
    "  --require-isolation refuse to start unless jobs are fully confined\n"
    "                      (Landlock, and an account per user when root)\n"
    "  --python PATH       the Python jobs run when they name none with\n"
    "                      --msd-env PYTHON= (default: the first python3 on the\n"
    "                      jobs' PATH, never the host's own)\n"
    "  --job-path DIRS     the PATH every job starts with (absolute folders\n"
    "                      separated by ':'; default\n"
    "                      " JOB_ENV_PATH ")\n"
    "  --data-root DIR     a folder under which execs' --data-dir may be, beside\n"
    "                      the data store HOME/data and /usr/share/datasets\n"
    "                      (repeatable; never inside the home)\n"
    "  --worker-link L     how an elastic training exec's workers reach its\n"
    "                      coordinator: unix (an abstract socket, one machine;\n"
    "                      the default) or tcp[:ADDR] (ADDR, default every\n"
    "                      address, on a port the system picks) or tls[:ADDR]\n"
    "                      (TCP in TLS 1.3 keyed by the exec's secret; with\n"
    "                      --tls-cert, tcp is always tls); every way they\n"
    "                      prove the exec's secret and send heartbeats\n"
    "  --max-connections N open HTTP connections in all (default 1024)\n"
    "  --max-connections-per-ip N  from one client address (default 128)\n"
    "  --idle-timeout S    close a connection silent this long (default 15)\n"
    "  --header-timeout S  a request's headers complete within this of its first byte,\n"
    "                      else 408 (over HTTPS: of the connection's accept, else it\n"
    "                      closes; default 10)\n"
    "  --max-header-bytes B  each connection's header buffer: a request's\n"
    "                      headers must fit with about 900 bytes to spare, else\n"
    "                      431 (default 8192, at least 4096)\n"
    "  --max-uploads N     multipart uploads in progress in all (default 8;\n"
    "                      more are refused with 503)\n"
    "  --max-uploads-per-user N  by one user (default 2; more: 429)\n"
    "  --max-event-streams-per-user N  the console's live updates (GET\n"
    "                      /loom/v1/events) one user may hold open (default 4;\n"
    "                      more: 429)\n"
    "  --slow-threads N    threads that serve the exec routes (submissions\n"
    "                      unpack, deletes remove folders) (default 8)\n"
    "  --max-queued-execs N  execs one user may have waiting for devices\n"
    "                      (default 1000)\n"
    "  --log-max-bytes B   each launch-style worker's stdout and stderr keep\n"
    "                      at most B bytes, the newest (default 64M)\n"
    "  --checkpoints-keep K  checkpoints kept per training job: the newest K\n"
    "                      and the best (default 5)\n"
    "  --archive-max-entries N  files, folders and links in a model directory\n"
    "                      (default 50000)\n"
    "  --archive-max-bytes B  a model directory unpacked (default 2G)\n"
    "  --job-max-procs N   processes and threads of one exec, kernel instance\n"
    "                      or plugin call (default 4096; needs cgroups)\n"
    "  --job-max-memory B  memory of one exec (default: the machine's memory\n"
    "                      times its share of the slots; needs cgroups)\n"
    "  --job-max-disk B    what an exec's RESULT_DIR may take, and any one\n"
    "                      file it writes (default 20G); over it, the exec\n"
    "                      is stopped with ERROR\n"
    "  B takes a K, M or G suffix (powers of 1024).\n"
    "\n"
    "The host writes its address to HOME/host, so the CLI finds it, and its\n"
    "log to HOME/loom.log.\n";

/* A count or a size with an optional K, M or G suffix, from min to max;
 * -1 when it is not one. */
static int parse_amount(const char *text, int sizes, uint64_t min, uint64_t max, uint64_t *out)
{
    return num_text_amount(text, sizes, min, max, out);
}

/* The bounds on execs (exec_limits): 1 when argv[*i] was one (its value
 * taken), 0 when it is another option, -1 after saying what is wrong. */
static int parse_bound(int argc, char **argv, int *i, exec_limits *l)
{
    static const struct {
        const char *flag;
        int sizes;
        uint64_t min, max;
    } bounds[] = {
        {"--max-queued-execs", 0, 1, 1000000},
        {"--log-max-bytes", 1, LOG_PUMP_MIN_BYTES, (uint64_t)1 << 40},
        {"--checkpoints-keep", 0, 1, 100000},
        {"--archive-max-entries", 0, 1, 100000000},
        {"--archive-max-bytes", 1, 1, (uint64_t)1 << 40},
        {"--job-max-procs", 0, 16, (uint64_t)1 << 22},
        {"--job-max-memory", 1, (uint64_t)16 << 20, (uint64_t)1 << 50},
        {"--job-max-disk", 1, (uint64_t)1 << 20, (uint64_t)1 << 50},
    };
    for (size_t k = 0; k < sizeof bounds / sizeof *bounds; k++) {
        if (strcmp(argv[*i], bounds[k].flag) != 0 || *i + 1 >= argc)
            continue;
        uint64_t v;
        const char *text = argv[++*i];
        if (parse_amount(text, bounds[k].sizes, bounds[k].min, bounds[k].max, &v) != 0) {
            cli_fail("%s: expected a whole number%s from %llu to %llu, got \"%s\"",
                     bounds[k].flag, bounds[k].sizes ? " of bytes (K, M or G allowed)" : "",
                     (unsigned long long)bounds[k].min, (unsigned long long)bounds[k].max, text);
            return -1;
        }
        if (k == 0)
            l->max_queued_per_user = (int)v;
        else if (k == 1)
            l->log_max_bytes = v;
        else if (k == 2)
            l->checkpoints_keep = (int)v;
        else if (k == 3)
            l->archive_max_entries = v;
        else if (k == 4)
            l->archive_max_bytes = v;
        else if (k == 5)
            l->job_max_procs = v;
        else if (k == 6)
            l->job_max_memory_bytes = v;
        else
            l->job_max_disk_bytes = v;
        return 1;
    }
    return 0;
}

/* The flags that take a whole number from 1 up: 1 when argv[*i] is one
 * (its value stored in *opt, *i moved on), 0 when it is not, -1 (after
 * saying why) for a bad value. */
static int parse_number_flag(int argc, char **argv, int *i, loomd_options *opt)
{
    static const struct {
        const char *flag;
        size_t offset;
        unsigned long min, max;
    } flags[] = {
        {"--cpu-slots", offsetof(loomd_options, cpu_slots), 1, 4096},
        {"--slurm-cpus-per-slot", offsetof(loomd_options, slurm_cpus_per_slot), 1, 4096},
        {"--max-connections", offsetof(loomd_options, http.max_connections), 1, 1000000},
        {"--max-connections-per-ip", offsetof(loomd_options, http.max_connections_per_ip), 1,
         1000000},
        {"--idle-timeout", offsetof(loomd_options, http.idle_timeout_s), 1, 86400},
        {"--header-timeout", offsetof(loomd_options, http.header_timeout_s), 1, 3600},
        {"--max-header-bytes", offsetof(loomd_options, http.header_bytes), HTTP_MIN_HEADER_BYTES,
         1u << 20},
        {"--max-uploads", offsetof(loomd_options, http.max_uploads), 1, 10000},
        {"--max-uploads-per-user", offsetof(loomd_options, http.max_uploads_per_user), 1, 10000},
        {"--slow-threads", offsetof(loomd_options, http.slow_threads), 1, 64},
        {"--max-event-streams-per-user", offsetof(loomd_options, max_event_streams_per_user), 1,
         EVENTS_MAX_STREAMS_PER_USER},
        {"--history-hours", offsetof(loomd_options, history_hours), 1, HISTORY_MAX_HOURS},
        {"--history-points", offsetof(loomd_options, history_points), HISTORY_MIN_POINTS,
         HISTORY_MAX_POINTS},
    };
    for (size_t k = 0; k < sizeof flags / sizeof *flags; k++) {
        if (strcmp(argv[*i], flags[k].flag) != 0 || *i + 1 >= argc)
            continue;
        const char *text = argv[++*i];
        char *end;
        errno = 0;
        unsigned long v = strtoul(text, &end, 10);
        if (*text == '-' || *end || end == text || errno || v < flags[k].min ||
            v > flags[k].max) {
            cli_fail("%s: expected a whole number from %lu to %lu, got \"%s\"", flags[k].flag,
                     flags[k].min, flags[k].max, text);
            return -1;
        }
        /* cpu_slots and the history's are ints, the rest unsigned: the
         * value fits both. */
        *(unsigned *)((char *)opt + flags[k].offset) = (unsigned)v;
        return 1;
    }
    return 0;
}

/* What `loom serve` says once it listens. */
static void print_started(const loomd *d, const char *url, const char *home)
{
    printf("loom host %s listening on %s", LOOM_VERSION, url);
    printf("home %s, log %s/loom.log\n", home, home);
    char isolation[512];
    job_sandbox_describe(home, isolation, sizeof isolation);
    printf("%s\n", isolation);
    proc_group_describe(isolation, sizeof isolation);
    printf("%s\n", isolation);
    if (d->generated_admin_password[0])
        printf("created user admin with password %s (shown once: change it with "
               "'loom user passwd admin')\n", d->generated_admin_password);
    fflush(stdout);
}

/* --job-uid-range FIRST-LAST: above the system's and login users' ids. */
static int parse_uid_range(const char *text, loomd_options *opt)
{
    if (strcmp(text, "none") == 0) {
        opt->no_job_accounts = 1;
        return 0;
    }
    char *end;
    unsigned long first = strtoul(text, &end, 10), last = 0;
    if (end != text && *end == '-')
        last = strtoul(end + 1, &end, 10);
    if (*end || first < 1000 || last < first || last > 0x7fffffffUL)
        return -1;
    opt->job_uid_first = (unsigned)first;
    opt->job_uid_last = (unsigned)last;
    return 0;
}

static int parse_listen(const char *text, char *addr, size_t addrlen, int *port)
{
    const char *colon = strrchr(text, ':');
    char *end;
    if (!colon) {
        snprintf(addr, addrlen, "127.0.0.1");
        colon = text - 1;
    } else {
        snprintf(addr, addrlen, "%.*s", (int)(colon - text), text);
    }
    long p = strtol(colon + 1, &end, 10);
    if (*end || end == colon + 1 || p < 0 || p > 65535)
        return -1;
    *port = (int)p;
    return 0;
}

/* A repeatable FLAG VALUE, kept in list (at most max, each a `what`): 1
 * when argv[*i] was one (its value consumed), 0 when not, -1 after
 * printing the error. */
static int repeated_flag(int argc, char **argv, int *i, const char *flag, const char *what,
                         const char **list, int max, int *count)
{
    if (strcmp(argv[*i], flag) != 0 || *i + 1 >= argc)
        return 0;
    if (*count == max) {
        cli_fail("%s: at most %d %s", flag, max, what);
        return -1;
    }
    list[(*count)++] = argv[++*i];
    return 1;
}

/* The browser- and notebook-facing flags: --cors-origin ORIGIN
 * (repeatable), --allow-basic-over-http and --web-dir DIR; and --data-root DIR
 * (repeatable). 1 when argv[*i] was one (its value consumed), 0 when not,
 * -1 after printing the error. */
static int web_flag(int argc, char **argv, int *i, loomd_options *o)
{
    static const char *origins[CORS_MAX_ORIGINS], *roots[EXEC_DATA_ROOTS_MAX];
    if (strcmp(argv[*i], "--allow-basic-over-http") == 0) {
        o->allow_basic_over_http = 1;
        return 1;
    }
    if (strcmp(argv[*i], "--web-dir") == 0 && *i + 1 < argc) {
        o->web_dir = argv[++*i];
        return 1;
    }
    o->cors_origins = origins;
    o->data_roots = roots;
    int r = repeated_flag(argc, argv, i, "--cors-origin", "origins", origins, CORS_MAX_ORIGINS,
                          &o->cors_origin_count);
    return r ? r : repeated_flag(argc, argv, i, "--data-root", "roots", roots,
                                 EXEC_DATA_ROOTS_MAX, &o->data_root_count);
}

/* --slurm PARTITION, --slurm-conf FILE: the inventory from a Slurm
 * partition; --shared-dir DIR: the folders every node sees. 1 when argv[*i] was one (its value consumed), 0 when not. */
static int slurm_flag(int argc, char **argv, int *i, loomd_options *o)
{
    if (*i + 1 >= argc)
        return 0;
    if (strcmp(argv[*i], "--slurm") == 0)
        o->slurm_partition = argv[++*i];
    else if (strcmp(argv[*i], "--slurm-conf") == 0)
        o->slurm_conf = argv[++*i];
    else if (strcmp(argv[*i], "--shared-dir") == 0)
        o->shared_dir = argv[++*i];
    else
        return 0;
    return 1;
}

/* --python PATH: the host's default interpreter, which jobs and the host's
 * readers of Python scripts find in LOOM_PYTHON; --job-path DIRS: the PATH
 * jobs start with, in LOOM_JOB_PATH. 1 when argv[*i] was one (its value
 * consumed), 0 when not, -1 after printing the error. */
static int python_flag(int argc, char **argv, int *i)
{
    if (strcmp(argv[*i], "--job-path") == 0 && *i + 1 < argc) {
        const char *dirs = argv[++*i];
        loom_error *invalid = job_env_path_valid(dirs);
        if (invalid) {
            cli_fail_error(loom_err_wrap(invalid, "--job-path"));
            return -1;
        }
        setenv("LOOM_JOB_PATH", dirs, 1);
        return 1;
    }
    if (strcmp(argv[*i], "--python") != 0 || *i + 1 >= argc)
        return 0;
    const char *path = argv[++*i];
    if (access(path, X_OK) != 0) {
        cli_fail("--python: %s is not an executable file", path);
        return -1;
    }
    setenv("LOOM_PYTHON", path, 1);
    return 1;
}

/* --worker-link unix|tcp[:ADDR]|tls[:ADDR]: how training workers reach their exec's
 * coordinator, in LOOM_WORKER_LINK for the trainer (exec_trainer.c). 1
 * when argv[*i] was it, 0 when not, -1 after printing the error. */
static int worker_link_flag(int argc, char **argv, int *i)
{
    if (strcmp(argv[*i], "--worker-link") != 0 || *i + 1 >= argc)
        return 0;
    const char *text = argv[++*i];
    train_link link;
    loom_error *invalid = train_link_parse(text, &link);
    if (invalid) {
        cli_fail_error(loom_err_wrap(invalid, "--worker-link"));
        return -1;
    }
    setenv("LOOM_WORKER_LINK", text, 1);
    return 1;
}

/* A host that keeps its HTTP private (--tls-cert) keeps its workers' link
 * private too: over TCP it is TLS. A TLS link needs GnuTLS here (and on
 * the nodes): refused at the start, naming it, rather than at every
 * worker's connection. */
static loom_error *seal_worker_link(int has_certificate)
{
    const char *text = getenv("LOOM_WORKER_LINK");
    train_link link; /* worker_link_flag checked it */
    loom_err_free(train_link_parse(text, &link));
    if (has_certificate && link.tcp && !link.tls) {
        char sealed[TRAIN_LINK_ADDR_MAX + 8];
        snprintf(sealed, sizeof sealed, "tls%s", text + 3); /* "tcp" or "tcp:ADDR" */
        setenv("LOOM_WORKER_LINK", sealed, 1);
        text = getenv("LOOM_WORKER_LINK");
        link.tls = 1;
    }
    const gnutls_api *gnutls = NULL;
    loom_error *e = link.tls ? gnutls_dl_open(&gnutls) : NULL;
    return e ? loom_err_wrap(e, "--worker-link %s: TLS", text) : NULL;
}

/* The flags parsed by name rather than as numbers: web_flag's,
 * python_flag's, worker_link_flag's and slurm_flag's (their return
 * values). */
static int named_flag(int argc, char **argv, int *i, loomd_options *o)
{
    int r = web_flag(argc, argv, i, o);
    if (r == 0)
        r = python_flag(argc, argv, i);
    if (r == 0)
        r = worker_link_flag(argc, argv, i);
    return r ? r : slurm_flag(argc, argv, i, o);
}

/* --slurm's companions without it, or --cpu-slots with it: says which. */
static int slurm_flags_conflict(const loomd_options *o)
{
    if (!o->slurm_partition && (o->slurm_conf || o->slurm_cpus_per_slot))
        return cli_fail("--slurm-conf and --slurm-cpus-per-slot go with --slurm PARTITION");
    if (o->slurm_partition && o->cpu_slots)
        return cli_fail("--cpu-slots: with --slurm the CPU slots are the nodes' "
                        "(--slurm-cpus-per-slot)");
    return 0;
}

/* User code never runs as root: as root, jobs need accounts. */
static int refuse_root_without_accounts(const loomd_options *jobs)
{
    if (!jobs->no_job_accounts || geteuid() != 0)
        return 0;
    return cli_fail("--job-uid-range none: refused as root, where it would run every user's "
                    "code as root; leave the default range (%u-%u) or give uids no local "
                    "account uses, or start loom serve as an unprivileged user, whose uid "
                    "then runs the jobs", JOB_UID_FIRST_DEFAULT, JOB_UID_LAST_DEFAULT);
}

int cmd_serve(int argc, char **argv, const cli_globals *g)
{
    if (cli_wants_help(argc, argv)) {
        fputs(serve_usage, stdout);
        return 0;
    }
    char addr[256] = "127.0.0.1";
    int port = LOOM_DEFAULT_PORT;
    const char *plugin_dir = NULL;
    double hysteresis = -1;
    const char *admin_password_file = NULL, *tls_cert = NULL, *tls_key = NULL;
    loomd_options jobs = {0}; /* the job isolation, numeric and web options */
    for (int i = 0; i < argc; i++) {
        int number = parse_number_flag(argc, argv, &i, &jobs), bound = 0;
        if (number == 0)
            number = named_flag(argc, argv, &i, &jobs);
        if (number < 0)
            return 1;
        if (number > 0) {
            continue;
        } else if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
            if (parse_listen(argv[++i], addr, sizeof addr, &port) != 0)
                return cli_fail("--listen: expected ADDR:PORT, got \"%s\"", argv[i]);
        } else if (strcmp(argv[i], "--plugin-dir") == 0 && i + 1 < argc) {
            plugin_dir = argv[++i];
        } else if (strcmp(argv[i], "--tls-cert") == 0 && i + 1 < argc) {
            tls_cert = argv[++i];
        } else if (strcmp(argv[i], "--tls-key") == 0 && i + 1 < argc) {
            tls_key = argv[++i];
        } else if (strcmp(argv[i], "--job-uid-range") == 0 && i + 1 < argc) {
            if (parse_uid_range(argv[++i], &jobs) != 0)
                return cli_fail("--job-uid-range: expected FIRST-LAST with 1000 <= FIRST <= LAST "
                                "< 2^31, or none, got \"%s\"", argv[i]);
        } else if (strcmp(argv[i], "--require-isolation") == 0) {
            jobs.require_isolation = 1;
        } else if (strcmp(argv[i], "--admin-password-file") == 0 && i + 1 < argc) {
            admin_password_file = argv[++i];
        } else if (strcmp(argv[i], "--hysteresis") == 0 && i + 1 < argc) {
            char *end;
            hysteresis = strtod(argv[++i], &end);
            if (*end || hysteresis < 0 || hysteresis > 86400)
                return cli_fail("--hysteresis: expected seconds from 0 to 86400, got \"%s\"", argv[i]);
        } else if ((bound = parse_bound(argc, argv, &i, &jobs.limits)) == 0) {
            fputs(serve_usage, stderr);
            return cli_fail("serve: unexpected \"%s\"", argv[i]);
        } else if (bound < 0) {
            return 1;
        }
    }
    if (slurm_flags_conflict(&jobs) || refuse_root_without_accounts(&jobs))
        return 1;
    char home[4096], path[4200], why[5000];
    cli_client_home(g->home, home, sizeof home);
    /* Refused before the log is opened: that log is the running host's. */
    if (loom_err_take(loomd_home_free(home), why, sizeof why) != LOOM_OK)
        return cli_fail("%s", why);
    loom_error *e = fs_mkdir_p(home);
    if (e)
        return cli_fail_error(loom_err_wrap(e, "--home"));
    snprintf(path, sizeof path, "%s/loom.log", home);
    if (log_open(path) != 0)
        return cli_fail("%s: cannot open the log: %s", path, strerror(errno));

    /* Signals are taken synchronously by this thread; every other thread
     * (HTTP, supervisor) inherits the mask. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    char err[1024], admin_password[AUTH_PASSWORD_MAX_LEN + 1] = "";
    e = admin_password_file ? auth_read_password_file(admin_password_file, admin_password,
                                                                  sizeof admin_password)
                                        : NULL;
    if (e) {
        loom_err_take(e, err, sizeof err);
        return cli_fail("--admin-password-file: %s", err);
    }
    if (!tls_cert != !tls_key)
        return cli_fail("--tls-cert and --tls-key go together");
    if ((e = seal_worker_link(tls_cert != NULL)))
        return cli_fail_error(e);
    char *cert_pem = NULL, *key_pem = NULL;
    if (tls_cert && (e = fs_read_file(tls_cert, 1u << 20, &cert_pem, NULL)) == NULL &&
        (e = fs_read_file(tls_key, 1u << 20, &key_pem, NULL)) != NULL)
        free(cert_pem);
    if (e)
        return cli_fail_error(loom_err_wrap(e, "--tls-cert/--tls-key"));
    loomd_options opt = jobs; /* isolation, numeric and web flags, then the rest */
    opt.tls_cert_pem = cert_pem, opt.tls_key_pem = key_pem, opt.home = home, opt.address = addr;
    opt.port = port, opt.plugin_dir = plugin_dir, opt.hysteresis = hysteresis;
    opt.admin_password = admin_password[0] ? admin_password : NULL;
    loomd *d = NULL;
    e = loomd_start(&opt, &d);
    free(key_pem);
    free(cert_pem);
    if (e) {
        loom_err_take(e, err, sizeof err);
        log_error("start failed: %s", err);
        return cli_fail("%s", err);
    }
    char url[300];
    snprintf(url, sizeof url, "%s://%s:%d\n", tls_cert ? "https" : "http", addr, loomd_port(d));
    snprintf(path, sizeof path, "%s/host", home);
    e = fs_write_file_atomic(path, url, strlen(url), 0600); /* the home's files are its own */
    if (e) /* clients then need --host or LOOM_HOST */
        log_warn("%s", loom_err_message(e));
    loom_err_free(e);
    print_started(d, url, home);

    int sig = 0;
    sigwait(&stop, &sig);
    log_info("signal %d: shutting down", sig);
    loomd_stop(d);
    unlink(path);
    log_info("stopped");
    log_close();
    return 0;
}

/* cli/cmd_exec.c - `loom exec start|list|view|logs|stop|delete|wait`,
 * dlicmd's submissions against the host's REST API. */
#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/routes.h"
#include "cli/commands.h"
#include "exec/dlicmd.h"
#include "exec/exec.h"
#include "store/record_states.h"
#include "util/fs.h"
#include "util/tarball.h"


static const char exec_usage[] =
    "usage: loom exec start --exec-start FRAMEWORK [--model-dir DIR] [--model-main FILE]\n"
    "                       [--numWorker N] [FLAG VALUE]... [-- ARGS...]\n"
    "       loom exec list [--json]\n"
    "       loom exec view ID [--json]\n"
    "       loom exec logs ID [-f] [--worker N] [--stderr]\n"
    "       loom exec stop ID\n"
    "       loom exec delete ID\n"
    "       loom exec wait ID [--timeout SECONDS]\n"
    "       loom exec resize ID --workers N\n"
    "       loom exec result ID [-o FILE]\n"
    "\n"
    "start  submits a job in dlicmd's syntax; 'loom exec start --help' lists\n"
    "       every flag. The model directory is uploaded and copied to\n"
    "       RESULT_DIR/_submitted_code; each worker runs there with DATA_DIR,\n"
    "       RESULT_DIR, LOG_DIR, DLI_EXECID, CUDA_VISIBLE_DEVICES and the\n"
    "       --msd-env pairs set; its stdout and stderr go to RESULT_DIR/log/worker-N/.\n"
    "       Frameworks: see 'loom framework list' (command, python, distPyTorch, ...).\n"
    "logs   prints every worker's output (or one with --worker); for a training\n"
    "       exec, the trainer's (driver's) log. -f follows it until the exec ends,\n"
    "       with a progress line every 2 s for training. A log whose stdout is\n"
    "       empty shows its stderr instead (a traceback); --stderr shows only that.\n"
    "wait   waits for the exec to end; the exit status is 0 only if it FINISHED.\n"
    "result downloads a zip of the exec's RESULT_DIR (without the submitted\n"
    "       code) to FILE (default ID.zip).\n"
    "resize asks an elastic training exec for N workers (1 to its --numWorker);\n"
    "       the trainer grows or shrinks at its next step, without a restart.\n";

/* `loom exec start --help`: the flags come from the parser's own table, so
 * the help lists exactly what the parser accepts. */
static void print_start_help(void)
{
    int width = 0;
    for (size_t i = 0; i < dlicmd_flag_count; i++) {
        int w = (int)(strlen(dlicmd_flags[i].name) + 1 + strlen(dlicmd_flags[i].value));
        if (w > width)
            width = w;
    }
    printf("usage: loom exec start --exec-start FRAMEWORK [FLAG VALUE]... [-- ARGS...]\n"
           "\n"
           "Submits a job in dlicmd's syntax (--flag VALUE or --flag=VALUE); the words\n"
           "after \"--\" go to the program (edt: the trainer's --epochs, --batch-size, ...).\n"
           "\n");
    for (size_t i = 0; i < dlicmd_flag_count; i++) {
        char flag[128];
        snprintf(flag, sizeof flag, "%s %s", dlicmd_flags[i].name, dlicmd_flags[i].value);
        /* Word-wrapped to 79 columns after the flag column. */
        const char *p = dlicmd_flags[i].help;
        int room = 79 - (width + 4), first = 1;
        while (*p) {
            int n = (int)strlen(p);
            if (n > room) {
                n = room;
                while (n > 0 && p[n] != ' ')
                    n--;
                if (n == 0)
                    n = room;
            }
            printf("  %-*s  %.*s\n", width, first ? flag : "", n, p);
            first = 0;
            p += n;
            while (*p == ' ')
                p++;
        }
    }
    printf("\n"
           "The model directory is copied to RESULT_DIR/_submitted_code; each worker\n"
           "runs there with DATA_DIR, RESULT_DIR, LOG_DIR, DLI_EXECID,\n"
           "CUDA_VISIBLE_DEVICES and the --msd-env pairs set; its stdout and stderr go\n"
           "to RESULT_DIR/log/worker-N/. It prints the exec's id; follow it with\n"
           "'loom exec logs ID -f' and 'loom exec wait ID'.\n");
}

/* The model directory's own name (its last component), or "" for one
 * with none ("/", ".", ".."): then its files go at the archive's root. */
static void model_dir_name(const char *dir, char *out, size_t len)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    size_t start = n;
    while (start > 0 && dir[start - 1] != '/')
        start--;
    snprintf(out, len, "%.*s", (int)(n - start), dir + start);
    if (!strcmp(out, "/") || !strcmp(out, ".") || !strcmp(out, "..") || strlen(out) != n - start)
        out[0] = 0;
}

int cli_exec_start_words(int argc, char **argv, const cli_globals *g, char *id, size_t idlen)
{
    dlicmd d;
    char err[1024];
    if (loom_err_take(dlicmd_parse_words(argc, argv, &d), err, sizeof err) != LOOM_OK)
        return cli_fail("exec start: %s", err);
    char *archive = NULL;
    size_t archive_len = 0;
    /* Under a folder named like the directory (the host takes its contents),
     * so a model directory holding one folder is not mistaken for one. */
    char top[256] = "";
    if (d.model_dir)
        model_dir_name(d.model_dir, top, sizeof top);
    loom_error *packed = !d.model_dir ? NULL
                         : top[0]     ? tarball_pack_dir_as(d.model_dir, top, &archive, &archive_len)
                                      : tarball_pack_dir(d.model_dir, &archive, &archive_len);
    if (packed) {
        dlicmd_free(&d);
        loom_err_take(packed, err, sizeof err);
        return cli_fail("--model-dir: %s", err);
    }
    dlicmd_free(&d);
    char *args = dlicmd_join(argc, argv);
    client_part parts[2] = {
        {.name = "args", .value = args ? args : ""},
        {.name = "file", .filename = "model.tar", .data = archive, .len = archive_len},
    };
    cJSON *j = cli_upload(g, LOOM_ROUTE_EXECS, parts, archive ? 2 : 1);
    free(args);
    free(archive);
    if (!j)
        return 1;
    snprintf(id, idlen, "%s", cli_str(j, "id"));
    if (g->json)
        cli_print_json(j);
    else
        printf("exec %s submitted: %s%s%s\n", cli_str(j, "id"), cli_str(j, "state"),
               *cli_str(j, "message") ? ": " : "", cli_str(j, "message"));
    cJSON_Delete(j);
    return 0;
}

/* numWorker, or NOW/numWorker while a running exec has fewer (an elastic
 * exec the scheduler has shrunk, or not yet grown). */
static void workers_text(const cJSON *e, char *buf, size_t len)
{
    int max = (int)cli_num(e, "numWorker");
    const cJSON *now = cJSON_GetObjectItemCaseSensitive(e, "workersNow");
    if (cJSON_IsNumber(now) && now->valueint != max)
        snprintf(buf, len, "%d/%d", now->valueint, max);
    else
        snprintf(buf, len, "%d", max);
}

static void print_exec_table(cJSON *array)
{
    const char *headers[] = {"ID", "FRAMEWORK", "STATE", "WORKERS", "TASK", "CREATED", "MESSAGE"};
    cli_table *t = cli_table_new(7, headers);
    const cJSON *e;
    cJSON_ArrayForEach(e, array) {
        char workers[16], created[32], task[160] = "-";
        workers_text(e, workers, sizeof workers);
        /* A tuning task's experiment: TASK#EXPERIMENT. */
        if (*cli_str(e, "hpoName"))
            snprintf(task, sizeof task, "%s#%.0f", cli_str(e, "hpoName"), cli_num(e, "experimentId"));
        cli_time(cli_num(e, "createTime"), created, sizeof created);
        /* A pending exec's message is why it waits. */
        const char *why = cli_str(e, "pendingReason");
        const char *cells[] = {cli_str(e, "id"), cli_str(e, "framework"), cli_str(e, "state"),
                               workers, task, created, *why ? why : cli_str(e, "message")};
        cli_table_add(t, cells);
    }
    cli_table_print(t);
    cli_table_free(t);
}

static void print_exec(const cJSON *e)
{
    char t1[32], t2[32], t3[32];
    cli_time(cli_num(e, "createTime"), t1, sizeof t1);
    cli_time(cli_num(e, "startTime"), t2, sizeof t2);
    cli_time(cli_num(e, "endTime"), t3, sizeof t3);
    printf("id          %s\n", cli_str(e, "id"));
    printf("state       %s\n", cli_str(e, "state"));
    if (*cli_str(e, "message"))
        printf("message     %s\n", cli_str(e, "message"));
    if (*cli_str(e, "pendingReason"))
        printf("waiting     %s\n", cli_str(e, "pendingReason"));
    const cJSON *handover = cJSON_GetObjectItemCaseSensitive(e, "handover");
    if (cJSON_IsObject(handover))
        printf("handover    a device came free %.0f ms after the scheduler took it from %s\n",
               cli_num(handover, "ms"),
               *cli_str(handover, "from") ? cli_str(handover, "from") : "another job");
    if (*cli_str(e, "hpoName"))
        printf("tuning      experiment %.0f of task %s\n", cli_num(e, "experimentId"),
               cli_str(e, "hpoName"));
    printf("framework   %s\n", cli_str(e, "framework"));
    printf("creator     %s\n", cli_str(e, "creator"));
    if (*cli_str(e, "plan"))
        printf("plan        %s\n", cli_str(e, "plan"));
    printf("args        %s\n", cli_str(e, "args"));
    char workers[48];
    workers_text(e, workers, sizeof workers);
    printf("workers     %s\n", workers);
    if (*cli_str(e, "python"))
        printf("python      %s\n", cli_str(e, "python"));
    const cJSON *warning;
    cJSON_ArrayForEach(warning, cJSON_GetObjectItemCaseSensitive(e, "warnings"))
        printf("warning     %s\n", cJSON_IsString(warning) ? warning->valuestring : "");
    const cJSON *limits = cJSON_GetObjectItemCaseSensitive(e, "limits");
    if (cJSON_IsObject(limits)) {
        /* Each limit's source: the plan that set it, else the serve flag. */
        const char *procs = cli_str(limits, "processesPlan"), *memory = cli_str(limits, "memoryPlan"),
                   *disk = cli_str(limits, "diskPlan");
        printf("limits      %.0f processes and threads (%s%s), %.0f MiB memory (%s%s%s), %.0f MiB "
               "disk under RESULT_DIR and per file (%s%s)\n",
               cli_num(limits, "processes"), *procs ? "plan " : "--job-max-procs", procs,
               cli_num(limits, "memoryBytes") / 1048576.0, *memory ? "plan " : "--job-max-memory",
               memory,
               !*memory && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(limits, "memoryIsShare"))
                   ? ": its share of the machine"
                   : "",
               cli_num(limits, "diskBytes") / 1048576.0, *disk ? "plan " : "--job-max-disk", disk);
    }
    printf("result dir  %s\n", cli_str(e, "resultDir"));
    printf("created     %s\nstarted     %s\nended       %s\n", t1, t2, t3);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(e, "training");
    if (t) {
        printf("training    %d/%d worker(s) (max %d), generation %d\n", (int)cli_num(t, "workers"),
               (int)cli_num(t, "targetWorkers"), (int)cli_num(t, "maxWorkers"),
               (int)cli_num(t, "generation"));
        const cJSON *devices = cJSON_GetObjectItemCaseSensitive(t, "workerDevices"), *d;
        if (cJSON_GetArraySize(devices) > 0) {
            printf("            on %s device(s)", cli_str(t, "deviceKind"));
            cJSON_ArrayForEach(d, devices) printf(" %d", (int)d->valuedouble);
            putchar('\n');
        }
        printf("            epoch %d of %d, iteration %d, batch %d per worker, effective %d\n",
               (int)cli_num(t, "epoch"), (int)cli_num(t, "epochs"), (int)cli_num(t, "iteration"),
               (int)cli_num(t, "batchSize"), (int)cli_num(t, "effectiveBatchSize"));
        if (*cli_str(t, "progress"))
            printf("            %s\n", cli_str(t, "progress"));
        printf("            %.0f samples/s (last epoch)\n", cli_num(t, "samplesPerSecond"));
        const cJSON *tm = cJSON_GetObjectItemCaseSensitive(t, "testMetrics");
        const cJSON *m;
        if (tm) {
            printf("test        ");
            cJSON_ArrayForEach(m, tm) printf("%s %.4f  ", m->string, m->valuedouble);
            putchar('\n');
        }
        const cJSON *f;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(t, "pluginFailures"))
            printf("plugin      %s %s failed %d time(s)%s: %s\n", cli_str(f, "kind"),
                   cli_str(f, "plugin"), (int)cli_num(f, "failures"),
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(f, "disabled"))
                       ? ", disabled for this exec" : "",
                   cli_str(f, "lastError"));
        const cJSON *eps = cJSON_GetObjectItemCaseSensitive(t, "epochsDone");
        cJSON_ArrayForEach(m, eps) {
            const cJSON *tr = cJSON_GetObjectItemCaseSensitive(m, "train");
            printf("  epoch %d: %d/%d samples%s, %.1f s, %.0f samples/s, train loss %.4f\n",
                   (int)cli_num(m, "epoch"), (int)cli_num(m, "samples"), (int)cli_num(m, "expected"),
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "exactlyOnce")) ? " (each once)" : " (NOT each once)",
                   cli_num(m, "seconds"), cli_num(m, "samplesPerSecond"), cli_num(tr, "loss"));
        }
    }
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(e, "workers");
    const cJSON *w;
    cJSON_ArrayForEach(w, ws)
        printf("  worker %d  pid %d  %s\n", (int)cli_num(w, "rank"), (int)cli_num(w, "pid"),
               cli_str(w, "state"));
}

static cJSON *get_exec(const cli_globals *g, const char *id)
{
    char path[256];
    snprintf(path, sizeof path, LOOM_ROUTE_EXECS "/%s", id);
    return cli_request(g, "GET", path, NULL);
}

bool cli_reply_exec_state(const cJSON *j, exec_state *out)
{
    loom_error *e = exec_state_parse(cli_str(j, "state"), out);
    bool known = e == NULL;
    loom_err_free(e);
    return known;
}

int cli_exec_wait_id(const cli_globals *g, const char *id, double timeout_s, int quiet)
{
    double waited = 0;
    for (;;) {
        cJSON *j = get_exec(g, id);
        if (!j)
            return 1;
        const char *state = cli_str(j, "state");
        exec_state s;
        if (cli_reply_exec_state(j, &s) && exec_state_is_final(s)) {
            int ok = s == EXEC_STATE_FINISHED;
            if (!quiet)
                printf("exec %s %s%s%s\n", id, state, *cli_str(j, "message") ? ": " : "",
                       cli_str(j, "message"));
            cJSON_Delete(j);
            return ok ? 0 : 1;
        }
        cJSON_Delete(j);
        if (timeout_s > 0 && waited >= timeout_s)
            return cli_fail("exec %s did not end within %.0f s", id, timeout_s);
        usleep(100000);
        waited += 0.1;
    }
}

/* Fetches a worker's log from *offset on and prints it; returns bytes read
 * or -1. */
static long print_log_chunk(const cli_globals *g, const char *id, int worker, const char *stream,
                            long long *offset, const char *prefix)
{
    char path[512];
    snprintf(path, sizeof path, LOOM_ROUTE_EXECS "/%s" LOOM_ROUTE_LOG "?worker=%d&stream=%s&offset=%lld", id, worker,
             stream, *offset);
    size_t n;
    char *text = cli_request_text(g, path, &n);
    if (!text)
        return -1;
    if (prefix && n) {
        /* Prefix complete lines; a partial line waits for its end. */
        const char *p = text, *nl;
        while ((nl = memchr(p, '\n', n - (size_t)(p - text)))) {
            printf("%s%.*s\n", prefix, (int)(nl - p), p);
            p = nl + 1;
        }
        n = (size_t)(p - text);
    } else {
        fwrite(text, 1, n, stdout);
    }
    fflush(stdout);
    *offset += (long long)n;
    free(text);
    return (long)n;
}

/* Prints one whole log; returns its size or -1. */
static long long print_whole_log(const cli_globals *g, const char *id, int worker,
                                 const char *stream)
{
    long long off = 0;
    long n;
    while ((n = print_log_chunk(g, id, worker, stream, &off, NULL)) > 0)
        ;
    return n < 0 ? -1 : off;
}

/* A log whose stdout is empty may say why on stderr (a Python
 * traceback): `logs` shows that instead, under a header saying so, when
 * there is any. 0 or -1. */
static int print_stderr_instead(const cli_globals *g, const char *id, int worker)
{
    char path[512], who[32];
    snprintf(path, sizeof path, LOOM_ROUTE_EXECS "/%s" LOOM_ROUTE_LOG "?worker=%d&stream=stderr"
             "&offset=0", id, worker);
    size_t n;
    char *text = cli_request_text(g, path, &n);
    if (!text)
        return -1;
    if (worker < 0)
        snprintf(who, sizeof who, "driver");
    else
        snprintf(who, sizeof who, "worker-%d", worker);
    if (n)
        printf("==> %s/stderr (its stdout is empty) <==\n", who);
    fwrite(text, 1, n, stdout);
    free(text);
    long long off = (long long)n;
    long more = n ? 1 : 0;
    while (more > 0)
        more = print_log_chunk(g, id, worker, "stderr", &off, NULL);
    return more < 0 ? -1 : 0;
}

/* One line of a training exec's progress, for `logs -f`: the trainer's
 * own words for where it stands. */
static void print_progress(const cJSON *t)
{
    if (*cli_str(t, "progress"))
        fprintf(stderr, "[progress] %s\n", cli_str(t, "progress"));
}

int cli_exec_print_logs(const cli_globals *g, const char *id, int follow, int worker,
                    const char *stream)
{
    cJSON *e = get_exec(g, id);
    if (!e)
        return 1;
    int nworkers = (int)cli_num(e, "numWorker");
    int training = cJSON_GetObjectItemCaseSensitive(e, "training") != NULL;
    cJSON_Delete(e);
    if (worker >= nworkers)
        return cli_fail("--worker: exec %s has workers 0 to %d", id, nworkers - 1);
    /* A training exec's story is its driver's log (worker -1); a launch
     * exec's is its workers'. */
    int first, last;
    if (worker >= 0)
        first = last = worker;
    else if (training)
        first = last = -1;
    else {
        first = 0;
        last = nworkers - 1;
    }
    int fallback = !strcmp(stream, "stdout");
    if (!follow) {
        for (int w = first; w <= last; w++) {
            if (first != last)
                printf("==> worker-%d/%s <==\n", w, stream);
            long long n = print_whole_log(g, id, w, stream);
            if (n < 0 || (n == 0 && fallback && print_stderr_instead(g, id, w) != 0))
                return 1;
        }
        return 0;
    }
    long long offsets[1025] = {0};
    if (last - first >= 1024)
        return cli_fail("too many workers to follow at once; use --worker");
    double last_progress = -2.0, waited = 0; /* the first line at once */
    for (;;) {
        /* Read the state first, so output written before the end is not missed. */
        cJSON *j = get_exec(g, id);
        if (!j)
            return 1;
        exec_state s;
        int final = cli_reply_exec_state(j, &s) && exec_state_is_final(s);
        char state_line[640];
        snprintf(state_line, sizeof state_line, "exec %s %s%s%s", id, cli_str(j, "state"),
                 *cli_str(j, "message") ? ": " : "", cli_str(j, "message"));
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "training");
        if (t && !final && waited - last_progress >= 2.0) {
            print_progress(t);
            last_progress = waited;
        }
        cJSON_Delete(j);
        long got = 0;
        for (int w = first; w <= last; w++) {
            char prefix[32];
            snprintf(prefix, sizeof prefix, "[worker-%d] ", w);
            long n;
            while ((n = print_log_chunk(g, id, w, stream, &offsets[w - first],
                                        first != last ? prefix : NULL)) > 0)
                got += n;
            if (n < 0)
                return 1;
        }
        if (final && got == 0) {
            for (int w = first; w <= last && fallback; w++)
                if (offsets[w - first] == 0 && print_stderr_instead(g, id, w) != 0)
                    return 1;
            fprintf(stderr, "%s\n", state_line);
            return 0;
        }
        if (!got) {
            usleep(200000);
            waited += 0.2;
        }
    }
}

/* `loom exec result ID [-o FILE]`: the result zip, written whole or not
 * at all. */
static int exec_result(const cli_globals *g, int argc, char **argv)
{
    const char *id = argv[1];
    char out[PATH_MAX], path[512];
    snprintf(out, sizeof out, "%s.zip", id);
    for (int i = 2; i < argc; i++) {
        if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) && i + 1 < argc)
            snprintf(out, sizeof out, "%s", argv[++i]);
        else
            return cli_fail("exec result: unexpected \"%s\" (usage: loom exec result ID [-o FILE])",
                            argv[i]);
    }
    snprintf(path, sizeof path, LOOM_ROUTE_EXECS "/%s" LOOM_ROUTE_RESULT, id);
    size_t n;
    char *zip = cli_request_text(g, path, &n);
    if (!zip)
        return 1;
    loom_error *e = fs_write_file_atomic(out, zip, n, 0644);
    free(zip);
    if (e)
        return cli_fail_error(e);
    printf("%s: %zu bytes\n", out, n);
    return 0;
}

int cmd_exec(int argc, char **argv, const cli_globals *g)
{
    if (argc >= 1 && strcmp(argv[0], "start") == 0 && cli_wants_help(argc - 1, argv + 1)) {
        print_start_help();
        return 0;
    }
    int usage_rc = cli_verb_usage(argc, argv, exec_usage);
    if (usage_rc >= 0)
        return usage_rc;
    const char *verb = argv[0];
    if (strcmp(verb, "start") == 0) {
        char id[128];
        return cli_exec_start_words(argc - 1, argv + 1, g, id, sizeof id);
    }
    if (strcmp(verb, "list") == 0) {
        cJSON *j = cli_request(g, "GET", LOOM_ROUTE_EXECS, NULL);
        if (!j)
            return 1;
        if (g->json)
            cli_print_json(j);
        else
            print_exec_table(j);
        cJSON_Delete(j);
        return 0;
    }
    if (argc < 2)
        return cli_fail("usage: loom exec %s ID (see loom exec --help)", verb);
    const char *id = argv[1];
    if (strcmp(verb, "view") == 0) {
        cJSON *j = get_exec(g, id);
        if (!j)
            return 1;
        if (g->json)
            cli_print_json(j);
        else
            print_exec(j);
        cJSON_Delete(j);
        return 0;
    }
    if (strcmp(verb, "stop") == 0 || strcmp(verb, "delete") == 0) {
        char path[256];
        int stop = strcmp(verb, "stop") == 0;
        snprintf(path, sizeof path, LOOM_ROUTE_EXECS "/%s%s", id, stop ? LOOM_ROUTE_STOP : "");
        cJSON *j = cli_request(g, stop ? "POST" : "DELETE", path, NULL);
        if (!j)
            return 1;
        if (g->json)
            cli_print_json(j);
        else
            printf("exec %s %s\n", id, stop ? "stopping" : "deleted");
        cJSON_Delete(j);
        return 0;
    }
    if (strcmp(verb, "resize") == 0) {
        if (argc != 4 || strcmp(argv[2], "--workers") != 0)
            return cli_fail("usage: loom exec resize ID --workers N");
        char path[256], body[64];
        snprintf(path, sizeof path, LOOM_ROUTE_EXECS "/%s" LOOM_ROUTE_RESIZE, id);
        snprintf(body, sizeof body, "{\"workers\": %d}", atoi(argv[3]));
        cJSON *j = cli_request(g, "POST", path, body);
        if (!j)
            return 1;
        if (g->json)
            cli_print_json(j);
        else
            printf("exec %s: asked for %s worker(s)\n", id, argv[3]);
        cJSON_Delete(j);
        return 0;
    }
    if (strcmp(verb, "result") == 0)
        return exec_result(g, argc, argv);
    if (strcmp(verb, "wait") == 0) {
        double timeout = 0;
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
                timeout = atof(argv[++i]);
            else
                return cli_fail("exec wait: unexpected \"%s\"", argv[i]);
        }
        return cli_exec_wait_id(g, id, timeout, 0);
    }
    if (strcmp(verb, "logs") == 0) {
        int follow = 0, worker = -1;
        const char *stream = "stdout";
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--follow") == 0)
                follow = 1;
            else if (strcmp(argv[i], "--stderr") == 0)
                stream = "stderr";
            else if (strcmp(argv[i], "--worker") == 0 && i + 1 < argc)
                worker = atoi(argv[++i]);
            else
                return cli_fail("exec logs: unexpected \"%s\"", argv[i]);
        }
        return cli_exec_print_logs(g, id, follow, worker, stream);
    }
    fputs(exec_usage, stderr);
    return cli_fail("exec: unknown command \"%s\"", verb);
}

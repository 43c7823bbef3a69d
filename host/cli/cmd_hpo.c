/* cli/cmd_hpo.c - `loom hpo`: tuning tasks over the hypersearch routes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/routes.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "store/record_states.h"
#include "util/fs.h"
#include "util/num_text.h"
#include "util/tarball.h"

static const char hpo_usage[] =
    "usage: loom hpo submit TASK.json --model-dir DIR\n"
    "       loom hpo list | view NAME | best NAME | stop NAME | restart NAME | delete NAME\n"
    "       loom hpo logs NAME [-f]\n"
    "       loom hpo wait NAME [--timeout SECONDS]\n"
    "\n"
    "A tuning task in WMLA's JSON (hpoName, modelSpec.args, algoDef, hyperParams or\n"
    "experiments): each experiment runs as an exec of the model directory with its\n"
    "hyperparameters in config.json; its objective is read from val_dict_list.json.\n"
    "\n"
    "stop    ends the task's running experiments (STOPPING until they have ended,\n"
    "        then STOPPED); restart carries a STOPPED or FAILED task on.\n"
    "logs    prints the search algorithm's log (its plugin's output and host->log\n"
    "        lines; the last 64 KiB, -f then follows it until the task ends). An\n"
    "        experiment's own output: loom exec logs ID (the ID from loom hpo view).\n"
    "wait    waits for the task to end; exit status 0 FINISHED, 1 FAILED,\n"
    "        3 STOPPED, 4 timeout (1 also when the host cannot be asked).\n";

enum { WAIT_FINISHED = 0, WAIT_FAILED = 1, WAIT_STOPPED = 3, WAIT_TIMEOUT = 4 };

#define TASK_MAX_BYTES (4u << 20)

static int submit(int argc, char **argv, const cli_globals *g)
{
    const char *task = NULL, *model_dir = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--model-dir") && i + 1 < argc)
            model_dir = argv[++i];
        else if (!task && argv[i][0] != '-')
            task = argv[i];
        else
            return cli_fail("hpo submit: unexpected \"%s\" (see loom hpo --help)", argv[i]);
    }
    if (!task || !model_dir)
        return cli_fail("hpo submit: expected TASK.json and --model-dir DIR");
    size_t len = 0;
    char *json;
    loom_error *e = fs_read_file(task, TASK_MAX_BYTES, &json, &len);
    if (e)
        return cli_fail_error(loom_err_wrap(e, "hpo submit"));
    char *archive = NULL, err[512];
    size_t archive_len = 0;
    e = tarball_pack_dir(model_dir, &archive, &archive_len);
    if (e) {
        free(json);
        loom_err_take(e, err, sizeof err);
        return cli_fail("--model-dir %s: %s", model_dir, err);
    }
    client_part parts[2] = {
        {.name = "data", .value = json},
        {.name = "file", .filename = "model.tar", .data = archive, .len = archive_len},
    };
    cJSON *j = cli_upload(g, LOOM_ROUTE_HPO, parts, 2);
    free(json);
    free(archive);
    if (!j)
        return 1;
    if (g->json)
        cli_print_json(j);
    else
        printf("%s\n", cJSON_IsString(j) ? j->valuestring : "?");
    cJSON_Delete(j);
    return 0;
}

static int list(const cli_globals *g)
{
    cJSON *j = cli_request(g, "GET", LOOM_ROUTE_HPO, NULL);
    if (!j)
        return 1;
    if (g->json) {
        cli_print_json(j);
    } else {
        static const char *const head[] = {"NAME", "STATE", "CREATOR"};
        cli_table *t = cli_table_new(3, head);
        const cJSON *o;
        cJSON_ArrayForEach(o, j) {
            const char *cells[] = {cli_str(o, "hpoName"), cli_str(o, "state"), cli_str(o, "creator")};
            cli_table_add(t, cells);
        }
        cli_table_print(t);
        cli_table_free(t);
    }
    cJSON_Delete(j);
    return 0;
}

/* An experiment's hyperparameters as "name=value name=value"; longer
 * lists end in "...". */
static void values_text(const cJSON *x, char *out, size_t len)
{
    const cJSON *h;
    size_t used = 0;
    out[0] = 0;
    cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(x, "hyperParams")) {
        int n = snprintf(out + used, len - used, "%s%s=%s", used ? " " : "", cli_str(h, "name"),
                         cli_str(h, "fixedVal"));
        if (n < 0 || (size_t)n >= len - used) {
            snprintf(out + (len > 4 ? len - 4 : 0), len > 4 ? 4 : len, "...");
            return;
        }
        used += (size_t)n;
    }
}

static void print_values(const cJSON *x)
{
    char text[1024];
    values_text(x, text, sizeof text);
    fputs(text, stdout);
}

static cJSON *get_task(const char *name, const cli_globals *g);

static int view(const char *name, int best_only, const cli_globals *g)
{
    cJSON *j = get_task(name, g);
    if (!j)
        return 1;
    const cJSON *best = cJSON_GetObjectItemCaseSensitive(j, "best");
    if (g->json) {
        cli_print_json(best_only ? best : j);
    } else if (best_only) {
        if (!cJSON_IsObject(best)) {
            cJSON_Delete(j);
            return cli_fail("hpo best %s: no experiment reported the objective yet", name);
        }
        char metric[NUM_TEXT_MAX];
        printf("%s %s: ", cli_str(j, "objectiveMetric"),
               num_text_double(cli_num(best, "metricVal"), metric, sizeof metric));
        print_values(best);
        printf(" (experiment %g, exec %s)\n", cli_num(best, "id"), cli_str(best, "appId"));
    } else {
        const char *msg = cli_str(j, "message");
        printf("%s: %s%s%s%s, %s %s, progress %s, %.2f s\n", cli_str(j, "hpoName"),
               cli_str(j, "state"), *msg ? " (" : "", msg, *msg ? ")" : "", cli_str(j, "objective"),
               cli_str(j, "objectiveMetric"), cli_str(j, "progress"), cli_num(j, "duration"));
        const char *head[] = {"ID", "STATE", "METRIC", "EXEC", "HYPERPARAMETERS"};
        cli_table *t = cli_table_new(5, head);
        const cJSON *x;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(j, "experiments")) {
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(x, "metricVal");
            char id[32], metric[NUM_TEXT_MAX], values[1024];
            snprintf(id, sizeof id, "%g", cli_num(x, "id"));
            if (cJSON_IsNumber(m))
                num_text_double(m->valuedouble, metric, sizeof metric);
            else
                snprintf(metric, sizeof metric, "-");
            values_text(x, values, sizeof values);
            cli_table_add(t, (const char *const[]){id, cli_str(x, "state"), metric,
                                                   cli_str(x, "appId"), values});
        }
        cli_table_print(t);
        cli_table_free(t);
    }
    cJSON_Delete(j);
    return 0;
}

static void task_path(char *path, size_t len, const char *name, const char *suffix)
{
    char *esc = cli_curl_escape_path(name);
    snprintf(path, len, LOOM_ROUTE_HPO "/%s%s", esc ? esc : name, suffix);
    free(esc);
}

/* The task's view, NULL when it cannot be had (the error printed). */
static cJSON *get_task(const char *name, const cli_globals *g)
{
    char path[512];
    task_path(path, sizeof path, name, "");
    return cli_request(g, "GET", path, NULL);
}

/* A state word from a REST reply; one this version does not know (a newer
 * host's) reads as SUBMITTED: not ended, waited on. */
static hpo_task_state reply_state(const char *word)
{
    hpo_task_state s = HPO_TASK_SUBMITTED;
    loom_err_free(hpo_task_state_parse(word, &s));
    return s;
}

hpo_task_state cli_reply_hpo_state(const cJSON *reply)
{
    return reply_state(cli_str(reply, "state"));
}

/* How `loom hpo wait` exits for a task in state s; -1 while it goes on. */
static int wait_code(hpo_task_state s)
{
    switch (s) {
    case HPO_TASK_FINISHED:
        return WAIT_FINISHED;
    case HPO_TASK_STOPPED:
        return WAIT_STOPPED;
    case HPO_TASK_FAILED:
        return WAIT_FAILED;
    default:
        return -1;
    }
}

static int ended(const char *state)
{
    return wait_code(reply_state(state)) >= 0;
}

/* stop, restart or delete, then what the task now is, as `exec stop` says. */
static int act(const char *verb, const char *name, const cli_globals *g)
{
    int del = !strcmp(verb, "delete"), restart = !strcmp(verb, "restart");
    char path[512];
    task_path(path, sizeof path, name, restart ? LOOM_ROUTE_RESTART : "");
    cJSON *j = cli_request(g, del ? "DELETE" : "PUT", path, NULL);
    if (!j)
        return 1;
    cJSON_Delete(j);
    cJSON *t = del ? NULL : get_task(name, g);
    const char *state = t ? cli_str(t, "state") : "";
    if (g->json && t)
        cli_print_json(t);
    else if (del)
        printf("tuning task %s deleted\n", name);
    else if (reply_state(state) == HPO_TASK_STOPPING)
        printf("tuning task %s stopping: %d running experiment(s) are being ended "
               "(loom hpo wait %s)\n", name, (int)cli_num(t, "running"), name);
    else
        printf("tuning task %s %s: %s%s%s\n", name, restart ? "restarted" : "stopped", state,
               *cli_str(t, "message") ? ", " : "", cli_str(t, "message"));
    cJSON_Delete(t);
    return t || del ? 0 : 1;
}

/* `loom hpo wait NAME [--timeout S]`: the exit status says how it ended. */
static int wait_task(int argc, char **argv, const cli_globals *g)
{
    double timeout = 0;
    for (int i = 2; i < argc; i++) {
        char *end;
        if (!strcmp(argv[i], "--timeout") && i + 1 < argc &&
            (timeout = strtod(argv[i + 1], &end)) >= 0 && *end == 0 && end != argv[i + 1])
            i++;
        else
            return cli_fail("hpo wait: unexpected \"%s\" (usage: loom hpo wait NAME "
                            "[--timeout SECONDS])", argv[i]);
    }
    int64_t until = time_mono_ms() + (int64_t)(timeout * 1000);
    for (;;) {
        cJSON *t = get_task(argv[1], g);
        if (!t)
            return WAIT_FAILED;
        const char *state = cli_str(t, "state");
        int rc = wait_code(reply_state(state));
        if (rc >= 0) {
            printf("tuning task %s %s%s%s%s, progress %s\n", argv[1], state,
                   *cli_str(t, "message") ? " (" : "", cli_str(t, "message"),
                   *cli_str(t, "message") ? ")" : "", cli_str(t, "progress"));
            cJSON_Delete(t);
            return rc;
        }
        cJSON_Delete(t);
        if (timeout > 0 && time_mono_ms() >= until) {
            cli_fail("hpo wait: tuning task %s did not end within %g s", argv[1], timeout);
            return WAIT_TIMEOUT;
        }
        usleep(200000);
    }
}

/* Prints the search log from *offset (-1: its last part) and moves it on;
 * the task's state to `state`. 0, or 1 when the host could not be asked. */
static int print_search_log(const char *name, long long *offset, char *state, size_t len,
                            const cli_globals *g)
{
    char path[600], query[48] = "";
    if (*offset >= 0)
        snprintf(query, sizeof query, "?offset=%lld", *offset);
    task_path(path, sizeof path, name, LOOM_ROUTE_LOG);
    strncat(path, query, sizeof path - strlen(path) - 1);
    cJSON *j = cli_request(g, "GET", path, NULL);
    if (!j)
        return 1;
    if (*offset < 0 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "truncated")))
        fprintf(stderr, "[the search log's last %lld of %lld bytes]\n",
                (long long)(cli_num(j, "next") - cli_num(j, "offset")), (long long)cli_num(j, "size"));
    fputs(cli_str(j, "text"), stdout);
    fflush(stdout);
    *offset = (long long)cli_num(j, "next");
    snprintf(state, len, "%s", cli_str(j, "state"));
    cJSON_Delete(j);
    return 0;
}

/* `loom hpo logs NAME [-f]`: the search algorithm's log. */
static int logs(int argc, char **argv, const cli_globals *g)
{
    int follow = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--follow"))
            follow = 1;
        else
            return cli_fail("hpo logs: unexpected \"%s\" (usage: loom hpo logs NAME [-f])",
                            argv[i]);
    }
    long long offset = -1;
    char state[32];
    if (print_search_log(argv[1], &offset, state, sizeof state, g))
        return 1;
    while (follow && !ended(state)) {
        usleep(200000);
        long long before = offset;
        if (print_search_log(argv[1], &offset, state, sizeof state, g))
            return 1;
        /* Read what was written before the end, then stop. */
        if (ended(state) && offset != before)
            state[0] = 0;
    }
    if (follow)
        fprintf(stderr, "tuning task %s %s\n", argv[1], state);
    return 0;
}

int cli_hpo_algorithm_add_dir(const char *dir, const char *name, const char *conda_home,
                          const char *conda_env, const cli_globals *g)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/optimizer.py", dir);
    if (!fs_is_file(path))
        return cli_fail("algorithm add %s: no optimizer.py in the folder (a WMLA plugin optimizer "
                        "defines class PluginOptimizer there)", dir);
    if (!name) {
        const char *slash = strrchr(dir, '/');
        while (slash && slash[1] == 0 && slash > dir) { /* "dir/" */
            const char *p = slash - 1;
            while (p > dir && *p != '/')
                p--;
            slash = *p == '/' ? p : NULL;
        }
        name = slash ? slash + 1 : dir;
    }
    char *archive = NULL, err[512];
    size_t len = 0;
    loom_error *e = tarball_pack_dir(dir, &archive, &len);
    if (e) {
        loom_err_take(e, err, sizeof err);
        return cli_fail("algorithm add %s: %s", dir, err);
    }
    cJSON *data = cJSON_CreateObject();
    char clean[128];
    snprintf(clean, sizeof clean, "%s", name);
    clean[strcspn(clean, "/")] = 0;
    cJSON_AddStringToObject(data, "name", clean);
    if (conda_home)
        cJSON_AddStringToObject(data, "condaHome", conda_home);
    if (conda_env)
        cJSON_AddStringToObject(data, "condaEnv", conda_env);
    char *text = cJSON_PrintUnformatted(data);
    cJSON_Delete(data);
    client_part parts[2] = {
        {.name = "data", .value = text},
        {.name = "file", .filename = "optimizer.tar", .data = archive, .len = len},
    };
    cJSON *j = cli_upload(g, LOOM_ROUTE_HPO_ALGORITHMS "/install", parts, 2);
    free(text);
    free(archive);
    if (!j)
        return 1;
    printf("installed plugin optimizer %s (use it as algoDef.algorithm)\n",
           cJSON_IsString(j) ? j->valuestring : clean);
    cJSON_Delete(j);
    return 0;
}

int cmd_hpo(int argc, char **argv, const cli_globals *g)
{
    int rc = cli_verb_usage(argc, argv, hpo_usage);
    if (rc >= 0)
        return rc;
    const char *verb = argv[0];
    if (!strcmp(verb, "submit"))
        return submit(argc - 1, argv + 1, g);
    if (!strcmp(verb, "list"))
        return list(g);
    if (argc >= 2 && !strcmp(verb, "wait"))
        return wait_task(argc, argv, g);
    if (argc >= 2 && !strcmp(verb, "logs"))
        return logs(argc, argv, g);
    if (argc != 2)
        return cli_fail("hpo %s: expected one task name (see loom hpo --help)", verb);
    if (!strcmp(verb, "view"))
        return view(argv[1], 0, g);
    if (!strcmp(verb, "best"))
        return view(argv[1], 1, g);
    if (!strcmp(verb, "stop") || !strcmp(verb, "restart") || !strcmp(verb, "delete"))
        return act(verb, argv[1], g);
    return cli_fail("hpo: unknown verb \"%s\" (see loom hpo --help)", verb);
}

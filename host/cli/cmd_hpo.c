/* cli/cmd_hpo.c - `loom hpo`: tuning tasks over the hypersearch routes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/routes.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "util/fs.h"
#include "util/tarball.h"

static const char hpo_usage[] =
    "usage: loom hpo submit TASK.json --model-dir DIR\n"
    "       loom hpo list | view NAME | best NAME | stop NAME | restart NAME | delete NAME\n"
    "\n"
    "A tuning task in WMLA's JSON (hpoName, modelSpec.args, algoDef, hyperParams or\n"
    "experiments): each experiment runs as an exec of the model directory with its\n"
    "hyperparameters in config.json; its objective is read from val_dict_list.json.\n";

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
    char *json = fs_read_file(task, TASK_MAX_BYTES, &len);
    if (!json)
        return cli_fail("hpo submit: cannot read %s (at most %u bytes)", task, TASK_MAX_BYTES);
    char *archive = NULL, err[512];
    size_t archive_len = 0;
    loom_error *e = tarball_pack_dir(model_dir, &archive, &archive_len);
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

static void print_values(const cJSON *x)
{
    const cJSON *h;
    int first = 1;
    cJSON_ArrayForEach(h, cJSON_GetObjectItemCaseSensitive(x, "hyperParams")) {
        printf("%s%s=%s", first ? "" : " ", cli_str(h, "name"), cli_str(h, "fixedVal"));
        first = 0;
    }
}

static int view(const char *name, int best_only, const cli_globals *g)
{
    char *esc = curl_escape_path(name), path[512];
    snprintf(path, sizeof path, LOOM_ROUTE_HPO "/%s", esc ? esc : name);
    free(esc);
    cJSON *j = cli_request(g, "GET", path, NULL);
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
        printf("%s %g: ", cli_str(j, "objectiveMetric"), cli_num(best, "metricVal"));
        print_values(best);
        printf(" (experiment %g, exec %s)\n", cli_num(best, "id"), cli_str(best, "appId"));
    } else {
        printf("%s: %s%s%s, %s %s, progress %s, %g s\n", cli_str(j, "hpoName"), cli_str(j, "state"),
               *cli_str(j, "message") ? " (" : "", *cli_str(j, "message") ? cli_str(j, "message") : "",
               cli_str(j, "objective"), cli_str(j, "objectiveMetric"), cli_str(j, "progress"),
               cli_num(j, "duration"));
        const cJSON *x;
        cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(j, "experiments")) {
            const cJSON *m = cJSON_GetObjectItemCaseSensitive(x, "metricVal");
            printf("  %3g %-9s ", cli_num(x, "id"), cli_str(x, "state"));
            if (cJSON_IsNumber(m))
                printf("%-10.6g ", m->valuedouble);
            else
                printf("%-10s ", "-");
            print_values(x);
            printf("  %s\n", cli_str(x, "appId"));
        }
    }
    cJSON_Delete(j);
    return 0;
}

static int act(const char *method, const char *name, const char *suffix, const cli_globals *g)
{
    char *esc = curl_escape_path(name), path[512];
    snprintf(path, sizeof path, LOOM_ROUTE_HPO "/%s%s", esc ? esc : name, suffix);
    free(esc);
    cJSON *j = cli_request(g, method, path, NULL);
    if (!j)
        return 1;
    cJSON_Delete(j);
    return 0;
}

int hpo_algorithm_add_dir(const char *dir, const char *name, const char *conda_home,
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
    if (argc != 2)
        return cli_fail("hpo %s: expected one task name (see loom hpo --help)", verb);
    if (!strcmp(verb, "view"))
        return view(argv[1], 0, g);
    if (!strcmp(verb, "best"))
        return view(argv[1], 1, g);
    if (!strcmp(verb, "stop"))
        return act("PUT", argv[1], "", g);
    if (!strcmp(verb, "restart"))
        return act("PUT", argv[1], LOOM_ROUTE_RESTART, g);
    if (!strcmp(verb, "delete"))
        return act("DELETE", argv[1], "", g);
    return cli_fail("hpo: unknown verb \"%s\" (see loom hpo --help)", verb);
}

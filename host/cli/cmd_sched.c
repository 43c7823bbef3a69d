/* cli/cmd_sched.c - `loom slots`, `loom plan add|list|show|update|remove`
 * and `loom plan member add|remove|list`: the scheduler's devices, resource
 * plans and who may submit to them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/routes.h"
#include "cli/commands.h"
#include "sched/sched.h"
#include "util/num_text.h"

static const char plan_usage[] =
    "usage: loom plan add PATH [--share W] [--min N] [--cap N] [--policy fair|priority]\n"
    "                          [--max-procs N] [--max-memory B] [--max-disk B]\n"
    "       loom plan update PATH [same options as add]\n"
    "       loom plan list [--json]\n"
    "       loom plan show PATH [--json]\n"
    "       loom plan remove PATH\n"
    "       loom plan member add PATH USER\n"
    "       loom plan member remove PATH USER\n"
    "       loom plan member list [PATH] [--json]\n"
    "\n"
    "Resource plans are a tree of consumers (\"/project/training\"): devices are\n"
    "divided between a plan's children by share weight, each child getting at\n"
    "least its minimum when it can use it and never more than its cap (0: no\n"
    "cap); inside a plan, its policy divides them between its jobs: fair\n"
    "(evenly) or priority (--msd-priority, higher first). Jobs name their plan\n"
    "with --consumer; without one a job runs in its user's plan \"/USER\",\n"
    "made with their first job. A user submits only to their own plan and to\n"
    "plans they are a member of (and the plans beneath those); administrators\n"
    "create plans and manage members, and submit anywhere.\n"
    "\n"
    "--max-procs, --max-memory and --max-disk bound what each exec in the plan\n"
    "(or beneath it) may take, over loom serve's --job-max-procs, --job-max-memory\n"
    "and --job-max-disk: the nearest plan up the tree that sets one wins; 0\n"
    "inherits. B takes a K, M or G suffix (powers of 1024).\n";

/* A plan's job limit as a cell: "-" when it inherits. */
static void limit_cell(const cJSON *p, int which, char *out, size_t len)
{
    double v = cli_num(p, sched_limit_infos[which].field);
    if (v <= 0)
        snprintf(out, len, "-");
    else if (!sched_limit_infos[which].bytes)
        snprintf(out, len, "%.0f", v);
    else { /* in the unit that shows it whole, as the flags take it */
        unsigned long long n = (unsigned long long)v;
        int u = 0;
        while (u < 3 && n % 1024 == 0) {
            n /= 1024;
            u++;
        }
        snprintf(out, len, "%llu%s", n, (const char *[]){"", "K", "M", "G"}[u]);
    }
}

static void print_plans(const cJSON *array)
{
    const char *headers[] = {"PATH", "SHARE", "MIN", "CAP", "POLICY", "MAX PROCS", "MAX MEMORY",
                             "MAX DISK"};
    cli_table *t = cli_table_new(8, headers);
    const cJSON *p;
    cJSON_ArrayForEach(p, array) {
        char share[32], min[16], cap[16], limit[SCHED_LIMITS][32];
        snprintf(share, sizeof share, "%g", cli_num(p, "share"));
        snprintf(min, sizeof min, "%d", (int)cli_num(p, "min"));
        snprintf(cap, sizeof cap, "%d", (int)cli_num(p, "cap"));
        for (int i = 0; i < SCHED_LIMITS; i++)
            limit_cell(p, i, limit[i], sizeof limit[i]);
        const char *cells[] = {cli_str(p, "path"), share, min, cap, cli_str(p, "policy"),
                               limit[SCHED_LIMIT_PROCS], limit[SCHED_LIMIT_MEMORY],
                               limit[SCHED_LIMIT_DISK]};
        cli_table_add(t, cells);
    }
    cli_table_print(t);
    cli_table_free(t);
}

int cmd_slots(int argc, char **argv, const cli_globals *g)
{
    if (cli_wants_help(argc, argv)) {
        puts("usage: loom slots [--json]\n\nEvery device the host hands out and what holds it: "
             "an exec,\na tuning experiment or a model's kernel instance, and its user (a "
             "holder you may\nnot see is \"another user's\").");
        return 0;
    }
    if (argc > 0)
        return cli_fail("slots: unexpected \"%s\"", argv[0]);
    cJSON *j = cli_request(g, "GET", LOOM_ROUTE_SLOTS, NULL);
    if (!j)
        return 1;
    if (g->json) {
        cli_print_json(j);
    } else {
        const char *headers[] = {"SLOT", "KIND", "INDEX", "NODE", "HOLDER", "OWNER", "USER"};
        cli_table *t = cli_table_new(7, headers);
        const cJSON *s;
        cJSON_ArrayForEach(s, j) {
            char slot[16], index[16];
            snprintf(slot, sizeof slot, "%d", (int)cli_num(s, "slot"));
            snprintf(index, sizeof index, "%d", (int)cli_num(s, "index"));
            const char *owner = cli_str(s, "owner"), *user = cli_str(s, "user");
            char holder[192];
            snprintf(holder, sizeof holder, "%s%s%s", cli_str(s, "holder"),
                     *cli_str(s, "hpoName") ? " " : "", cli_str(s, "hpoName"));
            const char *cells[] = {slot, cli_str(s, "kind"), index, cli_str(s, "node"),
                                   *holder ? holder : "-", *owner ? owner : "-",
                                   *user ? user : "-"};
            cli_table_add(t, cells);
        }
        cli_table_print(t);
        cli_table_free(t);
    }
    cJSON_Delete(j);
    return 0;
}

static void print_members(const cJSON *array)
{
    const cli_column cols[] = {{"PLAN", "plan", 0}, {"USER", "user", 0}, {"ADDED", "addTime", 1}};
    cli_print_listing(array, cols, 3);
}

/* `loom plan member VERB [PATH [USER]]`. */
static int plan_member(int argc, char **argv, const cli_globals *g)
{
    const char *verb = argc > 1 ? argv[1] : "";
    int list = !strcmp(verb, "list");
    if (!(list && argc <= 3) && !(!list && argc == 4 && (!strcmp(verb, "add") ||
                                                        !strcmp(verb, "remove"))))
        return cli_fail("usage: loom plan member add|remove PATH USER, or loom plan member list "
                        "[PATH]");
    const char *plan = argc > 2 ? argv[2] : NULL, *user = argc > 3 ? argv[3] : NULL;
    char *eplan = plan ? cli_curl_escape_path(plan) : NULL;
    char *euser = user ? cli_curl_escape_path(user) : NULL;
    char url[1024];
    snprintf(url, sizeof url, LOOM_ROUTE_PLAN_MEMBERS "%s%s%s%s",
             !strcmp(verb, "remove") ? "/" : "", !strcmp(verb, "remove") && euser ? euser : "",
             plan ? "?path=" : "", plan ? (eplan ? eplan : plan) : "");
    free(eplan);
    free(euser);
    char *text = NULL;
    if (!strcmp(verb, "add")) {
        cJSON *body = cJSON_CreateObject();
        cJSON_AddStringToObject(body, "user", user);
        text = cJSON_PrintUnformatted(body);
        cJSON_Delete(body);
    }
    cJSON *j = cli_request(g, list ? "GET" : !strcmp(verb, "add") ? "POST" : "DELETE", url, text);
    free(text);
    if (!j)
        return 1;
    if (g->json)
        cli_print_json(j);
    else if (list)
        print_members(j);
    else
        printf("%s %s %s plan %s\n", !strcmp(verb, "add") ? "added" : "removed", user,
               !strcmp(verb, "add") ? "to" : "from", plan);
    cJSON_Delete(j);
    return 0;
}

/* --max-procs N, --max-memory B, --max-disk B into the body's max_procs,
 * max_memory, max_disk (the host checks their bounds): 1 when `flag` was
 * one, 0 when it is another, -1 after saying what is wrong. */
static int plan_limit_flag(cJSON *body, const char *verb, const char *flag, const char *value)
{
    for (int i = 0; i < SCHED_LIMITS; i++) {
        const sched_limit_info *l = &sched_limit_infos[i];
        /* "max_memory" is "--max-memory" */
        char name[32];
        snprintf(name, sizeof name, "--%s", l->field);
        name[5] = '-';
        if (strcmp(flag, name) != 0)
            continue;
        uint64_t v;
        if (num_text_amount(value, l->bytes, 0, l->max, &v) != 0) {
            cli_fail("plan %s: %s: expected 0 (the host's %s) or a whole number%s up to %llu, "
                     "got \"%s\"",
                     verb, flag, l->serve_flag, l->bytes ? " of bytes (K, M or G allowed)" : "",
                     (unsigned long long)l->max, value);
            return -1;
        }
        cJSON_AddNumberToObject(body, l->field, (double)v);
        return 1;
    }
    return 0;
}

int cmd_plan(int argc, char **argv, const cli_globals *g)
{
    int usage_rc = cli_verb_usage(argc, argv, plan_usage);
    if (usage_rc >= 0)
        return usage_rc;
    const char *verb = argv[0];
    if (!strcmp(verb, "member"))
        return plan_member(argc, argv, g);
    if (!strcmp(verb, "list")) {
        cJSON *j = cli_request(g, "GET", LOOM_ROUTE_PLANS, NULL);
        if (!j)
            return 1;
        if (g->json)
            cli_print_json(j);
        else
            print_plans(j);
        cJSON_Delete(j);
        return 0;
    }
    if (argc < 2)
        return cli_fail("usage: loom plan %s PATH (see loom plan --help)", verb);
    const char *path = argv[1];
    char url[512];
    char *escaped = cli_curl_escape_path(path);
    snprintf(url, sizeof url, LOOM_ROUTE_PLAN "?path=%s", escaped ? escaped : path);
    free(escaped);
    if (!strcmp(verb, "show") || !strcmp(verb, "remove")) {
        int show = !strcmp(verb, "show");
        cJSON *j = cli_request(g, show ? "GET" : "DELETE", url, NULL);
        if (!j)
            return 1;
        if (g->json)
            cli_print_json(j);
        else if (show) {
            cJSON *a = cJSON_CreateArray();
            cJSON_AddItemReferenceToArray(a, j);
            print_plans(a);
            cJSON_Delete(a);
        } else
            printf("removed plan %s\n", path);
        cJSON_Delete(j);
        return 0;
    }
    if (!strcmp(verb, "add") || !strcmp(verb, "update")) {
        cJSON *body = cJSON_CreateObject();
        cJSON_AddStringToObject(body, "path", path);
        for (int i = 2; i < argc; i++) {
            const char *flag = argv[i];
            if (i + 1 >= argc) {
                cJSON_Delete(body);
                return cli_fail("plan %s: %s needs a value", verb, flag);
            }
            const char *value = argv[++i];
            char *end;
            double v = strtod(value, &end);
            int limit = plan_limit_flag(body, verb, flag, value);
            if (limit < 0) {
                cJSON_Delete(body);
                return 1;
            } else if (limit) {
                continue;
            } else if (!strcmp(flag, "--policy")) {
                cJSON_AddStringToObject(body, "policy", value);
            } else if ((!strcmp(flag, "--share") || !strcmp(flag, "--min") || !strcmp(flag, "--cap")) &&
                       !*end && end != value) {
                cJSON_AddNumberToObject(body, flag + 2, v);
            } else {
                cJSON_Delete(body);
                return cli_fail("plan %s: unexpected \"%s %s\" (see loom plan --help)", verb, flag, value);
            }
        }
        char *text = cJSON_PrintUnformatted(body);
        cJSON_Delete(body);
        int add = !strcmp(verb, "add");
        cJSON *j = cli_request(g, add ? "POST" : "PUT", add ? LOOM_ROUTE_PLANS : url, text);
        free(text);
        if (!j)
            return 1;
        if (g->json)
            cli_print_json(j);
        else {
            char limit[SCHED_LIMITS][32];
            for (int i = 0; i < SCHED_LIMITS; i++)
                limit_cell(j, i, limit[i], sizeof limit[i]);
            printf("%s plan %s: share %g, min %d, cap %d, %s, max procs %s, max memory %s, "
                   "max disk %s\n",
                   add ? "added" : "updated", cli_str(j, "path"), cli_num(j, "share"),
                   (int)cli_num(j, "min"), (int)cli_num(j, "cap"), cli_str(j, "policy"),
                   limit[SCHED_LIMIT_PROCS], limit[SCHED_LIMIT_MEMORY], limit[SCHED_LIMIT_DISK]);
        }
        cJSON_Delete(j);
        return 0;
    }
    fputs(plan_usage, stderr);
    return cli_fail("plan: unknown command \"%s\"", verb);
}

/* cli/cmd_auth.c - `loom login|logout`, `loom user add|list|remove|passwd`
 * and `loom apikey create|list|revoke`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/routes.h"
#include "cli/commands.h"

/* A password: --password-stdin reads a line, -p gives it, else a prompt. */
static int read_password(int from_stdin, const char *given, const char *prompt, char *out,
                         size_t len)
{
    if (given) {
        snprintf(out, len, "%s", given);
        return 0;
    }
    if (from_stdin || !isatty(STDIN_FILENO)) {
        if (!fgets(out, (int)len, stdin))
            return -1;
        out[strcspn(out, "\r\n")] = 0;
        return 0;
    }
    char *p = getpass(prompt);
    if (!p)
        return -1;
    snprintf(out, len, "%s", p);
    return 0;
}

int cmd_login(int argc, char **argv, const cli_globals *g)
{
    const char *user = NULL, *password = NULL, *apikey = NULL;
    int from_stdin = 0;
    for (int i = 0; i < argc; i++) {
        if ((!strcmp(argv[i], "-u") || !strcmp(argv[i], "--user")) && i + 1 < argc)
            user = argv[++i];
        else if ((!strcmp(argv[i], "-p") || !strcmp(argv[i], "--password")) && i + 1 < argc)
            password = argv[++i];
        else if ((!strcmp(argv[i], "-k") || !strcmp(argv[i], "--apikey")) && i + 1 < argc)
            apikey = argv[++i];
        else if (!strcmp(argv[i], "--password-stdin"))
            from_stdin = 1;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            puts("usage: loom login -u USER [--password-stdin | -p PASSWORD]\n"
                 "       loom login -k APIKEY\n\n"
                 "Logs on to the host and keeps the token in $LOOM_HOME/credentials (mode\n"
                 "0600); later commands send it. Without -p the password is asked for,\n"
                 "or read from standard input when that is not a terminal.");
            return 0;
        } else
            return cli_fail("login: unexpected \"%s\" (see loom login --help)", argv[i]);
    }
    if (!user && !apikey)
        return cli_fail("login: give -u USER or -k APIKEY");
    client c;
    cli_client(g, &c);
    client_reply r;
    char err[1024];
    loom_error *e;
    if (apikey) {
        cJSON *body = cJSON_CreateObject();
        cJSON_AddStringToObject(body, "apikey", apikey);
        char *text = cJSON_PrintUnformatted(body);
        cJSON_Delete(body);
        c.token[0] = 0;
        e = cli_client_call(&c, "POST", LOOM_ROUTE_LOGON, text, &r);
        free(text);
    } else {
        char pw[1100];
        if (read_password(from_stdin, password, "Password: ", pw, sizeof pw) != 0)
            return cli_fail("login: no password given");
        e = cli_client_logon_basic(&c, user, pw, &r);
    }
    if (e)
        return cli_fail_error(e);
    if (r.status != 200) {
        cli_client_reply_error(&r, err, sizeof err);
        cli_client_reply_free(&r);
        return cli_fail("login refused: %s", err);
    }
    cJSON *j = cli_client_reply_json(&r);
    cli_client_reply_free(&r);
    const char *token = cli_str(j, "token");
    loom_error *unsaved = *token ? cli_client_save_token(&c, token)
                                 : loom_err(LOOM_E_INTERNAL, "the host sent no token");
    if (unsaved) {
        cJSON_Delete(j);
        int rc = cli_fail("cannot save the token: %s", loom_err_message(unsaved));
        loom_err_free(unsaved);
        return rc;
    }
    printf("logged in to %s as %s (%s)\n", c.base, cli_str(j, "user"), cli_str(j, "role"));
    cJSON_Delete(j);
    return 0;
}

int cmd_logout(int argc, char **argv, const cli_globals *g)
{
    (void)argv;
    if (argc > 0)
        return cli_fail("logout takes no arguments");
    cJSON *j = cli_request(g, "POST", LOOM_ROUTE_LOGOUT, NULL);
    cJSON_Delete(j);
    client c;
    cli_client(g, &c);
    loom_error *e = cli_client_save_token(&c, NULL);
    if (e) {
        int rc = cli_fail("logged out of %s, but the token stays: %s", c.base, loom_err_message(e));
        loom_err_free(e);
        return rc;
    }
    printf("logged out of %s\n", c.base);
    return 0;
}

static const char user_usage[] =
    "usage: loom user add NAME [--role user|admin] [--password-stdin | -p PASSWORD]\n"
    "       loom user list [--json]\n"
    "       loom user remove NAME\n"
    "       loom user passwd NAME [--password-stdin | -p PASSWORD] [--keep-keys]\n"
    "       loom apikey create LABEL [--scope all|inference]\n"
    "       loom apikey list [--user NAME] [--json]\n"
    "       loom apikey revoke LABEL [--user NAME]\n"
    "\n"
    "Users are administrators (all jobs, plugins, plans, users) or users (their\n"
    "own jobs). add, list and remove are for administrators; a user may change\n"
    "their own password. A new password revokes the user's tokens and API keys\n"
    "(--keep-keys keeps the keys). An API key logs on like a password (loom\n"
    "login -k); administrators list and revoke anyone's with --user. A key of\n"
    "scope inference (and every token it issues) may only call POST\n"
    "/dlim/v1/inference/NAME on its user's models.\n";

int cmd_user(int argc, char **argv, const cli_globals *g)
{
    int usage_rc = cli_verb_usage(argc, argv, user_usage);
    if (usage_rc >= 0)
        return usage_rc;
    const char *verb = argv[0];
    if (!strcmp(verb, "list")) {
        cJSON *j = cli_request(g, "GET", LOOM_ROUTE_USERS, NULL);
        if (!j)
            return 1;
        if (g->json) {
            cli_print_json(j);
        } else {
            const cli_column cols[] = {
                {"NAME", "name", 0}, {"ROLE", "role", 0}, {"CREATED", "createTime", 1}};
            cli_print_listing(j, cols, 3);
        }
        cJSON_Delete(j);
        return 0;
    }
    if (argc < 2)
        return cli_fail("usage: loom user %s NAME (see loom user --help)", verb);
    const char *name = argv[1];
    const char *role = "user", *password = NULL;
    int from_stdin = 0, keep_keys = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--keep-keys") && !strcmp(verb, "passwd"))
            keep_keys = 1;
        else if (!strcmp(argv[i], "--role") && i + 1 < argc)
            role = argv[++i];
        else if ((!strcmp(argv[i], "-p") || !strcmp(argv[i], "--password")) && i + 1 < argc)
            password = argv[++i];
        else if (!strcmp(argv[i], "--password-stdin"))
            from_stdin = 1;
        else
            return cli_fail("user %s: unexpected \"%s\"", verb, argv[i]);
    }
    char path[256];
    if (!strcmp(verb, "remove")) {
        snprintf(path, sizeof path, LOOM_ROUTE_USERS "/%s", name);
        cJSON *j = cli_request(g, "DELETE", path, NULL);
        if (!j)
            return 1;
        cJSON_Delete(j);
        printf("removed user %s\n", name);
        return 0;
    }
    if (!strcmp(verb, "add") || !strcmp(verb, "passwd")) {
        char pw[1100];
        if (read_password(from_stdin, password, "New password: ", pw, sizeof pw) != 0)
            return cli_fail("user %s: no password given", verb);
        cJSON *body = cJSON_CreateObject();
        cJSON_AddStringToObject(body, "password", pw);
        int add = !strcmp(verb, "add");
        if (add) {
            cJSON_AddStringToObject(body, "name", name);
            cJSON_AddStringToObject(body, "role", role);
            snprintf(path, sizeof path, LOOM_ROUTE_USERS);
        } else {
            snprintf(path, sizeof path, LOOM_ROUTE_USERS "/%s" LOOM_ROUTE_PASSWORD, name);
            cJSON_AddBoolToObject(body, "keepKeys", keep_keys);
        }
        char *text = cJSON_PrintUnformatted(body);
        cJSON_Delete(body);
        cJSON *j = cli_request(g, add ? "POST" : "PUT", path, text);
        free(text);
        if (!j)
            return 1;
        cJSON_Delete(j);
        if (add)
            printf("added user %s (%s)\n", name, role);
        else
            printf("changed the password of %s; its tokens%s were revoked\n", name,
                   keep_keys ? "" : " and API keys");
        return 0;
    }
    fputs(user_usage, stderr);
    return cli_fail("user: unknown command \"%s\"", verb);
}

static void print_apikeys(const cJSON *keys)
{
    const cli_column cols[] = {{"USER", "user", 0}, {"LABEL", "label", 0}, {"SCOPE", "scope", 0},
                               {"CREATED", "createTime", 1}};
    cli_print_listing(keys, cols, 4);
}

/* `list` and `revoke`: the route, with ?user= when given. */
static int apikey_manage(int argc, char **argv, const cli_globals *g)
{
    int list = !strcmp(argv[0], "list");
    const char *label = NULL, *user = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--user") && i + 1 < argc)
            user = argv[++i];
        else if (!list && !label && argv[i][0] != '-')
            label = argv[i];
        else
            return cli_fail("apikey %s: unexpected \"%s\" (see loom user --help)", argv[0], argv[i]);
    }
    if (!list && !label)
        return cli_fail("usage: loom apikey revoke LABEL [--user NAME]");
    char *elabel = label ? cli_curl_escape_path(label) : NULL;
    char *euser = user ? cli_curl_escape_path(user) : NULL;
    char path[512];
    snprintf(path, sizeof path, LOOM_ROUTE_APIKEYS "%s%s%s%s", label ? "/" : "",
             label ? (elabel ? elabel : label) : "", user ? "?user=" : "",
             user ? (euser ? euser : user) : "");
    free(elabel);
    free(euser);
    cJSON *j = cli_request(g, list ? "GET" : "DELETE", path, NULL);
    if (!j)
        return 1;
    if (g->json)
        cli_print_json(j);
    else if (list)
        print_apikeys(j);
    else
        printf("revoked API key %s of %s\n", label, cli_str(j, "user"));
    cJSON_Delete(j);
    return 0;
}

int cmd_apikey(int argc, char **argv, const cli_globals *g)
{
    if (cli_wants_help(argc, argv)) {
        fputs(user_usage, stdout);
        return 0;
    }
    if (argc >= 1 && (!strcmp(argv[0], "list") || !strcmp(argv[0], "revoke")))
        return apikey_manage(argc, argv, g);
    int scoped = argc == 4 && !strcmp(argv[2], "--scope");
    if ((argc != 2 && !scoped) || strcmp(argv[0], "create") != 0)
        return cli_fail("usage: loom apikey create LABEL [--scope all|inference] | list [--user "
                        "NAME] | revoke LABEL [--user NAME]");
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "label", argv[1]);
    if (scoped)
        cJSON_AddStringToObject(body, "scope", argv[3]);
    char *text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    cJSON *j = cli_request(g, "POST", LOOM_ROUTE_APIKEYS, text);
    free(text);
    if (!j)
        return 1;
    if (g->json)
        cli_print_json(j);
    else
        printf("API key %s, scope %s (shown once): %s\n", cli_str(j, "label"),
               cli_str(j, "scope"), cli_str(j, "apikey"));
    cJSON_Delete(j);
    return 0;
}

/* cli/cmd_plugin.c - `loom plugin check|list` and the per-kind registration
 * commands (`loom framework add|list|show|remove`, likewise algorithm,
 * kernel, logger), as dlicmd registers frameworks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/routes.h"
#include "cli/commands.h"
#include "plugin/registry.h"
#include "util/fs.h"

#define PLUGIN_FILE_MAX ((size_t)256 << 20)

static const char plugin_usage[] =
    "usage: loom plugin check PATH [--json]\n"
    "       loom plugin list [--kind KIND] [--json]\n"
    "\n"
    "check  loads a .so or .lua plugin here, without a host and without\n"
    "       registering it, and prints its kind, name, version and ABI; the\n"
    "       exit status is non-zero, with the reason, when it is refused. It\n"
    "       loads it as the host does: in a confined child that is stopped\n"
    "       after 10 s.\n"
    "list   lists the host's registry: every plugin with kind, name, version,\n"
    "       ABI, format, origin and state (failed ones with the reason).\n"
    "KIND is framework, search (algorithm), kernel or logger.\n";

static void print_entries(cJSON *array)
{
    const char *headers[] = {"KIND", "NAME", "VERSION", "ABI", "FORMAT", "ORIGIN", "STATE"};
    cli_table *t = cli_table_new(7, headers);
    const cJSON *e;
    cJSON_ArrayForEach(e, array) {
        char state[600];
        if (strcmp(cli_str(e, "state"), "failed") == 0)
            snprintf(state, sizeof state, "failed: %s", cli_str(e, "error"));
        else
            snprintf(state, sizeof state, "%s", cli_str(e, "state"));
        const char *cells[] = {cli_str(e, "kind"), cli_str(e, "name"), cli_str(e, "version"),
                               cli_str(e, "abi"), cli_str(e, "format"), cli_str(e, "origin"),
                               state};
        cli_table_add(t, cells);
    }
    cli_table_print(t);
    cli_table_free(t);
}

static int plugin_check(const char *path, const cli_globals *g)
{
    registry *reg = registry_create();
    if (!reg)
        return cli_fail("out of memory");
    /* Loaded as the host loads a user's plugin: in a probe child, confined,
     * under the host's deadline (REGISTRY_PROBE_DEADLINE_MS) and limits, so
     * a script that never returns is refused here too. */
    char self[4096];
    if (!fs_self_exe(self, sizeof self)) {
        registry_destroy(reg);
        return cli_fail("plugin check: cannot find the loom binary to start its probe");
    }
    registry_set_probe(reg, self);
    loom_error *refused = registry_load(reg, path, "check", NULL, -1, 0);
    if (refused) {
        registry_destroy(reg);
        int rc = cli_fail("plugin refused: %s", loom_err_message(refused));
        loom_err_free(refused);
        return rc;
    }
    size_t n = registry_list(reg, -1, NULL, 0);
    registry_entry *entries = calloc(n, sizeof *entries);
    n = entries ? registry_list(reg, -1, entries, n) : 0;
    cJSON *array = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++) {
        registry_entry *e = &entries[i];
        cJSON *o = cJSON_CreateObject();
        char abi[32];
        snprintf(abi, sizeof abi, "%u.%u", e->abi_major, e->abi_minor);
        cJSON_AddStringToObject(o, "kind", loom_kind_name((loom_kind)e->kind));
        cJSON_AddStringToObject(o, "name", e->name);
        cJSON_AddStringToObject(o, "version", e->version);
        cJSON_AddStringToObject(o, "abi", abi);
        cJSON_AddStringToObject(o, "format", e->format);
        cJSON_AddStringToObject(o, "origin", path);
        cJSON_AddStringToObject(o, "state", "ok");
        cJSON_AddStringToObject(o, "description", e->description);
        cJSON_AddItemToArray(array, o);
    }
    if (g->json) {
        cli_print_json(array);
    } else {
        const cJSON *o;
        cJSON_ArrayForEach(o, array)
            printf("ok: %s %s %s (ABI %s, %s) - %s\n", cli_str(o, "kind"), cli_str(o, "name"),
                   cli_str(o, "version"), cli_str(o, "abi"), cli_str(o, "format"),
                   cli_str(o, "description"));
    }
    cJSON_Delete(array);
    free(entries);
    registry_destroy(reg);
    return 0;
}

static int list_kind(const cli_globals *g, const char *kind)
{
    char path[128];
    if (kind)
        snprintf(path, sizeof path, LOOM_ROUTE_PLUGINS "?kind=%s", kind);
    else
        snprintf(path, sizeof path, LOOM_ROUTE_PLUGINS);
    cJSON *j = cli_request(g, "GET", path, NULL);
    if (!j)
        return 1;
    if (g->json)
        cli_print_json(j);
    else
        print_entries(j);
    cJSON_Delete(j);
    return 0;
}

int cmd_plugin(int argc, char **argv, const cli_globals *g)
{
    int usage_rc = cli_verb_usage(argc, argv, plugin_usage);
    if (usage_rc >= 0)
        return usage_rc;
    if (strcmp(argv[0], "check") == 0) {
        if (argc != 2)
            return cli_fail("usage: loom plugin check PATH");
        return plugin_check(argv[1], g);
    }
    if (strcmp(argv[0], "list") == 0) {
        const char *kind = NULL;
        for (int i = 1; i < argc; i++) {
            if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc)
                kind = argv[++i];
            else
                return cli_fail("plugin list: unexpected \"%s\"", argv[i]);
        }
        return list_kind(g, kind);
    }
    fputs(plugin_usage, stderr);
    return cli_fail("plugin: unknown command \"%s\"", argv[0]);
}

static void kind_usage(const char *kind, FILE *out)
{
    fprintf(out,
            "usage: loom %s add PATH [--name NAME]\n"
            "       loom %s list [--json]\n"
            "       loom %s show NAME [--json]\n"
            "       loom %s remove NAME\n"
            "\n"
            "add     uploads a %s plugin (.so built against the loom SDK, or a .lua\n"
            "        script) to the host, which checks it, keeps a copy and loads it\n"
            "        again after a restart; --name registers it under another name.\n"
            "list    lists the registered %ss.\n"
            "show    shows one.\n"
            "remove  unregisters a user %s (built-in ones stay).\n",
            kind, kind, kind, kind, kind, kind, kind);
    if (!strcmp(kind, "algorithm"))
        fputs("\nloom algorithm add DIR [--name NAME] [--conda-home H [--conda-env E]]\n"
              "        installs a WMLA plugin optimizer: a folder with optimizer.py defining\n"
              "        class PluginOptimizer (see loom hpo --help); it runs in Python.\n"
              "        It is yours: other users do not see it until an administrator\n"
              "        runs: loom algorithm publish NAME (unpublish takes it back).\n",
              out);
}

int cmd_kind(const char *kind_word, int argc, char **argv, const cli_globals *g)
{
    if (argc < 1 || cli_wants_help(argc, argv)) {
        kind_usage(kind_word, argc < 1 ? stderr : stdout);
        return argc < 1 ? 2 : 0;
    }
    loom_kind kind;
    if (loom_kind_parse(kind_word, &kind) != 0)
        return cli_fail("unknown plugin kind \"%s\"", kind_word);
    const char *api_kind = loom_kind_name(kind);
    const char *verb = argv[0];
    if (strcmp(verb, "list") == 0) {
        if (argc != 1)
            return cli_fail("%s list: unexpected \"%s\"", kind_word, argv[1]);
        return list_kind(g, api_kind);
    }
    if (strcmp(verb, "show") == 0 || strcmp(verb, "remove") == 0) {
        if (argc != 2)
            return cli_fail("usage: loom %s %s NAME", kind_word, verb);
        char path[256];
        snprintf(path, sizeof path, LOOM_ROUTE_PLUGINS "/%s/%s", api_kind, argv[1]);
        int show = strcmp(verb, "show") == 0;
        cJSON *j = cli_request(g, show ? "GET" : "DELETE", path, NULL);
        if (!j)
            return 1;
        if (g->json) {
            cli_print_json(j);
        } else if (show) {
            const char *keys[] = {"kind", "name", "version", "description", "abi", "format",
                                  "origin", "path", "state", "style", "error"};
            cli_table *t = cli_table_new(2, NULL);
            for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
                if (*cli_str(j, keys[i]))
                    cli_table_add(t, (const char *const[]){keys[i], cli_str(j, keys[i])});
            cli_table_print(t);
            cli_table_free(t);
        } else {
            printf("removed %s %s\n", kind_word, argv[1]);
        }
        cJSON_Delete(j);
        return 0;
    }
    if (kind == LOOM_KIND_SEARCH && (!strcmp(verb, "publish") || !strcmp(verb, "unpublish"))) {
        if (argc != 2)
            return cli_fail("usage: loom algorithm %s NAME", verb);
        char path[256];
        snprintf(path, sizeof path, LOOM_ROUTE_HPO_ALGORITHMS "/%s/%s", argv[1], verb);
        cJSON *j = cli_request(g, "POST", path, NULL);
        if (!j)
            return 1;
        printf("%s plugin optimizer %s\n", verb[0] == 'p' ? "published" : "unpublished", argv[1]);
        cJSON_Delete(j);
        return 0;
    }
    if (strcmp(verb, "add") == 0) {
        const char *file = NULL, *name = NULL, *conda_home = NULL, *conda_env = NULL;
        for (int i = 1; i < argc; i++) {
            if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
                name = argv[++i];
            else if (kind == LOOM_KIND_SEARCH && !strcmp(argv[i], "--conda-home") && i + 1 < argc)
                conda_home = argv[++i];
            else if (kind == LOOM_KIND_SEARCH && !strcmp(argv[i], "--conda-env") && i + 1 < argc)
                conda_env = argv[++i];
            else if (!file && argv[i][0] != '-')
                file = argv[i];
            else
                return cli_fail("%s add: unexpected \"%s\"", kind_word, argv[i]);
        }
        if (!file)
            return cli_fail("usage: loom %s add PATH [--name NAME]", kind_word);
        /* A folder with optimizer.py: WMLA's plugin optimizer. */
        if (kind == LOOM_KIND_SEARCH && fs_is_dir(file))
            return cli_hpo_algorithm_add_dir(file, name, conda_home, conda_env, g);
        size_t len;
        char *data;
        loom_error *unread = fs_read_file(file, PLUGIN_FILE_MAX, &data, &len);
        if (unread)
            return cli_fail_error(loom_err_wrap(unread, "the plugin file"));
        const char *base = strrchr(file, '/');
        client_part parts[3] = {
            {.name = "kind", .value = api_kind},
            {.name = "file", .filename = base ? base + 1 : file, .data = data, .len = len},
            {.name = "name", .value = name},
        };
        cJSON *j = cli_upload(g, LOOM_ROUTE_PLUGINS, parts, name ? 3 : 2);
        free(data);
        if (!j)
            return 1;
        if (g->json)
            cli_print_json(j);
        else
            printf("registered %s %s %s (ABI %s, %s)\n", cli_str(j, "kind"), cli_str(j, "name"),
                   cli_str(j, "version"), cli_str(j, "abi"), cli_str(j, "format"));
        cJSON_Delete(j);
        return 0;
    }
    kind_usage(kind_word, stderr);
    return cli_fail("%s: unknown command \"%s\"", kind_word, verb);
}

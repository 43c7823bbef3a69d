/*
 * cli/cmd_plugin_host.c - `loom plugin-host` (hidden): the child process the
 * host runs a plugin in (plugin/plugin_proc.h). It limits itself, loads the
 * plugin and serves calls on fd 3 until the host closes it.
 *
 *   loom plugin-host --kind logger|framework --name NAME --path FILE
 *                    [--memory-bytes N] [--cpu-seconds N] [--deadline-ms N]
 *                    [--write DIR] [--read DIR]...
 *   loom plugin-host --describe --path FILE
 *
 * Once the plugin is loaded, the process confines itself (util/sandbox.h):
 * no new privileges, and under Landlock only the system's libraries, the
 * plugin's own file, (written) DIR and (read) the --read trees (a Python
 * optimizer's folder and interpreter) exist for it: the host's home,
 * database and credentials and other users' execs are out of its reach.
 *
 * --describe loads FILE already confined (it reads only the system's
 * libraries and FILE) and writes what it registered as JSON to fd 3
 * (plugin/registry_probe.h): how the host learns about a user's plugin
 * without loading it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "plugin/plugin_server.h"
#include "plugin/registry_probe.h"
#include "util/sandbox.h"
#include "util/supervise.h"

#define MAX_READ 4

typedef struct confinement {
    const char *plugin_path, *write_dir;
    const char *extra_read[MAX_READ + 1];
} confinement;

static int confine(void *ctx)
{
    const confinement *c = ctx;
    /* Not /etc: a root host's plugin keeps uid 0, and /etc holds files only
     * root may read. The plugin and its libraries are loaded already; of
     * the host's plugin store, only this plugin's file stays readable. */
    const char *read[10 + MAX_READ] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                                       "/libx32", "/opt", c->plugin_path, NULL};
    for (int i = 0; c->extra_read[i]; i++)
        read[9 + i] = c->extra_read[i];
    const char *write[] = {c->write_dir, NULL};
    sandbox_spec spec = {.read = read, .write = c->write_dir ? write : NULL};
    loom_error *e = sandbox_apply(&spec);
    if (e) {
        fprintf(stderr, "loom plugin-host: cannot confine itself: %s\n", loom_err_message(e));
        loom_err_free(e);
        return -1;
    }
    return 0;
}

static int describe(const char *path)
{
    confinement c = {.plugin_path = path};
    if (supervise_limit_self(0, 60) != 0 || confine(&c) != 0)
        return 1;
    char *text = registry_probe_describe(path);
    if (!text)
        return 1;
    FILE *out = fdopen(REGISTRY_PROBE_FD, "w");
    int rc = out && fputs(text, out) >= 0 && fclose(out) == 0 ? 0 : 1;
    free(text);
    return rc;
}

int cmd_plugin_host(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[0], "--describe") && !strcmp(argv[1], "--path"))
        return describe(argv[2]);
    const char *kind = NULL, *name = NULL, *path = NULL, *write_dir = NULL;
    confinement c = {0};
    int nread = 0;
    unsigned long long memory = 0;
    unsigned long cpu = 0;
    for (int i = 0; i + 1 < argc; i += 2) {
        const char *flag = argv[i], *value = argv[i + 1];
        if (!strcmp(flag, "--kind"))
            kind = value;
        else if (!strcmp(flag, "--name"))
            name = value;
        else if (!strcmp(flag, "--path"))
            path = value;
        else if (!strcmp(flag, "--write"))
            write_dir = value;
        else if (!strcmp(flag, "--read") && nread < MAX_READ)
            c.extra_read[nread++] = value;
        else if (!strcmp(flag, "--memory-bytes"))
            memory = strtoull(value, NULL, 10);
        else if (!strcmp(flag, "--cpu-seconds"))
            cpu = strtoul(value, NULL, 10);
        else if (strcmp(flag, "--deadline-ms") != 0) { /* enforced by the host */
            fprintf(stderr, "loom plugin-host: unknown flag %s\n", flag);
            return 2;
        }
    }
    if (!kind || !name || !path) {
        fputs("loom plugin-host: --kind, --name and --path are required (the host runs this)\n",
              stderr);
        return 2;
    }
    if (supervise_limit_self(memory, (unsigned)cpu) != 0) {
        perror("loom plugin-host: setrlimit");
        return 1;
    }
    c.plugin_path = path;
    c.write_dir = write_dir;
    return plugin_server_run(SUPERVISE_CHILD_FD, path, name, kind, confine, &c);
}

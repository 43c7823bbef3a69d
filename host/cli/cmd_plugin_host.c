/*
 * cli/cmd_plugin_host.c - `loom plugin-host` (hidden): the child process the
 * host runs a plugin in (plugin/plugin_proc.h). It limits itself, loads the
 * plugin and serves calls on fd 3 until the host closes it.
 *
 *   loom plugin-host --kind logger --name NAME --path FILE
 *                    [--memory-bytes N] [--cpu-seconds N] [--deadline-ms N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "plugin/plugin_server.h"
#include "util/supervise.h"

int cmd_plugin_host(int argc, char **argv)
{
    const char *kind = NULL, *name = NULL, *path = NULL;
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
    return plugin_server_run(SUPERVISE_CHILD_FD, path, name, kind);
}

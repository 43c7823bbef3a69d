/* cli/cli.c - the loom binary's entry: global flags, then one subcommand. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "sched/sim.h"
#include "train/worker.h"
#include <loom/abi.h>

static const char usage[] =
    "usage: loom [--host URL] [--home DIR] [--json] <command> [args]\n"
    "\n"
    "Getting started:\n"
    "  demo                 run a job end to end on an embedded host\n"
    "  serve                run the host daemon (REST API, state, plugins, jobs)\n"
    "\n"
    "Jobs (dlicmd's flags):\n"
    "  exec start|list|view|logs|stop|delete|wait\n"
    "  hpo submit|list|view|best|stop|restart|delete   tuning tasks (WMLA hypersearch)\n"
    "\n"
    "Plugins:\n"
    "  plugin check PATH    validate a .so or .lua plugin locally\n"
    "  plugin list          the host's plugin registry\n"
    "  framework add|list|show|remove    framework adapters\n"
    "  algorithm add|list|show|remove    search algorithms\n"
    "  kernel add|list|show|remove       inference kernels\n"
    "  logger add|list|show|remove       logger callbacks\n"
    "\n"
    "Users:\n"
    "  login -u USER | -k APIKEY   log on; the token is kept in $LOOM_HOME/credentials\n"
    "  logout\n"
    "  user add|list|remove|passwd  users (administrators), or your own password\n"
    "  apikey create|list|revoke  API keys for scripts\n"
    "\n"
    "Serving (dlim's commands):\n"
    "  model deploy|list|view|start|stop|viewprofile|updateprofile|undeploy|infer\n"
    "  model check DIR      validate a model directory locally\n"
    "\n"
    "Scheduling:\n"
    "  slots                every device and the exec holding it\n"
    "  plan add|list|show|update|remove  resource plans (shares, minimums, caps)\n"
    "  plan member add|remove|list   who may submit to a plan\n"
    "  sim TRACE.json       replay a job trace: elastic fair share, elastic priority\n"
    "                       and static FIFO side by side\n"
    "\n"
    "  version              print the version and plugin ABI\n"
    "\n"
    "Global flags (also --host=URL, --home=DIR): --host URL (or LOOM_HOST) names\n"
    "the host; --home DIR (or LOOM_HOME; default /var/lib/loom as root, else\n"
    "~/.loom) is the state directory,\n"
    "whose host file the CLI reads when no host is named; --json prints\n"
    "machine-readable output.\n"
    "'loom <command> --help' explains each command.\n";

int cli_main(int argc, char **argv)
{
    cli_globals g = {0};
    int n = cli_take_globals(argc - 1, argv + 1, &g);
    if (n < 0)
        return 2;
    char **args = argv + 1;
    if (n < 1) {
        fputs(usage, stderr);
        return 2;
    }
    const char *cmd = args[0];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(usage, stdout);
        return 0;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("loom %s (plugin ABI %d.%d)\n", LOOM_VERSION, LOOM_ABI_MAJOR, LOOM_ABI_MINOR);
        return 0;
    }
    if (strcmp(cmd, "login") == 0)
        return cmd_login(n - 1, args + 1, &g);
    if (strcmp(cmd, "logout") == 0)
        return cmd_logout(n - 1, args + 1, &g);
    if (strcmp(cmd, "user") == 0)
        return cmd_user(n - 1, args + 1, &g);
    if (strcmp(cmd, "apikey") == 0)
        return cmd_apikey(n - 1, args + 1, &g);
    if (strcmp(cmd, "slots") == 0)
        return cmd_slots(n - 1, args + 1, &g);
    if (strcmp(cmd, "plan") == 0)
        return cmd_plan(n - 1, args + 1, &g);
    if (strcmp(cmd, "sim") == 0)
        return sim_cli(n, args, g.json); /* argv[0] is "sim" */
    if (strcmp(cmd, "confine") == 0)
        return cmd_confine(n - 1, args + 1);
    if (strcmp(cmd, "plugin-host") == 0)
        return cmd_plugin_host(n - 1, args + 1);
    if (strcmp(cmd, "worker") == 0)
        return train_worker_main(n - 1, args + 1);
    if (strcmp(cmd, "serve") == 0)
        return cmd_serve(n - 1, args + 1, &g);
    if (strcmp(cmd, "demo") == 0)
        return cmd_demo(n - 1, args + 1, &g);
    if (strcmp(cmd, "plugin") == 0)
        return cmd_plugin(n - 1, args + 1, &g);
    if (strcmp(cmd, "model") == 0)
        return cmd_model(n - 1, args + 1, &g);
    if (strcmp(cmd, "kernel") == 0 && n > 1 && strcmp(args[1], "run") == 0)
        return cmd_kernel_run(n - 2, args + 2);
    if (strcmp(cmd, "exec") == 0)
        return cmd_exec(n - 1, args + 1, &g);
    if (strcmp(cmd, "hpo") == 0)
        return cmd_hpo(n - 1, args + 1, &g);
    if (strcmp(cmd, "framework") == 0 || strcmp(cmd, "algorithm") == 0 ||
        strcmp(cmd, "kernel") == 0 || strcmp(cmd, "logger") == 0)
        return cmd_kind(cmd, n - 1, args + 1, &g);
    fprintf(stderr, "loom: unknown command \"%s\" (see loom --help)\n", cmd);
    return 2;
}

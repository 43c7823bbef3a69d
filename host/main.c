/* main.c - the loom binary: every role (CLI, daemon, worker, kernel) is a
 * subcommand; see cli/cli.c. */
#include "cli/cli.h"

int main(int argc, char **argv) { return cli_main(argc, argv); }

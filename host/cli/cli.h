/* cli/cli.h - subcommand dispatch for the loom binary. */
#ifndef LOOM_CLI_CLI_H
#define LOOM_CLI_CLI_H

int cli_main(int argc, char **argv);

#endif

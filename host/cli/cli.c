/* cli/cli.c - subcommand dispatch. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

int cli_main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        printf("usage: loom <command> [options]\n");
        return argc < 2 ? 2 : 0;
    }
    fprintf(stderr, "loom: unknown command '%s' (see loom --help)\n", argv[1]);
    return 2;
}

/* A host file that reads a job's log by path: check-user-trees refuses it. */
#include <stdio.h>

int sneaky_read(const char *result_dir)
{
    char path[256];
    snprintf(path, sizeof path, "%s/log/worker-0/stderr", result_dir); /* fopen(not this) */
    FILE *f = fopen(path, "r");
    return f ? fclose(f) : -1;
}

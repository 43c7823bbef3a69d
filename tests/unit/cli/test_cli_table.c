/*
 * tests/unit/cli/test_cli_table.c - the CLI's one table printer: columns
 * padded to their widest cell however many there are, the last unpadded,
 * a key/value listing without a header row, and a listing printed straight
 * from a JSON array.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "cli/common.h"

static char out_path[] = "/tmp/loom-cli-table-XXXXXX";

/* Sends stdout to out_path until capture_end, which returns what was
 * printed (caller frees). */
static int capture_begin(void)
{
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    CHECK(freopen(out_path, "w", stdout) != NULL);
    return saved;
}

static char *capture_end(int saved)
{
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    FILE *in = fopen(out_path, "r");
    char *text = calloc(1, 65536);
    if (in && text)
        text[fread(text, 1, 65535, in)] = 0;
    if (in)
        fclose(in);
    return text;
}

static char *printed(cli_table *t)
{
    int saved = capture_begin();
    cli_table_print(t);
    return capture_end(saved);
}

int main(void)
{
    int fd = mkstemp(out_path);
    CHECK(fd >= 0);
    close(fd);

    /* A key/value listing: no header row, keys padded to the longest. */
    cli_table *kv = cli_table_new(2, NULL);
    cli_table_add(kv, (const char *const[]){"name", "random"});
    cli_table_add(kv, (const char *const[]){"description", "uniform"});
    char *text = printed(kv);
    CHECK_STR_EQ(text, "name         random\ndescription  uniform\n");
    free(text);
    cli_table_free(kv);

    /* Forty columns, the 36th widest below its header: padded like the
     * first ones. */
    enum { NCOLS = 40 };
    const char *head[NCOLS], *row[NCOLS];
    for (int c = 0; c < NCOLS; c++) {
        head[c] = "H";
        row[c] = c == 35 ? "wide-cell" : "x";
    }
    cli_table *t = cli_table_new(NCOLS, head);
    cli_table_add(t, row);
    text = printed(t);
    char want[1024] = "", line2[1024] = "";
    for (int c = 0; c < NCOLS; c++) {
        const char *pad = c == NCOLS - 1 ? "" : "  ";
        snprintf(want + strlen(want), sizeof want - strlen(want), "%-*s%s", c == 35 ? 9 : 1, "H", pad);
        snprintf(line2 + strlen(line2), sizeof line2 - strlen(line2), "%-*s%s", c == 35 ? 9 : 1,
                 row[c], pad);
    }
    snprintf(want + strlen(want), sizeof want - strlen(want), "\n%s\n", line2);
    CHECK_STR_EQ(text, want);
    free(text);
    cli_table_free(t);

    /* A listing straight from JSON: text columns and a time column (no
     * time: "-"). */
    cJSON *rows = cJSON_Parse("[{\"name\": \"alice\", \"role\": \"admin\"},"
                              " {\"name\": \"bo\", \"role\": \"user\", \"createTime\": 0}]");
    const cli_column cols[] = {{"NAME", "name", 0}, {"ROLE", "role", 0}, {"CREATED", "createTime", 1}};
    int saved = capture_begin();
    cli_print_listing(rows, cols, 3);
    text = capture_end(saved);
    CHECK_STR_EQ(text, "NAME   ROLE   CREATED\nalice  admin  -\nbo     user   -\n");
    free(text);
    cJSON_Delete(rows);
    unlink(out_path);
    return CHECK_DONE();
}

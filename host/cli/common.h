/* cli/common.h - what every CLI command shares: global flags, errors,
 * tables and calling the host. */
#ifndef LOOM_CLI_COMMON_H
#define LOOM_CLI_COMMON_H

#include <cjson/cJSON.h>

#include "cli/client.h"

typedef struct cli_globals {
    const char *host; /* --host */
    const char *home; /* --home */
    int json;         /* --json */
} cli_globals;

/* Removes --host URL, --home DIR (also --host=URL, --home=DIR) and --json
 * from argv (up to a "--"), storing them in g; returns the new argc or -1
 * (error printed: a flag without its value, or an unknown flag before the
 * command word). */
int cli_take_globals(int argc, char **argv, cli_globals *g);

/* A client for the host g names (--host, or the host of --home). */
void cli_client(const cli_globals *g, client *c);

/* Prints "loom: message" to stderr and returns 1. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* cli_fail with the error's message; frees it. */
int cli_fail_error(loom_error *e);

/* Calls the host and returns the reply's JSON (caller frees) when the
 * status is 2xx; otherwise prints the host's error and returns NULL. */
cJSON *cli_request(const cli_globals *g, const char *method, const char *path,
                   const char *json_body);
/* Like cli_request, for a text reply: returns the body (caller frees). */
char *cli_request_text(const cli_globals *g, const char *path, size_t *len);
cJSON *cli_upload(const cli_globals *g, const char *path, const client_part *parts,
                  int nparts);

/* Prints JSON on one line to stdout. */
void cli_print_json(const cJSON *j);

/* The CLI's one way to print rows: a plain text table, columns sized to
 * their widest cell (the last one left unpadded). `headers` NULL: no
 * header row (a key/value listing). A cell that could not be copied (out
 * of memory) prints as "?"; a row that could not be stored as a line of
 * its own saying so, so nothing goes missing silently. */
typedef struct cli_table cli_table;
cli_table *cli_table_new(int ncols, const char *const *headers);
void cli_table_add(cli_table *t, const char *const *cells);
void cli_table_print(cli_table *t);
void cli_table_free(cli_table *t);

/* One column of a listing printed straight from a JSON array: `key` of each
 * object, as text, or as a time (cli_time) when `is_time`. */
typedef struct cli_column {
    const char *header;
    const char *key;
    int is_time;
} cli_column;
/* Prints one row per object of `array` through cli_table. */
void cli_print_listing(const cJSON *array, const cli_column *cols, int ncols);

/* A string field of a JSON object, or "" */
const char *cli_str(const cJSON *o, const char *key);
double cli_num(const cJSON *o, const char *key);
/* "2026-11-21 23:59:59" from unix milliseconds, "-" for 0. */
void cli_time(double ms, char *out, size_t outlen);

/* `text` escaped for a URL query value (caller frees), or NULL. */
char *cli_curl_escape_path(const char *text);

/* True when argv[i] is -h or --help. */
int cli_wants_help(int argc, char **argv);

/* For commands whose first word is a verb: prints `usage` and returns the
 * exit status when there is nothing to run (help asked: stdout, 0; no verb:
 * stderr, 2); -1 when the command should go on. */
int cli_verb_usage(int argc, char **argv, const char *usage);

#endif

/* cli/common.c - see common.h. */
#include "cli/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/curl_dl.h"

int cli_take_globals(int argc, char **argv, cli_globals *g)
{
    int out = 0, i = 0;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--json") == 0) {
            g->json = 1;
            continue;
        }
        /* --host URL, --host=URL, --home DIR, --home=DIR: told apart by name. */
        const char *arg = argv[i];
        const char **dst = !strncmp(arg, "--host", 6) ? &g->host
                           : !strncmp(arg, "--home", 6) ? &g->home : NULL;
        if (dst && (arg[6] == 0 || arg[6] == '=')) {
            const char *value = arg[6] == '=' ? arg + 7 : i + 1 < argc ? argv[++i] : "";
            if (!*value) {
                cli_fail("%.6s needs a value", arg);
                return -1;
            }
            *dst = value;
        } else if (out == 0 && arg[0] == '-' && strcmp(arg, "--help") && strcmp(arg, "-h") &&
                   strcmp(arg, "--version")) {
            /* Before the command word only global flags (or help and
             * version) can come; a misspelt one would be taken for the
             * command. */
            cli_fail("unknown global flag \"%s\" (global flags: --host URL, --home DIR, --json)",
                     arg);
            return -1;
        } else {
            argv[out++] = argv[i];
        }
    }
    for (; i < argc; i++)
        argv[out++] = argv[i];
    argv[out] = NULL;
    return out;
}

int cli_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("loom: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

int cli_fail_error(loom_error *e)
{
    cli_fail("%s", loom_err_message(e));
    loom_err_free(e);
    return 1;
}

static cJSON *finish(client_reply *r)
{
    if (r->status >= 200 && r->status < 300) {
        cJSON *j = cli_client_reply_json(r);
        if (!j)
            j = cJSON_CreateString(r->body ? r->body : "");
        cli_client_reply_free(r);
        return j;
    }
    char msg[1024];
    cli_client_reply_error(r, msg, sizeof msg);
    cli_fail("%s", msg);
    cli_client_reply_free(r);
    return NULL;
}

void cli_client(const cli_globals *g, client *c)
{
    if (!g->host && g->home) {
        /* The host of that home, when it wrote its address there. */
        char prev[4096];
        const char *env = getenv("LOOM_HOME");
        snprintf(prev, sizeof prev, "%s", env ? env : "");
        setenv("LOOM_HOME", g->home, 1);
        cli_client_init(c, NULL);
        if (env)
            setenv("LOOM_HOME", prev, 1);
        else
            unsetenv("LOOM_HOME");
        return;
    }
    cli_client_init(c, g->host);
}

cJSON *cli_request(const cli_globals *g, const char *method, const char *path,
                   const char *json_body)
{
    client c;
    cli_client(g, &c);
    client_reply r;
    loom_error *e = cli_client_call(&c, method, path, json_body, &r);
    if (e) {
        cli_fail_error(e);
        return NULL;
    }
    return finish(&r);
}

char *cli_request_text(const cli_globals *g, const char *path, size_t *len)
{
    client c;
    cli_client(g, &c);
    client_reply r;
    loom_error *e = cli_client_call(&c, "GET", path, NULL, &r);
    if (e) {
        cli_fail_error(e);
        return NULL;
    }
    if (r.status != 200) {
        char err[1024];
        cli_client_reply_error(&r, err, sizeof err);
        cli_client_reply_free(&r);
        cli_fail("%s", err);
        return NULL;
    }
    *len = r.len;
    return r.body;
}

cJSON *cli_upload(const cli_globals *g, const char *path, const client_part *parts, int nparts)
{
    client c;
    cli_client(g, &c);
    client_reply r;
    loom_error *e = cli_client_upload(&c, path, parts, nparts, &r);
    if (e) {
        cli_fail_error(e);
        return NULL;
    }
    return finish(&r);
}

void cli_print_json(const cJSON *j)
{
    /* One line: --json output is for scripts. */
    char *text = cJSON_PrintUnformatted(j);
    if (text) {
        puts(text);
        free(text);
    }
}

struct cli_table {
    int ncols, nrows, cap;
    int lost;     /* rows that found no room */
    char **cells; /* nrows x ncols; row 0 = headers when given */
};

cli_table *cli_table_new(int ncols, const char *const *headers)
{
    cli_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->ncols = ncols;
    if (headers)
        cli_table_add(t, headers);
    return t;
}

void cli_table_add(cli_table *t, const char *const *cells)
{
    if (!t)
        return;
    if (t->nrows == t->cap) {
        int cap = t->cap ? t->cap * 2 : 16;
        char **grown = realloc(t->cells, (size_t)cap * (size_t)t->ncols * sizeof *grown);
        if (!grown) {
            t->lost++;
            return;
        }
        t->cells = grown;
        t->cap = cap;
    }
    for (int c = 0; c < t->ncols; c++)
        t->cells[t->nrows * t->ncols + c] = strdup(cells[c] ? cells[c] : "");
    t->nrows++;
}

static const char *cell_at(const cli_table *t, int r, int c)
{
    const char *cell = t->cells[r * t->ncols + c];
    return cell ? cell : "?";
}

void cli_table_print(cli_table *t)
{
    if (!t)
        return;
    int *width = calloc((size_t)t->ncols + 1, sizeof *width);
    for (int r = 0; width && r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            int w = (int)strlen(cell_at(t, r, c));
            if (w > width[c])
                width[c] = w;
        }
    for (int r = 0; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            if (c == t->ncols - 1)
                printf("%s", cell_at(t, r, c));
            else
                printf("%-*s  ", width ? width[c] : 0, cell_at(t, r, c));
        }
        putchar('\n');
    }
    if (t->lost)
        printf("(%d more rows: out of memory)\n", t->lost);
    free(width);
}

void cli_table_free(cli_table *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

/* Columns a listing may have. */
#define CLI_LISTING_MAX_COLS 16

void cli_print_listing(const cJSON *array, const cli_column *cols, int ncols)
{
    if (ncols > CLI_LISTING_MAX_COLS) { /* a caller's constant table: a bug */
        cli_fail("a listing of %d columns, more than %d", ncols, CLI_LISTING_MAX_COLS);
        return;
    }
    const char *headers[CLI_LISTING_MAX_COLS], *cells[CLI_LISTING_MAX_COLS];
    char times[CLI_LISTING_MAX_COLS][32];
    for (int c = 0; c < ncols; c++)
        headers[c] = cols[c].header;
    cli_table *t = cli_table_new(ncols, headers);
    const cJSON *row;
    cJSON_ArrayForEach(row, array) {
        for (int c = 0; c < ncols; c++) {
            if (cols[c].is_time) {
                cli_time(cli_num(row, cols[c].key), times[c], sizeof times[c]);
                cells[c] = times[c];
            } else {
                cells[c] = cli_str(row, cols[c].key);
            }
        }
        cli_table_add(t, cells);
    }
    cli_table_print(t);
    cli_table_free(t);
}

const char *cli_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

double cli_num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

void cli_time(double ms, char *out, size_t outlen)
{
    if (ms <= 0) {
        snprintf(out, outlen, "-");
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(out, outlen, "%Y-%m-%d %H:%M:%S", &tm);
}

int cli_verb_usage(int argc, char **argv, const char *usage)
{
    if (argc >= 1 && !cli_wants_help(argc, argv))
        return -1;
    fputs(usage, argc < 1 ? stderr : stdout);
    return argc < 1 ? 2 : 0;
}

int cli_wants_help(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            return 0;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
    }
    return 0;
}

char *cli_curl_escape_path(const char *text)
{
    const curl_api *cu;
    loom_error *unloaded = cli_curl_lib(&cu);
    if (unloaded) {
        loom_err_free(unloaded); /* the request that follows says why */
        return NULL;
    }
    char *e = cu->curl_easy_escape(NULL, text, 0);
    char *out = e ? strdup(e) : NULL;
    cu->curl_free(e);
    return out;
}

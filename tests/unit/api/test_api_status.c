/*
 * tests/unit/api/test_api_status.c - the code-to-status table: every loom
 * error code has exactly one row, the rows are what README.md's REST
 * section tells users, and a reply built from an error carries the row's
 * status in both the HTTP status and the body.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/status.h"
#include "check.h"
#include "util/fs.h"

/* Codes are small numbers: the SDK's from 1, the host's from 64. */
#define CODE_SCAN_MAX 256

static int is_loom_code(int32_t code)
{
    return strcmp(loom_code_name(code), "unknown") != 0;
}

static void test_every_code_has_one_row(void)
{
    int codes = 0;
    for (int32_t code = LOOM_OK + 1; code < CODE_SCAN_MAX; code++) {
        if (!is_loom_code(code))
            continue;
        codes++;
        int rows = 0;
        for (size_t i = 0; i < api_status_table_len; i++)
            rows += api_status_table[i].code == code;
        CHECK_MSG(rows == 1, "code %d (%s) has %d rows", code, loom_code_name(code), rows);
    }
    CHECK((size_t)codes == api_status_table_len);
    for (size_t i = 0; i < api_status_table_len; i++) {
        CHECK_MSG(is_loom_code(api_status_table[i].code), "row %zu: code %d is not loom's", i,
                  api_status_table[i].code);
        int status = api_status_table[i].status;
        CHECK_MSG(status >= 400 && status <= 599, "row %zu: %d is not an error status", i, status);
        CHECK(api_http_status(api_status_table[i].code) == status);
    }
    /* A code loom lacks is the host's fault. */
    CHECK(api_http_status(CODE_SCAN_MAX + 1) == 500);
}

/* The status README.md gives for a code: its row "| `name` | NNN |". */
static int readme_status(const char *readme, const char *name)
{
    char cell[96];
    snprintf(cell, sizeof cell, "| `%s` | ", name);
    const char *row = strstr(readme, cell);
    return row ? atoi(row + strlen(cell)) : -1;
}

static void test_readme_says_the_same(void)
{
    char *readme = NULL;
    CHECK_OK(fs_read_file(LOOM_README, 1u << 22, &readme, NULL));
    CHECK(readme != NULL);
    if (!readme)
        return;
    for (size_t i = 0; i < api_status_table_len; i++) {
        const char *name = loom_code_name(api_status_table[i].code);
        int documented = readme_status(readme, name);
        CHECK_MSG(documented == api_status_table[i].status,
                  "README.md gives %d for `%s`; the table has %d", documented, name,
                  api_status_table[i].status);
    }
    free(readme);
}

static void test_reply_carries_the_status(void)
{
    for (size_t i = 0; i < api_status_table_len; i++) {
        http_response res = {0};
        api_reply_error(&res, loom_err(api_status_table[i].code, "thing %zu: refused", i));
        CHECK(res.status == api_status_table[i].status);
        cJSON *body = res.body ? cJSON_ParseWithLength(res.body, res.len) : NULL;
        const cJSON *status = cJSON_GetObjectItemCaseSensitive(body, "status");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(body, "code");
        const cJSON *error = cJSON_GetObjectItemCaseSensitive(body, "error");
        CHECK(cJSON_IsNumber(status) && status->valueint == api_status_table[i].status);
        CHECK(cJSON_IsString(code) &&
              !strcmp(code->valuestring, loom_code_name(api_status_table[i].code)));
        CHECK(cJSON_IsString(error) && strstr(error->valuestring, "refused"));
        cJSON_Delete(body);
        free(res.body);
    }
    /* The route's own refusals go through the same table. */
    http_response res = {0};
    api_error(&res, LOOM_E_TOO_LARGE, "body: over %d bytes", 10);
    CHECK(res.status == 413);
    CHECK(res.body && strstr(res.body, "body: over 10 bytes"));
    free(res.body);
}

int main(void)
{
    test_every_code_has_one_row();
    test_readme_says_the_same();
    test_reply_carries_the_status();
    return CHECK_DONE();
}

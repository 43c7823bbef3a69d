/* api/status.c - see status.h. */
#include "api/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const api_status_entry api_status_table[] = {
    {LOOM_E_INVALID, 400},
    {LOOM_E_UNAUTHENTICATED, 401},
    {LOOM_E_FORBIDDEN, 403},
    {LOOM_E_NOT_FOUND, 404},
    {LOOM_E_CONFLICT, 409},
    {LOOM_E_LIMIT, 409},
    {LOOM_E_TOO_LARGE, 413},
    {LOOM_E_RATE_LIMITED, 429},
    {LOOM_E_INTERNAL, 500},
    {LOOM_E_UNSUPPORTED, 501},
    {LOOM_E_UNAVAILABLE, 503},
    {LOOM_E_DEADLINE, 504},
};
const size_t api_status_table_len = sizeof api_status_table / sizeof *api_status_table;

int api_http_status(int32_t code)
{
    for (size_t i = 0; i < api_status_table_len; i++)
        if (api_status_table[i].code == code)
            return api_status_table[i].status;
    return 500;
}

void api_reply_error(http_response *res, loom_error *err)
{
    int32_t code = err ? loom_err_code(err) : LOOM_E_INTERNAL;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", err ? loom_err_message(err) : "failed without a reason");
    cJSON_AddNumberToObject(o, "status", api_http_status(code));
    cJSON_AddStringToObject(o, "code", loom_code_name(code));
    loom_err_free(err);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    http_reply_data(res, api_http_status(code), "application/json", text, text ? strlen(text) : 0);
}

void api_error(http_response *res, int32_t code, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    api_reply_error(res, loom_err(code, "%s", msg));
}

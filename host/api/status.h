/*
 * api/status.h - the one place a loom error code becomes an HTTP status.
 * Every route replies to a failure through api_reply_error (a loom_error
 * from a service) or api_error (a code and a message of the route's own),
 * so the status a client sees always comes from api_status_table.
 */
#ifndef LOOM_API_STATUS_H
#define LOOM_API_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "http/http.h"
#include "util/error.h"

typedef struct api_status_entry {
    int32_t code;   /* LOOM_E_* */
    int status;     /* the HTTP status a client sees */
} api_status_entry;

/* Every loom error code, once (README.md's REST section prints it). */
extern const api_status_entry api_status_table[];
extern const size_t api_status_table_len;

/* The HTTP status of a code: its row in the table, 500 for a code loom
 * lacks. */
int api_http_status(int32_t code);

/* Replies {"error": message, "status": N, "code": "not found"} with the
 * code's status and frees err. */
void api_reply_error(http_response *res, loom_error *err);
/* The same for an error the route finds itself. */
void api_error(http_response *res, int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif

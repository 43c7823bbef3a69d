/* util/error.c - see error.h. */
#include "util/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct loom_error {
    int32_t code;
    int errnum; /* the errno it was made from, or 0 */
    char *message;
};

/* Handed out when an error cannot be allocated; never freed. */
static struct loom_error out_of_memory = {LOOM_E_INTERNAL, ENOMEM,
                                             (char *)"out of memory"};

static loom_error *err_vmake(int32_t code, const char *fmt, va_list ap)
{
    loom_error *e = malloc(sizeof *e);
    if (!e)
        return &out_of_memory;
    e->code = code == LOOM_OK ? LOOM_E_INTERNAL : code;
    e->errnum = 0;
    if (vasprintf(&e->message, fmt, ap) < 0)
        e->message = NULL;
    return e;
}

loom_error *loom_err(int32_t code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    loom_error *e = err_vmake(code, fmt, ap);
    va_end(ap);
    return e;
}

loom_error *loom_err_sys(int32_t code, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    loom_error *e = err_vmake(code, fmt, ap);
    va_end(ap);
    if (e == &out_of_memory)
        return e;
    e->errnum = errnum;
    char *joined = NULL;
    if (e->message && asprintf(&joined, "%s: %s", e->message, strerror(errnum)) >= 0) {
        free(e->message);
        e->message = joined;
    }
    return e;
}

int loom_err_errno(const loom_error *err)
{
    return err ? err->errnum : 0;
}

int32_t loom_err_code(const loom_error *err)
{
    return err ? err->code : LOOM_OK;
}

const char *loom_err_message(const loom_error *err)
{
    if (!err)
        return "ok";
    return err->message ? err->message : "out of memory formatting an error";
}

void loom_err_free(loom_error *err)
{
    if (!err || err == &out_of_memory)
        return;
    free(err->message);
    free(err);
}

loom_error *loom_err_wrap(loom_error *err, const char *fmt, ...)
{
    if (!err || err == &out_of_memory)
        return err;
    char *prefix = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&prefix, fmt, ap);
    va_end(ap);
    char *joined = NULL;
    if (n >= 0 && asprintf(&joined, "%s: %s", prefix, loom_err_message(err)) >= 0) {
        free(err->message);
        err->message = joined;
    }
    free(n >= 0 ? prefix : NULL);
    return err;
}

loom_error *loom_err_recode(loom_error *err, int32_t code)
{
    if (err && err != &out_of_memory && code != LOOM_OK)
        err->code = code;
    return err;
}

const char *loom_code_name(int32_t code)
{
    switch (code) {
    case LOOM_OK: return "ok";
    case LOOM_E_INVALID: return "invalid argument";
    case LOOM_E_NOT_FOUND: return "not found";
    case LOOM_E_UNAVAILABLE: return "unavailable";
    case LOOM_E_UNSUPPORTED: return "unsupported";
    case LOOM_E_INTERNAL: return "internal";
    case LOOM_E_DEADLINE: return "deadline exceeded";
    case LOOM_E_LIMIT: return "limit reached";
    case LOOM_E_CONFLICT: return "conflict";
    case LOOM_E_FORBIDDEN: return "forbidden";
    case LOOM_E_UNAUTHENTICATED: return "unauthenticated";
    case LOOM_E_TOO_LARGE: return "too large";
    case LOOM_E_RATE_LIMITED: return "rate limited";
    default: return "unknown";
    }
}

int32_t loom_err_take(loom_error *err, char *buf, size_t len)
{
    int32_t code = loom_err_code(err);
    if (buf && len)
        snprintf(buf, len, "%s", err ? loom_err_message(err) : "");
    loom_err_free(err);
    return code;
}

/*
 * util/error.h - loom's one error type. Every fallible host function returns
 * `loom_error *` (NULL: success; otherwise the caller owns it and frees it
 * with loom_err_free). It is the same object the SDK hands plugins, so a
 * plugin's error travels up unchanged, and one allocator owns them all.
 *
 * Codes: the SDK's codes keep their numbers (a plugin's "not found" is the
 * host's "not found"); codes the host alone gives start at 64. Callers
 * decide by code, never by message text. Only api/ turns a code into an
 * HTTP status (api/status.c holds the one table).
 *
 * A failed system call keeps its errno inside the error (loom_err_sys), for
 * the callers that must tell ENOENT from EACCES; no host function reports
 * through a bare errno or a caller's text buffer. The one exception is
 * util/fs.h's fd_write_all/fd_read_all: primitives at write(2)'s level,
 * called inside loops that frame bytes on pipes and sockets, which answer
 * 0 or -1 with errno like the calls they wrap.
 */
#ifndef LOOM_UTIL_ERROR_H
#define LOOM_UTIL_ERROR_H

#include <loom/abi.h>
#include <stddef.h>
#include <stdint.h>

enum {
    LOOM_E_INVALID = LOOM_ERR_INVALID_ARGUMENT,     /* bad input, named in the message */
    LOOM_E_NOT_FOUND = LOOM_ERR_NOT_FOUND,          /* no such thing (or not the caller's) */
    LOOM_E_UNAVAILABLE = LOOM_ERR_UNAVAILABLE,      /* cannot now: try later */
    LOOM_E_UNSUPPORTED = LOOM_ERR_UNSUPPORTED,      /* never on this host or build */
    LOOM_E_INTERNAL = LOOM_ERR_INTERNAL,            /* the host's own fault (I/O, memory) */
    LOOM_E_DEADLINE = LOOM_ERR_DEADLINE_EXCEEDED,   /* a wait ran out */
    LOOM_E_LIMIT = LOOM_ERR_RESOURCE_EXHAUSTED,     /* a named limit was reached */
    LOOM_E_CONFLICT = LOOM_ERR_ALREADY_EXISTS,      /* exists already, or in the wrong state */
    LOOM_E_FORBIDDEN = 64,                          /* known caller, not allowed */
    LOOM_E_UNAUTHENTICATED = 65,                    /* no valid credentials */
    LOOM_E_TOO_LARGE = 66,                          /* a body or upload over its limit */
    LOOM_E_RATE_LIMITED = 67,                       /* too many attempts: wait */
};

/* A new error; the message is formatted now. Never returns NULL: when memory
 * runs out it returns a shared "out of memory" error that loom_err_free
 * ignores, so a failure is never mistaken for success. */
loom_error *loom_err(int32_t code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An error from a failed system call: the message gets ": strerror(errnum)"
 * appended and errnum is kept for loom_err_errno. Never returns NULL. */
loom_error *loom_err_sys(int32_t code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The errno an error was made from (loom_err_sys; ENOMEM for the shared
 * out-of-memory error); 0 for NULL and for errors not made from one. */
int loom_err_errno(const loom_error *err);
/* Code of an error; LOOM_OK for NULL. */
int32_t loom_err_code(const loom_error *err);
/* Message of an error; "ok" for NULL. Valid until the error is freed. */
const char *loom_err_message(const loom_error *err);
void loom_err_free(loom_error *err);
/* Prefixes the message with context ("plugin 'x': ..."); returns err (NULL
 * stays NULL). */
loom_error *loom_err_wrap(loom_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Replaces the code, keeping the message; returns err. */
loom_error *loom_err_recode(loom_error *err, int32_t code);
/* "invalid argument", "not found", ... ("unknown" for a code loom lacks). */
const char *loom_code_name(int32_t code);
/* Copies the message into buf (when given) and frees err; returns its code.
 * For the edges that still print or store text: logs, state messages. */
int32_t loom_err_take(loom_error *err, char *buf, size_t len);

#endif

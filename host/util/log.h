/*
 * util/log.h - the host's structured log: one line per event,
 * "time level source: message", to stderr or to a file set at start-up.
 */
#ifndef LOOM_UTIL_LOG_H
#define LOOM_UTIL_LOG_H

#include <stdarg.h>

enum { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

/* Sends the log to `path` (appending); NULL means stderr. Returns 0 or -1. */
int log_open(const char *path);
void log_close(void);
/* Lines below `level` are dropped (default LOG_INFO; LOOM_LOG_LEVEL=debug). */
void log_set_level(int level);
void log_msg(int level, const char *source, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void log_vmsg(int level, const char *source, const char *fmt, va_list ap);

#define log_debug(...) log_msg(LOG_DEBUG, "host", __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, "host", __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, "host", __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, "host", __VA_ARGS__)

#endif

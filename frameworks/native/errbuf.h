/*
 * errbuf.h - how the adapter's internals report failure: a loom_code plus a
 * message written into a caller-supplied buffer. Only the plugin glue
 * (native_plugin.c) turns that into a host-owned loom_error, so the model,
 * dataset and spec code stay testable without a host.
 */
#ifndef NATIVE_ERRBUF_H
#define NATIVE_ERRBUF_H

#include <stddef.h>

/* Room for any message the adapter writes. */
#define NATIVE_ERR_LEN 512

/* Formats the message into err (when err != NULL) and returns `code`. */
int native_err(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif

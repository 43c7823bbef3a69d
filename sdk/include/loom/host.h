/*
 * loom/host.h - the services the host passes to a plugin.
 *
 * The host fills one loom_host per loaded module and passes it to
 * loom_module.init; it stays valid until after loom_module.deinit returns.
 * The table only grows at its end: before touching a field added after ABI
 * 1.0, check it with LOOM_HOST_HAS(host, field).
 *
 * Every function here may be called from any thread, at any time between
 * init and the return of deinit (tag: [thread: any]).
 */
#ifndef LOOM_HOST_H
#define LOOM_HOST_H

#include <stdarg.h>
#include "abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum loom_log_level {
    LOOM_LOG_DEBUG = 0,
    LOOM_LOG_INFO = 1,
    LOOM_LOG_WARN = 2,
    LOOM_LOG_ERROR = 3
} loom_log_level;

typedef struct loom_host loom_host;

struct loom_host {
    uint32_t struct_size;
    uint16_t abi_major;
    uint16_t abi_minor;
    const char *host_version;
    /* Opaque to the plugin: tells the host which plugin is calling. */
    void *host_data;

    /* Structured log line attributed to the calling plugin. Plugins never
     * write to stdout. [thread: any] [owns: fmt and arguments borrowed for
     * the call] */
    void (*log)(const loom_host *host, int32_t level, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;

    /* Errors: the only way to make a loom_error. error_new copies `message`.
     * [thread: any] [owns: the returned error is the caller's until it hands
     * it to the host as a return value, or frees it with error_free] */
    loom_error *(*error_new)(int32_t code, const char *message);
    /* As error_new, with printf formatting. [thread: any] [owns: as
     * error_new] */
    loom_error *(*error_newf)(int32_t code, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 2, 3)))
#endif
        ;
    /* [thread: any] [owns: err borrowed] */
    int32_t (*error_code)(const loom_error *err);
    /* [thread: any] [owns: err borrowed; the text lives as long as err] */
    const char *(*error_message)(const loom_error *err);
    /* [thread: any] [owns: takes err; NULL is ignored] */
    void (*error_free)(loom_error *err);

    /* The host's allocator: memory the host frees (for example the JSON a
     * search plugin returns from save_state) must come from here.
     * [thread: any] [owns: the caller owns the block until it frees it or
     * hands it to the host] */
    void *(*alloc)(size_t size);
    /* [thread: any] [owns: as alloc; ptr must come from alloc/realloc] */
    void *(*realloc)(void *ptr, size_t size);
    /* [thread: any] [owns: takes ptr, which came from alloc/realloc] */
    void (*free)(void *ptr);

    /* Monotonic clock in nanoseconds. [thread: any] */
    uint64_t (*clock_ns)(void);

    /* Extensions by string id. Returns a table whose layout the id fixes, or
     * NULL when the host has none. This host defines no extension yet, so
     * every id answers NULL today; a plugin must treat NULL as "run
     * without". A changed interface will get a new "/N" id and old ids keep
     * working. [thread: any] [owns: the table is the host's, valid until
     * deinit returns] */
    const void *(*get_extension)(const loom_host *host, const char *id);
};

/* True when the host's table is large enough to contain `field`. */
#define LOOM_HOST_HAS(host, field)                                              \
    ((host) != NULL && (size_t)(host)->struct_size >=                           \
                           offsetof(loom_host, field) + sizeof((host)->field))

#ifdef __cplusplus
}
#endif
#endif

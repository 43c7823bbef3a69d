/*
 * loom/host.h - the services the host passes to a plugin.
 *
 * The host fills one loom_host per loaded module and passes it to
 * loom_module.init; it stays valid until after loom_module.deinit returns.
 * The table only grows at its end: before touching a field added after ABI
 * 1.0, check it with LOOM_HOST_HAS(host, field).
 *
 * Every function here may be called from any thread.
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
     * write to stdout. */
    void (*log)(const loom_host *host, int32_t level, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;

    /* Errors: the only way to make a loom_error. error_new copies `message`. */
    loom_error *(*error_new)(int32_t code, const char *message);
    loom_error *(*error_newf)(int32_t code, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 2, 3)))
#endif
        ;
    int32_t (*error_code)(const loom_error *err);
    const char *(*error_message)(const loom_error *err);
    void (*error_free)(loom_error *err);

    /* The host's allocator: memory the host frees (for example the JSON a
     * search plugin returns from save_state) must come from here. */
    void *(*alloc)(size_t size);
    void *(*realloc)(void *ptr, size_t size);
    void (*free)(void *ptr);

    /* Monotonic clock in nanoseconds. */
    uint64_t (*clock_ns)(void);

    /* Extensions by string id, e.g. "loom.gpu/1", "loom.comm/1". Returns a
     * table whose layout the id fixes, or NULL when the host has none. A
     * changed interface gets a new "/N" id; old ids keep working. */
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

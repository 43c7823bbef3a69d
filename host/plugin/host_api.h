/*
 * plugin/host_api.h - the host's side of the SDK: the loom_host table handed
 * to each plugin, and the loom_error objects every fallible SDK call returns.
 * Host code makes and reads errors with the same functions plugins reach
 * through the table, so one allocator owns them all.
 */
#ifndef LOOM_PLUGIN_HOST_API_H
#define LOOM_PLUGIN_HOST_API_H

#include <loom/loom.h>

/* A loom_host whose log lines are attributed to `plugin_name`. The table is
 * owned by the caller and freed with host_api_release. */
loom_host *host_api_create(const char *plugin_name);
void host_api_release(loom_host *host);

/* Makes `table` the answer to get_extension(id). `id` and `table` must
 * outlive every plugin; call before plugins load. Returns 0, or -1 when full. */
int host_api_register_extension(const char *id, const void *table);

loom_error *loom_err(int32_t code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int32_t loom_err_code(const loom_error *err);
const char *loom_err_message(const loom_error *err);
void loom_err_free(loom_error *err);
/* Prefixes an error's message with context ("plugin 'x': ..."); returns err. */
loom_error *loom_err_wrap(loom_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* "invalid argument", "not found", ... */
const char *loom_code_name(int32_t code);

#endif

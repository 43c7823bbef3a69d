/*
 * plugin/host_api.h - the host's side of the SDK: the loom_host table handed
 * to each plugin. Its error functions are util/error.h's, so one allocator
 * owns every loom_error, the host's and the plugins' alike.
 */
#ifndef LOOM_PLUGIN_HOST_API_H
#define LOOM_PLUGIN_HOST_API_H

#include <loom/loom.h>

#include "util/error.h"

/* A loom_host whose log lines are attributed to `plugin_name`. The table is
 * owned by the caller and freed with host_api_release. */
loom_host *host_api_create(const char *plugin_name);
void host_api_release(loom_host *host);

/* Makes `table` the answer to get_extension(id). `id` and `table` must
 * outlive every plugin; call before plugins load. Returns 0, or -1 when full. */
int host_api_register_extension(const char *id, const void *table);

#endif

/* plugin/host_api.c - see host_api.h. */
#include "plugin/host_api.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/log.h"

static loom_error *api_error_new(int32_t code, const char *message)
{
    return loom_err(code, "%s", message ? message : "(no message)");
}

static loom_error *api_error_newf(int32_t code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *message = NULL;
    int n = vasprintf(&message, fmt, ap);
    va_end(ap);
    loom_error *e = loom_err(code, "%s", n >= 0 ? message : "(message could not be formatted)");
    if (n >= 0)
        free(message);
    return e;
}

static void api_log(const loom_host *host, int32_t level, const char *fmt, ...)
{
    char source[96];
    snprintf(source, sizeof source, "plugin %s",
             host && host->host_data ? (const char *)host->host_data : "?");
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(level, source, fmt, ap);
    va_end(ap);
}

static void *api_alloc(size_t size) { return malloc(size ? size : 1); }
static void *api_realloc(void *p, size_t size) { return realloc(p, size ? size : 1); }
static void api_free(void *p) { free(p); }

static uint64_t api_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Extensions are registered by the subsystems that provide them at
 * start-up, before any plugin is loaded, so lookups need no lock. None is
 * registered yet: the trainer does the collectives and the device copies
 * itself, around the adapter's calls, so adapters need neither. */
#define MAX_EXTENSIONS 16
static struct {
    const char *id;
    const void *table;
} extensions[MAX_EXTENSIONS];
static int extension_count;

int host_api_register_extension(const char *id, const void *table)
{
    for (int i = 0; i < extension_count; i++)
        if (strcmp(extensions[i].id, id) == 0) {
            extensions[i].table = table;
            return 0;
        }
    if (extension_count == MAX_EXTENSIONS)
        return -1;
    extensions[extension_count].id = id;
    extensions[extension_count].table = table;
    extension_count++;
    return 0;
}

static const void *api_get_extension(const loom_host *host, const char *id)
{
    (void)host;
    if (!id)
        return NULL;
    for (int i = 0; i < extension_count; i++)
        if (strcmp(extensions[i].id, id) == 0)
            return extensions[i].table;
    return NULL;
}

loom_host *host_api_create(const char *plugin_name)
{
    loom_host *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->struct_size = sizeof *h;
    h->abi_major = LOOM_ABI_MAJOR;
    h->abi_minor = LOOM_ABI_MINOR;
    h->host_version = LOOM_VERSION;
    h->host_data = strdup(plugin_name ? plugin_name : "?");
    h->log = api_log;
    h->error_new = api_error_new;
    h->error_newf = api_error_newf;
    h->error_code = loom_err_code;
    h->error_message = loom_err_message;
    h->error_free = loom_err_free;
    h->alloc = api_alloc;
    h->realloc = api_realloc;
    h->free = api_free;
    h->clock_ns = api_clock_ns;
    h->get_extension = api_get_extension;
    return h;
}

void host_api_release(loom_host *host)
{
    if (!host)
        return;
    free(host->host_data);
    free(host);
}

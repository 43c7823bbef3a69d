/* tests/plugins/trust/crash_init.c - a plugin whose module init
 * dereferences NULL. The host learns what a user's plugin provides from a
 * probe child, so registering it fails with the crash named and the host
 * goes on. */
#include <loom/loom.h>
#include <stddef.h>

static loom_error *init(const loom_host *host)
{
    (void)host;
    volatile int *nowhere = NULL;
    *nowhere = 1;
    return NULL;
}

static const void *get_factory(const char *id)
{
    (void)id;
    return NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "crash_init",
    .version = "1.0.0",
    .description = "a plugin whose init crashes",
    .init = init,
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

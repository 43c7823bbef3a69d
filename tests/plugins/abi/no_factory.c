/* tests/plugins/abi/no_factory.c - a module that offers no factory of any
 * kind: the loader must say it registers nothing. */
#include <loom/loom.h>

static const void *get_factory(const char *factory_id)
{
    (void)factory_id;
    return NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "no_factory",
    .version = "0.1.0",
    .description = "Returns no factory for any id",
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

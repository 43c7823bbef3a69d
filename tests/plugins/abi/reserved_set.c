/* tests/plugins/abi/reserved_set.c - a logger whose factory sets its
 * reserved field: the loader must refuse it, naming the field, so a later
 * minor can give the field a meaning without misreading this plugin. */
#include "abi_test_logger.h"

static const loom_logger_factory reserved_logger = {
    .struct_size = sizeof(loom_logger_factory),
    .reserved = 1,
    .create = abi_test_create,
    .destroy = abi_test_destroy,
};

static const void *get_factory(const char *factory_id)
{
    (void)abi_test_get_factory;
    return factory_id && strcmp(factory_id, LOOM_LOGGER_FACTORY_ID) == 0 ? &reserved_logger : NULL;
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "reserved_set",
    .version = "0.1.0",
    .description = "A logger with a non-zero reserved field",
    .get_factory = get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

/* tests/plugins/abi/bad_name.c - an id with a space and a '!': the loader
 * must refuse the name. */
#include "abi_test_logger.h"

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "bad name!",
    .version = "0.1.0",
    .description = "Has an invalid id",
    .get_factory = abi_test_get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

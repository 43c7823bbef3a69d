/* tests/plugins/abi/abi_minor.c - needs a newer ABI minor than the host's:
 * the loader must refuse it and name abi_minor with both values. */
#include "abi_test_logger.h"

static const loom_module module = {
    .struct_size = sizeof(loom_module),
    .abi_major = LOOM_ABI_MAJOR,
    .abi_minor = LOOM_ABI_MINOR + 1,
    .abi_tag = LOOM_ABI_TAG_INIT,
    .id = "abi_minor",
    .version = "0.1.0",
    .description = "Claims the next ABI minor",
    .get_factory = abi_test_get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

/* tests/plugins/abi/abi_major.c - built for the next ABI major: the loader
 * must refuse it and name abi_major with both values. */
#include "abi_test_logger.h"

static const loom_module module = {
    .struct_size = sizeof(loom_module),
    .abi_major = LOOM_ABI_MAJOR + 1,
    .abi_minor = LOOM_ABI_MINOR,
    .abi_tag = LOOM_ABI_TAG_INIT,
    .id = "abi_major",
    .version = "0.1.0",
    .description = "Claims the next ABI major",
    .get_factory = abi_test_get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

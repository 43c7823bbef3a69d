/* tests/plugins/abi/small_struct.c - a descriptor that says it ends before
 * get_factory: the loader must refuse it by struct_size. */
#include "abi_test_logger.h"

static const loom_module module = {
    .struct_size = offsetof(loom_module, get_factory),
    .abi_major = LOOM_ABI_MAJOR,
    .abi_minor = LOOM_ABI_MINOR,
    .abi_tag = LOOM_ABI_TAG_INIT,
    .id = "small_struct",
    .version = "0.1.0",
    .description = "struct_size smaller than loom_module",
    .get_factory = abi_test_get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

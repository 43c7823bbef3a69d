/* tests/plugins/abi/abi_tag.c - claims to be built for 32-bit pointers
 * ("loom4..."): the loader must refuse it by the tag, not crash on it. */
#include "abi_test_logger.h"

static const loom_module module = {
    .struct_size = sizeof(loom_module),
    .abi_major = LOOM_ABI_MAJOR,
    .abi_minor = LOOM_ABI_MINOR,
    .abi_tag = {'l', 'o', 'o', 'm', '4', LOOM_ABI_BYTE_ORDER,
                (char)('0' + sizeof(long)), 0},
    .id = "abi_tag",
    .version = "0.1.0",
    .description = "Has the ABI tag of a 32-bit build",
    .get_factory = abi_test_get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

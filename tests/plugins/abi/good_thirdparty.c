/* tests/plugins/abi/good_thirdparty.c - a valid third-party logger: the
 * control case the loader must accept. */
#include "abi_test_logger.h"

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "good_thirdparty",
    .version = "0.1.0",
    .description = "A valid logger that does nothing",
    .get_factory = abi_test_get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

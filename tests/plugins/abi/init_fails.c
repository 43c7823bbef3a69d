/* tests/plugins/abi/init_fails.c - init returns an error: the loader must
 * report its message and unload the module without using it. */
#include "abi_test_logger.h"

static loom_error *init(const loom_host *host)
{
    return host->error_new(LOOM_ERR_UNAVAILABLE,
                           "init refused: this test plugin never starts");
}

static const loom_module module = {
    LOOM_MODULE_HEADER,
    .id = "init_fails",
    .version = "0.1.0",
    .description = "Its init always fails",
    .init = init,
    .get_factory = abi_test_get_factory,
};

LOOM_EXPORT const loom_module *loom_module_entry(void)
{
    return &module;
}

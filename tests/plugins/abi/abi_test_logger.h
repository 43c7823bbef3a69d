/*
 * tests/plugins/abi/abi_test_logger.h - a do-nothing logger factory the ABI
 * test plugins share, so each of them is valid except for the one defect it
 * exists to show.
 */
#ifndef LOOM_ABI_TEST_LOGGER_H
#define LOOM_ABI_TEST_LOGGER_H

#include <loom/loom.h>
#include <string.h>

struct loom_logger_instance {
    int unused;
};

static loom_logger_instance abi_test_instance;

static loom_error *abi_test_create(const loom_logger_factory *self,
                                   const loom_logger_config *config,
                                   loom_logger_instance **out)
{
    (void)self;
    (void)config;
    *out = &abi_test_instance;
    return NULL;
}

static void abi_test_destroy(loom_logger_instance *inst)
{
    (void)inst;
}

static const loom_logger_factory abi_test_logger = {
    .struct_size = sizeof(loom_logger_factory),
    .create = abi_test_create,
    .destroy = abi_test_destroy,
};

static const void *abi_test_get_factory(const char *factory_id)
{
    if (factory_id && strcmp(factory_id, LOOM_LOGGER_FACTORY_ID) == 0)
        return &abi_test_logger;
    return NULL;
}

#endif

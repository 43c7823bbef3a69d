/*
 * algorithms/common/search_plugin.h - the module boilerplate every built-in
 * search plugin shares: keep the host table from init, offer one factory
 * under "loom.search/2", export loom_module_entry.
 */
#ifndef LOOM_SEARCH_PLUGIN_H
#define LOOM_SEARCH_PLUGIN_H

#include <string.h>

#include <loom/loom.h>

#define SEARCH_PLUGIN_MODULE(host_var, factory_var, id_, version_, description_) \
    static loom_error *plugin_init(const loom_host *host)                        \
    {                                                                            \
        host_var = host;                                                         \
        return NULL;                                                             \
    }                                                                            \
    static void plugin_deinit(void)                                              \
    {                                                                            \
        host_var = NULL;                                                         \
    }                                                                            \
    static const void *plugin_get_factory(const char *factory_id)                \
    {                                                                            \
        if (factory_id && strcmp(factory_id, LOOM_SEARCH_FACTORY_ID) == 0)       \
            return &factory_var;                                                 \
        return NULL;                                                             \
    }                                                                            \
    static const loom_module plugin_module = {                                   \
        LOOM_MODULE_HEADER,                                                      \
        .id = id_,                                                               \
        .version = version_,                                                     \
        .description = description_,                                             \
        .init = plugin_init,                                                     \
        .deinit = plugin_deinit,                                                 \
        .get_factory = plugin_get_factory,                                       \
    };                                                                           \
    LOOM_EXPORT const loom_module *loom_module_entry(void)                       \
    {                                                                            \
        return &plugin_module;                                                   \
    }

#endif

/*
 * tests/unit/builtins/builtin_plugin.h - opens a built plugin the way the
 * host does (dlopen, loom_module_entry, init with a host table) so the tests
 * drive the real .so through its vtable.
 */
#ifndef LOOM_TEST_BUILTIN_PLUGIN_H
#define LOOM_TEST_BUILTIN_PLUGIN_H

#include <dlfcn.h>
#include <stdio.h>

#include "plugin/host_api.h"

typedef struct test_plugin {
    void *handle;
    const loom_module *module;
    loom_host *host;
} test_plugin;

/* Returns the factory for `factory_id`, or NULL (after printing why). */
static inline const void *test_plugin_open(test_plugin *tp, const char *path,
                                    const char *factory_id)
{
    tp->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!tp->handle) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return NULL;
    }
    loom_module_entry_fn entry =
        (loom_module_entry_fn)dlsym(tp->handle, LOOM_MODULE_ENTRY_SYMBOL);
    if (!entry) {
        fprintf(stderr, "%s: no %s\n", path, LOOM_MODULE_ENTRY_SYMBOL);
        return NULL;
    }
    tp->module = entry();
    tp->host = host_api_create(tp->module->id);
    if (tp->module->init) {
        loom_error *err = tp->module->init(tp->host);
        if (err) {
            fprintf(stderr, "%s: init: %s\n", path, loom_err_message(err));
            loom_err_free(err);
            return NULL;
        }
    }
    return tp->module->get_factory(factory_id);
}

static inline void test_plugin_close(test_plugin *tp)
{
    if (tp->module && tp->module->deinit)
        tp->module->deinit();
    if (tp->handle)
        dlclose(tp->handle);
    host_api_release(tp->host);
}

#endif

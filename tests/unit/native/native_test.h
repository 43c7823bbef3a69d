/*
 * native_test.h - loads native.so through the SDK entry point, the way the
 * host does, and drives its trainer factory in the tests.
 */
#ifndef NATIVE_TEST_H
#define NATIVE_TEST_H

#include <dlfcn.h>
#include <loom/loom.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "native_fixtures.h"
#include "plugin/host_api.h"

/* ---- the plugin ---------------------------------------------------------- */

typedef struct plugin_handle {
    void *dl;
    loom_host *host;
    const loom_module *module;
    const loom_framework_factory *factory;
} plugin_handle;

/* Loads native.so the way the host does and returns its framework factory. */
static inline int plugin_open(plugin_handle *p)
{
    memset(p, 0, sizeof *p);
    p->dl = dlopen(NATIVE_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!p->dl) {
        fprintf(stderr, "dlopen %s: %s\n", NATIVE_PLUGIN_PATH, dlerror());
        return -1;
    }
    loom_module_entry_fn entry =
        (loom_module_entry_fn)dlsym(p->dl, LOOM_MODULE_ENTRY_SYMBOL);
    if (!entry)
        return -1;
    p->module = entry();
    p->host = host_api_create("native");
    if (p->module->init) {
        loom_error *e = p->module->init(p->host);
        if (e) {
            fprintf(stderr, "init: %s\n", loom_err_message(e));
            loom_err_free(e);
            return -1;
        }
    }
    p->factory = p->module->get_factory(LOOM_FRAMEWORK_FACTORY_ID);
    return p->factory ? 0 : -1;
}

static inline void plugin_close(plugin_handle *p)
{
    if (p->module && p->module->deinit)
        p->module->deinit();
    if (p->host)
        host_api_release(p->host);
    if (p->dl)
        dlclose(p->dl);
}

static inline loom_trainer_config trainer_config(const char *spec_json,
                                                 const char *code_dir,
                                                 const char *data_dir)
{
    loom_trainer_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.struct_size = sizeof cfg;
    cfg.seed = 7;
    cfg.device.struct_size = sizeof cfg.device;
    cfg.device.kind = LOOM_DEVICE_CPU;
    cfg.spec_json = spec_json;
    cfg.code_dir = code_dir;
    cfg.data_dir = data_dir;
    return cfg;
}

/* Creates an instance; on failure returns NULL and copies the message. */
static inline loom_framework_instance *
create_instance(const plugin_handle *p, const char *spec_json, const char *code_dir,
                const char *data_dir, char *msg, size_t msglen, int32_t *code)
{
    loom_trainer_config cfg = trainer_config(spec_json, code_dir, data_dir);
    loom_framework_instance *inst = NULL;
    loom_error *e = p->factory->create(p->factory, &cfg, &inst);
    if (msg && msglen)
        msg[0] = 0;
    if (code)
        *code = 0;
    if (e) {
        if (msg && msglen)
            snprintf(msg, msglen, "%s", loom_err_message(e));
        if (code)
            *code = loom_err_code(e);
        loom_err_free(e);
        return NULL;
    }
    return inst;
}

/* Frees an error and says whether there was one (printing it). */
static inline int failed(loom_error *e)
{
    if (!e)
        return 0;
    fprintf(stderr, "error: %s\n", loom_err_message(e));
    loom_err_free(e);
    return 1;
}

/* Text for CHECK_CONTAINS: an error's message, a buffer as a pointer. */
static inline const char *err_text(const loom_error *e)
{
    return e ? loom_err_message(e) : "(no error)";
}

static inline const char *str(const char *s) { return s; }

static inline double metric(const loom_metrics *m, const char *name)
{
    for (uint32_t i = 0; i < m->count; i++)
        if (strcmp(m->items[i].name, name) == 0)
            return m->items[i].value;
    return -1.0;
}

#endif

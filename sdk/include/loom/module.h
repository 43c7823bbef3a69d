/*
 * loom/module.h - the one function a plugin exports, and what it returns.
 *
 *     LOOM_EXPORT const loom_module *loom_module_entry(void);
 *
 * It is a function, not a data symbol, because dlsym is only promised for
 * functions. It must not allocate or have side effects: the host may call it
 * only to read the descriptor (`loom plugin check`) and then dlclose the
 * library. Build with `-Wl,--no-undefined` and a version script exporting
 * only loom_module_entry (the SDK's CMake helper does both).
 *
 * The host checks the descriptor; the plugin never checks the host: same
 * abi_major, abi_minor <= the host's, abi_tag equal byte for byte, and
 * struct_size at least the size of ABI 1.0's loom_module.
 */
#ifndef LOOM_MODULE_H
#define LOOM_MODULE_H

#include "abi.h"
#include "host.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Factory ids: get_factory(id) returns the kind's factory table or NULL.
 * Factory-level calls (create, plan_launch, load_model) receive the factory
 * itself as `self`, so one implementation can serve several factories (the
 * host's Lua bridge does). Instance calls receive the instance. */
#define LOOM_FRAMEWORK_FACTORY_ID "loom.framework/1"
#define LOOM_SEARCH_FACTORY_ID "loom.search/2"
#define LOOM_KERNEL_FACTORY_ID "loom.kernel/1"
#define LOOM_LOGGER_FACTORY_ID "loom.logger/1"

typedef struct loom_module {
    uint32_t struct_size;
    uint16_t abi_major;
    uint16_t abi_minor;
    char abi_tag[LOOM_ABI_TAG_SIZE];

    /* The plugin's name: letters, digits, '_', '-', '.'; 1 to 63 bytes.
     * It is the name users select it by (e.g. `--exec-start NAME`). */
    const char *id;
    const char *version;     /* free form, e.g. "1.2.0" */
    const char *description; /* one line */

    /* Called once after loading, before any factory is used. May be NULL.
     * [thread: the loading thread, nothing else of the plugin runs] [owns:
     * `host` stays valid until deinit returns; a returned error is the
     * host's, and the plugin is then unloaded without deinit] */
    loom_error *(*init)(const loom_host *host);
    /* Called once before unloading, after every instance is destroyed. May
     * be NULL. [thread: the unloading thread, nothing else of the plugin
     * runs] */
    void (*deinit)(void);
    /* Returns the factory table for `factory_id` (see the *_FACTORY_ID
     * constants) or NULL. May be called before init (`loom plugin check`).
     * [thread: any, no side effects] [owns: the table is static data of the
     * plugin, read by the host until unload] */
    const void *(*get_factory)(const char *factory_id);
} loom_module;

/* Fills the header fields of a loom_module with this SDK's values. */
#define LOOM_MODULE_HEADER                                                      \
    .struct_size = sizeof(loom_module), .abi_major = LOOM_ABI_MAJOR,            \
    .abi_minor = LOOM_ABI_MINOR, .abi_tag = LOOM_ABI_TAG_INIT

typedef const loom_module *(*loom_module_entry_fn)(void);
#define LOOM_MODULE_ENTRY_SYMBOL "loom_module_entry"

#ifdef __cplusplus
}
#endif
#endif

/* plugin/so_loader.c - see so_loader.h. Everything the host keeps from the
 * descriptor is copied, so a refused library can be dlclosed at once. */
#include "plugin/so_loader.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/host_api.h"

struct so_plugin {
    void *handle;
    const loom_module *module;
    loom_host *host;
    int initialized;
    unsigned abi_major, abi_minor;
    char name[LOOM_NAME_MAX];
    char version[64];
    char description[256];
    size_t count;
    loom_registration regs[LOOM_KIND_COUNT];
};

/* The smallest descriptor this host accepts: ABI 1.0's loom_module. */
#define MODULE_MIN_SIZE                                                        \
    (offsetof(loom_module, get_factory) + sizeof(((loom_module *)0)->get_factory))

static void copy_text(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

static loom_error *check_module(const char *path, const loom_module *m)
{
    static const char host_tag[LOOM_ABI_TAG_SIZE] = LOOM_ABI_TAG_INIT;
    if (m->struct_size < MODULE_MIN_SIZE)
        return loom_err(LOOM_E_INVALID, "%s: loom_module.struct_size is %u; at least %zu expected",
                        path, (unsigned)m->struct_size, (size_t)MODULE_MIN_SIZE);
    if (m->abi_major != LOOM_ABI_MAJOR)
        return loom_err(LOOM_E_UNSUPPORTED, "%s: abi_major is %u; this host supports ABI major %u",
                        path, (unsigned)m->abi_major, (unsigned)LOOM_ABI_MAJOR);
    if (m->abi_minor > LOOM_ABI_MINOR)
        return loom_err(LOOM_E_UNSUPPORTED,
                        "%s: abi_minor is %u, newer than this host's ABI %u.%u; "
                        "rebuild the plugin against this host's SDK or upgrade the host",
                        path, (unsigned)m->abi_minor, (unsigned)LOOM_ABI_MAJOR,
                        (unsigned)LOOM_ABI_MINOR);
    if (memcmp(m->abi_tag, host_tag, LOOM_ABI_TAG_SIZE) != 0) {
        char got[LOOM_ABI_TAG_SIZE + 1], want[LOOM_ABI_TAG_SIZE + 1];
        for (int i = 0; i < LOOM_ABI_TAG_SIZE; i++) {
            got[i] = (m->abi_tag[i] >= 32 && m->abi_tag[i] < 127) ? m->abi_tag[i] : '?';
            want[i] = (host_tag[i] >= 32 && host_tag[i] < 127) ? host_tag[i] : '?';
        }
        got[LOOM_ABI_TAG_SIZE] = want[LOOM_ABI_TAG_SIZE] = 0;
        return loom_err(LOOM_E_UNSUPPORTED,
                        "%s: abi_tag is \"%s\"; this host's is \"%s\" (built for another "
                        "platform: pointer size, byte order or long size differ)",
                        path, got, want);
    }
    if (!loom_name_valid(m->id))
        return loom_err(LOOM_E_INVALID,
                        "%s: module id \"%s\" is not a valid name (1-63 of A-Z a-z 0-9 _ - .)",
                        path, m->id ? m->id : "(null)");
    if (!m->get_factory)
        return loom_err(LOOM_E_INVALID, "%s: loom_module.get_factory is NULL", path);
    return NULL;
}

/* dlopens the file and finds its descriptor; *out_handle is the open
 * library on success. */
static loom_error *open_module(const char *path, void **out_handle, const loom_module **out)
{
    /* dlopen searches the library path for a name without a slash, but a
     * plugin is always a file the caller named: "x.so" means ./x.so. */
    char here[PATH_MAX];
    const char *file = path;
    if (!strchr(path, '/') && snprintf(here, sizeof here, "./%s", path) < (int)sizeof here)
        file = here;
    dlerror();
    void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        return loom_err(LOOM_E_INVALID, "%s: cannot load: %s", path, why ? why : "unknown error");
    }
    /* POSIX lets a function pointer round-trip through void *. */
    loom_module_entry_fn entry;
    *(void **)&entry = dlsym(handle, LOOM_MODULE_ENTRY_SYMBOL);
    const loom_module *m = entry ? entry() : NULL;
    loom_error *e = !entry ? loom_err(LOOM_E_INVALID, "%s: no %s function: not a loom plugin",
                                      path, LOOM_MODULE_ENTRY_SYMBOL)
                    : !m   ? loom_err(LOOM_E_INVALID, "%s: %s returned NULL", path,
                                      LOOM_MODULE_ENTRY_SYMBOL)
                           : check_module(path, m);
    if (e) {
        dlclose(handle);
        return e;
    }
    *out_handle = handle;
    *out = m;
    return NULL;
}

/* Validates and records every factory the module provides. */
static loom_error *collect_factories(so_plugin *p, const char *path)
{
    for (int k = 0; k < LOOM_KIND_COUNT; k++) {
        const void *factory = p->module->get_factory(loom_kind_factory_id((loom_kind)k));
        if (!factory)
            continue;
        loom_error *e = loom_factory_validate((loom_kind)k, factory);
        if (e)
            return loom_err_wrap(e, "%s: %s factory", path, loom_kind_name((loom_kind)k));
        p->regs[p->count++] = (loom_registration){
            .kind = (loom_kind)k,
            .name = p->name,
            .version = p->version,
            .description = p->description,
            .factory = factory,
        };
    }
    /* loom.search/2 replaced loom.search/1 outright: say so rather than
     * "no factory" to the author of a search built with the 1.0 SDK. */
    if (p->count == 0 && p->module->get_factory("loom.search/1"))
        return loom_err(LOOM_E_UNSUPPORTED,
                        "%s: offers only a loom.search/1 factory, which this host no longer "
                        "loads: rebuild it against the SDK's %s (a typed search space)",
                        path, LOOM_SEARCH_FACTORY_ID);
    if (p->count == 0)
        return loom_err(LOOM_E_INVALID,
                        "%s: provides no factory (get_factory returned NULL for %s, %s, %s and %s)",
                        path, LOOM_FRAMEWORK_FACTORY_ID, LOOM_SEARCH_FACTORY_ID,
                        LOOM_KERNEL_FACTORY_ID, LOOM_LOGGER_FACTORY_ID);
    return NULL;
}

loom_error *so_plugin_open(const char *path, int call_init, so_plugin **out)
{
    void *handle;
    const loom_module *m;
    loom_error *e = open_module(path, &handle, &m);
    if (e)
        return e;
    so_plugin *p = calloc(1, sizeof *p);
    if (!p) {
        dlclose(handle);
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory", path);
    }
    p->handle = handle;
    p->module = m;
    p->abi_major = m->abi_major;
    p->abi_minor = m->abi_minor;
    copy_text(p->name, sizeof p->name, m->id);
    copy_text(p->version, sizeof p->version, m->version);
    copy_text(p->description, sizeof p->description, m->description);

    if (call_init && m->init) {
        p->host = host_api_create(p->name);
        e = p->host ? m->init(p->host) : loom_err(LOOM_E_INTERNAL, "out of memory");
        if (e) {
            host_api_release(p->host);
            dlclose(handle);
            free(p);
            return loom_err_wrap(e, "%s: init failed", path);
        }
        p->initialized = 1;
    }
    e = collect_factories(p, path);
    if (e) {
        so_plugin_close(p);
        return e;
    }
    *out = p;
    return NULL;
}

size_t so_plugin_registrations(const so_plugin *p, const loom_registration **out)
{
    *out = p->regs;
    return p->count;
}

void so_plugin_abi(const so_plugin *p, unsigned *major, unsigned *minor)
{
    *major = p->abi_major;
    *minor = p->abi_minor;
}

void so_plugin_close(so_plugin *p)
{
    if (!p)
        return;
    if (p->initialized && p->module->deinit)
        p->module->deinit();
    host_api_release(p->host);
    dlclose(p->handle);
    free(p);
}

/*
 * tests/unit/builtins/test_abi_plugins.c - the test plugins in
 * tests/plugins/abi carry exactly the defect their names promise (and
 * good_thirdparty none), so the loader's tests fail for the right reason.
 */
#include <dlfcn.h>
#include <string.h>

#include "../../check.h"
#include "plugin/host_api.h"

static const loom_module *open_module(const char *name, void **handle)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.so", LOOM_TEST_PLUGIN_DIR, name);
    *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK_MSG(*handle != NULL, "dlopen %s: %s", path, dlerror());
    if (!*handle)
        return NULL;
    loom_module_entry_fn entry =
        (loom_module_entry_fn)dlsym(*handle, LOOM_MODULE_ENTRY_SYMBOL);
    return entry ? entry() : NULL;
}

/* Every field of a valid header except the one a plugin breaks. */
static int header_valid(const loom_module *m)
{
    static const char tag[LOOM_ABI_TAG_SIZE] = LOOM_ABI_TAG_INIT;
    return m->struct_size == sizeof(loom_module) && m->abi_major == LOOM_ABI_MAJOR &&
           m->abi_minor == LOOM_ABI_MINOR &&
           memcmp(m->abi_tag, tag, LOOM_ABI_TAG_SIZE) == 0;
}

int main(void)
{
    void *h;
    const loom_module *m;

    m = open_module("good_thirdparty", &h);
    CHECK(m && header_valid(m));
    if (m) {
        CHECK_STR_EQ(m->id, "good_thirdparty");
        const loom_logger_factory *f = m->get_factory(LOOM_LOGGER_FACTORY_ID);
        CHECK(f && f->create && f->destroy);
        CHECK(m->get_factory(LOOM_SEARCH_FACTORY_ID) == NULL);
    }
    if (h) dlclose(h);

    m = open_module("no_entry", &h);
    CHECK(m == NULL);
    CHECK(h && dlsym(h, "loom_not_a_module_entry") != NULL);
    if (h) dlclose(h);

    m = open_module("abi_major", &h);
    CHECK(m && m->abi_major == LOOM_ABI_MAJOR + 1 && m->abi_minor == LOOM_ABI_MINOR);
    if (h) dlclose(h);

    m = open_module("abi_minor", &h);
    CHECK(m && m->abi_major == LOOM_ABI_MAJOR && m->abi_minor == LOOM_ABI_MINOR + 1);
    if (h) dlclose(h);

    m = open_module("abi_tag", &h);
    CHECK(m && m->abi_tag[4] == '4' && memcmp(m->abi_tag, "loom", 4) == 0);
    CHECK(m && m->struct_size == sizeof(loom_module) && m->abi_major == LOOM_ABI_MAJOR);
    if (h) dlclose(h);

    m = open_module("small_struct", &h);
    CHECK(m && m->struct_size < sizeof(loom_module) && m->abi_major == LOOM_ABI_MAJOR);
    if (h) dlclose(h);

    m = open_module("missing_entry", &h);
    CHECK(m && header_valid(m));
    if (m) {
        const loom_search_factory *f = m->get_factory(LOOM_SEARCH_FACTORY_ID);
        CHECK(f && f->create && f->suggest && f->observe == NULL);
    }
    if (h) dlclose(h);

    m = open_module("no_factory", &h);
    CHECK(m && header_valid(m));
    if (m) {
        const char *ids[] = {LOOM_FRAMEWORK_FACTORY_ID, LOOM_SEARCH_FACTORY_ID,
                             LOOM_KERNEL_FACTORY_ID, LOOM_LOGGER_FACTORY_ID};
        for (int i = 0; i < 4; i++)
            CHECK(m->get_factory(ids[i]) == NULL);
    }
    if (h) dlclose(h);

    m = open_module("init_fails", &h);
    CHECK(m && header_valid(m) && m->init);
    if (m && m->init) {
        loom_host *host = host_api_create("init_fails");
        loom_error *err = m->init(host);
        CHECK(err != NULL);
        CHECK_CONTAINS(loom_err_message(err), "init refused: ");
        loom_err_free(err);
        host_api_release(host);
    }
    if (h) dlclose(h);

    m = open_module("bad_name", &h);
    CHECK(m && header_valid(m));
    CHECK(m && strcmp(m->id, "bad name!") == 0);
    if (h) dlclose(h);

    return CHECK_DONE();
}

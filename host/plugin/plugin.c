/* plugin/plugin.c - kinds, names and the required-entry check shared by
 * every loader. */
#include "plugin/plugin.h"

#include <stdio.h>
#include <string.h>

static const char *const kind_names[LOOM_KIND_COUNT] = {
    "framework", "search", "kernel", "logger"};
static const char *const kind_factory_ids[LOOM_KIND_COUNT] = {
    LOOM_FRAMEWORK_FACTORY_ID, LOOM_SEARCH_FACTORY_ID, LOOM_KERNEL_FACTORY_ID,
    LOOM_LOGGER_FACTORY_ID};

const char *loom_kind_name(loom_kind kind)
{
    return (unsigned)kind < LOOM_KIND_COUNT ? kind_names[kind] : "unknown";
}

const char *loom_kind_factory_id(loom_kind kind)
{
    return (unsigned)kind < LOOM_KIND_COUNT ? kind_factory_ids[kind] : "";
}

int loom_kind_parse(const char *text, loom_kind *out)
{
    if (!text)
        return -1;
    for (int k = 0; k < LOOM_KIND_COUNT; k++)
        if (strcmp(text, kind_names[k]) == 0) {
            *out = (loom_kind)k;
            return 0;
        }
    if (strcmp(text, "algorithm") == 0) {
        *out = LOOM_KIND_SEARCH;
        return 0;
    }
    return -1;
}

int loom_name_valid(const char *name)
{
    if (!name)
        return 0;
    size_t n = strlen(name);
    if (n == 0 || n >= LOOM_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return name[0] != '.';
}

/* A required entry is a function pointer that must lie inside the struct
 * the plugin declared (struct_size) and be non-NULL. */
#define REQUIRE(type, f, field)                                                \
    do {                                                                       \
        if (f->struct_size < offsetof(type, field) + sizeof(f->field) ||       \
            f->field == NULL) {                                                \
            return loom_err(LOOM_E_INVALID, "missing required entry '%s' in %s", \
                            #field, #type);                                    \
        }                                                                      \
    } while (0)

/* Reserved fields are for later minors: a plugin must leave them zero, so a
 * later host can give them a meaning without misreading old plugins. */
#define RESERVED_ZERO(type, f)                                                 \
    do {                                                                       \
        if (f->struct_size >= offsetof(type, reserved) + sizeof(f->reserved) &&  \
            f->reserved != 0) {                                                \
            return loom_err(LOOM_E_INVALID, "%s.reserved is %u; it must be zero", \
                            #type, (unsigned)f->reserved);                     \
        }                                                                      \
    } while (0)

loom_error *loom_factory_validate(loom_kind kind, const void *factory)
{
    if (!factory)
        return loom_err(LOOM_E_INVALID, "no factory table");
    switch (kind) {
    case LOOM_KIND_FRAMEWORK: {
        const loom_framework_factory *f = factory;
        if (f->struct_size < offsetof(loom_framework_factory, plan_launch))
            return loom_err(LOOM_E_INVALID, "loom_framework_factory.struct_size %u is too small",
                            (unsigned)f->struct_size);
        if (f->style == LOOM_FRAMEWORK_LAUNCH) {
            REQUIRE(loom_framework_factory, f, plan_launch);
        } else if (f->style == LOOM_FRAMEWORK_TRAINER) {
            REQUIRE(loom_framework_factory, f, create);
            REQUIRE(loom_framework_factory, f, destroy);
            REQUIRE(loom_framework_factory, f, dataset_size);
            REQUIRE(loom_framework_factory, f, buffers);
            REQUIRE(loom_framework_factory, f, zero_grad);
            REQUIRE(loom_framework_factory, f, forward_backward);
            REQUIRE(loom_framework_factory, f, apply);
            REQUIRE(loom_framework_factory, f, evaluate);
            /* ABI 1.5: the count/get pair stands in for the array form. */
            if (!LOOM_OPTIONAL_ENTRY(f, loom_framework_factory, state_tensor_count) ||
                !LOOM_OPTIONAL_ENTRY(f, loom_framework_factory, state_tensor_get))
                REQUIRE(loom_framework_factory, f, state_tensors);
        } else {
            return loom_err(LOOM_E_INVALID,
                            "loom_framework_factory.style is %d; expected 1 (launch) or 2 (trainer)",
                            (int)f->style);
        }
        return NULL;
    }
    case LOOM_KIND_SEARCH: {
        const loom_search_factory *f = factory;
        RESERVED_ZERO(loom_search_factory, f);
        REQUIRE(loom_search_factory, f, create);
        REQUIRE(loom_search_factory, f, destroy);
        REQUIRE(loom_search_factory, f, suggest);
        REQUIRE(loom_search_factory, f, observe);
        return NULL;
    }
    case LOOM_KIND_KERNEL: {
        const loom_kernel_factory *f = factory;
        RESERVED_ZERO(loom_kernel_factory, f);
        REQUIRE(loom_kernel_factory, f, load_model);
        REQUIRE(loom_kernel_factory, f, unload_model);
        REQUIRE(loom_kernel_factory, f, create_instance);
        REQUIRE(loom_kernel_factory, f, destroy_instance);
        REQUIRE(loom_kernel_factory, f, execute);
        return NULL;
    }
    case LOOM_KIND_LOGGER: {
        const loom_logger_factory *f = factory;
        RESERVED_ZERO(loom_logger_factory, f);
        REQUIRE(loom_logger_factory, f, create);
        REQUIRE(loom_logger_factory, f, destroy);
        return NULL;
    }
    default:
        return loom_err(LOOM_E_INVALID, "unknown plugin kind %d", (int)kind);
    }
}

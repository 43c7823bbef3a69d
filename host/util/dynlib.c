/* util/dynlib.c - see dynlib.h. */
#include "util/dynlib.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first library found; `opened` gets its path, `tried` every path. */
static void *open_first(const dynlib_spec *spec, char *opened, size_t opened_len, char *tried,
                        size_t len)
{
    size_t used = 0;
    tried[0] = '\0';
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1 && !spec->fallback_dir)
            break;
        for (const char *const *so = spec->sonames; *so; so++) {
            char path[4096];
            if (pass == 0)
                snprintf(path, sizeof path, "%s", *so);
            else
                snprintf(path, sizeof path, "%s/%s", spec->fallback_dir, *so);
            void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (lib) {
                snprintf(opened, opened_len, "%s", path);
                return lib;
            }
            const char *why = dlerror();
            /* "not found" is the common case; name only other failures */
            if (why && strstr(why, "No such file"))
                why = NULL;
            if (used < len) {
                int n = snprintf(tried + used, len - used, "%s%s%s%s", used ? ", " : "", path,
                                 why ? ": " : "", why ? why : "");
                used += n > 0 ? (size_t)n : 0;
            }
        }
    }
    return NULL;
}

loom_error *dynlib_open(const dynlib_spec *spec, void *table, void **handle)
{
    char tried[1024], opened[4096];
    *handle = NULL;
    void *lib = open_first(spec, opened, sizeof opened, tried, sizeof tried);
    if (!lib)
        return loom_err(LOOM_E_UNAVAILABLE, "%s cannot be loaded (tried %s)", spec->what,
                        tried);
    /* Resolve into a scratch copy first: all or nothing. */
    void **found = calloc(spec->count ? spec->count : 1, sizeof *found);
    if (!found) {
        dlclose(lib);
        return loom_err(LOOM_E_INTERNAL, "%s: out of memory", spec->what);
    }
    for (size_t i = 0; i < spec->count; i++) {
        found[i] = dlsym(lib, spec->symbols[i].name);
        if (!found[i]) {
            loom_error *e = loom_err(LOOM_E_UNAVAILABLE,
                                     "%s (%s) lacks %s: a version older than loom needs?",
                                     spec->what, opened, spec->symbols[i].name);
            free(found);
            dlclose(lib);
            return e;
        }
    }
    /* POSIX promises a function pointer survives a round trip through
     * void *; copy the bytes rather than cast across the two. */
    for (size_t i = 0; i < spec->count; i++)
        memcpy((char *)table + spec->symbols[i].offset, &found[i], sizeof found[i]);
    free(found);
    *handle = lib;
    return NULL;
}

loom_error *dynlib_open_once(dynlib_once *once, const dynlib_spec *spec, void *table)
{
    pthread_mutex_lock(&once->lock);
    if (!once->tried) {
        once->failure = dynlib_open(spec, table, &once->handle);
        once->tried = 1;
    }
    loom_error *copy = once->failure ? loom_err(loom_err_code(once->failure), "%s",
                                                loom_err_message(once->failure))
                                     : NULL;
    pthread_mutex_unlock(&once->lock);
    return copy;
}

/*
 * plugin/ffi_function.c - one plain C function opened from a shared library
 * in an allowed directory, with its libffi call interface prepared once.
 */
#include "plugin/ffi_call.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <ffi.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct ffi_function {
    void *handle;
    void (*entry)(void);
    ffi_signature sig;
    ffi_cif cif;
    ffi_type *arg_types[FFI_SIG_MAX_ARGS];
};

static ffi_type *const ffi_types_by_sig[FFI_SIG_TYPE_COUNT] = {
#define FFI_SIG_TYPE_ENUM(name, ctype, ffitype) [FFI_SIG_##name] = &ffitype,
#include "plugin/ffi_types.def"
#undef FFI_SIG_TYPE_ENUM
};

/* True when `path` is `dir` itself or below it: a plain string prefix would
 * let "/models/a" admit "/models/ab/lib.so". Both are realpath results. */
static int path_is_inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return path[0] == '/';
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

loom_error *ffi_library_resolve(const char *library, const char *const *allowed_dirs, char **out)
{
    if (!library || !library[0])
        return loom_err(LOOM_E_INVALID, "library: no path given");
    if (!allowed_dirs || !allowed_dirs[0])
        return loom_err(LOOM_E_FORBIDDEN,
                        "library '%s': no allowed library directories are configured", library);
    /* realpath resolves a relative name against the working directory, never
     * the loader's search path, and the resolved path (which has a '/') is
     * what dlopen gets. */
    char *resolved = realpath(library, NULL);
    if (!resolved)
        return loom_err(errno == ENOENT ? LOOM_E_NOT_FOUND : LOOM_E_INVALID, "library '%s': %s",
                        library, strerror(errno));
    struct stat st;
    if (stat(resolved, &st) != 0 || !S_ISREG(st.st_mode)) {
        loom_error *e = loom_err(LOOM_E_INVALID, "library '%s' (resolved to '%s'): not a regular file",
                                 library, resolved);
        free(resolved);
        return e;
    }
    char dirs[512];
    size_t used = 0;
    dirs[0] = '\0';
    for (const char *const *d = allowed_dirs; *d; d++) {
        char *dir = realpath(*d, NULL);
        if (dir && path_is_inside(resolved, dir)) {
            free(dir);
            *out = resolved;
            return NULL;
        }
        free(dir);
        if (used < sizeof dirs)
            used += (size_t)snprintf(dirs + used, sizeof dirs - used, "%s'%s'",
                                     used ? ", " : "", *d);
    }
    loom_error *e = loom_err(LOOM_E_FORBIDDEN,
                             "library '%s' (resolved to '%s') is outside the allowed directories (%s)",
                             library, resolved, dirs);
    free(resolved);
    return e;
}

loom_error *ffi_function_open(const char *library, const char *symbol, const char *signature,
                              const char *const *allowed_dirs, ffi_function **out)
{
    ffi_signature sig;
    loom_error *e = ffi_sig_parse(signature, &sig);
    if (e)
        return e;
    if (!symbol || !symbol[0])
        return loom_err(LOOM_E_INVALID, "symbol: no name given");
    char *path = NULL;
    e = ffi_library_resolve(library, allowed_dirs, &path);
    if (e)
        return e;

    ffi_function *fn = calloc(1, sizeof *fn);
    if (!fn) {
        free(path);
        return loom_err(LOOM_E_INTERNAL, "out of memory");
    }
    fn->sig = sig;
    fn->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!fn->handle) {
        const char *why = dlerror();
        e = loom_err(LOOM_E_INVALID, "library '%s': cannot load: %s", path,
                     why ? why : "unknown error");
        goto fail;
    }
    dlerror();
    void *address = dlsym(fn->handle, symbol);
    const char *why = dlerror();
    if (why || !address) {
        e = loom_err(LOOM_E_NOT_FOUND, "symbol '%s' not found in library '%s'", symbol, path);
        goto fail;
    }
    /* dlsym returns an object pointer; copy its bits into a function pointer
     * rather than casting between the two, which ISO C leaves undefined. */
    memcpy(&fn->entry, &address, sizeof fn->entry);

    for (int i = 0; i < sig.nargs; i++)
        fn->arg_types[i] = sig.args[i].dir == FFI_SIG_VALUE
                               ? ffi_types_by_sig[sig.args[i].type]
                               : &ffi_type_pointer;
    ffi_status status = ffi_prep_cif(&fn->cif, FFI_DEFAULT_ABI, (unsigned)sig.nargs,
                                     ffi_types_by_sig[sig.ret], fn->arg_types);
    if (status != FFI_OK) {
        e = loom_err(LOOM_E_UNSUPPORTED,
                     "symbol '%s': libffi cannot prepare a call for signature '%s' (status %d)",
                     symbol, signature, (int)status);
        goto fail;
    }
    free(path);
    *out = fn;
    return NULL;

fail:
    free(path);
    ffi_function_close(fn);
    return e;
}

const ffi_signature *ffi_function_signature(const ffi_function *fn)
{
    return fn ? &fn->sig : NULL;
}

void ffi_function_call(ffi_function *fn, void **args, void *ret)
{
    /* libffi writes an integer return smaller than a register as a whole
     * ffi_arg, so the buffer must be at least that big; the value is then
     * narrowed to its declared type, which restores the sign. */
    union {
        ffi_arg word;
        float f32;
        double f64;
        uint64_t u64;
    } rv;
    memset(&rv, 0, sizeof rv);
    ffi_call(&fn->cif, fn->entry, &rv, args);

    int64_t wide;
    switch (fn->sig.ret) {
    case FFI_SIG_void: return;
    case FFI_SIG_i8: wide = (int8_t)rv.word; break;
    case FFI_SIG_u8: wide = (uint8_t)rv.word; break;
    case FFI_SIG_i16: wide = (int16_t)rv.word; break;
    case FFI_SIG_u16: wide = (uint16_t)rv.word; break;
    case FFI_SIG_i32: wide = (int32_t)rv.word; break;
    case FFI_SIG_u32: wide = (uint32_t)rv.word; break;
    case FFI_SIG_i64:
    case FFI_SIG_u64:
        if (ret)
            memcpy(ret, &rv.u64, sizeof rv.u64);
        return;
    case FFI_SIG_f32:
        if (ret)
            memcpy(ret, &rv.f32, sizeof rv.f32);
        return;
    case FFI_SIG_f64:
        if (ret)
            memcpy(ret, &rv.f64, sizeof rv.f64);
        return;
    default: return;
    }
    if (ret)
        memcpy(ret, &wide, sizeof wide);
}

void ffi_function_close(ffi_function *fn)
{
    if (!fn)
        return;
    if (fn->handle)
        dlclose(fn->handle);
    free(fn);
}

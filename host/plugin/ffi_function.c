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

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* True when `path` is `dir` itself or below it: a plain string prefix would
 * let "/models/a" admit "/models/ab/lib.so". Both are realpath results. */
static int path_is_inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return path[0] == '/';
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

char *ffi_library_resolve(const char *library, const char *const *allowed_dirs,
                          char *err, size_t errlen)
{
    if (!library || !library[0]) {
        set_err(err, errlen, "library: no path given");
        return NULL;
    }
    if (!allowed_dirs || !allowed_dirs[0]) {
        set_err(err, errlen, "library '%s': no allowed library directories are "
                             "configured", library);
        return NULL;
    }
    /* realpath resolves a relative name against the working directory, never
     * the loader's search path, and the resolved path (which has a '/') is
     * what dlopen gets. */
    char *resolved = realpath(library, NULL);
    if (!resolved) {
        set_err(err, errlen, "library '%s': %s", library, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (stat(resolved, &st) != 0 || !S_ISREG(st.st_mode)) {
        set_err(err, errlen, "library '%s' (resolved to '%s'): not a regular file",
                library, resolved);
        free(resolved);
        return NULL;
    }
    char dirs[512];
    size_t used = 0;
    dirs[0] = '\0';
    for (const char *const *d = allowed_dirs; *d; d++) {
        char *dir = realpath(*d, NULL);
        if (dir && path_is_inside(resolved, dir)) {
            free(dir);
            return resolved;
        }
        free(dir);
        if (used < sizeof dirs)
            used += (size_t)snprintf(dirs + used, sizeof dirs - used, "%s'%s'",
                                     used ? ", " : "", *d);
    }
    set_err(err, errlen,
            "library '%s' (resolved to '%s') is outside the allowed directories (%s)",
            library, resolved, dirs);
    free(resolved);
    return NULL;
}

ffi_function *ffi_function_open(const char *library, const char *symbol,
                                const char *signature,
                                const char *const *allowed_dirs, char *err,
                                size_t errlen)
{
    ffi_signature sig;
    if (ffi_sig_parse(signature, &sig, err, errlen) != 0)
        return NULL;
    if (!symbol || !symbol[0]) {
        set_err(err, errlen, "symbol: no name given");
        return NULL;
    }
    char *path = ffi_library_resolve(library, allowed_dirs, err, errlen);
    if (!path)
        return NULL;

    ffi_function *fn = calloc(1, sizeof *fn);
    if (!fn) {
        set_err(err, errlen, "out of memory");
        free(path);
        return NULL;
    }
    fn->sig = sig;
    fn->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!fn->handle) {
        const char *why = dlerror();
        set_err(err, errlen, "library '%s': cannot load: %s", path,
                why ? why : "unknown error");
        goto fail;
    }
    dlerror();
    void *address = dlsym(fn->handle, symbol);
    const char *why = dlerror();
    if (why || !address) {
        set_err(err, errlen, "symbol '%s' not found in library '%s'", symbol, path);
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
        set_err(err, errlen, "symbol '%s': libffi cannot prepare a call for "
                             "signature '%s' (status %d)",
                symbol, signature, (int)status);
        goto fail;
    }
    free(path);
    return fn;

fail:
    free(path);
    ffi_function_close(fn);
    return NULL;
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

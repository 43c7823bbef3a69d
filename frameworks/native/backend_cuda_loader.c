/*
 * backend_cuda_loader.c - finds the CUDA back end when a job asks for a GPU.
 *
 * The CUDA twin (backend_cuda.cu) is built as a companion library,
 * native/native_cuda.so next to native.so, and opened only here. A CPU
 * worker therefore never maps cuBLAS (hundreds of megabytes, a quarter of a
 * second to load) and unloading native.so never drags the C++ runtime the
 * CUDA libraries bring along.
 */
#include "backend.h"

#include <stdio.h>
#include <string.h>

#ifdef LOOM_HAVE_CUDA
#include <dlfcn.h>
#include <libgen.h>

typedef native_backend *(*cuda_create_fn)(int index, char *err, size_t errlen);

native_backend *native_backend_cuda_create(int index, char *err, size_t errlen)
{
    static void *module; /* kept open: a backend may outlive one instance */
    static cuda_create_fn create;
    if (!create) {
        Dl_info self;
        char dir[4096], path[4096 + 64];
        if (!dladdr((void *)native_backend_cuda_create, &self) || !self.dli_fname) {
            snprintf(err, errlen, "cannot tell where native.so was loaded from");
            return NULL;
        }
        snprintf(dir, sizeof dir, "%s", self.dli_fname);
        snprintf(path, sizeof path, "%s/%s", dirname(dir), NATIVE_CUDA_MODULE);
        module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!module) {
            snprintf(err, errlen, "the CUDA back end cannot be loaded: %s", dlerror());
            return NULL;
        }
        create = (cuda_create_fn)dlsym(module, "native_backend_cuda_create");
        if (!create) {
            snprintf(err, errlen, "the CUDA back end '%s' lacks native_backend_cuda_create",
                     path);
            dlclose(module);
            module = NULL;
            return NULL;
        }
    }
    return create(index, err, errlen);
}
#else
native_backend *native_backend_cuda_create(int index, char *err, size_t errlen)
{
    (void)index;
    snprintf(err, errlen, "the native plugin was built without CUDA (no CUDA toolkit "
                          "found at build time); use a CPU device");
    return NULL;
}
#endif

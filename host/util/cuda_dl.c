/* util/cuda_dl.c - see cuda_dl.h. */
#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA
#include "util/cuda_dl.h"

#include "util/dynlib.h"

#define CUDA_DL_SYMBOL(fn) DYNLIB_SYMBOL(cuda_runtime_api, fn),
static const dynlib_symbol runtime_symbols[] = {CUDA_RUNTIME_FUNCTIONS(CUDA_DL_SYMBOL)};
#undef CUDA_DL_SYMBOL
#define CUDA_DL_SYMBOL(fn) DYNLIB_SYMBOL(nccl_api, fn),
static const dynlib_symbol nccl_symbols[] = {NCCL_FUNCTIONS(CUDA_DL_SYMBOL)};
#undef CUDA_DL_SYMBOL

/* The toolkit's own folder is the fallback: a machine whose loader does
 * not list it still finds the libraries loom was built against. */
static const char *const runtime_sonames[] = {LOOM_CUDART_SONAME, NULL};
static const dynlib_spec runtime_spec = {"the CUDA runtime", runtime_sonames, LOOM_CUDA_LIBDIR,
                                         runtime_symbols,
                                         sizeof runtime_symbols / sizeof runtime_symbols[0]};
static const char *const nccl_sonames[] = {LOOM_NCCL_SONAME, NULL};
static const dynlib_spec nccl_spec = {"NCCL", nccl_sonames, LOOM_CUDA_LIBDIR, nccl_symbols,
                                      sizeof nccl_symbols / sizeof nccl_symbols[0]};

static cuda_runtime_api runtime;
static dynlib_once runtime_once = DYNLIB_ONCE_INIT;
static nccl_api nccl;
static dynlib_once nccl_once = DYNLIB_ONCE_INIT;

loom_error *cuda_runtime_load(const cuda_runtime_api **out)
{
    loom_error *e = dynlib_open_once(&runtime_once, &runtime_spec, &runtime);
    *out = e ? NULL : &runtime;
    return e;
}

loom_error *cuda_nccl_load(const nccl_api **out)
{
    const cuda_runtime_api *rt;
    loom_error *e = cuda_runtime_load(&rt);
    if (!e)
        e = dynlib_open_once(&nccl_once, &nccl_spec, &nccl);
    *out = e ? NULL : &nccl;
    return e;
}
#else
/* Built without CUDA: nothing to load (ISO C wants a declaration). */
typedef int cuda_dl_unused;
#endif

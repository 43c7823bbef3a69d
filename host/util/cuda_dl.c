/* util/cuda_dl.c - see cuda_dl.h. */
#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA
#include "util/cuda_dl.h"

#include <pthread.h>

#include "util/dynlib.h"

/* A failure is kept and copied for every caller: a missing library stays
 * missing for the process's life. */
typedef struct loaded {
    pthread_once_t once;
    loom_error *failure;
    void *handle;
} loaded;

static loom_error *outcome(const loaded *l)
{
    return l->failure ? loom_err(loom_err_code(l->failure), "%s", loom_err_message(l->failure))
                      : NULL;
}

#define CUDA_DL_SYMBOL(fn) DYNLIB_SYMBOL(cuda_runtime_api, fn),
static const dynlib_symbol runtime_symbols[] = {CUDA_RUNTIME_FUNCTIONS(CUDA_DL_SYMBOL)};
#undef CUDA_DL_SYMBOL
#define CUDA_DL_SYMBOL(fn) DYNLIB_SYMBOL(nccl_api, fn),
static const dynlib_symbol nccl_symbols[] = {NCCL_FUNCTIONS(CUDA_DL_SYMBOL)};
#undef CUDA_DL_SYMBOL

static cuda_runtime_api runtime;
static loaded runtime_state = {PTHREAD_ONCE_INIT, NULL, NULL};
static nccl_api nccl;
static loaded nccl_state = {PTHREAD_ONCE_INIT, NULL, NULL};

static void load_runtime(void)
{
    static const char *const sonames[] = {LOOM_CUDART_SONAME, NULL};
    dynlib_spec spec = {"the CUDA runtime", sonames, LOOM_CUDA_LIBDIR, runtime_symbols,
                        sizeof runtime_symbols / sizeof runtime_symbols[0]};
    runtime_state.failure = dynlib_open(&spec, &runtime, &runtime_state.handle);
}

static void load_nccl(void)
{
    static const char *const sonames[] = {LOOM_NCCL_SONAME, NULL};
    dynlib_spec spec = {"NCCL", sonames, LOOM_CUDA_LIBDIR, nccl_symbols,
                        sizeof nccl_symbols / sizeof nccl_symbols[0]};
    nccl_state.failure = dynlib_open(&spec, &nccl, &nccl_state.handle);
}

loom_error *cuda_runtime_load(const cuda_runtime_api **out)
{
    pthread_once(&runtime_state.once, load_runtime);
    *out = runtime_state.failure ? NULL : &runtime;
    return outcome(&runtime_state);
}

loom_error *cuda_nccl_load(const nccl_api **out)
{
    const cuda_runtime_api *rt;
    loom_error *e = cuda_runtime_load(&rt);
    *out = NULL;
    if (e)
        return e;
    pthread_once(&nccl_state.once, load_nccl);
    *out = nccl_state.failure ? NULL : &nccl;
    return outcome(&nccl_state);
}
#else
/* Built without CUDA: nothing to load (ISO C wants a declaration). */
typedef int cuda_dl_unused;
#endif

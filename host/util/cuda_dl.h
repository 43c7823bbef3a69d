/*
 * util/cuda_dl.h - the CUDA runtime and NCCL, opened on first use.
 *
 * The loom binary links neither: a CPU-only machine runs the same build, and
 * a CLI call never maps them. The tables are typed from the toolkit's own
 * headers, so a call through them is checked like a direct call. Only built
 * with LOOM_HAVE_CUDA (the GPU back ends' files include it).
 * Threading: any thread; the first call loads, later calls return the same
 * table (or the same failure).
 */
#ifndef LOOM_UTIL_CUDA_DL_H
#define LOOM_UTIL_CUDA_DL_H

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "util/error.h"

/* The runtime calls the host makes (tensor staging, the nccl back end). */
#define CUDA_RUNTIME_FUNCTIONS(X)                                                            \
    X(cudaGetErrorString)                                                                    \
    X(cudaSetDevice)                                                                         \
    X(cudaMalloc)                                                                            \
    X(cudaFree)                                                                              \
    X(cudaMemcpy)                                                                            \
    X(cudaStreamCreateWithFlags)                                                             \
    X(cudaStreamQuery)                                                                       \
    X(cudaStreamDestroy)

#define NCCL_FUNCTIONS(X)                                                                    \
    X(ncclGetErrorString)                                                                    \
    X(ncclGetUniqueId)                                                                       \
    X(ncclCommInitRankConfig)                                                                \
    X(ncclCommShrink)                                                                        \
    X(ncclCommAbort)                                                                         \
    X(ncclCommGetAsyncError)                                                                 \
    X(ncclCommUserRank)                                                                      \
    X(ncclCommCount)                                                                         \
    X(ncclAllReduce)                                                                         \
    X(ncclBroadcast)

#define CUDA_DL_FIELD(fn) __typeof__(&fn) fn;
typedef struct cuda_runtime_api {
    CUDA_RUNTIME_FUNCTIONS(CUDA_DL_FIELD)
} cuda_runtime_api;
typedef struct nccl_api {
    NCCL_FUNCTIONS(CUDA_DL_FIELD)
} nccl_api;
#undef CUDA_DL_FIELD

/* The CUDA runtime (libcudart of the toolkit loom was built with). NULL, or
 * LOOM_E_UNAVAILABLE naming the library when it cannot be loaded. */
loom_error *cuda_runtime_load(const cuda_runtime_api **out);
/* NCCL, and the CUDA runtime it needs; same contract. */
loom_error *cuda_nccl_load(const nccl_api **out);

#endif

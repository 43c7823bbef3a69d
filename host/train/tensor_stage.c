/* train/tensor_stage.c - see tensor_stage.h. */
#include "train/tensor_stage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA
#include "util/cuda_dl.h"
#endif

static loom_error *copy_bytes(void *dst, const void *src, size_t bytes, int to_device,
                              int from_device)
{
    if (!to_device && !from_device) {
        memcpy(dst, src, bytes);
        return NULL;
    }
#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA
    const cuda_runtime_api *rt;
    loom_error *missing = cuda_runtime_load(&rt);
    if (missing)
        return loom_err_wrap(missing, "the adapter gave device memory");
    /* Blocking copies on the legacy stream: the adapter's own stream is idle
     * between framework calls. */
    cudaError_t e = rt->cudaMemcpy(dst, src, bytes,
                                   to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
    if (e != cudaSuccess)
        return loom_err(LOOM_E_INTERNAL, "copying %zu bytes %s the GPU: CUDA error %d: %s", bytes,
                        to_device ? "to" : "from", (int)e, rt->cudaGetErrorString(e));
    return NULL;
#else
    return loom_err(LOOM_E_UNSUPPORTED,
                    "the adapter gave device memory, and this loom was built without CUDA");
#endif
}

loom_error *tensor_copy_to_host(void *dst, const loom_tensor_view *src)
{
    return copy_bytes(dst, src->data, (size_t)src->nbytes, 0, src->on_device != 0);
}

loom_error *tensor_copy_from_host(const loom_tensor_view *dst, const void *src)
{
    return copy_bytes(dst->data, src, (size_t)dst->nbytes, dst->on_device != 0, 0);
}

loom_error *tensor_stage_init(tensor_stage *st, const loom_tensor_view *views, uint32_t count)
{
    memset(st, 0, sizeof *st);
    st->host = calloc(count ? count : 1, sizeof *st->host);
    if (!st->host)
        return loom_err(LOOM_E_INTERNAL, "out of memory staging %u tensors", count);
    for (uint32_t i = 0; i < count; i++) {
        st->host[i] = views[i];
        st->host[i].on_device = 0;
        st->host[i].data = malloc(views[i].nbytes ? (size_t)views[i].nbytes : 1);
        st->count = i + 1;
        if (!st->host[i].data) {
            loom_error *e = loom_err(LOOM_E_INTERNAL, "out of memory staging tensor %s (%llu bytes)",
                                     views[i].name ? views[i].name : "?",
                                     (unsigned long long)views[i].nbytes);
            tensor_stage_free(st);
            return e;
        }
    }
    st->count = count;
    return NULL;
}

loom_error *tensor_stage_pull(tensor_stage *st, const loom_tensor_view *views)
{
    loom_error *e = NULL;
    for (uint32_t i = 0; !e && i < st->count; i++)
        e = tensor_copy_to_host(st->host[i].data, &views[i]);
    return e;
}

loom_error *tensor_stage_push(const tensor_stage *st, const loom_tensor_view *views)
{
    loom_error *e = NULL;
    for (uint32_t i = 0; !e && i < st->count; i++)
        e = tensor_copy_from_host(&views[i], st->host[i].data);
    return e;
}

void tensor_stage_free(tensor_stage *st)
{
    for (uint32_t i = 0; st->host && i < st->count; i++)
        free(st->host[i].data);
    free(st->host);
    memset(st, 0, sizeof *st);
}

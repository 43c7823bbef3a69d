/* train/tensor_stage.c - see tensor_stage.h. */
#include "train/tensor_stage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA
#include "util/cuda_dl.h"
#endif

static int copy_bytes(void *dst, const void *src, size_t bytes, int to_device, int from_device,
                      char *err, size_t errlen)
{
    if (!to_device && !from_device) {
        memcpy(dst, src, bytes);
        return 0;
    }
#if defined(LOOM_HAVE_CUDA) && LOOM_HAVE_CUDA
    const cuda_runtime_api *rt;
    loom_error *missing = cuda_runtime_load(&rt);
    if (missing) {
        loom_err_take(loom_err_wrap(missing, "the adapter gave device memory"), err, errlen);
        return -1;
    }
    /* Blocking copies on the legacy stream: the adapter's own stream is idle
     * between framework calls. */
    cudaError_t e = rt->cudaMemcpy(dst, src, bytes,
                                   to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "copying %zu bytes %s the GPU: CUDA error %d: %s", bytes,
                 to_device ? "to" : "from", (int)e, rt->cudaGetErrorString(e));
        return -1;
    }
    return 0;
#else
    snprintf(err, errlen, "the adapter gave device memory, and this loom was built without CUDA");
    return -1;
#endif
}

int tensor_copy_to_host(void *dst, const loom_tensor_view *src, char *err, size_t errlen)
{
    return copy_bytes(dst, src->data, (size_t)src->nbytes, 0, src->on_device != 0, err, errlen);
}

int tensor_copy_from_host(const loom_tensor_view *dst, const void *src, char *err, size_t errlen)
{
    return copy_bytes(dst->data, src, (size_t)dst->nbytes, dst->on_device != 0, 0, err, errlen);
}

int tensor_stage_init(tensor_stage *st, const loom_tensor_view *views, uint32_t count, char *err,
                      size_t errlen)
{
    memset(st, 0, sizeof *st);
    st->host = calloc(count ? count : 1, sizeof *st->host);
    if (!st->host) {
        snprintf(err, errlen, "out of memory staging %u tensors", count);
        return -1;
    }
    for (uint32_t i = 0; i < count; i++) {
        st->host[i] = views[i];
        st->host[i].on_device = 0;
        st->host[i].data = malloc(views[i].nbytes ? (size_t)views[i].nbytes : 1);
        st->count = i + 1;
        if (!st->host[i].data) {
            snprintf(err, errlen, "out of memory staging tensor %s (%llu bytes)",
                     views[i].name ? views[i].name : "?", (unsigned long long)views[i].nbytes);
            tensor_stage_free(st);
            return -1;
        }
    }
    st->count = count;
    return 0;
}

int tensor_stage_pull(tensor_stage *st, const loom_tensor_view *views, char *err, size_t errlen)
{
    for (uint32_t i = 0; i < st->count; i++)
        if (tensor_copy_to_host(st->host[i].data, &views[i], err, errlen) != 0)
            return -1;
    return 0;
}

int tensor_stage_push(const tensor_stage *st, const loom_tensor_view *views, char *err,
                      size_t errlen)
{
    for (uint32_t i = 0; i < st->count; i++)
        if (tensor_copy_from_host(&views[i], st->host[i].data, err, errlen) != 0)
            return -1;
    return 0;
}

void tensor_stage_free(tensor_stage *st)
{
    for (uint32_t i = 0; st->host && i < st->count; i++)
        free(st->host[i].data);
    free(st->host);
    memset(st, 0, sizeof *st);
}

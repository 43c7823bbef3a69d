/*
 * sched/inventory.c - finds this host's devices: CUDA GPUs when the driver
 * reports any, otherwise CPU slots. The one place the host asks whether it
 * has GPUs (the exec service's checks ask here too). libcuda is opened at
 * run time, so the host builds and runs without CUDA and a GPU machine
 * needs no rebuild; a node agent reports its devices through
 * sched_add_device instead.
 */
#include "sched/sched_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include "util/log.h"

typedef int (*cu_init_fn)(unsigned int flags);
typedef int (*cu_device_get_count_fn)(int *count);

static int32_t cuda_devices;
static pthread_once_t cuda_counted = PTHREAD_ONCE_INIT;

static void count_cuda_devices(void)
{
    /* The driver library, not the runtime: it is what a GPU machine always
     * has, and it honours CUDA_VISIBLE_DEVICES itself. It stays loaded: the
     * driver does not support being unloaded after cuInit. */
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return;
    cu_init_fn cu_init = (cu_init_fn)dlsym(lib, "cuInit");
    cu_device_get_count_fn cu_count =
        (cu_device_get_count_fn)dlsym(lib, "cuDeviceGetCount");
    int count = 0;
    if (!cu_init || !cu_count || cu_init(0) != 0 || cu_count(&count) != 0)
        count = 0;
    cuda_devices = count > 0 ? count : 0;
}

/* Counted once: the driver reads CUDA_VISIBLE_DEVICES at cuInit, so the
 * answer cannot change within a process. */
int32_t sched_cuda_device_count(void)
{
    pthread_once(&cuda_counted, count_cuda_devices);
    return cuda_devices;
}

int32_t sched_add_local_devices(sched *s, int32_t cpu_slots, bool use_cuda)
{
    int32_t gpus = use_cuda ? sched_cuda_device_count() : 0;
    int32_t kind = gpus > 0 ? LOOM_DEVICE_CUDA : LOOM_DEVICE_CPU;
    int32_t n = gpus;
    if (gpus == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cpu_slots > 0 ? cpu_slots : cores > 0 ? (int32_t)cores : 1;
    }
    int32_t added = 0;
    for (int32_t i = 0; i < n; i++) {
        if (sched_find_device(s, kind, i, NULL) >= 0)
            continue;
        if (sched_add_device(s, kind, i, NULL) < 0)
            return -1;
        added++;
    }
    log_info("sched: inventory: %d %s device(s)", n, gpus > 0 ? "CUDA" : "CPU slot");
    return added;
}

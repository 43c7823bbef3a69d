/* tests/unit/inventory/fake_cuda_driver.c - the two driver calls the
 * inventory makes, answering with LOOM_FAKE_CUDA_DEVICES devices. */
#include <stdlib.h>

int cuInit(unsigned int flags);
int cuDeviceGetCount(int *count);

int cuInit(unsigned int flags)
{
    return flags == 0 ? 0 : 1; /* CUDA_ERROR_INVALID_VALUE */
}

int cuDeviceGetCount(int *count)
{
    const char *n = getenv("LOOM_FAKE_CUDA_DEVICES");
    *count = n ? atoi(n) : 0;
    return 0;
}

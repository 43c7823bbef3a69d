/*
 * tests/unit/inventory/test_inventory.c - the host's one GPU inventory:
 * the devices the CUDA driver reports become the scheduler's CUDA devices,
 * and no GPU means CPU slots. Run against the stand-in driver with the
 * number of devices it reports as the argument.
 */
#include <stdlib.h>
#include <unistd.h>

#include "../../check.h"
#include "sched/sched.h"

int main(int argc, char **argv)
{
    int expected = argc > 1 ? atoi(argv[1]) : 0;
    CHECK(sched_cuda_device_count() == expected);
    CHECK(sched_cuda_device_count() == expected); /* asked again: the same */

    sched *s = sched_create(NULL);
    CHECK(s != NULL);
    int32_t added = sched_add_local_devices(s, 3, true);
    if (expected > 0) {
        CHECK(added == expected);
        for (int32_t slot = 0; slot < added; slot++) {
            sched_device_info d;
            CHECK(sched_device(s, slot, &d));
            CHECK(d.kind == LOOM_DEVICE_CUDA && d.index == slot && d.node == NULL);
        }
    } else {
        CHECK(added == 3); /* no GPU: the CPU slots asked for */
        sched_device_info d;
        CHECK(sched_device(s, 0, &d) && d.kind == LOOM_DEVICE_CPU);
    }
    sched_free(s);

    /* Not asked to use CUDA: CPU slots even where GPUs exist. */
    s = sched_create(NULL);
    CHECK(sched_add_local_devices(s, 2, false) == 2);
    sched_device_info d;
    CHECK(sched_device(s, 1, &d) && d.kind == LOOM_DEVICE_CPU);
    sched_free(s);
    return CHECK_DONE();
}

/*
 * tests/unit/comm/test_comm_generation.c - the GPU path's choice between
 * shrinking the NCCL communicator and building a new one, which runs on no
 * machine here with a GPU: shrink only when members left, none joined, and
 * the last round went well; the excluded ranks are the leavers' positions.
 */
#include "../../check.h"
#include "comm.h"

int main(void)
{
    uint32_t ex[8], nex = 99;
    const uint32_t four[] = {0, 1, 2, 3};

    /* Slots 1 and 3 leave: ranks 1 and 3 of the old generation. */
    const uint32_t two[] = {0, 2};
    CHECK(comm_plan_shrink(four, 4, two, 2, 0, ex, &nex) == 1);
    CHECK(nex == 2 && ex[0] == 1 && ex[1] == 3);

    /* Rank numbers are positions, not slot numbers. */
    const uint32_t slots[] = {2, 5, 7}, left[] = {2, 7};
    CHECK(comm_plan_shrink(slots, 3, left, 2, 0, ex, &nex) == 1);
    CHECK(nex == 1 && ex[0] == 1);

    /* After a failed round the communicators are aborted: a new one. */
    CHECK(comm_plan_shrink(four, 4, two, 2, 1, ex, &nex) == 0 && nex == 0);
    /* Someone joins (slot 4), even while others leave: a new one. */
    const uint32_t swap[] = {0, 4};
    CHECK(comm_plan_shrink(four, 4, swap, 2, 0, ex, &nex) == 0 && nex == 0);
    /* Growth, the same members, the first generation, nobody left. */
    const uint32_t five[] = {0, 1, 2, 3, 4};
    CHECK(comm_plan_shrink(four, 4, five, 5, 0, ex, &nex) == 0);
    CHECK(comm_plan_shrink(four, 4, four, 4, 0, ex, &nex) == 0);
    CHECK(comm_plan_shrink(NULL, 0, two, 2, 0, ex, &nex) == 0);
    CHECK(comm_plan_shrink(four, 4, NULL, 0, 0, ex, &nex) == 0);
    return CHECK_DONE();
}

/* train/comm/generation_plan.c - see comm_plan_shrink in comm.h. Plain
 * logic, built with or without CUDA, so the decision the GPU path takes is
 * tested on every machine. */
#include "comm.h"

static int listed(uint32_t slot, const uint32_t *list, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        if (list[k] == slot)
            return 1;
    return 0;
}

int comm_plan_shrink(const uint32_t *prev, uint32_t nprev, const uint32_t *next, uint32_t n,
                     int after_failure, uint32_t *excluded, uint32_t *nexcluded)
{
    *nexcluded = 0;
    if (after_failure || n == 0 || n >= nprev)
        return 0;
    for (uint32_t r = 0; r < n; r++)
        if (!listed(next[r], prev, nprev))
            return 0; /* someone joins: a new communicator */
    for (uint32_t k = 0; k < nprev; k++)
        if (!listed(prev[k], next, n))
            excluded[(*nexcluded)++] = k;
    return 1;
}

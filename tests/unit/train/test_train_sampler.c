/* The sampler's copy, the rewind point of a job that lost every worker:
 * steps taken and committed after the copy, one of them aborted, then the
 * copy put back; the same steps come out again in the same order, and the
 * epoch ends with every sample committed exactly once. A copy into a
 * sampler of another epoch, or into an earlier copy, is exact too. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "train/sampler.h"

#define N 1000
#define STEP 32

/* Takes and commits up to `steps` steps; their samples into out. */
static size_t run_steps(sampler *s, int steps, uint64_t *out)
{
    size_t n = 0;
    for (int k = 0; k < steps; k++) {
        size_t got = sampler_take(s, out + n, STEP);
        sampler_commit(s, out + n, got);
        n += got;
    }
    return n;
}

int main(void)
{
    sampler live, copy;
    memset(&copy, 0, sizeof copy);
    CHECK(sampler_init(&live, N, 7) == 0);
    uint64_t before[N], after[N], again[N], aborted[STEP];
    run_steps(&live, 5, before);
    /* An aborted step leaves samples to be taken first. */
    size_t naborted = sampler_take(&live, aborted, STEP);
    sampler_give_back(&live, aborted, naborted);
    CHECK(sampler_copy(&copy, &live) == 0);
    size_t n1 = run_steps(&live, 10, after);
    CHECK(memcmp(after, aborted, naborted * sizeof *after) == 0);
    /* Every worker lost: back to the copy, and the same steps again. */
    CHECK(sampler_copy(&live, &copy) == 0);
    CHECK(live.committed == 5 * STEP);
    size_t n2 = run_steps(&live, 10, again);
    CHECK(n1 == n2 && memcmp(after, again, n1 * sizeof *after) == 0);
    uint64_t rest[N];
    while (sampler_remaining(&live) > 0)
        run_steps(&live, 1, rest);
    CHECK(sampler_epoch_complete(&live));
    CHECK(live.committed == N && live.duplicates == 0);

    /* Back across an epoch boundary: the copy's epoch and permutation. */
    sampler_begin_epoch(&live, 1);
    run_steps(&live, 3, rest);
    CHECK(sampler_copy(&live, &copy) == 0);
    CHECK(live.epoch == 0 && live.committed == 5 * STEP);
    size_t n3 = run_steps(&live, 10, rest);
    CHECK(n3 == n1 && memcmp(after, rest, n1 * sizeof *after) == 0);
    /* A copy over an older copy (the next save). */
    CHECK(sampler_copy(&copy, &live) == 0);
    CHECK(copy.committed == live.committed && copy.cursor == live.cursor &&
          copy.nreturned == live.nreturned);
    sampler_free(&live);
    sampler_free(&copy);
    return CHECK_DONE();
}

/*
 * tests/unit/comm/test_comm_allreduce.c - the shm back end's collectives
 * with 2, 3 and 4 forked worker processes: the average all-reduce is
 * bitwise exact (slot-order sum) for 1, 1000, 2.7 MB and 64 MB worth of
 * floats and for an odd count of several chunks in a buffer that starts
 * off a 16-byte boundary, broadcast delivers the root's bytes, and collectives of mixed
 * kinds through a small staging area (many chunks) stay in step.
 */
#include "../../check.h"
#include "comm_test_util.h"

#define MAX_WORKERS 4

#define SIZE_COUNT 5
/* The size whose buffer starts one float past malloc's alignment. */
#define UNALIGNED_SIZE 4

static const size_t allreduce_sizes[SIZE_COUNT] = {
    1,
    1000,
    2700000 / sizeof(float),      /* the MLP's gradient buffer */
    (64u << 20) / sizeof(float),  /* several chunks of staging */
    (9u << 20) / sizeof(float) + 3, /* odd, unaligned, many chunks */
};

typedef struct group_plan {
    const char *segment;
    uint32_t generation;
    uint32_t slots[MAX_WORKERS];
    uint32_t world;
    /* Per size, computed once by the parent before forking (the workers
     * inherit it), so the workers only compare. */
    float *expected[SIZE_COUNT];
} group_plan;

/* Index of the first element whose bits differ, or n. */
static size_t first_difference(const float *got, const float *want, size_t n)
{
    if (memcmp(got, want, n * sizeof(float)) == 0)
        return n;
    size_t i = 0;
    while (memcmp(&got[i], &want[i], sizeof(float)) == 0)
        i++;
    return i;
}

static int allreduce_worker(int index, void *arg)
{
    const group_plan *plan = arg;
    uint32_t slot = plan->slots[index];
    comm *c = NULL;
    if (worker_failed(comm_shm_attach(plan->segment, slot, &c), "attach", index))
        return 1;
    int failed = worker_failed(
        comm_shm_join(c, plan->generation, comm_deadline_after_ms(10000)), "join", index);
    if (!failed && (comm_world_size(c) != plan->world || comm_rank(c) != (uint32_t)index)) {
        fprintf(stderr, "worker %d: rank %u of %u, expected %d of %u\n", index,
                comm_rank(c), comm_world_size(c), index, plan->world);
        failed = 1;
    }
    float *mem = malloc((allreduce_sizes[3] + 1) * sizeof(float));
    for (size_t s = 0; !failed && s < SIZE_COUNT; s++) {
        size_t n = allreduce_sizes[s];
        float *buf = mem + (s == UNALIGNED_SIZE);
        fill_values(buf, n, slot, (uint32_t)(s + 1));
        failed = worker_failed(
            comm_allreduce_avg_f32(c, buf, n, comm_deadline_after_ms(20000)),
            "allreduce", index);
        size_t first = failed ? n : first_difference(buf, plan->expected[s], n);
        if (first < n) {
            fprintf(stderr, "worker %d: average %zu of %zu is %.9g, expected %.9g\n",
                    index, first, n, buf[first], plan->expected[s][first]);
            failed = 1;
        }
    }
    free(mem);
    comm_close(c);
    return failed;
}

/* W workers in the given slots all-reduce every size; each checks its own
 * result against the exact expected average. */
static void test_allreduce_world(uint32_t world, const uint32_t *slots)
{
    char name[64];
    segment_name(name, sizeof(name), "allreduce");
    comm_shm_config config = {.max_ranks = MAX_WORKERS,
                              .max_buffer_bytes = 64u << 20};
    comm_shm_segment *seg = NULL;
    loom_error *err = comm_shm_create(name, &config, &seg);
    CHECK(err == NULL);
    if (err) {
        fprintf(stderr, "%s\n", loom_err_message(err));
        loom_err_free(err);
        return;
    }
    group_plan plan = {.segment = name, .world = world};
    memcpy(plan.slots, slots, world * sizeof(uint32_t));
    for (size_t s = 0; s < SIZE_COUNT; s++) {
        plan.expected[s] = malloc(allreduce_sizes[s] * sizeof(float));
        for (size_t i = 0; i < allreduce_sizes[s]; i++)
            plan.expected[s][i] = expected_average(slots, world, i, (uint32_t)(s + 1));
    }
    CHECK(comm_shm_publish(seg, slots, world, &plan.generation) == NULL);
    CHECK(plan.generation == 1);

    pid_t pids[MAX_WORKERS];
    for (uint32_t i = 0; i < world; i++)
        pids[i] = spawn_worker(allreduce_worker, (int)i, &plan);
    for (uint32_t i = 0; i < world; i++)
        CHECK_MSG(wait_worker(pids[i]) == 0, "world %u: worker %u failed", world, i);
    for (size_t s = 0; s < SIZE_COUNT; s++)
        free(plan.expected[s]);
    comm_shm_destroy(seg);
}

/* ---- broadcast and mixed collectives through a small staging area ---- */

#define SMALL_STAGING (64u << 10)
#define BROADCAST_BYTES (3u << 20)
#define MIXED_FLOATS 100003u /* not a multiple of anything convenient */

static unsigned char broadcast_byte(size_t i, uint32_t seed)
{
    return (unsigned char)((i * 131u + seed * 7u) ^ (i >> 9));
}

static int mixed_worker(int index, void *arg)
{
    const group_plan *plan = arg;
    uint32_t slot = plan->slots[index];
    comm *c = NULL;
    if (worker_failed(comm_shm_attach(plan->segment, slot, &c), "attach", index))
        return 1;
    int failed = worker_failed(
        comm_shm_join(c, plan->generation, comm_deadline_after_ms(10000)), "join", index);
    unsigned char *bytes = malloc(BROADCAST_BYTES);
    float *floats = malloc(MIXED_FLOATS * sizeof(float));

    /* Three rounds, each: broadcast from a different root, all-reduce,
     * barrier, so every kind follows every other across chunk boundaries. */
    for (uint32_t round = 0; !failed && round < 3; round++) {
        uint32_t root = (round + 1) % plan->world;
        for (size_t i = 0; i < BROADCAST_BYTES; i++)
            bytes[i] = comm_rank(c) == root ? broadcast_byte(i, round) : 0xEE;
        failed |= worker_failed(comm_broadcast(c, bytes, BROADCAST_BYTES, root,
                                               comm_deadline_after_ms(10000)),
                                "broadcast", index);
        for (size_t i = 0; !failed && i < BROADCAST_BYTES; i++) {
            if (bytes[i] != broadcast_byte(i, round)) {
                fprintf(stderr, "worker %d: broadcast byte %zu wrong in round %u\n",
                        index, i, round);
                failed = 1;
            }
        }
        fill_values(floats, MIXED_FLOATS, slot, 100 + round);
        failed |= worker_failed(comm_allreduce_avg_f32(c, floats, MIXED_FLOATS,
                                                       comm_deadline_after_ms(10000)),
                                "allreduce", index);
        size_t first = 0;
        if (!failed &&
            count_wrong(floats, MIXED_FLOATS, plan->slots, plan->world, 100 + round, &first)) {
            fprintf(stderr, "worker %d: mixed allreduce wrong at %zu\n", index, first);
            failed = 1;
        }
        failed |= worker_failed(comm_barrier(c, comm_deadline_after_ms(10000)), "barrier",
                                index);
    }
    free(bytes);
    free(floats);
    comm_close(c);
    return failed;
}

static void test_broadcast_and_mixed(void)
{
    char name[64];
    segment_name(name, sizeof(name), "mixed");
    comm_shm_config config = {.max_ranks = 3,
                              .max_buffer_bytes = BROADCAST_BYTES,
                              .staging_bytes = SMALL_STAGING};
    comm_shm_segment *seg = NULL;
    CHECK(comm_shm_create(name, &config, &seg) == NULL);
    if (seg == NULL)
        return;
    group_plan plan = {.segment = name, .world = 3, .slots = {0, 1, 2}};
    CHECK(comm_shm_publish(seg, plan.slots, 3, &plan.generation) == NULL);
    pid_t pids[3];
    for (int i = 0; i < 3; i++)
        pids[i] = spawn_worker(mixed_worker, i, &plan);
    for (int i = 0; i < 3; i++)
        CHECK_MSG(wait_worker(pids[i]) == 0, "mixed: worker %d failed", i);
    comm_shm_destroy(seg);
}

int main(void)
{
    const uint32_t two[] = {0, 1};
    const uint32_t three[] = {0, 2, 3}; /* a gap: ranks follow slot order */
    const uint32_t four[] = {0, 1, 2, 3};
    test_allreduce_world(2, two);
    test_allreduce_world(3, three);
    test_allreduce_world(4, four);
    test_broadcast_and_mixed();
    return CHECK_DONE();
}

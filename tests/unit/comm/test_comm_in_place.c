/*
 * tests/unit/comm/test_comm_in_place.c - the all-reduce of gradient buffers
 * kept in the segment's gradient regions (comm_shm_gradient_memory), reduced
 * in place: bitwise the slot-order average for 2, 3 (slots with a gap) and 4
 * processes, over a whole odd-sized buffer large enough for streamed stores,
 * over parts of it at unaligned offsets (the bytes around a part untouched),
 * mixed with staged all-reduces and broadcasts; the staging fallback when a
 * member keeps its gradients elsewhere; members that disagree on where
 * their buffer is fail instead of corrupting each other's; and membership
 * changes: 2 -> 1 -> 2 members with the second slot's process replaced (its
 * region handed over zeroed), then a third member without a region.
 */
#include "../../check.h"
#include "comm_test_util.h"

#define MAX_WORKERS 4
/* Odd, past the streamed-store threshold (with 2 or more members), and
 * several staging chunks. */
#define GRAD_FLOATS ((9u << 20) / sizeof(float) + 3)
#define REGION_BYTES (16u << 20)
#define STREAM_BYTES (16u << 20)
#define SENTINEL (-1234.5f)

typedef struct group_plan {
    char segment[64];
    uint32_t generation;
    uint32_t slots[MAX_WORKERS];
    uint32_t world;
    uint32_t private_slot; /* this slot keeps its gradients elsewhere; MAX: none */
    uint32_t misplaced_slot; /* reduces a private copy of its buffer; MAX: none */
    worker_report *reports;
} group_plan;

static comm_shm_segment *create_segment(group_plan *plan, const char *tag, uint32_t slots)
{
    segment_name(plan->segment, sizeof plan->segment, tag);
    comm_shm_config config = {.max_ranks = slots,
                              .max_buffer_bytes = REGION_BYTES,
                              .gradient_region_bytes = REGION_BYTES,
                              /* the whole buffer streamed, small parts not */
                              .stream_min_bytes = STREAM_BYTES};
    comm_shm_segment *seg = NULL;
    loom_error *err = comm_shm_create(plan->segment, &config, &seg);
    if (err) {
        fprintf(stderr, "create: %s\n", loom_err_message(err));
        loom_err_free(err);
    }
    plan->reports = reports_create(MAX_WORKERS);
    return seg;
}

/* The gradient buffer: in the slot's region, or malloc'd for a member
 * that keeps its gradients elsewhere. */
static float *gradient_buffer(comm *c, uint32_t slot, int in_region, float **owned)
{
    *owned = NULL;
    if (!in_region)
        return *owned = malloc(GRAD_FLOATS * sizeof(float));
    float *region = NULL;
    if (worker_failed(comm_shm_gradient_memory(c, GRAD_FLOATS * sizeof(float), &region),
                      "gradient memory", (int)slot))
        return NULL;
    return region;
}

/* All-reduces buf[offset, offset + count) with every other float of buf
 * set to SENTINEL; checks the part is the exact average and the rest is
 * untouched. */
static int reduce_part(comm *c, float *buf, size_t offset, size_t count, uint32_t slot,
                       const uint32_t *slots, uint32_t world, uint32_t salt)
{
    for (size_t i = 0; i < GRAD_FLOATS; i++)
        buf[i] = SENTINEL;
    fill_values(buf + offset, count, slot, salt);
    if (worker_failed(comm_allreduce_avg_f32(c, buf + offset, count,
                                             comm_deadline_after_ms(20000)),
                      "allreduce", (int)slot))
        return 1;
    size_t first = 0;
    if (count_wrong(buf + offset, count, slots, world, salt, &first)) {
        fprintf(stderr, "slot %u: part [%zu, +%zu) average wrong at %zu\n", slot, offset,
                count, first);
        return 1;
    }
    for (size_t i = 0; i < GRAD_FLOATS; i++) {
        if ((i < offset || i >= offset + count) && buf[i] != SENTINEL) {
            fprintf(stderr, "slot %u: float %zu outside the part [%zu, +%zu) changed\n",
                    slot, i, offset, count);
            return 1;
        }
    }
    return 0;
}

static const size_t part_offsets[] = {0, 3, 0, 5, GRAD_FLOATS - 1};
static const size_t part_counts[] = {GRAD_FLOATS, GRAD_FLOATS - 3, 2700000 / sizeof(float),
                                     1000003, 1};

static int group_worker(int index, void *arg)
{
    const group_plan *plan = arg;
    uint32_t slot = plan->slots[index];
    comm *c = NULL;
    if (worker_failed(comm_shm_attach(plan->segment, slot, &c), "attach", index))
        return 1;
    float *owned = NULL;
    float *grads = gradient_buffer(c, slot, slot != plan->private_slot, &owned);
    int failed = grads == NULL;
    failed = failed || worker_failed(comm_shm_join(c, plan->generation,
                                                   comm_deadline_after_ms(10000)),
                                     "join", index);
    uint64_t want = plan->private_slot < MAX_WORKERS ? 0 : GRAD_FLOATS * sizeof(float);
    if (!failed && comm_shm_in_place_bytes(c) != want) {
        fprintf(stderr, "slot %u: reduces %llu bytes in place, expected %llu\n", slot,
                (unsigned long long)comm_shm_in_place_bytes(c), (unsigned long long)want);
        failed = 1;
    }
    float *staged = malloc(100003 * sizeof(float));
    unsigned char weights[4096];
    for (size_t p = 0; !failed && p < sizeof part_counts / sizeof *part_counts; p++) {
        uint32_t salt = (uint32_t)p + 1;
        failed = reduce_part(c, grads, part_offsets[p], part_counts[p], slot, plan->slots,
                             plan->world, salt);
        /* A staged all-reduce and a broadcast between in-place ones. */
        fill_values(staged, 100003, slot, salt + 50);
        failed = failed || worker_failed(comm_allreduce_avg_f32(c, staged, 100003,
                                                                comm_deadline_after_ms(20000)),
                                         "staged allreduce", index);
        size_t first = 0;
        if (!failed && count_wrong(staged, 100003, plan->slots, plan->world, salt + 50, &first)) {
            fprintf(stderr, "slot %u: staged average wrong at %zu\n", slot, first);
            failed = 1;
        }
        memset(weights, comm_rank(c) == 1 ? (int)p : 0xEE, sizeof weights);
        failed = failed || worker_failed(comm_broadcast(c, weights, sizeof weights, 1,
                                                        comm_deadline_after_ms(20000)),
                                         "broadcast", index);
        if (!failed && (weights[0] != p || weights[sizeof weights - 1] != p)) {
            fprintf(stderr, "slot %u: broadcast %zu wrong\n", slot, p);
            failed = 1;
        }
    }
    free(staged);
    free(owned);
    comm_close(c);
    return failed;
}

static void run_group(const char *tag, uint32_t world, const uint32_t *slots,
                      uint32_t private_slot)
{
    group_plan plan = {.world = world, .private_slot = private_slot,
                       .misplaced_slot = MAX_WORKERS};
    comm_shm_segment *seg = create_segment(&plan, tag, MAX_WORKERS);
    CHECK(seg != NULL);
    if (!seg)
        return;
    memcpy(plan.slots, slots, world * sizeof *slots);
    CHECK(comm_shm_publish(seg, plan.slots, world, &plan.generation) == NULL);
    pid_t pids[MAX_WORKERS];
    for (uint32_t i = 0; i < world; i++)
        pids[i] = spawn_worker(group_worker, (int)i, &plan);
    for (uint32_t i = 0; i < world; i++)
        CHECK_MSG(wait_worker(pids[i]) == 0, "%s: worker %u failed", tag, i);
    comm_shm_destroy(seg);
}

/* ---- members that disagree on where their buffer is -------------------- */

static int misplaced_worker(int index, void *arg)
{
    group_plan *plan = arg;
    uint32_t slot = plan->slots[index];
    comm *c = NULL;
    if (worker_failed(comm_shm_attach(plan->segment, slot, &c), "attach", index))
        return 1;
    float *owned = NULL;
    float *grads = gradient_buffer(c, slot, 1, &owned);
    int failed = grads == NULL ||
                 worker_failed(comm_shm_join(c, plan->generation, comm_deadline_after_ms(10000)),
                               "join", index);
    float *copy = malloc(GRAD_FLOATS * sizeof(float));
    if (!failed) {
        fill_values(grads, GRAD_FLOATS, slot, 7);
        memcpy(copy, grads, GRAD_FLOATS * sizeof(float));
        float *buf = slot == plan->misplaced_slot ? copy : grads;
        uint64_t started = comm_now_ns();
        loom_error *err = comm_allreduce_avg_f32(c, buf, GRAD_FLOATS,
                                                 comm_deadline_after_ms(10000));
        report_error(&plan->reports[index], err, started);
        loom_err_free(err);
        /* Nobody wrote into this member's region. */
        failed = memcmp(copy, grads, GRAD_FLOATS * sizeof(float)) != 0 &&
                 slot == plan->misplaced_slot;
    }
    free(copy);
    comm_close(c);
    return failed;
}

static void test_disagreement(void)
{
    group_plan plan = {.world = 2, .slots = {0, 1}, .private_slot = MAX_WORKERS,
                       .misplaced_slot = 1};
    comm_shm_segment *seg = create_segment(&plan, "misplaced", 2);
    CHECK(seg != NULL);
    if (!seg)
        return;
    CHECK(comm_shm_publish(seg, plan.slots, 2, &plan.generation) == NULL);
    pid_t pids[2];
    for (int i = 0; i < 2; i++)
        pids[i] = spawn_worker(misplaced_worker, i, &plan);
    for (int i = 0; i < 2; i++) {
        CHECK_MSG(wait_worker(pids[i]) == 0, "misplaced: worker %d failed", i);
        CHECK_MSG(plan.reports[i].error_code == LOOM_ERR_INTERNAL &&
                      strstr(plan.reports[i].error_message, "in place at float 0") &&
                      strstr(plan.reports[i].error_message, "staged"),
                  "misplaced: worker %d: code %d, %s", i, plan.reports[i].error_code,
                  plan.reports[i].error_message);
        CHECK_MSG(plan.reports[i].error_after_ms < 5000,
                  "misplaced: worker %d failed only after %.0f ms", i,
                  plan.reports[i].error_after_ms);
    }
    comm_shm_destroy(seg);
}

/* ---- 2 -> 1 -> 2 members, a replaced process, a member without a region */

static const uint32_t pair[] = {0, 1}, alone[] = {0}, trio[] = {0, 1, 2};

/* Joins `generation` and all-reduces the whole gradient buffer. */
static int join_and_reduce(comm *c, float *grads, uint32_t slot, uint32_t generation,
                           const uint32_t *slots, uint32_t world, uint64_t in_place)
{
    if (worker_failed(comm_shm_join(c, generation, comm_deadline_after_ms(10000)), "join",
                      (int)slot))
        return 1;
    if (comm_shm_in_place_bytes(c) != in_place) {
        fprintf(stderr, "slot %u: generation %u reduces %llu bytes in place, expected %llu\n",
                slot, generation, (unsigned long long)comm_shm_in_place_bytes(c),
                (unsigned long long)in_place);
        return 1;
    }
    return reduce_part(c, grads, 0, GRAD_FLOATS, slot, slots, world, generation);
}

#define WHOLE (GRAD_FLOATS * sizeof(float))

/* Slot 0: generations 1 {0,1}, 2 {0}, 3 {0,1'}, 4 {0,1',2}. */
static int veteran(int index, void *arg)
{
    group_plan *plan = arg;
    comm *c = NULL;
    if (worker_failed(comm_shm_attach(plan->segment, 0, &c), "attach", index))
        return 1;
    float *owned = NULL;
    float *grads = gradient_buffer(c, 0, 1, &owned);
    int failed = grads == NULL || join_and_reduce(c, grads, 0, 1, pair, 2, WHOLE);
    failed = failed || join_and_reduce(c, grads, 0, 2, alone, 1, WHOLE);
    atomic_store(&plan->reports[0].stage, 2);
    failed = failed || join_and_reduce(c, grads, 0, 3, pair, 2, WHOLE);
    atomic_store(&plan->reports[0].stage, 3);
    failed = failed || join_and_reduce(c, grads, 0, 4, trio, 3, 0);
    comm_close(c);
    return failed;
}

/* Slot 1: the first process takes part in generation 1 and leaves, leaving
 * its gradients behind; the second takes generations 3 and 4. */
static int second_slot(int index, void *arg)
{
    group_plan *plan = arg;
    comm *c = NULL;
    if (worker_failed(comm_shm_attach(plan->segment, 1, &c), "attach", index))
        return 1;
    float *owned = NULL;
    float *grads = gradient_buffer(c, 1, 1, &owned);
    int failed = grads == NULL;
    if (!failed && index == 1) {
        failed = join_and_reduce(c, grads, 1, 1, pair, 2, WHOLE);
    } else if (!failed) {
        for (size_t i = 0; i < GRAD_FLOATS && !failed; i++)
            if (grads[i] != 0.0f) {
                fprintf(stderr, "slot 1: the replacement's region holds %g at %zu\n",
                        (double)grads[i], i);
                failed = 1;
            }
        failed = failed || join_and_reduce(c, grads, 1, 3, pair, 2, WHOLE);
        atomic_store(&plan->reports[index].stage, 3);
        failed = failed || join_and_reduce(c, grads, 1, 4, trio, 3, 0);
    }
    comm_close(c);
    return failed;
}

/* Slot 2: joins generation 4 with its gradients in its own memory. */
static int newcomer(int index, void *arg)
{
    group_plan *plan = arg;
    comm *c = NULL;
    if (worker_failed(comm_shm_attach(plan->segment, 2, &c), "attach", index))
        return 1;
    float *owned = NULL;
    float *grads = gradient_buffer(c, 2, 0, &owned);
    int failed = join_and_reduce(c, grads, 2, 4, trio, 3, 0);
    free(owned);
    comm_close(c);
    return failed;
}

static void test_membership(void)
{
    group_plan plan = {.private_slot = MAX_WORKERS, .misplaced_slot = MAX_WORKERS};
    comm_shm_segment *seg = create_segment(&plan, "inplace-members", 3);
    CHECK(seg != NULL);
    if (!seg)
        return;
    uint32_t gen = 0;
    CHECK(comm_shm_publish(seg, pair, 2, &gen) == NULL && gen == 1);
    pid_t vet = spawn_worker(veteran, 0, &plan);
    pid_t first = spawn_worker(second_slot, 1, &plan);
    CHECK_MSG(wait_worker(first) == 0, "membership: slot 1's first process failed");
    CHECK(comm_shm_publish(seg, alone, 1, &gen) == NULL && gen == 2);
    CHECK(wait_stage(&plan.reports[0], 2, 20000));
    pid_t replacement = spawn_worker(second_slot, 2, &plan);
    CHECK(comm_shm_publish(seg, pair, 2, &gen) == NULL && gen == 3);
    pid_t third = spawn_worker(newcomer, 3, &plan);
    CHECK(wait_stage(&plan.reports[0], 3, 20000) && wait_stage(&plan.reports[2], 3, 20000));
    CHECK(comm_shm_publish(seg, trio, 3, &gen) == NULL && gen == 4);
    CHECK_MSG(wait_worker(vet) == 0, "membership: slot 0 failed");
    CHECK_MSG(wait_worker(replacement) == 0, "membership: slot 1's replacement failed");
    CHECK_MSG(wait_worker(third) == 0, "membership: slot 2 failed");
    comm_shm_destroy(seg);
}

/* ---- the gradient memory's own checks ----------------------------------- */

static void test_gradient_memory_errors(void)
{
    group_plan plan = {0};
    comm_shm_segment *seg = create_segment(&plan, "inplace-errors", 1);
    CHECK(seg != NULL);
    if (!seg)
        return;
    comm *c = NULL;
    CHECK(comm_shm_attach(plan.segment, 0, &c) == NULL);
    float *region = NULL;
    loom_error *err = comm_shm_gradient_memory(c, REGION_BYTES + 4, &region);
    CHECK(err && loom_err_code(err) == LOOM_ERR_RESOURCE_EXHAUSTED && region == NULL &&
          strstr(loom_err_message(err), "gradient region of 16777216 bytes per slot"));
    loom_err_free(err);
    err = comm_shm_gradient_memory(c, 6, &region);
    CHECK(err && loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT &&
          strstr(loom_err_message(err), "multiple of 4"));
    loom_err_free(err);
    CHECK(comm_shm_gradient_memory(c, 4096, &region) == NULL && region != NULL);
    float *again = NULL;
    err = comm_shm_gradient_memory(c, 4096, &again);
    CHECK(err && loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT && again == NULL &&
          strstr(loom_err_message(err), "already (one per process)"));
    loom_err_free(err);
    uint32_t gen = 0;
    CHECK(comm_shm_publish(seg, alone, 1, &gen) == NULL);
    CHECK(comm_shm_join(c, gen, comm_deadline_after_ms(5000)) == NULL);
    err = comm_shm_gradient_memory(c, 4096, &region);
    CHECK(err && loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT &&
          strstr(loom_err_message(err), "before joining"));
    loom_err_free(err);
    comm_close(c);
    comm_shm_destroy(seg);

    /* A segment without gradient regions offers none. */
    comm_shm_config config = {.max_ranks = 1, .max_buffer_bytes = 4096};
    segment_name(plan.segment, sizeof plan.segment, "inplace-none");
    CHECK(comm_shm_create(plan.segment, &config, &seg) == NULL);
    CHECK(comm_shm_attach(plan.segment, 0, &c) == NULL);
    err = comm_shm_gradient_memory(c, 4096, &region);
    CHECK(err && loom_err_code(err) == LOOM_ERR_RESOURCE_EXHAUSTED);
    loom_err_free(err);
    comm_close(c);
    comm_shm_destroy(seg);
}

int main(void)
{
    const uint32_t two[] = {0, 1};
    const uint32_t three[] = {0, 2, 3}; /* a gap: ranks follow slot order */
    const uint32_t four[] = {0, 1, 2, 3};
    run_group("inplace2", 2, two, MAX_WORKERS);
    run_group("inplace3", 3, three, MAX_WORKERS);
    run_group("inplace4", 4, four, MAX_WORKERS);
    run_group("fallback", 2, two, 1);
    test_disagreement();
    test_membership();
    test_gradient_memory_errors();
    return CHECK_DONE();
}

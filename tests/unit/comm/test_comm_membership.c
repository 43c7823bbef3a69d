/*
 * tests/unit/comm/test_comm_membership.c - elastic membership in the shm
 * back end: generations 3 -> 2 -> 4 members with exact results in each and
 * a weight broadcast to the joiners; a member SIGKILLed mid all-reduce
 * (peers get "died" errors, not a hang, and carry on without it); a hung
 * member (peers get a deadline error naming its slot, and carry on).
 */
#include "../../check.h"
#include "comm_test_util.h"

#define MAX_SLOTS 4
#define BUFFER_FLOATS 250000u /* 1 MB */
#define WEIGHT_BYTES (1u << 20)

typedef struct scenario {
    char segment[64];
    worker_report *reports; /* one per slot */
} scenario;

static comm_shm_segment *create_segment(scenario *s, const char *tag,
                                        uint64_t staging_bytes)
{
    segment_name(s->segment, sizeof(s->segment), tag);
    comm_shm_config config = {.max_ranks = MAX_SLOTS,
                              .max_buffer_bytes = 4u << 20,
                              .staging_bytes = staging_bytes};
    comm_shm_segment *seg = NULL;
    loom_error *err = comm_shm_create(s->segment, &config, &seg);
    if (err) {
        fprintf(stderr, "create: %s\n", loom_err_message(err));
        loom_err_free(err);
    }
    s->reports = reports_create(MAX_SLOTS);
    return seg;
}

/* Joins `generation`, all-reduces and checks the exact average over
 * `members`. Returns nonzero on failure. */
static int join_and_reduce(comm *c, int slot, uint32_t generation,
                           const uint32_t *members, uint32_t world)
{
    if (worker_failed(comm_shm_join(c, generation, comm_deadline_after_ms(10000)),
                      "join", slot))
        return 1;
    float *buf = malloc(BUFFER_FLOATS * sizeof(float));
    fill_values(buf, BUFFER_FLOATS, (uint32_t)slot, generation);
    int failed = worker_failed(comm_allreduce_avg_f32(c, buf, BUFFER_FLOATS,
                                                      comm_deadline_after_ms(10000)),
                               "allreduce", slot);
    size_t first = 0;
    if (!failed && count_wrong(buf, BUFFER_FLOATS, members, world, generation, &first)) {
        fprintf(stderr, "slot %d: generation %u average wrong at %zu\n", slot,
                generation, first);
        failed = 1;
    }
    free(buf);
    return failed;
}

/* ---- 3 -> 2 -> 4 ------------------------------------------------------ */

static const uint32_t gen1_members[] = {0, 1, 2};
static const uint32_t gen2_members[] = {0, 2};
static const uint32_t gen3_members[] = {0, 1, 2, 3};

static unsigned char weight_byte(size_t i) { return (unsigned char)(i * 37u + 11u); }

/* Generation 3 ends with rank 0 broadcasting its weights to everyone, as the
 * trainer does for joiners. */
static int receive_weights(comm *c, int slot)
{
    unsigned char *weights = malloc(WEIGHT_BYTES);
    for (size_t i = 0; i < WEIGHT_BYTES; i++)
        weights[i] = comm_rank(c) == 0 ? weight_byte(i) : 0;
    int failed = worker_failed(comm_broadcast(c, weights, WEIGHT_BYTES, 0,
                                              comm_deadline_after_ms(10000)),
                               "broadcast", slot);
    for (size_t i = 0; !failed && i < WEIGHT_BYTES; i++)
        if (weights[i] != weight_byte(i)) {
            fprintf(stderr, "slot %d: weight byte %zu wrong\n", slot, i);
            failed = 1;
        }
    free(weights);
    return failed;
}

/* Slots 0 and 2: in every generation. */
static int veteran(int slot, void *arg)
{
    scenario *s = arg;
    comm *c = NULL;
    if (worker_failed(comm_shm_attach(s->segment, (uint32_t)slot, &c), "attach", slot))
        return 1;
    int failed = join_and_reduce(c, slot, 1, gen1_members, 3);
    atomic_store(&s->reports[slot].stage, 1);
    failed = failed || join_and_reduce(c, slot, 2, gen2_members, 2);
    atomic_store(&s->reports[slot].stage, 2);
    failed = failed || join_and_reduce(c, slot, 3, gen3_members, 4);
    failed = failed || receive_weights(c, slot);
    if (!failed && (comm_generation(c) != 3 || comm_world_size(c) != 4)) {
        fprintf(stderr, "slot %d: in generation %u of %u members, expected 3 of 4\n",
                slot, comm_generation(c), comm_world_size(c));
        failed = 1;
    }
    comm_close(c);
    return failed;
}

/* Slot 1's first process: leaves after generation 1. */
static int leaver(int slot, void *arg)
{
    scenario *s = arg;
    comm *c = NULL;
    if (worker_failed(comm_shm_attach(s->segment, (uint32_t)slot, &c), "attach", slot))
        return 1;
    int failed = join_and_reduce(c, slot, 1, gen1_members, 3);
    comm_close(c);
    return failed;
}

/* Slot 1's second process and slot 3: join in generation 3. */
static int joiner(int slot, void *arg)
{
    scenario *s = arg;
    comm *c = NULL;
    if (worker_failed(comm_shm_attach(s->segment, (uint32_t)slot, &c), "attach", slot))
        return 1;
    int failed = join_and_reduce(c, slot, 3, gen3_members, 4);
    failed = failed || receive_weights(c, slot);
    comm_close(c);
    return failed;
}

static void test_generations_3_2_4(void)
{
    scenario s;
    comm_shm_segment *seg = create_segment(&s, "resize", 0);
    CHECK(seg != NULL);
    if (seg == NULL)
        return;
    uint32_t gen = 0;
    CHECK(comm_shm_publish(seg, gen1_members, 3, &gen) == NULL && gen == 1);
    pid_t v0 = spawn_worker(veteran, 0, &s);
    pid_t v2 = spawn_worker(veteran, 2, &s);
    pid_t l1 = spawn_worker(leaver, 1, &s);

    /* Slot 1 leaves at the step boundary; the coordinator then publishes
     * the smaller generation the veterans are waiting for. */
    CHECK_MSG(wait_worker(l1) == 0, "the leaving worker failed in generation 1");
    CHECK(comm_shm_publish(seg, gen2_members, 2, &gen) == NULL && gen == 2);

    CHECK(wait_stage(&s.reports[0], 2, 20000) && wait_stage(&s.reports[2], 2, 20000));
    CHECK(comm_shm_publish(seg, gen3_members, 4, &gen) == NULL && gen == 3);
    pid_t j1 = spawn_worker(joiner, 1, &s);
    pid_t j3 = spawn_worker(joiner, 3, &s);

    CHECK_MSG(wait_worker(v0) == 0, "veteran slot 0 failed");
    CHECK_MSG(wait_worker(v2) == 0, "veteran slot 2 failed");
    CHECK_MSG(wait_worker(j1) == 0, "joiner slot 1 failed");
    CHECK_MSG(wait_worker(j3) == 0, "joiner slot 3 failed");
    comm_shm_destroy(seg);
    munmap(s.reports, MAX_SLOTS * sizeof(worker_report));
}

/* ---- a member dies or hangs mid-operation ----------------------------- */

static const uint32_t trio[] = {0, 1, 2};
static const uint32_t pair[] = {0, 1};
#define FAILURE_FLOATS (1u << 20) /* 4 MB: many chunks of 256 KB staging */

/* Slots 0 and 1: all-reduce until the operation fails because of slot 2,
 * record the error, then carry on in generation 2 without it. `deadline_ms`
 * bounds each failing call. */
typedef struct failure_plan {
    scenario s;
    uint32_t deadline_ms;
} failure_plan;

static int survivor(int slot, void *arg)
{
    failure_plan *p = arg;
    worker_report *r = &p->s.reports[slot];
    comm *c = NULL;
    if (worker_failed(comm_shm_attach(p->s.segment, (uint32_t)slot, &c), "attach", slot))
        return 1;
    int failed = join_and_reduce(c, slot, 1, trio, 3);
    float *buf = malloc(FAILURE_FLOATS * sizeof(float));
    loom_error *err = NULL;
    uint64_t started = 0;
    for (int attempt = 0; !failed && err == NULL && attempt < 10000; attempt++) {
        fill_values(buf, FAILURE_FLOATS, (uint32_t)slot, 7);
        started = comm_now_ns();
        err = comm_allreduce_avg_f32(c, buf, FAILURE_FLOATS,
                                     comm_deadline_after_ms(p->deadline_ms));
    }
    free(buf);
    report_error(r, err, started);
    loom_err_free(err);
    atomic_store(&r->stage, 1);
    failed = failed || join_and_reduce(c, slot, 2, pair, 2);
    comm_close(c);
    return failed;
}

/* Slot 2, dying: all-reduces with the others until killed. */
static int victim(int slot, void *arg)
{
    failure_plan *p = arg;
    comm *c = NULL;
    if (worker_failed(comm_shm_attach(p->s.segment, (uint32_t)slot, &c), "attach", slot))
        return 1;
    if (join_and_reduce(c, slot, 1, trio, 3))
        return 1;
    float *buf = malloc(FAILURE_FLOATS * sizeof(float));
    atomic_store(&p->s.reports[slot].stage, 1);
    for (;;) {
        fill_values(buf, FAILURE_FLOATS, (uint32_t)slot, 7);
        loom_error *err = comm_allreduce_avg_f32(c, buf, FAILURE_FLOATS,
                                                 comm_deadline_after_ms(60000));
        if (err) /* only if the parent's kill is very late */
            loom_err_free(err);
    }
}

/* Slot 2, hung: in generation 1, then never calls again. */
static int hung(int slot, void *arg)
{
    failure_plan *p = arg;
    comm *c = NULL;
    if (worker_failed(comm_shm_attach(p->s.segment, (uint32_t)slot, &c), "attach", slot))
        return 1;
    if (join_and_reduce(c, slot, 1, trio, 3))
        return 1;
    atomic_store(&p->s.reports[slot].stage, 1);
    for (;;)
        pause();
}

static void run_failure(int (*third)(int, void *), const char *tag, uint32_t deadline_ms,
                        int kill_mid_operation, int32_t want_code, const char *want_text)
{
    failure_plan p = {.deadline_ms = deadline_ms};
    comm_shm_segment *seg = create_segment(&p.s, tag, 256u << 10);
    CHECK(seg != NULL);
    if (seg == NULL)
        return;
    uint32_t gen = 0;
    CHECK(comm_shm_publish(seg, trio, 3, &gen) == NULL);
    pid_t s0 = spawn_worker(survivor, 0, &p);
    pid_t s1 = spawn_worker(survivor, 1, &p);
    pid_t t2 = spawn_worker(third, 2, &p);

    CHECK(wait_stage(&p.s.reports[2], 1, 20000));
    if (kill_mid_operation) {
        struct timespec ts = {0, 5 * 1000 * 1000}; /* let the loop get going */
        nanosleep(&ts, NULL);
        kill(t2, SIGKILL);
    }
    /* The third process is not reaped yet: a killed one is a zombie, which
     * the survivors must still recognise as dead. */
    CHECK(wait_stage(&p.s.reports[0], 1, 30000) && wait_stage(&p.s.reports[1], 1, 30000));
    for (int slot = 0; slot < 2; slot++) {
        worker_report *r = &p.s.reports[slot];
        CHECK_MSG(r->error_code == want_code, "%s: slot %d got code %d (%s)", tag, slot,
                  r->error_code, r->error_message);
        CHECK_CONTAINS(r->error_message, "slot 2");
        CHECK_CONTAINS(r->error_message, want_text);
        printf("%s: slot %d failed after %.1f ms: %s\n", tag, slot, r->error_after_ms,
               r->error_message);
    }

    CHECK(comm_shm_publish(seg, pair, 2, &gen) == NULL && gen == 2);
    CHECK_MSG(wait_worker(s0) == 0, "%s: survivor 0 failed in generation 2", tag);
    CHECK_MSG(wait_worker(s1) == 0, "%s: survivor 1 failed in generation 2", tag);
    if (!kill_mid_operation)
        kill(t2, SIGKILL);
    CHECK(wait_worker(t2) == 128 + SIGKILL);
    comm_shm_destroy(seg);
    munmap(p.s.reports, MAX_SLOTS * sizeof(worker_report));
}

int main(void)
{
    test_generations_3_2_4();
    /* Killed: noticed through its pid, long before the 30 s deadline. */
    run_failure(victim, "killed", 30000, 1, LOOM_ERR_UNAVAILABLE, "died");
    /* Hung: only the deadline can tell. */
    run_failure(hung, "hung", 300, 0, LOOM_ERR_DEADLINE_EXCEEDED, "did not arrive");
    return CHECK_DONE();
}

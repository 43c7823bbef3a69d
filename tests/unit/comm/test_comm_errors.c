/*
 * tests/unit/comm/test_comm_errors.c - the shm back end refuses what it
 * cannot do, with an error that says what and why: a missing segment, a
 * slot out of range or held by a live process, a bad member list, a buffer
 * over capacity, a generation that is not published, not ours, or
 * superseded, and a member that never attaches. A slot left by a dead
 * process (even an unreaped one) can be taken again.
 */
#include <fcntl.h>

#include "../../check.h"
#include "comm_test_util.h"

#define CAPACITY_BYTES 4096u

static char segment[64];

/* Checks that `err` has `code` and mentions `text`, then frees it. */
static void expect_error(loom_error *err, int32_t code, const char *text)
{
    CHECK_MSG(err != NULL, "expected an error mentioning '%s'", text);
    if (err == NULL)
        return;
    CHECK_MSG(loom_err_code(err) == code, "code %d, expected %d: %s", loom_err_code(err),
              code, loom_err_message(err));
    CHECK_CONTAINS(loom_err_message(err), text);
    loom_err_free(err);
}

static void test_attach_errors(comm_shm_segment *seg)
{
    (void)seg;
    comm *c = NULL;
    expect_error(comm_shm_attach("/loom-test-comm-no-such-segment", 0, &c),
                 LOOM_ERR_NOT_FOUND, "'/loom-test-comm-no-such-segment' does not exist");
    CHECK(c == NULL);
    expect_error(comm_shm_attach(segment, 5, &c), LOOM_ERR_INVALID_ARGUMENT,
                 "slot 5 is out of range (slots 0..1)");
    expect_error(comm_shm_attach("no-slash", 0, &c), LOOM_ERR_INVALID_ARGUMENT,
                 "expected '/name'");

    /* Something in /dev/shm that is not ours. */
    char foreign[80];
    segment_name(foreign, sizeof(foreign), "foreign");
    int fd = shm_open(foreign, O_CREAT | O_RDWR, 0600);
    CHECK(fd >= 0 && ftruncate(fd, 8192) == 0);
    expect_error(comm_shm_attach(foreign, 0, &c), LOOM_ERR_INVALID_ARGUMENT,
                 "no loom comm header");
    close(fd);
    shm_unlink(foreign);

    comm *first = NULL;
    CHECK(comm_shm_attach(segment, 0, &first) == NULL && first != NULL);
    CHECK_STR_EQ(comm_backend_name(first), "shm");
    char held[64];
    snprintf(held, sizeof(held), "slot 0 is already attached by pid %d", (int)getpid());
    expect_error(comm_shm_attach(segment, 0, &c), LOOM_ERR_ALREADY_EXISTS, held);

    float x = 1.0f;
    expect_error(comm_allreduce_avg_f32(first, &x, 1, comm_deadline_after_ms(100)),
                 LOOM_ERR_INVALID_ARGUMENT, "join one first");
    comm_close(first);

    /* Closing frees the slot for the next process. */
    CHECK(comm_shm_attach(segment, 0, &first) == NULL);
    comm_close(first);
}

static void test_create_and_publish_errors(comm_shm_segment *seg)
{
    comm_shm_config config = {.max_ranks = 2, .max_buffer_bytes = CAPACITY_BYTES};
    comm_shm_segment *again = NULL;
    expect_error(comm_shm_create(segment, &config, &again), LOOM_ERR_ALREADY_EXISTS,
                 "cannot create");
    expect_error(comm_shm_create("/a/b", &config, &again), LOOM_ERR_INVALID_ARGUMENT,
                 "no other '/'");
    comm_shm_config bad = {.max_ranks = 0, .max_buffer_bytes = 4};
    expect_error(comm_shm_create("/loom-test-comm-bad", &bad, &again),
                 LOOM_ERR_INVALID_ARGUMENT, "max_ranks must be 1..256, got 0");

    uint32_t gen = 0;
    const uint32_t out_of_range[] = {0, 2};
    expect_error(comm_shm_publish(seg, out_of_range, 2, &gen), LOOM_ERR_INVALID_ARGUMENT,
                 "member slot 2 is out of range 0..1");
    const uint32_t twice[] = {1, 1};
    expect_error(comm_shm_publish(seg, twice, 2, &gen), LOOM_ERR_INVALID_ARGUMENT,
                 "member slot 1 is listed twice");
    expect_error(comm_shm_publish(seg, twice, 0, &gen), LOOM_ERR_INVALID_ARGUMENT,
                 "needs 1..2 member slots, got 0");
    CHECK(comm_shm_published_generation(seg) == 0);
}

static void test_join_and_capacity_errors(comm_shm_segment *seg)
{
    comm *c = NULL;
    CHECK(comm_shm_attach(segment, 0, &c) == NULL);
    if (c == NULL)
        return;
    expect_error(comm_shm_join(c, 1, comm_deadline_after_ms(50)),
                 LOOM_ERR_DEADLINE_EXCEEDED, "generation 1 was not published");

    uint32_t gen = 0;
    const uint32_t only_one[] = {1};
    CHECK(comm_shm_publish(seg, only_one, 1, &gen) == NULL && gen == 1);
    expect_error(comm_shm_join(c, 1, comm_deadline_after_ms(1000)), LOOM_ERR_NOT_FOUND,
                 "slot 0 is not a member of generation 1 (members: 1)");

    const uint32_t only_zero[] = {0};
    CHECK(comm_shm_publish(seg, only_zero, 1, &gen) == NULL && gen == 2);
    expect_error(comm_shm_join(c, 1, comm_deadline_after_ms(1000)), LOOM_ERR_UNAVAILABLE,
                 "generation 1 was superseded by generation 2");
    CHECK(comm_shm_join(c, 2, comm_deadline_after_ms(1000)) == NULL);
    CHECK(comm_world_size(c) == 1 && comm_rank(c) == 0 && comm_generation(c) == 2);
    expect_error(comm_shm_join(c, 2, comm_deadline_after_ms(1000)),
                 LOOM_ERR_INVALID_ARGUMENT, "slot 0 is already in generation 2");

    /* Alone, the average is the buffer itself; over capacity is refused. */
    size_t fits = CAPACITY_BYTES / sizeof(float);
    float *buf = calloc(fits + 1, sizeof(float));
    buf[0] = 3.5f;
    CHECK(comm_allreduce_avg_f32(c, buf, fits, comm_deadline_after_ms(1000)) == NULL);
    CHECK(buf[0] == 3.5f);
    expect_error(comm_allreduce_avg_f32(c, buf, fits + 1, comm_deadline_after_ms(1000)),
                 LOOM_ERR_RESOURCE_EXHAUSTED, "4100 bytes exceed shm segment");
    expect_error(comm_broadcast(c, buf, CAPACITY_BYTES + 1, 0, comm_deadline_after_ms(1000)),
                 LOOM_ERR_RESOURCE_EXHAUSTED, "capacity of 4096 bytes");
    expect_error(comm_broadcast(c, buf, 4, 1, comm_deadline_after_ms(1000)),
                 LOOM_ERR_INVALID_ARGUMENT, "root rank 1 is out of range (world size 1)");
    free(buf);

    /* Slot 1 never attaches: the join barrier says so instead of waiting on. */
    const uint32_t both[] = {0, 1};
    CHECK(comm_shm_publish(seg, both, 2, &gen) == NULL && gen == 3);
    expect_error(comm_shm_join(c, 3, comm_deadline_after_ms(100)),
                 LOOM_ERR_DEADLINE_EXCEEDED, "slot 1 did not attach within");
    comm_close(c);
}

/* A child that takes slot 1, then dies without detaching. */
static int crash_holding_slot(int index, void *arg)
{
    (void)index;
    (void)arg;
    comm *c = NULL;
    if (comm_shm_attach(segment, 1, &c) != NULL)
        return 1;
    raise(SIGKILL);
    return 1;
}

static void test_dead_holder_slot_is_reusable(void)
{
    pid_t child = spawn_worker(crash_holding_slot, 1, NULL);
    /* Wait for its death but leave it a zombie. */
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    CHECK(waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT) == 0);
    CHECK(info.si_code == CLD_KILLED);
    comm *c = NULL;
    loom_error *err = comm_shm_attach(segment, 1, &c);
    CHECK_MSG(err == NULL, "%s", err ? loom_err_message(err) : "");
    loom_err_free(err);
    comm_close(c);
    CHECK(wait_worker(child) == 128 + SIGKILL);
}

/* The coordinator publishing a new generation interrupts a member that is
 * waiting in the old one. */
static int wait_in_barrier(int index, void *arg)
{
    worker_report *report = arg;
    comm *c = NULL;
    if (worker_failed(comm_shm_attach(segment, 1, &c), "attach", index) ||
        worker_failed(comm_shm_join(c, 4, comm_deadline_after_ms(10000)), "join", index))
        return 1;
    atomic_store(&report->stage, 1);
    uint64_t started = comm_now_ns();
    loom_error *err = comm_barrier(c, comm_deadline_after_ms(20000));
    report_error(report, err, started);
    loom_err_free(err);
    comm_close(c);
    return 0;
}

static void test_superseded_mid_call(comm_shm_segment *seg)
{
    worker_report *report = reports_create(1);
    uint32_t gen = 0;
    const uint32_t both[] = {0, 1};
    CHECK(comm_shm_publish(seg, both, 2, &gen) == NULL && gen == 4);
    comm *c = NULL;
    CHECK(comm_shm_attach(segment, 0, &c) == NULL);
    pid_t child = spawn_worker(wait_in_barrier, 1, report);
    CHECK(comm_shm_join(c, 4, comm_deadline_after_ms(10000)) == NULL);
    CHECK(wait_stage(report, 1, 10000));
    /* This member never enters the barrier; the coordinator moves on. */
    const uint32_t only_zero[] = {0};
    CHECK(comm_shm_publish(seg, only_zero, 1, &gen) == NULL && gen == 5);
    CHECK(wait_worker(child) == 0);
    CHECK(report->error_code == LOOM_ERR_UNAVAILABLE);
    CHECK_CONTAINS(report->error_message, "generation 4 was superseded by generation 5");
    CHECK(comm_shm_join(c, 5, comm_deadline_after_ms(1000)) == NULL);
    CHECK(comm_barrier(c, comm_deadline_after_ms(1000)) == NULL);
    comm_close(c);
    munmap(report, sizeof(worker_report));
}

int main(void)
{
    segment_name(segment, sizeof(segment), "errors");
    comm_shm_config config = {.max_ranks = 2, .max_buffer_bytes = CAPACITY_BYTES};
    comm_shm_segment *seg = NULL;
    loom_error *err = comm_shm_create(segment, &config, &seg);
    CHECK_MSG(err == NULL, "%s", err ? loom_err_message(err) : "");
    if (err) {
        loom_err_free(err);
        return CHECK_DONE();
    }
    test_attach_errors(seg);
    test_create_and_publish_errors(seg);
    test_join_and_capacity_errors(seg);
    test_dead_holder_slot_is_reusable();
    test_superseded_mid_call(seg);
    comm_shm_destroy(seg);

    comm *c = NULL;
    expect_error(comm_shm_attach(segment, 0, &c), LOOM_ERR_NOT_FOUND, "does not exist");
    return CHECK_DONE();
}

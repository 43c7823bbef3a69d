/*
 * tests/unit/comm/test_net_member.c - the "net" back end of comm.h
 * (comm_net_member_*): members as threads on 127.0.0.1, each listening on
 * one port for its life. Generation 1 of three: average, a broadcast of an
 * odd byte count, a barrier; generation 2 of two of them on the same
 * ports, while a connection claiming generation 1 knocks; generation 3
 * with an intruder that holds another secret; generation 4 recovers while
 * a silent client holds a connection; generation 6 formed by a member that
 * another one, still in generation 5, turned away at first; a broadcast
 * whose root never comes; a generation of one; the arguments a join
 * refuses.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "comm.h"
#include "util/error.h"
#include "wait.h"

#define MEMBERS 3
#define CALL_MS 10000
#define BROADCAST_BYTES 1000003u
#define FLOATS 1001u

/* One member's part in one generation. */
typedef struct member_run {
    comm *c;
    const comm_net_peer *peers;
    uint32_t count, rank, generation;
    void (*script)(struct member_run *r); /* after a successful join */
    uint32_t join_ms;                     /* 0: CALL_MS */
    int32_t code;                         /* of the join's error; 0: joined */
    char message[512];
    float *floats;
    unsigned char *bytes;
} member_run;

static member_run runs[MEMBERS + 1];
static _Atomic int arrived, left_barrier;

static void *member_thread(void *arg)
{
    member_run *r = arg;
    if (r->floats) /* NaN: no earlier generation's averages pass for this one's */
        memset(r->floats, 0xff, FLOATS * sizeof(float));
    loom_error *err = comm_net_member_join(r->c, r->generation, r->peers, r->count, r->rank,
                                           comm_deadline_after_ms(r->join_ms ? r->join_ms
                                                                             : CALL_MS));
    int joined = err == NULL;
    r->code = err ? loom_err_code(err) : 0;
    snprintf(r->message, sizeof(r->message), "%s", err ? loom_err_message(err) : "");
    loom_err_free(err);
    if (joined && r->script)
        r->script(r);
    return NULL;
}

/* Runs members[0..n) of one generation, member i as rank i. */
static void run_generation(member_run **members, uint32_t n, uint32_t generation,
                           void (*script)(member_run *), uint32_t join_ms)
{
    comm_net_peer peers[MEMBERS + 1];
    pthread_t threads[MEMBERS + 1];
    for (uint32_t i = 0; i < n; i++) {
        snprintf(peers[i].address, sizeof(peers[i].address), "127.0.0.1");
        peers[i].port = comm_net_member_port(members[i]->c);
    }
    for (uint32_t i = 0; i < n; i++) {
        member_run *r = members[i];
        r->peers = peers;
        r->count = n;
        r->rank = i;
        r->generation = generation;
        r->script = script;
        r->join_ms = join_ms;
        r->code = 0;
        r->message[0] = '\0';
        pthread_create(&threads[i], NULL, member_thread, r);
    }
    for (uint32_t i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
}

/* Small whole numbers: every order of the sum gives the same bits, so the
 * average is the sum times (float)(1 / world), as comm.h says. */
static float input(uint32_t rank, size_t i) { return (float)((i * 7 + rank * 13) % 101); }

static float expected_average(uint32_t world, size_t i)
{
    float sum = 0.0f;
    for (uint32_t r = 0; r < world; r++)
        sum += input(r, i);
    return sum * (float)(1.0 / world);
}

static unsigned char pattern(size_t i) { return (unsigned char)(i * 31u + (i >> 9)); }

static void average(member_run *r)
{
    for (size_t i = 0; i < FLOATS; i++)
        r->floats[i] = input(r->rank, i);
    CHECK_OK(comm_allreduce_avg_f32(r->c, r->floats, FLOATS, comm_deadline_after_ms(CALL_MS)));
}

/* Generation 1: the average, rank 1's bytes everywhere, then a barrier
 * that rank 2 reaches last, after the others are in it. */
static void first_generation(member_run *r)
{
    average(r);
    for (size_t i = 0; i < BROADCAST_BYTES; i++)
        r->bytes[i] = r->rank == 1 ? pattern(i) : 0xee;
    CHECK_OK(comm_broadcast(r->c, r->bytes, BROADCAST_BYTES, 1,
                            comm_deadline_after_ms(CALL_MS)));
    if (r->rank == 2) {
        WAIT_UNTIL(atomic_load(&arrived) == 2, CALL_MS);
        CHECK(atomic_load(&arrived) == 2);
        CHECK_MSG(atomic_load(&left_barrier) == 0, "a member left the barrier before rank 2 "
                  "arrived");
    }
    atomic_fetch_add(&arrived, 1);
    CHECK_OK(comm_barrier(r->c, comm_deadline_after_ms(CALL_MS)));
    atomic_fetch_add(&left_barrier, 1);
    CHECK_MSG(atomic_load(&arrived) == 3, "rank %u left the barrier with %d members in it",
              r->rank, atomic_load(&arrived));
}

static void check_averages(member_run **members, uint32_t n)
{
    for (uint32_t m = 0; m < n; m++) {
        size_t wrong = 0;
        for (size_t i = 0; i < FLOATS; i++)
            wrong += members[m]->floats[i] != expected_average(n, i);
        CHECK_MSG(wrong == 0, "world %u, rank %u: %zu of %u averages wrong", n, m, wrong,
                  FLOATS);
    }
}

static void test_first_generation(void)
{
    member_run *members[MEMBERS] = {&runs[0], &runs[1], &runs[2]};
    run_generation(members, MEMBERS, 1, first_generation, 0);
    for (uint32_t m = 0; m < MEMBERS; m++) {
        CHECK_MSG(runs[m].code == 0, "member %u joining generation 1: %s", m, runs[m].message);
        CHECK_STR_EQ(comm_backend_name(runs[m].c), "net");
        CHECK(comm_rank(runs[m].c) == m && comm_world_size(runs[m].c) == MEMBERS);
        CHECK(comm_generation(runs[m].c) == 1);
        size_t wrong = 0;
        for (size_t i = 0; i < BROADCAST_BYTES; i++)
            wrong += runs[m].bytes[i] != pattern(i);
        CHECK_MSG(wrong == 0, "member %u: %zu of %u broadcast bytes differ from root 1's", m,
                  wrong, BROADCAST_BYTES);
    }
    check_averages(members, MEMBERS);
}

/* A client connected to 127.0.0.1 `port`. */
static int connect_to(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    CHECK(connect(fd, (struct sockaddr *)&to, sizeof(to)) == 0);
    return fd;
}

/* Connects to `port` and says hello as rank `rank` of `world` in
 * `generation`, the way net_allreduce.c's handshake begins: "LOOMNAR1",
 * rank, world and generation as big-endian 32-bit numbers, a 32-byte
 * nonce. */
static int knock(uint16_t port, uint32_t rank, uint32_t world, uint32_t generation)
{
    int fd = connect_to(port);
    unsigned char hello[8 + 12 + 32] = "LOOMNAR1";
    uint32_t fields[3] = {htonl(rank), htonl(world), htonl(generation)};
    memcpy(hello + 8, fields, sizeof(fields));
    CHECK(send(fd, hello, sizeof(hello), MSG_NOSIGNAL) == (ssize_t)sizeof(hello));
    return fd;
}

/* Whether the other end closed fd (within the call's time). */
static int closed_by_peer(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c;
    return poll(&p, 1, CALL_MS) == 1 && read(fd, &c, 1) == 0;
}

/* Generation 2: members 1 and 0 (ranks 0 and 1), member 2 gone. Before it
 * forms, a slow peer of generation 1 knocks on member 1's port (rank 0) as
 * rank 1 of 2, its left neighbour's place in generation 2: only the
 * generation tells it apart. It is refused, and the generation forms all the same. */
static void test_second_generation(void)
{
    comm_close(runs[2].c);
    runs[2].c = NULL;
    int stale = knock(comm_net_member_port(runs[1].c), 1, 2, 1);
    member_run *members[2] = {&runs[1], &runs[0]};
    uint64_t waited = comm_wait_ns(runs[0].c);
    run_generation(members, 2, 2, average, 0);
    for (uint32_t m = 0; m < 2; m++) {
        CHECK_MSG(members[m]->code == 0, "rank %u joining generation 2: %s", m,
                  members[m]->message);
        CHECK(comm_rank(members[m]->c) == m && comm_world_size(members[m]->c) == 2);
        CHECK(comm_generation(members[m]->c) == 2);
    }
    check_averages(members, 2);
    CHECK_MSG(closed_by_peer(stale), "the generation 1 connection was not refused");
    close(stale);
    CHECK(comm_wait_ns(runs[0].c) > waited);
}

/* After generation 3 failed, generation 4 of members 0 and 1 forms although a client connected to
 * member 0's port first and says nothing: member 0 closes it after
 * COMM_NET_HELLO_WAIT_MS, well before the 5 s the join may take. */
static void test_silent_client(void)
{
    int fd = connect_to(comm_net_member_port(runs[0].c));
    member_run *members[2] = {&runs[0], &runs[1]};
    run_generation(members, 2, 4, average, 5000);
    CHECK_MSG(runs[0].code == 0 && runs[1].code == 0, "generation 4: %s / %s",
              runs[0].message, runs[1].message);
    check_averages(members, 2);
    CHECK_MSG(closed_by_peer(fd), "the silent client was not closed");
    close(fd);
}

/* Generation 3 has an intruder in the middle with another secret: every
 * member is refused and its neighbours name it; the members are then in
 * no ring until generation 4, which forms without it. */
static void test_wrong_secret(void)
{
    uint8_t other[COMM_NET_SECRET_BYTES];
    memset(other, 0x5a, sizeof(other));
    CHECK_OK(comm_net_member_open("127.0.0.1", other, 0, &runs[MEMBERS].c));
    member_run *members[3] = {&runs[0], &runs[MEMBERS], &runs[1]};
    run_generation(members, 3, 3, average, 0);
    for (uint32_t m = 0; m < 3; m++)
        CHECK_MSG(members[m]->code == LOOM_E_UNAUTHENTICATED, "rank %u: code %d, %s", m,
                  members[m]->code, members[m]->message);
    CHECK_CONTAINS(runs[0].message, "(rank 1) did not prove the job's secret");
    CHECK_CONTAINS(runs[1].message, "(rank 1) did not prove the job's secret");
    comm_close(runs[MEMBERS].c);
    runs[MEMBERS].c = NULL;
    float v = 1.0f;
    loom_error *err = comm_allreduce_avg_f32(runs[0].c, &v, 1, comm_deadline_after_ms(100));
    CHECK(loom_err_code(err) == LOOM_ERR_UNAVAILABLE);
    CHECK_CONTAINS(loom_err_message(err), "generation 3 did not form");
    loom_err_free(err);
    CHECK(comm_world_size(runs[0].c) == 0);

}

/* A listening socket of the test's on 127.0.0.1: a peer that takes
 * connections (into its backlog) and never answers. */
static int mute_listener(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in at = {.sin_family = AF_INET};
    socklen_t len = sizeof(at);
    inet_pton(AF_INET, "127.0.0.1", &at.sin_addr);
    CHECK(bind(fd, (struct sockaddr *)&at, sizeof(at)) == 0 && listen(fd, 4) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&at, &len) == 0);
    *port = ntohs(at.sin_port);
    return fd;
}

/* Member 0 joins generation 6 while member 1 still waits in generation 5
 * for a left neighbour that never comes: member 1 refuses member 0's
 * connection, then gives generation 5 up at its deadline and joins 6, and
 * member 0, connecting again, forms generation 6 with it. */
static void test_newer_generation_waits(void)
{
    uint16_t mute_port = 0;
    int mute = mute_listener(&mute_port);
    comm_net_peer older[3] = {{"127.0.0.1", mute_port},
                              {"127.0.0.1", comm_net_member_port(runs[1].c)},
                              {"127.0.0.1", mute_port}};
    comm_net_peer newer[2] = {{"127.0.0.1", comm_net_member_port(runs[0].c)},
                              {"127.0.0.1", comm_net_member_port(runs[1].c)}};
    runs[0] = (member_run){.c = runs[0].c, .peers = newer, .count = 2, .rank = 0,
                           .generation = 6, .script = average, .floats = runs[0].floats,
                           .bytes = runs[0].bytes};
    pthread_t first;
    pthread_create(&first, NULL, member_thread, &runs[0]);
    loom_error *err = comm_net_member_join(runs[1].c, 5, older, 3, 1,
                                           comm_deadline_after_ms(2000));
    CHECK(loom_err_code(err) == LOOM_ERR_DEADLINE_EXCEEDED);
    CHECK_CONTAINS(loom_err_message(err), "refused: 127.0.0.1 said it is rank 0 of 2 in "
                   "generation 6");
    loom_err_free(err);
    runs[1].peers = newer;
    runs[1].count = 2;
    runs[1].rank = 1;
    runs[1].generation = 6;
    runs[1].script = average;
    runs[1].join_ms = 0;
    member_thread(&runs[1]);
    pthread_join(first, NULL);
    CHECK_MSG(runs[0].code == 0 && runs[1].code == 0, "generation 6: %s / %s",
              runs[0].message, runs[1].message);
    member_run *members[2] = {&runs[0], &runs[1]};
    check_averages(members, 2);
    close(mute);
}

/* Generation 7 of members 0 and 1: member 1 never calls the broadcast
 * it roots; member 0 gives up at its deadline naming it, and its ring then
 * refuses every call until the next join. */
static void test_broadcast_deadline(void)
{
    member_run *members[2] = {&runs[0], &runs[1]};
    run_generation(members, 2, 7, NULL, 0);
    CHECK_MSG(runs[0].code == 0 && runs[1].code == 0, "generation 7: %s / %s",
              runs[0].message, runs[1].message);
    uint64_t started = comm_now_ns();
    loom_error *err = comm_broadcast(runs[0].c, runs[0].bytes, 5, 1,
                                     comm_deadline_after_ms(300));
    double ms = (double)(comm_now_ns() - started) / 1e6;
    CHECK(loom_err_code(err) == LOOM_ERR_DEADLINE_EXCEEDED);
    CHECK_CONTAINS(loom_err_message(err), "rank 1 did not answer before the deadline during "
                   "a broadcast");
    CHECK_MSG(ms >= 299 && ms < 5000, "the broadcast gave up after %.0f ms (deadline 300)",
              ms);
    loom_err_free(err);
    err = comm_barrier(runs[0].c, comm_deadline_after_ms(100));
    CHECK(loom_err_code(err) == LOOM_ERR_UNAVAILABLE);
    CHECK_CONTAINS(loom_err_message(err), "failed earlier");
    loom_err_free(err);
}

/* A generation of one: every collective succeeds at once, without a
 * peer. */
static void test_alone(const uint8_t *secret)
{
    comm *c = NULL;
    CHECK_OK(comm_net_member_open("127.0.0.1", secret, 0, &c));
    comm_net_peer self = {"127.0.0.1", comm_net_member_port(c)};
    CHECK_OK(comm_net_member_join(c, 1, &self, 1, 0, comm_deadline_after_ms(CALL_MS)));
    float v[2] = {3.0f, -1.5f};
    unsigned char b[3] = {1, 2, 3};
    CHECK_OK(comm_allreduce_avg_f32(c, v, 2, comm_deadline_after_ms(100)));
    CHECK(v[0] == 3.0f && v[1] == -1.5f);
    CHECK_OK(comm_broadcast(c, b, 3, 0, comm_deadline_after_ms(100)));
    CHECK(b[0] == 1 && b[2] == 3);
    CHECK_OK(comm_barrier(c, comm_deadline_after_ms(100)));
    CHECK(comm_world_size(c) == 1 && comm_generation(c) == 1);
    comm_close(c);
}

static void test_arguments(const uint8_t *secret)
{
    comm *c = NULL;
    CHECK_OK(comm_net_member_open("127.0.0.1", secret, 0, &c));
    uint16_t port = comm_net_member_port(c);
    CHECK(port != 0);
    comm_net_peer self = {"127.0.0.1", (uint16_t)(port + 1)};
    loom_error *err = comm_net_member_join(c, 1, &self, 1, 0, comm_deadline_after_ms(100));
    CHECK(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(loom_err_message(err), "expected the port it listens on");
    loom_err_free(err);
    self.port = port;
    CHECK_OK(comm_net_member_join(c, 2, &self, 1, 0, comm_deadline_after_ms(100)));
    err = comm_net_member_join(c, 2, &self, 1, 0, comm_deadline_after_ms(100));
    CHECK(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(loom_err_message(err), "expected one newer than generation 2");
    loom_err_free(err);
    err = comm_net_member_join(c, 3, &self, 1, 1, comm_deadline_after_ms(100));
    CHECK(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    loom_err_free(err);
    comm_close(c);
    err = comm_net_member_open("localhost", secret, 0, &c);
    CHECK(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT && c == NULL);
    loom_err_free(err);
}

int main(void)
{
    uint8_t secret[COMM_NET_SECRET_BYTES];
    memset(secret, 0xa5, sizeof(secret));
    for (uint32_t m = 0; m < MEMBERS; m++) {
        CHECK_OK(comm_net_member_open("127.0.0.1", secret, 0, &runs[m].c));
        runs[m].floats = malloc(FLOATS * sizeof(float));
        runs[m].bytes = malloc(BROADCAST_BYTES);
    }
    test_arguments(secret);
    test_alone(secret);
    test_first_generation();
    test_second_generation();
    test_wrong_secret();
    test_silent_client();
    test_newer_generation_waits();
    test_broadcast_deadline();
    for (uint32_t m = 0; m < MEMBERS; m++) {
        comm_close(runs[m].c);
        free(runs[m].floats);
        free(runs[m].bytes);
    }
    return CHECK_DONE();
}

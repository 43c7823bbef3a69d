/*
 * tests/unit/comm/test_net_allreduce.c - the all-reduce between nodes
 * (net_allreduce.h) with K peers as threads on 127.0.0.1: sums of several
 * sizes against the documented ring order, bitwise equal on every peer;
 * a wrong secret refused; a stray connection ignored; a peer that closes
 * mid-all-reduce and a silent peer, each failing the others in time.
 */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "comm.h"
#include "net_allreduce.h"
#include "util/error.h"
#include "wait.h"

#define MAX_TEST_PEERS 4
#define SETUP_MS 10000

/* One peer thread: what it does and what came of it. */
typedef struct peer_run {
    comm_net *g;
    comm_net_peer *peers;
    uint32_t world, rank;
    uint32_t generation;   /* 0: 7 */
    uint32_t setup_ms;     /* 0: SETUP_MS */
    uint8_t secret[COMM_NET_SECRET_BYTES];
    void *buf;
    size_t count;
    comm_net_type type;
    double scale;
    uint32_t deadline_ms;  /* of the all-reduce; 0: connect only */
    int close_after;       /* close the group right after its call */
    _Atomic int *go;       /* when set, wait for it before the all-reduce */
    int32_t code;          /* of the first error */
    char message[512];
    double call_ms;        /* how long the all-reduce took */
} peer_run;

static void record(peer_run *r, loom_error *err)
{
    if (err && r->code == 0) {
        r->code = loom_err_code(err);
        snprintf(r->message, sizeof(r->message), "%s", loom_err_message(err));
    }
    loom_err_free(err);
}

static void *connect_thread(void *arg)
{
    peer_run *r = arg;
    record(r, comm_net_connect(r->g, r->peers, r->world, r->rank,
                               r->generation ? r->generation : 7, r->secret,
                               comm_deadline_after_ms(r->setup_ms ? r->setup_ms : SETUP_MS)));
    return NULL;
}

static void *sum_thread(void *arg)
{
    peer_run *r = arg;
    if (r->go)
        WAIT_UNTIL(atomic_load(r->go), SETUP_MS);
    uint64_t started = comm_now_ns();
    record(r, comm_net_allreduce(r->g, r->buf, r->count, r->type, r->scale,
                                 comm_deadline_after_ms(r->deadline_ms)));
    r->call_ms = (double)(comm_now_ns() - started) / 1e6;
    if (r->close_after) {
        comm_net_close(r->g);
        r->g = NULL;
    }
    return NULL;
}

static void run_all(peer_run *runs, uint32_t world, void *(*fn)(void *))
{
    pthread_t threads[MAX_TEST_PEERS];
    for (uint32_t i = 0; i < world; i++)
        pthread_create(&threads[i], NULL, fn, &runs[i]);
    for (uint32_t i = 0; i < world; i++)
        pthread_join(threads[i], NULL);
}

/* K groups listening on 127.0.0.1, the list of their addresses, and every
 * peer's run with the same secret (bad_rank, when below world, gets
 * another). */
static void make_ring(peer_run *runs, comm_net_peer *peers, uint32_t world,
                      uint32_t bad_rank)
{
    memset(runs, 0, sizeof(*runs) * world);
    for (uint32_t i = 0; i < world; i++) {
        CHECK_OK(comm_net_listen("127.0.0.1", 0, &runs[i].g));
        snprintf(peers[i].address, sizeof(peers[i].address), "127.0.0.1");
        peers[i].port = comm_net_port(runs[i].g);
        runs[i].peers = peers;
        runs[i].world = world;
        runs[i].rank = i;
        memset(runs[i].secret, i == bad_rank ? 0x5a : 0xa5, COMM_NET_SECRET_BYTES);
    }
}

static void close_ring(peer_run *runs, uint32_t world)
{
    for (uint32_t i = 0; i < world; i++) {
        comm_net_close(runs[i].g);
        runs[i].g = NULL;
    }
}

/* Values of many magnitudes, so that a different order of the sum gives
 * different bits. */
static double input_value(uint32_t rank, size_t i)
{
    uint64_t x = (uint64_t)(i + 1) * 2654435761u + (uint64_t)rank * 40503u;
    x ^= x >> 13;
    double mantissa = (double)(x % 100003) / 100003.0 - 0.5;
    return ldexp(mantissa, (int)(x % 24) - 12);
}

/* The ring's documented order: segment j summed from rank j on, then
 * scaled. */
static double expected_f64(uint32_t world, size_t count, size_t i, double scale)
{
    uint32_t j = 0;
    while ((size_t)(j + 1) * count / world <= i)
        j++;
    double acc = input_value(j, i);
    for (uint32_t m = 1; m < world; m++)
        acc = acc + input_value((j + m) % world, i);
    return scale == 1.0 ? acc : acc * scale;
}

static float expected_f32(uint32_t world, size_t count, size_t i, float scale)
{
    uint32_t j = 0;
    while ((size_t)(j + 1) * count / world <= i)
        j++;
    float acc = (float)input_value(j, i);
    for (uint32_t m = 1; m < world; m++)
        acc = acc + (float)input_value((j + m) % world, i);
    return scale == 1.0f ? acc : acc * scale;
}

/* One all-reduce of `count` elements on a connected ring; checks every
 * peer against the reference and peer 0 bit for bit. */
static void check_sum(peer_run *runs, uint32_t world, size_t count, comm_net_type type,
                      double scale)
{
    size_t esize = type == COMM_NET_F32 ? sizeof(float) : sizeof(double);
    for (uint32_t r = 0; r < world; r++) {
        runs[r].buf = malloc(count * esize);
        for (size_t i = 0; i < count; i++) {
            if (type == COMM_NET_F32)
                ((float *)runs[r].buf)[i] = (float)input_value(r, i);
            else
                ((double *)runs[r].buf)[i] = input_value(r, i);
        }
        runs[r].count = count;
        runs[r].type = type;
        runs[r].scale = scale;
        runs[r].deadline_ms = 30000;
        runs[r].code = 0;
    }
    run_all(runs, world, sum_thread);
    size_t wrong = 0, first_wrong = 0;
    for (size_t i = 0; i < count; i++) {
        int ok = type == COMM_NET_F32
                     ? ((float *)runs[0].buf)[i] == expected_f32(world, count, i, (float)scale)
                     : ((double *)runs[0].buf)[i] == expected_f64(world, count, i, scale);
        if (!ok && wrong++ == 0)
            first_wrong = i;
    }
    CHECK_MSG(wrong == 0, "K=%u, %zu elements (%s): %zu differ from the ring order's sum, "
              "first at %zu", world, count, type == COMM_NET_F32 ? "f32" : "f64", wrong,
              first_wrong);
    for (uint32_t r = 0; r < world; r++) {
        CHECK_MSG(runs[r].code == 0, "K=%u rank %u: %s", world, r, runs[r].message);
        CHECK_MSG(memcmp(runs[r].buf, runs[0].buf, count * esize) == 0,
                  "K=%u, %zu elements: rank %u differs from rank 0", world, count, r);
    }
    for (uint32_t r = 0; r < world; r++) {
        free(runs[r].buf);
        runs[r].buf = NULL;
    }
}

static void test_sums(void)
{
    static const size_t sizes[] = {1, 7, 1000, 2700000 / sizeof(float)};
    for (uint32_t world = 2; world <= MAX_TEST_PEERS; world++) {
        peer_run runs[MAX_TEST_PEERS];
        comm_net_peer peers[MAX_TEST_PEERS];
        make_ring(runs, peers, world, UINT32_MAX);
        run_all(runs, world, connect_thread);
        for (uint32_t r = 0; r < world; r++) {
            CHECK_MSG(runs[r].code == 0, "K=%u rank %u connect: %s", world, r, runs[r].message);
            CHECK(comm_net_rank(runs[r].g) == r);
            CHECK(comm_net_world_size(runs[r].g) == world);
        }
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
            check_sum(runs, world, sizes[s], COMM_NET_F32, 1.0 / world);
        check_sum(runs, world, 1000, COMM_NET_F32, 1.0);
        check_sum(runs, world, 1001, COMM_NET_F64, 1.0 / world);
        if (world == 3) /* 64 MB, once */
            check_sum(runs, world, (64u << 20) / sizeof(float), COMM_NET_F32, 1.0 / world);
        close_ring(runs, world);
    }
}

/* One peer alone: the sum is its own buffer, scaled. */
static void test_one_peer(void)
{
    peer_run run[1];
    comm_net_peer peer[1];
    make_ring(run, peer, 1, UINT32_MAX);
    connect_thread(&run[0]);
    CHECK(run[0].code == 0);
    float v[3] = {1.0f, 2.0f, 4.0f};
    CHECK_OK(comm_net_allreduce(run[0].g, v, 3, COMM_NET_F32, 0.5,
                                comm_deadline_after_ms(1000)));
    CHECK(v[0] == 0.5f && v[1] == 1.0f && v[2] == 2.0f);
    close_ring(run, 1);
}

static void test_wrong_secret(void)
{
    peer_run runs[3];
    comm_net_peer peers[3];
    make_ring(runs, peers, 3, 1);
    run_all(runs, 3, connect_thread);
    for (uint32_t r = 0; r < 3; r++)
        CHECK_MSG(runs[r].code == LOOM_E_UNAUTHENTICATED, "rank %u: code %d, %s", r,
                  runs[r].code, runs[r].message);
    /* Its neighbours name the peer that could not prove the secret. */
    CHECK_CONTAINS(runs[0].message, "(rank 1) did not prove the job's secret");
    CHECK_CONTAINS(runs[2].message, "(rank 1) did not prove the job's secret");
    float v = 1.0f;
    loom_error *err = comm_net_allreduce(runs[0].g, &v, 1, COMM_NET_F32, 1.0,
                                         comm_deadline_after_ms(100));
    CHECK(loom_err_code(err) == LOOM_ERR_UNAVAILABLE);
    loom_err_free(err);
    close_ring(runs, 3);
}

/* A client that connects to a peer's port and leaves is refused; the ring
 * still forms. */
static void test_stray_connection(void)
{
    peer_run runs[2];
    comm_net_peer peers[2];
    make_ring(runs, peers, 2, UINT32_MAX);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(peers[1].port)};
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    CHECK(connect(fd, (struct sockaddr *)&to, sizeof(to)) == 0);
    CHECK(write(fd, "GET / HTTP/1.0\r\n\r\n", 18) == 18);
    close(fd);
    run_all(runs, 2, connect_thread);
    CHECK_MSG(runs[0].code == 0 && runs[1].code == 0, "%s / %s", runs[0].message,
              runs[1].message);
    check_sum(runs, 2, 5, COMM_NET_F32, 1.0);
    close_ring(runs, 2);
}

/* Peers of two generations do not link: each closes the other's
 * connection and, at its deadline, names what it refused. */
static void test_stale_generation(void)
{
    peer_run runs[2];
    comm_net_peer peers[2];
    make_ring(runs, peers, 2, UINT32_MAX);
    runs[0].generation = 3;
    runs[1].generation = 4;
    runs[0].setup_ms = runs[1].setup_ms = 500;
    run_all(runs, 2, connect_thread);
    for (uint32_t r = 0; r < 2; r++)
        CHECK_MSG(runs[r].code == LOOM_ERR_DEADLINE_EXCEEDED, "rank %u: code %d, %s", r,
                  runs[r].code, runs[r].message);
    CHECK_CONTAINS(runs[0].message, "refused: 127.0.0.1 said it is rank 1 of 2 in generation 4");
    CHECK_CONTAINS(runs[1].message, "refused: 127.0.0.1 said it is rank 0 of 2 in generation 3");
    close_ring(runs, 2);
}

/* Rank `quitter` gives up 2 ms into a 16 MB all-reduce (its deadline) and
 * closes; the others, with 20 s to go, get UNAVAILABLE well before. */
static void test_peer_closes(uint32_t world, uint32_t quitter)
{
    peer_run runs[MAX_TEST_PEERS];
    comm_net_peer peers[MAX_TEST_PEERS];
    make_ring(runs, peers, world, UINT32_MAX);
    run_all(runs, world, connect_thread);
    size_t count = (16u << 20) / sizeof(float);
    for (uint32_t r = 0; r < world; r++) {
        CHECK_MSG(runs[r].code == 0, "rank %u connect: %s", r, runs[r].message);
        runs[r].buf = calloc(count, sizeof(float));
        runs[r].count = count;
        runs[r].type = COMM_NET_F32;
        runs[r].scale = 1.0;
        runs[r].deadline_ms = r == quitter ? 2 : 20000;
        runs[r].close_after = r == quitter;
    }
    run_all(runs, world, sum_thread);
    uint32_t left = (quitter + world - 1) % world, right = (quitter + 1) % world;
    char name[32];
    snprintf(name, sizeof(name), "rank %u ", quitter);
    CHECK_MSG(runs[quitter].code == LOOM_ERR_DEADLINE_EXCEEDED, "K=%u quitter: code %d, %s",
              world, runs[quitter].code, runs[quitter].message);
    CHECK_MSG(runs[quitter].call_ms < 2000, "K=%u quitter stopped after %.0f ms (deadline 2)",
              world, runs[quitter].call_ms);
    for (uint32_t r = 0; r < world; r++) {
        if (r == quitter)
            continue;
        CHECK_MSG(runs[r].code == LOOM_ERR_UNAVAILABLE, "K=%u rank %u: code %d, %s", world, r,
                  runs[r].code, runs[r].message);
        CHECK_MSG(runs[r].call_ms < 10000, "K=%u rank %u failed after %.0f ms", world, r,
                  runs[r].call_ms);
        if (r == left || r == right)
            CHECK_CONTAINS(runs[r].message, name);
    }
    /* A group whose call failed refuses the next one. */
    uint32_t other = right;
    float v = 1.0f;
    loom_error *err = comm_net_allreduce(runs[other].g, &v, 1, COMM_NET_F32, 1.0,
                                         comm_deadline_after_ms(100));
    CHECK(loom_err_code(err) == LOOM_ERR_UNAVAILABLE);
    CHECK_CONTAINS(loom_err_message(err), "failed earlier");
    loom_err_free(err);
    for (uint32_t r = 0; r < world; r++)
        free(runs[r].buf);
    close_ring(runs, world);
}

/* Rank 1 is a process of its own that links into the ring and is killed
 * while ranks 0 and 2 wait in an all-reduce for it: they learn it from
 * the kernel closing its sockets, long before their deadline. */
static void test_peer_killed(void)
{
    peer_run runs[3];
    comm_net_peer peers[3];
    make_ring(runs, peers, 3, UINT32_MAX);
    int ready[2];
    CHECK(pipe(ready) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t child = fork();
    if (child == 0) {
        close(ready[0]);
        connect_thread(&runs[1]);
        char c = runs[1].code == 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1)
            _exit(1);
        for (;;)
            pause(); /* until killed */
    }
    close(ready[1]);
    comm_net_close(runs[1].g); /* the parent's copy of its listening socket */
    runs[1].g = NULL;
    pthread_t threads[2];
    pthread_create(&threads[0], NULL, connect_thread, &runs[0]);
    pthread_create(&threads[1], NULL, connect_thread, &runs[2]);
    pthread_join(threads[0], NULL);
    pthread_join(threads[1], NULL);
    char c = 0;
    CHECK(read(ready[0], &c, 1) == 1 && c == 'y');
    close(ready[0]);
    float a[1000] = {0}, b[1000] = {0};
    uint32_t ranks[2] = {0, 2};
    float *bufs[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        peer_run *r = &runs[ranks[i]];
        CHECK_MSG(r->code == 0, "rank %u connect: %s", ranks[i], r->message);
        r->buf = bufs[i];
        r->count = 1000;
        r->type = COMM_NET_F32;
        r->scale = 1.0;
        r->deadline_ms = 20000;
        pthread_create(&threads[i], NULL, sum_thread, r);
    }
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(threads[i], NULL);
        peer_run *r = &runs[ranks[i]];
        CHECK_MSG(r->code == LOOM_ERR_UNAVAILABLE, "rank %u: code %d, %s", ranks[i], r->code,
                  r->message);
        CHECK_CONTAINS(r->message, "rank 1 ");
        CHECK_MSG(r->call_ms < 10000, "rank %u failed after %.0f ms", ranks[i], r->call_ms);
    }
    close_ring(runs, 3);
}

/* Rank 1 connects and then calls nothing: rank 0 waits until its deadline
 * and names it. */
static void test_silent_peer(void)
{
    peer_run runs[2];
    comm_net_peer peers[2];
    make_ring(runs, peers, 2, UINT32_MAX);
    run_all(runs, 2, connect_thread);
    CHECK(runs[0].code == 0 && runs[1].code == 0);
    float buf[1000] = {0};
    runs[0].buf = buf;
    runs[0].count = 1000;
    runs[0].type = COMM_NET_F32;
    runs[0].scale = 1.0;
    runs[0].deadline_ms = 300;
    sum_thread(&runs[0]);
    CHECK_MSG(runs[0].code == LOOM_ERR_DEADLINE_EXCEEDED, "code %d, %s", runs[0].code,
              runs[0].message);
    CHECK_CONTAINS(runs[0].message, "rank 1 did not answer before the deadline");
    CHECK_MSG(runs[0].call_ms >= 299 && runs[0].call_ms < 3000, "after %.0f ms",
              runs[0].call_ms);
    close_ring(runs, 2);
}

static void test_arguments(void)
{
    comm_net *g = NULL;
    comm_net_peer peer = {"127.0.0.1", 1};
    uint8_t secret[COMM_NET_SECRET_BYTES] = {0};
    loom_error *err = comm_net_listen("localhost", 0, &g);
    CHECK(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(loom_err_message(err), "numeric");
    loom_err_free(err);
    CHECK_OK(comm_net_listen("127.0.0.1", 0, &g));
    err = comm_net_connect(g, &peer, COMM_NET_MAX_PEERS + 1, 0, 1, secret,
                           comm_deadline_after_ms(100));
    CHECK(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(loom_err_message(err), "COMM_NET_MAX_PEERS");
    loom_err_free(err);
    err = comm_net_connect(g, &peer, 1, 1, 1, secret, comm_deadline_after_ms(100));
    CHECK(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    loom_err_free(err);
    float v = 0;
    err = comm_net_allreduce(g, &v, 1, COMM_NET_F32, 1.0, comm_deadline_after_ms(100));
    CHECK(loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(loom_err_message(err), "not connected");
    loom_err_free(err);
    comm_net_close(g);
}

int main(void)
{
    test_arguments();
    test_one_peer();
    test_sums();
    test_wrong_secret();
    test_stray_connection();
    test_stale_generation();
    test_peer_closes(3, 1);
    test_peer_closes(4, 2);
    test_silent_peer();
    test_peer_killed();
    return CHECK_DONE();
}

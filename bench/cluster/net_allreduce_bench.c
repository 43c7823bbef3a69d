/*
 * bench/cluster/net_allreduce_bench.c - one peer of loom's all-reduce
 * between nodes (net_allreduce.h), and one end of a raw TCP stream, the
 * yardstick of what the link carries. bench/cluster/allreduce.sh starts one
 * on each node of the Slurm lab.
 *
 *   net_allreduce_bench ring DIR RANK WORLD ADDRESS BYTES ITERATIONS
 *   net_allreduce_bench stream-recv DIR ADDRESS BYTES ITERATIONS
 *   net_allreduce_bench stream-send DIR BYTES ITERATIONS
 *
 * The peers meet through DIR, a folder every node sees (the lab's shared
 * directory): each writes "ADDRESS PORT" to DIR/peer.RANK (the stream's
 * receiver to DIR/stream) once it listens, and reads the others' (every
 * wait bounded). The ring's secret is DIR/secret (32 bytes).
 *
 * Rank 0 (the receiver) prints "RESULT <what> <bytes> <GB/s> <ms per op>",
 * like bench/comm/comm_bench: for the ring the bus bandwidth, 2 (K-1)/K *
 * bytes / time per all-reduce (for 2 peers, what each link carries each
 * way); for the stream, bytes / time per transfer one way.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "net_allreduce.h"
#include "util/error.h"

#define WARMUP_ITERATIONS 3
#define MEET_MS 30000
#define CALL_MS 60000

static int usage(void)
{
    fprintf(stderr,
            "usage: net_allreduce_bench ring DIR RANK WORLD ADDRESS BYTES ITERATIONS\n"
            "       net_allreduce_bench stream-recv DIR ADDRESS BYTES ITERATIONS\n"
            "       net_allreduce_bench stream-send DIR BYTES ITERATIONS\n");
    return 2;
}

static int fail(const char *what, loom_error *err)
{
    fprintf(stderr, "net_allreduce_bench: %s: %s\n", what, loom_err_message(err));
    loom_err_free(err);
    return 1;
}

/* Writes "ADDRESS PORT" to DIR/NAME through a temporary file, so that a
 * reader never sees half of it. */
static int publish(const char *dir, const char *name, const char *address, uint16_t port)
{
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(tmp, "w");
    if (f == NULL || fprintf(f, "%s %u\n", address, port) < 0 || fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}

/* Waits (bounded) for DIR/NAME and reads it. */
static int lookup(const char *dir, const char *name, comm_net_peer *peer)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    uint64_t deadline = comm_deadline_after_ms(MEET_MS);
    for (;;) {
        FILE *f = fopen(path, "r");
        if (f) {
            unsigned port = 0;
            int n = fscanf(f, "%45s %u", peer->address, &port);
            fclose(f);
            peer->port = (uint16_t)port;
            return n == 2 ? 0 : -1;
        }
        if (comm_now_ns() >= deadline) {
            fprintf(stderr, "net_allreduce_bench: %s did not appear in %d ms\n", path, MEET_MS);
            return -1;
        }
        struct timespec t = {0, 5 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
}

static void print_result(const char *what, size_t bytes, double bus_bytes, uint64_t ns,
                         int iterations)
{
    double per_op = (double)ns / iterations;
    printf("RESULT %s %zu %.3f %.3f\n", what, bytes, bus_bytes / per_op, per_op / 1e6);
}

static int bench_ring(char **argv)
{
    const char *dir = argv[2], *address = argv[5];
    uint32_t rank = (uint32_t)atoi(argv[3]), world = (uint32_t)atoi(argv[4]);
    size_t count = strtoull(argv[6], NULL, 10) / sizeof(float);
    int iterations = atoi(argv[7]);
    if (world < 2 || world > 64 || rank >= world || count == 0 || iterations <= 0)
        return usage();
    uint8_t secret[COMM_NET_SECRET_BYTES];
    char path[4096];
    snprintf(path, sizeof(path), "%s/secret", dir);
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(secret, 1, sizeof(secret), f) : 0;
    if (f)
        fclose(f);
    if (got != sizeof(secret)) {
        fprintf(stderr, "net_allreduce_bench: %s: expected %zu bytes\n", path, sizeof(secret));
        return 1;
    }
    comm_net *g = NULL;
    loom_error *err = comm_net_listen(address, 0, &g);
    if (err)
        return fail("listen", err);
    char name[32];
    snprintf(name, sizeof(name), "peer.%u", rank);
    comm_net_peer peers[64];
    if (publish(dir, name, address, comm_net_port(g)) != 0)
        return 1;
    for (uint32_t i = 0; i < world; i++) {
        snprintf(name, sizeof(name), "peer.%u", i);
        if (lookup(dir, name, &peers[i]) != 0)
            return 1;
    }
    err = comm_net_connect(g, peers, world, rank, 1, secret, comm_deadline_after_ms(MEET_MS));
    if (err)
        return fail("connect", err);
    float *buf = malloc(count * sizeof(float)), one = 1.0f;
    for (size_t i = 0; buf && i < count; i++)
        buf[i] = (float)((i + rank) % 1000) * 0.001f;
    for (int i = 0; err == NULL && i < WARMUP_ITERATIONS; i++)
        err = comm_net_allreduce(g, buf, count, COMM_NET_F32, 1.0 / world,
                                 comm_deadline_after_ms(CALL_MS));
    if (err == NULL) /* a barrier */
        err = comm_net_allreduce(g, &one, 1, COMM_NET_F32, 1.0, comm_deadline_after_ms(CALL_MS));
    uint64_t started = comm_now_ns();
    for (int i = 0; err == NULL && i < iterations; i++)
        err = comm_net_allreduce(g, buf, count, COMM_NET_F32, 1.0 / world,
                                 comm_deadline_after_ms(CALL_MS));
    if (err == NULL)
        err = comm_net_allreduce(g, &one, 1, COMM_NET_F32, 1.0, comm_deadline_after_ms(CALL_MS));
    uint64_t elapsed = comm_now_ns() - started;
    free(buf);
    comm_net_close(g);
    if (err)
        return fail("all-reduce", err);
    size_t bytes = count * sizeof(float);
    if (rank == 0)
        print_result("net", bytes, 2.0 * (world - 1) / world * (double)bytes, elapsed, iterations);
    return 0;
}

/* One TCP connection with the same options as the ring's (TCP_NODELAY,
 * the kernel's autotuned buffers), so the two compare. */
static void tune(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int bench_stream_recv(char **argv)
{
    const char *dir = argv[2], *address = argv[3];
    size_t bytes = strtoull(argv[4], NULL, 10);
    int iterations = atoi(argv[5]);
    if (bytes == 0 || iterations <= 0)
        return usage();
    struct sockaddr_in at = {.sin_family = AF_INET};
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    tune(lfd);
    socklen_t len = sizeof(at);
    if (inet_pton(AF_INET, address, &at.sin_addr) != 1 ||
        bind(lfd, (struct sockaddr *)&at, sizeof(at)) != 0 || listen(lfd, 1) != 0 ||
        getsockname(lfd, (struct sockaddr *)&at, &len) != 0 ||
        publish(dir, "stream", address, ntohs(at.sin_port)) != 0) {
        perror("net_allreduce_bench: stream-recv");
        return 1;
    }
    int fd = accept(lfd, NULL, NULL);
    char *buf = malloc(bytes);
    uint64_t started = 0;
    for (int i = 0; fd >= 0 && buf && i < WARMUP_ITERATIONS + iterations; i++) {
        if (i == WARMUP_ITERATIONS)
            started = comm_now_ns();
        for (size_t got = 0; got < bytes;) {
            ssize_t n = recv(fd, buf + got, bytes - got, 0);
            if (n <= 0) {
                fprintf(stderr, "net_allreduce_bench: stream ended early\n");
                return 1;
            }
            got += (size_t)n;
        }
    }
    uint64_t elapsed = comm_now_ns() - started;
    char ack = 'K';
    if (send(fd, &ack, 1, MSG_NOSIGNAL) != 1)
        return 1;
    print_result("stream", bytes, (double)bytes, elapsed, iterations);
    free(buf);
    close(fd);
    close(lfd);
    return 0;
}

static int bench_stream_send(char **argv)
{
    const char *dir = argv[2];
    size_t bytes = strtoull(argv[3], NULL, 10);
    int iterations = atoi(argv[4]);
    comm_net_peer to;
    if (bytes == 0 || iterations <= 0)
        return usage();
    if (lookup(dir, "stream", &to) != 0)
        return 1;
    struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = htons(to.port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    tune(fd);
    char *buf = calloc(1, bytes);
    if (buf == NULL || inet_pton(AF_INET, to.address, &at.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&at, sizeof(at)) != 0) {
        perror("net_allreduce_bench: stream-send");
        return 1;
    }
    for (int i = 0; i < WARMUP_ITERATIONS + iterations; i++)
        for (size_t sent = 0; sent < bytes;) {
            ssize_t n = send(fd, buf + sent, bytes - sent, MSG_NOSIGNAL);
            if (n <= 0) {
                perror("net_allreduce_bench: stream-send");
                return 1;
            }
            sent += (size_t)n;
        }
    char ack;
    int ok = recv(fd, &ack, 1, 0) == 1;
    free(buf);
    close(fd);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 8 && strcmp(argv[1], "ring") == 0)
        return bench_ring(argv);
    if (argc == 6 && strcmp(argv[1], "stream-recv") == 0)
        return bench_stream_recv(argv);
    if (argc == 5 && strcmp(argv[1], "stream-send") == 0)
        return bench_stream_send(argv);
    return usage();
}

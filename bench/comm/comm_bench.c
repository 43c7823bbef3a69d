/*
 * bench/comm/comm_bench.c - measures the shm back end's all-reduce bus
 * bandwidth between forked worker processes, and single-core memcpy
 * bandwidth as the machine's yardstick.
 *
 *   comm_bench allreduce BYTES [ITERATIONS [PROCESSES [STAGING_BYTES]]]
 *   comm_bench inplace BYTES [ITERATIONS [PROCESSES]]
 *   comm_bench memcpy BYTES [ITERATIONS]
 *
 * "allreduce" reduces buffers in each process's own memory through the
 * segment's staging (what other adapters' gradients take); "inplace"
 * reduces buffers in the segment's gradient regions, in place (what the
 * trainer does with the native adapter on CPU).
 *
 * Prints one line "RESULT <what> <bytes> <GB/s> <ms per op>" (run.sh reads
 * it). Bus bandwidth is 2 (n-1)/n * bytes / time per all-reduce, the
 * figure NCCL and the PyTorch benchmarks report, so the numbers compare
 * across process counts and with gloo.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm.h"
#include "plugin/host_api.h"

#define MAX_PROCESSES 8
#define WARMUP_ITERATIONS 3

static int usage(void)
{
    fprintf(stderr, "usage: comm_bench allreduce BYTES [ITERATIONS [PROCESSES [STAGING_BYTES]]]\n"
                    "       comm_bench inplace BYTES [ITERATIONS [PROCESSES]]\n"
                    "       comm_bench memcpy BYTES [ITERATIONS]\n");
    return 2;
}

static double gigabytes_per_second(double bytes, uint64_t ns)
{
    return bytes / (double)ns;
}

/* One worker: attach, join, warm up, then time `iterations` all-reduces
 * between two barriers. Rank 0 writes the elapsed time to `elapsed_ns`. */
static int allreduce_worker(const char *segment, uint32_t slot, size_t floats,
                            int iterations, int in_place, uint64_t *elapsed_ns)
{
    comm *c = NULL;
    float *buf = NULL, *owned = NULL;
    loom_error *err = comm_shm_attach(segment, slot, &c);
    if (err == NULL && in_place)
        err = comm_shm_gradient_memory(c, floats * sizeof(float), &buf);
    else
        buf = owned = malloc(floats * sizeof(float));
    if (err == NULL)
        err = comm_shm_join(c, 1, comm_deadline_after_ms(30000));
    if (err == NULL && in_place && comm_shm_in_place_bytes(c) == 0)
        err = loom_err(LOOM_ERR_INTERNAL, "the generation does not reduce in place");
    for (size_t i = 0; err == NULL && i < floats; i++)
        buf[i] = (float)((i + slot) % 1000) * 0.001f;
    for (int i = 0; err == NULL && i < WARMUP_ITERATIONS; i++)
        err = comm_allreduce_avg_f32(c, buf, floats, comm_deadline_after_ms(30000));
    if (err == NULL)
        err = comm_barrier(c, comm_deadline_after_ms(30000));
    uint64_t started = comm_now_ns();
    for (int i = 0; err == NULL && i < iterations; i++)
        err = comm_allreduce_avg_f32(c, buf, floats, comm_deadline_after_ms(30000));
    if (err == NULL)
        err = comm_barrier(c, comm_deadline_after_ms(30000));
    if (err == NULL && slot == 0)
        *elapsed_ns = comm_now_ns() - started;
    free(owned);
    comm_close(c);
    if (err) {
        fprintf(stderr, "comm_bench: slot %u: %s\n", slot, loom_err_message(err));
        loom_err_free(err);
        return 1;
    }
    return 0;
}

static int bench_allreduce(size_t bytes, int iterations, uint32_t processes,
                           uint64_t staging_bytes, int in_place)
{
    char segment[64];
    snprintf(segment, sizeof(segment), "/loom-comm-bench-%d", (int)getpid());
    comm_shm_config config = {.max_ranks = processes,
                              .max_buffer_bytes = bytes,
                              .staging_bytes = staging_bytes,
                              .gradient_region_bytes = in_place ? bytes : 0};
    comm_shm_segment *seg = NULL;
    loom_error *err = comm_shm_create(segment, &config, &seg);
    uint32_t slots[MAX_PROCESSES], gen = 0;
    for (uint32_t i = 0; i < processes; i++)
        slots[i] = i;
    if (err == NULL)
        err = comm_shm_publish(seg, slots, processes, &gen);
    if (err) {
        fprintf(stderr, "comm_bench: %s\n", loom_err_message(err));
        loom_err_free(err);
        comm_shm_destroy(seg);
        return 1;
    }
    uint64_t *elapsed = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    *elapsed = 0;
    pid_t pids[MAX_PROCESSES];
    for (uint32_t i = 0; i < processes; i++) {
        fflush(stdout);
        pids[i] = fork();
        if (pids[i] == 0)
            _exit(allreduce_worker(segment, i, bytes / sizeof(float), iterations, in_place,
                                   elapsed));
    }
    int failed = 0;
    for (uint32_t i = 0; i < processes; i++) {
        int status = 0;
        waitpid(pids[i], &status, 0);
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    comm_shm_destroy(seg);
    if (failed || *elapsed == 0)
        return 1;
    double per_op_ns = (double)*elapsed / iterations;
    double bus_bytes = 2.0 * (processes - 1) / processes * (double)bytes;
    printf("RESULT %s %zu %.3f %.3f\n", in_place ? "inplace" : "allreduce", bytes,
           gigabytes_per_second(bus_bytes, (uint64_t)per_op_ns), per_op_ns / 1e6);
    munmap(elapsed, sizeof(uint64_t));
    return 0;
}

static int bench_memcpy(size_t bytes, int iterations)
{
    char *src = malloc(bytes), *dst = malloc(bytes);
    if (src == NULL || dst == NULL)
        return 1;
    memset(src, 1, bytes);
    memset(dst, 2, bytes); /* fault the pages in before timing */
    for (int i = 0; i < WARMUP_ITERATIONS; i++)
        memcpy(dst, src, bytes);
    uint64_t started = comm_now_ns();
    for (int i = 0; i < iterations; i++) {
        memcpy(dst, src, bytes);
        __asm__ __volatile__("" : : "r"(dst) : "memory"); /* keep every copy */
    }
    uint64_t elapsed = comm_now_ns() - started;
    double per_op_ns = (double)elapsed / iterations;
    printf("RESULT memcpy %zu %.3f %.3f\n", bytes,
           gigabytes_per_second((double)bytes, (uint64_t)per_op_ns), per_op_ns / 1e6);
    free(src);
    free(dst);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    size_t bytes = strtoull(argv[2], NULL, 10) / sizeof(float) * sizeof(float);
    int iterations = argc > 3 ? atoi(argv[3]) : 20;
    if (bytes == 0 || iterations <= 0)
        return usage();
    int in_place = strcmp(argv[1], "inplace") == 0;
    if (in_place || strcmp(argv[1], "allreduce") == 0) {
        uint32_t processes = argc > 4 ? (uint32_t)atoi(argv[4]) : 2;
        if (processes < 2 || processes > MAX_PROCESSES)
            return usage();
        uint64_t staging = argc > 5 && !in_place ? strtoull(argv[5], NULL, 10) : 0;
        return bench_allreduce(bytes, iterations, processes, staging, in_place);
    }
    if (strcmp(argv[1], "memcpy") == 0)
        return bench_memcpy(bytes, iterations);
    return usage();
}

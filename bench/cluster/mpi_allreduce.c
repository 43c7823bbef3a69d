/* bench/cluster/mpi_allreduce.c - the Open MPI peer's figure for
 * bench/cluster/allreduce.sh: MPI_Allreduce (sum) of BYTES of floats, then
 * the division by the world size (an average, like loom's), ITERATIONS
 * times after 3 to warm up. Rank 0 prints, like the others,
 * "RESULT <label> <bytes> <bus GB/s> <ms per op>" (label: "mpi" unless
 * given, naming the transport mpirun was told to use).
 *
 *   mpirun ... mpi_allreduce BYTES ITERATIONS [LABEL]
 *
 * Built by allreduce.sh with mpicc where Open MPI is installed; not part of
 * loom's build (loom does not use MPI). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define WARMUP_ITERATIONS 3

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, world = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    long long bytes = argc > 1 ? atoll(argv[1]) : 0;
    int iterations = argc > 2 ? atoi(argv[2]) : 0;
    const char *label = argc > 3 ? argv[3] : "mpi";
    if (bytes < 4 || iterations < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_allreduce BYTES ITERATIONS [LABEL]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int count = (int)(bytes / 4);
    float *buf = malloc((size_t)count * sizeof *buf);
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int i = 0; i < count; i++)
        buf[i] = (float)i * 0.001f + (float)rank;
    for (int i = 0; i < WARMUP_ITERATIONS; i++)
        MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    double started = MPI_Wtime();
    for (int it = 0; it < iterations; it++) {
        MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < count; i++)
            buf[i] /= (float)world;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double per_op = (MPI_Wtime() - started) / iterations;
    if (rank == 0) {
        double bus_bytes = 2.0 * (world - 1) / world * (double)(count * 4LL);
        printf("RESULT %s %lld %.3f %.3f\n", label, count * 4LL, bus_bytes / per_op / 1e9,
               per_op * 1e3);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}

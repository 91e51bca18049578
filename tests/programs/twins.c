/* Where the wait goes, for the verdict tests. Two ranks exchange COUNT doubles with
 * Irecv/Isend, ITERS times, and compute about COMPUTE_MS per iteration.
 *
 *   twins early [COUNT]  Waitall right after posting, then compute (false overlap)
 *   twins late [COUNT]   compute between posting and the Waitall, no MPI call in it:
 *                        with a large COUNT (rendezvous) and no asynchronous progress,
 *                        overlap written, not achieved (MPICH then moves the data only
 *                        inside MPI calls, here the Waitall)
 *
 * Blocking exchanges of the same size first give the trace transfers without compute.
 * Rank 0 prints one line: the checksum. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERS 5
#define WARM_UPS 9
#define COMPUTE_MS 20.0

static double sink;

/* Busy work for about `ms` milliseconds, by the clock (the machine may be loaded). */
static void compute(double ms) {
    double t0 = MPI_Wtime(), x = sink;
    while ((MPI_Wtime() - t0) * 1e3 < ms) {
        for (int i = 0; i < 1000; i++) x = x * 0.999999 + 1e-9;
    }
    sink = x;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "";
    int early = strcmp(mode, "early") == 0;
    long count = argc > 2 ? atol(argv[2]) : 512;
    if (size != 2 || count < 1 || !(early || strcmp(mode, "late") == 0)) {
        if (rank == 0) fprintf(stderr, "twins: 2 ranks; early|late [COUNT > 0]\n");
        MPI_Finalize();
        return 2;
    }
    int peer = 1 - rank;
    double *out = malloc(count * sizeof(double)), *in = malloc(count * sizeof(double));
    for (long i = 0; i < count; i++) out[i] = rank + i;
    MPI_Request req[2];
    double check = 0;

    /* Warm-up exchanges: the transfers without compute that give the trace its pure
     * transfer time, the median of them. The first also pays for first touches, and on
     * a loaded machine a few are slowed by a descheduled partner: nine keep the median
     * the transfer's own. */
    for (int i = 0; i < WARM_UPS; i++)
        MPI_Sendrecv(out, count, MPI_DOUBLE, peer, 1, in, count, MPI_DOUBLE, peer, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int it = 0; it < ITERS; it++) {
        MPI_Irecv(in, count, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(out, count, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, &req[1]);
        if (early) {
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE); /* the early wait */
            compute(COMPUTE_MS);
        } else {
            compute(COMPUTE_MS);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE); /* the late wait */
        }
        check += in[count - 1];
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("twins: checksum %.1f\n", check);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}

/* A loop that waits for its send too early, for `overlap suggest`: two ranks exchange
 * COUNT doubles with Irecv and Isend, wait for both in one Waitall, then compute for
 * about COMPUTE_MS without touching either buffer. The send's wait could go after the
 * compute (before the next iteration's Isend reuses the buffer); the trace cannot see
 * what the compute touches, so the suggestion says what it assumes.
 *
 *   reorder [COUNT]    (default 131072 doubles: 1 MiB, a rendezvous message)
 *
 * Rank 0 prints one line: the checksum. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ITERS 6
#define COMPUTE_MS 5.0

static double sink;

/* Busy work for about `ms` milliseconds, by the clock; touches only `sink`. */
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
    long count = argc > 1 ? atol(argv[1]) : 131072;
    if (size != 2 || count < 1) {
        if (rank == 0) fprintf(stderr, "reorder: 2 ranks; [COUNT > 0]\n");
        MPI_Finalize();
        return 2;
    }
    int peer = 1 - rank;
    double *out = malloc(count * sizeof(double)), *in = malloc(count * sizeof(double));
    for (long i = 0; i < count; i++) out[i] = rank + i;
    MPI_Request req[2];
    for (int it = 0; it < ITERS; it++) {
        MPI_Irecv(in, count, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(out, count, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE); /* waits for the send too */
        compute(COMPUTE_MS);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double check = in[count - 1];
    if (rank == 0) printf("reorder: checksum %.1f\n", check);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}

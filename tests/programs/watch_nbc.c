/* The buffer watch (overlap trace --buffers) on collectives. Two ranks:
 *
 * 1. MPI_Iallreduce from one buffer into another (both several pages): once it
 *    completes, the program reads the result, then refills the send buffer: each
 *    buffer's first touch, one watch each, at its line;
 * 2. MPI_Ialltoallv: the extent of its buffers depends on every rank's counts and
 *    displacements: not watched;
 * 3. MPI_Iallreduce again, then at once a blocking MPI_Allreduce in place on its
 *    result buffer, still watched: the watch ends as the buffer goes back to MPI, and
 *    the call works.
 *
 * Rank 0 prints the results.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 8192

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double *in = malloc(N * sizeof(double)), *out = malloc(N * sizeof(double));
    for (int i = 0; i < N; i++)
        in[i] = rank + i;
    MPI_Request req;

    /* 1. */
    MPI_Iallreduce(in, out, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    double sum = 0;
    for (int i = 0; i < N; i++)
        sum += out[i]; /* read the reduction */
    for (int i = 0; i < N; i++)
        in[i] = 1; /* refill the send buffer */

    /* 2. */
    int counts[2] = {N / 2, N / 2}, displs[2] = {0, N / 2};
    double *to = malloc(N * sizeof(double)), *from = malloc(N * sizeof(double));
    for (int i = 0; i < N; i++)
        to[i] = rank;
    MPI_Ialltoallv(to, counts, displs, MPI_DOUBLE, from, counts, displs, MPI_DOUBLE,
                   MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    double mixed = 0;
    for (int i = 0; i < N; i++)
        mixed += from[i];

    /* 3. */
    MPI_Iallreduce(in, out, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Allreduce(MPI_IN_PLACE, out, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("sum %.0f, mixed %.0f, again %.0f\n", sum, mixed, out[0]);
    MPI_Finalize();
    return 0;
}

/* The buffer watch on a halo exchange (overlap trace --buffers): each rank packs two
 * send buffers, exchanges them with its neighbours on a ring, computes on other data,
 * calls MPI_Iprobe as a marker that the compute is done, then unpacks the two receive
 * buffers. Every buffer spans several pages (malloc'd, so each has edge bytes on pages
 * shared with other data).
 *
 * The truth a trace must show, per rank and iteration k:
 * - each receive buffer is first read at the unpack line, after the marker of k;
 * - each send buffer (but the last iteration's) is first written at its pack line in
 *   iteration k + 1, after the unpack of k, before the next Isend;
 * - the compute between the Waitall and the marker touches neither.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4096
#define ITERS 4
#define WORK 20000

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    size_t bytes = N * sizeof(double);
    double *u = malloc(bytes), *work = malloc(WORK * sizeof(double));
    double *out_l = malloc(bytes), *out_r = malloc(bytes);
    double *in_l = malloc(bytes), *in_r = malloc(bytes);
    for (int i = 0; i < N; i++)
        u[i] = rank + i * 1e-3;
    for (int i = 0; i < WORK; i++)
        work[i] = i;
    double acc = 0;
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < N; i++)
            out_l[i] = u[i] + it; /* pack left */
        for (int i = 0; i < N; i++)
            out_r[i] = u[N - 1 - i] - it; /* pack right */
        MPI_Request req[4];
        MPI_Irecv(in_l, N, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(in_r, N, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(out_l, N, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(out_r, N, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        for (int rep = 0; rep < 20; rep++)
            for (int i = 1; i < WORK; i++)
                work[i] = 0.5 * (work[i] + work[i - 1]); /* compute */
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        for (int i = 0; i < N; i++)
            u[i] += 1e-3 * (in_l[i] + in_r[i]); /* unpack */
        acc += work[WORK - 1];
    }
    double local = 0, total;
    for (int i = 0; i < N; i++)
        local += u[i];
    MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("total %.6f, work %.3f\n", total, acc);
    MPI_Finalize();
    return 0;
}

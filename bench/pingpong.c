/* Ping-pong of 8-byte messages between ranks 0 and 1, for measuring what the preload
 * costs (scripts/bench-preload.sh runs it with and without the preload, side by side).
 *
 * Prints, from rank 0:
 *   latency_ns <median one-way latency over BATCHES batches of ROUND_TRIPS round trips>
 *   call_ns    <median cost of one MPI_Test on MPI_REQUEST_NULL: the cheapest wrapped
 *               call, so with the preload it is nearly all pass-through and recording>
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof(double), cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int round_trips = argc > 1 ? atoi(argv[1]) : 2000;
    int batches = argc > 2 ? atoi(argv[2]) : 31;
    double msg = 0;
    double *lat = malloc(sizeof(double) * batches), *call = malloc(sizeof(double) * batches);
    for (int b = -1; b < batches; b++) { /* batch -1 warms up */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < round_trips; i++) {
            if (rank == 0) {
                MPI_Send(&msg, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(&msg, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(&msg, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&msg, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
            }
        }
        double t1 = MPI_Wtime();
        if (b >= 0) lat[b] = (t1 - t0) / (2.0 * round_trips) * 1e9;
    }
    for (int b = -1; b < batches; b++) {
        MPI_Request null = MPI_REQUEST_NULL;
        int flag;
        double t0 = MPI_Wtime();
        for (int i = 0; i < round_trips; i++) MPI_Test(&null, &flag, MPI_STATUS_IGNORE);
        double t1 = MPI_Wtime();
        if (b >= 0) call[b] = (t1 - t0) / round_trips * 1e9;
    }
    if (rank == 0) {
        printf("latency_ns %.1f\n", median(lat, batches));
        printf("call_ns %.1f\n", median(call, batches));
    }
    free(lat);
    free(call);
    MPI_Finalize();
    return 0;
}

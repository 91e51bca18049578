/* What the buffer watch (overlap trace --buffers) must leave alone, and a touch from
 * another thread. Two ranks exchange, in this order:
 *
 * 1. a small message (no whole page in its buffers): unwatched, smaller than a page;
 * 2. a message from and into buffers on the main thread's stack: unwatched, on a stack;
 * 3. one malloc'd buffer sent twice at once (two Isends in flight): the first send to
 *    complete is unwatched (its pages hold the other send's buffer, still in flight);
 *    the second is watched, and first written by the program at the refill line;
 * 4. a message received on the main thread and read by a worker thread (pthreads): the
 *    watch records the worker's read, at the worker's line.
 *
 * Rank 0 prints what rank 1 found in each.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define SMALL 16
#define STACKED 2048
#define BIG 8192

static double *received;
static double seen;

static void *worker(void *arg) {
    (void)arg;
    double s = 0;
    for (int i = 0; i < BIG; i++)
        s += received[i]; /* the worker reads the receive buffer */
    seen = s;
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = 1 - rank;
    double result[4] = {0};

    /* 1. Small buffers. */
    double *small = malloc(SMALL * sizeof(double));
    MPI_Request req[2];
    if (rank == 0) {
        for (int i = 0; i < SMALL; i++)
            small[i] = i;
        MPI_Isend(small, SMALL, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &req[0]);
    } else {
        MPI_Irecv(small, SMALL, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &req[0]);
    }
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    for (int i = 0; i < SMALL; i++)
        result[0] += small[i];

    /* 2. Buffers on the stack. */
    double stacked[STACKED];
    for (int i = 0; i < STACKED; i++)
        stacked[i] = rank == 0 ? i : 0;
    if (rank == 0)
        MPI_Isend(stacked, STACKED, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, &req[0]);
    else
        MPI_Irecv(stacked, STACKED, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    for (int i = 0; i < STACKED; i++)
        result[1] += stacked[i];

    /* 3. One buffer in two sends at once. */
    double *twice = malloc(BIG * sizeof(double));
    if (rank == 0) {
        for (int i = 0; i < BIG; i++)
            twice[i] = 2 * i;
        MPI_Isend(twice, BIG, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(twice, BIG, MPI_DOUBLE, peer, 4, MPI_COMM_WORLD, &req[1]);
        MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        MPI_Wait(&req[1], MPI_STATUS_IGNORE);
        for (int i = 0; i < BIG; i++)
            twice[i] = 0; /* refill the buffer sent twice */
    } else {
        double *other = malloc(BIG * sizeof(double));
        MPI_Irecv(twice, BIG, MPI_DOUBLE, peer, 3, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(other, BIG, MPI_DOUBLE, peer, 4, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        for (int i = 0; i < BIG; i++)
            result[2] += twice[i] - other[i];
        free(other);
    }

    /* 4. A worker thread reads what the main thread received. */
    received = malloc(BIG * sizeof(double));
    if (rank == 0) {
        for (int i = 0; i < BIG; i++)
            received[i] = 1;
        MPI_Send(received, BIG, MPI_DOUBLE, peer, 5, MPI_COMM_WORLD);
    } else {
        MPI_Irecv(received, BIG, MPI_DOUBLE, peer, 5, MPI_COMM_WORLD, &req[0]);
        MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        pthread_t t;
        pthread_create(&t, NULL, worker, NULL);
        pthread_join(t, NULL);
        result[3] = seen;
    }

    if (rank == 1)
        MPI_Send(result, 4, MPI_DOUBLE, 0, 6, MPI_COMM_WORLD);
    else
        MPI_Recv(result, 4, MPI_DOUBLE, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 0)
        printf("small %.0f, stacked %.0f, twice %.0f, worker %.0f\n", result[0], result[1],
               result[2], result[3]);
    MPI_Finalize();
    return 0;
}

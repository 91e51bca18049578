/* Four threads of a rank that wait at the same time, under MPI_THREAD_MULTIPLE on 2
 * ranks (tests/cli/preload_thread_time.rs, scripts/faults/program.sh).
 *
 * Each of THREADS threads exchanges ROUNDS messages with the same thread of the other
 * rank, on a tag of its own. Rank 1's threads compute (sleep) WORK_US before each send;
 * rank 0's threads only post a receive and wait for it, so rank 0 waits on all four
 * threads at once for most of the run: its threads' waits summed are about four times
 * its wall time, while the rank itself never waits longer than it runs.
 *
 * Prints to stderr: "threads_wait rank=R threads=4 rounds=N". */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 20
#define WORK_US 5000

static int rank, peer;

static void *exchange(void *arg) {
    int tag = (int)(long)arg;
    for (int round = 0; round < ROUNDS; round++) {
        double value = round;
        if (rank == 1) {
            usleep(WORK_US);
            MPI_Send(&value, 1, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD);
        } else {
            MPI_Request r;
            MPI_Irecv(&value, 1, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "MPI_THREAD_MULTIPLE is not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = 1 - rank;
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++) {
        pthread_create(&threads[t], NULL, exchange, (void *)(t + 10));
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    fprintf(stderr, "threads_wait rank=%d threads=%d rounds=%d\n", rank, THREADS, ROUNDS);
    MPI_Finalize();
    return 0;
}

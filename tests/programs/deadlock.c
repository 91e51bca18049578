/* A deadlock: after ten barriers, each rank waits in MPI_Recv for a message from the
 * next rank (rank r from rank (r + 1) % size, with tag 7 + r) that is never sent, as
 * every rank waits before it sends. The hang tests run it under `overlap trace
 * --hang-timeout` or with OVERLAP_HANG_TIMEOUT_MS, and check that the run is stopped
 * and said to be hung, that every rank dumps the Recv it is inside, and that the
 * analysis names the wait-for cycle (on 2 ranks: rank 0 from rank 1 tag 7, rank 1 from
 * rank 0 tag 8).
 *
 * With arguments (`deadlock run MS`) it does not hang: each rank exchanges messages
 * with its neighbours for about MS milliseconds, with a millisecond of "computing"
 * between exchanges, and finalizes: for the test that sends SIGUSR1 to a running
 * program. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, x = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int i = 0; i < 10; i++) MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 2 && strcmp(argv[1], "run") == 0) {
        double until = now() + atoi(argv[2]) * 1e-3;
        int more = 1;
        while (more) {
            /* Rank 0 decides when to stop, so every rank does as many exchanges. */
            if (rank == 0) more = now() < until;
            MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
            MPI_Sendrecv_replace(&x, 1, MPI_INT, next, 1, prev, 1, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE);
            usleep(1000); /* "computing": keeps the trace small */
        }
    } else {
        MPI_Recv(&x, 1, MPI_INT, next, 7 + rank, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&x, 1, MPI_INT, prev, 7 + prev, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}

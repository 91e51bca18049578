/* A deadlock: after a few barriers, each of two ranks waits in MPI_Recv for a message
 * from the other that is never sent (rank 0 for tag 7 from rank 1, rank 1 for tag 8
 * from rank 0). The hang tests run it with OVERLAP_HANG_TIMEOUT_MS and check that both
 * ranks dump the Recv they are inside and the analysis names the wait-for cycle.
 *
 * With arguments (`deadlock run MS`) it does not hang: it exchanges messages for about
 * MS milliseconds, with a millisecond of "computing" between exchanges, and finalizes:
 * for the test that sends SIGUSR1 to a running program. */
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
    int rank, x = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = 1 - rank;
    for (int i = 0; i < 5; i++) MPI_Barrier(MPI_COMM_WORLD);
    if (argc > 2 && strcmp(argv[1], "run") == 0) {
        double until = now() + atoi(argv[2]) * 1e-3;
        int more = 1;
        while (more) {
            /* Rank 0 decides when to stop, so both ranks do as many exchanges. */
            if (rank == 0) more = now() < until;
            MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
            MPI_Sendrecv_replace(&x, 1, MPI_INT, peer, 1, peer, 1, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE);
            usleep(1000); /* "computing": keeps the trace small */
        }
    } else {
        MPI_Recv(&x, 1, MPI_INT, peer, 7 + rank, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}

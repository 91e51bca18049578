/* A deadlock: after a few barriers, each of the two ranks waits in MPI_Recv (tag 7) for
 * a message the other never sends, as both do. The hang tests run it under
 * `overlap trace --hang-timeout` and check that the run is stopped and said to be hung. */
#include <mpi.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 10; i++) MPI_Barrier(MPI_COMM_WORLD);
    int x = 0;
    int peer = (rank + 1) % size;
    MPI_Recv(&x, 1, MPI_INT, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(&x, 1, MPI_INT, peer, 7, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}

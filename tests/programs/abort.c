/* One rank gives up with MPI_Abort while the others wait in a barrier: the trace tests
 * check that every rank's calls up to then are still merged. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double out = rank, in = -1;
    MPI_Request req[2];
    MPI_Irecv(&in, 1, MPI_DOUBLE, (rank + size - 1) % size, 0, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(&out, 1, MPI_DOUBLE, (rank + 1) % size, 0, MPI_COMM_WORLD, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) {
        /* Let the others reach the barrier and their recorders flush. */
        usleep(300 * 1000);
        fprintf(stderr, "abort: rank %d gives up\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}

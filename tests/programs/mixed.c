/* The C half of mixed.f90: a ring turn of its own from C, between the Fortran calls. */
#include <mpi.h>

void c_exchange(int rank, int size) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int out = rank, in = -1;
    MPI_Request requests[2];
    MPI_Irecv(&in, 1, MPI_INT, left, 21, MPI_COMM_WORLD, &requests[0]);
    MPI_Isend(&out, 1, MPI_INT, right, 21, MPI_COMM_WORLD, &requests[1]);
    MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
}

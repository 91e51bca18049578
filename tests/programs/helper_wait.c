/* A wait inside a helper, called from two places, for the call-path tests: with
 * `overlap trace --callpath 2` the helper's MPI_Waitall is two sites, one per caller
 * (mpiP's -k 2); without, one. Rank 1 sleeps before its sends of the first exchange, so
 * rank 0 waits inside the helper there. Each rank prints "issued rank=R waitall=W" to
 * stderr. Any number of ranks >= 2 (pairs 0-1, 2-3, ...; an odd last rank sits out). */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static __attribute__((noinline)) void wait_all(int n, MPI_Request *r) {
    MPI_Waitall(n, r, MPI_STATUSES_IGNORE); /* the helper's wait */
}

static __attribute__((noinline)) void exchange(int peer, double *out, double *in, int tag) {
    MPI_Request r[2];
    MPI_Irecv(in, 1, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(out, 1, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, &r[1]);
    wait_all(2, r); /* first caller */
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, waits = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1;
    double out = rank, in = -1;
    if (peer < size) {
        for (int i = 0; i < 3; i++) {
            if (rank == 1 && i == 0) {
                struct timespec ts = {0, 20 * 1000000L};
                nanosleep(&ts, NULL);
            }
            exchange(peer, &out, &in, i);
            waits++;
        }
        MPI_Request r[2];
        MPI_Irecv(&in, 1, MPI_DOUBLE, peer, 9, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(&out, 1, MPI_DOUBLE, peer, 9, MPI_COMM_WORLD, &r[1]);
        wait_all(2, r); /* second caller */
        waits++;
    }
    fprintf(stderr, "issued rank=%d waitall=%d\n", rank, waits);
    MPI_Finalize();
    return 0;
}

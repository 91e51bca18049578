/* Many cheap calls: each rank probes N times (N the first argument, default 100000)
 * for a message that never comes, then meets the others in a barrier. Its trace is
 * large for how quickly it is made: the fault tests interrupt its merge. */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    long n = argc > 1 ? atol(argv[1]) : 100000;
    int flag;
    for (long i = 0; i < n; i++)
        MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}

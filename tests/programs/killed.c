/* Rank 1 is killed with SIGKILL after 50 barriers and a pause long enough for its
 * recorder to flush, as the kernel's OOM killer or a batch system would kill it: the
 * trace tests check that its file is read up to its last flushed page and reported as
 * cut short. */
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 50; i++) MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        usleep(300 * 1000);
        kill(getpid(), SIGKILL);
    }
    /* Rank 0 waits for a message that never comes; mpiexec ends it when rank 1 dies. */
    int x;
    MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}

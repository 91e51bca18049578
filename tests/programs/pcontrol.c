/* Regions marked with MPI_Pcontrol, both conventions: IPM's named regions
 * (MPI_Pcontrol(1, "name") enters, MPI_Pcontrol(-1, "name") leaves) and mpiP's
 * unnamed on/off (MPI_Pcontrol(1) on, MPI_Pcontrol(0) off).
 *
 *   Barrier | setup: Allreduce | 3 x step: Sendrecv ring | on: Bcast, off | Barrier
 *
 * "step" holds the only Sendrecv calls, "setup" the only Allreduce, the unnamed
 * region the only Bcast; the two Barriers are outside every region. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Pcontrol(0); /* mpiP: profiling off until the part of interest */
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Pcontrol(1, "setup");
    int local = rank, sum = 0;
    MPI_Allreduce(&local, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    usleep(2000);
    MPI_Pcontrol(-1, "setup");

    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int i = 0; i < 3; i++) {
        MPI_Pcontrol(1, "step");
        int out = rank * 10 + i, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, right, i, &in, 1, MPI_INT, left, i, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        usleep(1000 * (rank + 1));
        MPI_Pcontrol(-1, "step");
    }

    MPI_Pcontrol(1); /* mpiP: on */
    int root_value = rank == 0 ? 42 : 0;
    MPI_Bcast(&root_value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    usleep(1000);
    MPI_Pcontrol(0); /* mpiP: off */

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("sum %d, broadcast %d\n", sum, root_value);
    }
    MPI_Finalize();
    return 0;
}

/* Runs until it is stopped: computes, and every few milliseconds all ranks exchange a
 * sum (MPI_Allreduce). The launcher tests stop `overlap trace` while it runs and check
 * that nothing of the run is left and the calls made so far are merged. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    volatile double x = 1.0;
    for (long i = 0;; i++) {
        for (int k = 0; k < 200000; k++) x = x * 1.0000001 + 1e-9;
        double local = x, sum = 0.0;
        MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (i == 0) {
            printf("spinning\n");
            fflush(stdout);
        }
    }
    MPI_Finalize();
    return 0;
}

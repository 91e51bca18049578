/* A plain MPI program that may open a GPU runtime itself, for the "GPU work not
 * recorded" note (issue 42): MPICH's hwloc opens libOpenCL.so inside MPI_Init in every
 * program, which must not count as the program's.
 *
 *   gpu_open          opens nothing: only MPI's libOpenCL is mapped
 *   gpu_open opencl   opens libOpenCL.so.1 with dlopen before MPI_Init, as a program
 *                     using OpenCL would (and fails, exit 3, where it is not installed)
 *
 * Each rank exchanges one integer with its neighbours (an Allreduce). Rank 0 prints the
 * sum. */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "opencl") == 0) {
        if (!dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_GLOBAL)) {
            fprintf(stderr, "gpu_open: %s\n", dlerror());
            return 3;
        }
    }
    MPI_Init(&argc, &argv);
    int rank, sum;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("gpu_open: sum %d\n", sum);
    MPI_Finalize();
    return 0;
}

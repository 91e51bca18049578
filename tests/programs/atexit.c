/* MPI_Finalize from an atexit handler (as a C++ global's destructor would call it): by
 * then exit has destroyed the main thread's thread-locals, yet the call must be traced,
 * not abort the program. */
#include <mpi.h>
#include <stdlib.h>

static void finalize(void) { MPI_Finalize(); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    atexit(finalize);
    MPI_Barrier(MPI_COMM_WORLD);
    return 0;
}

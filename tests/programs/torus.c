/* A periodic two-dimensional halo exchange on an n x 1 torus, with blocking Sendrecvs:
 * along the second dimension every rank is its own neighbour, so half the exchanges are
 * MPI_Sendrecv to the calling rank itself, as in any decomposition with a periodic
 * dimension one rank wide. Even iterations move 8 doubles (eager), odd ones COUNT
 * (rendezvous), between spans of compute.
 *
 *   torus [COUNT]    (default 131072 doubles: 1 MiB)
 *
 * Rank 0 prints one line: the checksum. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ITERS 8

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size, rank;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int dims[2] = {size, 1}, periods[2] = {1, 1};
  MPI_Comm torus;
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &torus);
  MPI_Comm_rank(torus, &rank);
  int count = argc > 1 ? atoi(argv[1]) : 131072;
  double *a = calloc((size_t)count, sizeof *a), *b = calloc((size_t)count, sizeof *b);
  for (int i = 0; i < count; i++) a[i] = rank + i % 7;
  double sum = 0;
  for (int it = 0; it < ITERS; it++) {
    int n = it % 2 ? count : 8;
    for (int d = 0; d < 2; d++) {
      int lo, hi;
      MPI_Cart_shift(torus, d, 1, &lo, &hi);
      MPI_Sendrecv(a, n, MPI_DOUBLE, hi, d, b, n, MPI_DOUBLE, lo, d, torus, MPI_STATUS_IGNORE);
      MPI_Sendrecv(b, n, MPI_DOUBLE, lo, 10 + d, a, n, MPI_DOUBLE, hi, 10 + d, torus,
                   MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < count; i++) sum += a[i] * 1e-6 + b[i] * 1e-7;
  }
  double total = 0;
  MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, torus);
  if (rank == 0) printf("checksum %.6f\n", total);
  free(a);
  free(b);
  MPI_Comm_free(&torus);
  MPI_Finalize();
  return 0;
}

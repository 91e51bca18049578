/* The buffer watch (overlap trace --buffers) and memory the program gives back while a
 * watch is on it: no protection may outlive the buffer. Two ranks; rank 1 receives
 * three messages and releases each buffer before touching it:
 *
 * 1. into a malloc'd buffer it frees, then mallocs the same size again (the allocator
 *    hands back the same block) and fills, then sends back from;
 * 2. into a malloc'd buffer it grows with realloc and writes past the old end;
 * 3. into an mmap'd buffer it unmaps, then maps again at the same address and fills.
 *
 * Rank 0 prints the sums rank 1 sent back.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define N 16384

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size_t bytes = N * sizeof(double);
    double sums[3] = {0};
    if (rank == 0) {
        double *data = malloc(bytes);
        for (int i = 0; i < N; i++)
            data[i] = i;
        double *back = malloc(bytes);
        MPI_Request sent[3];
        for (int tag = 1; tag <= 3; tag++)
            MPI_Isend(data, N, MPI_DOUBLE, 1, tag, MPI_COMM_WORLD, &sent[tag - 1]);
        MPI_Recv(back, N, MPI_DOUBLE, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(sums, 3, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Waitall(3, sent, MPI_STATUSES_IGNORE);
        printf("refilled %.0f, grown %.0f, remapped %.0f, sent back %.0f\n", sums[0], sums[1],
               sums[2], back[N - 1]);
    } else if (rank == 1) {
        MPI_Request req;
        /* 1. Freed, then allocated again. */
        double *a = malloc(bytes);
        MPI_Irecv(a, N, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        free(a);
        double *again = malloc(bytes);
        for (int i = 0; i < N; i++)
            again[i] = 1;
        for (int i = 0; i < N; i++)
            sums[0] += again[i];
        MPI_Send(again, N, MPI_DOUBLE, 0, 4, MPI_COMM_WORLD);
        free(again);

        /* 2. Grown with realloc. */
        double *b = malloc(bytes);
        MPI_Irecv(b, N, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        b = realloc(b, 2 * bytes);
        for (int i = N; i < 2 * N; i++)
            b[i] = 1;
        for (int i = 0; i < 2 * N; i++)
            sums[1] += b[i];
        free(b);

        /* 3. Unmapped, then mapped again at the same address. */
        double *c = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        MPI_Irecv(c, N, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        munmap(c, bytes);
        double *d = mmap(c, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                         -1, 0);
        for (int i = 0; i < N; i++)
            d[i] = 2;
        for (int i = 0; i < N; i++)
            sums[2] += d[i];
        munmap(d, bytes);
        MPI_Send(sums, 3, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}

/* A ring shift that already overlaps, for `overlap suggest`: no move helps. Each step
 * every rank posts the receive of the next block from its left neighbour into one
 * buffer, posts the send of the block it holds to its right neighbour from the other,
 * works on the block it holds while both travel, waits for both, and swaps the two
 * buffers (as a systolic product or a ring all-gather with work does).
 *
 * What each phase touches (the truth a reordering must keep), with `cur` the block held
 * and `next` the one arriving:
 *   MPI_Irecv into next      after the previous step's wait: next was then the block
 *                            being sent
 *   MPI_Isend from cur       after the previous step's wait: cur was then being received
 *   work                     reads cur (reading a buffer being sent is allowed)
 *   MPI_Waitall              before the next step's posts, which reuse both buffers
 * Every post is right after the wait that frees its buffer and every wait right before
 * the next use: the answer must be "nothing to move".
 *
 * Blocks are 4 KiB (one page, page-aligned, sent eagerly). Rank 0 prints one line: the
 * checksum. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define STEPS 30
#define COUNT 512 /* doubles per block: 4 KiB */
#define WORK_MS 2.0
#define PAGE 4096

static double sink;

/* Busy work for about `ms` milliseconds, by the clock; touches only `sink`. */
static void compute(double ms) {
    double t0 = MPI_Wtime(), x = sink;
    while ((MPI_Wtime() - t0) * 1e3 < ms) {
        for (int i = 0; i < 1000; i++) x = x * 0.999999 + 1e-9;
    }
    sink = x;
}

static double work(const double *block) {
    double sum = 0;
    for (int i = 0; i < COUNT; i++) sum += block[i];
    compute(WORK_MS);
    return sum;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double *cur = aligned_alloc(PAGE, COUNT * sizeof(double));
    double *next = aligned_alloc(PAGE, COUNT * sizeof(double));
    for (int i = 0; i < COUNT; i++) cur[i] = rank + 1e-3 * i;
    MPI_Request req[2];
    double sum = 0;

    for (int step = 0; step < STEPS; step++) {
        MPI_Irecv(next, COUNT, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(cur, COUNT, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[1]);
        sum += work(cur);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        double *held = cur;
        cur = next;
        next = held;
    }

    double total = 0;
    MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("nomove: checksum %.6f\n", total);
    free(cur);
    free(next);
    MPI_Finalize();
    return 0;
}

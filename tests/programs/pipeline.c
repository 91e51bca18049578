/* A two-stage pipeline whose receive is read right after its wait, for `overlap suggest`:
 * in each pair of ranks (0 and 1, 2 and 3, ...) the even rank produces BLOCKS blocks and
 * sends each to the odd rank, which receives it and consumes it at once.
 *
 *   pipeline single   the original: one block buffer on each side
 *   pipeline double   two block buffers on each side, used in turn: the consumer posts
 *                     the next receive before consuming, the producer produces the next
 *                     block while the previous one travels. A change of buffers, not of
 *                     order: no reordering of `single` can make it
 *
 * What each phase touches in `single` (the truth a reordering must keep):
 *   producer   produce writes block from its first instruction to its last; MPI_Isend
 *              reads it; MPI_Wait right after, then the next produce: the wait cannot
 *              go later
 *   consumer   MPI_Irecv into block; MPI_Wait right after, then consume reads block
 *              from its first instruction to its last: the wait cannot go later, and
 *              the next MPI_Irecv, which overwrites block, cannot go earlier
 * Nothing can move: the answer must be "nothing to move".
 *
 * Blocks are 256 KiB (a rendezvous message), page-aligned. Rank 0 prints one line: the
 * checksum, the same for both forms. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS 24
#define COUNT 32768 /* doubles per block: 256 KiB */
#define PASSES 30   /* over the block, producing or consuming it: a few ms */
#define PAGE 4096

/* Writes the block from its first instruction to its last. */
static void produce(double *block, int b) {
    for (int i = 0; i < COUNT; i++) block[i] = b + 1e-6 * i;
    for (int p = 0; p < PASSES; p++)
        for (int i = 0; i < COUNT; i++) block[i] = 0.999 * block[i] + 1e-9 * p;
}

/* Reads the block from its first instruction to its last. */
static double consume(const double *block) {
    double sum = 0;
    for (int p = 0; p < PASSES; p++)
        for (int i = 0; i < COUNT; i++) sum += block[i] * (1 + 1e-9 * p);
    return sum;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *form = argc > 1 ? argv[1] : "";
    int buffers = strcmp(form, "double") == 0 ? 2 : 1;
    if (size % 2 != 0 || (buffers == 1 && strcmp(form, "single") != 0)) {
        if (rank == 0) fprintf(stderr, "pipeline: an even number of ranks; single|double\n");
        MPI_Finalize();
        return 2;
    }
    int producer = rank % 2 == 0, peer = producer ? rank + 1 : rank - 1;
    double *block[2];
    for (int k = 0; k < buffers; k++) block[k] = aligned_alloc(PAGE, COUNT * sizeof(double));
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    double sum = 0;

    if (producer) {
        for (int b = 0; b < BLOCKS; b++) {
            int k = b % buffers;
            if (buffers == 2) MPI_Wait(&req[k], MPI_STATUS_IGNORE); /* the send of block b - 2 */
            produce(block[k], b);
            MPI_Isend(block[k], COUNT, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, &req[k]);
            if (buffers == 1) MPI_Wait(&req[k], MPI_STATUS_IGNORE); /* single: right after */
        }
        if (buffers == 2) MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    } else if (buffers == 1) {
        for (int b = 0; b < BLOCKS; b++) {
            MPI_Irecv(block[0], COUNT, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, &req[0]);
            MPI_Wait(&req[0], MPI_STATUS_IGNORE);
            sum += consume(block[0]); /* reads the block right after the wait */
        }
    } else {
        MPI_Irecv(block[0], COUNT, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, &req[0]);
        for (int b = 0; b < BLOCKS; b++) {
            int k = b % 2;
            if (b + 1 < BLOCKS)
                MPI_Irecv(block[1 - k], COUNT, MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, &req[1 - k]);
            MPI_Wait(&req[k], MPI_STATUS_IGNORE);
            sum += consume(block[k]);
        }
    }

    double total = 0;
    MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("pipeline: checksum %.6f\n", total);
    for (int k = 0; k < buffers; k++) free(block[k]);
    MPI_Finalize();
    return 0;
}

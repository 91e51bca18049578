/* A one-dimensional halo exchange on a ring of ranks whose waits sit right after the
 * posts, for `overlap suggest` and its `--confirm`. Each step: post the receives of the
 * two ghost zones, pack both edges into the send buffer, post the sends, wait, compute
 * the interior, unpack the ghosts, update the two boundary cells. The interior work moves
 * from rank to rank (as a moving front or particles would): rank r has the heavy share
 * in the steps where r + step is even, HEAVY_MS against LIGHT_MS.
 *
 *   halo early   the original: both waits right after the posts; every step then waits
 *                for the slower rank's previous step
 *   halo late    the fix: the sends' wait deferred to just before the next step's pack
 *                (the first write of the send buffer), the receives' wait to just before
 *                the unpack (the first read of the receive buffer); the interior, which
 *                touches neither buffer, runs while the ghosts travel
 *
 * What each phase touches (the truth a reordering must keep):
 *   pack      reads the field's edges, writes sendbuf
 *   interior  reads and writes the field's interior only
 *   unpack    reads recvbuf, writes the ghost cells
 *   boundary  reads the ghost cells, writes the field's edges
 *
 * The buffers are whole pages, page-aligned, as the buffer watch (`overlap trace
 * --buffers`) needs to watch every byte. Rank 0 prints one line: the checksum, the same
 * for both forms. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 24
#define HALO 512 /* doubles per ghost zone: 4 KiB, one page, sent eagerly */
#define CELLS (8 * HALO)
#define HEAVY_MS 6.0
#define LIGHT_MS 1.0
#define PAGE 4096
#define TO_LEFT 1
#define TO_RIGHT 2

static double sink;

/* Busy work for about `ms` milliseconds, by the clock; touches only `sink`. */
static void compute(double ms) {
    double t0 = MPI_Wtime(), x = sink;
    while ((MPI_Wtime() - t0) * 1e3 < ms) {
        for (int i = 0; i < 1000; i++) x = x * 0.999999 + 1e-9;
    }
    sink = x;
}

static double *pages(size_t doubles) {
    size_t bytes = (doubles * sizeof(double) + PAGE - 1) / PAGE * PAGE;
    double *p = aligned_alloc(PAGE, bytes);
    memset(p, 0, bytes);
    return p;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *form = argc > 1 ? argv[1] : "";
    int late = strcmp(form, "late") == 0;
    if (!late && strcmp(form, "early") != 0) {
        if (rank == 0) fprintf(stderr, "halo: early|late\n");
        MPI_Finalize();
        return 2;
    }
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double *field = pages(CELLS), *ghost = pages(2 * HALO);
    double *sendbuf = pages(2 * HALO), *recvbuf = pages(2 * HALO);
    for (int i = 0; i < CELLS; i++) field[i] = rank + 1e-3 * i;
    MPI_Request recv[2], send[2];

    for (int step = 0; step < STEPS; step++) {
        MPI_Irecv(recvbuf, HALO, MPI_DOUBLE, left, TO_RIGHT, MPI_COMM_WORLD, &recv[0]);
        MPI_Irecv(recvbuf + HALO, HALO, MPI_DOUBLE, right, TO_LEFT, MPI_COMM_WORLD, &recv[1]);
        if (late && step > 0)
            MPI_Waitall(2, send, MPI_STATUSES_IGNORE); /* late: the previous step's sends */
        /* pack */
        memcpy(sendbuf, field, HALO * sizeof(double));
        memcpy(sendbuf + HALO, field + CELLS - HALO, HALO * sizeof(double));
        MPI_Isend(sendbuf, HALO, MPI_DOUBLE, left, TO_LEFT, MPI_COMM_WORLD, &send[0]);
        MPI_Isend(sendbuf + HALO, HALO, MPI_DOUBLE, right, TO_RIGHT, MPI_COMM_WORLD, &send[1]);
        if (!late) {
            MPI_Waitall(2, recv, MPI_STATUSES_IGNORE); /* early: the receives */
            MPI_Waitall(2, send, MPI_STATUSES_IGNORE); /* early: the sends */
        }
        /* interior */
        compute((rank + step) % 2 == 0 ? HEAVY_MS : LIGHT_MS);
        for (int i = HALO; i < CELLS - HALO; i++) field[i] = 0.5 * field[i] + 0.25;
        if (late) MPI_Waitall(2, recv, MPI_STATUSES_IGNORE); /* late: the receives */
        /* unpack */
        memcpy(ghost, recvbuf, 2 * HALO * sizeof(double));
        /* boundary */
        for (int i = 0; i < HALO; i++) {
            field[i] = 0.5 * (field[i] + ghost[HALO - 1 - i]);
            field[CELLS - 1 - i] = 0.5 * (field[CELLS - 1 - i] + ghost[HALO + i]);
        }
    }
    if (late) MPI_Waitall(2, send, MPI_STATUSES_IGNORE);

    double sum = 0, total = 0;
    for (int i = 0; i < CELLS; i++) sum += field[i];
    MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("halo: checksum %.6f\n", total);
    free(field);
    free(ghost);
    free(sendbuf);
    free(recvbuf);
    MPI_Finalize();
    return 0;
}

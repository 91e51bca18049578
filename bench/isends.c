/* How `overlap suggest`'s cost grows with the run: rank 0 posts N `MPI_Isend`s of 8
 * bytes to rank 1, computes, then waits for all of them with one `MPI_Waitall`; rank 1
 * posts the N matching `MPI_Irecv`s, computes, and waits likewise. That is one
 * iteration; ITERS iterations make the run (each rank makes about N + 2 calls per
 * iteration). One iteration of N = 100 000 is the run issue 36 names (one rank posting
 * 100 000 Isends then one Waitall); many iterations of a smaller N give a run of 10^6
 * operations whose iterations repeat.
 *
 *   isends N ITERS [early] [tags]
 *
 * `early` waits right after the posts and computes after (the wait is false overlap:
 * suggest moves it past the compute, and evaluates that move's gain); without it the
 * compute comes first (nothing to move). `tags` gives message i the tag i modulo 32 768, MPI's least tag bound (a sort key
 * of N groups for lower-tag-first, in one iteration of N posts) instead of one tag.
 *
 * scripts/bench-suggest.sh traces it under `overlap trace` and times `overlap suggest`.
 * Prints nothing; exits 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double sink;

/* Busy work for about `us` microseconds, by the clock. */
static void compute(double us) {
    double t0 = MPI_Wtime(), x = sink;
    while ((MPI_Wtime() - t0) * 1e6 < us) {
        for (int i = 0; i < 100; i++) x = x * 0.999999 + 1e-9;
    }
    sink = x;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int early = 0, tags = 0, usage = argc < 3 || size != 2;
    for (int a = 3; a < argc; a++) {
        if (strcmp(argv[a], "early") == 0) early = 1;
        else if (strcmp(argv[a], "tags") == 0) tags = 1;
        else usage = 1;
    }
    if (usage) {
        if (rank == 0) fprintf(stderr, "usage: mpiexec -n 2 isends N ITERS [early] [tags]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long n = atol(argv[1]), iters = atol(argv[2]);
    if (n < 1 || iters < 1) {
        if (rank == 0) fprintf(stderr, "isends: N and ITERS must be at least 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double *buf = calloc((size_t)n, sizeof(double));
    MPI_Request *req = malloc((size_t)n * sizeof(MPI_Request));
    if (!buf || !req) MPI_Abort(MPI_COMM_WORLD, 1);
    for (long it = 0; it < iters; it++) {
        for (long i = 0; i < n; i++) {
            if (rank == 0) {
                buf[i] = (double)(it + i);
                MPI_Isend(&buf[i], 1, MPI_DOUBLE, 1, tags ? (int)(i % 32768) : 7, MPI_COMM_WORLD, &req[i]);
            } else {
                MPI_Irecv(&buf[i], 1, MPI_DOUBLE, 0, tags ? (int)(i % 32768) : 7, MPI_COMM_WORLD, &req[i]);
            }
        }
        if (early) MPI_Waitall((int)n, req, MPI_STATUSES_IGNORE);
        compute(20.0);
        if (!early) MPI_Waitall((int)n, req, MPI_STATUSES_IGNORE);
    }
    free(req);
    free(buf);
    MPI_Finalize();
    return 0;
}

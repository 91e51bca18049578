/* The OSU micro-benchmarks' two loops (osu_latency, osu_bw), plus the cost of the
 * cheapest wrapped call, on ranks 0 and 1: what scripts/bench-mpi.sh runs untraced,
 * under the preload and under mpiP, side by side.
 *
 * latency (osu_latency): rank 0 MPI_Send then MPI_Recv, rank 1 the reverse, SKIP
 *   warm-up round trips then ITERS timed ones; one-way = elapsed / (2 ITERS).
 * bandwidth (osu_bw): per window, rank 0 posts WINDOW MPI_Isend and MPI_Waitall, rank 1
 *   WINDOW MPI_Irecv (into the same buffer, as OSU does) and MPI_Waitall, then rank 1
 *   sends a 4-byte ack that rank 0 receives; SKIP warm-up windows then ITERS timed ones;
 *   MB/s = bytes * WINDOW * ITERS / elapsed / 1e6 (rank 0's clock).
 * call: MPI_Test on MPI_REQUEST_NULL, the cheapest wrapped call: with the preload it is
 *   nearly all pass-through and recording; the median over batches of ns per call.
 *
 * Every receive takes a real status, as in OSU. Prints, from rank 0, one line a figure:
 *   lat_ns <bytes> <one-way latency in ns>
 *   bw_mbs <bytes> <MB/s>
 *   call_ns <ns per MPI_Test(MPI_REQUEST_NULL)>
 * Usage: osu [BYTES...]   (default: 8 65536)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64
#define LARGE 8192 /* above this, fewer iterations (as OSU) */
#define CALL_BATCH 2000
#define CALL_BATCHES 31

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double latency_ns(int rank, char *buf, int bytes) {
    int iters = bytes > LARGE ? 2000 : 20000, skip = bytes > LARGE ? 100 : 1000;
    MPI_Status st;
    double t0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < skip + iters; i++) {
        if (i == skip) t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_CHAR, 1, 1, MPI_COMM_WORLD, &st);
        } else if (rank == 1) {
            MPI_Recv(buf, bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &st);
            MPI_Send(buf, bytes, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / (2.0 * iters) * 1e9;
}

static double bandwidth_mbs(int rank, char *buf, int bytes) {
    int iters = bytes > LARGE ? 100 : 1000, skip = bytes > LARGE ? 10 : 100;
    MPI_Request req[WINDOW];
    MPI_Status st[WINDOW];
    char ack[4] = {0};
    double t0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < skip + iters; i++) {
        if (i == skip) t0 = MPI_Wtime();
        if (rank == 0) {
            for (int j = 0; j < WINDOW; j++)
                MPI_Isend(buf, bytes, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &req[j]);
            MPI_Waitall(WINDOW, req, st);
            MPI_Recv(ack, 4, MPI_CHAR, 1, 3, MPI_COMM_WORLD, &st[0]);
        } else if (rank == 1) {
            for (int j = 0; j < WINDOW; j++)
                MPI_Irecv(buf, bytes, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[j]);
            MPI_Waitall(WINDOW, req, st);
            MPI_Send(ack, 4, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
        }
    }
    double secs = MPI_Wtime() - t0;
    return (double)bytes * WINDOW * iters / secs / 1e6;
}

static double call_ns(void) {
    double ns[CALL_BATCHES];
    for (int b = -1; b < CALL_BATCHES; b++) { /* batch -1 warms up */
        MPI_Request null = MPI_REQUEST_NULL;
        int flag;
        double t0 = MPI_Wtime();
        for (int i = 0; i < CALL_BATCH; i++) MPI_Test(&null, &flag, MPI_STATUS_IGNORE);
        if (b >= 0) ns[b] = (MPI_Wtime() - t0) / CALL_BATCH * 1e9;
    }
    qsort(ns, CALL_BATCHES, sizeof(double), cmp);
    return ns[CALL_BATCHES / 2];
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "osu: run on 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int default_sizes[] = {8, 65536};
    int nsizes = argc > 1 ? argc - 1 : 2, sizes[64];
    if (nsizes > 64) nsizes = 64;
    int largest = 0;
    for (int k = 0; k < nsizes; k++) {
        sizes[k] = argc > 1 ? atoi(argv[k + 1]) : default_sizes[k];
        if (sizes[k] <= 0) {
            fprintf(stderr, "osu: message sizes must be positive bytes\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (sizes[k] > largest) largest = sizes[k];
    }
    char *buf = malloc(largest);
    memset(buf, 'a', largest);
    for (int k = 0; k < nsizes; k++) {
        double lat = latency_ns(rank, buf, sizes[k]);
        if (rank == 0) printf("lat_ns %d %.1f\n", sizes[k], lat);
    }
    for (int k = 0; k < nsizes; k++) {
        double bw = bandwidth_mbs(rank, buf, sizes[k]);
        if (rank == 0) printf("bw_mbs %d %.2f\n", sizes[k], bw);
    }
    double call = call_ns();
    if (rank == 0) printf("call_ns %.1f\n", call);
    free(buf);
    MPI_Finalize();
    return 0;
}

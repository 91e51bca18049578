/* What the buffer watch (overlap trace --buffers) costs, one rank talking to itself
 * (scripts/bench-buffers.sh runs it untraced, under the preload, and under the preload
 * with the watch, alternating). Each iteration posts a receive and a send of SIZE bytes
 * (page-aligned buffers: every page is watched), completes both with one Waitall, then
 * writes the send buffer's first byte and reads the receive buffer's first byte:
 *
 *   completion  the Irecv + Isend + Waitall, per request: with the watch, two watches
 *               armed (and the ones of the previous iteration ended as the posts hand
 *               the buffers to MPI again);
 *   touch       one first touch of a watched buffer: the fault, the handler, the
 *               protection restored (per touch; without the watch, a plain access).
 *
 *   watch SIZE ITERS    prints "completion NS touch NS" (medians, ns)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return v[n / 2];
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    size_t size = argc > 1 ? strtoul(argv[1], NULL, 10) : 65536;
    int iters = argc > 2 ? atoi(argv[2]) : 1000;
    int warmup = iters / 10;
    volatile char *out, *in;
    if (posix_memalign((void **)&out, 4096, size) || posix_memalign((void **)&in, 4096, size))
        MPI_Abort(MPI_COMM_WORLD, 2);
    for (size_t i = 0; i < size; i++)
        out[i] = (char)i, in[i] = 0;
    uint64_t *completion = calloc(iters, 8), *touch = calloc(iters, 8);
    int count = (int)size;
    long sum = 0;
    for (int k = 0; k < warmup + iters; k++) {
        MPI_Request req[2];
        uint64_t t0 = now_ns();
        MPI_Irecv((void *)in, count, MPI_BYTE, 0, 1, MPI_COMM_SELF, &req[0]);
        MPI_Isend((void *)out, count, MPI_BYTE, 0, 1, MPI_COMM_SELF, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        uint64_t t1 = now_ns();
        out[0] = (char)k;
        uint64_t t2 = now_ns();
        sum += in[0];
        uint64_t t3 = now_ns();
        if (k >= warmup) {
            completion[k - warmup] = (t1 - t0) / 2;
            touch[k - warmup] = (t2 - t1 + t3 - t2) / 2;
        }
    }
    printf("completion %lu touch %lu (check %ld)\n", (unsigned long)median(completion, iters),
           (unsigned long)median(touch, iters), sum % 7);
    MPI_Finalize();
    return 0;
}

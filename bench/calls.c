/* Instructions per wrapped call, one rank, messages to itself: what
 * scripts/bench-instructions.sh counts under callgrind (deterministic, unlike the
 * wall-clock figures of bench/osu.c on a shared machine).
 *
 * Usage: calls MODE N, MODE one of
 *   test        N MPI_Test(MPI_REQUEST_NULL): the cheapest wrapped call;
 *   window      N/64 windows of 64 MPI_Irecv, 64 MPI_Isend, one MPI_Waitall(128): per
 *               N, a post each way and their two completions (osu_bw's calls, both
 *               ends on one rank);
 *   pingpong    N times MPI_Irecv, MPI_Send, MPI_Wait;
 *   testactive  N times MPI_Irecv, an MPI_Test that finds it pending, MPI_Send, and
 *               MPI_Test until it completes.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const char *mode = argc > 1 ? argv[1] : "test";
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    char sbuf[WINDOW][8], rbuf[WINDOW][8];
    MPI_Request req[2 * WINDOW];
    MPI_Status st[2 * WINDOW];
    int flag;
    memset(sbuf, 1, sizeof sbuf);
    if (!strcmp(mode, "test")) {
        for (int i = 0; i < n; i++) {
            MPI_Request r = MPI_REQUEST_NULL;
            MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
        }
    } else if (!strcmp(mode, "window")) {
        for (int i = 0; i < n / WINDOW; i++) {
            for (int j = 0; j < WINDOW; j++)
                MPI_Irecv(rbuf[j], 8, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[j]);
            for (int j = 0; j < WINDOW; j++)
                MPI_Isend(sbuf[j], 8, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[WINDOW + j]);
            MPI_Waitall(2 * WINDOW, req, st);
        }
    } else if (!strcmp(mode, "pingpong")) {
        for (int i = 0; i < n; i++) {
            MPI_Irecv(rbuf[0], 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &req[0]);
            MPI_Send(sbuf[0], 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            MPI_Wait(&req[0], &st[0]);
        }
    } else if (!strcmp(mode, "testactive")) {
        for (int i = 0; i < n; i++) {
            MPI_Irecv(rbuf[0], 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &req[0]);
            MPI_Test(&req[0], &flag, &st[0]);
            MPI_Send(sbuf[0], 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            do MPI_Test(&req[0], &flag, &st[0]); while (!flag);
        }
    } else {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return 0;
}

/* Requests that cross threads, and a datatype handle reused after MPI_Type_free, under
 * MPI_THREAD_MULTIPLE on 2 ranks (tests/cli/preload_threads.rs).
 *
 * Each round, the main thread posts a receive and a send (tag 1) and hands both to a
 * helper thread, which completes them; the helper posts its own pair (tag 2), which
 * the main thread completes after joining it. Meanwhile both threads post and complete
 * pairs of their own (tags 5 and 6) at the same time. Then a derived type of 16 bytes
 * is sent (tag 3), freed, and a type of 64 bytes is created and sent (tag 4): MPICH
 * usually hands the second the first's handle.
 *
 * Prints to stderr: "threads rank=R rounds=N reused=0|1". */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 50

static int rank, peer;
static MPI_Request handed[2];
static double sendbuf[2], recvbuf[2], ownsend[2], ownrecv[2];

static void own_pair(int tag) {
    MPI_Request r[2];
    double out = tag, in = 0;
    MPI_Irecv(&in, 1, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&out, 1, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
}

static void *helper(void *arg) {
    (void)arg;
    /* Completes the main thread's pair. */
    MPI_Waitall(2, handed, MPI_STATUSES_IGNORE);
    own_pair(6);
    /* Posts a pair for the main thread to complete. */
    MPI_Irecv(&ownrecv[0], 1, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, &handed[0]);
    MPI_Isend(&ownsend[0], 1, MPI_DOUBLE, peer, 2, MPI_COMM_WORLD, &handed[1]);
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "MPI_THREAD_MULTIPLE is not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = 1 - rank;
    for (int round = 0; round < ROUNDS; round++) {
        MPI_Irecv(&recvbuf[0], 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &handed[0]);
        MPI_Isend(&sendbuf[0], 1, MPI_DOUBLE, peer, 1, MPI_COMM_WORLD, &handed[1]);
        pthread_t t;
        pthread_create(&t, NULL, helper, NULL);
        own_pair(5);
        pthread_join(t, NULL);
        MPI_Status st[2];
        MPI_Waitall(2, handed, st);
    }
    MPI_Datatype small, large;
    int ints[4] = {1, 2, 3, 4}, got[4];
    double doubles[8] = {0}, gotd[8];
    MPI_Type_contiguous(4, MPI_INT, &small);
    MPI_Type_commit(&small);
    MPI_Sendrecv(ints, 1, small, peer, 3, got, 1, small, peer, 3, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Datatype first = small;
    MPI_Type_free(&small);
    MPI_Type_contiguous(8, MPI_DOUBLE, &large);
    MPI_Type_commit(&large);
    MPI_Sendrecv(doubles, 1, large, peer, 4, gotd, 1, large, peer, 4, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    int reused = large == first;
    MPI_Type_free(&large);
    fprintf(stderr, "threads rank=%d rounds=%d reused=%d\n", rank, ROUNDS, reused);
    MPI_Finalize();
    return 0;
}

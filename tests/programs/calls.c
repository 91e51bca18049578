/* Every MPI call the preload wraps, a known number of times, for the trace tests.
 *
 * Run with an even number of ranks. Rank 0 prints one deterministic result line to
 * stdout; every rank prints the counts it cannot know in advance (polling loops) to
 * stderr as "issued rank=R MPI_Testsome=N MPI_Iprobe=M". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ITERS 3

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size % 2 != 0) {
        if (rank == 0) fprintf(stderr, "calls: run with an even number of ranks\n");
        MPI_Finalize();
        return 2;
    }
    int right = (rank + 1) % size, left = (rank + size - 1) % size, partner = rank ^ 1;
    int even = rank % 2 == 0;
    long check = 0;
    double out = rank + 1, in = 0;
    MPI_Request req[2];
    MPI_Status st[2];

    /* Ring: Irecv, Isend, Waitall. */
    for (int i = 0; i < ITERS; i++) {
        MPI_Irecv(&in, 1, MPI_DOUBLE, left, 10, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(&out, 1, MPI_DOUBLE, right, 10, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, st);
        check += (long)in;
    }

    /* Waitany until both are done: exactly two calls. */
    MPI_Irecv(&in, 1, MPI_DOUBLE, left, 11, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(&out, 1, MPI_DOUBLE, right, 11, MPI_COMM_WORLD, &req[1]);
    for (int done = 0; done < 2; done++) {
        int index;
        MPI_Waitany(2, req, &index, MPI_STATUS_IGNORE);
    }
    check += (long)in;

    /* Testsome until both are done: the number of calls is up to MPI. */
    int testsome_calls = 0;
    MPI_Irecv(&in, 1, MPI_DOUBLE, left, 12, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(&out, 1, MPI_DOUBLE, right, 12, MPI_COMM_WORLD, &req[1]);
    for (int done = 0; done < 2;) {
        int outcount, indices[2];
        MPI_Testsome(2, req, &outcount, indices, MPI_STATUSES_IGNORE);
        testsome_calls++;
        if (outcount != MPI_UNDEFINED) done += outcount;
    }
    check += (long)in;

    /* Persistent requests: Startall/Waitall, then Start/Wait each, then free them. */
    double pin = 0, pout = rank + 100;
    MPI_Request persistent[2];
    MPI_Recv_init(&pin, 1, MPI_DOUBLE, left, 13, MPI_COMM_WORLD, &persistent[0]);
    MPI_Send_init(&pout, 1, MPI_DOUBLE, right, 13, MPI_COMM_WORLD, &persistent[1]);
    for (int i = 0; i < ITERS; i++) {
        MPI_Startall(2, persistent);
        MPI_Waitall(2, persistent, MPI_STATUSES_IGNORE);
        check += (long)pin;
    }
    MPI_Start(&persistent[0]);
    MPI_Start(&persistent[1]);
    MPI_Wait(&persistent[0], MPI_STATUS_IGNORE);
    MPI_Wait(&persistent[1], MPI_STATUS_IGNORE);
    MPI_Request_free(&persistent[0]);
    MPI_Request_free(&persistent[1]);

    /* Blocking pairs: Send/Recv both ways, Ssend, Probe then Recv, Iprobe then Recv. */
    double a = rank, b = 0;
    if (even) {
        MPI_Send(&a, 1, MPI_DOUBLE, partner, 20, MPI_COMM_WORLD);
        MPI_Recv(&b, 1, MPI_DOUBLE, partner, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Ssend(&a, 1, MPI_DOUBLE, partner, 22, MPI_COMM_WORLD);
        MPI_Send(&a, 1, MPI_DOUBLE, partner, 23, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&b, 1, MPI_DOUBLE, partner, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&a, 1, MPI_DOUBLE, partner, 21, MPI_COMM_WORLD);
        MPI_Recv(&b, 1, MPI_DOUBLE, partner, 22, MPI_COMM_WORLD, &st[0]);
        MPI_Probe(partner, 23, MPI_COMM_WORLD, &st[0]);
        MPI_Recv(&b, 1, MPI_DOUBLE, partner, 23, MPI_COMM_WORLD, &st[0]);
    }
    int iprobe_calls = 0;
    if (even) {
        int flag = 0;
        while (!flag) {
            MPI_Iprobe(partner, 24, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            iprobe_calls++;
        }
        MPI_Recv(&b, 1, MPI_DOUBLE, partner, 24, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Send(&a, 1, MPI_DOUBLE, partner, 24, MPI_COMM_WORLD);
    }
    check += (long)b;
    MPI_Sendrecv(&out, 1, MPI_DOUBLE, right, 25, &in, 1, MPI_DOUBLE, left, 25, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    check += (long)in;
    double inout = rank;
    MPI_Sendrecv_replace(&inout, 1, MPI_DOUBLE, right, 26, left, 26, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
    check += (long)inout;

    /* Collectives, once each. */
    int *one = malloc(sizeof(int) * size), *all = malloc(sizeof(int) * size);
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) {
        one[i] = rank * size + i;
        counts[i] = 1;
        displs[i] = i;
    }
    int x = rank, y = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rank, &y, 1, MPI_INT, MPI_SUM, size - 1, MPI_COMM_WORLD);
    MPI_Allreduce(&rank, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check += y;
    MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Allgatherv(&rank, 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoall(one, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoallv(one, counts, displs, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
    MPI_Gather(&rank, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gatherv(&rank, 1, MPI_INT, all, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatter(one, 1, MPI_INT, &y, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatterv(one, counts, displs, MPI_INT, &y, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Request nb;
    MPI_Ibarrier(MPI_COMM_WORLD, &nb);
    MPI_Wait(&nb, MPI_STATUS_IGNORE);
    MPI_Iallreduce(&rank, &y, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &nb);
    MPI_Wait(&nb, MPI_STATUS_IGNORE);
    check += y;

    /* A communicator of each parity: its ranks are recorded as world ranks. */
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Allreduce(&rank, &y, 1, MPI_INT, MPI_SUM, half);
    MPI_Barrier(half);
    MPI_Comm_free(&half);
    check += y;

    long total = 0;
    MPI_Reduce(&check, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("calls: %d ranks, checksum %ld\n", size, total);
    fprintf(stderr, "issued rank=%d MPI_Testsome=%d MPI_Iprobe=%d\n", rank, testsome_calls,
            iprobe_calls);
    free(one);
    free(all);
    free(counts);
    free(displs);
    MPI_Finalize();
    return 0;
}

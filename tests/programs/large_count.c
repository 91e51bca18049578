/* Every MPI-4 large-count (`_c`) call the preload records, MPI_Isendrecv and
 * MPI_Isendrecv_replace (both forms), the matched probes and receives (Mprobe,
 * Improbe, Mrecv, Imrecv) and the persistent send inits of every mode, for the trace
 * tests. MPI 4 only (MPICH 4 has them; Open MPI 4.1 has none).
 *
 * Every MPI call under test goes through CALL, which counts it by the name the program
 * called. At the end every rank prints to stderr "issued rank=R MPI_Isend_c=2 ..." and
 * rank 0 prints one result line to stdout. Any number of ranks >= 2; each rank talks to
 * its neighbours on a ring. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    const char *name;
    long n;
} counted[160];
static int kinds = 0;

static void note(const char *name) {
    for (int i = 0; i < kinds; i++)
        if (strcmp(counted[i].name, name) == 0) {
            counted[i].n++;
            return;
        }
    counted[kinds].name = name;
    counted[kinds++].n = 1;
}

#define CALL(fn, ...)     \
    do {                  \
        fn(__VA_ARGS__);  \
        note(#fn);        \
    } while (0)

#define N 4

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Count n = N;
    double a[N], b[N], *many = malloc(sizeof(double) * N * size), *more = malloc(sizeof(double) * N * size);
    MPI_Count *counts = malloc(sizeof(MPI_Count) * size);
    /* Displacements in elements (the v forms) and in bytes (the w forms). */
    MPI_Aint *displs = malloc(sizeof(MPI_Aint) * size), *wdispls = malloc(sizeof(MPI_Aint) * size);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * size);
    for (int i = 0; i < size; i++) {
        counts[i] = N;
        displs[i] = (MPI_Aint)i * N;
        wdispls[i] = (MPI_Aint)i * N * sizeof(double);
        types[i] = MPI_DOUBLE;
    }
    for (int i = 0; i < N; i++) a[i] = rank + i;
    for (int i = 0; i < N * size; i++) many[i] = rank;
    MPI_Status st;
    MPI_Request r[4];

    /* Blocking point-to-point around the ring. */
    int bsize = 4 * (N * sizeof(double) + MPI_BSEND_OVERHEAD);
    void *attached = malloc(bsize);
    MPI_Buffer_attach(attached, bsize);
    CALL(MPI_Sendrecv_c, a, n, MPI_DOUBLE, right, 1, b, n, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &st);
    CALL(MPI_Sendrecv_replace_c, a, n, MPI_DOUBLE, right, 2, left, 2, MPI_COMM_WORLD, &st);
    CALL(MPI_Bsend_c, a, n, MPI_DOUBLE, right, 3, MPI_COMM_WORLD);
    CALL(MPI_Recv_c, b, n, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &st);
    /* Around the ring in turn: rank 0 sends first, every other rank receives first (a
     * synchronous send returns only once its receive has started). */
    for (int turn = 0; turn < 2; turn++) {
        if ((rank == 0) == (turn == 0)) {
            CALL(MPI_Send_c, a, n, MPI_DOUBLE, right, 4, MPI_COMM_WORLD);
            CALL(MPI_Ssend_c, a, n, MPI_DOUBLE, right, 5, MPI_COMM_WORLD);
        } else {
            CALL(MPI_Recv_c, b, n, MPI_DOUBLE, left, 4, MPI_COMM_WORLD, &st);
            CALL(MPI_Recv_c, b, n, MPI_DOUBLE, left, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    /* A ready send needs its receive posted first: posted, then a barrier. */
    CALL(MPI_Irecv_c, b, n, MPI_DOUBLE, left, 6, MPI_COMM_WORLD, &r[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_Rsend_c, a, n, MPI_DOUBLE, right, 6, MPI_COMM_WORLD);
    CALL(MPI_Wait, &r[0], &st);

    /* Non-blocking point-to-point. */
    CALL(MPI_Irecv_c, b, n, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &r[0]);
    CALL(MPI_Isend_c, a, n, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &r[1]);
    CALL(MPI_Waitall, 2, r, MPI_STATUSES_IGNORE);
    CALL(MPI_Irecv_c, b, n, MPI_DOUBLE, left, 8, MPI_COMM_WORLD, &r[0]);
    CALL(MPI_Issend_c, a, n, MPI_DOUBLE, right, 8, MPI_COMM_WORLD, &r[1]);
    CALL(MPI_Waitall, 2, r, MPI_STATUSES_IGNORE);
    CALL(MPI_Irecv_c, b, n, MPI_DOUBLE, left, 9, MPI_COMM_WORLD, &r[0]);
    CALL(MPI_Ibsend_c, a, n, MPI_DOUBLE, right, 9, MPI_COMM_WORLD, &r[1]);
    CALL(MPI_Waitall, 2, r, MPI_STATUSES_IGNORE);
    CALL(MPI_Irecv_c, b, n, MPI_DOUBLE, left, 10, MPI_COMM_WORLD, &r[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    CALL(MPI_Irsend_c, a, n, MPI_DOUBLE, right, 10, MPI_COMM_WORLD, &r[1]);
    CALL(MPI_Waitall, 2, r, MPI_STATUSES_IGNORE);

    /* MPI-4's non-blocking Sendrecv, in both count forms. */
    CALL(MPI_Isendrecv, a, N, MPI_DOUBLE, right, 11, b, N, MPI_DOUBLE, left, 11, MPI_COMM_WORLD, &r[0]);
    CALL(MPI_Wait, &r[0], &st);
    CALL(MPI_Isendrecv_c, a, n, MPI_DOUBLE, right, 12, b, n, MPI_DOUBLE, left, 12, MPI_COMM_WORLD, &r[0]);
    CALL(MPI_Wait, &r[0], MPI_STATUS_IGNORE);
    CALL(MPI_Isendrecv_replace, a, N, MPI_DOUBLE, right, 13, left, 13, MPI_COMM_WORLD, &r[0]);
    CALL(MPI_Wait, &r[0], &st);
    CALL(MPI_Isendrecv_replace_c, a, n, MPI_DOUBLE, right, 14, left, 14, MPI_COMM_WORLD, &r[0]);
    CALL(MPI_Wait, &r[0], &st);

    /* Matched probes: blocking and not, each received blocking and not. */
    MPI_Message m;
    int flag = 0;
    CALL(MPI_Isend_c, a, n, MPI_DOUBLE, right, 15, MPI_COMM_WORLD, &r[1]);
    CALL(MPI_Mprobe, left, 15, MPI_COMM_WORLD, &m, &st);
    CALL(MPI_Mrecv_c, b, n, MPI_DOUBLE, &m, MPI_STATUS_IGNORE);
    CALL(MPI_Isend_c, a, n, MPI_DOUBLE, right, 16, MPI_COMM_WORLD, &r[2]);
    CALL(MPI_Mprobe, MPI_ANY_SOURCE, 16, MPI_COMM_WORLD, &m, MPI_STATUS_IGNORE);
    CALL(MPI_Imrecv_c, b, n, MPI_DOUBLE, &m, &r[0]);
    CALL(MPI_Wait, &r[0], &st);
    CALL(MPI_Isend, a, N, MPI_DOUBLE, right, 17, MPI_COMM_WORLD, &r[3]);
    while (!flag) CALL(MPI_Improbe, left, 17, MPI_COMM_WORLD, &flag, &m, &st);
    CALL(MPI_Mrecv, b, N, MPI_DOUBLE, &m, &st);
    CALL(MPI_Waitall, 3, &r[1], MPI_STATUSES_IGNORE);

    /* Persistent requests of every send mode, started once each. */
    MPI_Request p[2];
    for (int k = 0; k < 4; k++) {
        CALL(MPI_Recv_init_c, b, n, MPI_DOUBLE, left, 20 + k, MPI_COMM_WORLD, &p[0]);
        if (k == 0) CALL(MPI_Send_init_c, a, n, MPI_DOUBLE, right, 20 + k, MPI_COMM_WORLD, &p[1]);
        if (k == 1) CALL(MPI_Bsend_init_c, a, n, MPI_DOUBLE, right, 20 + k, MPI_COMM_WORLD, &p[1]);
        if (k == 2) CALL(MPI_Ssend_init_c, a, n, MPI_DOUBLE, right, 20 + k, MPI_COMM_WORLD, &p[1]);
        if (k == 3) CALL(MPI_Rsend_init_c, a, n, MPI_DOUBLE, right, 20 + k, MPI_COMM_WORLD, &p[1]);
        CALL(MPI_Start, &p[0]);
        MPI_Barrier(MPI_COMM_WORLD); /* every receive is started before the ready send */
        CALL(MPI_Start, &p[1]);
        CALL(MPI_Waitall, 2, p, MPI_STATUSES_IGNORE);
        CALL(MPI_Request_free, &p[0]);
        CALL(MPI_Request_free, &p[1]);
    }
    MPI_Buffer_detach(&attached, &bsize);
    free(attached);

    /* Collectives in their three forms. */
    MPI_Request q;
    MPI_Info info = MPI_INFO_NULL;
#define ALL_FORMS(blocking, nonblocking, persistent, ...)          \
    do {                                                           \
        CALL(blocking, __VA_ARGS__);                               \
        CALL(nonblocking, __VA_ARGS__, &q);                        \
        CALL(MPI_Wait, &q, MPI_STATUS_IGNORE);                     \
        CALL(persistent, __VA_ARGS__, info, &q);                   \
        CALL(MPI_Start, &q);                                       \
        CALL(MPI_Wait, &q, MPI_STATUS_IGNORE);                     \
        CALL(MPI_Request_free, &q);                                \
    } while (0)
    ALL_FORMS(MPI_Bcast_c, MPI_Ibcast_c, MPI_Bcast_init_c, a, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Allgather_c, MPI_Iallgather_c, MPI_Allgather_init_c, a, n, MPI_DOUBLE, many, n, MPI_DOUBLE, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Alltoall_c, MPI_Ialltoall_c, MPI_Alltoall_init_c, many, n, MPI_DOUBLE, more, n, MPI_DOUBLE, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Allgatherv_c, MPI_Iallgatherv_c, MPI_Allgatherv_init_c, a, n, MPI_DOUBLE, many, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Alltoallv_c, MPI_Ialltoallv_c, MPI_Alltoallv_init_c, many, counts, displs, MPI_DOUBLE, more, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Alltoallw_c, MPI_Ialltoallw_c, MPI_Alltoallw_init_c, many, counts, wdispls, types, more, counts, wdispls, types, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Gather_c, MPI_Igather_c, MPI_Gather_init_c, a, n, MPI_DOUBLE, many, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Gatherv_c, MPI_Igatherv_c, MPI_Gatherv_init_c, a, n, MPI_DOUBLE, many, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Scatter_c, MPI_Iscatter_c, MPI_Scatter_init_c, many, n, MPI_DOUBLE, b, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Scatterv_c, MPI_Iscatterv_c, MPI_Scatterv_init_c, many, counts, displs, MPI_DOUBLE, b, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Reduce_c, MPI_Ireduce_c, MPI_Reduce_init_c, a, b, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Allreduce_c, MPI_Iallreduce_c, MPI_Allreduce_init_c, a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Scan_c, MPI_Iscan_c, MPI_Scan_init_c, a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Exscan_c, MPI_Iexscan_c, MPI_Exscan_init_c, a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Reduce_scatter_c, MPI_Ireduce_scatter_c, MPI_Reduce_scatter_init_c, many, more, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    ALL_FORMS(MPI_Reduce_scatter_block_c, MPI_Ireduce_scatter_block_c, MPI_Reduce_scatter_block_init_c, many, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

    /* Neighbourhood collectives on a periodic ring: two neighbours each way. */
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    ALL_FORMS(MPI_Neighbor_allgather_c, MPI_Ineighbor_allgather_c, MPI_Neighbor_allgather_init_c, a, n, MPI_DOUBLE, many, n, MPI_DOUBLE, ring);
    ALL_FORMS(MPI_Neighbor_alltoall_c, MPI_Ineighbor_alltoall_c, MPI_Neighbor_alltoall_init_c, many, n, MPI_DOUBLE, more, n, MPI_DOUBLE, ring);
    ALL_FORMS(MPI_Neighbor_allgatherv_c, MPI_Ineighbor_allgatherv_c, MPI_Neighbor_allgatherv_init_c, a, n, MPI_DOUBLE, many, counts, displs, MPI_DOUBLE, ring);
    ALL_FORMS(MPI_Neighbor_alltoallv_c, MPI_Ineighbor_alltoallv_c, MPI_Neighbor_alltoallv_init_c, many, counts, displs, MPI_DOUBLE, more, counts, displs, MPI_DOUBLE, ring);
    ALL_FORMS(MPI_Neighbor_alltoallw_c, MPI_Ineighbor_alltoallw_c, MPI_Neighbor_alltoallw_init_c, many, counts, wdispls, types, more, counts, wdispls, types, ring);
    MPI_Comm_free(&ring);

    /* One-sided, on windows of each constructor's large-count form. */
    MPI_Win w;
    double *base;
    CALL(MPI_Win_create_c, many, (MPI_Aint)(N * size * sizeof(double)), (MPI_Aint)sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
    CALL(MPI_Win_fence, 0, w);
    CALL(MPI_Put_c, a, n, MPI_DOUBLE, right, 0, n, MPI_DOUBLE, w);
    CALL(MPI_Get_c, b, n, MPI_DOUBLE, left, N, n, MPI_DOUBLE, w);
    CALL(MPI_Win_fence, 0, w);
    CALL(MPI_Accumulate_c, a, n, MPI_DOUBLE, right, 0, n, MPI_DOUBLE, MPI_SUM, w);
    CALL(MPI_Win_fence, 0, w);
    CALL(MPI_Get_accumulate_c, a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, right, 0, n, MPI_DOUBLE, MPI_SUM, w);
    CALL(MPI_Win_fence, 0, w);
    CALL(MPI_Win_free, &w);
    CALL(MPI_Win_allocate_c, (MPI_Aint)(N * sizeof(double)), (MPI_Aint)sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &w);
    CALL(MPI_Win_lock_all, 0, w);
    CALL(MPI_Rput_c, a, n, MPI_DOUBLE, right, 0, n, MPI_DOUBLE, w, &r[0]);
    CALL(MPI_Wait, &r[0], MPI_STATUS_IGNORE);
    CALL(MPI_Rget_c, b, n, MPI_DOUBLE, left, 0, n, MPI_DOUBLE, w, &r[0]);
    CALL(MPI_Wait, &r[0], MPI_STATUS_IGNORE);
    CALL(MPI_Raccumulate_c, a, n, MPI_DOUBLE, right, 0, n, MPI_DOUBLE, MPI_SUM, w, &r[0]);
    CALL(MPI_Wait, &r[0], MPI_STATUS_IGNORE);
    CALL(MPI_Rget_accumulate_c, a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, right, 0, n, MPI_DOUBLE, MPI_SUM, w, &r[0]);
    CALL(MPI_Wait, &r[0], MPI_STATUS_IGNORE);
    CALL(MPI_Win_unlock_all, w);
    CALL(MPI_Win_free, &w);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    CALL(MPI_Win_allocate_shared_c, (MPI_Aint)(N * sizeof(double)), (MPI_Aint)sizeof(double), MPI_INFO_NULL, node, &base, &w);
    CALL(MPI_Win_free, &w);
    MPI_Comm_free(&node);

    double sum = 0;
    for (int i = 0; i < N; i++) sum += b[i];
    double total = 0;
    MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("large_count: %d ranks, checksum %.0f\n", size, total);
    char line[8192];
    int at = snprintf(line, sizeof line, "issued rank=%d", rank);
    for (int i = 0; i < kinds; i++)
        at += snprintf(line + at, sizeof line - at, " %s=%ld", counted[i].name, counted[i].n);
    fprintf(stderr, "%s\n", line);
    free(many);
    free(more);
    free(counts);
    free(displs);
    free(wdispls);
    free(types);
    MPI_Finalize();
    return 0;
}

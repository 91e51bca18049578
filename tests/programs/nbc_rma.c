/* Non-blocking, persistent and neighbourhood collectives, and one-sided communication
 * with each kind of synchronisation (fence, lock/unlock, lock_all with request-based
 * operations and flushes, post/start/complete/wait and win_test), for the trace tests.
 *
 * Polls (MPI_Test, MPI_Win_test) are tried once, then waited for, so that the calls
 * stay few. Every recorded MPI call goes through CALL, which counts it by name and adds the time
 * it took (MPI_Wtime around it) to the rank's time in MPI. Rank 0 sleeps before some
 * synchronisations, so the other ranks wait inside them. At the end every rank prints
 * to stderr its counts and its time in MPI:
 *   "issued rank=R MPI_Ibcast=1 MPI_Put=3 ..." and "in_mpi rank=R ns=N calls=C".
 * Rank 0 prints one deterministic result line to stdout. Any number of ranks >= 2.
 * Builds with MPICH (MPI 4.0) and Open MPI 4 (MPI 3.1, without persistent collectives). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct {
    const char *name;
    long n;
} counted[96];
static int kinds = 0;
static double in_mpi = 0;
static long calls = 0;

static void note(const char *name, double seconds) {
    in_mpi += seconds;
    calls++;
    for (int i = 0; i < kinds; i++)
        if (strcmp(counted[i].name, name) == 0) {
            counted[i].n++;
            return;
        }
    counted[kinds].name = name;
    counted[kinds++].n = 1;
}

#define CALL(fn, ...)                          \
    do {                                       \
        double t0_ = MPI_Wtime();              \
        fn(__VA_ARGS__);                       \
        note(#fn, MPI_Wtime() - t0_);          \
    } while (0)

static void nap(int ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int *one = malloc(sizeof(int) * size), *all = malloc(sizeof(int) * size);
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * size);
    for (int i = 0; i < size; i++) {
        one[i] = rank * size + i;
        counts[i] = 1;
        displs[i] = i * (int)sizeof(int);
        types[i] = MPI_INT;
    }
    long check = 0;
    int x = rank, y = 0, z = 0;
    MPI_Request r[4];

    /* Non-blocking collectives. */
    if (rank == 0) x = 42;
    CALL(MPI_Ibcast, &x, 1, MPI_INT, 0, MPI_COMM_WORLD, &r[0]);
    CALL(MPI_Wait, &r[0], MPI_STATUS_IGNORE);
    check += x;
    CALL(MPI_Ialltoall, one, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD, &r[0]);
    CALL(MPI_Wait, &r[0], MPI_STATUS_IGNORE);
    check += all[0];
    CALL(MPI_Iallgather, &rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD, &r[0]);
    CALL(MPI_Ireduce, &rank, &y, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, &r[1]);
    CALL(MPI_Waitall, 2, r, MPI_STATUSES_IGNORE);
    check += all[size - 1] + y;
    CALL(MPI_Iscan, &rank, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
    int flag = 0;
    CALL(MPI_Test, &r[0], &flag, MPI_STATUS_IGNORE);
    if (!flag) CALL(MPI_Wait, &r[0], MPI_STATUS_IGNORE);
    check += y;
    CALL(MPI_Ireduce_scatter_block, one, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
    CALL(MPI_Wait, &r[0], MPI_STATUS_IGNORE);
    check += y;
    if (rank == 0) nap(30);
    CALL(MPI_Ibarrier, MPI_COMM_WORLD, &r[0]);
    CALL(MPI_Wait, &r[0], MPI_STATUS_IGNORE);

    /* Persistent collectives (MPI-4): Start, then Startall of both. An MPI of an older
     * standard (Open MPI 4 is MPI 3.1) has none: the program goes on without. */
#if MPI_VERSION >= 4
    MPI_Request p[2];
    int sum = 0, b = 0;
    CALL(MPI_Allreduce_init, &rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
         &p[0]);
    CALL(MPI_Bcast_init, &b, 1, MPI_INT, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &p[1]);
    for (int i = 0; i < 3; i++) {
        if (rank == 0 && i == 0) nap(30);
        CALL(MPI_Start, &p[0]);
        CALL(MPI_Wait, &p[0], MPI_STATUS_IGNORE);
        check += sum;
        if (rank == size - 1) b = i;
        CALL(MPI_Startall, 2, p);
        CALL(MPI_Waitall, 2, p, MPI_STATUSES_IGNORE);
        check += sum + b;
    }
    CALL(MPI_Request_free, &p[0]);
    CALL(MPI_Request_free, &p[1]);
#endif

    /* Blocking collectives, and neighbourhood ones on a periodic ring. */
    CALL(MPI_Scan, &rank, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CALL(MPI_Exscan, &rank, &z, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check += y + (rank > 0 ? z : 0);
    CALL(MPI_Reduce_scatter_block, one, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CALL(MPI_Reduce_scatter, one, &y, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check += y;
    CALL(MPI_Alltoallw, one, counts, displs, types, all, counts, displs, types, MPI_COMM_WORLD);
    check += all[0];
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1};
    CALL(MPI_Cart_create, MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    int nb[2] = {rank, rank}, got[2];
    CALL(MPI_Neighbor_alltoall, nb, 1, MPI_INT, got, 1, MPI_INT, ring);
    CALL(MPI_Neighbor_allgather, &rank, 1, MPI_INT, got, 1, MPI_INT, ring);
    check += got[0] + got[1];
    CALL(MPI_Ineighbor_alltoall, nb, 1, MPI_INT, got, 1, MPI_INT, ring, &r[0]);
    CALL(MPI_Wait, &r[0], MPI_STATUS_IGNORE);
    CALL(MPI_Comm_free, &ring);

    /* Packing is not recorded: the trace tells the user so once, at the end. */
    char packed[16];
    int position = 0, unpacked = 0;
    MPI_Pack(&rank, 1, MPI_INT, packed, sizeof packed, &position, MPI_COMM_WORLD);
    position = 0;
    MPI_Unpack(packed, sizeof packed, &position, &unpacked, 1, MPI_INT, MPI_COMM_WORLD);
    check += unpacked - rank;

    /* One-sided: a window of one int per rank. */
    int *mem = calloc(size, sizeof(int));
    MPI_Win win;
    CALL(MPI_Win_create, mem, sizeof(int) * size, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
         &win);
    /* Fence epochs: Put to the right, Get from the left, Accumulate at rank 0. */
    CALL(MPI_Win_fence, 0, win);
    CALL(MPI_Put, &rank, 1, MPI_INT, right, rank, 1, MPI_INT, win);
    if (rank == 0) nap(30);
    CALL(MPI_Win_fence, 0, win);
    CALL(MPI_Get, &y, 1, MPI_INT, left, left, 1, MPI_INT, win);
    CALL(MPI_Win_fence, 0, win);
    check += y;
    CALL(MPI_Accumulate, &rank, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win);
    CALL(MPI_Win_fence, 0, win);
    /* Passive target: an exclusive lock to the right, a shared one to the left. */
    CALL(MPI_Win_lock, MPI_LOCK_EXCLUSIVE, right, 0, win);
    CALL(MPI_Put, &rank, 1, MPI_INT, right, rank, 1, MPI_INT, win);
    CALL(MPI_Win_unlock, right, win);
    CALL(MPI_Win_lock, MPI_LOCK_SHARED, left, 0, win);
    CALL(MPI_Get, &y, 1, MPI_INT, left, left, 1, MPI_INT, win);
    CALL(MPI_Win_unlock, left, win);
    CALL(MPI_Barrier, MPI_COMM_WORLD);
    /* Lock_all with request-based operations, atomics and flushes. */
    int one_int = 1, old = 0, cmp = 0;
    CALL(MPI_Win_lock_all, 0, win);
    CALL(MPI_Rput, &rank, 1, MPI_INT, right, rank, 1, MPI_INT, win, &r[0]);
    CALL(MPI_Rget, &y, 1, MPI_INT, left, left, 1, MPI_INT, win, &r[1]);
    CALL(MPI_Waitall, 2, r, MPI_STATUSES_IGNORE);
    CALL(MPI_Raccumulate, &one_int, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win, &r[0]);
    CALL(MPI_Wait, &r[0], MPI_STATUS_IGNORE);
    CALL(MPI_Fetch_and_op, &one_int, &old, MPI_INT, 0, 0, MPI_SUM, win);
    CALL(MPI_Win_flush, 0, win);
    CALL(MPI_Compare_and_swap, &one_int, &cmp, &old, MPI_INT, right, right, win);
    CALL(MPI_Win_flush_all, win);
    CALL(MPI_Win_unlock_all, win);
    CALL(MPI_Barrier, MPI_COMM_WORLD);
    /* General active target: expose to the left, access the right; rank 0 posts late. */
    MPI_Group world_group, to_left, to_right;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, 1, &left, &to_left);
    MPI_Group_incl(world_group, 1, &right, &to_right);
    for (int round = 0; round < 2; round++) {
        if (rank == 0) nap(30);
        CALL(MPI_Win_post, to_left, 0, win);
        CALL(MPI_Win_start, to_right, 0, win);
        CALL(MPI_Put, &rank, 1, MPI_INT, right, rank, 1, MPI_INT, win);
        CALL(MPI_Win_complete, win);
        if (round == 0) {
            CALL(MPI_Win_wait, win);
        } else {
            CALL(MPI_Win_test, win, &flag);
            if (!flag) CALL(MPI_Win_wait, win);
        }
    }
    check += mem[left];
    MPI_Group_free(&to_left);
    MPI_Group_free(&to_right);
    MPI_Group_free(&world_group);
    CALL(MPI_Win_free, &win);
    free(mem);

    /* An allocated window: Get_accumulate in a fence epoch. */
    int *base;
    MPI_Win win2;
    CALL(MPI_Win_allocate, sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win2);
    *base = rank;
    CALL(MPI_Win_fence, 0, win2);
    CALL(MPI_Get_accumulate, &one_int, 1, MPI_INT, &old, 1, MPI_INT, right, 0, 1, MPI_INT,
         MPI_SUM, win2);
    CALL(MPI_Win_fence, 0, win2);
    /* (old is not checked: what MPICH 4.0 with ch4:ucx returns varies from run to run.) */
    CALL(MPI_Win_free, &win2);

    long total = 0;
    CALL(MPI_Reduce, &check, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("nbc_rma: %d ranks, checksum %ld\n", size, total);
    char line[4096];
    int at = snprintf(line, sizeof line, "issued rank=%d", rank);
    for (int i = 0; i < kinds; i++)
        at += snprintf(line + at, sizeof line - at, " %s=%ld", counted[i].name, counted[i].n);
    fprintf(stderr, "%s\nin_mpi rank=%d ns=%.0f calls=%ld\n", line, rank, in_mpi * 1e9, calls);
    free(one);
    free(all);
    free(counts);
    free(displs);
    free(types);
    MPI_Finalize();
    return 0;
}

/* Requests that share one handle, completed by every completion call.
 *
 * MPICH gives every request that is complete when it is posted the same handle (sends
 * that went out eagerly; receives from and sends to MPI_PROC_NULL), so several live
 * requests can be named by one handle at once. Each phase below posts K small sends to
 * the partner, K receives from it, and a send to and a receive from MPI_PROC_NULL, then
 * completes all of them with one completion call (Wait, Waitall, Waitany, Waitsome,
 * Test, Testall, Testany, Testsome); one more phase lets sends go with Request_free.
 * Last comes an 8-byte windowed bandwidth loop (osu_bw's shape): WINDOW Isends then one
 * Waitall, WINDOWS times, the partner receiving likewise and acknowledging each window.
 *
 * Run with an even number of ranks. Every rank prints to stderr how many requests it
 * posted and whether two live requests ever shared a handle:
 * "posted rank=R requests=N shared=S". */
#include <mpi.h>
#include <stdio.h>

#define K 4
#define N (2 * K + 2)
#define WINDOW 64
#define WINDOWS 200

static long posted = 0;
static int shared = 0;

static void note_shared(const MPI_Request *req, int n) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (req[i] == req[j] && req[i] != MPI_REQUEST_NULL) shared = 1;
}

/* Posts the N requests of a phase. */
static void post(MPI_Request *req, char *out, char *in, int partner, int tag) {
    for (int i = 0; i < K; i++)
        MPI_Irecv(&in[i], 1, MPI_CHAR, partner, tag, MPI_COMM_WORLD, &req[i]);
    for (int i = 0; i < K; i++)
        MPI_Isend(&out[i], 1, MPI_CHAR, partner, tag, MPI_COMM_WORLD, &req[K + i]);
    MPI_Isend(out, 1, MPI_CHAR, MPI_PROC_NULL, tag, MPI_COMM_WORLD, &req[2 * K]);
    MPI_Irecv(&in[K], 1, MPI_CHAR, MPI_PROC_NULL, tag, MPI_COMM_WORLD, &req[2 * K + 1]);
    posted += N;
    note_shared(req, N);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size % 2 != 0) {
        if (rank == 0) fprintf(stderr, "handles: run with an even number of ranks\n");
        MPI_Finalize();
        return 2;
    }
    int partner = rank ^ 1;
    char out[K + 1] = "abcd", in[K + 1];
    MPI_Request req[N];
    MPI_Status st[N];
    int tag = 0;

    /* Wait, one request at a time. */
    post(req, out, in, partner, ++tag);
    for (int i = 0; i < N; i++) MPI_Wait(&req[i], &st[0]);

    /* Waitall. */
    post(req, out, in, partner, ++tag);
    MPI_Waitall(N, req, st);

    /* Waitany until none is left active. */
    post(req, out, in, partner, ++tag);
    for (;;) {
        int index;
        MPI_Waitany(N, req, &index, MPI_STATUS_IGNORE);
        if (index == MPI_UNDEFINED) break;
    }

    /* Waitsome until none is left active. */
    post(req, out, in, partner, ++tag);
    for (;;) {
        int outcount, indices[N];
        MPI_Waitsome(N, req, &outcount, indices, st);
        if (outcount == MPI_UNDEFINED) break;
    }

    /* Test each until it is done. */
    post(req, out, in, partner, ++tag);
    for (int i = 0; i < N; i++) {
        int flag = 0;
        while (!flag) MPI_Test(&req[i], &flag, MPI_STATUS_IGNORE);
    }

    /* Testall until all are done. */
    post(req, out, in, partner, ++tag);
    for (int flag = 0; !flag;) MPI_Testall(N, req, &flag, MPI_STATUSES_IGNORE);

    /* Testany until none is left active. */
    post(req, out, in, partner, ++tag);
    for (;;) {
        int index, flag;
        MPI_Testany(N, req, &index, &flag, MPI_STATUS_IGNORE);
        if (flag && index == MPI_UNDEFINED) break;
    }

    /* Testsome until none is left active. */
    post(req, out, in, partner, ++tag);
    for (;;) {
        int outcount, indices[N];
        MPI_Testsome(N, req, &outcount, indices, MPI_STATUSES_IGNORE);
        if (outcount == MPI_UNDEFINED) break;
    }

    /* Sends let go with Request_free while other requests share their handle. */
    ++tag;
    MPI_Request kept[2], freed[2];
    MPI_Isend(&out[0], 1, MPI_CHAR, partner, tag, MPI_COMM_WORLD, &kept[0]);
    MPI_Isend(&out[1], 1, MPI_CHAR, partner, tag, MPI_COMM_WORLD, &freed[0]);
    MPI_Isend(&out[2], 1, MPI_CHAR, MPI_PROC_NULL, tag, MPI_COMM_WORLD, &kept[1]);
    MPI_Isend(&out[3], 1, MPI_CHAR, MPI_PROC_NULL, tag, MPI_COMM_WORLD, &freed[1]);
    posted += 4;
    MPI_Request all4[4] = {kept[0], freed[0], kept[1], freed[1]};
    note_shared(all4, 4);
    MPI_Request_free(&freed[0]);
    MPI_Request_free(&freed[1]);
    MPI_Waitall(2, kept, MPI_STATUSES_IGNORE);
    MPI_Recv(in, 2, MPI_CHAR, partner, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(in, 2, MPI_CHAR, partner, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    /* The windowed 8-byte loop: even ranks send, odd ranks receive and acknowledge. */
    double msg[WINDOW], ack = 0;
    for (int i = 0; i < WINDOW; i++) msg[i] = i;
    MPI_Request w[WINDOW];
    ++tag;
    for (int n = 0; n < WINDOWS; n++) {
        if (rank % 2 == 0) {
            for (int i = 0; i < WINDOW; i++)
                MPI_Isend(&msg[i], 1, MPI_DOUBLE, partner, tag, MPI_COMM_WORLD, &w[i]);
            note_shared(w, WINDOW);
            MPI_Waitall(WINDOW, w, MPI_STATUSES_IGNORE);
            MPI_Recv(&ack, 1, MPI_DOUBLE, partner, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int i = 0; i < WINDOW; i++)
                MPI_Irecv(&msg[i], 1, MPI_DOUBLE, partner, tag, MPI_COMM_WORLD, &w[i]);
            MPI_Waitall(WINDOW, w, MPI_STATUSES_IGNORE);
            MPI_Send(&ack, 1, MPI_DOUBLE, partner, tag + 1, MPI_COMM_WORLD);
        }
        posted += WINDOW;
    }

    if (rank == 0) printf("handles: %d ranks done\n", size);
    fprintf(stderr, "posted rank=%d requests=%ld shared=%d\n", rank, posted, shared);
    MPI_Finalize();
    return 0;
}

/* The MPI under `overlap analyze --parallel`'s workers: the few calls their exchange
 * makes (src/parallel/mpi.rs loads this library at run time). Built once per MPI family
 * by scripts/build-preloads.sh (liboverlap_exchange-<family>.so), with that family's
 * mpicc: MPICH's handles are integers and Open MPI's pointers, so no handle crosses
 * this file's functions, only integers and byte buffers, and the `overlap` binary links
 * no MPI of its own.
 *
 * Every function returns MPI's error code (MPI_SUCCESS, 0, when it went well); the
 * communicator's errors are returned, not fatal, so that the caller can say them. */

#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* MPI_Init_thread: only the thread that calls it calls MPI (the analysis's own threads
 * never do). Gives this process's rank and the number of processes. */
int overlap_exchange_init(int *rank, int *size) {
    int provided = 0;
    int err = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    if (err != MPI_SUCCESS) return err;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    err = MPI_Comm_rank(MPI_COMM_WORLD, rank);
    if (err != MPI_SUCCESS) return err;
    return MPI_Comm_size(MPI_COMM_WORLD, size);
}

/* What MPI says of an error code, into `text` (`len` bytes, ended by a zero). */
void overlap_exchange_error(int code, char *text, int len) {
    char said[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (len <= 0) return;
    if (MPI_Error_string(code, said, &n) != MPI_SUCCESS) n = 0;
    if (n >= len) n = len - 1;
    memcpy(text, said, (size_t)n);
    text[n] = 0;
}

/* The longest sleep between two tests of a request not yet complete: 2 ms. */
#define IDLE_MOST_NS 2000000L

/* Waits for `request` without holding a core: MPI's blocking calls poll, and a worker
 * that waits long for the others (one that read its share first waits for those still
 * reading theirs) would take a core from them where workers share a node. The request
 * is tested, then tested again after sleeps that double from 10 us to IDLE_MOST_NS:
 * a wait costs at most about twice its length in latency, never more than 2 ms. */
static int wait_idle(MPI_Request *request) {
    long ns = 10000;
    for (;;) {
        int done = 0;
        int err = MPI_Test(request, &done, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS || done) return err;
        struct timespec pause = {0, ns};
        nanosleep(&pause, NULL);
        if (ns < IDLE_MOST_NS) ns = ns * 2 < IDLE_MOST_NS ? ns * 2 : IDLE_MOST_NS;
    }
}

/* Every process gives `sizes[k]`, the bytes it sends process k; each gets `got[k]`, the
 * bytes process k sends it. Every exchange starts here, so here is where a worker waits
 * for the others to be done with what they were making: idly (wait_idle). */
int overlap_exchange_sizes(const uint64_t *sizes, uint64_t *got) {
    MPI_Request request;
    int err = MPI_Ialltoall(sizes, 1, MPI_UINT64_T, got, 1, MPI_UINT64_T, MPI_COMM_WORLD,
                            &request);
    if (err != MPI_SUCCESS) return err;
    return wait_idle(&request);
}

/* Sends process k the `sizes[k]` bytes of `send` that follow those for processes 0 to
 * k-1, and receives into `recv` what each process sends this one (`got[k]` bytes from
 * process k, in process order): an MPI_Alltoallv, in as many rounds as its int counts
 * and displacements need (each round at most INT_MAX bytes in all, each pair's part
 * copied through a staging buffer when there is more than one). */
int overlap_exchange_bytes(const unsigned char *send, const uint64_t *sizes,
                           unsigned char *recv, const uint64_t *got) {
    int n = 0, err = MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (err != MPI_SUCCESS) return err;
    uint64_t chunk = (uint64_t)(INT_MAX / n);
    uint64_t most = 0, rounds = 0;
    for (int k = 0; k < n; k++) {
        if (sizes[k] > most) most = sizes[k];
        if (got[k] > most) most = got[k];
    }
    uint64_t mine = (most + chunk - 1) / chunk;
    err = MPI_Allreduce(&mine, &rounds, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (err != MPI_SUCCESS) return err;
    int *counts = calloc((size_t)n * 4, sizeof(int));
    uint64_t *from = calloc((size_t)n * 2, sizeof(uint64_t));
    if (!counts || !from) {
        free(counts);
        free(from);
        return MPI_ERR_NO_MEM;
    }
    int *sc = counts, *sd = counts + n, *rc = counts + 2 * n, *rd = counts + 3 * n;
    uint64_t *send_at = from, *recv_at = from + n;
    for (int k = 1; k < n; k++) {
        send_at[k] = send_at[k - 1] + sizes[k - 1];
        recv_at[k] = recv_at[k - 1] + got[k - 1];
    }
    /* An empty buffer's address may be anything (Rust's is 1), and Open MPI reads
     * (void *)1 as MPI_IN_PLACE: a buffer of nothing is given as a byte of our own. */
    static unsigned char nothing[2];
    if (send_at[n - 1] + sizes[n - 1] == 0) send = nothing;
    if (recv_at[n - 1] + got[n - 1] == 0) recv = nothing + 1;
    if (rounds <= 1) {
        /* One round: the buffers as they are, when their offsets fit in an int. */
        int fits = send_at[n - 1] + sizes[n - 1] <= INT_MAX &&
                   recv_at[n - 1] + got[n - 1] <= INT_MAX;
        if (fits) {
            for (int k = 0; k < n; k++) {
                sc[k] = (int)sizes[k];
                sd[k] = (int)send_at[k];
                rc[k] = (int)got[k];
                rd[k] = (int)recv_at[k];
            }
            err = MPI_Alltoallv(send, sc, sd, MPI_BYTE, recv, rc, rd, MPI_BYTE,
                                MPI_COMM_WORLD);
            free(counts);
            free(from);
            return err;
        }
    }
    /* The first round is the largest: each pair's part, up to a chunk. */
    uint64_t out_bytes = 1, in_bytes = 1;
    for (int k = 0; k < n; k++) {
        out_bytes += sizes[k] < chunk ? sizes[k] : chunk;
        in_bytes += got[k] < chunk ? got[k] : chunk;
    }
    unsigned char *out = malloc((size_t)out_bytes), *in = malloc((size_t)in_bytes);
    if (!out || !in) {
        free(out);
        free(in);
        free(counts);
        free(from);
        return MPI_ERR_NO_MEM;
    }
    for (uint64_t r = 0; r < rounds && err == MPI_SUCCESS; r++) {
        uint64_t start = r * chunk;
        int s = 0, g = 0;
        for (int k = 0; k < n; k++) {
            uint64_t left = sizes[k] > start ? sizes[k] - start : 0;
            sc[k] = (int)(left < chunk ? left : chunk);
            sd[k] = s;
            memcpy(out + s, send + send_at[k] + start, (size_t)sc[k]);
            s += sc[k];
            left = got[k] > start ? got[k] - start : 0;
            rc[k] = (int)(left < chunk ? left : chunk);
            rd[k] = g;
            g += rc[k];
        }
        err = MPI_Alltoallv(out, sc, sd, MPI_BYTE, in, rc, rd, MPI_BYTE, MPI_COMM_WORLD);
        for (int k = 0; k < n && err == MPI_SUCCESS; k++)
            memcpy(recv + recv_at[k] + start, in + rd[k], (size_t)rc[k]);
    }
    free(out);
    free(in);
    free(counts);
    free(from);
    return err;
}

/* Ends every process of the job, with `code`: for a worker that cannot go on and cannot
 * tell the others through an exchange (a panic). */
int overlap_exchange_abort(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }

int overlap_exchange_finalize(void) { return MPI_Finalize(); }

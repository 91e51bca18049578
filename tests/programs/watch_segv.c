/* The buffer watch and the program's own SIGSEGV (overlap trace --buffers): the
 * program's handler, installed before MPI_Init and replaced after it, is reported back
 * by sigaction as the program set it, and a real segfault at the end reaches it (or,
 * with `default`, kills the rank with the default action), with watches armed on a
 * halo's buffers meanwhile, and a forked child that reads one of them.
 *
 *   watch_segv handler   the handler finalizes MPI and turns the segfault into exit
 *                        code 42
 *   watch_segv default   SIGSEGV set back to SIG_DFL: the rank dies by the signal
 *
 * Prints (rank 0) what the checks found; then rank 0 faults and the others finalize.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 8192
#define ROUNDS 4

static void before_init(int sig, siginfo_t *info, void *ctx) {
    (void)sig, (void)info, (void)ctx;
    _exit(41);
}

/* The fault is the program's own write outside MPI, so MPI may be finalized here: the
 * other ranks, waiting in MPI_Finalize for this one, then end cleanly before it exits,
 * and the launcher reports its 42. (A rank that dies before finalizing leaves the others
 * to the launcher, which kills them: its exit status is then whichever of their ends it
 * sees first, 42, 1, 141 or 255 on a loaded machine.) */
static void after_init(int sig) {
    (void)sig;
    static const char said[] = "caught the segfault\n";
    ssize_t w = write(1, said, sizeof said - 1);
    (void)w;
    MPI_Finalize();
    usleep(300000);
    _exit(42);
}

int main(int argc, char **argv) {
    int by_default = argc > 1 && strcmp(argv[1], "default") == 0;
    struct sigaction first;
    memset(&first, 0, sizeof first);
    first.sa_sigaction = before_init;
    first.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &first, NULL);

    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* sigaction reports the program's handler, not the tracer's. */
    struct sigaction now;
    sigaction(SIGSEGV, NULL, &now);
    int reported = now.sa_sigaction == before_init && (now.sa_flags & SA_SIGINFO);
    if (by_default)
        signal(SIGSEGV, SIG_DFL);
    else if (signal(SIGSEGV, after_init) != (void (*)(int))before_init)
        reported = 0;

    double *out = malloc(N * sizeof(double)), *in = malloc(N * sizeof(double));
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double sum = 0;
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < N; i++)
            out[i] = rank + round + i;
        MPI_Request req[2];
        MPI_Irecv(in, N, MPI_DOUBLE, left, round, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(out, N, MPI_DOUBLE, right, round, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        if (round == 1) {
            /* A child forked while `in` is watched reads it, and exits. */
            pid_t child = fork();
            if (child == 0)
                _exit(in[N / 2] == left + round + N / 2 ? 0 : 1);
            int status = 0;
            waitpid(child, &status, 0);
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                reported = 0;
        }
        for (int i = 0; i < N; i++)
            sum += in[i];
    }
    int all;
    MPI_Allreduce(&reported, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0)
        printf("handlers reported %s, sum %.1f\n", all ? "as set" : "wrongly", sum);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Time for a trace's writer to flush what it recorded (OVERLAP_FLUSH_MS). */
    usleep(200000);

    /* A real segfault on rank 0: a write to a page of the program's own with no
     * access. */
    if (rank == 0) {
        volatile int *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        page[1] = 7;
        printf("not reached\n");
    }
    MPI_Finalize();
    return 0;
}

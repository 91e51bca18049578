/* A rank that forks a child which exits with 5, under tracing or not
 * (tests/cli/program_fork.rs, scripts/faults/program.sh).
 *
 * Each rank exchanges with its peer (ROUNDS pairs of Irecv/Isend and a Waitall), flushes
 * its output, forks a child that calls exit(5) without touching MPI, waits for it, and
 * reports how the child ended. Then it exchanges again, so that calls recorded after
 * the fork show the parent's recording goes on, and finalizes.
 *
 * Then system("exit 7") (a child made by vfork or posix_spawn, which runs no fork
 * handler and execs at once) must return 7.
 *
 * Prints to stdout: "fork_exit rank=R child=exited:5 system=exited:7" (or
 * "child=signal:N" ...). Exits 0 when both children ended as they do untraced; 3
 * otherwise. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 10

static void exchange(int peer, int tag) {
    for (int i = 0; i < ROUNDS; i++) {
        MPI_Request r[2];
        double out = i, in = 0;
        MPI_Irecv(&in, 1, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(&out, 1, MPI_DOUBLE, peer, tag, MPI_COMM_WORLD, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    }
}

/* How a child ended, as "exited:N" or "signal:N", into `out`. */
static void describe(int status, char *out, size_t len) {
    if (WIFEXITED(status)) {
        snprintf(out, len, "exited:%d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        snprintf(out, len, "signal:%d", WTERMSIG(status));
    } else {
        snprintf(out, len, "status:%d", status);
    }
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1;
    if (peer >= size) {
        peer = rank;
    }
    exchange(peer, 1);
    fflush(stdout);
    fflush(stderr);
    pid_t child = fork();
    if (child == 0) {
        exit(5);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child) {
        perror("fork_exit");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    int shell = system("exit 7");
    int as_untraced = WIFEXITED(status) && WEXITSTATUS(status) == 5 && WIFEXITED(shell) &&
                      WEXITSTATUS(shell) == 7;
    /* One line in one write: the ranks' lines must not interleave. */
    char child_said[32], shell_said[32], line[128];
    describe(status, child_said, sizeof child_said);
    describe(shell, shell_said, sizeof shell_said);
    int n = snprintf(line, sizeof line, "fork_exit rank=%d child=%s system=%s\n", rank,
                     child_said, shell_said);
    fflush(stdout);
    if (write(1, line, (size_t)n) != n) {
        perror("fork_exit");
    }
    exchange(peer, 2);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return as_untraced ? 0 : 3;
}

/* The buffer watch and system calls (overlap trace --buffers): a send buffer filled by
 * read(2) from a file between its sends, and a receive buffer written to a file by
 * write(2) before the program reads it itself. The kernel touches both while they are
 * watched: read(2) writes the send buffer (watched read-only), write(2) reads the
 * receive buffer (watched with no access). Each must work as without the watch, and be
 * the buffer's first touch, at its line.
 *
 * Two ranks; rank 0 sends ROUNDS messages of N doubles to rank 1 from one malloc'd
 * buffer, rank 1 receives them into another. Rank 1 prints the sum of what it received
 * and whether the file it wrote holds the same.
 */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 16384
#define ROUNDS 3

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size_t bytes = N * sizeof(double);
    double *buf = malloc(bytes);
    char path[64];
    snprintf(path, sizeof path, "watch_read-%d-%d.tmp", rank, (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror("open");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0) {
        for (int i = 0; i < N; i++)
            buf[i] = i;
        if (write(fd, buf, bytes) != (ssize_t)bytes)
            MPI_Abort(MPI_COMM_WORLD, 3);
    }
    double total = 0;
    int same = 1;
    for (int round = 0; round < ROUNDS; round++) {
        MPI_Request req;
        if (rank == 0) {
            lseek(fd, 0, SEEK_SET);
            ssize_t got = read(fd, buf, bytes); /* read(2) into the send buffer */
            if (got != (ssize_t)bytes)
                MPI_Abort(MPI_COMM_WORLD, 4);
            MPI_Isend(buf, N, MPI_DOUBLE, 1, round, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Irecv(buf, N, MPI_DOUBLE, 0, round, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            lseek(fd, 0, SEEK_SET);
            ssize_t put = write(fd, buf, bytes); /* write(2) from the receive buffer */
            if (put != (ssize_t)bytes)
                MPI_Abort(MPI_COMM_WORLD, 5);
            double check[64];
            lseek(fd, 0, SEEK_SET);
            if (read(fd, check, sizeof check) != (ssize_t)sizeof check)
                MPI_Abort(MPI_COMM_WORLD, 6);
            for (int i = 0; i < N; i++)
                total += buf[i];
            for (int i = 0; i < 64; i++)
                same &= check[i] == buf[i];
        }
    }
    close(fd);
    unlink(path);
    if (rank == 1)
        printf("received %.1f in %d rounds, file %s\n", total, ROUNDS,
               same ? "matches" : "differs");
    MPI_Finalize();
    return 0;
}

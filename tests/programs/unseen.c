/* Requests posted by MPI calls overlap does not record (MPI_Comm_idup, a generalized
 * request), completed by calls it does (MPI_Wait, MPI_Waitall), beside calls it does not
 * record whose time matters (MPI_Pack), for the trace tests: the trace must say which
 * requests it never saw posted, and how many calls of each unrecorded function the
 * program made. Each rank prints to stderr "issued rank=R idup=1 grequest=2 pack=P".
 * Any number of ranks. */
#include <mpi.h>
#include <stdio.h>

static int query(void *state, MPI_Status *status) {
    (void)state;
    MPI_Status_set_elements(status, MPI_BYTE, 0);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}
static int nothing(void *state) { (void)state; return MPI_SUCCESS; }
static int no_cancel(void *state, int complete) { (void)state; (void)complete; return MPI_SUCCESS; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm copy;
    MPI_Request r[2];
    MPI_Comm_idup(MPI_COMM_WORLD, &copy, &r[0]);
    MPI_Wait(&r[0], MPI_STATUS_IGNORE);
    for (int i = 0; i < 2; i++) {
        MPI_Grequest_start(query, nothing, no_cancel, NULL, &r[i]);
        MPI_Grequest_complete(r[i]);
    }
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    char packed[64];
    int at = 0, pack = 5;
    for (int i = 0; i < pack; i++) MPI_Pack(&i, 1, MPI_INT, packed, sizeof packed, &at, copy);
    MPI_Barrier(copy);
    MPI_Comm_free(&copy);
    fprintf(stderr, "issued rank=%d idup=1 grequest=2 pack=%d\n", rank, pack);
    MPI_Finalize();
    return 0;
}

/* Starts MPI only through an MPI-4 session (no MPI_Init), communicates over a
 * communicator made from the session's world group, and ends the session: the trace
 * tests check that overlap says why such a program is not traced. */
#include <mpi.h>
#include <stdio.h>

int main(void) {
    MPI_Session session;
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session);
    MPI_Group group;
    MPI_Group_from_session_pset(session, "mpi://WORLD", &group);
    MPI_Comm comm;
    MPI_Comm_create_from_group(group, "overlap.session.test", MPI_INFO_NULL, MPI_ERRORS_RETURN,
                               &comm);
    int rank, size, sum = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm);
    if (rank == 0) printf("session: %d ranks, sum %d\n", size, sum);
    MPI_Comm_free(&comm);
    MPI_Group_free(&group);
    MPI_Session_finalize(&session);
    return 0;
}

! IPM's Fortran convention through mpif.h: MPI_PCONTROL(1, "name") enters a region,
! MPI_PCONTROL(-1, "name") leaves it (the name comes with its hidden length).
program pcontrol_f
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, total
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_PCONTROL(1, "solve")
  call MPI_ALLREDUCE(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_PCONTROL(-1, "solve")
  if (rank == 0) print '(a,i0)', 'total ', total
  call MPI_FINALIZE(ierr)
end program pcontrol_f

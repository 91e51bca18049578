! A Fortran ring through the `mpi` module (MPICH's Fortran bindings call the C entry
! points, which the preload wraps): Irecv, Isend, Waitall, then an Allreduce.
program ring
  use mpi
  implicit none
  integer, parameter :: iters = 4
  integer :: rank, size, left, right, i, ierr
  integer :: requests(2)
  double precision :: sent, got, total
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)
  sent = rank + 1
  total = 0
  do i = 1, iters
    call MPI_Irecv(got, 1, MPI_DOUBLE_PRECISION, left, 7, MPI_COMM_WORLD, requests(1), ierr)
    call MPI_Isend(sent, 1, MPI_DOUBLE_PRECISION, right, 7, MPI_COMM_WORLD, requests(2), ierr)
    call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
    total = total + got
  end do
  call MPI_Allreduce(MPI_IN_PLACE, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a, f10.1)', 'ring: ', size, ' ranks, total ', total
  call MPI_Finalize(ierr)
end program ring

! A ring through `mpif.h` that also calls MPI from C (mixed.c), for the call-site tests:
! MPICH's mpif.h bindings call its C entry points, so each Fortran call below must still
! be placed on its own line, and the C calls between them on theirs in mixed.c (never on
! the Fortran line before them).
program mixed
  implicit none
  include 'mpif.h'
  interface
    subroutine c_exchange(rank, size) bind(C, name="c_exchange")
      integer, value :: rank, size
    end subroutine c_exchange
  end interface
  integer, parameter :: iters = 3
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
    call c_exchange(rank, size)
    call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
    total = total + got
  end do
  call MPI_Allreduce(MPI_IN_PLACE, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a, f10.1)', 'mixed: ', size, ' ranks, total ', total
  call MPI_Finalize(ierr)
end program mixed

! A ring turn through `mpi_f08` with MPI_COUNT_KIND counts, for the call-site tests under
! MPICH: its large-count bindings (mpi_isend_f08ts_large_) call the C _c entry points.
program large_f08
  use mpi_f08
  implicit none
  integer :: rank, size
  integer(kind=MPI_COUNT_KIND) :: n
  type(MPI_Request) :: r(2)
  double precision :: a, b
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  n = 1
  a = rank
  call MPI_Irecv(b, n, MPI_DOUBLE_PRECISION, mod(rank + size - 1, size), 3, MPI_COMM_WORLD, r(1))
  call MPI_Isend(a, n, MPI_DOUBLE_PRECISION, mod(rank + 1, size), 3, MPI_COMM_WORLD, r(2))
  call MPI_Waitall(2, r, MPI_STATUSES_IGNORE)
  call MPI_Finalize()
end program large_f08

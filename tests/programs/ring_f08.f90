! A ring through the `mpi_f08` module, for the trace tests under MPICH and Open MPI:
! non-blocking posts completed by Waitall (statuses checked), Waitany, Waitsome and
! Testall, persistent requests, collectives with MPI_IN_PLACE, a split communicator, and
! a datatype freed before another is made (which may get its handle: 16 then 32 bytes). MPICH's
! mpi_f08 calls PMPI_* directly for the calls without a buffer, Open MPI's calls its
! mpif.h bindings' internal names: the preload wraps both.
! Rank 0 prints one result line to stdout. Every rank prints to stderr how many Waitsome
! and Testall calls it made, the counts that vary, and from what number the MPI's Waitany and
! Waitsome count the index they return (MPI says 1; MPICH 4.0's mpi_f08 gives 0), told
! by which request they completed:
! "issued rank=R MPI_Waitsome=N MPI_Testall=N any_base=B some_base=B".
program ring_f08
  use mpi_f08
  use, intrinsic :: iso_fortran_env, only : error_unit
  implicit none
  integer, parameter :: iters = 3
  integer :: rank, size, left, right, i, idx, outcount, done, waitsomes
  integer :: any_base, some_base, testalls
  logical :: flag
  type(MPI_Datatype) :: pair, quad
  double precision :: two(2), four(4), got2(2), got4(4)
  integer :: indices(2)
  type(MPI_Request) :: r(2), p(2)
  type(MPI_Status) :: st(2), one, some(2)
  type(MPI_Comm) :: half
  double precision :: sent, got, total, a, b, x, y

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)
  sent = rank + 1
  total = 0

  do i = 1, iters
    call MPI_Irecv(got, 1, MPI_DOUBLE_PRECISION, left, 7, MPI_COMM_WORLD, r(1))
    call MPI_Isend(sent, 1, MPI_DOUBLE_PRECISION, right, 7, MPI_COMM_WORLD, r(2))
    call MPI_Waitall(2, r, st)
    if (st(1)%MPI_SOURCE /= left .or. st(1)%MPI_TAG /= 7) error stop 'Waitall status'
    total = total + got
  end do

  call MPI_Irecv(got, 1, MPI_DOUBLE_PRECISION, left, 8, MPI_COMM_WORLD, r(1))
  call MPI_Isend(sent, 1, MPI_DOUBLE_PRECISION, right, 8, MPI_COMM_WORLD, r(2))
  call MPI_Waitany(2, r, idx, one)
  any_base = base_of(idx)
  call MPI_Waitall(2, r, MPI_STATUSES_IGNORE)
  total = total + got

  call MPI_Irecv(got, 1, MPI_DOUBLE_PRECISION, left, 9, MPI_COMM_WORLD, r(1))
  call MPI_Isend(sent, 1, MPI_DOUBLE_PRECISION, right, 9, MPI_COMM_WORLD, r(2))
  done = 0
  waitsomes = 0
  do while (done < 2)
    call MPI_Waitsome(2, r, outcount, indices, some)
    waitsomes = waitsomes + 1
    if (waitsomes == 1) some_base = base_of(indices(1))
    done = done + outcount
  end do
  total = total + got

  call MPI_Irecv(got, 1, MPI_DOUBLE_PRECISION, left, 11, MPI_COMM_WORLD, r(1))
  call MPI_Isend(sent, 1, MPI_DOUBLE_PRECISION, right, 11, MPI_COMM_WORLD, r(2))
  flag = .false.
  testalls = 0
  do while (.not. flag)
    call MPI_Testall(2, r, flag, MPI_STATUSES_IGNORE)
    testalls = testalls + 1
  end do
  total = total + got

  two = rank
  four = rank
  call MPI_Type_contiguous(2, MPI_DOUBLE_PRECISION, pair)
  call MPI_Type_commit(pair)
  call MPI_Irecv(got2, 2, MPI_DOUBLE_PRECISION, left, 12, MPI_COMM_WORLD, r(1))
  call MPI_Isend(two, 1, pair, right, 12, MPI_COMM_WORLD, r(2))
  call MPI_Waitall(2, r, MPI_STATUSES_IGNORE)
  call MPI_Type_free(pair)
  call MPI_Type_contiguous(4, MPI_DOUBLE_PRECISION, quad)
  call MPI_Type_commit(quad)
  call MPI_Irecv(got4, 4, MPI_DOUBLE_PRECISION, left, 13, MPI_COMM_WORLD, r(1))
  call MPI_Isend(four, 1, quad, right, 13, MPI_COMM_WORLD, r(2))
  call MPI_Waitall(2, r, MPI_STATUSES_IGNORE)
  call MPI_Type_free(quad)
  total = total + got2(1) + got4(4)

  a = rank
  call MPI_Recv_init(b, 1, MPI_DOUBLE_PRECISION, left, 10, MPI_COMM_WORLD, p(1))
  call MPI_Send_init(a, 1, MPI_DOUBLE_PRECISION, right, 10, MPI_COMM_WORLD, p(2))
  do i = 1, iters
    call MPI_Startall(2, p)
    call MPI_Waitall(2, p, MPI_STATUSES_IGNORE)
    total = total + b
  end do
  call MPI_Request_free(p(1))
  call MPI_Request_free(p(2))

  call MPI_Allreduce(MPI_IN_PLACE, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  x = total
  call MPI_Bcast(x, 1, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD)
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half)
  y = 1
  call MPI_Allreduce(MPI_IN_PLACE, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, half)
  call MPI_Comm_free(half)
  call MPI_Ibarrier(MPI_COMM_WORLD, r(1))
  call MPI_Wait(r(1), MPI_STATUS_IGNORE)
  call MPI_Barrier(MPI_COMM_WORLD)

  write (error_unit, '(a, i0, a, i0, a, i0, a, i0, a, i0)') 'issued rank=', rank, &
      ' MPI_Waitsome=', waitsomes, ' MPI_Testall=', testalls, ' any_base=', any_base, &
      ' some_base=', some_base
  if (rank == 0) print '(a, i0, a, f10.1, a, f4.1)', 'ring_f08: ', size, ' ranks, total ', &
      x, ', half ', y
  call MPI_Finalize()

contains

  ! The number the MPI counts indices from, told by `index` naming the one request of
  ! r(1:2) that is complete (MPI_REQUEST_NULL).
  integer function base_of(index)
    integer, intent(in) :: index
    if (index >= 1 .and. index <= 2) then
      if (r(index) == MPI_REQUEST_NULL) then
        base_of = 1
        return
      end if
    end if
    if (index >= 0 .and. index <= 1) then
      if (r(index + 1) == MPI_REQUEST_NULL) then
        base_of = 0
        return
      end if
    end if
    error stop 'an index that names no completed request'
  end function base_of
end program ring_f08

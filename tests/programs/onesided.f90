! One-sided communication, a Cartesian ring, neighbourhood collectives and Alltoallw
! (arrays of datatypes) through the
! `mpi` module, for the trace tests under MPICH and Open MPI (Open MPI's Fortran
! bindings call PMPI_* directly: the preload wraps them). Every call is made a fixed
! number of times; rank 0 prints one result line.
program onesided
  use mpi
  implicit none
  integer :: rank, size, right, left, ierr, win, win2, ring, request, i
  integer(kind=MPI_ADDRESS_KIND) :: bytes, disp
  integer(kind=MPI_ADDRESS_KIND) :: baseptr
  integer :: cell(4), got, one, old, dims(1), nb(2), recv(2)
  logical :: periods(1)
  integer, allocatable :: wsend(:), wrecv(:), counts(:), displs(:), types(:)
  integer :: ncounts(2), ntypes(2)
  integer(kind=MPI_ADDRESS_KIND) :: ndispls(2)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)
  cell = 0
  bytes = 4 * 4
  disp = 0

  call MPI_Win_create(cell, bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call MPI_Put(rank, 1, MPI_INTEGER, right, disp, 1, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call MPI_Get(got, 1, MPI_INTEGER, left, disp, 1, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  one = 1
  call MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win, ierr)
  call MPI_Accumulate(one, 1, MPI_INTEGER, right, disp + 1, 1, MPI_INTEGER, MPI_SUM, win, ierr)
  call MPI_Win_unlock(right, win, ierr)
  call MPI_Win_free(win, ierr)

  call MPI_Win_allocate(bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, baseptr, win2, ierr)
  call MPI_Win_lock_all(0, win2, ierr)
  call MPI_Fetch_and_op(one, old, MPI_INTEGER, right, disp, MPI_SUM, win2, ierr)
  call MPI_Win_flush(right, win2, ierr)
  call MPI_Win_unlock_all(win2, ierr)
  call MPI_Win_free(win2, ierr)

  dims(1) = size
  periods(1) = .true.
  call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, .false., ring, ierr)
  nb = rank
  call MPI_Neighbor_alltoall(nb, 1, MPI_INTEGER, recv, 1, MPI_INTEGER, ring, ierr)
  call MPI_Neighbor_allgather(rank, 1, MPI_INTEGER, recv, 1, MPI_INTEGER, ring, ierr)
  do i = 1, 2
    call MPI_Ineighbor_alltoall(nb, 1, MPI_INTEGER, recv, 1, MPI_INTEGER, ring, request, ierr)
    call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)
  end do
  ncounts = 1
  ntypes = MPI_INTEGER
  ndispls(1) = 0
  ndispls(2) = 4
  call MPI_Neighbor_alltoallw(nb, ncounts, ndispls, ntypes, recv, ncounts, ndispls, ntypes, &
      ring, ierr)
  call MPI_Comm_free(ring, ierr)

  allocate (wsend(size), wrecv(size), counts(size), displs(size), types(size))
  wsend = rank
  counts = 1
  types = MPI_INTEGER
  do i = 1, size
    displs(i) = 4 * (i - 1)
  end do
  call MPI_Alltoallw(wsend, counts, displs, types, wrecv, counts, displs, types, &
      MPI_COMM_WORLD, ierr)

  if (rank == 0) print '(a, i0, a, i0, a, i0, a, i0)', 'onesided: ', size, ' ranks, got ', &
      got, ', neighbours ', recv(1) + recv(2), ', alltoallw ', sum(wrecv)
  call MPI_Finalize(ierr)
end program onesided

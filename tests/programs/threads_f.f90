! Two OpenMP threads per rank calling MPI through `use mpi` at once
! (MPI_THREAD_MULTIPLE), each with calls of its own, for the call-site tests: each
! thread's calls are placed on its own lines, never on the other thread's.
program threads_f
  use mpi
  use omp_lib
  implicit none
  integer, parameter :: iters = 20
  integer :: provided, rank, size, left, right, ierr
  call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, ierr)
  if (provided /= MPI_THREAD_MULTIPLE) error stop 'no MPI_THREAD_MULTIPLE'
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)
  !$omp parallel num_threads(2)
  if (omp_get_thread_num() == 0) then
    call posts(left, right)
  else
    call blocking(left, right)
  end if
  !$omp end parallel
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a)', 'threads_f: ', size, ' ranks'
  call MPI_Finalize(ierr)

contains

  ! Thread 0: non-blocking ring turns, tag 1.
  subroutine posts(left, right)
    integer, intent(in) :: left, right
    integer :: i, ierr, requests(2)
    double precision :: sent, got
    sent = 1
    do i = 1, iters
      call MPI_Irecv(got, 1, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, requests(1), ierr)
      call MPI_Isend(sent, 1, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, requests(2), ierr)
      call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
    end do
  end subroutine posts

  ! Thread 1: blocking ring turns, tag 2.
  ! (An Iprobe of a message never sent, too.)
  subroutine blocking(left, right)
    integer, intent(in) :: left, right
    integer :: i, ierr, dp, w
    logical :: flag
    double precision :: sent, got
    sent = 2
    dp = MPI_DOUBLE_PRECISION
    w = MPI_COMM_WORLD
    do i = 1, iters
      call MPI_Sendrecv(sent, 1, dp, right, 2, got, 1, dp, left, 2, w, MPI_STATUS_IGNORE, ierr)
      call MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_SELF, flag, MPI_STATUS_IGNORE, ierr)
    end do
  end subroutine blocking
end program threads_f

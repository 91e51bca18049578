"""MPI from Python without mpi4py, for the tests of Python call sites
(tests/cli/python.rs): MPICH's C functions called through ctypes, which releases the GIL
around each call (CDLL), or holds it (PyDLL), from functions of their own, from the main
thread and from a second thread. The calls go through the global scope (CDLL(None)),
where the preload's entry points come first.
"""

import ctypes
import threading

ctypes.CDLL("libmpich.so.12", mode=ctypes.RTLD_GLOBAL)
released = ctypes.CDLL(None)
held = ctypes.PyDLL(None)
MPI_COMM_WORLD = 0x44000000  # MPICH's handle


def init():
    released.MPI_Init(None, None)  # site: Init


def barrier():
    released.MPI_Barrier(MPI_COMM_WORLD)  # site: Barrier, GIL released


def barrier_holding_the_gil():
    held.MPI_Barrier(MPI_COMM_WORLD)  # site: Barrier, GIL held


init()
barrier()
barrier_holding_the_gil()
thread = threading.Thread(target=barrier)
thread.start()
thread.join()
released.MPI_Finalize()  # site: Finalize

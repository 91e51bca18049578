"""An mpi4py program for the tests of Python call sites (tests/cli/python.rs).

Each MPI call is made from a function of its own, on a line the test finds by its
text, and counted here as issued; the counts are printed at the end (one line per
rank) so that the test compares them with what the trace recorded. Ring of 2 or more
ranks: Isend/Irecv/Waitall of numpy arrays, a pickled allreduce, a pickled dict sent
from rank 0 to rank 1 (by the communicator, then through mpi4py.util.pkl5, whose own
Python code makes the MPI calls: they belong to the program's line all the same), a
barrier.
"""

import sys

from mpi4py import MPI
from mpi4py.util import pkl5
import numpy as np

ITERS = 3
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()
issued = {}


def count(name):
    issued[name] = issued.get(name, 0) + 1


def exchange(out, into):
    right, left = (rank + 1) % size, (rank - 1) % size
    recv = comm.Irecv(into, source=left, tag=7)  # site: Irecv
    count("Irecv")
    send = comm.Isend(out, dest=right, tag=7)  # site: Isend
    count("Isend")
    MPI.Request.Waitall([recv, send])  # site: Waitall
    count("Waitall")


def reduce_all(x):
    total = comm.allreduce(x)  # site: allreduce
    count("allreduce")
    return total


def pass_dict():
    if rank == 0:
        comm.send({"step": 1, "data": [1, 2, 3]}, dest=1, tag=9)  # site: send
        count("send")
    elif rank == 1:
        got = comm.recv(source=0, tag=9)  # site: recv
        count("recv")
        assert got == {"step": 1, "data": [1, 2, 3]}, got


def pass_dict_pkl5():
    big = pkl5.Intracomm(comm)
    if rank == 0:
        big.send({"step": 2}, dest=1, tag=10)  # site: pkl5 send
        count("pkl5_send")
    elif rank == 1:
        got = big.recv(source=0, tag=10)  # site: pkl5 recv
        count("pkl5_recv")
        assert got == {"step": 2}, got


def main():
    out = np.full(1024, float(rank))
    into = np.empty(1024)
    for _ in range(ITERS):
        exchange(out, into)
        assert into[0] == float((rank - 1) % size)
    total = reduce_all(rank)
    pass_dict()
    pass_dict_pkl5()
    comm.Barrier()  # site: Barrier
    count("Barrier")
    counts = " ".join(f"{k}={v}" for k, v in sorted(issued.items()))
    # One write, so that the ranks' lines never interleave.
    sys.stdout.write(f"rank={rank} {counts} total={total}\n")
    sys.stdout.flush()


main()

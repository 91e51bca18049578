"""The cost of a Python call site (docs/preload.md, "Python programs"): ns per MPI call
of mpi4py in a Python loop, the cheapest wrapped call (MPI_Test of MPI_REQUEST_NULL)
made from a function, so that the frame walk has a frame to find. Prints the best of
ROUNDS timed loops of N calls, in ns per call. Run by scripts/bench-python.sh.
"""

import sys
import time

from mpi4py import MPI

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
ROUNDS = 5


def test_loop(request, n):
    start = time.perf_counter_ns()
    for _ in range(n):
        request.Test()
    return (time.perf_counter_ns() - start) / n


def main():
    request = MPI.REQUEST_NULL
    test_loop(request, N // 10)
    best = min(test_loop(request, N) for _ in range(ROUNDS))
    if MPI.COMM_WORLD.Get_rank() == 0:
        print(f"{best:.1f}")


main()

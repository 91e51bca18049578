#!/usr/bin/env bash
# What placing calls on their Python lines costs (docs/preload.md, "Python programs"):
# ns per mpi4py call in a Python loop (bench/python_sites.py: MPI_Test of
# MPI_REQUEST_NULL, 200 000 calls, best of 5 loops) on 1 rank, untraced, under the
# preload with native sites (OVERLAP_PYTHON_SITES=0) and under the preload with Python
# sites, alternating RUNS times (default 5); prints each mode's median and every run.
# Needs target/release/liboverlap_preload.so and the mpi4py venv
# (`scripts/bootstrap.sh --mpi4py`, or PYTHON=/path/to/python with mpi4py for MPICH).
# The bootstrap builds mpi4py's C at -O0 for the tests: untraced calls then cost more
# than in a user's optimised mpi4py (the preload's own code is the same). For figures
# like docs/preload.md's, build the venv optimised first:
# `MPI4PY_CFLAGS=-O2 scripts/bootstrap.sh --mpi4py`.
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
python=${PYTHON:-${CARGO_TARGET_DIR:-target}/mpi4py-venv/bin/python}
preload="$PWD/target/release/liboverlap_preload.so"
for f in "$python" "$preload"; do
  [ -e "$f" ] || { echo "bench-python: $f is missing" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
modes=(untraced native-sites python-sites)
declare -A runs
for _ in $(seq "$RUNS"); do
  for mode in "${modes[@]}"; do
    case $mode in
      untraced) env=() ;;
      native-sites) env=(LD_PRELOAD="$preload" OVERLAP_TRACE_DIR="$work/t" OVERLAP_PYTHON_SITES=0) ;;
      python-sites) env=(LD_PRELOAD="$preload" OVERLAP_TRACE_DIR="$work/t") ;;
    esac
    rm -rf "$work/t"
    ns=$(env "${env[@]}" mpiexec -n 1 "$python" bench/python_sites.py) || exit 1
    runs[$mode]="${runs[$mode]:-} $ns"
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
echo "ns per MPI_Test from Python (median of $RUNS runs; each run the best of 5 loops)"
for mode in "${modes[@]}"; do
  printf '  %-13s %8s   runs:%s\n' "$mode" "$(echo "${runs[$mode]}" | median)" "${runs[$mode]}"
done

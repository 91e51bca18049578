#!/usr/bin/env bash
# Instructions per iteration of bench/calls.c's loops (one rank, messages to itself),
# untraced and under each preload given, counted by callgrind: a figure that the load of
# a shared machine does not move, for work on the hot path. Each is the difference of
# two runs (N and 2N iterations), so MPI_Init, the tracer's setup and MPI_Finalize
# cancel out. The writer thread drains only at the end (OVERLAP_FLUSH_MS of an hour):
# with its periodic drains, how many fall in a run under valgrind moves the count by
# tens of instructions per iteration.
#
# Usage: scripts/bench-instructions.sh [PRELOAD...]   (default: the release build's)
# Environment: MODES (default "test window pingpong testactive"), N (default 4000).
set -uo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "bench-instructions: valgrind is not installed" >&2; exit 2; }
MODES=${MODES:-test window pingpong testactive}
N=${N:-4000}
[ $# -gt 0 ] || set -- target/release/liboverlap_preload.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 bench/calls.c -o "$work/calls" || exit 2

# count LIB MODE ITERS: instructions of one run (LIB "none": untraced).
count() {
  local out=$work/cg.out
  rm -rf "$work/trace" "$out"
  if [ "$1" = none ]; then
    valgrind --tool=callgrind --callgrind-out-file="$out" "$work/calls" "$2" "$3" >/dev/null 2>&1
  else
    OVERLAP_FLUSH_MS=3600000 OVERLAP_TRACE_DIR="$work/trace" LD_PRELOAD="$(realpath "$1")" \
      valgrind --tool=callgrind --callgrind-out-file="$out" "$work/calls" "$2" "$3" >/dev/null 2>&1
  fi
  awk '/^(summary|totals):/ {print $2; exit}' "$out"
}

printf "%-12s %10s" "per iteration" untraced
for lib in "$@"; do printf " %28s" "$(basename "$lib")"; done
echo
for mode in $MODES; do
  printf "%-12s" "$mode"
  base=""
  for lib in none "$@"; do
    a=$(count "$lib" "$mode" "$N") b=$(count "$lib" "$mode" $((2 * N)))
    if [ -z "$a" ] || [ -z "$b" ]; then
      printf " %28s" "failed"
      continue
    fi
    per=$(((b - a) / N))
    if [ "$lib" = none ]; then
      base=$per
      printf " %10d" "$per"
    else
      printf " %18d (+%6d)" "$per" "$((per - base))"
    fi
  done
  echo
done

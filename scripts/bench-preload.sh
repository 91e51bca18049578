#!/usr/bin/env bash
# What the preload costs an MPI program: a C ping-pong of 8-byte messages (bench/pingpong.c)
# run with and without the preload, alternating, RUNS times each, on 2 ranks.
# Prints the median one-way latency of each, the slowdown (target: within 10 %), and the
# cost per call of a wrapped call (MPI_Test on MPI_REQUEST_NULL) with and without.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-7}
PROFILE=${PROFILE:-release}
preload="target/$PROFILE/liboverlap_preload.so"
if [ ! -f "$preload" ]; then
  echo "bench-preload: $preload is missing: run \`cargo build --$PROFILE -p overlap-preload\`" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 bench/pingpong.c -o "$work/pingpong"

plain_lat=(); traced_lat=(); plain_call=(); traced_call=()
for i in $(seq "$RUNS"); do
  out=$(mpiexec -n 2 "$work/pingpong")
  plain_lat+=("$(awk '/latency_ns/ {print $2}' <<<"$out")")
  plain_call+=("$(awk '/call_ns/ {print $2}' <<<"$out")")
  rm -rf "$work/trace"
  out=$(OVERLAP_TRACE_DIR="$work/trace" LD_PRELOAD="$PWD/$preload" mpiexec -n 2 "$work/pingpong")
  traced_lat+=("$(awk '/latency_ns/ {print $2}' <<<"$out")")
  traced_call+=("$(awk '/call_ns/ {print $2}' <<<"$out")")
done
events=$(grep -c '"cat":"mpi"' "$work/trace/rank-0.json" || true)

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
pl=$(median "${plain_lat[@]}"); tl=$(median "${traced_lat[@]}")
pc=$(median "${plain_call[@]}"); tc=$(median "${traced_call[@]}")
echo "ping-pong, 8 B, 2 ranks, $RUNS alternating runs of each (medians of per-run medians):"
echo "  runs without: ${plain_lat[*]} ns"
echo "  runs with:    ${traced_lat[*]} ns"
awk -v p="$pl" -v t="$tl" 'BEGIN {printf "  one-way latency: %.1f ns without, %.1f ns with the preload: %+.1f %% (target: within 10 %%)\n", p, t, (t-p)/p*100}'
awk -v p="$pc" -v t="$tc" 'BEGIN {printf "  MPI_Test(MPI_REQUEST_NULL): %.1f ns without, %.1f ns with: %.1f ns per call for the pass-through and recording\n", p, t, t-p}'
echo "  (rank 0 of the last traced run recorded $events calls)"
awk -v p="$pl" -v t="$tl" 'BEGIN {exit !((t-p)/p <= 0.10)}' || { echo "bench-preload: the preload slows the ping-pong by more than 10 %" >&2; exit 1; }

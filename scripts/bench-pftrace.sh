#!/usr/bin/env bash
# Perfetto's protobuf beside Chrome JSON, in one run: `overlap merge` of the same rank
# files into a .json and a .pftrace, on one thread (RAYON_NUM_THREADS=1), giving million
# events per second, bytes per event and peak memory of each; then this disk's
# sequential write speed (dd, with fdatasync), which the JSON's MB/s is set against.
# "Events" are the ranks' events (calls, compute spans, GPU work: otherData's count).
# Then the two writers alone on the same files (the scale bench's `writers`: the run
# merged in memory first, only the writing timed).
#
# Usage: scripts/bench-pftrace.sh [RANKS_DIR...]
#   default: a preloaded 2-rank run of bench/isends.c (rank 0 posts 1000 Isends to
#   rank 1, which posts the 1000 Irecvs; both compute, then wait with one Waitall;
#   env ITERS iterations, default 300: about 2 x 1000 x ITERS events), traced now with
#   target/release/overlap and its preload.
#   The generated 16-rank run is the scale bench's (`make bench` runs both).
# Environment: ITERS, DD_MIB (default 1024), KEEP=1 keeps the work directory.
set -uo pipefail
cd "$(dirname "$0")/.."
overlap=${OVERLAP:-target/release/overlap}
[ -x "$overlap" ] || { echo "bench-pftrace: $overlap not built (cargo build --release -p overlap)" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-pftrace.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT

if [ $# -eq 0 ]; then
  preload=${PRELOAD:-target/release/liboverlap_preload.so}
  [ -f "$preload" ] || { echo "bench-pftrace: $preload not built (scripts/build-preloads.sh --release)" >&2; exit 2; }
  mpicc -O2 bench/isends.c -o "$work/isends" 2>"$work/cc.log" ||
    { echo "bench-pftrace: compiling bench/isends.c failed:" >&2; cat "$work/cc.log" >&2; exit 2; }
  iters=${ITERS:-300}
  echo "tracing bench/isends.c 1000 $iters on 2 ranks under the preload..."
  OVERLAP_PRELOAD="$preload" "$overlap" trace --out "$work/isends.json" -- mpiexec -n 2 "$work/isends" 1000 "$iters" \
    >"$work/trace.log" 2>&1 || { echo "bench-pftrace: tracing failed:" >&2; tail "$work/trace.log" >&2; exit 1; }
  rm -f "$work/isends.json"
  set -- "$work/isends.ranks"
fi

# merge DIR OUT: one merge on one thread; prints "SECONDS PEAK_KIB".
merge() {
  RAYON_NUM_THREADS=1 /usr/bin/time -f "%e %M" -o "$work/time" "$overlap" merge "$1" --out "$2" >/dev/null 2>"$work/merge.err" ||
    { echo "bench-pftrace: merging $1 into $2 failed:" >&2; cat "$work/merge.err" >&2; return 1; }
  cat "$work/time"
}

# The ranks' events, from the JSON's otherData (its first line).
events_of() {
  python3 -c 'import json,sys
line = open(sys.argv[1]).readline().rstrip().rstrip(",")
print(sum(r["events"] for r in json.loads(line + "}")["otherData"]["ranks"]))' "$1"
}

printf "%-28s %-8s %12s %8s %9s %10s %8s %9s %9s\n" run format events seconds "M ev/s" MiB "B/event" "MiB/s" "peak MiB"
for dir in "$@"; do
  name=$(basename "$dir")
  for fmt in json pftrace; do
    out="$work/$name.$fmt"
    read -r secs peak < <(merge "$dir" "$out") || exit 1
    [ "$fmt" = json ] && events=$(events_of "$out")
    bytes=$(stat -c %s "$out")
    awk -v r="$name" -v f="$fmt" -v e="$events" -v s="$secs" -v b="$bytes" -v p="$peak" 'BEGIN {
      s = (s > 0 ? s : 0.01)
      printf "%-28s %-8s %12d %8.2f %9.2f %10.1f %8.1f %9.0f %9.0f\n", r, f, e, s, e / s / 1e6, b / 1048576, b / e, b / 1048576 / s, p / 1024 }'
    [ "$fmt" = json ] && json_rate=$(awk -v b="$bytes" -v s="$secs" 'BEGIN { print b / 1048576 / (s > 0 ? s : 0.01) }')
    rm -f "$out"
  done
done

# The writers alone (the run merged in memory first, only the writing timed), on the
# same rank files: the scale bench's `writers`.
# Absolute: cargo runs the bench in the analyzer's directory.
dirs=$(for d in "$@"; do realpath "$d"; done | paste -sd,)
echo
echo "the writers alone, one thread:"
RAYON_NUM_THREADS=1 ${CARGO:-cargo} bench -q -p overlap-analyzer --bench scale -- --dirs "$dirs" --threads 1 --only writers 2>/dev/null |
  sed -n 's/^writers *//p'

dd_mib=${DD_MIB:-1024}
dd_line=$(dd if=/dev/zero of="$work/dd" bs=1M count="$dd_mib" conv=fdatasync 2>&1 | tail -1)
rm -f "$work/dd"
dd_rate=$(echo "$dd_line" | awk '{ for (i = 1; i < NF; i++) if ($(i+1) ~ /^[MG]B\/s$/) { v = $i; if ($(i+1) == "GB/s") v *= 1000; print v * 1e6 / 1048576 } }')
echo
echo "disk: dd of $dd_mib MiB with fdatasync: $dd_line"
if [ -n "${dd_rate:-}" ] && [ -n "${json_rate:-}" ]; then
  awk -v j="$json_rate" -v d="$dd_rate" 'BEGIN { printf "JSON export (last run) at %.0f MiB/s: %.0f %% of the disk'"'"'s %.0f MiB/s\n", j, 100 * j / d, d }'
fi

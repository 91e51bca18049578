#!/usr/bin/env bash
# How `overlap suggest`'s time grows with the run, on real traces of bench/isends.c (2
# ranks: N Isends (or Irecvs), compute, one Waitall; ITERS iterations), traced by the
# preload; each waits right after its posts, then computes (`early`: the wait could move
# past the compute). Three series:
#   one-waitall  one iteration of N = 1 000, 10 000, 100 000 requests: the run issue 36
#                names (one rank posting N Isends then one Waitall);
#   iterations   N = 100 per iteration, 1 to 2 000 iterations: 10^3 to 10^6 operations
#                whose iterations repeat;
#   tags         three iterations of N = 1 000, 10 000, 30 000 requests, message i with
#                tag i: one iteration of N posts is one scope of the policies, and
#                lower-tag-first's key has N groups in it (the consensus's worst case).
# For each run: the operations suggest orders (its --json's `operations`), the seconds
# `overlap suggest` and `overlap analyze` take (median of RUNS), suggest's nanoseconds
# per operation, and the growth exponent between consecutive sizes (log time ratio over
# log size ratio: 1 is linear, n log n reads a little above 1, 2 is quadratic). Figures
# are reported, never asserted; the script fails only when a run does.
#
# Needs target/release/overlap and the preload (`make build`). Environment: RUNS
# (default 3), SERIES (default "one-waitall iterations tags"), DIR (default: a temporary
# directory, removed after; set it to keep the traces).
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
SERIES=${SERIES:-one-waitall iterations tags}
overlap="$PWD/target/release/overlap"
[ -x "$overlap" ] || {
  echo "bench-suggest: $overlap is missing: run \`make build\`" >&2
  exit 2
}
command -v python3 >/dev/null || { echo "bench-suggest: needs python3" >&2; exit 2; }
if [ -n "${DIR:-}" ]; then
  work=$DIR
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mpicc -O2 -Wno-stringop-overflow bench/isends.c -o "$work/isends" || exit 2

# `median_seconds COMMAND...`: the median wall time of RUNS runs of COMMAND (its output
# dropped); fails when a run does.
median_seconds() {
  local times=()
  for _ in $(seq 1 "$RUNS"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>"$work/last.err" || {
      echo "bench-suggest: $* failed:" >&2
      tail -3 "$work/last.err" >&2
      return 1
    }
    t1=$(date +%s.%N)
    times+=("$(python3 -c "print($t1 - $t0)")")
  done
  printf '%s\n' "${times[@]}" | sort -g | sed -n "$(((RUNS + 1) / 2))p"
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); RUNS=$RUNS"
printf '%-12s %8s %6s %10s %9s %9s %8s %7s\n' series N iters operations suggest_s analyze_s ns/op growth
for series in $SERIES; do
  case "$series" in
  one-waitall) sizes="1000:1 10000:1 100000:1" ;;
  iterations) sizes="100:1 100:10 100:100 100:1000 100:2000" ;;
  tags) sizes="1000:3 10000:3 30000:3" ;;
  *) echo "bench-suggest: unknown series $series" >&2; exit 2 ;;
  esac
  prev=""
  for size in $sizes; do
    n=${size%%:*} iters=${size##*:}
    trace="$work/isends-$series-$n-$iters.json"
    mode=(early)
    [ "$series" = tags ] && mode+=(tags)
    "$overlap" trace --out "$trace" -- mpiexec -n 2 "$work/isends" "$n" "$iters" "${mode[@]}" >"$work/trace.log" 2>&1 || {
      echo "bench-suggest: tracing isends $n $iters failed:" >&2
      tail -3 "$work/trace.log" >&2
      exit 1
    }
    "$overlap" suggest "$trace" --json >"$work/suggest.json" 2>"$work/suggest.err" || {
      echo "bench-suggest: overlap suggest $trace failed:" >&2
      tail -3 "$work/suggest.err" >&2
      exit 1
    }
    ops=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['operations'])" "$work/suggest.json")
    s=$(median_seconds "$overlap" suggest "$trace") || exit 1
    a=$(median_seconds "$overlap" analyze "$trace") || exit 1
    python3 - "$series" "$n" "$iters" "$ops" "$s" "$a" "$prev" <<'EOF'
import math, sys
series, n, iters, ops, s, a, prev = sys.argv[1:8]
ops, s, a = int(ops), float(s), float(a)
growth = "-"
if prev:
    pops, ps = prev.split(":")
    pops, ps = int(pops), float(ps)
    if ops > pops and ps > 0:
        growth = "%.2f" % (math.log(s / ps) / math.log(ops / pops))
print("%-12s %8s %6s %10d %9.3f %9.3f %8.0f %7s" % (series, n, iters, ops, s, a, s * 1e9 / ops, growth))
EOF
    prev="$ops:$s"
  done
done

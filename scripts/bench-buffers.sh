#!/usr/bin/env bash
# What the buffer watch (`overlap trace --buffers`) costs, side by side in one run: one
# rank posting a receive and a send to itself, completing both, then touching each
# buffer once (bench/watch.c), for buffers of 4 KiB, 64 KiB and 1 MiB, in three modes
# that alternate (untraced, preload, preload with the watch) RUNS times, each a fresh
# `mpiexec -n 1`. Prints the median over the rounds of each run's median: the cost per
# completion and per first touch, and what the preload and the watch add. Then the
# experiment that weighs page protection against userfaultfd's asynchronous
# write-protect (bench/watch_uffd.c), whose figures docs/buffers.md quotes. Figures are
# reported, never asserted; the script fails only when a run does.
#
# Needs target/release/liboverlap_preload.so (`cargo build --release -p overlap-preload`).
# Environment: RUNS (default 5), ITERS per run (default 2000), SIZES (bytes, default
# "4096 65536 1048576").
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
ITERS=${ITERS:-2000}
SIZES=${SIZES:-4096 65536 1048576}
preload="$PWD/target/release/liboverlap_preload.so"
if [ ! -f "$preload" ]; then
  echo "bench-buffers: $preload is missing: run \`cargo build --release -p overlap-preload\`" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -Wno-stringop-overflow bench/watch.c -o "$work/watch" || exit 2
cc -O2 bench/watch_uffd.c -o "$work/watch_uffd" || exit 2

modes=(untraced preload buffers)
# run MODE SIZE: one run; prints "completion NS touch NS".
run() {
  local env=()
  case $1 in
    untraced) ;;
    preload) env=(OVERLAP_TRACE_DIR="$work/trace" LD_PRELOAD="$preload") ;;
    buffers) env=(OVERLAP_TRACE_DIR="$work/trace" LD_PRELOAD="$preload" OVERLAP_BUFFERS=1) ;;
  esac
  rm -rf "$work/trace"
  env "${env[@]}" mpiexec -n 1 "$work/watch" "$2" "$ITERS"
}

echo "side by side on $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo "$RUNS rounds of: ${modes[*]}, each size ($SIZES bytes), $ITERS iterations a run"
failed=0
: >"$work/results"
for i in $(seq "$RUNS"); do
  for size in $SIZES; do
    for m in "${modes[@]}"; do
      if out=$(run "$m" "$size" 2>"$work/err"); then
        awk -v m="$m" -v s="$size" '/^completion/ {print m, s, $2, $4}' <<<"$out" >>"$work/results"
      else
        echo "bench-buffers: round $i, $m, $size B failed:" >&2
        cat "$work/err" >&2
        failed=1
      fi
    done
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
awk -v sizes="$SIZES" '
  function median(list,   v, n, i, j, t) {
    n = split(list, v, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return n ? (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) : -1
  }
  { c[$1 " " $2] = c[$1 " " $2] " " $3; t[$1 " " $2] = t[$1 " " $2] " " $4 }
  END {
    printf "%-9s %14s %14s %14s %16s %14s %14s %14s %16s\n", "size", "completion:", "preload", "buffers", "watch adds", "touch:", "preload", "buffers", "watch adds"
    printf "%-9s %14s %14s %14s %16s %14s %14s %14s %16s\n", "", "untraced", "", "", "per completion", "untraced", "", "", "per touch"
    n = split(sizes, s, " ")
    for (i = 1; i <= n; i++) {
      cu = median(c["untraced " s[i]]); cp = median(c["preload " s[i]]); cb = median(c["buffers " s[i]])
      tu = median(t["untraced " s[i]]); tp = median(t["preload " s[i]]); tb = median(t["buffers " s[i]])
      printf "%-9s %11.0f ns %11.0f ns %11.0f ns %13.0f ns %11.0f ns %11.0f ns %11.0f ns %13.0f ns\n", s[i] " B", cu, cp, cb, cb - cp, tu, tp, tb, tb - tp
    }
    print ""
    print "every run (ns, completion then touch):"
    for (k in c) printf "  %-22s completion%s   touch%s\n", k, c[k], t[k]
  }' "$work/results"
echo
echo "page protection against userfaultfd write-protect (bench/watch_uffd.c, medians):"
"$work/watch_uffd" "$ITERS" || failed=1
exit $failed

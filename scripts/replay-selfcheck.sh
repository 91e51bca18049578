#!/usr/bin/env bash
# The replay's self-check on every bundled kernel: each is run traced, then its measured
# order is replayed on the network fitted to its own messages with in-MPI progress
# (`overlap whatif TRACE --json`, whose whatif.replay.self_error is
# (replayed - measured) / measured), and the figure printed beside the 10 % goal.
# Figures are reported, never asserted: exits non-zero only when a run failed.
#
# Needs target/release/overlap and overlap-kernels (`cargo build --release -p overlap
# -p overlap-kernels`), or BIN=target/debug (OVERLAP_KERNELS may name a release
# overlap-kernels then). The replay gives every rank a core of its
# own: run it on a machine with at least 4 free cores (docs/replay.md, "Self-check and
# limits").
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${BIN:-target/release}
overlap="$bin/overlap"
if [ ! -x "$overlap" ]; then
  echo "replay-selfcheck: $overlap is missing: run \`cargo build --release -p overlap -p overlap-kernels\`" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
quick=(--point-seconds 0.1)
failed=0
check() {
  local name=$1
  shift
  local out="$work/$name.json"
  if ! "$overlap" run "$@" --out "$out" >"$work/$name.log" 2>&1; then
    echo "$name: the run failed (see below)"
    tail -5 "$work/$name.log"
    failed=1
    return
  fi
  "$overlap" whatif "$out" --progress in-mpi --json 2>"$work/$name.err" | python3 -c '
import json, sys
name = sys.argv[1]
try:
    w = json.load(sys.stdin)["whatif"]
except Exception:
    print(f"{name}: whatif failed: " + open(sys.argv[2]).read().strip())
    sys.exit(1)
e = w["replay"]["self_error"]
ok = "within 10%" if e is not None and abs(e) <= 0.10 else "OUTSIDE 10%"
shown = "unknown" if e is None else "%+.1f%%" % (e * 100)
print("%-22s self_error %8s  (%s; measured %.1f ms, replayed %.1f ms, eager limit %s)" % (
    name, shown, ok, w["measured_ns"] / 1e6, w["predicted_ns"] / 1e6,
    w["network"]["eager"]["from"]))
' "$name" "$work/$name.err" || failed=1
}
check false-overlap-naive false-overlap --variant naive -n 4
check false-overlap-fixed false-overlap --variant fixed -n 4
for v in blocking nonblocking overlapped; do
  check "toeplitz-$v" toeplitz --variant "$v" -n 2
done
check pingpong pingpong -n 2 --max-bytes 1048576 "${quick[@]}"
check sync sync -n 4 --max-samples 10 "${quick[@]}"
check halo3d halo3d -n 4 --sizes 8,32 "${quick[@]}"
exit $failed

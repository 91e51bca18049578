#!/usr/bin/env bash
# The replay's self-check on every bundled kernel: each is run traced, then its measured
# order is replayed on the network fitted to its own clean transfers with in-MPI
# progress (`overlap analyze TRACE --json`, whose replay.self_error is
# (replayed - measured) / measured, or replay_unknown says why there is none: a trace
# whose network cannot be fitted), and the figure printed beside the 10 % goal, with
# whether the run's ranks shared CPUs (then no figure is confirmable).
# Figures are reported, never asserted: exits non-zero only when a run failed.
#
# RANKS=2 runs every kernel on 2 ranks (a 2-core machine: more ranks than cores are
# measured, and flagged, but the replay cannot model the scheduler).
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
  "$overlap" analyze "$out" --json 2>"$work/$name.err" | python3 -c '
import json, sys
name = sys.argv[1]
try:
    r = json.load(sys.stdin)
except Exception:
    print(f"{name}: analyze failed: " + open(sys.argv[2]).read().strip())
    sys.exit(1)
crowded = {True: "; ranks shared CPUs", False: "", None: "; CPUs unknown"}[
    r["run"]["oversubscription"]["oversubscribed"]]
c = r.get("replay")
if c is None or c.get("self_error") is None:
    print("%-22s self_error  unknown  (%s%s)" % (name, json.dumps(r.get("replay_unknown")), crowded))
    sys.exit(0)
e = c["self_error"]
ok = "within 10%" if abs(e) <= 0.10 else "OUTSIDE 10%"
print("%-22s self_error %+7.1f%%  (%s; measured %.1f ms, replayed %.1f ms%s)" % (
    name, e * 100, ok, c["measured_ns"] / 1e6, c["replayed_ns"] / 1e6, crowded))
' "$name" "$work/$name.err" || failed=1
}
check false-overlap-naive false-overlap --variant naive -n "${RANKS:-4}"
check false-overlap-fixed false-overlap --variant fixed -n "${RANKS:-4}"
for v in blocking nonblocking overlapped; do
  check "toeplitz-$v" toeplitz --variant "$v" -n 2
done
check pingpong pingpong -n 2 --max-bytes 1048576 "${quick[@]}"
check sync sync -n "${RANKS:-4}" --max-samples 10 "${quick[@]}"
check halo3d halo3d -n "${RANKS:-4}" --sizes 8,32 "${quick[@]}"
exit $failed

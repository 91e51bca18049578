#!/usr/bin/env bash
# Sets `overlap suggest` against measured runs, printing each figure (docs/suggest.md;
# the README shows its output). Figures, not asserts: it never fails on a number.
#
#   - false-overlap, 4 ranks, RUNS runs of each variant: the naive trace's suggestion
#     against the fixed runs (suggested iteration vs the fixed one; predicted time vs the
#     fixed runs' median), with the default policies and with waits-late;
#   - toeplitz, 2 ranks: the nonblocking trace's suggestion against the overlapped runs,
#     under --progress in-mpi;
#   - the fixed and overlapped traces' own suggestions (nothing should gain);
#   - a C program traced by the preload (tests/programs/reorder.c);
#   - the replay's self-check on every bundled kernel.
#
# Needs the release build (`cargo build --release --workspace`). RUNS (default 5) and
# DIR (default traces/validate) can be set.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/overlap
RUNS=${RUNS:-5}
DIR=${DIR:-traces/validate}
[ -x "$BIN" ] && [ -x target/release/overlap-kernels ] || {
  echo "validate-suggest: build first: cargo build --release --workspace" >&2
  exit 2
}
export PATH="$PWD/target/release:$PATH"
mkdir -p "$DIR"
echo "machine: $(nproc) cores; MPICH $(mpichversion 2>/dev/null | sed -n 's/MPICH Version:[[:space:]]*//p')"

# `run KERNEL VARIANT RANKS N`: N traces DIR/KERNEL-VARIANT-k.json.
run() {
  for k in $(seq 1 "$4"); do
    "$BIN" run "$1" --ranks "$3" --variant "$2" --out "$DIR/$1-$2-$k.json" >"$DIR/$1-$2-$k.log" 2>&1
  done
}
traces() { for k in $(seq 1 "$RUNS"); do echo "$DIR/$1-$k.json"; done; }
# The figures of a suggestion: the header, the moves and their verdicts, the
# prediction, the re-run.
figures() {
  "$BIN" suggest "$@" | grep -E '^(measured|replay:|predicted|with every|re-run)|^  ranks? [0-9, ]+: the re-run|^  - |assumes:' || true
}

echo
echo "== false-overlap, 4 ranks, $RUNS runs of each variant"
run false-overlap naive 4 "$RUNS"
run false-overlap fixed 4 "$RUNS"
echo "-- naive, default policies, against the fixed runs:"
figures "$DIR/false-overlap-naive-1.json" --confirm $(traces false-overlap-fixed)
echo "-- naive, --policy waits-late,lower-tag-first, against the fixed runs:"
figures "$DIR/false-overlap-naive-1.json" --policy waits-late,lower-tag-first --confirm $(traces false-overlap-fixed)
echo "-- fixed, its own suggestion:"
figures "$DIR/false-overlap-fixed-1.json"

echo
echo "== toeplitz, 2 ranks, $RUNS runs of each variant, --progress in-mpi"
run toeplitz nonblocking 2 "$RUNS"
run toeplitz overlapped 2 "$RUNS"
echo "-- nonblocking against the overlapped runs:"
figures "$DIR/toeplitz-nonblocking-1.json" --progress in-mpi --confirm $(traces toeplitz-overlapped)
echo "-- overlapped, its own suggestion:"
figures "$DIR/toeplitz-overlapped-1.json" --progress in-mpi

echo
echo "== a C program under the preload (tests/programs/reorder.c), 2 ranks"
mpicc -g -O1 -Wno-stringop-overflow tests/programs/reorder.c -o "$DIR/reorder"
"$BIN" trace --out "$DIR/reorder.json" -- mpiexec -n 2 "$DIR/reorder" >"$DIR/reorder.log" 2>&1
figures "$DIR/reorder.json"

echo
echo "== the replay's self-check on every bundled kernel (overlap analyze: replay.self_error)"
selfcheck() { "$BIN" analyze "$1" | grep -o 'replay.self_error .*' || echo "no self-check"; }
for spec in "false-overlap naive 4" "false-overlap fixed 4" "false-overlap naive 2" \
  "toeplitz blocking 2" "toeplitz nonblocking 2" "toeplitz overlapped 2"; do
  set -- $spec
  run "$1" "$2" "$3" 1
  cp "$DIR/$1-$2-1.json" "$DIR/self-$1-$2-$3.json"
  printf '%-28s %s\n' "$1 $2 -n $3:" "$(selfcheck "$DIR/self-$1-$2-$3.json")"
done
for kernel in pingpong sync halo3d; do
  "$BIN" run "$kernel" --ranks 2 --out "$DIR/self-$kernel.json" >"$DIR/self-$kernel.log" 2>&1
  printf '%-28s %s\n' "$kernel -n 2:" "$(selfcheck "$DIR/self-$kernel.json")"
done

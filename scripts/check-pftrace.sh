#!/usr/bin/env bash
# Perfetto's importer rules on the .pftrace files `overlap merge` writes, decoded with
# Perfetto's own schema (scripts/check-pftrace.py, in target/perfetto-venv, which
# `scripts/bootstrap.sh --perfetto` or `--mpi4py` makes).
#
#   scripts/check-pftrace.sh              merges every recorded run of
#                                         analyzer/tests/data/reports/*/ranks into
#                                         target/pftrace-check/ (and a window of one:
#                                         --from, --to, --ranks) and checks them
#   scripts/check-pftrace.sh FILE...      checks the given .pftrace files
#
# Needs target/debug/overlap (`cargo build`) for the first form. Without the venv it
# says why and exits 0, or 1 where OVERLAP_REQUIRE_PERFETTO=1 (make test).
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
python=${OVERLAP_PERFETTO_PYTHON:-$target/perfetto-venv/bin/python}
if ! "$python" -c 'from perfetto.protos.perfetto.trace import perfetto_trace_pb2' 2>/dev/null; then
  echo "check-pftrace: skipped: no Python with the perfetto package at $python" \
    "(scripts/bootstrap.sh --perfetto makes one)" >&2
  [ "${OVERLAP_REQUIRE_PERFETTO:-0}" = 1 ] && exit 1
  exit 0
fi
if [ $# -gt 0 ]; then
  exec "$python" scripts/check-pftrace.py "$@"
fi
overlap="$target/debug/overlap"
[ -x "$overlap" ] || { echo "check-pftrace: $overlap not built (cargo build)" >&2; exit 1; }
out="$target/pftrace-check"
rm -rf "$out"
mkdir -p "$out"
files=()
for ranks in analyzer/tests/data/reports/*/ranks; do
  name=$(basename "$(dirname "$ranks")")
  "$overlap" merge "$ranks" --out "$out/$name.pftrace" >"$out/$name.log" 2>&1 ||
    { echo "check-pftrace: merging $ranks failed:" >&2; cat "$out/$name.log" >&2; exit 1; }
  files+=("$out/$name.pftrace")
done
# A window of a run: slices cut at its edges, messages cut by it.
"$overlap" merge analyzer/tests/data/reports/false-overlap/ranks --out "$out/window.pftrace" \
  --from 180ms --to 200ms --ranks 0-2 >"$out/window.log" 2>&1 ||
  { echo "check-pftrace: merging a window failed:" >&2; cat "$out/window.log" >&2; exit 1; }
files+=("$out/window.pftrace")
exec "$python" scripts/check-pftrace.py "${files[@]}"

#!/usr/bin/env bash
# The fault suite: the faults found by trying overlap as a hostile user and a careless
# one would (issue 37), each repeated as a case and scored. Prints one line per case and
# a summary table; exits non-zero when any case panicked, hung, gave the wrong exit, said
# something unclear, lost data or left a half-written output.
#
#   scripts/faults.sh            all cases, with target/debug/overlap
#   OVERLAP=path/to/overlap scripts/faults.sh
#   scripts/faults.sh outputs    only the cases of scripts/faults/outputs.sh
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
OVERLAP=${OVERLAP:-$REPO/target/debug/overlap}
[ -x "$OVERLAP" ] || { echo "faults.sh: $OVERLAP not built (cargo build, scripts/build-preloads.sh)" >&2; exit 2; }
FAULT_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/overlap-faults.XXXXXX")
trap 'rm -rf "$FAULT_ROOT"' EXIT
. scripts/faults/lib.sh
# A small real trace every area may start from: 2 ranks of the Toeplitz kernel.
SMALL=$FAULT_ROOT/small.json
"$OVERLAP" run toeplitz --ranks 2 --iters 3 --size 16384 --lambda 256 --out "$SMALL" >/dev/null 2>&1 || { echo "faults.sh: cannot make the small trace" >&2; exit 2; }
areas=("$@")
[ ${#areas[@]} -eq 0 ] && areas=($(cd scripts/faults && ls *.sh | grep -v '^lib.sh$' | sed 's/\.sh$//'))
for area in "${areas[@]}"; do
    . "scripts/faults/$area.sh"
done
fault_table

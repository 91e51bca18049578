#!/usr/bin/env bash
# The CI gate: run the false-overlap kernel (fixed variant, 4 ranks) and check its
# metrics against the baseline committed under traces/baselines/. Only metrics that do
# not flake on a noisy 2-core machine are gated (finding counts, efficiencies with a
# wide tolerance, 40%, kept in the baseline; never absolute times). OVERLAP_TOLERANCE
# overrides it. Exit status: that of `overlap check` (0 pass, 1 regression, 2 a trace
# or baseline that cannot be trusted).
#
# The baseline was made the same way:
#   overlap run false-overlap --ranks 4 --variant fixed --out f.json
#   overlap baseline f.json --tolerance 40 --out traces/baselines/false-overlap-fixed.json
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE_DIR=${PROFILE_DIR:-target/debug}
OUT=target/ci
mkdir -p "$OUT"
"$PROFILE_DIR/overlap" run false-overlap --ranks 4 --variant fixed \
    --out "$OUT/false-overlap-fixed.json" >"$OUT/run.txt"
"$PROFILE_DIR/overlap" check "$OUT/false-overlap-fixed.json" \
    --baseline traces/baselines/false-overlap-fixed.json \
    ${OVERLAP_TOLERANCE:+--tolerance "$OVERLAP_TOLERANCE"} --junit "$OUT/overlap-check.xml"

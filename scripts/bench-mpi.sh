#!/usr/bin/env bash
# What tracing costs an MPI program, side by side in one run, on 2 ranks: the OSU loops
# (8-byte and 64 KiB ping-pong latency and windowed bandwidth, bench/osu.c, and the cost
# of one wrapped call) untraced, under the preload (as `overlap trace` runs it) and under
# mpiP (built from source the first time, see below); and the same loops with the mpi crate
# (kernels/examples/osu.rs), plain and through TracedComm. The modes alternate
# (A B C A B C ...) RUNS times; medians are printed with their ratio to the untraced
# run of the same language, beside the issue's goals. Then the bytes per event on disk
# of the last traced runs. Exits non-zero only when a run failed; figures are reported,
# never asserted.
#
# Needs the release builds: target/release/{overlap,liboverlap_preload.so,examples/osu}
# (`make bench` builds them). Environment: RUNS (default 5), MPIP_LIB (a libmpiP.so, or
# none), MPIP (mpiP's options, default "-k 0": no stack walking), BEFORE (another
# liboverlap_preload.so, e.g. main's before a change: its runs are the `before` mode,
# alternating with the others), SIZES (default "8 65536").
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
SIZES=${SIZES:-8 65536}
bin=target/release
for f in "$bin/overlap" "$bin/liboverlap_preload.so" "$bin/examples/osu"; do
  if [ ! -f "$f" ]; then
    echo "bench-mpi: $f is missing: run \`cargo build --release -p overlap -p overlap-preload\` and \`cargo build --release -p overlap-kernels --example osu\`" >&2
    exit 2
  fi
done
preload="$PWD/$bin/liboverlap_preload.so"
rust_osu="$PWD/$bin/examples/osu"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 bench/osu.c -o "$work/osu" || exit 2

# mpiP beside us, so that our cost is read against a known profiler's in the same run:
# MPIP_LIB names its libmpiP.so (MPIP_LIB=none: without it); else the one cached in
# target/mpip/, else it is built there once from mpiP's source release (downloaded, or a
# tarball of it left at $mpip_tarball), against the MPICH of `mpicc`, without libunwind
# or libbfd (it runs with -k 0: no stack walking). When that fails, the bench says why
# and runs without mpiP.
MPIP_VERSION=3.5
mpip_dir=$PWD/target/mpip
mpip_tarball=$mpip_dir/mpiP-$MPIP_VERSION.tar.gz
mpip_url=https://github.com/LLNL/mpiP/archive/refs/tags/$MPIP_VERSION.tar.gz
# build_mpip: builds $mpip_dir/libmpiP.so; says why not on stderr and fails.
build_mpip() {
  mkdir -p "$mpip_dir" || return 1
  if [ ! -s "$mpip_tarball" ]; then
    echo "bench-mpi: building mpiP $MPIP_VERSION for the comparison: downloading $mpip_url" >&2
    if ! curl -fsSL --connect-timeout 20 --max-time 300 -o "$mpip_tarball.part" "$mpip_url" 2>"$mpip_dir/download.log"; then
      echo "bench-mpi: cannot download mpiP ($(tail -1 "$mpip_dir/download.log")); running without mpiP" \
        "(set MPIP_LIB, or leave mpiP's release tarball at $mpip_tarball)" >&2
      rm -f "$mpip_tarball.part"
      return 1
    fi
    mv "$mpip_tarball.part" "$mpip_tarball"
  fi
  local src=$mpip_dir/src log=$mpip_dir/build.log
  rm -rf "$src" && mkdir -p "$src" || return 1
  echo "bench-mpi: building mpiP from $mpip_tarball (log: $log)" >&2
  # make-wrappers.py names its author from LOGNAME, which a batch shell may not set.
  if tar xzf "$mpip_tarball" -C "$src" --strip-components=1 &&
    (cd "$src" && CC=mpicc ./configure --disable-bfd --disable-libunwind --disable-fortranxlate &&
      LOGNAME=${LOGNAME:-$(id -un)} make shared) >"$log" 2>&1 &&
    cp "$src/libmpiP.so" "$mpip_dir/libmpiP.so"; then
    return 0
  fi
  echo "bench-mpi: building mpiP failed (the end of $log below); running without mpiP" >&2
  tail -5 "$log" >&2
  return 1
}
if [ -z "${MPIP_LIB:-}" ]; then
  if [ -f "$mpip_dir/libmpiP.so" ] || build_mpip; then
    MPIP_LIB=$mpip_dir/libmpiP.so
  else
    MPIP_LIB=none
  fi
fi

modes=(untraced)
if [ -n "${BEFORE:-}" ]; then
  [ -f "$BEFORE" ] || { echo "bench-mpi: BEFORE=$BEFORE does not exist" >&2; exit 2; }
  before=$(realpath "$BEFORE")
  modes+=(before)
fi
modes+=(preload)
if [ "$MPIP_LIB" != none ]; then
  [ -f "$MPIP_LIB" ] || { echo "bench-mpi: MPIP_LIB=$MPIP_LIB does not exist" >&2; exit 2; }
  modes+=(mpip)
fi
modes+=(rust rust-traced)

# run MODE: one run of MODE on 2 ranks; its figures go to stdout.
run() {
  case $1 in
    untraced) mpiexec -n 2 "$work/osu" $SIZES ;;
    preload | before)
      local lib=$preload
      [ "$1" = before ] && lib=$before
      rm -rf "$work/trace-$1"
      OVERLAP_TRACE_DIR="$work/trace-$1" LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}" \
        mpiexec -n 2 "$work/osu" $SIZES ;;
    mpip)
      mkdir -p "$work/mpip"
      MPIP="${MPIP:--k 0} -f $work/mpip" LD_PRELOAD="$MPIP_LIB${LD_PRELOAD:+:$LD_PRELOAD}" \
        mpiexec -n 2 "$work/osu" $SIZES ;;
    rust) mpiexec -n 2 "$rust_osu" plain $SIZES ;;
    rust-traced)
      rm -rf "$work/trace-rust"
      mpiexec -n 2 "$rust_osu" traced "$work/trace-rust" $SIZES ;;
  esac
}

echo "side by side on $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start;" \
  "$(mpichversion 2>/dev/null | awk -F: '/Version/ {gsub(/[ \t]/, "", $2); print "MPICH " $2}')"
echo "$RUNS rounds of: ${modes[*]} (each a fresh mpiexec -n 2)"
failed=0
: >"$work/results"
for i in $(seq "$RUNS"); do
  for m in "${modes[@]}"; do
    if out=$(run "$m" 2>"$work/err"); then
      awk -v m="$m" 'NF >= 2 {print m, $0}' <<<"$out" >>"$work/results"
    else
      echo "bench-mpi: round $i, $m failed:" >&2
      cat "$work/err" >&2
      failed=1
    fi
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

# The table: one row a figure, one column a mode (median over the rounds), each traced
# column followed by its ratio to the untraced run of the same language.
awk -v modes="${modes[*]}" -v sizes="$SIZES" '
  function median(list,   v, n, i, j, t) {
    n = split(list, v, " ")
    if (n == 0) return ""
    for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j-1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j-1]; v[j-1] = t }
    return (n % 2) ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2
  }
  function human(b) { return b >= 1024 && b % 1024 == 0 ? b/1024 " KiB" : b " B" }
  { key = ($2 == "call_ns") ? $2 : $2 " " $3; vals[$1, key] = vals[$1, key] " " $NF; runs[$1, key] = runs[$1, key] " " $NF }
  END {
    nm = split(modes, m, " ")
    base["preload"] = "untraced"; base["before"] = "untraced"; base["mpip"] = "untraced"; base["rust-traced"] = "rust"
    ns = split(sizes, sz, " ")
    nk = 0
    for (i = 1; i <= ns; i++) { k[++nk] = "lat_ns " sz[i]; label[nk] = "latency " human(sz[i]) " (ns)" }
    for (i = 1; i <= ns; i++) { k[++nk] = "bw_mbs " sz[i]; label[nk] = "bandwidth " human(sz[i]) " (MB/s)" }
    k[++nk] = "call_ns"; label[nk] = "MPI_Test(NULL) (ns)"
    printf "%-26s", "median"
    for (j = 1; j <= nm; j++) { printf " %10s", m[j]; if (m[j] in base) printf " %8s", "ratio" }
    printf "   %s\n", "goal (preload against untraced)"
    for (r = 1; r <= nk; r++) {
      printf "%-26s", label[r]
      for (j = 1; j <= nm; j++) {
        v = median(vals[m[j], k[r]]); med[m[j]] = v
        printf " %10s", v == "" ? "-" : sprintf("%.1f", v)
        if (m[j] in base) {
          b = median(vals[base[m[j]], k[r]])
          if (v == "" || b == "" || b == 0) printf " %8s", "-"
          else if (k[r] == "call_ns") printf " %+7.1fns", v - b
          else printf " %7.2fx", v / b
        }
      }
      goal = ""
      if (k[r] == "lat_ns 8") goal = "within +25 % (<= 1.25x; moonshot 1.10x)"
      else if (k[r] == "bw_mbs 8") goal = ">= 0.60x (moonshot 0.75x), and not below mpip"
      else if (k[r] == "call_ns") goal = "<= +30 ns per wrapped call (moonshot +20)"
      else goal = "(control: within noise)"
      printf "   %s\n", goal
    }
    print ""
    print "every run (rounds in order):"
    for (r = 1; r <= nk; r++) for (j = 1; j <= nm; j++) if ((m[j], k[r]) in runs)
      printf "  %-24s %-12s%s\n", label[r], m[j], runs[m[j], k[r]]
  }' "$work/results"

# bytes_per_event DIR LABEL: the rank files of DIR (whatever their format) against the
# events `overlap merge` finds in them (calls and compute spans).
bytes_per_event() {
  local dir=$1 label=$2
  if ! ls "$dir"/rank-* >/dev/null 2>&1; then
    echo "  $label: no trace (its runs failed)"
    return
  fi
  local bytes events
  bytes=$(cat "$dir"/rank-* | wc -c)
  if ! "$bin/overlap" merge "$dir" --out "$work/merged.json" >/dev/null 2>"$work/err"; then
    echo "bench-mpi: overlap merge $label failed:" >&2
    cat "$work/err" >&2
    failed=1
    return
  fi
  events=$(grep -o '"cat":"\(mpi\|compute\)"' "$work/merged.json" | wc -l)
  awk -v b="$bytes" -v e="$events" -v l="$label" -v n="$(ls "$dir"/rank-* | wc -l)" 'BEGIN {
    if (e) printf "  %-12s %d rank files, %d bytes, %d events: %.1f bytes/event (goal <= 40)\n", l, n, b, e, b / e
    else printf "  %-12s %d rank files, %d bytes, no event merged: bytes/event unknown\n", l, n, b }'
  rm -f "$work/merged.json"
}
echo
echo "bytes per event on disk (the last round's traces):"
[ -n "${BEFORE:-}" ] && bytes_per_event "$work/trace-before" before
bytes_per_event "$work/trace-preload" preload
bytes_per_event "$work/trace-rust" rust-traced
if [ "$failed" -ne 0 ]; then
  echo "bench-mpi: some runs failed (above)" >&2
  exit 1
fi

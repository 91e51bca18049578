#!/usr/bin/env bash
# Builds the preload once more for every other MPI installed beside the default one, and
# the library under `overlap analyze --parallel`'s workers for every MPI installed.
#
# A preload works only in programs of the MPI family it was compiled against (MPICH's
# handles are integers, Open MPI's are pointers). Cargo builds `liboverlap_preload.so`
# for the default `mpicc`; this script names it by its MPI too
# (`liboverlap_preload-mpich.so`, a symbolic link) and builds
# `liboverlap_preload-<family>.so` beside it for each other family whose compiler
# wrapper is found, each in a target directory of its own (target/mpi-<family>: the
# `mpi-sys` bindings differ). `overlap trace`
# then loads the one that matches the program's MPI (docs/preload.md, "Which MPI").
#
#   scripts/build-preloads.sh [--release] [--default | --others]
#
# --default builds cargo's own preload only (the default MPI's), --others only those of
# the other families: they need nothing of each other (each has its own target
# directory), so `make test` builds the others beside the workspace (a core is idle much
# of a cargo build) and `make demo` leaves them out (it traces no program).
#
# The workers' library (src/parallel/exchange.c: a few collectives, no handle crossing
# its functions) is one small C file: `liboverlap_exchange-<family>.so` is compiled with
# each family's wrapper beside its preload (the default family's with --default too).
#
# The wrappers are looked up as Debian names them (mpicc.mpich, mpicc.openmpi), or
# given as OVERLAP_MPICC_MPICH / OVERLAP_MPICC_OPENMPI.
set -euo pipefail
cd "$(dirname "$0")/.."

profile=debug
flags=()
mode=all
for arg in "$@"; do
  case $arg in
    --release) profile=release; flags=(--release) ;;
    --default | --others) mode=${arg#--} ;;
    *) echo "usage: scripts/build-preloads.sh [--release] [--default | --others]" >&2; exit 2 ;;
  esac
done
out="target/$profile"
mkdir -p "$out"
default_lib="$out/liboverlap_preload.so"
if [ "$mode" != others ]; then
  # Cargo's own build, up to date (nothing to do when it is): its marker names its MPI.
  cargo build -q -p overlap-preload "${flags[@]}"
  default=$(grep -aoE 'overlap-preload-built-for:(mpich|openmpi) ' "$default_lib" | head -n1 | cut -d: -f2 | tr -d ' ' || true)
  if [ -z "$default" ]; then
    echo "build-preloads: $default_lib names no MPI it was built for" >&2
    exit 1
  fi
else
  # The family cargo's own build is for, asked of mpi.h as its build script asks it.
  probe=$(mktemp --suffix=.c)
  trap 'rm -f "$probe"' EXIT
  printf '#include <mpi.h>\n#if defined(OPEN_MPI)\noverlap_family=openmpi\n#elif defined(MPICH_VERSION)\noverlap_family=mpich\n#endif\n' >"$probe"
  default=$("${MPICC:-mpicc}" -E -P "$probe" 2>/dev/null | sed -n 's/^overlap_family=//p' || true)
  if [ -z "$default" ]; then
    echo "build-preloads: ${MPICC:-mpicc} -E names no MPI family in mpi.h" >&2
    exit 1
  fi
fi

# The workers' library for `family`, compiled with the wrapper `mpicc` when its source
# is newer than the library (a second of work, but `make test` asks for it twice).
exchange_library() {
  local mpicc=$1 family=$2 lib="$out/liboverlap_exchange-$2.so" src=src/parallel/exchange.c
  if [ ! "$lib" -nt "$src" ]; then
    "$mpicc" -shared -fPIC -O2 -Wall -Wextra -Werror -o "$lib.tmp" "$src"
    mv "$lib.tmp" "$lib"
  fi
}

for family in mpich openmpi; do
  if [ "$family" = "$default" ]; then
    # Cargo's own build, named by its MPI too: a link, which a rebuild cannot leave stale.
    [ "$mode" = others ] || ln -sfn liboverlap_preload.so "$out/liboverlap_preload-$family.so"
    [ "$mode" = others ] || exchange_library "${MPICC:-mpicc}" "$family"
    continue
  fi
  [ "$mode" != default ] || continue
  var="OVERLAP_MPICC_${family^^}"
  mpicc="${!var:-$(command -v "mpicc.$family" || true)}"
  # Never copied through a link left from when this family was the default (it would
  # overwrite cargo's own library), and never left stale when the MPI is gone.
  rm -f "$out/liboverlap_preload-$family.so"
  if [ -z "$mpicc" ]; then
    rm -f "$out/liboverlap_exchange-$family.so"
    echo "build-preloads: no $family compiler wrapper (mpicc.$family or $var): not built"
    continue
  fi
  echo "build-preloads: the preload for $family ($mpicc)"
  MPICC="$mpicc" cargo build -q -p overlap-preload "${flags[@]}" --target-dir "target/mpi-$family"
  cp "target/mpi-$family/$profile/liboverlap_preload.so" "$out/liboverlap_preload-$family.so"
  exchange_library "$mpicc" "$family"
done

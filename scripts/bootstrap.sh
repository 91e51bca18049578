#!/usr/bin/env bash
# Installs the system packages overlap needs, when they are missing:
#   - MPICH (mpiexec, mpicc, mpif90, libmpich) and gfortran: the MPI the kernels and
#     tests run on, and the compilers of the C and Fortran programs the preload traces;
#   - Open MPI beside it (mpicc.openmpi, mpirun.openmpi): the preload is built for it
#     too (scripts/build-preloads.sh) and its test programs run under both. MPICH
#     stays the default `mpicc`/`mpiexec` (Debian's alternatives would otherwise switch
#     to Open MPI when it is installed);
#   - libclang: the `mpi` crate generates its bindings with it at build time;
#   - tmux: the end-to-end test of `overlap tui` drives it in a tmux pane;
#   - libotf2-trace-dev, otf2-tools and python3-otf2: the OTF2 library overlap reads
#     and writes Score-P's archives with (its bindings are generated against the
#     headers at build time), `otf2-print` that checks the archives written, and the
#     OTF2 Python bindings (for Debian's /usr/bin/python3) a test writes an archive with;
#   - slurm-wlm and munge: the tests start a one-node Slurm of their own (its daemons
#     on free ports, in a temporary directory) to trace programs launched by `srun`;
#   - python3-venv and python3-dev: with `--mpi4py` (what `make test` passes), a
#     virtual environment with mpi4py built from source against MPICH, and numpy, in
#     target/mpi4py-venv, for the tests of Python programs' call sites (below), and
#     the PyPI `perfetto` package's trace schema in target/perfetto-venv, for the check
#     of the .pftrace files (scripts/check-pftrace.sh).
# Debian/Ubuntu get them through apt-get (with sudo when not root); elsewhere the
# script says what to install. It changes nothing when everything is there.
set -euo pipefail

packages=(mpich libmpich-dev openmpi-bin libopenmpi-dev gfortran libclang-dev tmux slurm-wlm munge python3 python3-venv python3-dev bsdutils libotf2-trace-dev otf2-tools python3-otf2)

have_package() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

if ! command -v cargo >/dev/null 2>&1; then
  echo "bootstrap: cargo not found: install Rust (https://rustup.rs) first" >&2
  exit 1
fi

if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  missing=()
  for p in "${packages[@]}"; do
    have_package "$p" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "bootstrap: installing ${missing[*]}"
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
      if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "bootstrap: need root or sudo to install ${missing[*]}" >&2
        exit 1
      fi
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  # With Open MPI installed, Debian's alternatives make it the default MPI (it ranks
  # higher) unless someone chose one by hand: in automatic mode, keep MPICH, which the
  # kernels are built against and the tests launch with `mpiexec`.
  multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
  for alt in mpi mpirun "mpi-$multiarch"; do
    if update-alternatives --query "$alt" 2>/dev/null | grep '^Status: auto' >/dev/null; then
      mpich_choice=$(update-alternatives --list "$alt" 2>/dev/null | grep -m1 mpich || true)
      if [ -n "$mpich_choice" ]; then
        if [ "$(id -u)" -eq 0 ]; then
          update-alternatives --set "$alt" "$mpich_choice" >/dev/null
        elif command -v sudo >/dev/null 2>&1; then
          sudo update-alternatives --set "$alt" "$mpich_choice" >/dev/null
        else
          echo "bootstrap: warning: $alt is not MPICH's and there is no sudo to set it:" \
            "run \`update-alternatives --set $alt $mpich_choice\` as root" >&2
        fi
      fi
    fi
  done
else
  for tool in mpiexec mpicc mpif90; do
    if ! command -v "$tool" >/dev/null 2>&1; then
      echo "bootstrap: $tool not found: install MPICH and libclang with your package manager" >&2
      exit 1
    fi
  done
fi

if ! mpiexec --version 2>/dev/null | grep -i "hydra\|mpich" >/dev/null; then
  echo "bootstrap: warning: mpiexec is not MPICH's; overlap is tested with MPICH" >&2
fi

# With --mpi4py: the Python tests' interpreter, a venv with mpi4py and numpy. PyPI's
# mpi4py wheel is built for another MPI's ABI (it wants libmpi.so.12), so mpi4py is
# built from source against MPICH's mpicc, once. Its C is compiled without optimisation
# (MPI4PY_CFLAGS, default -O0: about 40 s of CPU against 4 min at -O2): the tests need
# mpi4py to work, not to be fast; scripts/bench-python.sh says how to time an optimised
# one. The venv is kept in target/ and rebuilt only when what it was built from
# changes: the mpi4py version below, its C flags, MPICH's version and the Python's (the
# key in target/mpi4py-venv/.overlap-key).
# Without network it says so and goes on: the Python tests then say why they are
# skipped, or fail under `make test` (OVERLAP_REQUIRE_MPI4PY=1).
MPI4PY_VERSION=4.1.2
MPI4PY_CFLAGS=${MPI4PY_CFLAGS:--O0}
if [ "${1:-}" = "--mpi4py" ]; then
  cd "$(dirname "$0")/.."
  venv="${CARGO_TARGET_DIR:-target}/mpi4py-venv"
  python=${OVERLAP_PYTHON:-python3}
  mpicc_mpich=${OVERLAP_MPICC_MPICH:-$(command -v mpicc.mpich || command -v mpicc || true)}
  mpich_version=$(mpichversion 2>/dev/null | awk -F: '/MPICH Version/ {gsub(/[ \t]/, "", $2); print $2}' || true)
  python_version=$("$python" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null || true)
  key="mpi4py $MPI4PY_VERSION ($MPI4PY_CFLAGS); MPICH ${mpich_version:-unknown}; Python ${python_version:-none}"
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.overlap-key" 2>/dev/null)" = "$key" ]; then
    : # up to date
  elif [ -z "$python_version" ] || [ -z "$mpicc_mpich" ]; then
    echo "bootstrap: no mpi4py venv: ${python} or MPICH's mpicc is missing; the Python tests will be skipped" >&2
  else
    echo "bootstrap: building $venv ($key; mpi4py compiles for a minute, once)"
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    log="$venv.log"
    started=$(date +%s)
    if "$python" -m venv "$venv" >"$log" 2>&1 &&
      CFLAGS="$MPI4PY_CFLAGS" MPICC="$mpicc_mpich" "$venv/bin/pip" install --no-binary mpi4py \
        "mpi4py==$MPI4PY_VERSION" numpy >>"$log" 2>&1 &&
      "$venv/bin/python" -c 'import mpi4py, numpy' >>"$log" 2>&1; then
      echo "$key" >"$venv/.overlap-key"
      echo "bootstrap: $venv ready in $(($(date +%s) - started)) s"
    else
      rm -rf "$venv"
      if grep -qiE "network|connection|resolve|temporary failure|no matching distribution" "$log"; then
        why="PyPI could not be reached (no network?)"
      else
        why="the build failed"
      fi
      echo "bootstrap: warning: no mpi4py venv: $why; see $log (last lines below)." \
        "The Python tests will be skipped, or fail where OVERLAP_REQUIRE_MPI4PY=1 (make test)." >&2
      tail -n 5 "$log" >&2 || true
    fi
  fi
fi

# With --mpi4py (what `make test` passes) or --perfetto: Perfetto's own trace schema,
# the PyPI `perfetto` package (its perfetto_trace_pb2, with protobuf), in
# target/perfetto-venv, for scripts/check-pftrace.sh, which decodes the .pftrace files
# `overlap merge` writes. Kept in target/ and rebuilt only when the versions below or
# the Python's change (the key in target/perfetto-venv/.overlap-key). Without network it
# says so and goes on: the check then says why it is skipped, or fails under `make test`
# (OVERLAP_REQUIRE_PERFETTO=1).
PERFETTO_VERSION=0.59.1
PROTOBUF_VERSION=7.36.2
if [ "${1:-}" = "--mpi4py" ] || [ "${1:-}" = "--perfetto" ]; then
  cd "$(dirname "$0")/.."
  venv="${CARGO_TARGET_DIR:-target}/perfetto-venv"
  python=${OVERLAP_PYTHON:-python3}
  python_version=$("$python" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null || true)
  key="perfetto $PERFETTO_VERSION; protobuf $PROTOBUF_VERSION; Python ${python_version:-none}"
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.overlap-key" 2>/dev/null)" = "$key" ]; then
    : # up to date
  elif [ -z "$python_version" ]; then
    echo "bootstrap: no perfetto venv: ${python} is missing; the .pftrace check will be skipped" >&2
  else
    echo "bootstrap: building $venv ($key)"
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    log="$venv.log"
    if "$python" -m venv "$venv" >"$log" 2>&1 &&
      "$venv/bin/pip" install "perfetto==$PERFETTO_VERSION" "protobuf==$PROTOBUF_VERSION" >>"$log" 2>&1 &&
      "$venv/bin/python" -c 'from perfetto.protos.perfetto.trace import perfetto_trace_pb2' >>"$log" 2>&1; then
      echo "$key" >"$venv/.overlap-key"
      echo "bootstrap: $venv ready"
    else
      rm -rf "$venv"
      echo "bootstrap: warning: no perfetto venv (PyPI unreachable?); see $log (last lines below)." \
        "The .pftrace check will be skipped, or fail where OVERLAP_REQUIRE_PERFETTO=1 (make test)." >&2
      tail -n 5 "$log" >&2 || true
    fi
  fi
fi

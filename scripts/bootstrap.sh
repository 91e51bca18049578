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
#   - slurm-wlm and munge: the tests start a one-node Slurm of their own (its daemons
#     on free ports, in a temporary directory) to trace programs launched by `srun`.
# Debian/Ubuntu get them through apt-get (with sudo when not root); elsewhere the
# script says what to install. It changes nothing when everything is there.
set -euo pipefail

packages=(mpich libmpich-dev openmpi-bin libopenmpi-dev gfortran libclang-dev tmux slurm-wlm munge python3 bsdutils)

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

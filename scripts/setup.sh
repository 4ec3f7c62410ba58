#!/usr/bin/env bash
# One-time (and idempotent) set-up of everything litpath needs on a Debian/Ubuntu machine:
# Debian packages, the Python environment, the MPI build of ADIOS2, the solver, and the
# jars of the local MongoDB-wire and Neo4j servers. Slow builds are cached outside the
# checkout in $LITPATH_CACHE (default ~/.cache/litpath); a second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
export LITPATH_CACHE="${LITPATH_CACHE:-$HOME/.cache/litpath}"
mkdir -p "$LITPATH_CACHE"

step() { printf '\n==> %s\n' "$*"; }
SECONDS=0

# --- 1. Debian packages ---------------------------------------------------------------
DEB_PACKAGES=(openmpi-bin libopenmpi-dev build-essential cmake ninja-build pkg-config
              libgtest-dev default-jdk-headless maven python3-venv wrk
              slurm-wlm munge)
missing=()
for pkg in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
# A JDK and Maven that are already on PATH (e.g. from another installer) are good enough.
if command -v javac >/dev/null && javac -version 2>&1 | grep -qE 'javac (1[7-9]|2[0-9])'; then
  missing=("${missing[@]/default-jdk-headless}")
fi
command -v mvn >/dev/null && missing=("${missing[@]/maven}")
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if [ ${#missing[@]} -gt 0 ]; then
  step "Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  step "Debian packages: all present"
fi

# --- 2. Python environment ------------------------------------------------------------
PYTHON="${PYTHON:-python3}"
lock_hash=$(sha256sum requirements.lock pyproject.toml | sha256sum | cut -c1-16)
if [ ! -x .venv/bin/python ] || [ "$(cat .venv/.litpath-lock 2>/dev/null)" != "$lock_hash" ]; then
  step "Python environment (.venv) from requirements.lock"
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  # Every package, pip and setuptools included, at the lock's version and one of its hashes
  # (`make lock` regenerates it from pyproject.toml); then litpath itself, built with the
  # setuptools just installed rather than one fetched unhashed into an isolated build.
  .venv/bin/pip install -q --require-hashes -r requirements.lock
  .venv/bin/pip install -q --no-deps --no-build-isolation -e .
  echo "$lock_hash" > .venv/.litpath-lock
else
  step "Python environment: up to date"
fi

# --- 3. ADIOS2 with MPI (cached; ~9 min the first time on 2 cores) ----------------------
step "ADIOS2 MPI build"
scripts/build_adios2_mpi.sh

# --- 4. The solver ----------------------------------------------------------------------
step "apsp-fw solver"
.venv/bin/python -c "from pipeline.solve.apsp_fw import build_solver; build_solver()"

# --- 5. Local servers' jars (MongoDB-wire, Neo4j) -------------------------------------
step "Local server jars"
.venv/bin/python -m services.local.servers build

step "Set-up complete in ${SECONDS}s"

#!/usr/bin/env bash
# Build ADIOS2 with MPI (BP5 only) for the apsp-fw solver, cached and idempotent.
#
#   scripts/build_adios2_mpi.sh            # builds into $LITPATH_CACHE/adios2-mpi-<version>
#   ADIOS2_VERSION=2.12.1 scripts/build_adios2_mpi.sh
#
# The version defaults to the one of the Python `adios2` wheel installed in the
# project venv, so the Python readers and the solver's writer agree on BP5.
# Source comes from the PyPI source distribution (pip download --no-binary), checked
# against the sha256 pinned below (or $ADIOS2_SHA256 for a version not pinned here).
# Prints the install prefix on its last line of stdout; the solver's CMake finds
# it with -DCMAKE_PREFIX_PATH=<prefix> (target adios2::cxx_mpi).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-$here/.venv/bin/python}"
[ -x "$python" ] || python="$(command -v python3)"

if [ -z "${ADIOS2_VERSION:-}" ]; then
    # The wheel's version may carry a packaging suffix (2.12.1.1001); the
    # sdist of that same PyPI release is what we build.
    ADIOS2_VERSION="$("$python" -c 'import importlib.metadata as m; print(m.version("adios2"))' 2>/dev/null || true)"
    ADIOS2_VERSION="${ADIOS2_VERSION:-2.12.1.1001}"
fi
# sha256 of the sdist PyPI publishes for each version built here; the same hash is among
# requirements.lock's for that adios2 (its wheels and sdist).
declare -A SDIST_SHA256=(
    [2.12.1.1001]=f3bf3a6e64b800351a091d4fc70cc8437041c36c81f90f01697b81f168b6adb0
)
short_version="$(echo "$ADIOS2_VERSION" | cut -d. -f1-3)"
cache="${LITPATH_CACHE:-$HOME/.cache/litpath}"
prefix="$cache/adios2-mpi-$short_version"
jobs="${JOBS:-2}"

log() { echo "[build_adios2_mpi] $*" >&2; }

if [ -f "$prefix/lib/cmake/adios2/adios2-config.cmake" ] || \
   [ -f "$prefix/lib64/cmake/adios2/adios2-config.cmake" ]; then
    log "already installed: $prefix"
    echo "$prefix"
    exit 0
fi

for tool in mpicc mpicxx cmake; do
    command -v "$tool" >/dev/null || { log "error: '$tool' not found (apt-get install libopenmpi-dev cmake)"; exit 1; }
done
generator="Unix Makefiles"
command -v ninja >/dev/null && generator="Ninja"

expected_sha256="${ADIOS2_SHA256:-${SDIST_SHA256[$ADIOS2_VERSION]:-}}"
if [ -z "$expected_sha256" ]; then
    log "error: no sha256 is pinned for the adios2==$ADIOS2_VERSION sdist."
    log "       Set ADIOS2_SHA256 to the one PyPI lists for adios2-$ADIOS2_VERSION.tar.gz, or add it to SDIST_SHA256 in $0."
    exit 1
fi

work="$cache/adios2-mpi-src-$short_version"
mkdir -p "$work"
cd "$work"

sdist="$(ls adios2-*.tar.gz 2>/dev/null | head -n1 || true)"
if [ -z "$sdist" ]; then
    log "downloading the adios2==$ADIOS2_VERSION source distribution from PyPI"
    # --no-binary only for adios2 itself: its build backend (scikit-build-core)
    # comes as a wheel, since pip prepares an sdist's metadata before saving it.
    # The hash makes pip refuse a different file before it prepares anything.
    printf 'adios2==%s --hash=sha256:%s\n' "$ADIOS2_VERSION" "$expected_sha256" > "$work/sdist-requirement.txt"
    "$python" -m pip download --quiet --no-binary adios2 --no-deps \
        -r "$work/sdist-requirement.txt" -d "$work" >&2 || {
        log "error: could not download adios2==$ADIOS2_VERSION's sdist with sha256 $expected_sha256 (pip says why above)"
        exit 1
    }
    sdist="$(ls adios2-*.tar.gz | head -n1)"
fi
# Checked again here, so that a file already in the cache is held to the same hash.
actual_sha256="$(sha256sum "$sdist" | cut -d' ' -f1)"
if [ "$actual_sha256" != "$expected_sha256" ]; then
    log "error: $work/$sdist has sha256 $actual_sha256,"
    log "       but the adios2==$ADIOS2_VERSION sdist on PyPI has $expected_sha256."
    log "       Not building from it: delete it to download the sdist again."
    exit 1
fi
log "source: $work/$sdist (sha256 $actual_sha256, as pinned)"

src="$work/src"
if [ ! -f "$src/CMakeLists.txt" ]; then
    rm -rf "$src" && mkdir -p "$src"
    tar -xzf "$sdist" -C "$src" --strip-components=1
fi

log "configuring (MPI on, BP5 only, optional components off) -> $prefix"
cmake -S "$src" -B "$work/build" -G "$generator" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_C_COMPILER=mpicc -DCMAKE_CXX_COMPILER=mpicxx \
    -DBUILD_SHARED_LIBS=ON \
    -DBUILD_TESTING=OFF \
    -DADIOS2_BUILD_EXAMPLES=OFF \
    -DADIOS2_USE_MPI=ON \
    -DADIOS2_USE_Fortran=OFF \
    -DADIOS2_USE_Python=OFF \
    -DADIOS2_USE_HDF5=OFF \
    -DADIOS2_USE_HDF5_VOL=OFF \
    -DADIOS2_USE_SST=OFF \
    -DADIOS2_USE_ZeroMQ=OFF \
    -DADIOS2_USE_DataMan=OFF \
    -DADIOS2_USE_DataSpaces=OFF \
    -DADIOS2_USE_Blosc2=OFF \
    -DADIOS2_USE_BZip2=OFF \
    -DADIOS2_USE_ZFP=OFF \
    -DADIOS2_USE_SZ=OFF \
    -DADIOS2_USE_MGARD=OFF \
    -DADIOS2_USE_PNG=OFF \
    -DADIOS2_USE_LIBPRESSIO=OFF \
    -DADIOS2_USE_Sodium=OFF \
    -DADIOS2_USE_Catalyst=OFF \
    -DADIOS2_USE_Campaign=OFF \
    -DADIOS2_USE_AWSSDK=OFF \
    -DADIOS2_USE_Kokkos=OFF \
    -DADIOS2_USE_CUDA=OFF \
    -DADIOS2_USE_SYCL=OFF \
    -DADIOS2_USE_IME=OFF \
    -DADIOS2_USE_UCX=OFF \
    -DADIOS2_USE_Profiling=OFF \
    -DADIOS2_USE_BP5=ON \
    -DADIOS2_BUILD_TOOLS=ON \
    >&2

log "building with $jobs jobs (about 9 minutes on 2 cores)"
start=$(date +%s)
cmake --build "$work/build" -j "$jobs" >&2
cmake --install "$work/build" >&2
# The build tree is not needed once installed (the sdist stays for a rebuild).
rm -rf "$work/build" "$src"
log "installed in $(( $(date +%s) - start )) s: $prefix"
echo "$prefix"

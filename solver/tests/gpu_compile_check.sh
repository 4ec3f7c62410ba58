#!/usr/bin/env bash
# Compile checks of the apsp-fw GPU backend, without a GPU (CI).
#
#   solver/tests/gpu_compile_check.sh [cuda|hip|all]     (default all)
#
# cuda: nvcc from the PyPI wheels nvidia-cuda-{nvcc,runtime,crt,cccl} 13.x,
#       installed once with pip --target under $LITPATH_CACHE/cuda-wheels;
#       configures and builds apsp-fw and test_gpu_kernels with
#       -DLITPATH_WITH_CUDA=ON for LITPATH_CUDA_ARCHS (default 90).
# hip:  Debian's hipcc (apt package hipcc, ROCm 5.2; installed here only when
#       absent and running as root); builds the same targets with
#       -DLITPATH_WITH_HIP=ON for LITPATH_HIP_ARCHS (default gfx90a).
# Then each built apsp-fw must report the backend as compiled in (on a machine
# without a GPU: "found no GPU device", not "not compiled in").
#
# Exit status: 0 all requested checks passed, 1 a check failed, 77 every
# requested check was skipped (toolchain unavailable; the reason is printed).
# Environment: LITPATH_CACHE (~/.cache/litpath), LITPATH_GPU_CHECK_BUILD
# (build trees; $LITPATH_CACHE/gpu-compile-check/<hash of the checkout path>), LITPATH_JOBS (2),
# PYTHON (python3, for pip), LITPATH_ADIOS2_PREFIX ($LITPATH_CACHE/adios2-mpi-2.12.1;
# without it the check builds with -DLITPATH_WITH_ADIOS2=OFF).
set -uo pipefail

what=${1:-all}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)  # solver/
cache=${LITPATH_CACHE:-$HOME/.cache/litpath}
# One build tree per checkout: CMake refuses a cache made from another source
# directory (a CI clone next to a developer's checkout shares $LITPATH_CACHE).
checkout_key=$(printf '%s' "$here" | sha1sum | cut -c1-12)
build_root=${LITPATH_GPU_CHECK_BUILD:-$cache/gpu-compile-check/$checkout_key}
jobs=${LITPATH_JOBS:-2}
python=${PYTHON:-python3}
adios2=${LITPATH_ADIOS2_PREFIX:-$cache/adios2-mpi-2.12.1}
cuda_archs=${LITPATH_CUDA_ARCHS:-90}
hip_archs=${LITPATH_HIP_ARCHS:-gfx90a}
wheels=$cache/cuda-wheels
cuda_root=$wheels/site/nvidia/cu13

passed=0 failed=0 skipped=0
log() { printf '[gpu-compile-check] %s\n' "$*"; }
elapsed() { echo $(($(date +%s) - $1))s; }

common_cmake_args() {
  local args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DLITPATH_BUILD_TESTS=ON)
  if [[ -f $adios2/lib/cmake/adios2/adios2-config.cmake || -d $adios2/lib/cmake/adios2 || -d $adios2/lib64/cmake/adios2 ]]; then
    args+=(-DCMAKE_PREFIX_PATH="$adios2" -DLITPATH_WITH_ADIOS2=ON)
  else
    args+=(-DLITPATH_WITH_ADIOS2=OFF)
  fi
  printf '%s\n' "${args[@]}"
}

# Builds apsp-fw + test_gpu_kernels in $build_root/$1 with extra cmake args,
# then checks that apsp-fw knows the backend.
build_and_probe() {
  local backend=$1; shift
  local dir=$build_root/$backend t0
  t0=$(date +%s)
  mapfile -t common < <(common_cmake_args)
  if ! cmake -S "$here" -B "$dir" "${common[@]}" "$@" >"$dir.configure.log" 2>&1; then
    tail -30 "$dir.configure.log"; log "$backend: configure FAILED ($(elapsed "$t0")), log $dir.configure.log"
    return 1
  fi
  log "$backend: configured ($(elapsed "$t0"))"
  if ! cmake --build "$dir" -j "$jobs" --target apsp-fw test_gpu_kernels >"$dir.build.log" 2>&1; then
    grep -E -B2 -A6 'error|FAILED' "$dir.build.log" | head -60; log "$backend: build FAILED ($(elapsed "$t0")), log $dir.build.log"
    return 1
  fi
  if grep -E -i 'warning' "$dir.build.log" | grep -v -i 'nvcc warning : Support for offline compilation' | head -20 | grep -q .; then
    log "$backend: warnings:"; grep -E -i 'warning' "$dir.build.log" | head -20
  fi
  # The backend must be compiled in: without a GPU the error names the device.
  local out
  out=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
        "$dir/apsp-fw" --input "$here/tests/data/directed_97.mtx" --grid 1x1 --tile 16 --backend "$backend" 2>&1)
  if grep -q "not compiled in" <<<"$out"; then
    log "$backend: apsp-fw says the backend is not compiled in:"; echo "$out" | tail -3
    return 1
  fi
  log "$backend: apsp-fw --backend $backend -> $(echo "$out" | grep -E 'error|backend' | head -1)"
  log "$backend: OK ($(elapsed "$t0"))"
}

check_cuda() {
  local t0; t0=$(date +%s)
  if [[ ! -x $cuda_root/bin/nvcc ]]; then
    log "cuda: installing the CUDA 13 nvcc wheels into $wheels/site"
    mkdir -p "$wheels"
    if ! "$python" -m pip install --quiet --disable-pip-version-check --target "$wheels/site" \
        "nvidia-cuda-nvcc==13.*" "nvidia-cuda-runtime==13.*" "nvidia-cuda-crt==13.*" "nvidia-cuda-cccl==13.*"; then
      log "cuda: SKIPPED: pip could not install the nvidia-cuda-* wheels (no index access?)"
      return 77
    fi
    log "cuda: wheels installed ($(elapsed "$t0"))"
  fi
  if [[ ! -x $cuda_root/bin/nvcc ]]; then
    log "cuda: FAILED: no nvcc at $cuda_root/bin after installing the wheels (layout changed?)"
    return 1
  fi
  log "cuda: $("$cuda_root/bin/nvcc" --version | tail -2 | head -1)"
  build_and_probe cuda -DLITPATH_WITH_CUDA=ON -DLITPATH_WITH_HIP=OFF -DCMAKE_CUDA_COMPILER="$cuda_root/bin/nvcc" \
    -DLITPATH_CUDA_ARCHS="$cuda_archs"
}

check_hip() {
  local t0; t0=$(date +%s)
  local hipcc
  hipcc=$(command -v hipcc || true)
  if [[ -z $hipcc ]]; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
      log "hip: installing Debian's hipcc (apt-get install --no-install-recommends hipcc)"
      if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends hipcc >"$build_root/apt-hipcc.log" 2>&1; then
        apt-get update -q >/dev/null 2>&1
        if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends hipcc >"$build_root/apt-hipcc.log" 2>&1; then
          tail -5 "$build_root/apt-hipcc.log"; log "hip: SKIPPED: apt-get could not install hipcc"
          return 77
        fi
      fi
      log "hip: hipcc installed ($(elapsed "$t0"))"
      hipcc=$(command -v hipcc)
    else
      log "hip: SKIPPED: no hipcc, and not root with apt-get to install it"
      return 77
    fi
  fi
  build_and_probe hip -DLITPATH_WITH_HIP=ON -DLITPATH_WITH_CUDA=OFF -DLITPATH_HIPCC="$hipcc" \
    -DLITPATH_HIP_ARCHS="$hip_archs"
}

mkdir -p "$build_root"
case $what in
  cuda) checks=(cuda) ;;
  hip) checks=(hip) ;;
  all) checks=(cuda hip) ;;
  *) echo "usage: $0 [cuda|hip|all]" >&2; exit 2 ;;
esac
for c in "${checks[@]}"; do
  "check_$c"
  case $? in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)) ;;
    *) failed=$((failed + 1)) ;;
  esac
done
log "passed $passed, failed $failed, skipped $skipped"
if ((failed > 0)); then exit 1; fi
if ((passed == 0)); then exit 77; fi
exit 0

#!/usr/bin/env bash
# Device test and benchmark of the apsp-fw GPU backend, for a machine with a GPU.
#
#   bench/gpu/run_device.sh                 (from the repository root)
#
# 1. builds apsp-fw + test_gpu_kernels with CUDA (nvidia-smi present) or HIP
#    (rocminfo sees a gfx device), for this device's architecture;
# 2. ctest -L gpu: kernels vs the reference on odd sizes, fresh random inputs,
#    NaN-poisoned padding; apsp-fw --backend cuda|hip on 1 and 4 ranks, --validate;
# 3. add+min instruction peak (bench/gpu/addmin_peak.cu);
# 4. kernel timings (min-plus NN/NT, diagonal FW) at KERNEL_SIZES;
# 5. apsp-fw end to end at APSP_SIZES (random graphs, --validate 16), and the
#    PyTorch Floyd-Warshall peer at the same n (skipped without torch);
# 6. bench/gpu/results.md + results.json (rows also in $OUT_DIR/*.jsonl).
#
# Environment: BACKEND (cuda|hip, detected), ARCH (detected: 90, gfx90a...),
# NVCC (nvcc on PATH, else the wheels under $LITPATH_CACHE/cuda-wheels),
# KERNEL_SIZES (1024,2048,4096,8192,16384), APSP_SIZES ("4096 8192 16384"; the
# largest that fits is bounded by device memory, n^2 x 4 bytes plus panels, and
# by host memory, which still holds one n^2 copy for input, checkpoints and output), TILE (1024), THREADS (8), BUILD_DIR (build-gpu-device),
# OUT_DIR (bench/gpu/out), PYTHON (python3).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
cache=${LITPATH_CACHE:-$HOME/.cache/litpath}
python=${PYTHON:-python3}
build=${BUILD_DIR:-$root/solver/build-gpu-device}
out=${OUT_DIR:-$root/bench/gpu/out}
kernel_sizes=${KERNEL_SIZES:-1024,2048,4096,8192,16384}
apsp_sizes=${APSP_SIZES:-4096 8192 16384}
tile=${TILE:-1024}
threads=${THREADS:-8}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
mkdir -p "$out"
rm -f "$out"/*.jsonl
log() { printf '[run_device] %s\n' "$*"; }

# ---- backend and architecture ----
backend=${BACKEND:-}
if [[ -z $backend ]]; then
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then backend=cuda
  elif command -v rocminfo >/dev/null && rocminfo 2>/dev/null | grep -q 'gfx'; then backend=hip
  else echo "run_device.sh: no NVIDIA or AMD GPU found (set BACKEND=cuda|hip to force)" >&2; exit 1; fi
fi
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DLITPATH_BUILD_TESTS=ON)
if [[ -d $cache/adios2-mpi-2.12.1 ]]; then cmake_args+=(-DCMAKE_PREFIX_PATH="$cache/adios2-mpi-2.12.1")
else cmake_args+=(-DLITPATH_WITH_ADIOS2=OFF); fi
if [[ $backend == cuda ]]; then
  arch=${ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')}
  nvcc=${NVCC:-$(command -v nvcc || echo "$cache/cuda-wheels/site/nvidia/cu13/bin/nvcc")}
  cmake_args+=(-DLITPATH_WITH_CUDA=ON -DLITPATH_CUDA_ARCHS="$arch" -DCMAKE_CUDA_COMPILER="$nvcc")
  peak_build=("$nvcc" -O3 -std=c++17 -arch=sm_"$arch" -I solver bench/gpu/addmin_peak.cu -o "$build/addmin_peak")
else
  arch=${ARCH:-$(rocminfo | grep -o -m1 'gfx[0-9a-f]*')}
  cmake_args+=(-DLITPATH_WITH_HIP=ON -DLITPATH_HIP_ARCHS="$arch")
  peak_build=(hipcc -O3 -std=c++17 --offload-arch="$arch" -x hip -I solver bench/gpu/addmin_peak.cu -o "$build/addmin_peak")
fi
log "backend $backend, arch $arch"

# ---- 1. build ----
cmake -S solver -B "$build" "${cmake_args[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)" --target apsp-fw test_gpu_kernels
"${peak_build[@]}"

# ---- 2. correctness ----
ctest --test-dir "$build" -L gpu --output-on-failure | tee "$out/ctest_gpu.log"

# ---- 3. add+min peak ----
"$build/addmin_peak" | tee "$out/1_peak.jsonl"

# ---- 4. kernels ----
"$build/tests/test_gpu_kernels" --bench "$kernel_sizes" --reps 5 | tee "$out/2_kernels.jsonl"

# ---- 5. end to end, and the PyTorch peer ----
for n in $apsp_sizes; do
  graph=$out/graph_$n.mtx
  [[ -f $graph ]] || "$python" bench/gpu/device_bench.py graph "$n" "$graph"
  for be in "$backend" cpu; do
    summary=$out/summary_${be}_$n.json
    if [[ $be == cpu && $n -gt 8192 ]]; then continue; fi  # the CPU comparison only where it is quick
    mpirun -n 1 "$build/apsp-fw" --input "$graph" --grid 1x1 --tile "$tile" --backend "$be" \
      --threads "$threads" --validate 16 --summary-json "$summary" >/dev/null
    "$python" - "$summary" "$n" "$be" >>"$out/3_apsp.jsonl" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
v = s.get("validate") or {}
print(json.dumps({"what": "apsp-fw", "backend": sys.argv[3], "n": int(sys.argv[2]), "tile": s.get("tile"),
                  "seconds": s["seconds"]["solve"], "rate": s["semiring_rate"], "ok": v.get("ok", True),
                  "phases": s["seconds"]}))
EOF
    tail -1 "$out/3_apsp.jsonl"
  done
  "$python" bench/gpu/device_bench.py torch-fw "$n" | tee -a "$out/4_torch.jsonl"
done

# ---- 6. report ----
"$python" bench/gpu/device_bench.py report "$out"
cp "$out/results.md" "$out/results.json" bench/gpu/
log "wrote bench/gpu/results.md and bench/gpu/results.json"

#!/usr/bin/env bash
# The device run of apsp-fw's GPU backend: one prepared command on a lent GPU machine
# (docs: bench/gpu/README.md).
#
#   bench/gpu/prepare_device_run.sh     here, once: .gpu-carry/ (Open MPI wheel, CUDA build)
#   bench/gpu/run_device.sh             there, from the repository root, carrying .gpu-carry
#   BACKEND=gpu-host bench/gpu/run_device.sh     the rehearsal here (the GPU source on the
#                                       CPU, small sizes: every step, no meaningful numbers)
#
# Steps, each recorded in 0_device.jsonl with its exit status and seconds; a failed step is
# reported and the run goes on, so one call returns everything it could measure:
#  0. the device: nvidia-smi's name, driver, clocks and power (before, sampled every 0.5 s
#     during, after);
#  1. MPI: the carried Open MPI wheel; build: the carried tree if its binaries start here,
#     else configure and build from source with this machine's nvcc (no ADIOS2, no GoogleTest);
#  2. ctest -L gpu: the kernels against the reference kernels on odd sizes and fresh random
#     inputs, the device store against the host store, apsp-fw --backend cuda on 1, 4 and 6
#     ranks with --validate;
#  3. the add+min instruction peak (gpu-addmin-peak);
#  4. the min-plus kernels NN and NT at KERNEL_SIZES (and the diagonal FW up to 2048);
#  5. apsp-fw end to end at n = APSP_N (16,384) for each tile in GPU_TILES and CPU_TILE, with
#     --validate (Dijkstra rows) and --checksum; the CPU backend on the same machine at n/2 and,
#     when its predicted time allows, at n (at one n and tile the checksums must be equal: the
#     backends are bit for bit the same); the PyTorch Floyd-Warshall peer at n;
#  6. the largest n the rest of BUDGET_S allows (device and host memory permitting), with
#     the best tile, validated;
#  7. results.md + results.json (written after step 5 and again at the end).
#
# Environment: BACKEND (cuda | hip | gpu-host; detected), ARCH (detected), BUDGET_S (390: the
# whole run's seconds; step 6 fills what is left), KERNEL_SIZES (1024,...,16384), APSP_N
# (16384), GPU_TILES (512 1024 2048 4096), CPU_TILE (256), LARGE_N (chosen; 0 skips step 6),
# STEPS (which of: test peak kernels ncu apsp cpu torch large; default all), REBUILD (1: ignore
# the carried tree), PYTHON (python3; numpy needed, torch for the peer), OUT (results folder; $OUT on the device machine, else
# bench/gpu/out), CTEST_ARGS (extra arguments for step 2).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
# shellcheck source=bench/gpu/device_env.sh
source "$root/bench/gpu/device_env.sh"
started=$SECONDS
budget=${BUDGET_S:-390}
out=${OUT:-$root/bench/gpu/out}
# Logs outside $OUT, packed into $OUT/logs.tar.gz after steps 5 and 7: what comes back from
# the device machine is at most 8 files (0_device, 1_peak, 2_kernels, 3_apsp, 4_torch .jsonl,
# results.md, results.json, logs.tar.gz), even from a run cut short.
logs=/tmp/litpath-device-logs
rm -rf "$logs" && mkdir -p "$logs" "$out"
rm -f "$out"/*.jsonl "$out"/results.* "$out"/logs.tar.gz
build=$LITPATH_GPU_BUILD
threads=$(nproc)
kernel_sizes=${KERNEL_SIZES:-1024,2048,4096,8192,16384}
apsp_n=${APSP_N:-16384}
gpu_tiles=${GPU_TILES:-512 1024 2048 4096}
cpu_tile=${CPU_TILE:-256}
bench_py=("${PYTHON:-python3}" "$root/bench/gpu/device_bench.py")  # with numpy (and torch for the peer)
steps=" ${STEPS:-test peak kernels ncu apsp cpu torch large} "
want() { [[ $steps == *" $1 "* ]]; }  # want STEP: whether STEPS names it

log() { printf '[run_device %4ds] %s\n' $((SECONDS - started)) "$*"; }
left() { echo $((budget - (SECONDS - started))); }

# step NAME TIMEOUT_S COMMAND...: runs COMMAND with its output in logs/NAME.log, records
# {"step", "rc", "seconds"} in 0_device.jsonl, prints the log's tail when it fails.
step() {
  local name=$1 limit=$2 t0=$SECONDS rc
  shift 2
  log "$name (at most ${limit}s)"
  if declare -F "$1" >/dev/null; then  # a function of this script: timeout runs programs only
    timeout --kill-after=10 "$limit" bash -c "source '$root/bench/gpu/device_env.sh'; $(declare -f "$1"); \"\$@\"" \
      step "$@" >"$logs/$name.log" 2>&1
  else
    timeout --kill-after=10 "$limit" "$@" >"$logs/$name.log" 2>&1
  fi
  rc=$?
  printf '{"step": "%s", "rc": %d, "seconds": %d}\n' "$name" "$rc" $((SECONDS - t0)) >>"$out/0_device.jsonl"
  if ((rc != 0)); then
    log "$name FAILED (exit $rc$( ((rc == 124)) && echo ', timed out')); its log ends:"
    tail -25 "$logs/$name.log" | sed 's/^/    /'
  fi
  return $rc
}

# ---- 0. the device ----
backend=${BACKEND:-}
if [[ -z $backend ]]; then
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then backend=cuda
  elif command -v rocminfo >/dev/null && rocminfo 2>/dev/null | grep -q gfx; then backend=hip
  else log "no NVIDIA or AMD GPU found (BACKEND=gpu-host rehearses on the CPU)"; exit 1; fi
fi
smi_fields=name,driver_version,pci.bus_id,memory.total,memory.used,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw,power.limit,pstate
smi() {  # smi LABEL: one JSON row of the device's state
  [[ $backend == cuda ]] || return 0
  nvidia-smi --query-gpu=$smi_fields --format=csv,noheader,nounits 2>/dev/null | head -1 |
    python3 -c "import json,sys; v=[x.strip() for x in sys.stdin.read().split(',')]; k='$smi_fields'.split(',');
print(json.dumps({'device_state': '$1', **dict(zip(k, v))}))" >>"$out/0_device.jsonl"
}
sampler_pid=
if [[ $backend == cuda ]]; then
  nvidia-smi -q >"$logs/nvidia-smi-q.log" 2>&1
  smi before
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
    --format=csv,noheader,nounits -lms 500 >"$logs/clock_samples.csv" 2>/dev/null &
  sampler_pid=$!
  arch=${ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')}
elif [[ $backend == hip ]]; then
  arch=${ARCH:-$(rocminfo | grep -o -m1 'gfx[0-9a-f]*')}
else
  arch=host
fi
{ uname -a; lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Socket'; grep -E 'MemTotal|MemAvailable' /proc/meminfo
  command -v nvcc >/dev/null && nvcc --version | tail -2; } >"$logs/machine.log" 2>&1
cpu_model=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
host_mem=$(awk '/MemTotal/ {printf "%.0f", $2 * 1024}' /proc/meminfo)  # %d is 32-bit in mawk
printf '{"machine": {"backend": "%s", "arch": "%s", "cpu": "%s", "cores": %d, "host_memory": %s}}\n' \
  "$backend" "$arch" "$cpu_model" "$threads" "$host_mem" >>"$out/0_device.jsonl"
log "backend $backend, arch $arch, $threads cores ($cpu_model), budget ${budget}s"

# ---- 1. MPI and the build ----
use_carried_mpi "$root" || exit 1
log "MPI: $(mpirun --version 2>&1 | head -1)"
prebuilt=$root/.gpu-carry/build-$backend.tar.gz
# The carried binaries must start and reach the device (a runtime built here by a newer nvcc
# than this machine's driver could refuse it): one tiny launch.
binaries_start() {
  "$build/apsp-fw" --version >/dev/null 2>&1 && "$build/bench/gpu-addmin-peak" --quick >/dev/null 2>&1 &&
    { "$build/tests/test_gpu_kernels" --no-such-flag 2>&1 || true; } | grep -q usage
}
built=
if [[ -f $prebuilt && -z ${REBUILD:-} ]]; then
  rm -rf "$build" && mkdir -p "$build" && tar -C "$build" -xzf "$prebuilt" && ln -sfn "$root" "$LITPATH_GPU_SRC"
  if binaries_start; then built=carried; log "build: the carried tree ($prebuilt)"
  else log "build: the carried binaries do not start here; building from source"; fi
fi
if [[ -z $built ]]; then
  args=()
  case $backend in
    cuda) nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
          args=(-DLITPATH_WITH_CUDA=ON -DLITPATH_CUDA_ARCHS="$arch" -DCMAKE_CUDA_COMPILER="$nvcc") ;;
    hip) args=(-DLITPATH_WITH_HIP=ON -DLITPATH_HIP_ARCHS="$arch") ;;
    gpu-host) args=(-DLITPATH_WITH_CUDA=OFF -DLITPATH_WITH_HIP=OFF) ;;
  esac
  rm -rf "$build"
  step build 420 configure_and_build "$root" "$backend" "${args[@]}" || { log "no build, nothing to run"; exit 1; }
  built=source
fi
if [[ $backend == hip && ! -x $build/bench/gpu-addmin-peak ]]; then
  mkdir -p "$build/bench"
  hipcc -O3 -std=c++17 --offload-arch="$arch" -x hip -I solver solver/bench/gpu_addmin_peak.cu \
    -o "$build/bench/gpu-addmin-peak"
fi
printf '{"build": "%s"}\n' "$built" >>"$out/0_device.jsonl"

# ---- 2. correctness on the device ----
if want test; then
  label=gpu
  [[ $backend == gpu-host ]] && label=host-target
  # shellcheck disable=SC2086
  step ctest_gpu 240 ctest --test-dir "$build" -L "$label" --output-on-failure --timeout 200 ${CTEST_ARGS:-}
  grep -E 'tests passed|tests failed|^seed|Failed|\*\*\*' "$logs/ctest_gpu.log" | head -12
  ctest_line=$(grep -E 'tests passed|No tests were found' "$logs/ctest_gpu.log" | tail -1)
  printf '{"ctest": "%s"}\n' "${ctest_line:-no summary (see logs/ctest_gpu.log)}" >>"$out/0_device.jsonl"
fi

# ---- 3. the add+min peak ----
peak_args=()
[[ $backend == gpu-host ]] && peak_args=(--quick)
want peak && step addmin_peak 60 "$build/bench/gpu-addmin-peak" "${peak_args[@]}" &&
  cp "$logs/addmin_peak.log" "$out/1_peak.jsonl"

# ---- 4. the kernels ----
want kernels && step kernels 180 "$build/tests/test_gpu_kernels" --bench "$kernel_sizes" --reps 5 &&
  grep '^{' "$logs/kernels.log" >"$out/2_kernels.jsonl"
# Hardware counters (Nsight Compute, where the machine has it and lets it read them): how
# many of the schedulers' issue slots the min-plus kernel and the peak loop fill, and which
# pipes they keep busy. Clocks left alone (--clock-control none).
ncu_metrics=sm__inst_executed.avg.per_cycle_active,sm__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
if want ncu && [[ $backend == cuda && -n $ncu ]]; then
  step ncu_minplus 120 "$ncu" --clock-control none --csv --metrics "$ncu_metrics" -k regex:minplus_tiled \
    --launch-skip 1 --launch-count 2 "$build/tests/test_gpu_kernels" --bench 8192 --reps 1 &&
    "${bench_py[@]}" ncu-rows "$logs/ncu_minplus.log" >>"$out/2_kernels.jsonl"
  step ncu_peak 60 "$ncu" --clock-control none --csv --metrics "$ncu_metrics" -k regex:addmin_loop \
    --launch-skip 1 --launch-count 1 "$build/bench/gpu-addmin-peak" --reps 1 &&
    "${bench_py[@]}" ncu-rows "$logs/ncu_peak.log" >>"$out/2_kernels.jsonl"
fi

# ---- 5. apsp-fw end to end at n, and the peers ----
graph() {  # graph N: the random graph of n vertices (degree 8, seed 1), made once
  local g=/tmp/litpath-device-graphs/graph_$1.mtx
  mkdir -p /tmp/litpath-device-graphs
  [[ -f $g ]] || "${bench_py[@]}" graph "$1" "$g" >/dev/null
  echo "$g"
}
# apsp NAME BACKEND N TILE LIMIT [extra apsp-fw args]: one single-rank solve, validated,
# with the checksum; its row in 3_apsp.jsonl (also when the validation failed: exit 3).
# One rank unbound (Open MPI would bind it to one core) with a thread per core.
apsp() {
  local name=$1 be=$2 n=$3 tile=$4 limit=$5 g summary
  shift 5
  g=$(graph "$n") || return 1
  summary=$logs/$name.json
  rm -f "$summary"
  step "$name" "$limit" mpirun -n 1 --bind-to none "$build/apsp-fw" --input "$g" --grid 1x1 --tile "$tile" \
    --backend "$be" --threads "$threads" --validate 16 --checksum --progress --summary-json "$summary" "$@"
  [[ -f $summary ]] || return 1
  "${bench_py[@]}" apsp-row "$summary" "$name" >>"$out/3_apsp.jsonl"
  tail -1 "$out/3_apsp.jsonl"
}
# The GPU at every tile of GPU_TILES and at the CPU's tile: the blocked algorithm's additions
# depend on the tile (not on the backend, grid or rank count), so the checksums of a GPU and
# a CPU solve must be equal at one n and one tile.
half=$((apsp_n / 2))
if want apsp; then
  for tile in $gpu_tiles $cpu_tile; do
    ((tile <= apsp_n)) && apsp "apsp_${backend}_${apsp_n}_t$tile" "$backend" "$apsp_n" "$tile" 120
  done
  apsp "apsp_${backend}_${half}_t$cpu_tile" "$backend" "$half" "$cpu_tile" 60
fi
if want cpu; then
  apsp "apsp_cpu_${half}" cpu "$half" "$cpu_tile" 120
  cpu_full_s=$("${bench_py[@]}" predict "$out/3_apsp.jsonl" cpu "$half" "$apsp_n")
  if [[ -n $cpu_full_s ]] && (( ${cpu_full_s%.*} < 150 && ${cpu_full_s%.*} * 3 < $(left) )); then
    apsp "apsp_cpu_${apsp_n}" cpu "$apsp_n" "$cpu_tile" $(( ${cpu_full_s%.*} * 3 + 30 ))
  else
    log "apsp-fw cpu at n = $apsp_n skipped: predicted ${cpu_full_s:-?}s, $(left)s left (the ratio is taken at n = $half)"
  fi
fi
if want torch && [[ $backend != gpu-host ]]; then
  step torch_fw 90 "${bench_py[@]}" torch-fw "$apsp_n" && grep '^{' "$logs/torch_fw.log" >"$out/4_torch.jsonl"
fi
smi after-5
pack_logs() { tar -C "$(dirname "$logs")" -czf "$out/logs.tar.gz" "$(basename "$logs")"; }
"${bench_py[@]}" report "$out" >/dev/null 2>&1 || log "report after step 5 failed (see the last report)"
pack_logs

# ---- 6. the largest n that fits what is left ----
best_tile=$("${bench_py[@]}" best-tile "$out/3_apsp.jsonl" "$backend" "$apsp_n")
device_free=0
if [[ $backend == cuda ]]; then
  device_free=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1)
  device_free=$((device_free * 1024 * 1024))
fi
want large || LARGE_N=0
large_n=${LARGE_N:-$("${bench_py[@]}" pick-n "$out/3_apsp.jsonl" "$backend" "$apsp_n" "$best_tile" \
  "$(( $(left) - 25 ))" "$device_free" "$host_mem")}
if [[ -n $large_n && $large_n -gt $apsp_n ]]; then
  log "largest n: $large_n (tile $best_tile; $(left)s left)"
  apsp "apsp_${backend}_large_${large_n}" "$backend" "$large_n" "$best_tile" $(( $(left) - 5 )) \
    --memory-limit "$host_mem"
else
  log "largest n: none beyond $apsp_n fits the $(left)s left"
fi

# ---- 7. report ----
smi after
[[ -n $sampler_pid ]] && kill "$sampler_pid" 2>/dev/null
"${bench_py[@]}" clocks "$logs/clock_samples.csv" >>"$out/0_device.jsonl" 2>/dev/null
"${bench_py[@]}" report "$out" | tail -40
pack_logs
log "done in $((SECONDS - started))s: $out/results.md, results.json, logs.tar.gz"

"""bench/gpu/run_device.sh, the device run of the GPU backend, rehearsed on the host execution target.

The script runs on a lent GPU machine that has no MPI and no network, in one call whose files
come back only if there are at most 8 of them; what failed there once must fail here first.
The rehearsal prepares the carried files as for the device (the Open MPI wheel, a prebuilt
tree with its CTest files at the shared absolute paths), then runs every step with the GPU
source on the CPU (`BACKEND=gpu-host`) at small sizes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GPU_BENCH = ROOT / "bench" / "gpu"

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


def load_device_bench():
    spec = importlib.util.spec_from_file_location("device_bench", GPU_BENCH / "device_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rehearsal_on_the_host_target_runs_every_step(tmp_path):
    env = {**os.environ, "BACKEND": "gpu-host", "PYTHON": sys.executable}
    prepare = subprocess.run(
        ["bash", GPU_BENCH / "prepare_device_run.sh"], env=env, capture_output=True, text=True, timeout=900
    )
    assert prepare.returncode == 0, prepare.stdout[-3000:] + prepare.stderr[-3000:]
    assert (ROOT / ".gpu-carry" / "build-gpu-host.tar.gz").is_file()

    out = tmp_path / "out"
    sizes = {"KERNEL_SIZES": "128,200", "APSP_N": "256", "GPU_TILES": "64 128", "CPU_TILE": "32"}
    env.update(sizes, OUT=str(out), BUDGET_S="45", CTEST_ARGS="-R mpi_1x1_gpu")
    run = subprocess.run(
        ["bash", GPU_BENCH / "run_device.sh"], env=env, capture_output=True, text=True, timeout=300
    )
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-5000:]
    assert "build: the carried tree" in log  # the prebuilt binaries started, as they must there

    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8 and all(p.is_file() for p in out.iterdir()), files  # the device tool's limit
    assert {"results.md", "results.json", "logs.tar.gz"} <= set(files)
    rows = json.loads((out / "results.json").read_text())
    steps = [r for r in rows if "step" in r]
    assert steps and all(r["rc"] == 0 for r in steps), steps
    assert any(r.get("ctest", "").startswith("100% tests passed") for r in rows)
    assert any("addmin_peak_rate" in r for r in rows) and any(r.get("kernel") == "minplus_nt" for r in rows)

    apsp = [r for r in rows if r.get("what") == "apsp-fw"]
    assert apsp and all(r["ok"] and r["validated_rows"] == 16 for r in apsp)
    checksum = {(r["backend"], r["n"], r["tile"]): r["checksum"] for r in apsp}
    # The GPU source and the CPU backend agree bit for bit at one n and tile.
    assert checksum["gpu-host", 128, 32] == checksum["cpu", 128, 32]
    assert checksum["gpu-host", 256, 32] == checksum["cpu", 256, 32]
    assert any(r["n"] > 256 for r in apsp), "step 6 chose no larger n"
    report = (out / "results.md").read_text()
    assert "(= CPU)" in report and "differs" not in report and "**failed**" not in report


def test_pick_n_stays_within_time_and_memory():
    bench = load_device_bench()
    row = {
        "what": "apsp-fw",
        "backend": "cuda",
        "n": 16384,
        "tile": 1024,
        "ok": True,
        "seconds": 0.4,
        "total_seconds": 2.4,
        "rate": 2.2e13,
    }

    def pick(tmp: Path, seconds: float, device_free: int, host_mem: int) -> int:
        rows = tmp / "rows.jsonl"
        rows.write_text(json.dumps(row) + "\n")
        picked = bench.pick_n(rows, "cuda", 16384, 1024, seconds, device_free, host_mem)
        return int(picked) if picked else 0

    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        gib = 2**30
        roomy = pick(tmp, 300, 140 * gib, 128 * gib)
        assert roomy % 1024 == 0 and roomy > 16384
        scale = roomy / 16384
        assert 1.2 * (0.4 * scale**3 + 2.0 * scale**2) + 5 <= 300  # the model's own bound
        assert 4 * roomy**2 <= 0.85 * 140 * gib
        # Less device memory, less host memory, less time: each can only lower the choice.
        assert (
            pick(tmp, 300, 20 * gib, 128 * gib) < roomy
            and 4 * pick(tmp, 300, 20 * gib, 128 * gib) ** 2 <= 17 * gib
        )
        assert pick(tmp, 300, 140 * gib, 16 * gib) < roomy
        assert pick(tmp, 30, 140 * gib, 128 * gib) < roomy
        assert pick(tmp, 3, 140 * gib, 128 * gib) == 0  # nothing beyond n fits


NCU_CSV = """==PROF== Connected to process 4242 (/tmp/litpath-gpu-build/tests/test_gpu_kernels)
{"kernel": "minplus_nn", "n": 8192, "seconds": 0.05, "rate": 2.2e13}
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","test_gpu_kernels","127.0.0.1","void litpath::apsp::gpu::(anonymous namespace)::minplus_tiled<false>(int, int, int, const float *, int, const float *, int, float *, int, bool, bool, bool)","1","13","(256, 1, 1)","(64, 64, 1)","0","9.0","Command line profiler metrics","sm__inst_executed.avg.per_cycle_active","inst/cycle","3.41"
"0","4242","test_gpu_kernels","127.0.0.1","void litpath::apsp::gpu::(anonymous namespace)::minplus_tiled<false>(int, int, int, const float *, int, const float *, int, float *, int, bool, bool, bool)","1","13","(256, 1, 1)","(64, 64, 1)","0","9.0","Command line profiler metrics","sm__warps_active.avg.pct_of_peak_sustained_active","%","1,234.5"
"1","4242","test_gpu_kernels","127.0.0.1","void addmin_loop<32>(float *, float, float, int)","1","13","(512, 1, 1)","(1056, 1, 1)","0","9.0","Command line profiler metrics","sm__issue_active.avg.pct_of_peak_sustained_active","%","97.2"
==PROF== Disconnected from process 4242
"""


def test_ncu_rows_name_each_launch_and_its_metrics(tmp_path):
    log = tmp_path / "ncu.log"
    log.write_text(NCU_CSV)
    rows = load_device_bench().ncu_rows(log)
    assert rows == [
        {
            "ncu": "minplus_tiled<false>",
            "launch": 0,
            "sm__inst_executed.avg.per_cycle_active": 3.41,
            "sm__warps_active.avg.pct_of_peak_sustained_active": 1234.5,
        },
        {"ncu": "addmin_loop<32>", "launch": 1, "sm__issue_active.avg.pct_of_peak_sustained_active": 97.2},
    ]
    (tmp_path / "none.log").write_text("==PROF== ERROR: profiling is not supported on this device\n")
    assert load_device_bench().ncu_rows(tmp_path / "none.log") == []

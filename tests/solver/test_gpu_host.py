"""apsp-fw on the host execution target of the GPU source (``--backend gpu-host``).

The CUDA/HIP kernels and the device-resident matrix store (solver/kernels/cuda_hip) run on
the CPU through solver/kernels/cuda_hip/host_runtime.hpp: real MPI ranks, staged and
GPU-aware broadcasts, look-ahead on and off, warp sizes 32 and 64. Each result is checked
against scipy and bit for bit against ``--backend cpu`` on the same grid and tile (min-plus
is exact, so the two backends must agree to the last bit).
"""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest
from support.random_graphs import assert_distances_equal, random_graph, read_distances

pytestmark = pytest.mark.mpi

# Graphs of 1 to 3 strongly connected blocks (plus isolated vertices): one block makes every
# tile's paths finite, so an operand taken from the wrong tile shows; several test +inf.
CONFIGS = [
    # ranks, grid, tile, broadcast, look-ahead, GPU-aware MPI, warp size, n (never a multiple of tile), blocks
    (1, "1x1", 16, "ring", "on", "off", 32, 61, 1),
    (1, "1x1", 136, "ring", "off", "on", 64, 300, 2),  # 2 x 2 kernel blocks per tile; FW one launch per k
    (2, "1x2", 13, "bcast", "on", "on", 64, 90, 1),
    (2, "2x1", 20, "two-ring", "off", "off", 32, 77, 3),  # b % 4 == 0: the float4 path
    (4, "2x2", 12, "chunked-ring", "on", "off", 64, 101, 2),
    (4, "2x2", 9, "ring", "off", "on", 32, 64, 3),
    (4, "2x2", 8, "two-ring", "on", "on", 32, 83, 1),
]


def solve(run_apsp, tmp_path, ranks: int, name: str, *args) -> tuple[np.ndarray, dict]:
    out, summary = tmp_path / f"{name}.bp", tmp_path / f"{name}.json"
    run = run_apsp(ranks, *args, "--output", out, "--summary-json", summary, "--threads", "1")
    if "backend 'gpu-host' not compiled in" in run.stderr:
        pytest.skip("this apsp-fw is a CUDA or HIP build (no gpu-host target)")
    assert run.returncode == 0, run.stderr
    return read_distances(out)[0], json.loads(summary.read_text())


@pytest.mark.parametrize("ranks,grid,tile,broadcast,lookahead,aware,warp,n,blocks", CONFIGS)
def test_gpu_host_matches_scipy_and_cpu_bit_for_bit(
    tmp_path, run_apsp, monkeypatch, ranks, grid, tile, broadcast, lookahead, aware, warp, n, blocks
):
    assert n % tile != 0
    monkeypatch.setenv("LITPATH_GPU_HOST_WARP_SIZE", str(warp))
    seed = zlib.crc32(f"gpu-host{ranks}{grid}{tile}{broadcast}".encode())
    graph = random_graph(n, seed=seed, components=blocks)
    source = graph.write_mtx(tmp_path / "g.mtx")
    common = ["--input", source, "--grid", grid, "--tile", tile, "--broadcast", broadcast, "--chunk", "256"]
    common += ["--lookahead", lookahead]
    got, summary = solve(
        run_apsp, tmp_path, ranks, "gpu", *common, "--backend", "gpu-host", "--gpu-aware-mpi", aware
    )
    cpu, _ = solve(run_apsp, tmp_path, ranks, "cpu", *common, "--backend", "cpu")

    assert summary["backend"] == "gpu-host" and summary["isa"] == f"host-warp{warp}"
    assert summary["matrix_residency"] == "device"
    assert summary["gpu_aware_mpi"] is (aware == "on")
    assert summary["lookahead"] is (lookahead == "on") and summary["grid"] == grid
    assert_distances_equal(got, graph.reference())
    assert np.array_equal(got.view(np.uint32), cpu.view(np.uint32)), "gpu-host and cpu differ in some bits"


def test_gpu_host_checkpoint_and_resume(tmp_path, run_apsp):
    """The device store downloads its tiles for each checkpoint and uploads them on --resume."""
    graph = random_graph(70, seed=17, components=1)
    source = graph.write_mtx(tmp_path / "g.mtx")
    common = ["--input", source, "--grid", "2x1", "--tile", "12", "--checkpoint-dir", tmp_path / "ckpt"]
    first, _ = solve(
        run_apsp, tmp_path, 2, "first", *common, "--backend", "gpu-host", "--checkpoint-every", "1"
    )
    resumed, summary = solve(run_apsp, tmp_path, 2, "resumed", *common, "--backend", "gpu-host", "--resume")
    assert summary["checkpoint"]["resumed_from"] >= 1
    cpu, _ = solve(run_apsp, tmp_path, 2, "cpu", "--input", source, "--grid", "2x1", "--tile", "12")
    for result in (first, resumed):
        assert np.array_equal(result.view(np.uint32), cpu.view(np.uint32))
    assert_distances_equal(resumed, graph.reference())

"""Compile checks of the apsp-fw GPU backend without a GPU (solver/tests/gpu_compile_check.sh).

CUDA: nvcc from the PyPI nvidia-cuda-* 13.x wheels builds apsp-fw with -DLITPATH_WITH_CUDA=ON (sm_90).
HIP: Debian's hipcc builds it with -DLITPATH_WITH_HIP=ON (gfx90a). Each built apsp-fw must know its
backend. Cold: pip wheels ~30 s, apt hipcc ~1-2 min; warm (cached wheels, build trees under
$LITPATH_CACHE/gpu-compile-check/<checkout>): seconds when nothing changed, ~1 min per backend otherwise.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "solver" / "tests" / "gpu_compile_check.sh"

pytestmark = [pytest.mark.gpu_compile, pytest.mark.slow]


@pytest.mark.parametrize("backend", ["cuda", "hip"])
def test_gpu_backend_compiles(backend: str) -> None:
    proc = subprocess.run(["bash", str(SCRIPT), backend], capture_output=True, text=True, timeout=900)
    output = proc.stdout + proc.stderr
    if proc.returncode == 77:
        pytest.skip(f"{backend} toolchain unavailable:\n{output[-2000:]}")
    assert proc.returncode == 0, output[-6000:]
    assert f"{backend}: OK" in output

import pytest

from pipeline.solve.plan.hypermod import Hyperbola
from pipeline.solve.plan.machine import BroadcastFit, ComputeModel, Machine


@pytest.fixture
def toy_machine() -> Machine:
    """Round numbers for hand-checked predictions: 100 Gop/s kernel (no tile or memory
    effect when d ~ 0), 10 Gop/s diagonal, broadcasts at 1 GB/s with 1 us latency."""
    flat = Hyperbola(1e11, 1e-9)
    compute = {
        1: ComputeModel(1, flat, {}, Hyperbola(1e10, 1e-9)),
        2: ComputeModel(2, Hyperbola(2e11, 1e-9), {}, Hyperbola(1e10, 1e-9)),
    }
    bw = Hyperbola(1e9, 1e3)  # time = (bytes + 1000) / 1e9
    broadcasts = {v: [BroadcastFit(2, 1, bw)] for v in ("bcast", "ring", "two-ring", "chunked-ring")}
    return Machine(
        name="toy",
        description={"cpu_model": "toy"},
        cores_per_node=2,
        memory_per_node_bytes=16 << 30,
        ranks_per_node=None,
        compute={"cpu": compute},
        broadcasts=broadcasts,
    )

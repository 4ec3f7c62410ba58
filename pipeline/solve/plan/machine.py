"""Machine descriptions: fitted HyPerMod parameters + what the machine is (config/machines/*.yaml).

A machine file holds, per backend and threads-per-rank count, the fitted compute models,
and per broadcast variant the fitted effective-bandwidth models, next to a description of
the machine they were measured on (CPU model, cores, memory, MPI, date). ``calibrate``
writes one (pipeline/solve/plan/calibrate.py); the model and the planner only read it.

Compute, for one rank running ``threads`` OpenMP threads (seconds per semiring op):

    tau(b, m) = 1 / tile_rate(b) + memory_penalty(m)

* ``tile_rate``: y = a*b/(b+d), min-plus outer-product rate vs tile edge b with the local
  matrix in cache (the papers' "K -> SSRGEMM performance");
* ``memory_penalty``: per measured tile edge b, y = a*m/(m+d), extra seconds per op vs
  local matrix bytes m (the papers' "local matrix size" component; on a CPU the rate
  falls once the local tiles leave the cache, so the hyperbola is fitted to the added time
  per op, which rises and saturates at the memory-resident cost; smaller tiles pay more);
* ``diagonal_rate``: y = a*b/(b+d), Floyd-Warshall closure of one b x b tile (one thread).

Broadcast, for each variant, comm size p and number of concurrent groups g measured:
effective bandwidth y = a*s/(s+d) vs message bytes s, so time = (s + d) / a. Sizes and
comm sizes not measured are scaled from the nearest measured comm size by the variant's
hop count (see :func:`hops`).
"""

from __future__ import annotations

import math
import os
import platform
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from pipeline.config import REPO_ROOT, default_of, read_yaml
from pipeline.runtime.errors import LitpathError
from pipeline.runtime.files import write_atomically
from pipeline.runtime.process import CommandFailed, run_command
from pipeline.solve.plan.hypermod import Hyperbola

REPO = REPO_ROOT  # the checkout: the solver's sources and build, the shipped files
MACHINES_DIR = REPO / "config" / "machines"
DEFAULT_MACHINE_NAME = "dev-vm-2core"
BROADCAST_VARIANTS = ("bcast", "ring", "two-ring", "chunked-ring")
DEFAULT_CHUNK_BYTES: int = default_of("solver.chunk_bytes")


class MachineError(LitpathError, ValueError):
    """A machine file is missing or malformed; the message names the file and field."""


@dataclass(frozen=True)
class ComputeModel:
    threads: int
    tile_rate: Hyperbola
    memory_penalty: dict[int, Hyperbola]  # per measured tile edge b
    diagonal_rate: Hyperbola

    def penalty(self, tile: int, local_bytes: float) -> float:
        """Extra seconds per op for this local size; between measured tile edges the
        penalty is interpolated linearly in log b, outside them the nearest is used."""
        if not self.memory_penalty:
            return 0.0
        edges = sorted(self.memory_penalty)
        if tile <= edges[0]:
            return float(self.memory_penalty[edges[0]](local_bytes))
        if tile >= edges[-1]:
            return float(self.memory_penalty[edges[-1]](local_bytes))
        upper = next(e for e in edges if e >= tile)
        lower = max(e for e in edges if e <= tile)
        if upper == lower:
            return float(self.memory_penalty[lower](local_bytes))
        w = (math.log(tile) - math.log(lower)) / (math.log(upper) - math.log(lower))
        return (1 - w) * float(self.memory_penalty[lower](local_bytes)) + w * float(
            self.memory_penalty[upper](local_bytes)
        )

    def seconds_per_op(self, tile: int, local_bytes: float) -> float:
        return 1.0 / float(self.tile_rate(tile)) + self.penalty(tile, local_bytes)


@dataclass(frozen=True)
class BroadcastFit:
    comm_size: int
    groups: int
    bandwidth: Hyperbola  # effective bytes/s vs message bytes

    def seconds(self, nbytes: float) -> float:
        return (nbytes + self.bandwidth.d) / self.bandwidth.a


def hops(variant: str, p: int, nbytes: float = 0.0, chunk_bytes: float = DEFAULT_CHUNK_BYTES) -> float:
    """Point-to-point message times on the critical path of one broadcast over p ranks.

    bcast: the library's binomial tree, ceil(log2 p); ring: p - 1 store-and-forward
    hops; two-ring: the root's three sends then the longer of the two rings
    (ceil((p-2)/2) hops); chunked-ring: the whole message once plus (p-2) chunk hops of
    the pipeline tail, in units of whole-message hops.
    """
    if p <= 1:
        return 0.0
    if variant == "bcast":
        return float(math.ceil(math.log2(p)))
    if variant == "ring":
        return float(p - 1)
    if variant == "two-ring":
        return 1.0 if p == 2 else 2.0 + math.ceil((p - 2) / 2)
    if variant == "chunked-ring":
        if nbytes <= 0:
            return float(p - 1)
        return 1.0 + (p - 2) * min(1.0, chunk_bytes / nbytes)
    raise MachineError(f"unknown broadcast variant {variant!r}")


@dataclass
class Machine:
    name: str
    description: dict[str, Any]
    cores_per_node: int
    memory_per_node_bytes: int
    ranks_per_node: int | None  # None: every rank on one node (this machine)
    compute: dict[str, dict[int, ComputeModel]]  # backend -> threads -> model
    broadcasts: dict[str, list[BroadcastFit]]  # variant -> fits
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    source: str = ""
    observations: dict[str, Any] = field(default_factory=dict)
    # Dijkstra cost model of the rows and on-demand methods (pipeline.solve.plan.methods.SsspModel)
    sssp: dict[str, Any] = field(default_factory=dict)
    # Whole-solve correction: measured / composed time of real apsp-fw runs at calibration
    # (what the components miss: rank imbalance, waiting in broadcasts, ranks sharing cores).
    solver_correction: dict[str, Any] = field(default_factory=dict)

    @property
    def solve_time_factor(self) -> float:
        return float(self.solver_correction.get("factor", 1.0) or 1.0)

    # ---------------------------------------------------------------- compute
    def backends(self) -> list[str]:
        return sorted(self.compute)

    def threads_per_rank(self, ranks: int) -> int:
        on_node = min(ranks, self.ranks_per_node or ranks)
        return max(1, self.cores_per_node // max(1, on_node))

    def ranks_on_node(self, ranks: int) -> int:
        return min(ranks, self.ranks_per_node or ranks)

    def compute_model(self, backend: str, threads: int) -> tuple[ComputeModel, float]:
        """The fitted model nearest to ``threads`` and the factor its times scale by."""
        if backend not in self.compute:
            raise MachineError(f"{self.source or self.name}: no compute model for backend {backend!r}")
        models = self.compute[backend]
        usable = [t for t in models if t <= threads] or [min(models)]
        nearest = max(usable)
        return models[nearest], nearest / threads

    # -------------------------------------------------------------- broadcast
    def broadcast_seconds(
        self, variant: str, nbytes: float, comm_size: int, groups: int = 1, chunk_bytes: int | None = None
    ) -> float:
        """Predicted seconds of one broadcast of ``nbytes`` over ``comm_size`` ranks."""
        if comm_size <= 1 or nbytes <= 0:
            return 0.0
        fits = self.broadcasts.get(variant)
        if not fits:
            raise MachineError(f"{self.source or self.name}: no broadcast model for {variant!r}")
        chunk = chunk_bytes or self.chunk_bytes
        exact = [f for f in fits if f.comm_size == comm_size]
        if exact:
            fit = min(exact, key=lambda f: abs(f.groups - groups))
            return fit.seconds(nbytes)
        fit = min(fits, key=lambda f: (abs(f.comm_size - comm_size), -f.comm_size, abs(f.groups - groups)))
        scale = hops(variant, comm_size, nbytes, chunk) / hops(variant, fit.comm_size, nbytes, chunk)
        return fit.seconds(nbytes) * scale

    # ------------------------------------------------------------------- I/O
    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "cores_per_node": self.cores_per_node,
            "memory_per_node_bytes": self.memory_per_node_bytes,
            "ranks_per_node": self.ranks_per_node,
            "chunk_bytes": self.chunk_bytes,
            "compute": {
                backend: {
                    int(t): {
                        "tile_rate": m.tile_rate.as_dict(),
                        "memory_penalty": {int(b): h.as_dict() for b, h in sorted(m.memory_penalty.items())},
                        "diagonal_rate": m.diagonal_rate.as_dict(),
                    }
                    for t, m in sorted(models.items())
                }
                for backend, models in sorted(self.compute.items())
            },
            "broadcast": {
                variant: [
                    {"comm_size": f.comm_size, "groups": f.groups, **f.bandwidth.as_dict()}
                    for f in sorted(fits, key=lambda f: (f.comm_size, f.groups))
                ]
                for variant, fits in sorted(self.broadcasts.items())
            },
            **({"sssp": self.sssp} if self.sssp else {}),
            **({"solver_correction": self.solver_correction} if self.solver_correction else {}),
            "observations": self.observations,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "") -> Machine:
        where = source or "machine description"
        try:
            compute = {
                str(backend): {
                    int(t): ComputeModel(
                        threads=int(t),
                        tile_rate=Hyperbola.from_dict(m["tile_rate"]),
                        memory_penalty={
                            int(b): Hyperbola.from_dict(h) for b, h in (m.get("memory_penalty") or {}).items()
                        },
                        diagonal_rate=Hyperbola.from_dict(m["diagonal_rate"]),
                    )
                    for t, m in models.items()
                }
                for backend, models in data["compute"].items()
            }
            broadcasts = {
                str(variant): [
                    BroadcastFit(
                        int(f["comm_size"]), int(f.get("groups", 1)), Hyperbola(float(f["a"]), float(f["d"]))
                    )
                    for f in fits
                ]
                for variant, fits in (data.get("broadcast") or {}).items()
            }
            machine = cls(
                name=str(data["name"]),
                description=dict(data.get("description") or {}),
                cores_per_node=int(data["cores_per_node"]),
                memory_per_node_bytes=int(data["memory_per_node_bytes"]),
                ranks_per_node=int(data["ranks_per_node"]) if data.get("ranks_per_node") else None,
                compute=compute,
                broadcasts=broadcasts,
                chunk_bytes=int(data.get("chunk_bytes") or DEFAULT_CHUNK_BYTES),
                source=source,
                observations=dict(data.get("observations") or {}),
                sssp=dict(data.get("sssp") or {}),
                solver_correction=dict(data.get("solver_correction") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise MachineError(f"{where}: missing or malformed field: {exc}") from exc
        if machine.cores_per_node < 1 or not machine.compute:
            raise MachineError(f"{where}: needs cores_per_node >= 1 and at least one compute model")
        return machine

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=None, width=110)
        # Atomically: every later plan reads this file, and a calibration killed mid-write must not
        # leave a truncated one that fails them all until someone deletes it.
        write_atomically(
            path, f"# HyPerMod machine description ({self.name}); written by `litpath plan-calibrate`.\n" + text
        )
        return path


def default_machine_path() -> Path:
    """``$LITPATH_MACHINE`` if set, else config/machines/dev-vm-2core.yaml."""
    env = os.environ.get("LITPATH_MACHINE")
    return Path(env) if env else MACHINES_DIR / f"{DEFAULT_MACHINE_NAME}.yaml"


def load_machine(path: str | Path | None = None) -> Machine:
    """Read a machine file (default: :func:`default_machine_path`)."""
    path = Path(path) if path else default_machine_path()
    if not path.exists():
        raise MachineError(
            f"{path}: machine description not found (run `litpath plan-calibrate` to measure one)"
        )
    try:
        data = read_yaml(path.read_text())
    except yaml.YAMLError as exc:
        raise MachineError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise MachineError(f"{path}: expected a mapping at the top level")
    return Machine.from_dict(data, source=str(path))


def describe_this_machine() -> dict[str, Any]:
    """CPU model, cores, memory, MPI and date of the machine we run on."""
    cpu_model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mpi = ""
    try:
        out = run_command(["mpirun", "--version"], what="MPI's version", timeout=30, check=False).stdout
        mpi = out.splitlines()[0].strip() if out else ""
    except CommandFailed:
        pass  # no MPI on PATH: the description says nothing of it
    flags = ""
    try:
        text = Path("/proc/cpuinfo").read_text()
        flags = "avx512" if "avx512f" in text else ("avx2" if "avx2" in text else "generic")
    except OSError:
        pass
    return {
        "hostname": platform.node(),
        "cpu_model": cpu_model,
        "cores": os.cpu_count() or 1,
        "simd": flags,
        "memory_bytes": physical_memory_bytes(),
        "os": f"{platform.system()} {platform.release()}",
        "mpi": mpi,
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def physical_memory_bytes() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0

"""Fixtures for the apsp-fw tests: the built solver, random graphs, and their references.

Graphs are fresh random directed graphs (seeded per test) with the awkward parts the solver
must get right: zero-cost edges, self-loops, duplicate edges (minimum wins), several
components and isolated vertices. The reference is scipy.sparse.csgraph in float64.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csgraph

from pipeline.solve.apsp_fw import SolverError, build_solver, find_solver, mpirun_command


@dataclass
class RandomGraph:
    n: int
    src: np.ndarray  # int64, directed edges src -> dst, duplicates and self-loops included
    dst: np.ndarray
    cost: np.ndarray  # float32, >= 0

    def reference(self) -> np.ndarray:
        """All-pairs distances from scipy (Dijkstra, float64); +inf where unreachable."""
        dense = np.full((self.n, self.n), np.inf)
        np.minimum.at(dense, (self.src, self.dst), self.cost.astype(np.float64))
        np.fill_diagonal(dense, 0.0)
        graph = csgraph.csgraph_from_dense(dense, null_value=np.inf)  # zeros stay edges
        return csgraph.shortest_path(graph, method="D", directed=True)

    def write_mtx(self, path: Path) -> Path:
        lines = [
            "%%MatrixMarket matrix coordinate real general",
            "% random test graph",
            f"{self.n} {self.n} {len(self.src)}",
        ]
        lines += [
            f"{u + 1} {v + 1} {float(w)!r}" for u, v, w in zip(self.src, self.dst, self.cost, strict=False)
        ]
        path.write_text("\n".join(lines) + "\n")
        return path

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        order = np.lexsort((self.dst, self.src))
        row_ptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.src, minlength=self.n), out=row_ptr[1:])
        return row_ptr, self.dst[order].astype(np.int64), self.cost[order].astype(np.float32)

    def write_bp(self, path: Path, digest: str = "test-digest") -> Path:
        from pipeline.store.adios import write_graph_bp

        row_ptr, col_idx, cost = self.csr()
        attrs = {"graph_digest": digest, "weight_scheme": "test", "edge_kinds": ["test"]}
        write_graph_bp(path, self.n, row_ptr, col_idx, cost, attrs)
        return path


def random_graph(n: int, seed: int, components: int = 3, density: float = 0.04) -> RandomGraph:
    """Directed graph in `components` vertex blocks (no edges between them) plus isolated vertices."""
    rng = np.random.default_rng(seed)
    isolated = max(1, n // 20)
    bounds = np.linspace(0, n - isolated, components + 1).astype(int)
    src, dst = [], []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=False):
        size = hi - lo
        m = max(1, int(density * size * size))
        src.append(rng.integers(lo, hi, m))
        dst.append(rng.integers(lo, hi, m))
        # a directed cycle keeps most of each block reachable
        ring = np.arange(lo, hi)
        src.append(ring)
        dst.append(np.roll(ring, -1))
    src = np.concatenate(src)
    dst = np.concatenate(dst)
    cost = rng.uniform(0.05, 10.0, len(src)).astype(np.float32)
    cost[rng.random(len(src)) < 0.1] = 0.0  # zero-cost edges
    loops = rng.integers(0, n - isolated, 3)  # self-loops with positive cost
    dup = rng.integers(0, len(src), 5)  # duplicates: a cheaper and a dearer copy
    src = np.concatenate([src, loops, src[dup], src[dup]])
    dst = np.concatenate([dst, loops, dst[dup], dst[dup]])
    cost = np.concatenate([cost, np.full(3, 2.5, np.float32), cost[dup] * 0.5, cost[dup] + 3]).astype(
        np.float32
    )
    return RandomGraph(n=n, src=src.astype(np.int64), dst=dst.astype(np.int64), cost=cost)


@pytest.fixture(scope="session")
def apsp_fw() -> Path:
    """The apsp-fw binary ($LITPATH_APSP_FW or solver/build, built when missing)."""
    try:
        return find_solver()
    except SolverError:
        return build_solver()


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run_apsp(apsp_fw: Path):
    """Run `mpirun -n ranks apsp-fw args...` and return (returncode, stdout, stderr)."""

    def run(ranks: int, *args: str | os.PathLike, timeout: float = 120) -> Run:
        cmd = mpirun_command(ranks) + [str(apsp_fw), *map(str, args)]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, "OMP_NUM_THREADS": "1"}
        )
        return Run(proc.returncode, proc.stdout, proc.stderr)

    return run


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()

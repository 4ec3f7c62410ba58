"""Random directed graphs for the solver's tests, with their scipy reference (zero-cost edges,
self-loops, duplicate edges (minimum wins), several components and isolated vertices), and the
reading and comparison of the distances a solve wrote."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.sparse import csgraph

from pipeline.store.bpfiles import bp_reader


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


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


RTOL = 1e-5  # float32 sums along paths vs scipy's float64
ATOL = 1e-5


def read_distances(path: Path) -> tuple[np.ndarray, dict]:
    """The whole matrix read into a NaN-poisoned buffer (so unwritten elements show), and attributes."""
    with bp_reader(path) as reader:
        attrs = {name: reader.read_attribute(name) for name in reader.available_attributes()}
        n = int(np.asarray(attrs["n"]).item())
        var = reader.inquire_variable("distance")
        assert var.type() == "float"
        assert list(var.shape()) == [n, n]
        poisoned = np.full((n, n), np.nan, dtype=np.float32)
        reader.read_in_buffer(var, poisoned, start=[0, 0], count=[n, n])
        # blocks written: their areas must add up to exactly n*n (no overlaps, no holes
        # given the NaN check above)
        blocks = reader.all_blocks_info("distance")[0]
        area = sum(int(np.prod([int(c) for c in str(b["Count"]).split(",")])) for b in blocks)
    assert area == n * n
    return poisoned, attrs


def assert_distances_equal(got: np.ndarray, want: np.ndarray) -> None:
    assert not np.isnan(got).any(), f"{int(np.isnan(got).sum())} elements never written"
    unreachable = np.isinf(want)
    assert np.array_equal(np.isinf(got), unreachable), "unreachable pairs differ"
    assert np.all(got[unreachable] == np.inf), "unreachable must be +inf"
    np.testing.assert_allclose(got[~unreachable], want[~unreachable], rtol=RTOL, atol=ATOL)


def read_matrix(path: Path) -> np.ndarray:
    """A distances.bp's matrix, NaN where nothing was written."""
    with bp_reader(path) as reader:
        var = reader.inquire_variable("distance")
        n = int(var.shape()[0])
        out = np.full((n, n), np.nan, dtype=np.float32)
        reader.read_in_buffer(var, out, start=[0, 0], count=[n, n])
    return out


def assert_bitwise_equal(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    differing = int(np.count_nonzero(got.view(np.uint32) != want.view(np.uint32)))
    assert differing == 0, f"{differing} elements differ from the uninterrupted run"


def checkpoints(ckpt_dir: Path) -> list[int]:
    """Iterations of the complete checkpoints (those with a MANIFEST)."""
    if not ckpt_dir.is_dir():
        return []
    return sorted(int(p.parent.name[5:]) for p in ckpt_dir.glob("iter-*/MANIFEST"))

"""pipeline.query.sssp (liblitpath_sssp.so through ctypes) against scipy.sparse.csgraph.dijkstra.

Fresh random graphs with the awkward parts: zero-cost edges, several components and
isolated vertices, directed graphs searched backward on their reverse CSR.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest
from scipy.sparse.csgraph import dijkstra
from support.literature_graph import literature_like
from support.slow_searches import two_components

from pipeline.query import sssp
from pipeline.query.paths import Adjacency, adjacency_from_edges

RTOL = 1e-9  # both sides sum float32 costs in double; only the order of the sums differs


def _components(n: int, rng: np.random.Generator, parts: int = 3) -> list[tuple[int, int]]:
    """Vertex ranges with no edges between them; the last few vertices stay isolated."""
    isolated = max(1, n // 25)
    bounds = np.linspace(0, n - isolated, parts + 1).astype(int)
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def random_undirected(n: int, degree: float, seed: int) -> Adjacency:
    rng = np.random.default_rng(seed)
    pairs = set()
    for lo, hi in _components(n, rng):
        for _ in range(int(degree * (hi - lo) / 2)):
            u, v = (int(x) for x in rng.integers(lo, hi, 2))
            if u != v:
                pairs.add((min(u, v), max(u, v)))
    src, dst = (np.array(x, dtype=np.int64) for x in zip(*sorted(pairs), strict=True))
    cost = rng.uniform(0.05, 10.0, len(src)).astype(np.float32)
    cost[rng.random(len(src)) < 0.15] = 0.0  # zero-cost edges
    return adjacency_from_edges(n, src, dst, cost)


def random_directed(n: int, degree: float, seed: int) -> Adjacency:
    """Directed arcs, no parallel ones (scipy would add them up), rows sorted by column."""
    rng = np.random.default_rng(seed)
    arcs = set()
    for lo, hi in _components(n, rng):
        for _ in range(int(degree * (hi - lo))):
            u, v = (int(x) for x in rng.integers(lo, hi, 2))
            if u != v:
                arcs.add((u, v))
    src, dst = (np.array(x, dtype=np.int64) for x in zip(*sorted(arcs), strict=True))
    cost = rng.uniform(0.05, 10.0, len(src)).astype(np.float32)
    cost[rng.random(len(src)) < 0.15] = 0.0
    row_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=row_ptr[1:])
    return Adjacency(n=n, row_ptr=row_ptr, col_idx=dst, cost=cost)


def reference(adjacency: Adjacency, sources) -> np.ndarray:
    """scipy's float64 rows (zero costs kept as the smallest positive double, Adjacency.to_scipy)."""
    return np.atleast_2d(dijkstra(adjacency.to_scipy(), directed=True, indices=np.asarray(sources)))


def assert_valid_path(adjacency: Adjacency, vertices: list[int], source: int, target: int, distance: float):
    assert vertices[0] == source and vertices[-1] == target
    assert len(set(vertices)) == len(vertices), f"path repeats a vertex: {vertices}"
    total = 0.0
    for u, v in zip(vertices, vertices[1:], strict=False):
        total += adjacency.edge_cost(u, v)  # KeyError when the edge does not exist
    assert total == distance  # the library sums the path's costs in the same order


GRAPHS = [
    ("undirected", 300, 6.0, 1),
    ("undirected", 1000, 3.0, 2),
    ("directed", 300, 4.0, 3),
    ("directed", 800, 2.5, 4),
]


@pytest.fixture(scope="module")
def big_pair() -> tuple[Adjacency, int, int]:
    """Two components of a million vertices and five million edges each, and a pair across them:
    its search explores a whole component (about a second on the 2-core test machine)."""
    m = 1_000_000
    adjacency = two_components(m, offsets=(1, 17, 3001, 250_007, 499_331))
    sssp.shortest_path(adjacency, 0, 1)  # the one-time check of the CSR, outside the timings
    return adjacency, 0, m


@pytest.fixture(params=GRAPHS, ids=[f"{g[0]}-{g[1]}" for g in GRAPHS])
def graph(request):
    kind, n, degree, seed = request.param
    make = random_undirected if kind == "undirected" else random_directed
    adjacency = make(n, degree, seed)
    reverse = sssp.reverse_adjacency(adjacency) if kind == "directed" else None
    return adjacency, reverse, np.random.default_rng(seed + 100)


def test_rows_match_scipy(graph):
    adjacency, _, rng = graph
    sources = rng.choice(adjacency.n, 12, replace=False)
    sources[-1] = adjacency.n - 1  # an isolated vertex
    want = reference(adjacency, sources)
    for threads in (1, 2):
        got = sssp.rows(adjacency, sources, threads=threads)
        assert got.dtype == np.float32 and got.shape == (len(sources), adjacency.n)
        assert np.array_equal(np.isinf(got), np.isinf(want)), "reachability differs"
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite].astype(np.float32), rtol=1e-6, atol=1e-6)


def test_shortest_paths_match_scipy(graph):
    adjacency, reverse, rng = graph
    sources = rng.choice(adjacency.n, 8, replace=False)
    want = reference(adjacency, sources)
    checked = unreachable = 0
    for row, s in zip(want, sources, strict=True):
        for t in [int(s), *rng.integers(0, adjacency.n, 15)]:
            distance, vertices = sssp.shortest_path(adjacency, int(s), t, reverse=reverse)
            if math.isinf(row[t]):
                assert distance == math.inf and vertices == []
                unreachable += 1
                continue
            assert distance == pytest.approx(row[t], rel=RTOL, abs=1e-12)
            assert_valid_path(adjacency, vertices, int(s), t, distance)
            checked += 1
    assert checked > 20 and unreachable > 0  # both kinds of pair were exercised


def test_nearest_matches_scipy(graph):
    adjacency, _, rng = graph
    mask = rng.random(adjacency.n) < 0.3
    for s in rng.choice(adjacency.n, 6, replace=False):
        row = reference(adjacency, [s])[0]
        candidates = np.flatnonzero(mask & np.isfinite(row))
        candidates = candidates[candidates != s]
        for k in (1, 7, adjacency.n):
            vertices, distances = sssp.nearest(adjacency, int(s), mask, k)
            assert vertices.dtype == np.int64 and distances.dtype == np.float64
            expected = np.sort(row[candidates])[:k]
            assert len(vertices) == len(expected)
            np.testing.assert_allclose(distances, expected, rtol=RTOL, atol=1e-12)
            assert set(vertices.tolist()) <= set(candidates.tolist()) and len(set(vertices.tolist())) == len(
                vertices
            )
            np.testing.assert_allclose(row[vertices], distances, rtol=RTOL, atol=1e-12)
            # sorted by (distance, vertex id)
            order = np.lexsort((vertices, distances))
            assert np.array_equal(order, np.arange(len(vertices)))


def test_nearest_ties_go_to_the_smaller_id():
    # From 0: vertex 7 at 1.0, vertex 2 also at 1.0 but reached only through 7 (zero cost).
    adjacency = adjacency_from_edges(8, [0, 2, 0], [7, 7, 5], [1.0, 0.0, 2.0])
    mask = np.zeros(8, bool)
    mask[[2, 5, 7]] = True
    vertices, distances = sssp.nearest(adjacency, 0, mask, 1)
    assert vertices.tolist() == [2] and distances.tolist() == [1.0]
    vertices, _ = sssp.nearest(adjacency, 0, mask.astype(np.uint8), 5)
    assert vertices.tolist() == [2, 7, 5]


def test_same_vertex_and_long_paths():
    n = 3000  # a path graph: the path outgrows the first buffer of 1024 vertices
    adjacency = adjacency_from_edges(n, np.arange(n - 1), np.arange(1, n), np.full(n - 1, 0.5, np.float32))
    assert sssp.shortest_path(adjacency, 5, 5) == (0.0, [5])
    distance, vertices = sssp.shortest_path(adjacency, 0, n - 1)
    assert distance == 0.5 * (n - 1) and vertices == list(range(n))


def test_concurrent_queries_from_threads():
    adjacency = random_undirected(2000, 5.0, seed=7)
    rng = np.random.default_rng(8)
    pairs = [tuple(int(x) for x in rng.integers(0, adjacency.n, 2)) for _ in range(60)]
    expected = [sssp.shortest_path(adjacency, s, t) for s, t in pairs]
    results: dict[int, list] = {}

    def work(slot: int) -> None:
        results[slot] = [sssp.shortest_path(adjacency, s, t) for s, t in pairs]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(results[i] == expected for i in range(4))


def test_arrays_are_passed_without_copies_when_they_match():
    adjacency = random_undirected(100, 4.0, seed=9)
    csr = sssp._Csr(adjacency, "adjacency")
    assert (
        csr.row_ptr is adjacency.row_ptr and csr.col_idx is adjacency.col_idx and csr.cost is adjacency.cost
    )
    # other dtypes are converted, and give the same answers
    converted = Adjacency(
        adjacency.n,
        adjacency.row_ptr.astype(np.int32),
        adjacency.col_idx.astype(np.int32),
        adjacency.cost.astype(np.float64),
    )
    np.testing.assert_array_equal(sssp.rows(converted, [0, 5]), sssp.rows(adjacency, [0, 5]))


# -------------------------------------------------------------------------- deadlines --
# The deadline stopping a search midway is tested on a graph that takes seconds
# (tests/api/test_api_deadline.py); here, what a deadline means to each call.


def test_deadline_past_stops_searches_and_far_deadline_changes_nothing():
    adjacency = random_undirected(400, 4.0, seed=21)
    mask = np.ones(adjacency.n, dtype=bool)
    past, far = time.monotonic() - 1.0, time.monotonic() + 3600.0
    with pytest.raises(sssp.DeadlineExceeded, match="deadline"):
        sssp.shortest_path(adjacency, 0, 7, deadline=past)
    with pytest.raises(sssp.DeadlineExceeded):
        sssp.nearest(adjacency, 0, mask, 5, deadline=past)
    assert sssp.shortest_path(adjacency, 3, 3, deadline=past) == (0.0, [3])  # no search to stop
    for s, t in [(0, 7), (1, 300), (5, adjacency.n - 1)]:
        assert sssp.shortest_path(adjacency, s, t, deadline=far) == sssp.shortest_path(adjacency, s, t)
    got, expected = sssp.nearest(adjacency, 0, mask, 9, deadline=far), sssp.nearest(adjacency, 0, mask, 9)
    np.testing.assert_array_equal(got[0], expected[0])
    with pytest.raises(ValueError, match="NaN"):
        sssp.shortest_path(adjacency, 0, 7, deadline=math.nan)


def test_scoped_deadlines_nest_and_the_earliest_wins():
    adjacency = random_undirected(200, 4.0, seed=22)
    past, far = time.monotonic() - 1.0, time.monotonic() + 3600.0
    with sssp.search_deadline(past):
        with pytest.raises(sssp.DeadlineExceeded):
            sssp.shortest_path(adjacency, 0, 9)
        with sssp.search_deadline(far), pytest.raises(sssp.DeadlineExceeded):  # a later inner one
            sssp.shortest_path(adjacency, 0, 9)
        with sssp.search_deadline(None), pytest.raises(sssp.DeadlineExceeded):
            sssp.shortest_path(adjacency, 0, 9)
    with sssp.search_deadline(far):
        with pytest.raises(sssp.DeadlineExceeded):  # an earlier argument
            sssp.shortest_path(adjacency, 0, 9, deadline=past)
        expected = sssp.shortest_path(adjacency, 0, 9)
    assert sssp.shortest_path(adjacency, 0, 9) == expected  # the block's deadline is gone


def test_scoped_deadline_belongs_to_its_thread():
    adjacency = random_undirected(200, 4.0, seed=23)
    other: list = []
    with sssp.search_deadline(time.monotonic() - 1.0):
        thread = threading.Thread(target=lambda: other.append(sssp.shortest_path(adjacency, 0, 9)))
        thread.start()
        thread.join()
    assert other == [sssp.shortest_path(adjacency, 0, 9)]


# ----------------------------------------------------------------------- path index --
def _hub_sets(adjacency: Adjacency, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The hub sets an indexed search must be exact with: none, every vertex, the largest rows
    (as the graph stage chooses them) and a random third of the vertices."""
    return {
        "none": np.zeros(0, dtype=np.int64),
        "all": np.arange(adjacency.n, dtype=np.int64),
        "largest": sssp.choose_hubs(adjacency.row_ptr, 8, adjacency.nnz // 2),
        "random": np.flatnonzero(rng.random(adjacency.n) < 0.33).astype(np.int64),
    }


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: literature_like(40, 900, seed=31), id="literature-ties"),
        pytest.param(lambda: literature_like(25, 600, seed=32, ties=False), id="literature-continuous"),
        pytest.param(lambda: (random_undirected(500, 5.0, seed=33), None), id="uniform"),
    ],
)
def test_indexed_searches_match_scipy_and_the_plain_search(make):
    adjacency, _ = make()
    rng = np.random.default_rng(34)
    sources = rng.choice(adjacency.n, 10, replace=False)
    sources[-1] = adjacency.n - 1  # isolated
    want = reference(adjacency, sources)
    mask = rng.random(adjacency.n) < 0.2
    for label, vertex in _hub_sets(adjacency, rng).items():
        hubs = sssp.build_hub_rows(adjacency, vertex)
        assert hubs.rows == len(vertex)
        unreachable = 0
        for row, s in zip(want, sources, strict=True):
            for t in [int(s), *rng.integers(0, adjacency.n, 20)]:
                plain = sssp.shortest_path(adjacency, int(s), t)
                distance, vertices = sssp.shortest_path(adjacency, int(s), t, hubs=hubs)
                assert distance == plain[0], f"{label}: {s} -> {t}"  # to the last bit
                if math.isinf(row[t]):
                    assert vertices == []
                    unreachable += 1
                    continue
                assert distance == pytest.approx(row[t], rel=RTOL, abs=1e-12)
                assert_valid_path(adjacency, vertices, int(s), t, distance)
            got = sssp.nearest(adjacency, int(s), mask, 6, hubs=hubs)
            expected = sssp.nearest(adjacency, int(s), mask, 6)
            np.testing.assert_array_equal(got[0], expected[0])
            np.testing.assert_array_equal(got[1], expected[1])
        assert unreachable > 0, "no unreachable pair was tried"


def test_choose_hubs_takes_the_largest_rows_within_the_budget():
    adjacency, _ = literature_like(30, 500, seed=35)
    degree = np.diff(adjacency.row_ptr)
    hubs = sssp.choose_hubs(adjacency.row_ptr, 20, adjacency.nnz)
    assert np.array_equal(hubs, np.flatnonzero(degree >= 20))
    budget = int(np.sort(degree)[::-1][:5].sum())  # exactly the five largest rows
    assert len(sssp.choose_hubs(adjacency.row_ptr, 1, budget)) == 5
    assert sssp.choose_hubs(adjacency.row_ptr, int(degree.max()) + 1, adjacency.nnz).size == 0


def test_check_hub_rows_refuses_an_index_that_is_not_the_graphs():
    adjacency, _ = literature_like(30, 500, seed=36)
    vertex = sssp.choose_hubs(adjacency.row_ptr, 10, adjacency.nnz)
    good = sssp.build_hub_rows(adjacency, vertex)
    assert good.min_hub_cost.shape == (len(vertex),)
    changed = good.cost.copy()
    changed[good.start[1] - 1] += 0.25  # the dearest arc of the first hub: the row stays sorted
    with pytest.raises(ValueError, match="arcs differ from the graph's row"):
        sssp.check_hub_rows(adjacency, good.vertex, good.start, good.col, changed)
    swapped = good.col.copy()
    first = int(good.start[0])
    swapped[[first, first + 1]] = swapped[[first + 1, first]]
    with pytest.raises(ValueError, match=r"not sorted by \(cost, column\)|differ"):
        sssp.check_hub_rows(adjacency, good.vertex, good.start, swapped, good.cost)
    other, _ = literature_like(30, 500, seed=37)  # another graph of the same size
    with pytest.raises(ValueError, match="path index: hub"):
        sssp.check_hub_rows(other, good.vertex, good.start, good.col, good.cost)
    smaller, _ = literature_like(30, 400, seed=36)
    with pytest.raises(ValueError, match="for a graph of 530 vertices, this one has 430"):
        sssp.shortest_path(smaller, 0, 1, hubs=good)


# ------------------------------------------------------------------ search workspaces --
def test_release_idle_workspaces_is_free_before_any_search(monkeypatch, tmp_path):
    """The service's idle workers call it whether or not they searched: with no library loaded
    there is nothing to free, and it must not try to load one (there may be none)."""
    monkeypatch.setattr(sssp, "_library", None)
    monkeypatch.setenv(sssp.LIBRARY_ENV, str(tmp_path / "missing.so"))
    assert sssp.release_idle_workspaces(0) == 0


def test_workspaces_are_kept_between_searches_and_released_when_idle():
    adjacency = random_undirected(3000, 4.0, seed=24)
    sssp.release_idle_workspaces(0)
    expected = sssp.shortest_path(adjacency, 0, 11)
    stats = sssp.workspace_stats()
    assert stats["busy"] == 0 and stats["idle"] >= 1 and stats["idle_bytes"] >= 16 * adjacency.n
    assert sssp.release_idle_workspaces(3600) == 0  # none has been idle an hour
    assert sssp.release_idle_workspaces(0) == stats["idle_bytes"]
    assert sssp.workspace_stats() == {"busy": 0, "idle": 0, "idle_bytes": 0}
    assert sssp.shortest_path(adjacency, 0, 11) == expected


def test_a_search_waits_for_a_workspace_at_the_limit_until_its_deadline(big_pair):
    """With one workspace, a second search waits while the first explores a component; it gives
    up at its deadline if the first still holds the workspace, and runs once it is free."""
    adjacency, source, target = big_pair
    small = random_undirected(200, 4.0, seed=25)
    sssp.set_workspace_limit(1)
    try:
        first: list = []
        holder = threading.Thread(target=lambda: first.append(
            sssp.shortest_path(adjacency, source, target, deadline=time.monotonic() + 3.0)
        ))  # fmt: skip
        holder.start()
        time.sleep(0.15)  # the first search now holds the one workspace
        started = time.monotonic()
        with pytest.raises(sssp.DeadlineExceeded, match="workspaces were busy"):
            sssp.shortest_path(small, 0, 9, deadline=started + 0.1)
        assert time.monotonic() - started < 0.6
        holder.join()
        assert first == [(math.inf, [])]
        assert sssp.shortest_path(small, 0, 9) == sssp.shortest_path(small, 0, 9)
        assert sssp.workspace_stats()["busy"] == 0
    finally:
        sssp.set_workspace_limit(0)


def test_workspace_limit_must_be_a_count():
    with pytest.raises(ValueError, match="non-negative integer"):
        sssp.set_workspace_limit(-1)


# ---------------------------------------------------------------------------- errors --
def test_vertex_out_of_range():
    adjacency = random_undirected(50, 3.0, seed=10)
    with pytest.raises(IndexError, match="target 50 is outside 0..49"):
        sssp.shortest_path(adjacency, 0, 50)
    with pytest.raises(IndexError, match="source -1 is outside"):
        sssp.nearest(adjacency, -1, np.ones(50, bool), 3)
    with pytest.raises(IndexError, match=r"sources\[1\] = 77 is outside 0..49"):
        sssp.rows(adjacency, [3, 77])
    with pytest.raises(TypeError, match="integer vertex id"):
        sssp.shortest_path(adjacency, 1.5, 2)


def test_wrong_lengths_and_bad_graphs():
    adjacency = random_undirected(50, 3.0, seed=11)
    with pytest.raises(ValueError, match=r"candidate_mask has shape \(49,\), expected \(50,\)"):
        sssp.nearest(adjacency, 0, np.ones(49, bool), 3)
    with pytest.raises(ValueError, match="k must be a non-negative integer"):
        sssp.nearest(adjacency, 0, np.ones(50, bool), -1)
    short = Adjacency(50, adjacency.row_ptr, adjacency.col_idx[:-1], adjacency.cost)
    with pytest.raises(ValueError, match="col_idx has .* entries, row_ptr\\[n\\]"):
        sssp.rows(short, [0])
    negative = Adjacency(50, adjacency.row_ptr, adjacency.col_idx, adjacency.cost.copy())
    negative.cost[3] = -1.0
    with pytest.raises(ValueError, match=r"cost\[3\] = -1.* must be finite and >= 0"):
        sssp.shortest_path(negative, 0, 1)
    other = random_undirected(40, 3.0, seed=12)
    with pytest.raises(ValueError, match="reverse adjacency has n = 40"):
        sssp.shortest_path(adjacency, 0, 1, reverse=other)


def test_missing_library_says_to_run_make_setup(monkeypatch, tmp_path):
    monkeypatch.setattr(sssp, "_library", None)
    monkeypatch.setattr(sssp, "DEFAULT_LIBRARY", tmp_path / "liblitpath_sssp.so")
    monkeypatch.delenv(sssp.LIBRARY_ENV, raising=False)
    with pytest.raises(sssp.SsspError, match="run `make setup` to build it"):
        sssp.library()
    monkeypatch.setenv(sssp.LIBRARY_ENV, str(tmp_path / "elsewhere.so"))
    with pytest.raises(sssp.SsspError, match="elsewhere.so; fix \\$LITPATH_SSSP_LIB"):
        sssp.library()

"""On-demand searches stop at the request's deadline, and the worker is free again right after.

The graph is two disconnected components of 2M vertices and 10M edges each, built here with
numpy: a pair across them is unreachable, and the bidirectional search explores a whole
component before it can say so (1.7 s on the 2-core test machine, without a deadline). With a
deadline a fraction of that, the search must give up at it (the library raising proves the
search had not finished), within a small margin (the clock is read about every millisecond of
work), and the same worker must answer the next query at once.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from fastapi.testclient import TestClient
from support.build_fixture import make_build
from support.slow_searches import two_components

from pipeline.query import sssp
from pipeline.query.graph import ON_DEMAND, Graph
from pipeline.query.paths import Adjacency
from services.api.main import create_app
from services.api.settings import Settings

COMPONENT = 2_000_000  # vertices of each component
DEADLINE_S = 0.3
MARGIN_S = 0.4  # generous: a loaded machine, and the thread hand-over around the search


@pytest.fixture(scope="module")
def big() -> Adjacency:
    adjacency = two_components(COMPONENT)
    sssp.shortest_path(adjacency, 0, 1)  # the one-time full check of the CSR, outside the timings
    return adjacency


def test_two_components_are_symmetric_and_disconnected():
    """The graph the deadline tests rely on, checked on a small copy: every arc has its reverse
    at the same cost, and no arc crosses between the components."""
    small = two_components(50, offsets=(1, 7, 20))
    src = np.repeat(np.arange(small.n), np.diff(small.row_ptr))
    arcs = {(int(u), int(v)): float(c) for u, v, c in zip(src, small.col_idx, small.cost, strict=True)}
    assert all(arcs[(v, u)] == c for (u, v), c in arcs.items())
    assert all((u < 50) == (v < 50) for u, v in arcs)
    assert sssp.shortest_path(small, 0, 50) == (float("inf"), [])


def test_unreachable_pair_stops_at_its_deadline_and_the_thread_answers_next(big):
    started = time.monotonic()
    with pytest.raises(sssp.DeadlineExceeded):
        sssp.shortest_path(big, 0, COMPONENT, deadline=started + DEADLINE_S)
    assert time.monotonic() - started < DEADLINE_S + MARGIN_S
    # The scoped deadline (as the service sets it) stops a whole-component neighbour search too.
    no_candidates = np.zeros(big.n, dtype=bool)
    started = time.monotonic()
    with sssp.search_deadline(started + DEADLINE_S), pytest.raises(sssp.DeadlineExceeded):
        sssp.nearest(big, 0, no_candidates, 1)
    assert time.monotonic() - started < DEADLINE_S + MARGIN_S
    # The same thread, its workspaces left mid-search, answers the next queries exactly.
    distance, vertices = sssp.shortest_path(big, 0, 1)
    assert vertices[0] == 0 and vertices[-1] == 1 and 0 < distance <= big.cost[0]
    candidates = no_candidates.copy()
    candidates[1] = True
    found, _ = sssp.nearest(big, 0, candidates, 1)
    assert found.tolist() == [1]


class _Keys:
    """Vertex keys of the big graph, C0000000..., made on demand (no list of 4M strings)."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, vid: int) -> str:
        return f"C{vid:07d}"


class _VidOf:
    def __init__(self, n: int):
        self.n = n

    def get(self, key: str, default=None):
        vid = int(key[1:]) if key[:1] == "C" and key[1:].isdigit() else -1
        return vid if 0 <= vid < self.n else default


class _NoNames:
    def __getitem__(self, vid: int) -> None:
        return None


def _serve_big(client: TestClient, big: Adjacency) -> None:
    """The service's full graph replaced by the two big components (searched on demand)."""
    served = client.app.state.litpath.build.build
    full = served.graphs["full"]
    served.graphs["full"] = Graph(
        scope="full", build_id=full.build_id, build_dir=full.build_dir, paths=full.paths, adjacency=big,
        keys=_Keys(big.n), names=_NoNames(), is_concept=np.ones(big.n, dtype=bool), vid_of=_VidOf(big.n),
        graph_digest="big", edge_kinds=full.edge_kinds, method=ON_DEMAND,
    )  # fmt: skip


def test_api_answers_504_at_the_deadline_and_its_one_worker_serves_the_next_request(big, tmp_path):
    """One compute thread. Before searches had deadlines, the unreachable pair kept that thread
    for the whole search (about 1.7 s), so the next request waited in the queue past its own
    deadline and got a 504 too."""
    fixture = make_build(tmp_path, n_concepts=10, n_abstracts=6)
    settings = Settings(results_dir=fixture.results_dir, compute_threads=1, request_timeout_s=DEADLINE_S)
    with TestClient(create_app(settings)) as client:
        _serve_big(client, big)
        started = time.monotonic()
        response = client.get("/v1/distance", params={"source": "C0000000", "target": f"C{COMPONENT:07d}"})
        elapsed = time.monotonic() - started
        assert response.status_code == 504, response.text
        assert response.json()["error"]["code"] == "timeout"
        assert elapsed < DEADLINE_S + MARGIN_S
        response = client.get("/v1/distance", params={"source": "C0000000", "target": "C0000001"})
        assert response.status_code == 200, response.text
        assert response.json()["reachable"] is True and response.json()["distances"] == "on-demand"


def test_a_batch_at_its_deadline_returns_the_pairs_it_answered(big, tmp_path):
    """The unreachable pair's search stops a quarter of the deadline early; the pair before it
    keeps its path, it and the pairs after get a timeout error each, and the request is a 200."""
    fixture = make_build(tmp_path, n_concepts=10, n_abstracts=6)
    timeout = 1.2
    settings = Settings(results_dir=fixture.results_dir, compute_threads=1, request_timeout_s=timeout)
    with TestClient(create_app(settings)) as client:
        _serve_big(client, big)
        pairs = [("C0000000", "C0000001"), ("C0000000", f"C{COMPONENT:07d}"), ("C0000002", "C0000003")]
        started = time.monotonic()
        response = client.post(
            "/v1/paths", json={"pairs": [{"source": s, "target": t} for s, t in pairs], "evidence": False}
        )
        elapsed = time.monotonic() - started
        assert response.status_code == 200, response.text
        assert elapsed < timeout, elapsed
        results = response.json()["results"]
        assert [(r["source"], r["target"]) for r in results] == pairs
        assert results[0]["error"] is None and results[0]["path"]["reachable"] is True
        for item in results[1:]:
            assert item["path"] is None and item["error"]["code"] == "timeout"
            assert "ask for this pair again" in item["error"]["message"]

"""Nearest concepts from stored distances when several are tied at the k-th distance: the
answer is the first k in (distance, vertex id) order, as the on-demand search gives it, so a
shorter list is always the start of a longer one."""

from __future__ import annotations

import numpy as np
import pytest
from support.build_fixture import make_build, write_graph_scope

from pipeline.builds.layout import ResultsLayout
from pipeline.builds.tables import EDGE_KINDS
from pipeline.query import sssp
from pipeline.query.graph import STORED, open_graph

N_CONCEPTS, N_ABSTRACTS = 60, 10
NEAR = [v for v in range(1, N_CONCEPTS) if v % 3 == 0]  # one hop of weight 0.5 from concept 0
FAR = [v for v in range(1, N_CONCEPTS) if v % 3]  # one hop of weight 0.25: all tied


@pytest.fixture(scope="module", params=["dense", "rows"])
def star(request, tmp_path_factory):
    """Concept 0 joined to every other concept, by edges of two weights that interleave by vertex
    id, and to an abstract that leads nowhere else."""
    results = tmp_path_factory.mktemp(f"star-{request.param}")
    build = make_build(results, n_concepts=N_CONCEPTS, n_abstracts=N_ABSTRACTS, seed=3)
    src = np.zeros(N_CONCEPTS, np.int64)
    dst = np.append(np.arange(1, N_CONCEPTS), N_CONCEPTS).astype(np.int64)
    kind = np.array([EDGE_KINDS[0]] * (N_CONCEPTS - 1) + [EDGE_KINDS[1]])
    weight = np.where(dst % 3 == 0, 0.5, 0.25)
    full = ResultsLayout(results).build(build.build_id).graph("full")
    write_graph_scope(
        full.graph_dir, full.distances, build.keys, build.names, N_CONCEPTS, src, dst, kind, weight,
        edge_kinds=list(EDGE_KINDS), distances=request.param, sources=[0, 7],
    )  # fmt: skip
    graph = open_graph(build.build_dir)
    yield graph
    graph.close()


@pytest.mark.parametrize("k", [1, 5, 19, 20, 21, 33, 47, 58, 59, 80])
def test_the_first_k_by_distance_then_vertex_id(star, k):
    got, where = star.nearest_concepts(0, k)
    assert where == STORED
    assert [vid for vid, _ in got] == (NEAR + FAR)[:k]
    distances = [distance for _, distance in got]
    assert distances == sorted(distances)


def test_stored_and_on_demand_give_the_same_list(star):
    """Around vertex 7 (a far one): 0 at one hop, the near ones next, then the far ones, tied."""
    searched = sssp.nearest(star.adjacency, 7, star.is_concept, N_CONCEPTS, hubs=None)[0].tolist()
    assert searched == [0, *NEAR, *[v for v in FAR if v != 7]]
    for k in range(1, N_CONCEPTS + 1):
        got, where = star.nearest_concepts(7, k)
        assert where == STORED
        assert [vid for vid, _ in got] == searched[:k], k

"""The earlier graph's edges kept in their order after a citation file
(pipeline.graph.assemble._in_order_then_citations): on random graphs, the edges come out as the
generic sort of the same edges by kind gives them (pipeline.graph.assemble._sorted_edges), with
vids assigned in key order as the build does, and also with a vid map that is not monotone (then
they are sorted, not trusted)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pipeline.graph.assemble import _in_order_then_citations, _sorted_edges
from pipeline.graph.edges import EdgesInOrder


def _earlier_graph(rng, n_concepts: int, n_abstracts: int, m: int):
    """Distinct edges with a concept end, sorted by (src, dst) in earlier vids (concepts first)."""
    n = n_concepts + n_abstracts
    src = rng.integers(0, n_concepts, m)
    dst = rng.integers(0, n, m)
    keep = src < dst
    key = np.unique(src[keep] * n + dst[keep])
    return key // n, key % n, rng.random(len(key))


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("monotone", [True, False])
def test_the_earlier_edges_in_order_then_the_citations_equal_the_sort_by_kind(seed, monotone, monkeypatch):
    if monotone:  # in order as they are: nothing but the citations is sorted
        monkeypatch.setattr("pipeline.graph.assemble.sort_edges", lambda *a: pytest.fail("sorted again"))
    rng = np.random.default_rng(seed)
    n_concepts, n_abstracts, new_abstracts = 40, 120, 15
    src, dst, weight = _earlier_graph(rng, n_concepts, n_abstracts, 900)
    # document codes: the earlier abstracts on edges in rank order, then the citations' new papers
    on_edges = np.unique(dst[dst >= n_concepts] - n_concepts)
    abstract_code = np.full(n_abstracts, -1)
    abstract_code[on_edges] = np.arange(len(on_edges))
    n_documents = len(on_edges) + new_abstracts
    # this graph's vids: concepts as before; abstracts by key, the new papers' keys among the old
    vid_of_concept = np.arange(n_concepts)
    if monotone:  # the earlier papers keep their order, the new ones fall anywhere among them
        old_places = np.sort(rng.choice(n_documents, len(on_edges), replace=False))
        where = np.concatenate([old_places, rng.permutation(np.setdiff1d(np.arange(n_documents), old_places))])
    else:
        where = rng.permutation(n_documents)
    vid_of_abstract = n_concepts + np.argsort(np.argsort(where))
    vertices = SimpleNamespace(vid_of_concept=vid_of_concept, vid_of_abstract=vid_of_abstract,
                               n=n_concepts + n_documents)  # fmt: skip
    cited = np.unique(np.sort(rng.integers(0, n_documents, (200, 2)), axis=1), axis=0)
    cited = cited[cited[:, 0] < cited[:, 1]]
    citations = (vid_of_abstract[cited[:, 1]], vid_of_abstract[cited[:, 0]], rng.random(len(cited)))

    between = dst < n_concepts
    abstract_of = abstract_code[dst[~between] - n_concepts]
    got = _in_order_then_citations(vertices, EdgesInOrder(src, dst, weight, n_concepts, abstract_of), between,
                                   citations)  # fmt: skip
    want = _sorted_edges(
        vertices.n,
        (vid_of_concept[src[between]], vid_of_concept[dst[between]], weight[between]),
        (vid_of_concept[src[~between]], vid_of_abstract[abstract_of], weight[~between]),
        citations,
    )
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b)
    assert np.all(np.diff(got[0] * vertices.n + got[1]) > 0)

"""``BuildPaths.alternatives`` and the tie counts of path answers on a build of the bundled
sample, against networkx on the build's own edges table (``shortest_simple_paths`` for the k
paths, ``all_shortest_paths`` for the ties; the type filters applied to networkx's graph by
removing the concepts they exclude); and README's "Alternative paths" example, run as written."""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import re
from pathlib import Path

import networkx as nx
import numpy as np
import pyarrow.parquet as pq
import pytest
from support.corpus_build import REPO

from pipeline.builds.layout import BuildLayout
from pipeline.query import open_paths
from pipeline.query.alternatives import TypeFilter, UnknownSemanticType

FRESH = int(np.random.SeedSequence().entropy % (2**32))


@pytest.fixture(scope="module")
def sample(sample_results) -> Path:
    return sample_results


def _networkx(build_dir: Path, scope: str) -> tuple[nx.Graph, list[str]]:
    files = BuildLayout(build_dir).graph(scope)
    keys = pq.read_table(files.vertices, columns=["key"]).column("key").to_pylist()
    edges = pq.read_table(files.folder.edges, columns=["src", "dst", "cost"]).to_pydict()
    graph = nx.Graph()
    graph.add_nodes_from(range(len(keys)))
    for u, v, cost in zip(edges["src"], edges["dst"], edges["cost"], strict=True):
        graph.add_edge(u, v, weight=float(np.float32(cost)))
    return graph, keys


def _cost(graph: nx.Graph, path: list[int]) -> float:
    total = 0.0
    for u, v in itertools.pairwise(path):
        total += graph[u][v]["weight"]
    return total


@pytest.mark.parametrize("scope", ["full", "cooccurrence"])
def test_alternatives_and_ties_equal_networkx(sample, scope):
    rng = np.random.default_rng(FRESH)
    filters = [
        TypeFilter(),
        TypeFilter(exclude=("gngm",)),
        TypeFilter(include=("dsyn", "sosy", "phsu")),
        TypeFilter(include=("dsyn", "gngm"), exclude=("gngm",)),
    ]
    with open_paths(results_dir=sample) as paths:
        graph, keys = _networkx(paths.build.build_dir, scope)
        # networkx's all_shortest_paths is the exact count only without zero-cost edges.
        assert all(w > 0 for _, _, w in graph.edges(data="weight"))
        semtypes = paths.build.concepts().semtypes_by_cui()
        concepts = [i for i, key in enumerate(keys) if re.fullmatch(r"C\d{7}", key)]
        for query in range(12):
            s, t = (int(v) for v in rng.choice(concepts, 2, replace=False))
            type_filter = filters[query % len(filters)]
            removed = {
                v for v in graph if v not in (s, t) and keys[v] in semtypes and (
                    (type_filter.include and not set(semtypes[keys[v]]) & set(type_filter.include))
                    or set(semtypes[keys[v]]) & set(type_filter.exclude)
                )
            }  # fmt: skip
            reference = graph.subgraph(set(graph) - removed)
            note = f"seed {FRESH}, {keys[s]} -> {keys[t]}, {type_filter}"
            answer = paths.alternatives(
                keys[s], keys[t], k=6, include_types=type_filter.include, exclude_types=type_filter.exclude,
                scope=scope,
            )  # fmt: skip
            try:
                expected = [
                    _cost(reference, p)
                    for p in itertools.islice(nx.shortest_simple_paths(reference, s, t, weight="weight"), 6)
                ]
                ties = sum(1 for _ in nx.all_shortest_paths(reference, s, t, weight="weight"))
            except nx.NetworkXNoPath:
                expected, ties = [], 0
            np.testing.assert_allclose([p.cost for p in answer.paths], sorted(expected), rtol=1e-9, err_msg=note)
            assert (answer.ties, answer.ties_saturated) == (ties, False), note
            for path in answer.paths:
                inner = [keys.index(v.key) for v in path.vertices[1:-1]]
                assert not set(inner) & removed, note
                assert sum(hop.cost for hop in path.hops) == pytest.approx(path.cost, rel=1e-12)
                assert path.distances == "on-demand" and path.ties == ties
            if not type_filter.active:
                single = paths.path(keys[s], keys[t], scope=scope)
                assert (single.ties, single.ties_saturated) == (ties, False), note


def test_an_unknown_semantic_type_is_refused_with_the_known_ones(sample):
    with open_paths(results_dir=sample) as paths, pytest.raises(UnknownSemanticType, match="'nosuch'.*dsyn"):
        paths.alternatives("C0010200", "C1800706", exclude_types=["NoSuch"])


def test_unreachable_and_same_vertex(sample):
    with open_paths(results_dir=sample) as paths:
        same = paths.alternatives("C0010200", "C0010200", k=3)
        assert [p.cost for p in same.paths] == [0.0] and same.ties == 1
        # Including only a type no intermediate can satisfy between two concepts of the
        # co-occurrence graph that share no edge leaves no path.
        answer = paths.alternatives("C0010200", "C1800706", k=3, include_types=["humn"], scope="cooccurrence")
        graph, keys = _networkx(paths.build.build_dir, "cooccurrence")
        if not graph.has_edge(keys.index("C0010200"), keys.index("C1800706")):
            semtypes = paths.build.concepts().semtypes_by_cui()
            keep = [v for v in graph if "humn" in semtypes.get(keys[v], []) or keys[v] in ("C0010200", "C1800706")]
            if not nx.has_path(graph.subgraph(keep), keys.index("C0010200"), keys.index("C1800706")):
                assert answer.paths == [] and answer.ties == 0


def _readme_alternatives_example() -> str:
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Alternative paths", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return block


def test_readme_alternatives_example_runs_on_the_sample(sample):
    block = _readme_alternatives_example()
    output = io.StringIO()
    cwd = os.getcwd()
    checkout = sample.parent / "checkout-alternatives"
    checkout.mkdir(exist_ok=True)
    if not (checkout / "results").exists():
        (checkout / "results").symlink_to(sample)
    os.chdir(checkout)
    try:
        with contextlib.redirect_stdout(output):
            exec(compile(block, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    lines = output.getvalue().splitlines()
    assert lines[0].startswith("ties: ")
    costs = [float(line.split()[0]) for line in lines[1:]]
    assert len(costs) == 3 and costs == sorted(costs)
    assert all(line.split()[1].startswith("Cough") and line.endswith("(C1800706)") for line in lines[1:])

"""``pipeline.query.open_paths``, the in-process entry point: its answers against scipy's Dijkstra
on the build's own edges, and README's example run as written on a build of the bundled sample."""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra
from support.corpus_build import REPO

from pipeline.builds.layout import BuildLayout
from pipeline.query import open_paths
from pipeline.query.graph import UnknownVertex


@pytest.fixture(scope="module")
def sample(sample_results) -> Path:
    return sample_results


def _reference(build_dir: Path, scope: str):
    """(keys, all-pairs float64 distances) from the graph's edges.parquet, by scipy."""
    files = BuildLayout(build_dir).graph(scope)
    keys = pq.read_table(files.vertices, columns=["key"]).column("key").to_pylist()
    edges = pq.read_table(files.folder.edges, columns=["src", "dst", "cost"])
    src, dst = edges.column("src").to_numpy(), edges.column("dst").to_numpy()
    cost = edges.column("cost").to_numpy().astype(np.float64)
    cost[cost == 0] = np.finfo(np.float64).tiny  # scipy drops explicit zeros
    n = len(keys)
    matrix = csr_matrix(
        (np.concatenate([cost, cost]), (np.concatenate([src, dst]), np.concatenate([dst, src]))), (n, n)
    )
    return keys, dijkstra(matrix, directed=True)


@pytest.mark.parametrize("scope", ["full", "cooccurrence"])
def test_open_paths_answers_match_scipy(sample, scope):
    rng = np.random.default_rng(31)
    with open_paths(results_dir=sample) as paths:
        keys, reference = _reference(paths.build.build_dir, scope)
        concepts = [i for i, key in enumerate(keys) if re.fullmatch(r"C\d{7}", key)]
        pairs = [tuple(rng.choice(concepts, 2, replace=False)) for _ in range(25)]
        for s, t in pairs:
            answer = paths.path(keys[s], keys[t], scope=scope)
            expected = reference[s, t]
            assert answer.reachable == math.isfinite(expected)
            if not answer.reachable:
                assert answer.cost == math.inf and answer.hops == []
                continue
            assert answer.cost == pytest.approx(expected, rel=1e-5, abs=1e-6)
            assert paths.distance(keys[s], keys[t], scope=scope) == pytest.approx(
                expected, rel=1e-5, abs=1e-6
            )
            # the hops are the path's consecutive vertices, and their costs sum to the answer's
            assert [hop.source for hop in answer.hops] == [v.key for v in answer.vertices[:-1]]
            assert [hop.target for hop in answer.hops] == [v.key for v in answer.vertices[1:]]
            assert sum(hop.cost for hop in answer.hops) == pytest.approx(answer.cost, rel=1e-6)
            assert all(hop.weight == pytest.approx(math.exp(-hop.cost), rel=1e-5) for hop in answer.hops)
        source = keys[concepts[0]]
        found = paths.neighbors(source, k=5, scope=scope)
        row = reference[concepts[0]]
        others = sorted(row[i] for i in concepts if i != concepts[0] and math.isfinite(row[i]))[:5]
        assert [distance for _, distance in found] == pytest.approx(others, rel=1e-5, abs=1e-6)
        assert all(vertex.kind == "concept" for vertex, _ in found)


def test_open_paths_unknown_key_is_a_key_error(sample):
    with open_paths(results_dir=sample) as paths, pytest.raises(UnknownVertex, match="C9999999"):
        paths.path("C9999999", "C0010200")


def test_open_paths_refuses_an_unfinished_build(tmp_path):
    with pytest.raises(FileNotFoundError, match="no complete build"):
        open_paths(results_dir=tmp_path)


def _readme_python_example() -> str:
    """The ```python block of README's section "Python: the same queries in-process"."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Python: the same queries in-process", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return block


def test_readme_python_example_runs_on_the_sample(sample):
    # The README runs it from the checkout, where results/ is the sample's results folder.
    block = _readme_python_example()
    output = io.StringIO()
    cwd = os.getcwd()
    checkout = sample.parent / "checkout"
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
    assert lines[0].startswith("cost ") and "distances)" in lines[0]
    assert lines[1].startswith("Cough (C0010200) -> ") and lines[1].endswith("(C1800706)")

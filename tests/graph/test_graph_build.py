"""Graph build on the hand-checked tiny corpus (tests/support/tiny_corpus.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import scipy.sparse
from click.testing import CliRunner
from support import tiny_corpus as tiny  # noqa: E402
from support.progress_lines import RecordedLines
from support.spills import stale_spill_folder

from pipeline.builds.tables import EDGES, MENTIONS, VERTICES
from pipeline.graph import weights
from pipeline.graph.assemble import IN_MEMORY_BYTES_PER_EDGE
from pipeline.graph.build import GRAPH_SHARES, build_cooccurrence_graph, build_graph, graph_config
from pipeline.graph.commands import build_graph_command
from pipeline.graph.csr import graph_digest, kind_codes, symmetric_csr
from pipeline.store.adios import read_graph_bp
from pipeline.store.bpfiles import bp_reader

A, B, C, D, E = tiny.A, tiny.B, tiny.C, tiny.D, tiny.E


@pytest.fixture
def tables(tmp_path: Path) -> Path:
    return tiny.write_tiny_tables(tmp_path / "tables")


def _edges_by_key(graph_dir: Path) -> dict[tuple[str, str], tuple[str, float, float]]:
    vertices = pq.read_table(graph_dir / "vertices.parquet").to_pylist()
    key = {v["vid"]: v["key"] for v in vertices}
    return {
        (key[e["src"]], key[e["dst"]]): (e["kind"], e["weight"], e["cost"])
        for e in pq.read_table(graph_dir / "edges.parquet").to_pylist()
    }


# --- the formulas ---------------------------------------------------------------------------


def test_weight_formulas_against_hand_values():
    np.testing.assert_allclose(weights.cooccurrence_weight([2, 1], [4, 4], [4, 1]), [1 / 3, 1 / 4])
    np.testing.assert_allclose(weights.cooccurrence_weight([3], [3], [3]), [1.0])
    np.testing.assert_allclose(weights.occurrence_weight([3, 1], [4, 4]), [0.75, 0.25])
    np.testing.assert_allclose(weights.citation_weight([2, 1], [2, 1]), [0.25, 0.5])
    cost = weights.cost_from_weight([1.0, 0.5, np.exp(-3)])
    assert cost.dtype == np.float32
    np.testing.assert_allclose(cost, [0.0, np.log(2), 3.0], rtol=1e-6)
    assert not np.signbit(cost[0])


@pytest.mark.parametrize(
    "call",
    [
        lambda: weights.cooccurrence_weight([0], [1], [1]),
        lambda: weights.cooccurrence_weight([3], [1], [1]),
        lambda: weights.occurrence_weight([2], [1]),
        lambda: weights.citation_weight([0], [1]),
        lambda: weights.cost_from_weight([0.0]),
        lambda: weights.cost_from_weight([1.5]),
    ],
)
def test_weight_formulas_reject_impossible_counts(call):
    with pytest.raises(ValueError):
        call()


# --- the build --------------------------------------------------------------------------------


def test_build_all_kinds_matches_hand_computed_weights(tables, tmp_path):
    record = build_graph(tables, tmp_path / "g", {})
    edges = _edges_by_key(tmp_path / "g")
    expected = {
        (A, B): ("concept_concept", 1 / 3),
        (A, C): ("concept_concept", 1 / 6),
        (B, C): ("concept_concept", 1 / 6),
        (A, D): ("concept_concept", 1 / 4),
        (B, E): ("concept_concept", 1 / 4),  # E counted once for predication 7's two rows
        (C, E): ("concept_concept", 1 / 3),
        (A, "PMID:1"): ("concept_abstract", 3 / 4),
        (B, "PMID:1"): ("concept_abstract", 1 / 4),
        (B, "PMID:2"): ("concept_abstract", 1 / 4),
        (C, "PMID:2"): ("concept_abstract", 1 / 4),
        (D, "PMID:2"): ("concept_abstract", 1 / 2),
        (C, "PMID:3"): ("concept_abstract", 1.0),
        ("PMID:1", "PMID:2"): ("abstract_abstract", 1 / 4),
        ("PMID:1", "PMID:3"): ("abstract_abstract", 1 / 3),
        ("PMID:2", "PMID:4"): ("abstract_abstract", 1 / 3),
    }
    assert set(edges) == set(expected)
    for pair, (kind, weight) in expected.items():
        assert edges[pair][0] == kind, pair
        assert edges[pair][1] == pytest.approx(weight), pair
        assert edges[pair][2] == pytest.approx(-np.log(weight), abs=1e-6), pair
    counts = record["counts"]
    assert counts["predication_rows"] == 8
    assert counts["predication_rows_self_pair_removed"] == 1
    assert counts["predications_used"] == 6
    assert counts["mention_rows_nonpositive_removed"] == 1
    assert counts["citation_rows_self_removed"] == 1
    assert counts["citation_rows_duplicate_merged"] == 1
    assert (counts["vertices"], counts["concept_vertices"], counts["abstract_vertices"]) == (9, 5, 4)
    assert (
        counts["edges_concept_concept"],
        counts["edges_concept_abstract"],
        counts["edges_abstract_abstract"],
    ) == (6, 6, 3)
    assert counts["isolated_concepts"] == 1  # F
    assert counts["isolated_documents"] == 1  # PMID:9
    assert pq.read_schema(tmp_path / "g" / "vertices.parquet").equals(VERTICES)
    assert pq.read_schema(tmp_path / "g" / "edges.parquet").equals(EDGES)
    on_disk = json.loads((tmp_path / "g" / "graph_counts.json").read_text())
    assert on_disk["graph_digest"] == record["graph_digest"]
    assert on_disk["counts"] == counts
    # The path index is written beside graph.bp, for this graph (no row is large enough here).
    assert (tmp_path / "g" / "path_index.bp").exists()
    assert on_disk["path_index"]["graph_digest"] == record["graph_digest"]
    assert (on_disk["path_index"]["hubs"], on_disk["path_index"]["n"]) == (0, 9)
    sampled = on_disk["path_index"]["sampled_queries"]  # what the plan reports a query costs
    assert sampled["pairs"] == 40 and 0 <= sampled["p50_ms"] <= sampled["p90_ms"] <= sampled["max_ms"]
    # ... and the example query `litpath describe` prints: two concepts joined by a path of two or
    # more hops, checked against scipy's Dijkstra on the edges written (hops walked back from the
    # target through its predecessors)
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import dijkstra

    example = sampled["example"]
    vertices = pq.read_table(tmp_path / "g" / "vertices.parquet").to_pylist()
    vid = {row["key"]: row["vid"] for row in vertices if row["kind"] == "concept"}
    assert example["source"] in vid and example["target"] in vid and example["source"] != example["target"]
    written = pq.read_table(tmp_path / "g" / "edges.parquet").to_pydict()
    n = len(vertices)
    costs = coo_matrix((written["cost"], (written["src"], written["dst"])), shape=(n, n)).tocsr()
    distances, predecessors = dijkstra(costs, directed=False, indices=vid[example["source"]], return_predecessors=True)
    hops, at = 0, vid[example["target"]]
    while at != vid[example["source"]]:
        at, hops = predecessors[at], hops + 1
    assert np.isfinite(distances[vid[example["target"]]]) and hops == example["hops"] >= 2


def test_build_sweeps_the_spill_folders_of_a_killed_build_first(tables, tmp_path):
    """Both graphs' spill folders (beside each graph by default; one spill_dir when set)."""
    graph, cooccurrence = tmp_path / "g", tmp_path / "cooccurrence"
    stale = [stale_spill_folder(graph, ".graph-spill-"), stale_spill_folder(cooccurrence, ".graph-spill-")]
    build_graph(tables, graph, {}, cooccurrence_dir=cooccurrence)
    assert not any(folder.exists() for folder in stale)
    shared = stale_spill_folder(tmp_path / "spill", ".graph-spill-")
    build_graph(tables, tmp_path / "g2", {"resources": {"spill_dir": str(tmp_path / "spill")}})
    assert not shared.exists()


def test_vertex_ids_sorted_concepts_then_abstracts(tables, tmp_path):
    build_graph(tables, tmp_path / "g", {})
    vertices = pq.read_table(tmp_path / "g" / "vertices.parquet").to_pylist()
    assert [v["vid"] for v in vertices] == list(range(9))
    assert [v["key"] for v in vertices] == [A, B, C, D, E, "PMID:1", "PMID:2", "PMID:3", "PMID:4"]
    assert [v["kind"] for v in vertices] == ["concept"] * 5 + ["abstract"] * 4
    assert vertices[0]["name"] == "interleukin-7"
    assert vertices[5]["name"] == "IL-7 in COVID-19"
    assert vertices[8]["name"] is None  # cited only, not in the documents table


@pytest.mark.parametrize("batch_rows", [1, 2, 3, 7])
def test_build_is_deterministic_across_row_order_and_batching(tables, tmp_path, batch_rows):
    reference = build_graph(tables, tmp_path / "ref", {})
    shuffled = tiny.write_tiny_tables(tmp_path / "shuffled", shuffle_seed=batch_rows)
    again = build_graph(shuffled, tmp_path / "again", {}, batch_rows=batch_rows)
    assert again["graph_digest"] == reference["graph_digest"]
    assert again["counts"]["predications_used"] == 6
    for name in ("vertices.parquet", "edges.parquet"):
        assert pq.read_table(tmp_path / "again" / name).equals(pq.read_table(tmp_path / "ref" / name))


def test_concept_concept_only_has_no_abstract_vertices(tables, tmp_path):
    record = build_graph(tables, tmp_path / "g", {"graph": {"edge_kinds": ["concept_concept"]}})
    assert record["counts"]["abstract_vertices"] == 0
    assert record["counts"]["edges"] == 6
    assert "mention_rows" not in record["counts"]  # the mentions table is not read at all


@pytest.mark.parametrize(
    "edge_kinds",
    [
        ["concept_concept", "concept_abstract", "abstract_abstract"],
        ["concept_abstract", "abstract_abstract"],  # the full graph without co-occurrences
        ["concept_concept"],
    ],
)
def test_cooccurrence_graph_equals_a_concept_concept_only_build(tables, tmp_path, edge_kinds):
    """The co-occurrence scope written beside any full graph is exactly the concept_concept-only graph."""
    record = build_graph(tables, tmp_path / "full", {"edge_kinds": edge_kinds}, tmp_path / "co")
    reference = build_graph(tables, tmp_path / "ref", {"edge_kinds": ["concept_concept"]})
    co = record["cooccurrence"]
    assert co["scope"] == "cooccurrence" and record["scope"] == "full"
    assert co["graph_digest"] == reference["graph_digest"]
    assert co["config"]["edge_kinds"] == ["concept_concept"]
    for name in ("vertices.parquet", "edges.parquet"):
        assert pq.read_table(tmp_path / "co" / name).equals(pq.read_table(tmp_path / "ref" / name))
    vertices = pq.read_table(tmp_path / "co" / "vertices.parquet").to_pylist()
    assert {v["kind"] for v in vertices} == {"concept"}
    assert [v["key"] for v in vertices] == [A, B, C, D, E]
    (n, row_ptr, _, _), attributes = read_graph_bp(tmp_path / "co" / "graph.bp")
    assert n == 5 and row_ptr[-1] == 12 and attributes["edge_kinds"] == ["concept_concept"]
    on_disk = json.loads((tmp_path / "co" / "graph_counts.json").read_text())
    assert on_disk["graph_digest"] == co["graph_digest"] and on_disk["counts"]["edges"] == 6
    # The full graph is unchanged by writing the co-occurrence graph beside it.
    alone = build_graph(tables, tmp_path / "alone", {"edge_kinds": edge_kinds})
    assert record["graph_digest"] == alone["graph_digest"]
    assert json.loads((tmp_path / "full" / "graph_counts.json").read_text())["cooccurrence"]["edges"] == 6


def _same_graph_files(left: Path, right: Path) -> None:
    for name in ("vertices.parquet", "edges.parquet"):
        assert pq.read_table(left / name).equals(pq.read_table(right / name)), name
    (n, row_ptr, col_idx, cost), attributes = read_graph_bp(left / "graph.bp")
    (n2, row_ptr2, col_idx2, cost2), attributes2 = read_graph_bp(right / "graph.bp")
    attributes.pop("created", None), attributes2.pop("created", None)  # when each was written
    assert n == n2 and attributes == attributes2
    assert all(np.array_equal(a, b) for a, b in ((row_ptr, row_ptr2), (col_idx, col_idx2), (cost, cost2)))


@pytest.mark.parametrize("settings", [{}, {"min_support": 2}, {"exclude_semtypes": ["gngm"], "novelty_only": True}])
def test_cooccurrence_graph_alone_equals_the_one_beside_the_full_graph(tables, tmp_path, settings):
    """``build_cooccurrence_graph`` (the workflow's own job for it, so that the evidence need not
    wait for the full graph) writes the files and record the full build writes beside it."""
    beside = build_graph(tables, tmp_path / "full", {"graph": settings}, tmp_path / "co")["cooccurrence"]
    alone = build_cooccurrence_graph(tables, tmp_path / "alone", {"graph": settings})
    assert alone["graph_digest"] == beside["graph_digest"] and alone["scope"] == "cooccurrence"
    assert alone["counts"] == beside["counts"] and alone["config"] == beside["config"]
    _same_graph_files(tmp_path / "alone", tmp_path / "co")
    on_disk = json.loads((tmp_path / "alone" / "graph_counts.json").read_text())
    assert on_disk["graph_digest"] == beside["graph_digest"] and on_disk["path_index"]["graph_digest"] == beside["graph_digest"]
    assert (tmp_path / "alone" / "path_index.bp").exists() == (tmp_path / "co" / "path_index.bp").exists()


def test_build_graph_command_writes_the_cooccurrence_scope_alone(tables, tmp_path):
    runner = CliRunner()
    result = runner.invoke(build_graph_command, ["--tables-dir", str(tables), "--out", str(tmp_path / "co"), "--scope", "cooccurrence"])
    assert result.exit_code == 0, result.output
    assert "co-occurrence graph: 5 concepts, 6 edges" in result.output
    reference = build_graph(tables, tmp_path / "ref", {"graph": {"edge_kinds": ["concept_concept"]}})
    assert json.loads((tmp_path / "co" / "graph_counts.json").read_text())["graph_digest"] == reference["graph_digest"]
    refused = runner.invoke(build_graph_command, ["--tables-dir", str(tables), "--out", str(tmp_path / "x"), "--scope",
                                                  "cooccurrence", "--cooccurrence-out", str(tmp_path / "y")])  # fmt: skip
    assert refused.exit_code == 2 and "--cooccurrence-out goes with --scope full" in refused.output


def test_min_support_drops_pairs_and_counts_them(tables, tmp_path):
    record = build_graph(tables, tmp_path / "g", {"edge_kinds": ["concept_concept"], "min_support": 2})
    assert _edges_by_key(tmp_path / "g") == {
        (A, B): ("concept_concept", pytest.approx(1 / 3), pytest.approx(np.log(3)))
    }
    assert record["counts"]["concept_pairs"] == 6
    assert record["counts"]["concept_pairs_below_min_support_removed"] == 5


def test_novelty_only_drops_rows_and_counts_unknown_flags(tables, tmp_path):
    record = build_graph(tables, tmp_path / "g", {"edge_kinds": ["concept_concept"], "novelty_only": True})
    counts = record["counts"]
    assert counts["predication_rows_not_novel_removed"] == 1  # predication 3
    assert counts["predication_rows_novelty_unknown_removed"] == 2  # predication 7's rows
    edges = {k: v[1] for k, v in _edges_by_key(tmp_path / "g").items()}
    # used: 1, 2, 4, 6 -> n(A) = 4, n(B) = 2, n(C) = 1, n(D) = 1
    assert edges == {(A, B): pytest.approx(1 / 2), (A, C): pytest.approx(1 / 4), (A, D): pytest.approx(1 / 4)}


def test_exclude_semtypes_drops_concepts_from_all_edges(tables, tmp_path):
    record = build_graph(tables, tmp_path / "g", {"exclude_semtypes": ["qnco"]})
    counts = record["counts"]
    assert counts["concepts_with_excluded_semtype"] == 1
    assert counts["predication_rows_excluded_semtype_removed"] == 1
    assert counts["mention_rows_excluded_semtype_removed"] == 1
    edges = {k: v[1] for k, v in _edges_by_key(tmp_path / "g").items()}
    assert not any(D in pair for pair in edges)
    assert edges[(A, B)] == pytest.approx(2 / 5)  # n(A) = 3 without predication 6
    assert edges[(A, C)] == pytest.approx(1 / 5)
    assert edges[(B, "PMID:2")] == pytest.approx(1 / 2)  # PMID:2 has 4 kept mentions
    assert edges[(C, "PMID:2")] == pytest.approx(1 / 2)


def test_graph_bp_equals_parquet_edges_in_both_directions(tables, tmp_path):
    record = build_graph(tables, tmp_path / "g", {})
    edges = pq.read_table(tmp_path / "g" / "edges.parquet").to_pandas()
    n = record["counts"]["vertices"]
    with bp_reader(tmp_path / "g" / "graph.bp") as reader:
        assert int(reader.read("n")) == n
        row_ptr, col_idx, cost = reader.read("row_ptr"), reader.read("col_idx"), reader.read("cost")
        assert reader.read_attribute("graph_digest") == record["graph_digest"]
        assert list(reader.read_attribute("edge_kinds")) == [
            "concept_concept",
            "concept_abstract",
            "abstract_abstract",
        ]
    assert row_ptr.dtype == np.int64 and col_idx.dtype == np.int64 and cost.dtype == np.float32
    from_bp = scipy.sparse.csr_matrix((cost, col_idx, row_ptr), shape=(n, n)).toarray()
    expected = np.zeros((n, n), np.float32)
    expected[edges["src"], edges["dst"]] = edges["cost"]
    expected[edges["dst"], edges["src"]] = edges["cost"]
    np.testing.assert_array_equal(from_bp, expected)
    assert len(col_idx) == 2 * len(edges)
    for row in range(n):  # columns sorted, no diagonal
        cols = col_idx[row_ptr[row] : row_ptr[row + 1]]
        assert np.all(np.diff(cols) > 0) and row not in cols
    (n2, *_), attrs = read_graph_bp(tmp_path / "g" / "graph.bp")
    assert n2 == n and attrs["n_edges"] == len(edges) and attrs["n_vertices"] == n
    assert attrs["weight_scheme"] == weights.WEIGHT_SCHEME
    # the digest is reproducible from the Parquet tables alone
    keys = pq.read_table(tmp_path / "g" / "vertices.parquet").column("key").to_pylist()
    recomputed = graph_digest(
        keys,
        edges["src"].to_numpy(),
        edges["dst"].to_numpy(),
        kind_codes(edges["kind"].tolist()),
        edges["cost"].to_numpy(),
    )
    assert recomputed == record["graph_digest"]


def test_digest_changes_with_a_cost():
    keys = ["C1", "C2", "C3"]
    src, dst, kinds = np.array([0, 1]), np.array([1, 2]), np.zeros(2, np.uint8)
    base = graph_digest(keys, src, dst, kinds, np.array([0.5, 1.0], np.float32))
    assert base == graph_digest(keys, src[::-1], dst[::-1], kinds, np.array([1.0, 0.5], np.float32))
    assert base != graph_digest(keys, src, dst, kinds, np.array([0.5, 1.5], np.float32))


def test_symmetric_csr_rejects_bad_edges():
    with pytest.raises(ValueError):
        symmetric_csr(3, np.array([1]), np.array([1]), np.array([0.0]))
    with pytest.raises(ValueError):
        symmetric_csr(3, np.array([0, 0]), np.array([1, 1]), np.array([0.0, 1.0]))


def test_missing_table_and_bad_config_are_clear_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="predications.parquet"):
        build_graph(tmp_path / "empty", tmp_path / "g", {"edge_kinds": ["concept_concept"]})
    with pytest.raises(ValueError, match="edge_kinds"):
        graph_config({"edge_kinds": ["concept_concept", "bogus"]})
    with pytest.raises(ValueError, match="min_support"):
        graph_config({"min_support": 0})
    with pytest.raises(ValueError, match=r"graph: Additional properties are not allowed \('min_suport'"):
        graph_config({"min_suport": 2})


def test_build_graph_command(tables, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("graph:\n  edge_kinds: [concept_concept]\n  min_support: 2\n")
    result = CliRunner().invoke(
        build_graph_command, ["--tables-dir", str(tables), "--out", str(tmp_path / "g"), "--config", str(config)]
    )
    assert result.exit_code == 0, result.output
    assert "2 vertices" in result.output and "1 edges" in result.output
    assert "concept_pairs_below_min_support_removed=5" in result.output
    config.write_text("graph:\n  min_support: 0\n")
    result = CliRunner().invoke(
        build_graph_command, ["--tables-dir", str(tables), "--out", str(tmp_path / "g2"), "--config", str(config)]
    )
    assert result.exit_code == 2 and "min_support" in result.output


def test_out_of_order_predication_ids_are_counted(tmp_path):
    import pyarrow as pa

    from pipeline.builds.tables import PREDICATIONS

    tables = tmp_path / "t"
    tables.mkdir()
    rows = {
        "predication_id": [2, 1, 2],
        "doc_id": ["PMID:1"] * 3,
        "sentence_id": [1, 1, 1],
        "predicate": ["X"] * 3,
        "subject_cui": [A, B, A],
        "object_cui": [B, C, C],
        "subject_novelty": [True] * 3,
        "object_novelty": [True] * 3,
    }
    pq.write_table(pa.table(rows, schema=PREDICATIONS), tables / "predications.parquet")
    record = build_graph(tables, tmp_path / "g", {"edge_kinds": ["concept_concept"]})
    # 2, 1, 2: one step down; the split predication 2 is then counted as two predications
    assert record["counts"]["predication_rows_out_of_order"] == 1
    assert record["counts"]["predications_used"] == 3


# --- concept--abstract counting: the merge's sorted, distinct mentions and anything else -------


def _random_mentions(rng: np.random.Generator, rows: int) -> pd.DataFrame:
    """Mentions with repeated (doc, cui) pairs and a few non-positive counts."""
    return pd.DataFrame(
        {
            "doc_id": [f"PMID:{d}" for d in rng.integers(1, 400, rows)],
            "cui": [f"C{c:07d}" for c in rng.integers(1, 60, rows)],
            "count": rng.integers(-1, 5, rows),
        }
    )


def _expected_occurrence(frame: pd.DataFrame) -> dict[tuple[str, str], float]:
    """concept--abstract weights computed independently with pandas."""
    kept = frame[frame["count"] > 0]
    per_pair = kept.groupby(["cui", "doc_id"])["count"].sum()
    per_doc = kept.groupby("doc_id")["count"].sum()
    return {(cui, doc): count / per_doc[doc] for (cui, doc), count in per_pair.items()}


@pytest.mark.parametrize(
    "layout", ["sorted_distinct", "order_breaks_midway", "duplicates_midway", "shuffled_with_duplicates"]
)
def test_concept_abstract_weights_whatever_the_mention_order(tmp_path, layout):
    rng = np.random.default_rng()
    raw = _random_mentions(rng, 3000)
    summed = raw.groupby(["doc_id", "cui"], as_index=False)["count"].sum().sort_values(["doc_id", "cui"])
    if layout == "sorted_distinct":  # what merge writes: one sorted pass, no re-sort
        frame = summed
    elif layout == "order_breaks_midway":  # a later batch starts before the previous one ended
        half = len(summed) // 2
        frame = pd.concat(
            [summed.iloc[:half], summed.iloc[half - 40 : half - 20].assign(count=0), summed.iloc[half:]]
        )
    elif layout == "duplicates_midway":  # a pair split over two rows (in order otherwise)
        parts = summed.iloc[[len(summed) // 2]].assign(count=1)
        frame = pd.concat([summed, parts]).sort_values(["doc_id", "cui"], kind="stable")
    else:
        frame = raw.sample(frac=1, random_state=int(rng.integers(1 << 31)))
    expected = _expected_occurrence(frame)
    tables = tmp_path / "tables"
    tables.mkdir()
    pq.write_table(
        pa.Table.from_pandas(frame, preserve_index=False).cast(MENTIONS), tables / "mentions.parquet"
    )
    record = build_graph(tables, tmp_path / "graph", {"edge_kinds": ["concept_abstract"]}, batch_rows=97)

    edges = _edges_by_key(tmp_path / "graph")
    assert set(edges) == set(expected)
    for key, (kind, weight, _) in edges.items():
        assert kind == "concept_abstract"
        assert weight == pytest.approx(expected[key], rel=1e-12)
    assert record["counts"]["concept_abstract_pairs"] == len(expected)
    assert record["counts"]["mention_rows"] == len(frame)
    assert record["counts"]["mention_rows_nonpositive_removed"] == int((frame["count"] <= 0).sum())


# --- the partitioned assembly (graphs over the memory budget) ----------------------------------


def _random_tables(tables: Path, seed: int, repeats: bool) -> Path:
    """Predications, mentions (with repeated pairs and non-positive counts when ``repeats``),
    citations (with self-citations and both directions) and concepts, for the two assemblies."""
    rng = np.random.default_rng(seed)
    tables.mkdir(parents=True, exist_ok=True)
    rows = 4000
    pid = np.sort(rng.integers(1, 1500, rows))
    subject = [f"C{c:07d}" for c in rng.integers(1, 90, rows)]
    obj = [f"C{c:07d}" for c in rng.integers(1, 90, rows)]
    from pipeline.builds.tables import CITATIONS, CONCEPTS, PREDICATIONS

    pq.write_table(
        pa.table(
            {"predication_id": pid, "doc_id": [f"PMID:{d}" for d in rng.integers(1, 700, rows)],
             "sentence_id": pid, "predicate": ["TREATS"] * rows, "subject_cui": subject, "object_cui": obj,
             "subject_novelty": [True] * rows, "object_novelty": [True] * rows},
            schema=PREDICATIONS,
        ),
        tables / "predications.parquet",
    )  # fmt: skip
    mentions = _random_mentions(rng, 6000)
    if not repeats:
        mentions = mentions.groupby(["doc_id", "cui"], as_index=False)["count"].sum().sort_values(["doc_id", "cui"])
    pq.write_table(pa.Table.from_pandas(mentions, preserve_index=False).cast(MENTIONS), tables / "mentions.parquet")
    citing = [f"PMID:{d}" for d in rng.integers(1, 900, 3000)]
    cited = [f"PMID:{d}" for d in rng.integers(1, 900, 3000)]
    pq.write_table(pa.table({"citing": citing, "cited": cited}, schema=CITATIONS), tables / "citations.parquet")
    cuis = [f"C{c:07d}" for c in range(1, 95)]
    pq.write_table(
        pa.table({"cui": cuis, "name": [f"concept {c}" for c in cuis], "semtypes": [["dsyn"]] * len(cuis)},
                 schema=CONCEPTS),
        tables / "concepts.parquet",
    )  # fmt: skip
    return tables


# The two smallest budgets spill hundreds of partitions (5-8 s each): the full suite runs them.
@pytest.mark.parametrize(
    "seed,repeats,budget_kib",
    [(1, False, 40), pytest.param(2, True, 40, marks=pytest.mark.slow), (3, True, 400),
     pytest.param(4, False, 4, marks=pytest.mark.slow)],
)  # fmt: skip
def test_partitioned_assembly_equals_the_in_memory_one_bit_for_bit(tmp_path, seed, repeats, budget_kib):
    """A budget far below the graph forces the disk partitions: vertices, edges, graph.bp and the
    digest must be exactly those of the in-memory assembly."""
    tables = _random_tables(tmp_path / "tables", seed, repeats)
    reference = build_graph(tables, tmp_path / "memory", {"graph": {}}, tmp_path / "memory-co", batch_rows=700)
    spilled = build_graph(
        tables, tmp_path / "disk",
        {"graph": {}, "resources": {"memory_gib": budget_kib / 2**20, "spill_dir": str(tmp_path / "spill")}},
        tmp_path / "disk-co", batch_rows=700,
    )  # fmt: skip
    assert spilled["cooccurrence"]["graph_digest"] == reference["cooccurrence"]["graph_digest"]
    alone = build_cooccurrence_graph(
        tables, tmp_path / "disk-alone",
        {"graph": {}, "resources": {"memory_gib": budget_kib / 2**20, "spill_dir": str(tmp_path / "spill")}}, batch_rows=700,
    )  # fmt: skip
    assert alone["graph_digest"] == reference["cooccurrence"]["graph_digest"]
    _same_graph_files(tmp_path / "disk-alone", tmp_path / "memory-co")
    for name in ("vertices.parquet", "edges.parquet"):
        assert pq.read_table(tmp_path / "disk-co" / name).equals(pq.read_table(tmp_path / "memory-co" / name))
    assert "graph_partitions" not in reference["counts"]
    assert spilled["counts"].pop("graph_partitions") > 1
    assert spilled["graph_digest"] == reference["graph_digest"]
    assert spilled["counts"] == reference["counts"]
    for name in ("vertices.parquet", "edges.parquet"):
        assert pq.read_table(tmp_path / "disk" / name).equals(pq.read_table(tmp_path / "memory" / name)), name
    (n, row_ptr, col_idx, cost), attributes = read_graph_bp(tmp_path / "disk" / "graph.bp")
    (n_ref, row_ptr_ref, col_ref, cost_ref), attributes_ref = read_graph_bp(tmp_path / "memory" / "graph.bp")
    assert n == n_ref and np.array_equal(row_ptr, row_ptr_ref) and np.array_equal(col_idx, col_ref)
    assert np.array_equal(cost.view(np.uint32), cost_ref.view(np.uint32))
    assert attributes["graph_digest"] == attributes_ref["graph_digest"] == reference["graph_digest"]
    assert not any((tmp_path / "spill").iterdir())  # the partitions are removed afterwards


def test_the_path_index_beside_the_write_is_the_one_built_after_it(tmp_path):
    """Where the graph fits in memory twice, its path index and query sample are built while
    edges.parquet is still being encoded; where it fits only once, after the write. Same index,
    same example query, same files either way."""
    tables = _random_tables(tmp_path / "tables", 5, False)
    beside = build_graph(tables, tmp_path / "beside", {"graph": {}}, batch_rows=700)
    once = beside["counts"]["edges"] * IN_MEMORY_BYTES_PER_EDGE * 1.5  # fits once, not twice
    after = build_graph(tables, tmp_path / "after", {"graph": {}, "resources": {"memory_gib": once / 2**30}},
                        batch_rows=700)  # fmt: skip
    assert "write_edges" in beside["timings"] and "write_edges" not in after["timings"]
    assert "graph_partitions" not in after["counts"]  # assembled in memory all the same
    timed = ("build_seconds", "created", "sampled_queries")
    assert {k: v for k, v in beside["path_index"].items() if k not in timed} == \
        {k: v for k, v in after["path_index"].items() if k not in timed}  # fmt: skip
    example = beside["path_index"]["sampled_queries"]["example"]
    assert example == after["path_index"]["sampled_queries"]["example"] and example is not None
    for name in ("vertices.parquet", "edges.parquet"):
        assert (tmp_path / "beside" / name).read_bytes() == (tmp_path / "after" / name).read_bytes()
    assert beside["graph_digest"] == after["graph_digest"]


@pytest.mark.parametrize("assembly", ["index beside the write", "index after the write", "partitioned"])
def test_the_full_graph_line_counts_each_phase_to_the_end(tmp_path, monkeypatch, assembly):
    """The line moves while the tables are read, then at each step after them (the vertices
    numbered, the edges sorted, the files written, the path index), never back, and is at
    100 % when it says it is done; its last line says the rows read."""
    import pipeline.graph.build as build_module
    from pipeline.runtime.progress import PERCENT

    tables = _random_tables(tmp_path / "tables", 6, False)
    edges = build_graph(tables, tmp_path / "sized", {"graph": {}}, batch_rows=700)["counts"]["edges"]
    memory_gib = {"index beside the write": None, "index after the write": edges * IN_MEMORY_BYTES_PER_EDGE * 1.5 / 2**30,
                  "partitioned": 40 / 2**20}[assembly]  # fmt: skip
    resources = {} if memory_gib is None else {"resources": {"memory_gib": memory_gib, "spill_dir": str(tmp_path / "spill")}}
    recorded = RecordedLines()
    monkeypatch.setattr(build_module, "Progress", recorded)
    record = build_graph(tables, tmp_path / "graph", {"graph": {}, **resources}, batch_rows=700)
    assert ("graph_partitions" in record["counts"]) == (assembly == "partitioned")
    assert ("write_edges" in record["timings"]) == (assembly == "index beside the write")

    assert [(line.total, line.unit) for line in recorded.lines] == [(100, PERCENT)]
    done = recorded.done
    assert done == sorted(done) and done[-1] == pytest.approx(100.0)
    stages = recorded.stages()
    reading = stages[: stages.index("numbering the vertices")]
    assert reading == ["concept_concept (predications)", "concept_abstract (mentions)", "abstract_abstract (citations)"]
    assert max(value for stage, value in recorded.reports if stage in reading) == pytest.approx(100 * GRAPH_SHARES["read"])
    after = stages[len(reading):]
    assert after == ["numbering the vertices", "sorting the edges", "writing the graph", "indexing the paths",
                     "sampling queries"]  # fmt: skip
    rows = sum(pq.ParquetFile(tables / f"{name}.parquet").metadata.num_rows for name in ("predications", "mentions", "citations"))
    assert recorded.stream.getvalue().splitlines()[-1].startswith(
        f"litpath build-graph: {record['counts']['vertices']:,} vertices, {record['counts']['edges']:,} edges, "
        f"{rows:,} rows read, done in ")  # fmt: skip
    assert sum(GRAPH_SHARES.values()) == pytest.approx(1.0)


def test_cli_build_graph_keeps_to_the_configured_memory_budget(tmp_path):
    """`litpath build-graph --config <build config>` must hand the config's `resources` to the
    stage (it once passed only the graph section, so the budget was always the default)."""
    from click.testing import CliRunner

    from pipeline.graph.commands import build_graph_command

    tables = _random_tables(tmp_path / "tables", 5, True)
    config = tmp_path / "config.yaml"
    config.write_text(
        f"graph: {{min_support: 1}}\nresources: {{memory_gib: {40 / 2**20}, spill_dir: {tmp_path / 'spill'}}}\n"
    )
    result = CliRunner().invoke(
        build_graph_command, ["--tables-dir", str(tables), "--out", str(tmp_path / "g"), "--config", str(config)]
    )
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "g" / "graph_counts.json").read_text())
    assert record["counts"]["graph_partitions"] > 1
    assert (tmp_path / "spill").is_dir() and not any((tmp_path / "spill").iterdir())


def test_the_full_graph_from_the_cooccurrence_graph_equals_the_counted_one(tables, tmp_path):
    """The hand-made tables, and one more predication of a concept with itself: that concept is on
    no co-occurrence edge and in no mention, and ``concepts_seen`` still counts it when the edges
    are taken."""
    predications = pq.read_table(tables / "predications.parquet")
    extra = predications.slice(0, 1).to_pylist()[0]
    extra.update(predication_id=10**6, subject_cui="C9999999", object_cui="C9999999")
    pq.write_table(pa.concat_tables([predications, pa.Table.from_pylist([extra], schema=predications.schema)]),
                   tables / "predications.parquet")  # fmt: skip
    counted = build_graph(tables, tmp_path / "counted", {})
    assert counted["counts"]["concepts_seen"] > counted["counts"]["concept_vertices"]
    build_cooccurrence_graph(tables, tmp_path / "cooccurrence", {})
    taken = build_graph(tables, tmp_path / "taken", {}, cooccurrence_from=tmp_path / "cooccurrence")
    assert taken["concept_concept_edges"].startswith("taken from the co-occurrence graph")
    assert taken["counts"] == counted["counts"] and taken["graph_digest"] == counted["graph_digest"]
    for name in ("vertices.parquet", "edges.parquet"):
        assert pq.read_table(tmp_path / "taken" / name).equals(pq.read_table(tmp_path / "counted" / name))
    with pytest.raises(ValueError, match="either written beside the full graph or read"):
        build_graph(tables, tmp_path / "both", {}, tmp_path / "co2", cooccurrence_from=tmp_path / "cooccurrence")

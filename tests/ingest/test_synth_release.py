"""The calibrated synth profile (pipeline.ingest.synth_release) against the figures it is fitted to:
a SemMedDB release's rows per predication and bytes per CSV row, the COAST paper's paper--concept
relations per predication, and the concept graph the model predicts for a sample of that size
(expected_graph, which draws only the index arrays, independently of the writer)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.ingest.run import ingest_file
from pipeline.ingest.synth import generate_corpus
from pipeline.ingest.synth_release import (
    CSV_BYTES_PER_ROW,
    PER_PREDICATION,
    RELEASE_ROWS,
    expected_graph,
    pair_rank_probability,
    zipf_ranks,
)

SCALE = 60_000
# Stated tolerances: rows per predication within 2 % (Poisson draws around exact targets), bytes
# per row within 10 % (text lengths are drawn, not copied), graph sizes within 5 % of the model's.
ROWS_TOLERANCE = 0.02
BYTES_TOLERANCE = 0.10
GRAPH_TOLERANCE = 0.05


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("calibrated")
    manifest = generate_corpus(root, SCALE, seed=11, profile="calibrated")
    return root / "semmeddb", manifest


def _lines_and_bytes(path: Path) -> tuple[int, int]:
    data = gzip.open(path).read() if path.suffix == ".gz" else path.read_bytes()
    return data.count(b"\n"), len(data)


def _close(value: float, target: float, tolerance: float) -> bool:
    return abs(value - target) <= tolerance * target


@pytest.mark.slow  # a calibrated corpus written and read (about 6 s): the full suite only
@pytest.mark.parametrize(
    ("table", "file", "per_predication"),
    [
        ("PREDICATION", "PREDICATION.csv.gz", 1.0),
        ("SENTENCE", "SENTENCE.csv.gz", PER_PREDICATION["sentences"]),
        ("ENTITY", "ENTITY.csv.gz", PER_PREDICATION["entities"]),
        ("CITATIONS", "CITATIONS.csv", PER_PREDICATION["papers"]),
    ],
)
def test_rows_and_row_sizes_follow_a_release(corpus, table, file, per_predication):
    folder, manifest = corpus
    lines, size = _lines_and_bytes(folder / f"semmedVER43_R_{file}")
    bad = manifest["expected_quarantine"].get(f"semmedVER43_R_{file}", 0)  # invalid rows added on top
    assert _close((lines - bad) / SCALE, per_predication, ROWS_TOLERANCE), (table, lines)
    assert _close(size / lines, CSV_BYTES_PER_ROW[table], BYTES_TOLERANCE), (table, size / lines)
    # the ratios are the release's own (the load log's row counts)
    assert per_predication == pytest.approx(RELEASE_ROWS[table] / RELEASE_ROWS["PREDICATION"])


@pytest.mark.slow  # a calibrated corpus written and read (about 6 s): the full suite only
def test_papers_and_concept_graph_follow_the_model(corpus, tmp_path):
    folder, manifest = corpus
    stats = manifest["stats"]
    assert _close(stats["papers_with_predications"] / SCALE, PER_PREDICATION["papers_with_predications"], ROWS_TOLERANCE)
    ingest_file("semmeddb_predication", folder / "semmedVER43_R_PREDICATION.csv.gz", tmp_path / "ingest")
    rows = pq.read_table(tmp_path / "ingest" / "predications.parquet").to_pandas()
    # a gene-list argument becomes one row per gene; the model's relations are per concept pair
    pairs = {tuple(sorted(p)) for p in zip(rows.subject_cui, rows.object_cui, strict=True)}
    paper_concept = set(zip(rows.doc_id, rows.subject_cui, strict=True)) | set(zip(rows.doc_id, rows.object_cui, strict=True))
    concepts = set(rows.subject_cui) | set(rows.object_cui)
    model = expected_graph(SCALE, seed=3)
    # the COAST paper's 196M paper-concept relations for 126M predications: 1.55 per predication
    assert _close(len(paper_concept) / SCALE, PER_PREDICATION["paper_concept"], 0.03), len(paper_concept)
    assert _close(len(pairs), model["concept_concept"], GRAPH_TOLERANCE), (len(pairs), model)
    assert _close(len(concepts), model["concepts"], GRAPH_TOLERANCE), (len(concepts), model)


def test_zipf_ranks_have_their_stated_probabilities():
    """The inverse-CDF draw against its exact probability per rank (chi-square-free: the first
    ranks carry most mass and are checked one by one, the tail in bins)."""
    import numpy as np

    rng = np.random.default_rng(2)
    universe, n = 1_000, 2_000_000
    ranks = zipf_ranks(rng.random(n), universe)
    assert ranks.min() >= 0 and ranks.max() < universe
    observed = np.bincount(ranks, minlength=universe) / n
    expected = pair_rank_probability(np.arange(universe), universe)
    assert expected.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(observed[:20], expected[:20], rtol=0.02)
    bins = np.arange(20, universe + 1, 98)
    np.testing.assert_allclose(np.add.reduceat(observed[20:], bins[:-1] - 20), np.add.reduceat(expected[20:], bins[:-1] - 20), rtol=0.05)


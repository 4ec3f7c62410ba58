from __future__ import annotations

import gzip
import hashlib
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline.ingest.run import ingest_file
from pipeline.ingest.synth import generate_corpus, read_anchor_concepts
from pipeline.merge import merge_ingested


def _digests(root: Path) -> dict[str, str]:
    """Content digests; gzip members are compared decompressed (zlib builds may differ)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(
            gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
        ).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    manifest = generate_corpus(root / "a", scale=3000, seed=5, n_update_files=2)
    return root, manifest


def test_deterministic_for_a_seed(corpus, tmp_path):
    root, manifest = corpus
    again = generate_corpus(tmp_path / "b", scale=3000, seed=5, n_update_files=2)
    assert again == manifest
    assert _digests(root / "a") == _digests(tmp_path / "b")
    other = generate_corpus(tmp_path / "c", scale=3000, seed=6, n_update_files=2)
    assert _digests(root / "a") != _digests(tmp_path / "c") and other["files"] == manifest["files"]


def test_readers_accept_everything_but_the_deliberate_quirks(corpus, tmp_path):
    root, manifest = corpus
    kinds = Counter(f["kind"] for f in manifest["files"])
    assert (
        kinds["pubmed_xml"] == 2 + 2 and kinds["semmeddb_predication"] == 1 and kinds["cord19_metadata"] == 1
    )
    dirs = []
    for i, entry in enumerate(manifest["files"]):
        out = tmp_path / f"{i:02d}"
        counts = ingest_file(entry["kind"], root / "a" / entry["path"], out)
        name = Path(entry["path"]).name
        assert counts.rows_quarantined == manifest["expected_quarantine"].get(name, 0), name
        dirs.append(out)
    pred = pq.read_table(tmp_path / "03" / "predications.parquet")
    assert len(set(pred.column("predication_id").to_pylist())) == manifest["stats"]["predications"] == 3000
    cuis = pred.column("subject_cui").to_pylist() + pred.column("object_cui").to_pylist()
    assert any(c.startswith("GENE:") for c in cuis)
    frequencies = sorted(Counter(cuis).values(), reverse=True)
    assert frequencies[0] > 20 * frequencies[len(frequencies) // 2]  # Zipf-skewed
    names = pq.read_table(tmp_path / "03" / "concepts.parquet").column("name").to_pylist()
    assert (
        any("ö" in n or "é" in n for n in names)
        and any("'" in n for n in names)
        and any('"' in n for n in names)
    )

    result = merge_ingested(dirs, tmp_path / "merged", {"mention_source": "both"})
    assert result["rows_quarantined"] == sum(manifest["expected_quarantine"].values())
    assert result["merge"]["cord_papers_matched_by_doi"] > 0
    assert result["merge"]["documents_removed_by_deletion"] > 0
    assert result["merge"].get("entity_mentions_unresolved", 0) == 0
    docs = pq.read_table(tmp_path / "merged" / "documents.parquet").to_pandas()
    assert docs["doc_id"].is_unique
    assert docs["title"].str.startswith("[Revised]").any()
    assert (docs["cord_uid"].notna() & docs["doc_id"].str.startswith("PMID:")).sum() >= 2


def test_bundled_sample_is_current(tmp_path):
    """config/sample/ is the generator's output with the SPOKE sample's CUIs as anchors.

    Regenerate it if this fails: ``litpath synth --profile compact --out config/sample --scale 2000 --seed 1
    --update-files 1 --anchors config/sample/spoke/anchor_concepts.tsv``.
    """
    sample = Path(__file__).resolve().parents[2] / "config" / "sample"
    anchors = read_anchor_concepts(sample / "spoke" / "anchor_concepts.tsv")
    manifest = generate_corpus(tmp_path, scale=2000, seed=1, n_update_files=1, anchors=anchors)
    generated = {f["path"] for f in manifest["files"]} | {"manifest.json"}
    bundled = {k: v for k, v in _digests(sample).items() if k in generated}
    assert bundled == _digests(tmp_path)
    assert sum(p.stat().st_size for p in sample.rglob("*") if p.is_file()) < 1_000_000

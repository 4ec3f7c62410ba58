"""The mentions step sizes its doc_id ranges by the rows its mention source reads: ENTITY rows,
ten times the predication arguments in a release, must not split a merge that never reads them."""

from __future__ import annotations

import pytest
from support.data import DATA

from pipeline.ingest.run import ingest_file
from pipeline.merge import mentions as merge_mentions
from pipeline.merge import merge_ingested
from pipeline.merge.inputs import MergeInputs

INPUTS = {
    "pred": ("semmeddb_predication", DATA / "semmeddb" / "PREDICATION.csv"),
    "sent": ("semmeddb_sentence", DATA / "semmeddb" / "SENTENCE.csv"),
    "ent": ("semmeddb_entity", DATA / "semmeddb" / "ENTITY.csv"),
}


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    root = tmp_path_factory.mktemp("ingested")
    counts = {name: ingest_file(kind, path, root / name) for name, (kind, path) in INPUTS.items()}
    return root, counts


@pytest.mark.parametrize(
    ("source", "held"),
    [("predications", ["mentions"]), ("entities", ["entity_mentions"]),
     ("both", ["mentions", "entity_mentions", "predications"])],
)  # fmt: skip
def test_mention_estimate_counts_only_the_rows_the_source_reads(ingested, tmp_path, monkeypatch, source, held):
    root, _ = ingested
    estimates: dict[str, float] = {}
    partitions = MergeInputs.partitions

    def recording(self, need_bytes, counter):
        estimates[counter] = need_bytes
        return partitions(self, need_bytes, counter)

    monkeypatch.setattr(MergeInputs, "partitions", recording)
    result = merge_ingested([root / name for name in INPUTS], tmp_path / "out", {"mention_source": source})
    rows = {
        name: sum(f["tables"].get(name, 0) for f in result["files"]) for name in ("mentions", "entity_mentions", "predications")
    }
    assert rows["entity_mentions"] > 0 and rows["mentions"] > 0  # the corpus has both sources
    assert estimates["mention_partitions"] == sum(rows[name] for name in held) * merge_mentions.MERGE_BYTES_PER_MENTION

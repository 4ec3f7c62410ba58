"""The merge over its memory budget: mentions summed, and document records merged, in doc_id-range
partitions on disk give the same tables, bit for bit, as in memory, for every mention source."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from pipeline.ingest import merge
from pipeline.ingest.merge import merge_ingested
from pipeline.ingest.run import ingest_file
from pipeline.synth import generate_corpus


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    """A small synthetic corpus (with a PubMed update file: deletions and revisions) ingested file by file."""
    corpus = tmp_path_factory.mktemp("corpus")
    manifest = generate_corpus(corpus, 3000, seed=5, n_update_files=2)
    out = tmp_path_factory.mktemp("ingested")
    folders = []
    for i, entry in enumerate(manifest["files"]):
        folder = out / f"{i:03d}"
        ingest_file(entry["kind"], corpus / entry["path"], folder)
        folders.append(folder)
    return folders


@pytest.mark.parametrize("stream_rows", [1 << 20, 97])
@pytest.mark.parametrize("mention_source", ["predications", "entities", "both"])
def test_partitioned_mentions_equal_the_in_memory_sum(ingested, tmp_path, monkeypatch, mention_source, stream_rows):
    """stream_rows 97: the partitioned merge reads each mentions file (and samples its doc_ids for
    the partition bounds) in many small batches, as it does a file of a full release."""
    monkeypatch.setattr(merge, "MERGE_STREAM_ROWS", stream_rows)
    reference = merge_ingested(ingested, tmp_path / "memory", {"mention_source": mention_source})
    spilled = merge_ingested(
        ingested,
        tmp_path / "disk",
        {"mention_source": mention_source,
         "resources": {"memory_gib": 256 / 2**20, "spill_dir": str(tmp_path / "spill")}},
    )  # fmt: skip
    assert spilled["merge"].pop("mention_partitions") > 2
    assert spilled["merge"].pop("document_partitions") > 2
    assert "mention_partitions" not in reference["merge"] and "document_partitions" not in reference["merge"]
    assert spilled["merge"] == reference["merge"]
    assert spilled["tables"] == reference["tables"]
    memory = pq.read_table(tmp_path / "memory" / "mentions.parquet")
    disk = pq.read_table(tmp_path / "disk" / "mentions.parquet")
    assert memory.num_rows > 1000 and disk.equals(memory)
    documents = [pq.read_table(tmp_path / where / "documents.parquet") for where in ("memory", "disk")]
    assert documents[0].num_rows > 500 and documents[1].equals(documents[0])
    assert not any((tmp_path / "spill").iterdir())  # partitions removed
    on_disk = json.loads((tmp_path / "disk" / "counts.json").read_text())
    assert on_disk["merge"]["mentions_counted"] == reference["merge"]["mentions_counted"]

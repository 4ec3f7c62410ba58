"""The merge over its memory budget: mentions summed, and document records merged, in doc_id-range
partitions on disk, ENTITY rows joined to their papers in sentence_id-range partitions, and
citation pairs deduplicated in citing-range partitions, give the same tables, bit for bit, as in
memory, for every mention source."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from support.data import rows

from pipeline.builds import tables
from pipeline.ingest.run import ingest_file
from pipeline.ingest.synth import generate_corpus
from pipeline.merge import documents, entities, mentions, merge_ingested, partitions

TINY_BUDGET_GIB = 256 / 2**20  # 256 KiB: every step of the merge works in partitions


def merged_in_memory_and_spilled(folders, tmp_path, ingest: dict) -> tuple[dict, dict]:
    """The merge's counts with the default budget (in memory) and with TINY_BUDGET_GIB (spilled
    to tmp_path/spill), with the same ``ingest`` settings: (reference, spilled)."""
    reference = merge_ingested(folders, tmp_path / "memory", dict(ingest))
    resources = {"memory_gib": TINY_BUDGET_GIB, "spill_dir": str(tmp_path / "spill")}
    spilled = merge_ingested(folders, tmp_path / "disk", {**ingest, "resources": resources})
    return reference, spilled


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
    monkeypatch.setattr(partitions, "MERGE_STREAM_ROWS", stream_rows)
    reference, spilled = merged_in_memory_and_spilled(ingested, tmp_path, {"mention_source": mention_source})
    assert spilled["merge"].pop("mention_partitions") > 2
    assert spilled["merge"].pop("document_partitions") > 2
    assert spilled["merge"].pop("citation_partitions") > 2
    if mention_source != "predications":
        assert spilled["merge"].pop("entity_join_partitions") > 2
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


def _sentence_line(sentence_id: int, doc_id: str) -> str:
    return f'"{sentence_id}","{doc_id.removeprefix("PMID:")}","ab","9","0","Added.","6",\\N,\\N\n'


def _entity_line(entity_id: int, sentence_id: int, cui: str) -> str:
    return f'"{entity_id}","{sentence_id}","{cui}","n","dsyn",\\N,\\N,"t","1000","0","1"\n'


@pytest.fixture(scope="module")
def with_orphans(ingested, tmp_path_factory):
    """``ingested`` with a second SENTENCE file and a second ENTITY file, both before the update
    files (whose deletions then apply to them). The new ENTITY rows name sentences of the
    first SENTENCE file (some in papers the updates delete), new sentences of the second, one
    sentence both files place (in different papers: the smaller doc_id wins), and sentences in
    no SENTENCE file, in the gaps of the sentence ids and past them (quarantined by the merge).
    Returns (folders, orphan sentence ids, orphan ENTITY rows)."""
    root = tmp_path_factory.mktemp("orphans")
    def column(name: str, column: str) -> list:
        return [v for f in ingested if (f / name).exists() for v in pq.read_table(f / name).column(column).to_pylist()]

    doc_of = dict(zip(column("sentences.parquet", "sentence_id"), column("sentences.parquet", "doc_id"), strict=True))
    known = sorted(doc_of)
    cuis = sorted(set(column("entity_mentions.parquet", "cui")))[:7]
    deleted = set(column("deletions.parquet", "doc_id"))
    in_deleted = [s for s in known if doc_of[s] in deleted][:3]
    assert in_deleted
    new = [known[-1] + 1 + i for i in range(4)]
    shared = known[len(known) // 2]
    smaller = min(doc_of.values())
    assert smaller < doc_of[shared]
    gaps = sorted(set(range(known[0], known[-1])) - set(known))
    orphans = [gaps[0], gaps[len(gaps) // 2], known[-1] + 1000, 10**9]
    sentence_text = "".join(_sentence_line(s, doc_of[known[i]]) for i, s in enumerate(new))
    sentence_text += _sentence_line(shared, smaller)
    placed = known[::37] + in_deleted + new + [shared]
    entity_ids = iter(range(900_000, 1_000_000))
    entity_text = "".join(_entity_line(next(entity_ids), s, cuis[i % len(cuis)]) for i, s in enumerate(placed))
    # two rows for each orphan sentence, one of them twice the same concept
    orphan_rows = [(s, cui) for s in orphans for cui in (cuis[0], cuis[1])] + [(orphans[0], cuis[0])]
    entity_text += "".join(_entity_line(next(entity_ids), s, cui) for s, cui in orphan_rows)
    extra = []
    for kind, name, text in (
        ("semmeddb_sentence", "SENTENCE", sentence_text),
        ("semmeddb_entity", "ENTITY", entity_text),
    ):
        (root / f"{name}.csv").write_text(text)
        ingest_file(kind, root / f"{name}.csv", root / name.lower())
        extra.append(root / name.lower())
    first_update = next(i for i, f in enumerate(ingested) if (f / "deletions.parquet").exists())
    return ingested[:first_update] + extra + ingested[first_update:], orphans, len(orphan_rows)


@pytest.mark.parametrize("sum_in_memory", [False, True])
@pytest.mark.parametrize("mention_source", ["entities", "both"])
def test_partitioned_entity_join_equals_the_in_memory_join(
    with_orphans, tmp_path, monkeypatch, mention_source, sum_in_memory
):
    """ENTITY rows joined to their papers in sentence_id ranges on disk (SENTENCE and ENTITY rows
    read 97 at a time) give the in-memory join's mentions, counts and quarantine, whether the
    mentions are then summed in doc_id ranges or in memory."""
    folders, orphans, orphan_rows = with_orphans
    monkeypatch.setattr(partitions, "MERGE_STREAM_ROWS", 97)
    if sum_in_memory:
        monkeypatch.setattr(mentions, "MERGE_BYTES_PER_MENTION", 0)
    reference, spilled = merged_in_memory_and_spilled(folders, tmp_path, {"mention_source": mention_source})
    assert spilled["merge"].pop("entity_join_partitions") > 2
    assert spilled["merge"].pop("document_partitions") > 2
    assert spilled["merge"].pop("citation_partitions") > 2
    assert ("mention_partitions" in spilled["merge"]) is not sum_in_memory
    spilled["merge"].pop("mention_partitions", None)
    assert not {"entity_join_partitions", "mention_partitions"} & set(reference["merge"])
    assert spilled["merge"] == reference["merge"]
    assert spilled["tables"] == reference["tables"]
    assert spilled["merge_quarantined"] == reference["merge_quarantined"]
    for name in ("mentions", "quarantine"):
        memory = pq.read_table(tmp_path / "memory" / f"{name}.parquet")
        assert pq.read_table(tmp_path / "disk" / f"{name}.parquet").equals(memory), name
    assert not any((tmp_path / "spill").iterdir())  # partitions removed

    # the edge cases are there: ENTITY rows of no sentence counted and quarantined, one row per
    # (file, sentence) in sentence order; ENTITY rows of deleted papers removed
    assert reference["merge"]["entity_mentions_unresolved"] == orphan_rows
    unresolved = [q for q in rows(tmp_path / "memory", "quarantine") if q["field"] == "SENTENCE_ID"]
    assert [q["raw"] for q in unresolved] == [str(s) for s in sorted(orphans)]
    assert {q["source_file"] for q in unresolved} == {"entity"}
    removed = "mentions" if mention_source == "entities" else "entity_mentions"
    assert reference["merge"][f"{removed}_removed_by_deletion"] > 0
    summed = pq.read_table(tmp_path / "memory" / "mentions.parquet")
    assert summed.num_rows > 1000 and pc.sum(summed.column("count")).as_py() > 0


def _values(folders: list, name: str, column: str) -> list:
    """A column of the folders' ``name`` tables, in folder order."""
    paths = [f / f"{name}.parquet" for f in folders if (f / f"{name}.parquet").exists()]
    return [v for path in paths for v in pq.read_table(path, columns=[column]).column(0).to_pylist()]


@pytest.fixture(scope="module")
def with_citation_edges(ingested, tmp_path_factory):
    """``ingested`` with an extra citations file before the update files (whose deletions then
    apply to it), in the ingest's layout: pairs that repeat pairs of the other files and of
    itself, pairs citing and cited by CORD-19 papers that the DOI match remaps to PubMed ids
    (and the same pairs as PubMed ids), and pairs citing and cited by papers the updates delete."""
    pairs = list(zip(_values(ingested, "citations", "citing"), _values(ingested, "citations", "cited"), strict=True))
    pmid_of_doi: dict[str, str] = {}
    doc_ids, dois = _values(ingested, "documents", "doc_id"), _values(ingested, "documents", "doi")
    for doc_id, doi in zip(doc_ids, dois, strict=True):
        if doi and doc_id.startswith("PMID:"):  # the smallest PMID of a DOI, as the merge picks it
            known = pmid_of_doi.setdefault(doi.lower(), doc_id)
            pmid_of_doi[doi.lower()] = min(known, doc_id, key=lambda d: int(d[5:]))
    cord = [
        (doc_id, pmid_of_doi[doi.lower()])
        for doc_id, doi in zip(doc_ids, dois, strict=True)
        if doc_id.startswith("CORD:") and doi and doi.lower() in pmid_of_doi
    ]
    deleted = _values(ingested, "deletions", "doc_id")
    assert len(cord) >= 3 and deleted
    extra = pairs[::7] + pairs[::11]
    extra += [(c, pairs[i][1]) for i, (c, _) in enumerate(cord)] + [(pairs[i][0], c) for i, (c, _) in enumerate(cord)]
    extra += [(p, pairs[i][1]) for i, (_, p) in enumerate(cord)] + [(pairs[i][0], p) for i, (_, p) in enumerate(cord)]
    extra += [(d, pairs[i][1]) for i, d in enumerate(deleted)] + [(pairs[i][0], d) for i, d in enumerate(deleted)]
    folder = tmp_path_factory.mktemp("extra_citations")
    table = pa.table({"citing": [a for a, _ in extra], "cited": [b for _, b in extra]}, schema=tables.CITATIONS)
    pq.write_table(table, folder / "citations.parquet")
    n = len(extra)
    (folder / "counts.json").write_text(json.dumps(
        {"kind": "citations_table", "rows_read": n, "rows_accepted": n, "rows_quarantined": 0, "tables": {"citations": n}}
    ))  # fmt: skip
    first_update = next(i for i, f in enumerate(ingested) if (f / "deletions.parquet").exists())
    return ingested[:first_update] + [folder] + ingested[first_update:]


@pytest.mark.parametrize("stream_rows", [1 << 20, 53])
def test_partitioned_citations_equal_the_in_memory_dedup(with_citation_edges, tmp_path, monkeypatch, stream_rows):
    """Citation pairs of five files routed to citing-range partitions on disk (read 53 at a time,
    or a file at a time), each deduplicated and sorted alone: the same citations table, bit for
    bit, and the same counts as the in-memory dedup, with the edge cases there."""
    monkeypatch.setattr(partitions, "MERGE_STREAM_ROWS", stream_rows)
    for module, name in (  # only the citations step spills
        (documents, "DOCUMENT_BYTE"), (mentions, "MENTION"), (entities, "SENTENCE"), (entities, "ENTITY")
    ):
        monkeypatch.setattr(module, f"MERGE_BYTES_PER_{name}", 0)
    reference, spilled = merged_in_memory_and_spilled(with_citation_edges, tmp_path, {})
    assert spilled["merge"].pop("citation_partitions") > 2
    assert spilled["merge"] == reference["merge"]
    assert spilled["tables"] == reference["tables"]
    memory = pq.read_table(tmp_path / "memory" / "citations.parquet")
    disk = pq.read_table(tmp_path / "disk" / "citations.parquet")
    assert memory.num_rows > 1000 and disk.equals(memory)
    assert not any((tmp_path / "spill").iterdir())  # partitions removed

    # the edge cases are there: duplicates across and within files, citing and cited papers
    # deleted, CORD-19 papers remapped to their PubMed ids
    counts = reference["merge"]
    assert counts["citations_deduplicated"] > 1000
    assert counts["citations_removed_by_deletion"] > 0 and counts["citations_to_deleted_removed"] > 0
    assert counts["cord_papers_matched_by_doi"] > 0
    assert not any(c.startswith("CORD:") for c in pc.unique(memory.column("citing")).to_pylist())
    sort = pc.sort_indices(memory, [("citing", "ascending"), ("cited", "ascending")])
    assert memory.take(sort).equals(memory)
    assert memory.group_by(["citing", "cited"]).aggregate([]).num_rows == memory.num_rows

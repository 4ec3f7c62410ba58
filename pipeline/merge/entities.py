"""SemMedDB ENTITY rows placed in their papers: the join of ENTITY to SENTENCE on sentence_id
that rule 4 (:mod:`pipeline.merge`) needs before it can count ENTITY mentions per paper.

An ENTITY row names its sentence only; the sentence's SENTENCE row names the paper. The join
needs both tables at once, so it is done here, not in the ingest (which reads one file per job).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.builds.layout import TableFolder
from pipeline.merge.inputs import MergeInputs
from pipeline.merge.partitions import RangePartitions, table_batches

# Peak bytes per SENTENCE row and per ENTITY row of the in-memory ENTITY-SENTENCE join (the
# sentence_id -> doc_id table and its hash aggregation; an ENTITY row read, joined, filtered and
# cleaned): at 10M predications the join of 20.1M ENTITY rows to 7.4M sentences held 3.3 GiB.
# Beyond the memory budget the join runs in sentence_id-range partitions on disk instead.
MERGE_BYTES_PER_SENTENCE = 100
MERGE_BYTES_PER_ENTITY = 160
# The columns of SENTENCE the join reads, in one schema for every SENTENCE file.
_SENTENCE_DOCS = pa.schema([("sentence_id", pa.int64()), ("doc_id", pa.string())])


def placed_entities(inputs: MergeInputs) -> Iterator[tuple[int, pa.Table]]:
    """(file index, ENTITY rows of that file placed in their papers: sentence_id, cui, count,
    doc_id) for every file with ENTITY rows; rules 1-2 not applied yet. An ENTITY row whose
    sentence is in no SENTENCE file is counted (``entity_mentions_unresolved``) and
    quarantined, one quarantine row per (file, sentence) in sentence_id order.

    In memory when the SENTENCE and ENTITY rows fit half the budget (the sum may hold its
    parts beside them); else in ``entity_join_partitions`` sentence_id ranges on disk. Why sentence_id:
    it is the join key, and an ENTITY row carries nothing else that leads to its paper, so
    the sum's doc_id ranges cannot split ENTITY rows before the join. Routing the SENTENCE
    and the ENTITY rows by the same sentence_id ranges (a batch at a time) puts every ENTITY
    row beside its sentence; each range is then joined alone, holding about 1/K of both
    tables, so the peak follows the budget and not the corpus. (Streaming ENTITY batches
    against a sentence -> doc lookup split the same way would read every lookup range once
    per batch.) The placed rows then go to the sum like any other mention part: the mentions
    table and the counts are those of the in-memory join.
    """
    need = (
        inputs.table_rows("sentences") * MERGE_BYTES_PER_SENTENCE
        + inputs.table_rows("entity_mentions") * MERGE_BYTES_PER_ENTITY
    )
    partitions = inputs.partitions(need, "entity_join_partitions")
    unresolved: dict[int, list[dict[str, Any]]] = {}
    for sentence_doc, index, entities in _join_inputs(inputs, partitions):
        yield index, _resolve(inputs, entities, sentence_doc, unresolved.setdefault(index, []))
    for index in sorted(unresolved):  # in file order, whatever order the ranges found them in
        inputs.quarantine.extend(
            {
                "source_file": inputs.file_dirs[index].name,
                "line": 0,
                "field": "SENTENCE_ID",
                "reason": f"ENTITY mention(s) of sentence {row['sentence_id']} not found in any SENTENCE file",
                "raw": str(row["sentence_id"]),
            }
            for row in unresolved[index]
        )


def _join_inputs(inputs: MergeInputs, partitions: int) -> Iterator[tuple[pa.Table | None, int, pa.Table]]:
    """(sentence_id -> doc_id, file index, ENTITY rows of that file) to join: with one partition
    the whole lookup and each file's rows; else, a sentence_id range at a time, the lookup and
    rows of that range, read back from the range files the SENTENCE and ENTITY rows were routed
    to a batch at a time."""
    if partitions == 1:
        sentence_doc = _sentence_doc(
            [pq.read_table(path, columns=_SENTENCE_DOCS.names) for path in inputs.paths("sentences")]
        )
        for index, file_dir in enumerate(inputs.file_dirs):
            entities = inputs.read(file_dir, "entity_mentions")
            if entities is not None and entities.num_rows:
                yield sentence_doc, index, entities
        return
    with inputs.spill() as folder:
        splits = inputs.splits(partitions, "sentence_id", "sentences", "entity_mentions")
        spilled = RangePartitions(folder, splits, key="sentence_id")
        for path in inputs.paths("sentences"):
            for part in table_batches(path, _SENTENCE_DOCS.names):
                spilled.add("sentences", part.select(_SENTENCE_DOCS.names).cast(_SENTENCE_DOCS))
        for index, file_dir in enumerate(inputs.file_dirs):
            path = TableFolder(file_dir).table("entity_mentions")
            for part in table_batches(path) if path.exists() else ():
                spilled.add(f"entities-{index:04d}", part)
        spilled.close()
        for k in range(spilled.k):
            sentences = spilled.read("sentences", k)
            sentence_doc = _sentence_doc([sentences] if sentences is not None else [])
            for index in range(len(inputs.file_dirs)):
                entities = spilled.read(f"entities-{index:04d}", k)
                if entities is not None and entities.num_rows:
                    yield sentence_doc, index, entities


def _sentence_doc(sentences: list[pa.Table]) -> pa.Table | None:
    """sentence_id -> doc_id from SENTENCE rows (the smallest doc_id if they disagree); None if none."""
    if not sentences:
        return None
    return (
        pa.concat_tables([part.select(_SENTENCE_DOCS.names).cast(_SENTENCE_DOCS) for part in sentences])
        .group_by("sentence_id")
        .aggregate([("doc_id", "min")])
        .rename_columns(["sentence_id", "doc_id"])
    )


def _resolve(
    inputs: MergeInputs, entities: pa.Table, sentence_doc: pa.Table | None, unresolved: list[dict[str, Any]]
) -> pa.Table:
    """The ENTITY rows whose sentence ``sentence_doc`` places in a paper, with its doc_id; the
    others counted, and (sentence_id, count) per sentence added to ``unresolved``."""
    if sentence_doc is None:
        sentence_doc = _SENTENCE_DOCS.empty_table()
    joined = entities.join(sentence_doc, "sentence_id", join_type="left outer")
    missing = joined.filter(pc.is_null(joined.column("doc_id")))
    if missing.num_rows:
        inputs.bump("entity_mentions_unresolved", missing.num_rows)
        per_sentence = missing.group_by("sentence_id").aggregate([("count", "sum")])
        unresolved.extend(per_sentence.sort_by("sentence_id").to_pylist())
    return joined.filter(pc.is_valid(joined.column("doc_id")))

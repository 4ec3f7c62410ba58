"""Rule 5 of the merge (:mod:`pipeline.merge`), the rest: predications streamed through
(filtered and remapped by rules 1-2), concepts deduplicated, and the quarantine of every file
plus the merge's own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.builds import tables
from pipeline.builds.layout import TableFolder
from pipeline.merge.documents import PaperIds
from pipeline.merge.inputs import MergeInputs, StepReads


def write_predications(inputs: MergeInputs, papers: PaperIds, path: Path) -> int:
    """Every file's predications, rules 1-2 applied, written to ``path`` a batch at a time; its rows."""
    sources = [
        (index, source)
        for index, file_dir in enumerate(inputs.file_dirs)
        if (source := TableFolder(file_dir).table("predications")).exists()
    ]
    if len(sources) == 1 and papers.untouched(sources[0][0]):
        source = sources[0][1]
        if pq.read_schema(source).equals(tables.PREDICATIONS, check_metadata=False):
            # the usual build: one SemMedDB dump, nothing deleted -- the file is the table
            shutil.copyfile(source, path)
            return pq.ParquetFile(path).metadata.num_rows
    written = 0
    told = StepReads(inputs, "predications", sum(pq.ParquetFile(source).metadata.num_rows for _, source in sources), 1.0)
    with pq.ParquetWriter(path, tables.PREDICATIONS) as writer:
        for index, source in sources:
            for batch in pq.ParquetFile(source).iter_batches(batch_size=200_000):
                table = pa.Table.from_batches([batch])
                if not papers.untouched(index):
                    table = papers.clean(table, index, "doc_id", "predications")
                writer.write_table(table.cast(tables.PREDICATIONS))
                written += table.num_rows
                told.read(batch.num_rows)
    return written


def write_concepts(inputs: MergeInputs, path: Path) -> int:
    """One row per concept written to ``path``, sorted by CUI: the first name that is not null in
    file order, the union of the semantic types; its rows."""
    by_cui: dict[str, tuple[str | None, set[str]]] = {}
    for file_dir in inputs.file_dirs:
        part = inputs.read(file_dir, "concepts")
        if part is None:
            continue
        for cui, name, semtypes in zip(
            *(part.column(c).to_pylist() for c in ("cui", "name", "semtypes")), strict=True
        ):
            known = by_cui.get(cui)
            if known is None:
                by_cui[cui] = (name, set(semtypes or ()))
            else:
                known[1].update(semtypes or ())
                if known[0] is None and name:
                    by_cui[cui] = (name, known[1])
    cuis = sorted(by_cui)
    concepts = pa.table(
        {
            "cui": cuis,
            "name": [by_cui[c][0] for c in cuis],
            "semtypes": [sorted(by_cui[c][1]) for c in cuis],
        },
        schema=tables.CONCEPTS,
    )
    pq.write_table(concepts, path)
    return concepts.num_rows


def write_quarantine(inputs: MergeInputs, path: Path) -> int:
    """Every file's quarantined rows, then the merge's own, written to ``path``; its rows."""
    parts = [
        t.cast(tables.QUARANTINE) for d in inputs.file_dirs if (t := inputs.read(d, "quarantine")) is not None
    ]
    if inputs.quarantine:
        parts.append(pa.Table.from_pylist(inputs.quarantine, schema=tables.QUARANTINE))
    quarantine = pa.concat_tables(parts) if parts else tables.QUARANTINE.empty_table()
    pq.write_table(quarantine, path)
    return quarantine.num_rows

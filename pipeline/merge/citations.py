"""Rule 5 of the merge (:mod:`pipeline.merge`), citations: the distinct (citing, cited) pairs
of every file, after rules 1-2."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.builds import tables
from pipeline.builds.layout import TableFolder
from pipeline.merge.documents import PaperIds, deleted_mask, remapped
from pipeline.merge.inputs import MergeInputs
from pipeline.merge.partitions import RangePartitions, table_batches

# Peak bytes per citation row of the in-memory dedup and sort (the running distinct pairs, each
# file's pairs beside them, the sort): at 10M predications 9.0M pairs held 1.43 GiB. Beyond the
# memory budget the pairs are deduplicated in citing-range partitions on disk instead.
MERGE_BYTES_PER_CITATION = 170
_CITATION_PAIRS = pa.schema([("citing", pa.string()), ("cited", pa.string())])
# In memory, the pairs gathered are deduplicated once they are CITATION_DEDUP_GROWTH times the
# distinct pairs of the last deduplication, and more than CITATION_DEDUP_MIN_ROWS.
CITATION_DEDUP_GROWTH = 2
CITATION_DEDUP_MIN_ROWS = 1 << 20


def write_citations(inputs: MergeInputs, papers: PaperIds, path: Path) -> int:
    """The citations table (distinct (citing, cited) pairs, sorted) written to ``path``; its rows.

    Each file's pairs are cleaned (rules 1-2 on the citing paper, the cited one remapped,
    citations to papers that stay deleted dropped), then deduplicated and sorted. In memory
    when the pairs fit half the budget; else the cleaned pairs are routed a batch at a time
    into ``citation_partitions`` citing-range files on disk
    (:class:`~pipeline.merge.partitions.RangePartitions`), each sorted and deduplicated alone
    (:func:`distinct_citations`) and appended in range order: both copies of a duplicate have
    one citing value, so one range, and the ranges follow the sort, so the table and the counts
    are those of the in-memory merge. (The Open Citation Collection has hundreds of millions of
    pairs.)
    """
    rows = inputs.table_rows("citations")
    partitions = inputs.partitions(rows * MERGE_BYTES_PER_CITATION, "citation_partitions")
    written = 0
    with pq.ParquetWriter(path, tables.CITATIONS) as writer:
        for table in _distinct_by_range(inputs, papers, partitions):
            if table.num_rows or partitions == 1:  # in memory, the table is written even when empty
                writer.write_table(table)
            written += table.num_rows
    records = inputs.stats.get("citation_records")
    if records is not None:  # some file had citations
        inputs.bump("citations_deduplicated", records - written)
    return written


def _distinct_by_range(inputs: MergeInputs, papers: PaperIds, partitions: int) -> Iterator[pa.Table]:
    """The distinct pairs of each citing range, in order: with one partition, all of them,
    deduplicated whenever the pairs gathered reach CITATION_DEDUP_GROWTH times the distinct ones
    (memory near the output's); else routed into ``partitions`` ranges on disk, a batch at a time,
    and deduplicated one range at a time."""
    if partitions == 1:
        # Deduplicating after every file sorted the running total once per file: files x pairs,
        # the square of the corpus (a few hundred PubMed files of ~1,200 pairs each). Waiting
        # until the pairs double sorts each pair a bounded number of times; the distinct sorted
        # pairs are the same whenever the duplicates go.
        gathered: list[pa.Table] = []
        gathered_rows, distinct_rows = 0, 0
        for part in _citation_parts(inputs, papers):
            gathered.append(part)
            gathered_rows += part.num_rows
            if gathered_rows > max(CITATION_DEDUP_GROWTH * distinct_rows, CITATION_DEDUP_MIN_ROWS):
                gathered = [distinct_citations(pa.concat_tables(gathered)).cast(_CITATION_PAIRS)]
                gathered_rows = distinct_rows = gathered[0].num_rows
        yield distinct_citations(pa.concat_tables(gathered)) if gathered else tables.CITATIONS.empty_table()
        return
    with inputs.spill() as folder:
        spilled = RangePartitions(folder, inputs.splits(partitions, "citing", "citations"), key="citing")
        for part in _citation_parts(inputs, papers, streamed=True):
            spilled.add("citations", part)
        spilled.close()
        for k in range(spilled.k):
            pairs = spilled.read("citations", k)
            if pairs is not None and pairs.num_rows:
                yield distinct_citations(pairs)


def _citation_parts(inputs: MergeInputs, papers: PaperIds, streamed: bool = False) -> Iterator[pa.Table]:
    """Every file's (citing, cited) pairs in file order, cleaned and counted: rules 1-2 on the
    citing paper, the cited paper remapped by DOI match, citations to papers deleted for good
    dropped. A file at a time, or when ``streamed`` in parts of MERGE_STREAM_ROWS rows at most
    (a file of the Open Citation Collection is never held whole)."""
    doomed_targets = pa.array(sorted(papers.deleted_for_good), pa.string())
    for index, file_dir in enumerate(inputs.file_dirs):
        path = TableFolder(file_dir).table("citations")
        if not path.exists():
            continue
        for part in table_batches(path) if streamed else [pq.read_table(path)]:
            if part.num_rows:
                yield cleaned_citations(inputs, papers, part, index, doomed_targets)


def cleaned_citations(
    inputs: MergeInputs, papers: PaperIds, part: pa.Table, index: int, doomed_targets: pa.Array
) -> pa.Table:
    """The (citing, cited) pairs of file ``index``, cleaned and counted: rules 1-2 on the citing
    paper, the cited paper remapped by DOI match, citations to ``doomed_targets`` (the papers
    deleted for good) dropped."""
    part = papers.clean(part, index, "citing", "citations").cast(_CITATION_PAIRS)
    if papers.remap:
        part = part.set_column(1, "cited", remapped(part.column("cited"), papers.remap))
    if len(doomed_targets):
        to_deleted = deleted_mask(part.column("cited"), doomed_targets)
        inputs.bump("citations_to_deleted_removed", pc.sum(to_deleted).as_py() or 0)
        part = part.filter(pc.invert(to_deleted))
    inputs.bump("citation_records", part.num_rows)
    return part


def distinct_citations(pairs: pa.Table) -> pa.Table:
    """The distinct (citing, cited) pairs, sorted by citing, then cited, in the citations schema.

    Sorted first, then each pair kept where it differs from the one before: half the memory of
    a hash group_by on the two string columns (79 against 166 bytes per pair on 6M pairs).
    """
    pairs = pairs.select(["citing", "cited"])
    pairs = pairs.take(pc.sort_indices(pairs, [("citing", "ascending"), ("cited", "ascending")]))
    if pairs.num_rows > 1:
        repeated = None
        for column in pairs.columns:
            now, before = column[1:], column[:-1]
            both_null = pc.and_(pc.is_null(now), pc.is_null(before))
            same = pc.coalesce(pc.equal(now, before), both_null)  # group_by's equality: null == null
            repeated = same if repeated is None else pc.and_(repeated, same)
        keep = np.ones(pairs.num_rows, dtype=bool)
        keep[1:] = ~repeated.to_numpy(zero_copy_only=False)
        pairs = pairs.filter(pa.array(keep))
    return pairs.cast(tables.CITATIONS)

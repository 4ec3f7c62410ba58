"""The in-memory citation dedup against a plain-Python reference on random files, and the number
of pairs it sorts, which must grow with the pairs, not with files x pairs (deduplicating the
running total after every file made the merge quadratic in the corpus)."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.builds import tables
from pipeline.merge import citations
from pipeline.merge.documents import PaperIds
from pipeline.merge.inputs import MergeInputs


def _citation_folders(rng: random.Random, root, files: int):
    folders = []
    for index in range(files):
        pairs = [(f"PMID:{rng.randrange(50)}", f"PMID:{rng.randrange(50)}") for _ in range(rng.randrange(0, 40))]
        folder = root / f"file{index}"
        folder.mkdir()
        table = pa.table({"citing": [p[0] for p in pairs], "cited": [p[1] for p in pairs]}, schema=tables.CITATIONS)
        pq.write_table(table, folder / "citations.parquet")
        (folder / "counts.json").write_text(json.dumps({"rows_read": len(pairs), "rows_accepted": len(pairs),
                                                        "rows_quarantined": 0, "tables": {"citations": len(pairs)}}))  # fmt: skip
        folders.append(folder)
    return folders


@pytest.mark.parametrize("seed", range(5))
def test_in_memory_citations_equal_the_reference_and_sort_each_pair_a_bounded_number_of_times(
    seed, tmp_path, monkeypatch
):
    rng = random.Random(seed)
    folders = _citation_folders(rng, tmp_path, files=rng.randrange(1, 60))
    monkeypatch.setattr(citations, "CITATION_DEDUP_MIN_ROWS", rng.choice([1, 16, 1 << 20]))
    sorted_rows: list[int] = []
    distinct = citations.distinct_citations

    def counting(pairs):
        sorted_rows.append(pairs.num_rows)
        return distinct(pairs)

    monkeypatch.setattr(citations, "distinct_citations", counting)
    inputs = MergeInputs(folders, tmp_path / "out", {})
    inputs.load_counts()
    papers = PaperIds(inputs)
    written = citations.write_citations(inputs, papers, tmp_path / "citations.parquet")
    assert inputs.stats.get("citation_partitions") is None  # the in-memory path

    read = [p for f in folders for p in zip(*pq.read_table(f / "citations.parquet").to_pydict().values(), strict=True)]
    expected = sorted(set(read))
    got = pq.read_table(tmp_path / "citations.parquet")
    assert got.schema.equals(tables.CITATIONS)
    assert list(zip(*got.to_pydict().values(), strict=True)) == expected and written == len(expected)
    # each pair passes through a sort a bounded number of times (doubling): not once per later file
    assert sum(sorted_rows) <= 3 * len(read) + 1

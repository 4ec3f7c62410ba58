"""Rule 3 of the merge (one document per paper) against a plain-Python reading of the rule, on
random records: duplicates across sources and files, nulls and empty values in every column, an
unknown source, the input in several chunks."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from pipeline.builds import tables
from pipeline.merge.documents import SOURCE_RANK, merged_documents

RECORDS = tables.DOCUMENTS.append(pa.field("_file", pa.int64()))
VALUE_COLUMNS = ("doi", "cord_uid", "title", "abstract", "year", "mesh")


def reference(rows: list[dict]) -> list[dict]:
    """The rule as the merge's docstring states it, record by record."""
    by_paper: dict[str, list[tuple[int, dict]]] = {}
    for position, row in enumerate(rows):
        by_paper.setdefault(row["doc_id"], []).append((position, row))
    merged = []
    for doc_id in sorted(by_paper):
        ranked = [row for _, row in sorted(by_paper[doc_id], key=lambda item: (
            SOURCE_RANK.get(item[1]["source"], len(SOURCE_RANK)), -item[1]["_file"], item[0]))]  # fmt: skip
        paper = {"doc_id": doc_id, "pmid": int(doc_id[5:]) if doc_id.startswith("PMID:") else None}
        for column in VALUE_COLUMNS:
            paper[column] = next((row[column] for row in ranked if row[column] is not None), None)
        paper["source"], paper["source_file"] = ranked[0]["source"], ranked[0]["source_file"]
        merged.append({name: paper[name] for name in tables.DOCUMENTS.names})
    return merged


def random_records(rng: random.Random) -> list[dict]:
    ids = [f"PMID:{rng.randint(1, 60)}" for _ in range(rng.randint(1, 25))] + ["CORD:a1", "CORD:b2"][: rng.randint(0, 2)]
    rows = []
    for _ in range(rng.randint(1, 90)):
        rows.append(
            {
                "doc_id": rng.choice(ids),
                "pmid": None,
                **{column: rng.choice([None, "", f"{column}-{rng.randint(0, 4)}"])
                   for column in ("doi", "cord_uid", "title", "abstract")},  # fmt: skip
                "year": rng.choice([None, rng.randint(1980, 2025)]),
                "source": rng.choice(["pubmed", "cord19", "semmeddb", "elsewhere"]),
                "mesh": rng.choice([None, [], ["D000001"], ["D000002", "D000003"]]),
                "source_file": f"file-{rng.randint(0, 3)}",
                "_file": rng.randint(0, 5),
            }
        )
    return rows


@pytest.mark.parametrize("seed", range(40))
def test_merged_documents_follow_the_rule(seed):
    rng = random.Random(seed)
    rows = random_records(rng)
    cut = rng.randint(0, len(rows))
    records = pa.concat_tables([pa.Table.from_pylist(rows[:cut], RECORDS), pa.Table.from_pylist(rows[cut:], RECORDS)])
    merged = merged_documents(records)
    assert merged.schema == tables.DOCUMENTS
    assert merged.to_pylist() == reference(rows)


def test_no_records_gives_the_empty_table():
    assert merged_documents(RECORDS.empty_table()).equals(tables.DOCUMENTS.empty_table())

"""A tiny hand-written corpus whose graph weights are worked out by hand below.

Concepts A..F (A=C0000001 ... F=C0000006); D carries the semantic type "qnco"; F is in the
concepts table but never used (isolated). Predication 5 is a self pair (C, C); predication 7
is one SemMedDB predication split into two argument rows (E, B) and (E, C).

Concept--concept, no filters (rows of predications 1, 2, 3, 4, 6, 7 used):
    n(A) = |{1, 2, 4, 6}| = 4, n(B) = |{1, 3, 4, 7}| = 4, n(C) = |{2, 3, 7}| = 3,
    n(D) = 1, n(E) = 1 (one predication, two rows)
    AB = 2 / (4 + 4 - 2) = 1/3     AC = 1 / (4 + 3 - 1) = 1/6     BC = 1/6
    AD = 1 / (4 + 1 - 1) = 1/4     BE = 1/4                      CE = 1 / (3 + 1 - 1) = 1/3
Concept--abstract: PMID:1 A 2+1 (two rows), B 1 -> A 3/4, B 1/4; PMID:2 B 2, C 2, D 4 ->
    B 1/4, C 1/4, D 1/2; PMID:3 C 1 (and A with count 0, dropped) -> C 1.
Abstract--abstract: 1->2, 2->1 (same relation), 3->1, 3->3 (self), 4->2: relations
    {1,2}, {1,3}, {2,4}; N(1) = 2, N(2) = 2, N(3) = 1, N(4) = 1 ->
    w(1,2) = 1/4, w(1,3) = 1/3, w(2,4) = 1/3.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.builds.tables import CITATIONS, CONCEPTS, DOCUMENTS, MENTIONS, PREDICATIONS

A, B, C, D, E, F = (f"C000000{i}" for i in range(1, 7))

PREDICATION_ROWS = [
    # predication_id, doc_id, sentence_id, predicate, subject, object, subject_novelty, object_novelty
    (1, "PMID:1", 11, "TREATS", A, B, True, True),
    (2, "PMID:1", 12, "CAUSES", A, C, True, True),
    (3, "PMID:2", 21, "ASSOCIATED_WITH", B, C, True, False),
    (4, "PMID:2", 22, "TREATS", A, B, True, True),
    (5, "PMID:3", 31, "ISA", C, C, True, True),
    (6, "PMID:3", 32, "AFFECTS", D, A, True, True),
    (7, "PMID:3", 33, "INTERACTS_WITH", E, B, None, True),
    (7, "PMID:3", 33, "INTERACTS_WITH", E, C, None, True),
]
MENTION_ROWS = [
    ("PMID:1", A, 2),
    ("PMID:1", B, 1),
    ("PMID:1", A, 1),
    ("PMID:2", B, 2),
    ("PMID:2", C, 2),
    ("PMID:2", D, 4),
    ("PMID:3", C, 1),
    ("PMID:3", A, 0),
]
CITATION_ROWS = [
    ("PMID:1", "PMID:2"),
    ("PMID:2", "PMID:1"),
    ("PMID:3", "PMID:1"),
    ("PMID:3", "PMID:3"),
    ("PMID:4", "PMID:2"),
]
CONCEPT_ROWS = [
    (A, "interleukin-7", ["aapp", "imft"]),
    (B, "COVID-19", ["dsyn"]),
    (C, "lymphopenia", ["dsyn"]),
    (D, "increased", ["qnco", "qlco"]),
    (E, "T cell", ["cell"]),
    (F, "unused concept", ["orgm"]),
]
DOCUMENT_ROWS = [
    ("PMID:1", 1, "IL-7 in COVID-19", 2020),
    ("PMID:2", 2, "Lymphopenia and COVID-19", 2021),
    ("PMID:3", 3, "T cells", 2021),
    ("PMID:9", 9, "Unrelated paper", 1999),
]


def _table(rows: list[tuple], names: list[str], schema: pa.Schema) -> pa.Table:
    columns = {name: [row[i] for row in rows] for i, name in enumerate(names)}
    return pa.table(
        {
            f.name: pa.array(columns.get(f.name), f.type)
            if f.name in columns
            else pa.nulls(len(rows), f.type)
            for f in schema
        },
        schema=schema,
    )


def write_tiny_tables(tables_dir: Path, shuffle_seed: int | None = None) -> Path:
    """Write documents, mentions, predications, citations and concepts Parquet files."""
    tables_dir.mkdir(parents=True, exist_ok=True)
    mentions, citations = list(MENTION_ROWS), list(CITATION_ROWS)
    predications = list(PREDICATION_ROWS)
    if shuffle_seed is not None:
        import random

        rng = random.Random(shuffle_seed)
        rng.shuffle(mentions)
        rng.shuffle(citations)
        # whole predications move; the rows of one predication stay adjacent
        groups: dict[int, list] = {}
        for row in predications:
            groups.setdefault(row[0], []).append(row)
        order = list(groups)
        rng.shuffle(order)
        predications = [row for pid in sorted(order) for row in groups[pid]]
    pq.write_table(
        _table(
            predications,
            [
                "predication_id",
                "doc_id",
                "sentence_id",
                "predicate",
                "subject_cui",
                "object_cui",
                "subject_novelty",
                "object_novelty",
            ],
            PREDICATIONS,
        ),
        tables_dir / "predications.parquet",
    )
    pq.write_table(_table(mentions, ["doc_id", "cui", "count"], MENTIONS), tables_dir / "mentions.parquet")
    pq.write_table(_table(citations, ["citing", "cited"], CITATIONS), tables_dir / "citations.parquet")
    pq.write_table(
        _table(CONCEPT_ROWS, ["cui", "name", "semtypes"], CONCEPTS), tables_dir / "concepts.parquet"
    )
    documents = [(d, p, t, y, "pubmed", "pubmed.xml") for d, p, t, y in DOCUMENT_ROWS]
    pq.write_table(
        _table(documents, ["doc_id", "pmid", "title", "year", "source", "source_file"], DOCUMENTS),
        tables_dir / "documents.parquet",
    )
    return tables_dir

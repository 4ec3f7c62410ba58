"""Arrow schemas of every Parquet table litpath writes: the one definition of the tables.

``schemas/tables/*.json`` is generated from this module (``litpath schemas``) so that
non-Python readers see the same contract; a test keeps the two in step.

Identifier conventions (shared by every stage):

* ``doc_id`` -- one string per paper: ``PMID:<digits>`` when the paper has a PubMed id,
  otherwise ``CORD:<cord_uid>``. A CORD-19 paper with a PubMed id (or whose DOI matches a
  PubMed record) uses its ``PMID:`` id, so a paper in both sources is one abstract vertex.
* ``cui`` -- a UMLS CUI ``C`` + 7 digits, or ``GENE:<entrez id>`` for SemMedDB gene
  arguments that carry only an NCBI Gene id (see ``pipeline.ingest.semmeddb``).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

DOCUMENTS = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("pmid", pa.int64()),
        pa.field("doi", pa.string()),
        pa.field("cord_uid", pa.string()),
        pa.field("title", pa.string()),
        pa.field("abstract", pa.string()),
        pa.field("year", pa.int32()),
        pa.field("source", pa.string(), nullable=False),  # pubmed | semmeddb | cord19
        pa.field("mesh", pa.list_(pa.string())),
        pa.field("source_file", pa.string(), nullable=False),
    ]
)

# Mentions of a concept in a paper: the basis of concept--abstract (occurrence) weights.
MENTIONS = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("cui", pa.string(), nullable=False),
        pa.field("count", pa.int32(), nullable=False),
    ]
)

# One row per SemMedDB predication argument pair: the basis of concept--concept weights.
PREDICATIONS = pa.schema(
    [
        pa.field("predication_id", pa.int64(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("sentence_id", pa.int64(), nullable=False),
        pa.field("predicate", pa.string(), nullable=False),
        pa.field("subject_cui", pa.string(), nullable=False),
        pa.field("object_cui", pa.string(), nullable=False),
        pa.field("subject_novelty", pa.bool_()),
        pa.field("object_novelty", pa.bool_()),
    ]
)

CITATIONS = pa.schema(
    [
        pa.field("citing", pa.string(), nullable=False),  # doc_id
        pa.field("cited", pa.string(), nullable=False),  # doc_id
    ]
)

CONCEPTS = pa.schema(
    [
        pa.field("cui", pa.string(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("semtypes", pa.list_(pa.string())),
    ]
)

# The text of every sentence a predication names (the merge's rule 6, pipeline.merge.sentences):
# what a hop's evidence quotes. Capped at 500 characters. (The per-file ingest table of the same
# name, pipeline.ingest.base.SENTENCES, also has the sentence's type and number.)
SENTENCES = pa.schema(
    [
        pa.field("sentence_id", pa.int64(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("text", pa.string()),
    ]
)

# Deletions announced by PubMed update files (DeleteCitation), applied in file order.
DELETIONS = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("source_file", pa.string(), nullable=False),
    ]
)

VERTICES = pa.schema(
    [
        pa.field("vid", pa.int64(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),  # concept | abstract
        pa.field("key", pa.string(), nullable=False),  # cui or doc_id
        pa.field("name", pa.string()),
    ]
)

# Undirected edges, stored once with src < dst; the CSR in graph.bp holds both directions.
EDGES = pa.schema(
    [
        pa.field("src", pa.int64(), nullable=False),
        pa.field("dst", pa.int64(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),  # concept_concept | concept_abstract | abstract_abstract
        pa.field("weight", pa.float64(), nullable=False),  # in (0, 1]
        pa.field("cost", pa.float32(), nullable=False),  # -log(weight) >= 0
    ]
)

# Every rejected input row, with where it came from and why; rows read = accepted + quarantined.
QUARANTINE = pa.schema(
    [
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("line", pa.int64(), nullable=False),  # 1-based line (or record index for XML)
        pa.field("field", pa.string()),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("raw", pa.string()),
    ]
)

ALL_TABLES: dict[str, pa.Schema] = {
    "documents": DOCUMENTS,
    "mentions": MENTIONS,
    "predications": PREDICATIONS,
    "citations": CITATIONS,
    "concepts": CONCEPTS,
    "sentences": SENTENCES,
    "deletions": DELETIONS,
    "vertices": VERTICES,
    "edges": EDGES,
    "quarantine": QUARANTINE,
}

EDGE_KINDS = ("concept_concept", "concept_abstract", "abstract_abstract")


def table_path(tables_dir: Path, name: str) -> Path | None:
    """``<name>.parquet`` or a ``<name>/`` folder of parts under ``tables_dir``; None if neither."""
    for candidate in (tables_dir / f"{name}.parquet", tables_dir / name):
        if candidate.exists():
            return candidate
    return None

"""Readers for NLM SemMedDB CSV dumps (v43 layout): PREDICATION, SENTENCE, CITATIONS, ENTITY.

Format (MySQL ``SELECT ... INTO OUTFILE`` style): no header, latin-1, fields separated by
``,`` and optionally enclosed in ``"``, ``\\N`` is SQL NULL, backslash escapes a quote, a
backslash, an apostrophe or a line break (``\\"``, ``\\\\``, ``\\'``); files may be gzipped.
A "row" is one CSV record; the 1-based line of its first physical line goes to quarantine.

Column orders (v43):

* PREDICATION: PREDICATION_ID, SENTENCE_ID, PMID, PREDICATE, SUBJECT_CUI, SUBJECT_NAME,
  SUBJECT_SEMTYPE, SUBJECT_NOVELTY, OBJECT_CUI, OBJECT_NAME, OBJECT_SEMTYPE, OBJECT_NOVELTY
  and optionally FACT_VALUE, MOD_SCALE, MOD_VALUE (12 or 15 columns).
* SENTENCE: SENTENCE_ID, PMID, TYPE, NUMBER, SENT_START_INDEX, SENTENCE, SENT_END_INDEX,
  SECTION_HEADER, NORMALIZED_SECTION_HEADER (8 or 9 columns).
* CITATIONS: PMID, ISSN, DCOM, EDAT, PYEAR (5 columns).
* ENTITY: ENTITY_ID, SENTENCE_ID, CUI, NAME, SEMTYPE, GENE_ID, GENE_NAME, TEXT, SCORE,
  START_INDEX, END_INDEX (11 columns).

**The CUI rule** (one rule for every CUI field). A field is split on ``|`` into tokens;
each token must be a UMLS CUI (``C`` + 7 digits) or an NCBI Gene id (digits):

* if any token is a CUI, the argument is the CUI token(s); trailing gene ids only annotate
  the concept (``C0796614|931`` -> ``C0796614``) and are ignored;
* otherwise every gene id becomes its own argument ``GENE:<id>``
  (``6520`` -> ``GENE:6520``; ``3429|5715`` -> ``GENE:3429``, ``GENE:5715``);
* any other token (``1|medd``), or an empty/NULL field, quarantines the whole row with the
  field name and the offending token.

A PREDICATION row with several subject or object arguments becomes one ``predications``
row per (subject, object) pair, all sharing the PREDICATION_ID (so "number of predications"
means distinct PREDICATION_IDs). Names and semantic types given ``|``-separated are matched
to the arguments position by position when the counts agree, else shared.

**Mentions.** Two sources, one chosen by the merge step (``ingest.mention_source``, see
:mod:`pipeline.merge`). ENTITY rows are SemRep's concept occurrences in the text: each
gives one mention per argument of its CUI field in its sentence (``entity_mentions``); the
merge resolves sentence -> paper through SENTENCE. ``mentions`` holds predication argument
slots: every PREDICATION row counts one mention of each distinct subject argument and one of
each distinct object argument in its paper ``PMID:<pmid>`` (a concept that is both subject and
object counts twice), partially aggregated here and summed per (doc_id, cui) by the merge.
The ``predications`` table keeps each row's SENTENCE_ID, so the merge can also match
predication arguments to ENTITY rows of the same sentence (``mention_source: both``).

Novelty flags ``0``/``1`` become booleans, ``\\N`` null; anything else is quarantined.

Modules: :mod:`~pipeline.ingest.semmeddb.fields` (the dump's records and field rules),
:mod:`~pipeline.ingest.semmeddb.predication` (PREDICATION one row at a time, the reference),
:mod:`~pipeline.ingest.semmeddb.rows` (SENTENCE, CITATIONS and ENTITY one row at a time, the
reference), :mod:`~pipeline.ingest.semmeddb.blocks` (the Arrow block loop they share),
:mod:`~pipeline.ingest.semmeddb.predication_blocks` and :mod:`~pipeline.ingest.semmeddb.table_blocks`
(every table in Arrow blocks, the fast paths that give the same tables; each reader's
``block_path=False`` reads without them).
"""

from __future__ import annotations

from pipeline.ingest.base import IngestRun, InputFile, Reader
from pipeline.ingest.records import for_each_row
from pipeline.ingest.semmeddb.fields import Concepts, read_dump
from pipeline.ingest.semmeddb.predication import PredicationRows
from pipeline.ingest.semmeddb.predication_blocks import BLOCK_BYTES, PredicationBlocks
from pipeline.ingest.semmeddb.rows import citations_row, entity_row, sentence_row
from pipeline.ingest.semmeddb.table_blocks import CitationBlocks, EntityBlocks, SentenceBlocks


def read_predication(
    source: InputFile, run: IngestRun, *, block_path: bool = True, block_bytes: int = BLOCK_BYTES
) -> None:
    """PREDICATION -> predications, mentions, concepts (see the module docstring).

    ``block_path`` reads in Arrow blocks of about ``block_bytes`` (the fast path); without it
    every row takes the record path. Both give the same tables, quarantine and counts.
    """
    if block_path:
        blocks = PredicationBlocks(run)
        blocks.read(source, block_bytes)
        blocks.finish()
        return
    rows = PredicationRows(run)
    for line, fields, raw, error in read_dump(source):
        rows.record(line, fields, raw, error)
    rows.finish()


def read_sentence(source: InputFile, run: IngestRun, *, block_path: bool = True, block_bytes: int = BLOCK_BYTES) -> None:
    """SENTENCE -> sentences; in Arrow blocks unless ``block_path`` is off (the same table)."""
    if block_path:
        SentenceBlocks(run).read(source, block_bytes)
        return
    for_each_row(read_dump(source), run, lambda fields: sentence_row(fields, run))


def read_citations(source: InputFile, run: IngestRun, *, block_path: bool = True, block_bytes: int = BLOCK_BYTES) -> None:
    """CITATIONS -> documents; in Arrow blocks unless ``block_path`` is off (the same table)."""
    if block_path:
        CitationBlocks(run).read(source, block_bytes)
        return
    for_each_row(read_dump(source), run, lambda fields: citations_row(fields, run, run.source_file))


def read_entity(source: InputFile, run: IngestRun, *, block_path: bool = True, block_bytes: int = BLOCK_BYTES) -> None:
    """ENTITY -> entity_mentions + concepts; in Arrow blocks unless ``block_path`` is off (the same tables)."""
    if block_path:
        blocks = EntityBlocks(run)
        blocks.read(source, block_bytes)
        blocks.finish()
        return
    concepts = Concepts()
    for_each_row(read_dump(source), run, lambda fields: entity_row(fields, run, concepts))
    concepts.write(run)


READERS = (
    Reader("semmeddb_predication", produces=("predications", "mentions", "concepts"), read=read_predication),
    Reader("semmeddb_sentence", produces=("sentences",), read=read_sentence),
    Reader("semmeddb_citations", produces=("documents",), read=read_citations),
    Reader("semmeddb_entity", produces=("entity_mentions", "concepts"), read=read_entity),
)

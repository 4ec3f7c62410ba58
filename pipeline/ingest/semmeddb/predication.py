"""PREDICATION one row at a time: the record path, which reads any row and is the reference the
block path (:mod:`pipeline.ingest.semmeddb.predication_blocks`) must agree with."""

from __future__ import annotations

from pipeline.ingest.base import IngestRun
from pipeline.ingest.records import RowError
from pipeline.ingest.semmeddb.fields import (
    Concepts,
    novelty,
    parse_cui_field,
    reject_width,
    required_int,
    split_like,
)

MENTION_FLUSH = 100_000
# Concept events are ordered by (row, side, argument) = (2 * row + side) * ORDER_STEP + argument,
# so that both paths give each concept the name of its first event in the file.
ORDER_STEP = 64


class PredicationRows:
    """State of one PREDICATION file: concepts, partial mention counts, argument cache."""

    def __init__(self, run: IngestRun) -> None:
        self.run = run
        self.concepts = Concepts()
        self.mentions: dict[tuple[str, str], int] = {}
        # (CUI field, name, semtype, field) -> arguments; the vocabulary is small next to the rows
        self.arguments: dict[tuple[str | None, str | None, str | None, str], list[str]] = {}
        # the keys whose concepts were taken, from a row that was accepted
        self.named: set[tuple[str | None, str | None, str | None, str]] = set()

    def resolve(
        self, cui_field: str | None, name: str | None, semtype: str | None, field: str
    ) -> tuple[list[str], tuple[str | None, str | None, str | None, str]]:
        """The CUIs of one argument field, and its key for :meth:`name_concepts`."""
        key = (cui_field, name, semtype, field)
        cuis = self.arguments.get(key)
        if cuis is None:
            cuis = parse_cui_field(cui_field, field)
            if len(self.arguments) < 1_000_000:
                self.arguments[key] = cuis
        return cuis, key

    def name_concepts(
        self, key: tuple[str | None, str | None, str | None, str], cuis: list[str], events: list | None, order: int
    ) -> None:
        """The concepts' names and semantic types from an argument of an accepted row (a
        quarantined row's name or type is no concept's: a row with a bad novelty had given its
        subject the name "Bad row name"), the first time its key is seen in one."""
        if key in self.named:
            return
        _, name, semtype, _ = key
        for position, (cui, one_name, one_type) in enumerate(
            zip(cuis, split_like(name, len(cuis)), split_like(semtype, len(cuis)), strict=True)
        ):
            if events is None:
                self.concepts.add(cui, one_name, one_type)
            else:
                events.append((cui, one_name, one_type, order + position))
        if len(self.named) < 1_000_000:
            self.named.add(key)

    def record(
        self,
        line: int,
        fields: list[str | None] | None,
        raw: str,
        error: str | None,
        events: list | None = None,
        rows: list | None = None,
        row: int = 0,
    ) -> None:
        """One record; ``events``/``rows`` collect concept events and predication rows when the
        record sits in a block (row = its index there), else they go straight to the run."""
        if fields is None:
            self.run.quarantine(line, None, error or "unreadable", raw)
            return
        order = 2 * row * ORDER_STEP
        try:
            reject_width(fields, (12, 15), "PREDICATION")
            predication_id = required_int(fields[0], "PREDICATION_ID")
            sentence_id = required_int(fields[1], "SENTENCE_ID")
            pmid = required_int(fields[2], "PMID")
            predicate = fields[3]
            if not predicate:
                raise RowError("PREDICATE", "missing predicate")
            subjects, subject_key = self.resolve(fields[4], fields[5], fields[6], "SUBJECT_CUI")
            objects, object_key = self.resolve(fields[8], fields[9], fields[10], "OBJECT_CUI")
            subject_novelty = novelty(fields[7], "SUBJECT_NOVELTY")
            object_novelty = novelty(fields[11], "OBJECT_NOVELTY")
        except RowError as exc:
            self.run.quarantine(line, exc.field, exc.reason, raw)
            return
        self.run.accept()
        self.name_concepts(subject_key, subjects, events, order)
        self.name_concepts(object_key, objects, events, order + ORDER_STEP)
        doc_id = f"PMID:{pmid}"
        mentions = self.mentions
        for cui in subjects:
            mentions[(doc_id, cui)] = mentions.get((doc_id, cui), 0) + 1
        for cui in objects:
            mentions[(doc_id, cui)] = mentions.get((doc_id, cui), 0) + 1
        for subject in subjects:
            for obj in objects:
                values = (
                    predication_id,
                    doc_id,
                    sentence_id,
                    predicate,
                    subject,
                    obj,
                    subject_novelty,
                    object_novelty,
                )
                if rows is None:
                    self.run.add_values("predications", values)
                else:
                    rows.append((row, *values))
        if len(mentions) >= MENTION_FLUSH:
            self.flush_mentions()

    def flush_mentions(self) -> None:
        for (doc_id, cui), count in self.mentions.items():
            self.run.add_values("mentions", (doc_id, cui, count))
        self.mentions.clear()

    def finish(self) -> None:
        """After the last row: the mentions still counted and the concepts table."""
        self.flush_mentions()
        self.concepts.write(self.run)

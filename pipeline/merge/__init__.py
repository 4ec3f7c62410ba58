"""Combine per-file ingest outputs into the build-level tables.

``file_dirs`` are the ``out_dir`` s of :func:`pipeline.ingest.run.ingest_file`, in input
order (baseline files, then update files in file-name order; the kinds may be mixed).
The rules, applied in this order:

1. **Deletions** (PubMed ``DeleteCitation``) in file order: a deletion announced by file *k*
   removes every row about that ``doc_id`` that came from files ``0..k`` (documents,
   mentions, predications, and citations it makes); a record in a later file re-adds the
   paper. A citation *to* a paper that stays deleted is dropped too. Every removal is counted.
2. **DOI match**: a ``CORD:`` paper whose DOI (case-insensitive) equals the DOI of a
   ``PMID:`` paper becomes that paper (smallest PMID if several share the DOI); its
   mentions and citations are remapped.
3. **Documents** deduplicated per ``doc_id``: each field is taken from the first record that
   has it, records ranked pubmed > cord19 > semmeddb and, within a source, later file first
   (an update file's version of a record wins). ``source``/``source_file`` are those of the
   top-ranked record.
4. **Mentions** summed per (doc_id, cui): the counts behind the concept-abstract weight, "the
   number of times a concept, c, appears in an abstract, p, divided by the total number of
   concepts that appear in p" (COAST, SC22, appendix XI-E). ``config["mention_source"]``
   picks what one mention is (see :func:`mention_source_for`; the choice and its reason go
   to ``counts.json``):

   * ``"entities"`` -- one SemMedDB ENTITY row, i.e. one concept occurrence SemRep found in
     the text of a sentence, placed in its paper through SENTENCE (an entity whose sentence
     is in no SENTENCE file is quarantined here). This is the paper's definition.
   * ``"predications"`` -- one predication argument slot: each predication counts one
     mention of each distinct subject and each distinct object (see
     :mod:`pipeline.ingest.semmeddb`). A concept that is an argument of three predications
     of one sentence counts 3; a concept in the text but in no predication counts 0.
   * ``"both"`` -- the union of the textual mentions the two sources attest, per (paper,
     sentence, concept); no mention is counted twice (:func:`~pipeline.merge.mentions.mention_union`).
   * ``"auto"`` (default) -- ``"predications"``: the source whose counts reproduce the COAST
     paper's 196 million paper--concept relations on a release-calibrated corpus (ENTITY rows give
     about 8 times as many; README, "What a mention is").
5. **Predications** streamed through (filtered and remapped), **citations** deduplicated,
   **concepts** deduplicated: first non-null name in file order, union of semantic types.
6. **Sentences**: the SENTENCE rows the predications name, one per sentence_id (a later file
   wins), text capped at 500 characters: what a hop's evidence quotes
   (:mod:`pipeline.merge.sentences`).

Memory follows ``resources.memory_gib``: the document records and the mentions are merged in
memory when they fit it, else in doc_id-range partitions spilled to disk (the same tables,
bit for bit; :mod:`pipeline.merge.partitions`); likewise ENTITY mentions are joined to their
papers through SENTENCE in memory, else in sentence_id-range partitions
(:func:`~pipeline.merge.entities.placed_entities`); the citation pairs are deduplicated in
memory, else in citing-range partitions (:func:`~pipeline.merge.citations.write_citations`).
Concepts are held whole (tens of thousands of rows); predications are streamed batch by batch.

Where each rule lives: rules 1-3 in :mod:`pipeline.merge.documents`, rule 4 in
:mod:`pipeline.merge.mentions` (and :mod:`pipeline.merge.entities`), rule 5 in
:mod:`pipeline.merge.citations` and :mod:`pipeline.merge.predications`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from pipeline.builds.layout import TableFolder
from pipeline.builds.tables import ALL_TABLES
from pipeline.config import check_setting, default_of, schema_of
from pipeline.ingest.base import IngestError
from pipeline.merge.citations import write_citations
from pipeline.merge.delta import Delta
from pipeline.merge.documents import PaperIds, write_documents, write_doi_matches
from pipeline.merge.inputs import MergeInputs
from pipeline.merge.mentions import HELD_TABLES, write_mentions
from pipeline.merge.predications import write_concepts, write_predications, write_quarantine
from pipeline.merge.sentences import write_sentences
from pipeline.merge.time_slice import cut_at_year
from pipeline.runtime.files import write_atomically
from pipeline.runtime.progress import PERCENT, PhasedWork, Progress
from pipeline.runtime.resources import keep_freed_memory_on_the_delta, sweep_stale_spills

# The values of ingest.mention_source, as the config schema defines them.
MENTION_SOURCES = tuple(schema_of("ingest.mention_source")["enum"])


def mention_source_for(requested: str, file_counts: list[dict[str, Any]]) -> tuple[str, str]:
    """(the mention source used, why) for a requested ``mention_source`` and the inputs' counts.

    ``auto`` takes predication arguments. The paper defines the weight by "the number of times a
    concept, c, appears in an abstract" but reports 196 million paper--concept relations for its
    SemMedDB, 1.55 per predication at a release's 126M: what predication arguments can give (two
    per predication, fewer where a paper restates a pair), and ENTITY rows (15 per predication)
    only if each (paper, concept) repeated about ten times. On the calibrated synthetic corpus,
    fitted to both figures, predications give the paper's scaled count within 3 % and entities about 8
    times it (graph_counts.json's ``paper_scaled``). ENTITY rows stay available as ``entities`` or
    ``both``.
    """
    check_setting("ingest.mention_source", requested)
    if requested != "auto":
        return requested, f"mention_source: {requested} set in the configuration"
    entity_files = Counter(counts.get("kind") for counts in file_counts)["semmeddb_entity"]
    # The workflow does not ingest ENTITY files under auto (pipeline.builds.identity.UNREAD_KINDS);
    # a merge given some anyway leaves them unread.
    ignored = (f"; the {entity_files} SemMedDB ENTITY file(s) are not read" if entity_files
               else "; SemMedDB ENTITY files are neither ingested nor read")  # fmt: skip
    return "predications", (
        "auto: a mention is a predication argument, the reading whose counts reproduce the paper's "
        "196M paper-concept relations" + ignored + " (mention_source: entities or both reads them)"
    )


# The rules as two lanes that can run at once, each in its order: no rule of one lane reads what
# the other writes (citations take the papers deleted for good from the documents rule; the
# sentences keep those the merged predications name), once the DOI match both apply is settled.
# Balanced by time: at 10M predications documents 28 s, mentions 8, citations and concepts 3
# beside predications 8, sentences 36.
MERGE_LANES: tuple[tuple[str, ...], ...] = (("documents", "mentions", "citations", "concepts"),
                                            ("predications", "sentences"))  # fmt: skip


# What a row read costs each step of a full merge, in seconds per million rows: measured with
# the steps one after another on the calibrated 10M corpus (AMD EPYC): the documents 15.6 s for
# 6.0M rows (the rules' splice of every paper's records, the DOI match), the mentions 5.3 s for
# 15.6M, the citations 0.27 s for 0.36M, the concepts 1.4 s for 0.28M, the predications 3.9 s
# for 10.1M, the sentences 12.4 s for 20.0M (24.7 s before their cited ids were found by a sort:
# numpy's hash-table unique, pipeline.runtime.columnar.distinct_sorted). Counted in rows alone,
# the full merge's line had said "ETA 85.3 s" at 23.6 s of a 40-s merge, and "ETA 22.7 s" with
# 6.4 s left.
MERGE_ROW_SECONDS = {"documents": 2.6, "mentions": 0.34, "citations": 0.75, "concepts": 5.1, "predications": 0.38,
                     "sentences": 0.62}  # fmt: skip


def merge_shares(step_rows: dict[str, int]) -> dict[str, float]:
    """Each step's share of a full merge's work: its rows read times what a row costs it
    (:data:`MERGE_ROW_SECONDS`; a step not measured counts a row as the predications' do),
    as parts of one; equal shares where no step reads a row."""
    cost = {name: rows * MERGE_ROW_SECONDS.get(name, MERGE_ROW_SECONDS["predications"]) for name, rows in step_rows.items()}
    total = sum(cost.values())
    return {name: (c / total if total else 1 / len(cost)) for name, c in cost.items()}


def merge_steps(
    inputs: MergeInputs, papers: PaperIds, mention_source: str, out_dir: Path
) -> tuple[tuple[str, tuple[str, ...], Callable[[Path], int]], ...]:
    """The rules in order: (table, the per-file tables it reads, what writes it and returns its rows)."""
    return (
        ("documents", ("documents",), lambda path: write_documents(inputs, papers, path)),
        ("mentions", HELD_TABLES[mention_source], lambda path: write_mentions(inputs, papers, mention_source, path)),
        ("citations", ("citations",), lambda path: write_citations(inputs, papers, path)),
        ("concepts", ("concepts",), lambda path: write_concepts(inputs, path)),
        ("predications", ("predications",), lambda path: write_predications(inputs, papers, path)),
        # after predications: it keeps the sentences the merged predications name
        ("sentences", ("sentences",),
         lambda path: write_sentences(inputs, papers, TableFolder(out_dir).table("predications"), path)),
    )


def merge_lanes(config: dict[str, Any]) -> int:
    """How many lanes of :data:`MERGE_LANES` run at once: 2 where this process may use two cores
    or more and ``resources.merge_lanes`` (default 2) allows, else 1 (the rules one after another)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    wanted = (config.get("resources") or {}).get("merge_lanes")
    wanted = int(default_of("resources.merge_lanes") if wanted is None else wanted)
    return max(1, min(wanted, cores, len(MERGE_LANES)))


def _run_in_lanes(
    steps: tuple[tuple[str, tuple[str, ...], Callable[[Path], int]], ...],
    lanes: tuple[tuple[str, ...], ...],
    out_dir: Path,
    progress: Progress,
    step_done: Callable[[str], None],
) -> dict[str, int]:
    """Run ``steps`` in ``lanes``, one thread each (the rules' work is Arrow's and numpy's, which
    leave the interpreter lock while they compute); the rows each wrote. ``progress`` names the
    steps running, ``step_done(name)`` is told each step done. An error in one lane is raised
    once both lanes have stopped."""
    by_name = {name: write for name, _, write in steps}
    missing = set(by_name) - {name for lane in lanes for name in lane}
    if missing:
        raise ValueError(f"merge steps {sorted(missing)} are in no lane")
    written: dict[str, int] = {}
    running: dict[int, str] = {}
    lock = threading.Lock()

    def run_lane(number: int, names: tuple[str, ...]) -> None:
        for name in names:
            with lock:
                running[number] = name
                progress.stage(" + ".join(running[k] for k in sorted(running)))
            rows = by_name[name](TableFolder(out_dir).table(name))
            with lock:
                written[name] = rows
                step_done(name)
        with lock:
            running.pop(number, None)

    with ThreadPoolExecutor(max_workers=len(lanes), thread_name_prefix="litpath-merge-lane") as pool:
        futures = [pool.submit(run_lane, number, lane) for number, lane in enumerate(lanes)]
        wait(futures)
    for future in futures:
        future.result()  # the first lane's error, if any
    return written


def merge_ingested(
    file_dirs: list[Path], out_dir: Path, config: dict[str, Any] | None = None, previous: Path | None = None
) -> dict[str, Any]:
    """Merge per-file ingest outputs (in input order) into build-level tables in ``out_dir``.

    Writes documents, mentions, predications, citations, concepts, sentences and quarantine Parquet
    files plus ``counts.json``; returns that counts dictionary. ``previous``: the tables folder of
    an earlier complete build of some of these files (same order, same settings), which the merge
    brings up to date on the delta where :mod:`pipeline.merge.delta`'s rules allow (counts.json's
    ``incremental`` says whether it did, and if not why).
    """
    started = time.perf_counter()
    config = config or {}
    out_dir = Path(out_dir)
    requested = config.get("mention_source", schema_of("ingest.mention_source")["default"])
    requested = check_setting("ingest.mention_source", requested)
    inputs = MergeInputs(file_dirs, out_dir, config)
    out_dir.mkdir(parents=True, exist_ok=True)
    unshare_tables(out_dir)
    sweep_stale_spills(inputs.spill_parent)  # left by a merge that was killed
    inputs.load_counts()
    # what "auto" means depends on the inputs
    mention_source, mention_source_reason = mention_source_for(requested, inputs.file_counts)
    papers = PaperIds(inputs)
    papers.load_deletions()
    steps = merge_steps(inputs, papers, mention_source, out_dir)
    incremental = None
    lanes = merge_lanes(config)
    progress, delta_used = None, False
    if previous is not None:  # the earlier build's tables, with only what the new files change redone
        # On the delta, the line counts the rows of the earlier tables read, as they are read: the
        # rewrites, on threads of their own, start during the checks.
        progress = Progress("litpath merge", None, "rows")
        progress.stage("checks")  # whether the delta's rules allow it (Delta.refusal)
        delta = Delta(inputs, papers, Path(previous), config)
        delta.report = progress.advance
        refusal = delta.refusal(requested, [name for name, _, _ in steps], out_dir)
        incremental = {"previous_tables": str(previous), "used": refusal is None, "reason": refusal,
                       "files_added": [inputs.file_counts[i].get("source_file") for i in delta.new_indices]}  # fmt: skip
        if refusal is None:
            steps, lanes, delta_used = delta.steps(out_dir, steps), 1, True  # the delta's rules have their own threads
            keep_freed_memory_on_the_delta()
            step_rows = delta.work([name for name, _, _ in steps])
            progress.total = sum(step_rows.values()) or None
    if delta_used:
        def step_done(name: str) -> None:  # what the rule did not tell the line as it read
            progress.advance(max(0, step_rows[name] - delta.reported[name]))
    else:
        # The rows each step reads, from the per-file counts, weighted by what a row costs the
        # step (MERGE_ROW_SECONDS): the line counts the steps done, in percent of the whole.
        work = PhasedWork(merge_shares({name: sum(inputs.table_rows(table) for table in reads)
                                        for name, reads, _ in steps}))  # fmt: skip
        progress = work.line = Progress("litpath merge", 100, PERCENT)
        step_done = work.complete
        inputs.on_step = work.reach  # every step but the citations and the concepts says how far it is as it reads
    if lanes > 1:
        # Each lane holds at most half the budget; the DOI match, which both lanes' rules apply,
        # is settled before either starts.
        papers.match_dois()
        steps = merge_steps(inputs.with_budget_share(1 / lanes), papers, mention_source, out_dir)
        written = _run_in_lanes(steps, MERGE_LANES, out_dir, progress, step_done)
        inputs.bump("merge_lanes", lanes)
    else:
        written = {}
        for name, _, write in steps:
            progress.stage(name)
            written[name] = write(TableFolder(out_dir).table(name))
            step_done(name)
    written = {name: written[name] for name, _, _ in steps}  # the rules' order, whatever ran first
    # ingest.until_year: the time slice, the papers published up to that year (time_slice.py)
    changed_papers = TableFolder(out_dir).changed_papers
    if incremental is not None and incremental["used"]:
        incremental["changed_papers"] = delta.write_changed_papers(changed_papers)
        incremental["tables_unchanged"] = sorted(delta.unchanged)
        incremental["tables_less_deleted"] = sorted(delta.less_deleted)
        incremental["doi_match"] = delta.doi_match
    else:
        changed_papers.unlink(missing_ok=True)  # left by an earlier merge into this folder
    for name in ALL_TABLES:  # the rows a merge on the delta removed: only for the tables it lists
        if name not in (incremental or {}).get("tables_less_deleted", ()):
            TableFolder(out_dir).removed_rows(name).unlink(missing_ok=True)
    doi_matches = TableFolder(out_dir).doi_matches
    if papers.dois_matched:
        write_doi_matches(papers.remap, doi_matches)
    else:  # no documents step: no match to keep
        doi_matches.unlink(missing_ok=True)
    time_slice = None if config.get("until_year") is None else cut_at_year(out_dir, int(config["until_year"]))
    if time_slice is not None:
        written.update({name: rows["kept"] for name, rows in time_slice["rows"].items()})
    progress.finish(", ".join(f"{n:,} {name}" for name, n in written.items()))
    written["quarantine"] = write_quarantine(inputs, TableFolder(out_dir).table("quarantine"))

    totals = {
        key: sum(c[key] for c in inputs.file_counts)
        for key in ("rows_read", "rows_accepted", "rows_quarantined")
    }
    _check_rows_invariant(inputs.file_dirs, inputs.file_counts)
    counts = {
        "files": inputs.file_counts,
        **totals,
        "merge": dict(sorted(inputs.stats.items())),
        "merge_quarantined": len(inputs.quarantine),
        "mention_source": mention_source,
        "mention_source_requested": requested,
        "mention_source_reason": mention_source_reason,
        "tables": written,
        **({"time_slice": time_slice} if time_slice is not None else {}),
        **({"incremental": incremental} if incremental is not None else {}),
        "seconds": round(time.perf_counter() - started, 3),
    }
    write_atomically(TableFolder(out_dir).counts, json.dumps(counts, indent=2) + "\n")
    return counts


def unshare_tables(out_dir: Path) -> None:
    """Unlink the Parquet files of ``out_dir`` that another build's folder shares (hard links a
    merge on the delta made, ``Delta._kept``): written over in place, the earlier build's table
    would change with it. Another merge into the same folder then writes fresh files."""
    for path in Path(out_dir).glob("*.parquet"):
        if path.stat().st_nlink > 1:
            path.unlink()


def _check_rows_invariant(file_dirs: list[Path], file_counts: list[dict[str, Any]]) -> None:
    """Every file's rows read = accepted + quarantined, checked always (``assert`` is gone under
    ``python -O``): IngestError naming the file whose counts break it. The ingest of each file
    checks the same before writing its counts.json, so a break means that file was changed since
    or written by something else."""
    for file_dir, counts in zip(file_dirs, file_counts, strict=True):
        read, accepted, quarantined = (counts[k] for k in ("rows_read", "rows_accepted", "rows_quarantined"))
        if read != accepted + quarantined:
            raise IngestError(
                f"{TableFolder(file_dir).counts}: rows read {read:,} != accepted {accepted:,} + quarantined "
                f"{quarantined:,}; ingest {counts.get('source_file', 'this file')} again"
            )

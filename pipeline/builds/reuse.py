"""What a build may take from the build its merge started from.

A merge on the delta (:mod:`pipeline.merge.delta`) keeps the tables the new files leave as they
were as the earlier build's own files (hard links), and lists them in counts.json's
``incremental.tables_unchanged``. A stage whose every input table is among them, run with the
same settings and the same formulas, would write again what the earlier build's same stage wrote:
it may take those outputs instead (a citation file changes only ``citations``: the co-occurrence
graph, its solve and the store's bucket files are the earlier ones). Each such stage checks its
own settings and says in its record that it took the earlier outputs, and from which build
(:mod:`pipeline.graph.earlier`, :func:`pipeline.solve.stage.solve_graph`,
:func:`pipeline.store.record_buckets.taken_bucket_file`).

This module only answers which build that is and which of its tables are unchanged, and copies a
stage's files: the graph folders are small next to the tables (the co-occurrence graph of 10M
calibrated predications is 30 MB), and a copy, unlike a link, is never written through by a
later run of the stage in the new build's folder.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pipeline.builds.layout import TableFolder


@dataclass(frozen=True)
class EarlierTables:
    """The build a merge on the delta started from (``root``, its folder) and the tables this
    build has unchanged from it (``unchanged``: names, as counts.json lists them)."""

    root: Path
    unchanged: frozenset[str]
    changed_papers: int | None = None  # how many papers the merge merged again (changed_papers.parquet)
    # the tables that are the earlier build's less every row of the papers the new files delete,
    # and otherwise the same rows (counts.json's ``incremental.tables_less_deleted``)
    less_deleted: frozenset[str] = frozenset()

    def same(self, tables: Iterable[str]) -> bool:
        """True when every one of ``tables`` is the earlier build's, unchanged."""
        return set(tables) <= self.unchanged

    def same_but_deleted(self, tables: Iterable[str]) -> bool:
        """True when every one of ``tables`` is the earlier build's, unchanged or less the rows of
        the deleted papers only."""
        return set(tables) <= self.unchanged | self.less_deleted

    @property
    def name(self) -> str:
        return self.root.name


def earlier_tables(tables_dir: Path) -> tuple[EarlierTables | None, str]:
    """The earlier build of the merge that wrote ``tables_dir`` and its unchanged tables, or None
    and why there is none to take anything from (a full merge, an older counts.json, a missing
    earlier build)."""
    counts = TableFolder(tables_dir).counts
    try:
        incremental = json.loads(counts.read_text()).get("incremental") or {}
    except (OSError, ValueError) as error:
        return None, f"{counts} unreadable ({error})"
    if not incremental.get("used"):
        return None, "the merge was not on the delta of an earlier build" + (
            f" ({incremental['reason']})" if incremental.get("reason") else "")  # fmt: skip
    if "tables_unchanged" not in incremental:
        return None, f"{counts} lists no unchanged tables (a merge of an older litpath)"
    root = Path(incremental["previous_tables"]).parent
    if not root.is_dir():
        return None, f"the earlier build {root} is gone"
    return EarlierTables(root, frozenset(incremental["tables_unchanged"]), incremental.get("changed_papers"),
                         frozenset(incremental.get("tables_less_deleted") or ())), ""  # fmt: skip


def link_or_copy(source: Path, target: Path) -> None:
    """``target`` made the file ``source``: a hard link where the filesystem has them (no bytes
    copied, no space taken twice), else a copy; put in place by a rename, so that whatever
    ``target`` was (a link into another build) is replaced, never written through."""
    source, target = Path(source), Path(target)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(source, tmp)
    except OSError:  # another filesystem, or one without hard links
        shutil.copyfile(source, tmp)
    tmp.replace(target)


def copy_stage_files(source: Path, target: Path, names: Iterable[str]) -> None:
    """The files and folders ``names`` of ``source`` copied into ``target`` (each replacing what
    ``target`` had of that name); FileNotFoundError naming the first one ``source`` lacks, before
    anything is copied."""
    source, target = Path(source), Path(target)
    names = list(names)
    for name in names:
        if not (source / name).exists():
            raise FileNotFoundError(f"{source / name} not found")
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        origin, copy = source / name, target / name
        if copy.is_dir():
            shutil.rmtree(copy)
        else:
            copy.unlink(missing_ok=True)
        if origin.is_dir():
            shutil.copytree(origin, copy)
        else:
            shutil.copyfile(origin, copy)


__all__ = ["EarlierTables", "copy_stage_files", "earlier_tables", "link_or_copy"]

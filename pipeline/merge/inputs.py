"""The per-file ingest folders one merge reads, and what the merge records as it goes."""

from __future__ import annotations

import copy
import json
import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.builds.layout import TableFolder
from pipeline.ingest.base import IngestError
from pipeline.merge.partitions import sampled_splits
from pipeline.runtime.resources import SpillFolder, memory_budget_bytes, spill_parent


class MergeInputs:
    """The per-file folders of one merge in input order, with their counts (:meth:`load_counts`);
    the memory budget and where partitions spill; and the merge's own record: a tally of each
    effect (``stats``, the "merge" of counts.json) and the rows the merge itself quarantines."""

    def __init__(self, file_dirs: list[Path], out_dir: Path, config: dict[str, Any]) -> None:
        self.file_dirs = [Path(d) for d in file_dirs]
        self.file_counts: list[dict[str, Any]] = []
        self.stats: dict[str, int] = {}
        self.quarantine: list[dict[str, Any]] = []
        self.budget_bytes = memory_budget_bytes(config)
        self.spill_parent = spill_parent(config, Path(out_dir))
        self._tally = threading.Lock()  # steps may run in two threads (merge_ingested's lanes)
        # told how far a step is through (its name, 0 to 1), by the steps that read their files in
        # batches: the full merge's progress line (a step otherwise moves it only once done)
        self.on_step: Callable[[str, float], None] | None = None

    def with_budget_share(self, share: float) -> MergeInputs:
        """The same inputs and the same record (stats, quarantine), with ``share`` of the memory
        budget: what a step running beside another may hold, so that the two keep to the budget."""
        shared = copy.copy(self)
        shared.budget_bytes = int(self.budget_bytes * share)
        return shared

    def through(self, step: str, fraction: float) -> None:
        """``fraction`` (0 to 1) of ``step`` is done: told to whoever listens (:attr:`on_step`)."""
        if self.on_step is not None:
            self.on_step(step, fraction)

    def load_counts(self) -> None:
        """Each folder's counts.json, whose absence means its ingest did not finish."""
        for file_dir in self.file_dirs:
            counts_path = TableFolder(file_dir).counts
            if not counts_path.exists():
                raise IngestError(f"{file_dir}: no counts.json; the ingest of this file did not finish")
            self.file_counts.append(json.loads(counts_path.read_text()))

    def bump(self, key: str, n: int) -> None:
        with self._tally:
            self.stats[key] = self.stats.get(key, 0) + int(n)

    def table_rows(self, name: str) -> int:
        """Rows of the per-file table ``name`` over every file (from the ingest counts)."""
        return sum(c.get("tables", {}).get(name, 0) for c in self.file_counts)

    def paths(self, *names: str) -> list[Path]:
        """The files' tables ``names`` that exist, in file order (and in the order of ``names``)."""
        return [path for d in self.file_dirs for name in names if (path := TableFolder(d).table(name)).exists()]

    def read(self, file_dir: Path, name: str, dictionary_columns: tuple[str, ...] = ()) -> pa.Table | None:
        """The table ``name`` of one folder (``dictionary_columns`` as dictionaries); None if it has none."""
        path = TableFolder(file_dir).table(name)
        return pq.read_table(path, read_dictionary=list(dictionary_columns) or None) if path.exists() else None

    def partitions(self, need_bytes: float, counter: str) -> int:
        """How many key ranges a step that would hold ``need_bytes`` in memory works in: 1 when
        that fits half the budget (the step's output may be held beside it), else enough ranges
        that each does; counted under ``counter`` when more than 1."""
        partitions = max(1, math.ceil(need_bytes / (0.5 * self.budget_bytes)))
        if partitions > 1:
            self.bump(counter, partitions)
        return partitions

    def splits(self, partitions: int, key: str, *names: str) -> list[Any]:
        """``partitions - 1`` values of ``key`` splitting the rows of the files' ``names`` tables
        into ranges of similar size (:func:`~pipeline.merge.partitions.sampled_splits`)."""
        return sampled_splits(self.paths(*names), partitions, key)

    def spill(self) -> SpillFolder:
        """A spill folder for one step's partitions, removed when the step is done with it."""
        return SpillFolder(self.spill_parent, ".merge-spill-")


class StepReads:
    """How far a merge step is that first reads every file's rows (spilling them into ranges when
    they do not fit the budget), then works on what it read a range at a time: the reading is
    ``read_share`` of the step, told as its rows come (:meth:`read`); each range done an equal
    part of the rest (:meth:`ranges_done`). The documents and the mentions tell the full merge's
    line so (MergeInputs.through); before, they moved it only as they ended, and at 30M the line
    forecast twice the time left while the mentions ran beside the sentences unseen. A step that
    writes as it reads (the predications; the sentences, whose rows are those of every range's
    pass) is all reading: ``read_share`` 1."""

    def __init__(self, inputs: MergeInputs, step: str, rows: int, read_share: float) -> None:
        self.inputs, self.step, self.rows, self.read_share = inputs, step, max(rows, 1), read_share
        self._read = 0

    def read(self, rows: int) -> None:
        """``rows`` more rows of the files are read."""
        self._read += rows
        self.inputs.through(self.step, self.read_share * min(1.0, self._read / self.rows))

    def ranges_done(self, done: int, of: int) -> None:
        """``done`` of the step's ``of`` ranges are worked through (after every row is read)."""
        self.inputs.through(self.step, self.read_share + (1 - self.read_share) * done / max(of, 1))

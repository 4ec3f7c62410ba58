"""Benchmark: each evidence edge's distinct documents, sentences and predications, grouped by sorts of
(edge, value) keys (``group_evidence``'s way) against Arrow's hash aggregation of the same rows in the
same run.

The rows are a build's own: its predications table's rows on concept pairs (subject and object
differ), each with its pair's edge code, in edge order -- what the evidence grouping of a first
build hands ``pipeline.store.evidence_rows.group_evidence``, one memory-budget partition at a time
(``--rows`` of them, the first in edge order). The peer is what a user of pyarrow would write, and
what litpath did until this change: ``group_by("edge").aggregate([("doc", "distinct"),
("sentence_id", "distinct"), ("predication_id", "count_distinct")])``, then each list sorted and cut
at the cap. Both start from the same coded rows and must give the same lists and counts (checked).
The readable evidence's predicate counts (each predicate's distinct predications on the edge, most
first) likewise: ``_predicate_counts`` against ``group_by(["edge", "predicate"])`` with
``count_distinct`` and a sort of the counts.

Results are printed and appended to bench/results/grouped_distinct.md and .json with the CPU model
and the load average (other work may share the cores).

    .venv/bin/python bench/grouped_distinct.py --tables results/builds/<id>/tables
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from on_demand_paths import append_run, cpu_model  # noqa: E402

from pipeline.store import evidence_rows  # noqa: E402

RESULTS = REPO / "bench" / "results" / "grouped_distinct.md"
CAP = 1_000  # the default max_evidence


def evidence_rows_of(tables: Path, limit: int) -> pa.Table:
    """The predications on concept pairs as evidence rows (edge = the pair's code, pairs in key
    order), sorted by edge; the first ``limit`` rows."""
    table = pq.read_table(tables / "predications.parquet",
                          columns=["doc_id", "sentence_id", "predication_id", "predicate", "subject_cui", "object_cui"])  # fmt: skip
    table = table.filter(pc.not_equal(table["subject_cui"], table["object_cui"]))
    low = pc.min_element_wise(table["subject_cui"], table["object_cui"])
    high = pc.max_element_wise(table["subject_cui"], table["object_cui"])
    (low_code, high_code), _ = evidence_rows.sorted_codes(low, high)
    width = int(max(low_code.max(), high_code.max())) + 1
    pair = low_code.astype(np.int64) * width + high_code
    order = np.argsort(pair, kind="stable")
    distinct, edge = np.unique(pair[order], return_inverse=True)
    rows = pa.table({"edge": edge.astype(np.int32), "doc_id": table["doc_id"].take(order),
                     "sentence_id": table["sentence_id"].take(order), "predication_id": table["predication_id"].take(order),
                     "predicate": table["predicate"].take(order), "subject_cui": table["subject_cui"].take(order)},
                    schema=evidence_rows.EVIDENCE_ROWS)  # fmt: skip
    return rows.slice(0, limit)


def by_sorts(rows: pa.Table, keys: tuple[pa.Array, pa.Array]) -> pa.Table:
    return evidence_rows.group_evidence(rows, keys, CAP)


def by_hash_aggregation(rows: pa.Table, keys: tuple[pa.Array, pa.Array]) -> pa.Table:
    """The peer: Arrow's hash aggregation, then each list sorted and capped (the same columns)."""
    coded = evidence_rows._CodedRows.of(rows)
    grouped = (
        coded.rows.group_by("edge", use_threads=False)
        .aggregate([("doc", "distinct"), ("sentence_id", "distinct"), ("predication_id", "count_distinct")])
        .sort_by("edge")
    )
    columns = {"edge": grouped["edge"].combine_chunks(), "n_predications": grouped["predication_id_count_distinct"]}
    for name, column in (("documents", "doc_distinct"), ("sentence_ids", "sentence_id_distinct")):
        lists = grouped[column].combine_chunks()
        lengths = pc.list_value_length(lists).to_numpy(zero_copy_only=False).astype(np.int64)
        owner = np.repeat(np.arange(len(lists), dtype=np.int64), lengths)
        flat = pa.table({"owner": owner, "value": pc.list_flatten(lists)}).sort_by([("owner", "ascending"), ("value", "ascending")])
        position = np.arange(flat.num_rows) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        offsets = np.r_[0, np.cumsum(np.minimum(lengths, CAP))].astype(np.int32)
        values = flat["value"].combine_chunks().filter(pa.array(position < CAP))
        if name == "documents":
            values = pc.take(coded.doc_ids, values)
        columns[name] = pa.ListArray.from_arrays(pa.array(offsets), values)
        columns[f"n_{name}"] = pa.array(lengths)
    return pa.table({"cui_a": pc.take(keys[0], columns["edge"]), "cui_b": pc.take(keys[1], columns["edge"]),
                     "documents": columns["documents"], "sentence_ids": columns["sentence_ids"],
                     "n_documents": columns["n_documents"], "n_predications": columns["n_predications"].cast(pa.int64())})  # fmt: skip


def predicate_counts_by_hash_aggregation(coded, edges: pa.Array) -> pa.Array:
    """The peer of ``_predicate_counts``: Arrow's hash aggregation, then a sort of the counts."""
    counts = coded.rows.group_by(["edge", "predicate"], use_threads=False).aggregate([("predication_id", "count_distinct")])
    counts = counts.sort_by([("edge", "ascending"), ("predication_id_count_distinct", "descending"),
                             ("predicate", "ascending")])  # fmt: skip
    owners = np.searchsorted(edges.to_numpy(), counts["edge"].to_numpy())
    values = pa.table({"predicate": pc.take(coded.predicates, counts["predicate"]),
                       "count": counts["predication_id_count_distinct"].cast(pa.int64())})  # fmt: skip
    return evidence_rows.lists_by_owner(values, owners, len(edges), evidence_rows.PREDICATE_COUNT)


def median_seconds(run, repeat: int) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds of this process): the sorts of 4M keys and more
    run on two threads (``sort_in_place``), so the CPU time is the fair comparison on a machine
    whose other core is busy."""
    walls, cpus = [], []
    for _ in range(repeat):
        started, cpu = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=Path, required=True, help="a build's tables folder")
    parser.add_argument("--rows", type=int, default=5_000_000, help="rows grouped (a partition's worth)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each, the median reported")
    args = parser.parse_args()
    rows = evidence_rows_of(args.tables, args.rows)
    n_edges = int(pc.max(rows["edge"]).as_py()) + 1
    keys = (pa.array([f"a{i}" for i in range(n_edges)]), pa.array([f"b{i}" for i in range(n_edges)]))
    ours, peer = by_sorts(rows, keys), by_hash_aggregation(rows, keys)
    same = ours.select(peer.column_names).cast(peer.schema).equals(peer)
    sorts, sorts_cpu = median_seconds(lambda: by_sorts(rows, keys), args.repeat)
    hashed, hashed_cpu = median_seconds(lambda: by_hash_aggregation(rows, keys), args.repeat)
    coded = evidence_rows._CodedRows.of(rows)
    edges = pa.array(np.unique(rows["edge"].to_numpy()).astype(np.int32))
    counts_same = evidence_rows._predicate_counts(coded, edges).equals(predicate_counts_by_hash_aggregation(coded, edges))
    counts_sorts, counts_sorts_cpu = median_seconds(lambda: evidence_rows._predicate_counts(coded, edges), args.repeat)
    counts_hashed, counts_hashed_cpu = median_seconds(lambda: predicate_counts_by_hash_aggregation(coded, edges), args.repeat)
    same = same and counts_same
    record = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "cpu": cpu_model(), "cores": os.cpu_count(),
        "pyarrow": pa.__version__, "numpy": np.__version__, "tables": str(args.tables), "rows": rows.num_rows,
        "edges": ours.num_rows, "repeat": args.repeat, "by_sorts_s": round(sorts, 3), "hash_aggregation_s": round(hashed, 3),
        "ratio": round(hashed / sorts, 2), "by_sorts_cpu_s": round(sorts_cpu, 3),
        "hash_aggregation_cpu_s": round(hashed_cpu, 3), "cpu_ratio": round(hashed_cpu / sorts_cpu, 2),
        "predicate_counts": {"by_sorts_s": round(counts_sorts, 3), "by_sorts_cpu_s": round(counts_sorts_cpu, 3),
                             "hash_aggregation_s": round(counts_hashed, 3),
                             "hash_aggregation_cpu_s": round(counts_hashed_cpu, 3), "same": bool(counts_same)}, "same": bool(same), "load_average": os.getloadavg()[0],
    }  # fmt: skip
    print(f"{rows.num_rows:,} rows on {ours.num_rows:,} edges: by sorts {sorts:.2f} s ({sorts_cpu:.2f} s CPU), "
          f"hash aggregation {hashed:.2f} s ({hashed_cpu:.2f} s CPU): {hashed / sorts:.2f}x wall, "
          f"{hashed_cpu / sorts_cpu:.2f}x CPU; predicate counts by sorts {counts_sorts:.2f} s ({counts_sorts_cpu:.2f} "
          f"s CPU), hash aggregation {counts_hashed:.2f} s ({counts_hashed_cpu:.2f} s CPU); same: {same}")  # fmt: skip
    lines = [
        f"\n## {record['date']} -- {rows.num_rows:,} evidence rows on {ours.num_rows:,} edges, medians of {args.repeat}",
        "",
        f"machine: {record['cpu']}, {record['cores']} CPUs; pyarrow {record['pyarrow']}, numpy {record['numpy']}; "
        f"rows of {args.tables}; load average at the end {record['load_average']:.2f}",
        "",
        "| grouping | wall s | CPU s | wall ratio | CPU ratio | same records |",
        "|---|---:|---:|---:|---:|---|",
        f"| by sorts of (edge, value) keys (`group_evidence`, without readable sources) | {sorts:.2f} | "
        f"{sorts_cpu:.2f} | 1 | 1 | {same} |",
        f"| Arrow hash aggregation (distinct, distinct, count_distinct), lists sorted | {hashed:.2f} | "
        f"{hashed_cpu:.2f} | {hashed / sorts:.2f}x | {hashed_cpu / sorts_cpu:.2f}x | |",
        f"| predicate counts by sorts of ((edge, predicate), predication) keys (`_predicate_counts`) | "
        f"{counts_sorts:.2f} | {counts_sorts_cpu:.2f} | 1 | 1 | {counts_same} |",
        f"| predicate counts by Arrow hash aggregation (count_distinct), counts sorted | {counts_hashed:.2f} | "
        f"{counts_hashed_cpu:.2f} | {counts_hashed / counts_sorts:.2f}x | {counts_hashed_cpu / counts_sorts_cpu:.2f}x | |",
    ]
    append_run(RESULTS, "# Evidence grouping: sorts against Arrow's hash aggregation (bench/grouped_distinct.py)", lines,
               record)  # fmt: skip
    if not same:
        sys.exit("the two groupings differ")
    print(f"appended to {RESULTS}")


if __name__ == "__main__":
    main()

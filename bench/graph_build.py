"""Benchmark: litpath's graph build against a plain pandas implementation of the same weights.

    .venv/bin/python bench/graph_build.py --predications 10000000          # full scale
    .venv/bin/python bench/graph_build.py --predications 200000 --out /tmp/gb   # quick check
    .venv/bin/python bench/graph_build.py --tables results/<build>/tables       # real merged tables

Without ``--tables`` it writes a synthetic set of merged Parquet tables (predications with
skewed concept frequencies, some predications split into two argument rows, self pairs;
mentions; citations with reciprocal duplicates; concepts) in the project's schemas. Each
implementation then runs in its own child process (same machine, same run) so that its
peak resident memory is its own; both write an edges Parquet file, and the parent checks
that they hold the same edges with the same weights. Results are appended to
``bench/results/graph_build.md``.

The pandas peer is what an analyst would write: read the three tables into DataFrames of
strings, ``groupby`` / ``merge`` / ``drop_duplicates``, weights, ``-log``, to Parquet.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.builds.tables import CITATIONS, CONCEPTS, MENTIONS, PREDICATIONS  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "graph_build.md"


# --- synthetic merged tables --------------------------------------------------------------


def _keys(prefix: str, width: int, codes: np.ndarray, n: int) -> pa.Array:
    dictionary = pa.array([f"{prefix}{i:0{width}d}" for i in range(n)], pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), dictionary).cast(pa.string())


def _skewed(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """Ranks in 0..n-1 with a heavy head (a few concepts in most predications, like SemMedDB)."""
    return np.minimum((n * rng.random(size) ** 2.5).astype(np.int64), n - 1)


def write_synthetic_tables(out: Path, n_predications: int, seed: int = 0) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    n_concepts = max(500, n_predications // 40)
    n_docs = max(100, n_predications // 5)
    chunk = 2_000_000
    writer = pq.ParquetWriter(out / "predications.parquet", PREDICATIONS)
    next_pid, rows = 1, 0
    while rows < n_predications:
        m = min(chunk, n_predications - rows)
        pid = next_pid + np.arange(m, dtype=np.int64)
        split = rng.random(m) < 0.05  # 5 % of predications carry two subject arguments
        pid = np.sort(np.concatenate([pid, pid[split]]))
        k = len(pid)
        subj = _skewed(rng, n_concepts, k)
        obj = _skewed(rng, n_concepts, k)
        self_pair = rng.random(k) < 0.01
        obj[self_pair] = subj[self_pair]
        doc = (pid * 7919) % n_docs
        table = pa.table(
            {
                "predication_id": pa.array(pid),
                "doc_id": _keys("PMID:", 8, doc, n_docs),
                "sentence_id": pa.array(pid * 3),
                "predicate": pa.array(np.full(k, "ASSOCIATED_WITH", object), pa.string()),
                "subject_cui": _keys("C", 7, subj, n_concepts),
                "object_cui": _keys("C", 7, obj, n_concepts),
                "subject_novelty": pa.array(rng.random(k) < 0.9),
                "object_novelty": pa.array(rng.random(k) < 0.9),
            },
            schema=PREDICATIONS,
        )
        writer.write_table(table, row_group_size=1 << 20)
        next_pid += m
        rows += k
    writer.close()

    n_mentions = n_predications * 3 // 2
    doc = np.sort(rng.integers(0, n_docs, n_mentions))
    cui = _skewed(rng, n_concepts, n_mentions)
    pq.write_table(
        pa.table(
            {
                "doc_id": _keys("PMID:", 8, doc, n_docs),
                "cui": _keys("C", 7, cui, n_concepts),
                "count": pa.array(rng.integers(1, 6, n_mentions).astype(np.int32)),
            },
            schema=MENTIONS,
        ),
        out / "mentions.parquet",
        row_group_size=1 << 20,
    )
    n_citations = n_docs * 4
    citing = rng.integers(0, n_docs, n_citations)
    cited = _skewed(rng, n_docs, n_citations)
    back = rng.random(n_citations) < 0.05  # reciprocal citations, merged by the undirected rule
    citing, cited = np.concatenate([citing, cited[back]]), np.concatenate([cited, citing[back]])
    pq.write_table(
        pa.table(
            {"citing": _keys("PMID:", 8, citing, n_docs), "cited": _keys("PMID:", 8, cited, n_docs)},
            schema=CITATIONS,
        ),
        out / "citations.parquet",
    )
    semtypes = pa.array([["dsyn"] if i % 3 else ["aapp"] for i in range(n_concepts)], pa.list_(pa.string()))
    pq.write_table(
        pa.table(
            {
                "cui": _keys("C", 7, np.arange(n_concepts), n_concepts),
                "name": pa.array([f"concept {i}" for i in range(n_concepts)]),
                "semtypes": semtypes,
            },
            schema=CONCEPTS,
        ),
        out / "concepts.parquet",
    )
    return {
        "predication_rows": rows,
        "mention_rows": n_mentions,
        "citation_rows": len(citing),
        "concepts": n_concepts,
        "documents": n_docs,
    }


# --- the pandas peer ----------------------------------------------------------------------


def pandas_build(tables: Path, out: Path) -> None:
    import pandas as pd

    p = pd.read_parquet(
        tables / "predications.parquet", columns=["predication_id", "subject_cui", "object_cui"]
    )
    p = p[p.subject_cui != p.object_cui]
    p["a"] = p[["subject_cui", "object_cui"]].min(axis=1)
    p["b"] = p[["subject_cui", "object_cui"]].max(axis=1)
    pairs = (
        p.drop_duplicates(["predication_id", "a", "b"])
        .groupby(["a", "b"])
        .size()
        .rename("together")
        .reset_index()
    )
    occurrences = pd.concat(
        [
            p[["predication_id", "subject_cui"]].set_axis(["predication_id", "cui"], axis=1),
            p[["predication_id", "object_cui"]].set_axis(["predication_id", "cui"], axis=1),
        ]
    ).drop_duplicates()
    n = occurrences.groupby("cui").size().rename("n")
    pairs = pairs.join(n.rename("n_a"), on="a").join(n.rename("n_b"), on="b")
    pairs["weight"] = pairs.together / (pairs.n_a + pairs.n_b - pairs.together)
    cc = pairs.assign(kind="concept_concept")[["kind", "a", "b", "weight"]]

    m = pd.read_parquet(tables / "mentions.parquet")
    m = m[m["count"] > 0].groupby(["doc_id", "cui"], as_index=False)["count"].sum()
    m["weight"] = m["count"] / m.groupby("doc_id")["count"].transform("sum")
    ca = m.rename(columns={"cui": "a", "doc_id": "b"}).assign(kind="concept_abstract")[
        ["kind", "a", "b", "weight"]
    ]

    c = pd.read_parquet(tables / "citations.parquet")
    c = c[c.citing != c.cited]
    c = pd.DataFrame(
        {"a": c[["citing", "cited"]].min(axis=1), "b": c[["citing", "cited"]].max(axis=1)}
    ).drop_duplicates()
    degree = pd.concat([c.a, c.b]).value_counts()
    c["weight"] = 1.0 / (c.a.map(degree).to_numpy() + c.b.map(degree).to_numpy())
    aa = c.assign(kind="abstract_abstract")[["kind", "a", "b", "weight"]]

    edges = pd.concat([cc, ca, aa], ignore_index=True)
    edges["cost"] = (-np.log(edges.weight)).astype(np.float32)
    edges.to_parquet(out / "edges.parquet", index=False)


def litpath_build(tables: Path, out: Path) -> None:
    from pipeline.graph.build import build_graph

    build_graph(tables, out, {})


def _worker(which: str, tables: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    import pandas  # noqa: F401  -- imports are not part of either timing

    import pipeline.graph.build  # noqa: F401

    start = time.perf_counter()
    (litpath_build if which == "litpath" else pandas_build)(tables, out)
    seconds = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "peak_rss_mib": peak_kib / 1024}))


def _run(which: str, tables: Path, out: Path) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--worker", which, "--tables", str(tables), "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def same_edges(litpath_dir: Path, pandas_dir: Path) -> tuple[bool, str]:
    import pandas as pd

    keys = (
        pq.read_table(litpath_dir / "vertices.parquet", columns=["vid", "key"])
        .to_pandas()
        .set_index("vid")["key"]
    )
    ours = pq.read_table(litpath_dir / "edges.parquet").to_pandas()
    ours["a"], ours["b"] = ours.src.map(keys).to_numpy(), ours.dst.map(keys).to_numpy()
    theirs = pd.read_parquet(pandas_dir / "edges.parquet")
    if len(ours) != len(theirs):
        return False, f"edge counts differ: litpath {len(ours)}, pandas {len(theirs)}"
    joined = ours.merge(theirs, on=["kind", "a", "b"], how="inner", suffixes=("", "_pd"))
    if len(joined) != len(ours):
        return False, f"{len(ours) - len(joined)} edges only on one side"
    worst = float(np.max(np.abs(joined.weight - joined.weight_pd) / joined.weight_pd)) if len(joined) else 0.0
    if worst > 1e-12 or not np.array_equal(joined.cost.to_numpy(), joined.cost_pd.to_numpy()):
        return False, f"weights differ (max relative {worst:.3g})"
    return True, f"{len(ours)} edges identical (weights to 1e-12, float32 costs bit-equal)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--predications", type=int, default=10_000_000, help="synthetic predication rows")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tables", type=Path, help="existing merged tables instead of synthetic ones")
    parser.add_argument("--out", type=Path, default=Path("results/bench/graph_build"))
    parser.add_argument("--worker", choices=["litpath", "pandas"], help=argparse.SUPPRESS)
    parser.add_argument(
        "--no-record", action="store_true", help="do not append to bench/results/graph_build.md"
    )
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker, args.tables, args.out)
        return

    if args.tables is None:
        tables = args.out / "tables"
        start = time.perf_counter()
        sizes = write_synthetic_tables(tables, args.predications, args.seed)
        print(f"synthetic tables: {sizes} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    else:
        tables = args.tables
        sizes = {
            name: pq.ParquetFile(tables / f"{name}.parquet").metadata.num_rows
            for name in ("predications", "mentions", "citations")
        }
        sizes = {
            "predication_rows": sizes["predications"],
            "mention_rows": sizes["mentions"],
            "citation_rows": sizes["citations"],
        }
    input_rows = sizes["predication_rows"] + sizes["mention_rows"] + sizes["citation_rows"]

    ours = _run("litpath", tables, args.out / "litpath")
    theirs = _run("pandas", tables, args.out / "pandas")
    ok, detail = same_edges(args.out / "litpath", args.out / "pandas")
    counts = json.loads((args.out / "litpath" / "graph_counts.json").read_text())["counts"]
    ratio = theirs["seconds"] / ours["seconds"]
    lines = [
        f"## {datetime.now(UTC).isoformat(timespec='seconds')} — {sizes['predication_rows']:,} predication rows",
        "",
        f"machine: {platform.machine()}, {platform.python_version()}, `{platform.node()}`; "
        f"input rows {input_rows:,} (predications {sizes['predication_rows']:,}, mentions {sizes['mention_rows']:,}, "
        f"citations {sizes['citation_rows']:,}); graph {counts['vertices']:,} vertices, {counts['edges']:,} edges",
        "",
        "| implementation | wall s | input rows/s | peak RSS MiB |",
        "|---|---:|---:|---:|",
        f"| litpath build_graph (also writes vertices, graph.bp, digest) | {ours['seconds']:.2f} | "
        f"{input_rows / ours['seconds']:,.0f} | {ours['peak_rss_mib']:,.0f} |",
        f"| pandas groupby peer (edges only) | {theirs['seconds']:.2f} | {input_rows / theirs['seconds']:,.0f} | "
        f"{theirs['peak_rss_mib']:,.0f} |",
        "",
        f"speed-up litpath / pandas: **{ratio:.2f}x**; same edges: **{'yes' if ok else 'NO'}** ({detail})",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if not args.no_record:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        if not RESULTS.exists():
            RESULTS.write_text(
                "# Graph build benchmark (bench/graph_build.py)\n\nTarget: >= 3x the pandas peer's "
                "throughput and < 4 GB peak RSS at 10M predications.\n\n"
            )
        with RESULTS.open("a") as f:
            f.write(report + "\n")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()

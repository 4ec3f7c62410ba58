"""One comparison run: a query set -> literature paths -> SPOKE classification -> a :class:`CompareRun`.

Query sets name concepts by CUI, or SPOKE nodes by identifier (mapped to every CUI of that
node through the mapping, as the paper mapped 54 SPOKE nodes to 68 CUIs). Accepted files:

* plain text: one entry per line (``#`` comments, blank lines ignored); an entry that looks
  like a concept key (``C0000000`` or ``GENE:<entrez>``) is a CUI, anything else a SPOKE
  identifier of any label;
* CSV with a header holding ``cui`` or ``spoke_identifier`` (optionally ``spoke_label``).
"""

from __future__ import annotations

import csv
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.compare.classify import Comparator, Comparison, query_pairs
from pipeline.compare.literature import BuildGraph, PathFinder, attach_evidence
from pipeline.compare.spoke import CONCEPT_KEY, CuiMapping


@dataclass
class QueryEntry:
    entry: str  # as written
    kind: str  # "cui" | "spoke"
    cuis: list[str]
    label: str | None = None
    line: int = 0


@dataclass
class QuerySet:
    path: str
    entries: list[QueryEntry]

    @property
    def concepts(self) -> list[str]:
        return list(dict.fromkeys(c for e in self.entries for c in e.cuis))

    @property
    def unresolved(self) -> list[QueryEntry]:
        return [e for e in self.entries if not e.cuis]


def read_query_set(path: str | Path, mapping: CuiMapping) -> QuerySet:
    """Read a query file (see the module docstring); errors name file and line."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"query file not found: {path}")
    text = path.read_text(encoding="utf-8")
    first = next((line for line in text.splitlines() if line.strip() and not line.startswith("#")), "")
    entries: list[QueryEntry] = []
    header = [h.strip() for h in first.split(",")]
    if "cui" in header or "spoke_identifier" in header:
        reader = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
        for line, row in enumerate(reader, start=2):
            cui = (row.get("cui") or "").strip()
            identifier = (row.get("spoke_identifier") or "").strip()
            label = (row.get("spoke_label") or "").strip() or None
            if cui:
                if not CONCEPT_KEY.match(cui):
                    raise ValueError(f"{path}:{line}: {cui!r} is not a CUI (C0000000) or GENE:<entrez>")
                entries.append(QueryEntry(cui, "cui", [cui], line=line))
            elif identifier:
                entries.append(
                    QueryEntry(identifier, "spoke", mapping.cuis_of(identifier, label), label, line)
                )
            else:
                raise ValueError(f"{path}:{line}: neither cui nor spoke_identifier given")
        return QuerySet(str(path), entries)
    for line, raw in enumerate(text.splitlines(), start=1):
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        if CONCEPT_KEY.match(entry):
            entries.append(QueryEntry(entry, "cui", [entry], line=line))
        else:
            entries.append(QueryEntry(entry, "spoke", mapping.cuis_of(entry), line=line))
    return QuerySet(str(path), entries)


@dataclass
class CompareRun:
    comparisons: list[Comparison]
    provenance: dict[str, Any]
    coverage: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    round_trips: int = 0

    def counts(self) -> dict[str, int]:
        from pipeline.compare.classify import SCENARIOS

        found = Counter(c.scenario for c in self.comparisons)
        return {s: found.get(s, 0) for s in SCENARIOS}


def coverage_of(
    query: QuerySet | None, comparisons: list[Comparison], build: BuildGraph | None, mapping: CuiMapping
) -> dict[str, Any]:
    """Mapping coverage of the query concepts and of every concept on the paths, unmapped per type."""
    mapped = {c for comp in comparisons for c in comp.mapped}
    on_paths = list(dict.fromkeys(c for comp in comparisons for c in comp.concepts))
    out: dict[str, Any] = {}
    if query is not None:
        concepts = query.concepts
        out["query"] = {
            "entries": len(query.entries),
            "entries_unresolved": [e.entry for e in query.unresolved],
            "concepts": len(concepts),
            "in_graph": sum(1 for c in concepts if build is None or c in build.vid_of),
            "mapped": sum(1 for c in concepts if c in mapped),
            "in_mapping_not_in_neo4j": sorted(c for c in concepts if mapping.nodes_of(c) and c not in mapped),
        }
    unmapped_by_type: Counter[str] = Counter()
    for c in on_paths:
        if c not in mapped:
            types = (build.semtypes.get(c) if build is not None else None) or ["(unknown)"]
            unmapped_by_type[types[0]] += 1
    out["paths"] = {
        "concepts": len(on_paths),
        "mapped": sum(1 for c in on_paths if c in mapped),
        "unmapped": sum(1 for c in on_paths if c not in mapped),
        "unmapped_by_semtype": dict(sorted(unmapped_by_type.items())),
    }
    return out


def run_comparison(
    build: BuildGraph,
    mapping: CuiMapping,
    comparator: Comparator,
    query: QuerySet,
    *,
    ordered: bool = False,
    mongo_db=None,
    settings: dict[str, Any] | None = None,
) -> CompareRun:
    """Classify every pair of the query set's concepts; see :mod:`pipeline.compare.classify`."""
    timings: dict[str, float] = {}
    started = time.perf_counter()
    trips_before = comparator.spoke.round_trips
    pairs = query_pairs(query.concepts, ordered)
    finder = PathFinder(build)
    t = time.perf_counter()
    paths = [finder.path(a, b) for a, b in pairs]
    timings["literature_paths"] = time.perf_counter() - t
    t = time.perf_counter()
    evidence_status = attach_evidence(paths, mongo_db, build.build_id)
    timings["evidence"] = time.perf_counter() - t
    t = time.perf_counter()
    comparisons = comparator.compare_paths(paths)
    timings["spoke"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - started
    provenance = {
        "build_id": build.build_id,
        "build_dir": str(build.build_dir),
        "graph_digest": build.graph_digest,
        "edge_kinds": build.edge_kinds,
        "graph_config": build.config.get("graph", {}),
        "query_file": query.path,
        "pairs": "ordered" if ordered else "unordered",
        "hop_limit": comparator.hops,
        "pair_hop_limit": comparator.pair_hops,
        "evidence": evidence_status,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        **(settings or {}),
    }
    return CompareRun(
        comparisons,
        provenance,
        coverage_of(query, comparisons, build, mapping),
        timings,
        comparator.spoke.round_trips - trips_before,
    )


__all__ = ["CompareRun", "QueryEntry", "QuerySet", "coverage_of", "read_query_set", "run_comparison"]

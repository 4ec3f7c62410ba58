"""One comparison run: a query set -> literature paths -> SPOKE classification -> a :class:`CompareRun`.

Query sets name concepts by CUI, or SPOKE nodes by identifier (mapped to every CUI of that
node through the mapping, as the paper mapped 54 SPOKE nodes to 68 CUIs). Accepted files:

* plain text: one entry per line (``#`` comments, blank lines ignored); an entry that looks
  like a concept key (``C0000000`` or ``GENE:<entrez>``) is a CUI, anything else a SPOKE
  identifier of any label;
* CSV with a header holding ``cui`` or ``spoke_identifier`` (optionally ``spoke_label``);
* ``query_set.json`` as :func:`write_query_set` writes it (a set already resolved, e.g.
  with a SPOKE neighbourhood, by ``litpath query-set``).

A query set may also be taken from SPOKE itself, as the paper built its own: the nodes
around a seed (:func:`neighbourhood_entries`, "54 connected vertices, of which 6 are of type
Disease and 48 are of type Protein" around COVID-19).

The path service classifies one path or pair at a time with the same code
(:func:`classify_given_path`, :func:`classify_pair`), so the CLI and the service give the same
answer for the same inputs.
"""

from __future__ import annotations

import csv
import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.builds.layout import BuildLayout, CompareFolder, MappingFolder
from pipeline.compare.classify import Comparator, Comparison, query_pairs, same_node_pairs
from pipeline.compare.literature import (
    NO_BUILD,
    NO_STORE,
    TIE_RULE,
    LiteratureHop,
    LiteraturePath,
    PathFinder,
    attach_evidence,
)
from pipeline.compare.spoke import CONCEPT_KEY, NEIGHBOURHOOD_ORDER, CuiMapping, EdgeCutoff
from pipeline.graph.paper_figures import SCALED as GROWING_WITH_THE_CORPUS
from pipeline.graph.paper_figures import paper_scaled, predication_rows


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
    neighbourhood: dict[str, Any] | None = None  # seed, hops, labels and the SPOKE nodes found

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
    if path.suffix == ".json":
        return _read_resolved(path)
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


def _read_resolved(path: Path) -> QuerySet:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        entries = [
            QueryEntry(e["entry"], e["kind"], list(e["cuis"]), e.get("label"), int(e.get("line") or 0))
            for e in record["entries"]
        ]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a query_set.json written by `litpath query-set`: {exc}") from None
    return QuerySet(str(record.get("source") or path), entries, record.get("neighbourhood"))


def neighbourhood_entries(
    spoke, mapping: CuiMapping, seed: str, *, seed_label: str | None = None, hops: int = 1,
    labels: list[str] | tuple[str, ...] = ("Disease", "Protein"), limit: int = 500,
    cutoffs: tuple[EdgeCutoff, ...] | list[EdgeCutoff] = (),
) -> tuple[list[QueryEntry], dict[str, Any]]:  # fmt: skip
    """Query entries for the SPOKE nodes around ``seed`` (see :meth:`SpokeGraph.neighbourhood`),
    each mapped to its CUIs, and the record of what was asked and found.

    At most ``limit`` nodes are kept, the first in :data:`NEIGHBOURHOOD_ORDER`; the record says
    how many were found and kept, and warns when some were cut. Its ``summary`` is the paper's
    own count: "N SPOKE nodes -> M CUIs" (the paper's 54 nodes were mapped to 68 CUIs)."""
    seed_node, found = spoke.neighbourhood(
        seed, seed_label=seed_label, hops=hops, labels=labels, cutoffs=cutoffs
    )
    if seed_node is None:
        raise ValueError(f"SPOKE neighbourhood: no node with identifier {seed!r}" + (
            f" and label {seed_label}" if seed_label else "") + f" in {spoke.where}")  # fmt: skip
    nodes = found[:limit]
    entries = [
        QueryEntry(
            node["identifier"], "spoke", mapping.cuis_of(node["identifier"], node["label"]), node["label"]
        )
        for node in nodes
    ]
    cuis = list(dict.fromkeys(c for entry in entries for c in entry.cuis))
    by_label = Counter(node["label"] for node in nodes)
    record = {
        "seed": seed_node,
        "hops": hops,
        "labels": list(labels),
        "limit": limit,
        "order": NEIGHBOURHOOD_ORDER,
        "cutoffs": [cutoff.as_dict() for cutoff in cutoffs],
        "relationships": spoke.relationships.as_dict(),
        "nodes_found": len(found),
        "nodes_kept": len(nodes),
        "nodes_found_by_label": dict(sorted(Counter(node["label"] for node in found).items())),
        "nodes": [{**node, "cuis": entry.cuis} for node, entry in zip(nodes, entries, strict=True)],
        "nodes_by_label": dict(sorted(by_label.items())),
        "nodes_without_cui": [
            node["identifier"] for node, entry in zip(nodes, entries, strict=True) if not entry.cuis
        ],
        "cuis": len(cuis),
        "summary": f"{len(nodes)} SPOKE nodes → {len(cuis)} CUIs",
    }
    if len(found) > limit:
        record["warning"] = (
            f"the neighbourhood of {seed} has {len(found)} nodes; only the first {limit} are kept "
            f"({NEIGHBOURHOOD_ORDER}): raise the limit, add edge cutoffs or narrow the labels"
        )
    return entries, record


def write_query_set(query: QuerySet, out_dir: str | Path) -> dict[str, Path]:
    """``query_set.json`` (entries, their CUIs, the neighbourhood record) and
    ``query_concepts.txt`` (the CUIs, one per line: the rows a solve may store)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "source": query.path,
        "entries": [
            {"entry": e.entry, "kind": e.kind, "cuis": e.cuis, "label": e.label, "line": e.line}
            for e in query.entries
        ],
        "concepts": query.concepts,
        "unresolved": [e.entry for e in query.unresolved],
        "neighbourhood": query.neighbourhood,
    }
    paths = {"record": CompareFolder(out).query_set, "concepts": CompareFolder(out).query_concepts}
    paths["record"].write_text(json.dumps(record, indent=2) + "\n")
    paths["concepts"].write_text("".join(f"{c}\n" for c in query.concepts))
    return paths


@dataclass
class CompareRun:
    comparisons: list[Comparison]
    provenance: dict[str, Any]
    coverage: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    round_trips: int = 0

    def counts(self, reading: str = "adjacency") -> dict[str, int]:
        """Pairs per scenario under a reading of "found in the SPOKE shortest paths"
        (``adjacency``, the default, or ``shortest``: :data:`pipeline.compare.classify.READINGS`)."""
        from pipeline.compare.classify import SCENARIOS

        found = Counter(
            c.scenario if reading == "adjacency" else (c.scenario_strict or c.scenario)
            for c in self.comparisons
        )
        return {s: found.get(s, 0) for s in SCENARIOS}

    def cause_counts(self) -> dict[str, dict[str, int]]:
        """Scenario 4 and none, split by cause (:data:`pipeline.compare.classify.CAUSES`)."""
        from pipeline.compare.classify import CAUSES

        found = Counter((c.scenario, c.cause) for c in self.comparisons)
        return {s: {cause: found.get((s, cause), 0) for cause in causes} for s, causes in CAUSES.items()}

    def tie_counts(self) -> dict[str, int]:
        """Pairs with a literature path, those whose shortest path is not the only one, and the
        most equal-cost paths of one pair."""
        counted = [c.literature.shortest_paths for c in self.comparisons
                   if c.literature is not None and c.literature.shortest_paths is not None]  # fmt: skip
        return {
            "pairs_counted": len(counted),
            "pairs_tied": sum(1 for n in counted if n > 1),
            "most_paths": max(counted, default=0),
        }


def coverage_of(
    query: QuerySet | None,
    comparisons: list[Comparison],
    graph,
    mapping: CuiMapping,
    semtypes: dict[str, list[str]] | None = None,
    obsolete: set | None = None,
) -> dict[str, Any]:
    """Mapping coverage of the query concepts and of every concept on the paths, unmapped per type
    (``obsolete``: the mapped SPOKE nodes Neo4j marks obsolete, which count as absent)."""
    mapped = {c for comp in comparisons for c in comp.mapped}
    on_paths = list(dict.fromkeys(c for comp in comparisons for c in comp.concepts))
    out: dict[str, Any] = {}
    if query is not None:
        concepts = query.concepts
        out["query"] = {
            "entries": len(query.entries),
            "entries_unresolved": [e.entry for e in query.unresolved],
            "concepts": len(concepts),
            "in_graph": sum(1 for c in concepts if graph is None or c in graph.vid_of),
            "mapped": sum(1 for c in concepts if c in mapped),
            "in_mapping_not_in_neo4j": sorted(c for c in concepts if mapping.nodes_of(c) and c not in mapped),
            "in_mapping_only_obsolete_nodes": sorted(
                c for c in concepts
                if c not in mapped and mapping.nodes_of(c) and set(mapping.nodes_of(c)) <= (obsolete or set())
            ),
        }  # fmt: skip
    unmapped_by_type: Counter[str] = Counter()
    for c in on_paths:
        if c not in mapped:
            types = (semtypes or {}).get(c) or ["(unknown)"]
            unmapped_by_type[types[0]] += 1
    out["paths"] = {
        "concepts": len(on_paths),
        "mapped": sum(1 for c in on_paths if c in mapped),
        "unmapped": sum(1 for c in on_paths if c not in mapped),
        "unmapped_by_semtype": dict(sorted(unmapped_by_type.items())),
    }
    return out


def run_comparison(
    graph,
    mapping: CuiMapping,
    comparator: Comparator,
    query: QuerySet,
    *,
    ordered: bool = False,
    mongo_db=None,
    evidence_file: Path | None = None,
    settings: dict[str, Any] | None = None,
    semtypes: dict[str, list[str]] | None = None,
) -> CompareRun:
    """Classify every pair of the query set's concepts on ``graph`` (:class:`pipeline.query.graph.Graph`);
    see :mod:`pipeline.compare.classify`.

    Pairs of two CUIs that map to one SPOKE node in Neo4j (there, and not obsolete) are
    trivially connected in SPOKE; they are listed in the provenance (``same_node_pairs``), not
    classified. Their literature paths are found with the others' (``zero_cost_ties`` counts
    every query pair), so that every node the comparison needs is looked up at once.
    """
    timings: dict[str, float] = {}
    started = time.perf_counter()
    trips_before = comparator.spoke.round_trips
    every_pair = query_pairs(query.concepts, ordered)
    finder = PathFinder(graph, count_ties=True)
    t = time.perf_counter()
    every_path = [finder.path(a, b) for a, b in every_pair]
    timings["literature_paths"] = time.perf_counter() - t
    # every mapped node the comparison needs (the query's concepts and their paths'), looked up
    # in one round trip, before the pairs of one SPOKE node are set apart on what Neo4j holds
    needed = {c for pair in every_pair for c in pair} | {c for path in every_path for c in path.concepts}
    comparator.spoke.resolve({ref for cui in needed for ref in mapping.nodes_of(cui)})
    same_node = same_node_pairs(every_pair, mapping, comparator.spoke)
    paths = [path for pair, path in zip(every_pair, every_path, strict=True) if pair not in same_node]
    t = time.perf_counter()
    evidence_status = attach_evidence(paths, mongo_db, graph.build_id, evidence_file)
    timings["evidence"] = time.perf_counter() - t
    t = time.perf_counter()
    comparisons = comparator.compare_paths(paths)
    timings["spoke"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - started
    graph_config = {**graph.config.get("graph", {}), "edge_kinds": list(graph.edge_kinds)}
    provenance = {
        "build_id": graph.build_id,
        "build_dir": provenance_path(graph.build_dir, graph.build_dir),
        "graph": graph.scope,
        "graph_edge_kinds": graph.edge_kinds,
        "graph_vertices": graph.n,
        "graph_digest": graph.graph_digest,
        "graph_distances": graph.method,
        **paper_scaled_counts(graph.build_dir, graph.scope),
        "paths_from": dict(finder.distances_used),
        "graph_config": graph_config,
        "query_file": provenance_path(query.path, graph.build_dir),
        "pairs": "ordered" if ordered else "unordered",
        "hop_limit": comparator.hops,
        "scenario4_max_hops": comparator.scenario4_max_hops,
        "relationships": comparator.spoke.relationships.as_dict(),
        "obsolete_property": comparator.spoke.obsolete_property,
        "tie_rule": TIE_RULE,
        "zero_cost_ties": finder.ties.zero_cost_ties if finder.ties is not None else 0,
        "same_node_pairs": [list(pair) for pair in sorted(same_node)],
        "evidence": evidence_status,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        **(settings or {}),
    }
    if query.neighbourhood:
        hood = query.neighbourhood
        provenance["query_neighbourhood"] = {
            key: hood.get(key)
            for key in ("seed", "hops", "labels", "nodes_by_label", "nodes_found", "nodes_kept", "limit", "order",
                        "cutoffs", "summary", "warning")
            if hood.get(key) is not None
        }  # fmt: skip
    warnings = run_warnings(comparator, query)
    if warnings:
        provenance["warnings"] = warnings
    return CompareRun(
        comparisons,
        provenance,
        coverage_of(query, comparisons, graph, mapping, semtypes, comparator.spoke.obsolete),
        timings,
        comparator.spoke.round_trips - trips_before,
    )


RELEASES = ("spoke", "umls", "semmeddb")
_SEMMEDDB_RELEASE = re.compile(r"semmed(VER\d+[A-Za-z0-9]*(?:_R)?)_", re.IGNORECASE)


def build_inputs(build_dir: str | Path) -> list[dict[str, Any]]:
    """The build's input files with their checksums: ``build.json``'s ``inputs`` once the build is
    finished, else ``config.yaml``'s ``resolved_inputs`` (the comparison runs before build.json)."""
    layout = BuildLayout(build_dir)
    try:
        if layout.record.exists():
            return list(json.loads(layout.record.read_text(encoding="utf-8")).get("inputs") or [])
        if layout.config.exists():
            from pipeline.config import read_yaml

            config = read_yaml(layout.config.read_text(encoding="utf-8")) or {}
            return list(config.get("resolved_inputs") or [])
    except (OSError, ValueError):
        return []
    return []


def releases_of(
    inputs: list[dict[str, Any]], mapping_path: str | Path | None, stated: dict[str, str]
) -> dict[str, str]:
    """The releases of SPOKE, UMLS and SemMedDB the comparison rests on: as stated (config
    ``compare.releases``, ``--release``), else as the inputs name them -- SemMedDB from its file
    names (``semmedVER43_R_PREDICATION...``: VER43_R) and checksum, UMLS and SPOKE from what
    ``build-mapping`` recorded (``mapping_stats.json``: UMLS's ``release.dat``, the SPOKE source)."""
    recorded: dict[str, Any] = {}
    if mapping_path is not None:
        stats_path = MappingFolder(Path(mapping_path).parent).stats
        try:
            recorded = json.loads(stats_path.read_text(encoding="utf-8")).get("releases") or {}
        except (OSError, ValueError):
            recorded = {}
    releases: dict[str, str] = {}
    for item in inputs:
        if str(item.get("kind", "")).startswith("semmeddb_predication"):
            name = Path(str(item.get("path", ""))).name
            match = _SEMMEDDB_RELEASE.search(name)
            if match:
                releases["semmeddb"] = (
                    f"{match.group(1)} (file {name}, sha256 {str(item.get('sha256', ''))[:12]})"
                )
                break
    if recorded.get("umls"):
        releases["umls"] = str(recorded["umls"])
    spoke = recorded.get("spoke")
    source = recorded.get("spoke_source")
    if spoke or source:
        releases["spoke"] = " ".join(part for part in (spoke, f"({source})" if source else None) if part)
    releases.update({key: value for key, value in stated.items() if value})
    return {key: releases.get(key) or "not recorded" for key in RELEASES}


def paper_scaled_counts(build_dir: Path, scope: str = "full") -> dict[str, Any]:
    """``{"paper_scaled": ..., "paper_scaled_graph": scope}``: the compared graph's counts beside
    the COAST paper's, scaled to the build's PREDICATION rows (:mod:`pipeline.graph.paper_figures`);
    empty where that graph has no graph_counts.json.

    The compared graph's, not the full graph's: the compared graph (its solve) is an input of the
    comparison, so its counts are there whenever the comparison runs, while the workflow runs the
    comparison beside the full graph's build when it compares the co-occurrence graph. Reading the
    full graph's counts "if they are there yet" made the report depend on which job finished first
    (a citation rerun's report had lost the sentence). The full graph's own figures beside the
    paper are in its graph_counts.json (``paper_scaled``) and in ``litpath describe``.
    """
    layout = BuildLayout(build_dir)
    counts_file = layout.graph(scope).counts
    if not counts_file.exists():
        return {}
    counts = json.loads(counts_file.read_text()).get("counts") or {}
    if not counts:
        return {}
    if scope != "full":  # its counts of abstracts and their edges are 0 by construction, not a finding
        counts = {key: value for key, value in counts.items() if key not in GROWING_WITH_THE_CORPUS}
    return {"paper_scaled": paper_scaled(counts, predication_rows(layout.tables.path)), "paper_scaled_graph": scope}


def run_warnings(comparator: Comparator, query: QuerySet | None = None) -> list[str]:
    """What a reader of the counts must know: a hop limit above 1 without a relationship filter
    (SPOKE's hub relationships then join nearly everything), a neighbourhood cut at its limit."""
    warnings = []
    if comparator.hops > 1 and not comparator.spoke.relationships.active:
        warnings.append(
            f"hop limit h = {comparator.hops} with no relationship filter: on SPOKE, hub relationships "
            "(ENCODES_OeP, INTERACTS_PiC, ISA) join nearly any two nodes within two relationships; set "
            "compare.relationships (allow or deny)"
        )
    if query is not None and query.neighbourhood and query.neighbourhood.get("warning"):
        warnings.append(query.neighbourhood["warning"])
    return warnings


def provenance_path(path: str | Path, build_dir: str | Path) -> str:
    """How the provenance names a file: relative to the results folder (the one holding
    ``builds/<build id>/``; else the build folder's parent) when the file is in it, else by its
    name alone. The report is served to API clients (/v1/reports/latest): where the server keeps
    its files stays in the logs. A relative path (or a description such as "SPOKE neighbourhood
    of ...") is kept as written."""
    if not Path(path).is_absolute():
        return str(path)
    build_dir = Path(build_dir).resolve()
    root = build_dir.parent.parent if build_dir.parent.name == "builds" else build_dir.parent
    file = Path(path).resolve()
    try:
        return file.relative_to(root).as_posix()
    except ValueError:
        return file.name


def given_path(concepts: list[str], graph=None) -> LiteraturePath:
    """A caller-given concept sequence as a literature path, each hop costed by the edge of
    ``graph`` (:class:`pipeline.query.graph.Graph`) that joins its two concepts; a hop that is no
    edge of the graph, or with no graph, has cost None."""
    hops = []
    for a, b in zip(concepts, concepts[1:], strict=False):
        cost = None
        if graph is not None and a != b and a in graph.vid_of and b in graph.vid_of:
            try:
                cost = graph.adjacency.edge_cost(graph.vid_of[a], graph.vid_of[b])
            except KeyError:
                cost = None  # not an edge of the literature graph
        hops.append(LiteratureHop(a, b, cost))
    return LiteraturePath(concepts[0], concepts[-1], True, list(concepts), list(concepts), hops)


def classify_given_path(
    comparator: Comparator, concepts: list[str], graph=None, *, build_id: str | None = None, mongo_db=None,
    evidence: bool = True,
) -> Comparison:  # fmt: skip
    """Classify a caller-given concept path (at least two concepts) against SPOKE.

    With ``evidence`` and a build, the documents of each hop come from the evidence store of
    that build (unknown without a store); the hops' costs come from ``graph`` (see :func:`given_path`).
    """
    path = given_path(concepts, graph)
    if evidence and build_id is not None:
        attach_evidence([path], mongo_db, build_id)
    else:
        path.evidence_status = NO_STORE if build_id is not None else NO_BUILD
    return comparator.compare_paths([path])[0]


def classify_pair(comparator: Comparator, graph, source: str, target: str, *, mongo_db=None) -> Comparison:
    """Classify the literature path between two concepts on ``graph`` against SPOKE: scenario 4
    (or none) when the graph does not join them.

    Raises :class:`pipeline.query.graph.GraphStale` when the graph's stored distances belong to
    another graph, even for a pair whose ends are not in the graph.
    """
    graph.require_fresh()
    path = PathFinder(graph).path(source, target)
    if path.reachable:
        attach_evidence([path], mongo_db, graph.build_id)
    return comparator.compare_paths([path])[0]


__all__ = [
    "CompareRun", "QueryEntry", "QuerySet", "build_inputs", "classify_given_path", "classify_pair", "coverage_of", "given_path",
    "neighbourhood_entries", "provenance_path", "read_query_set", "releases_of", "run_comparison", "run_warnings",
    "write_query_set",
]  # fmt: skip

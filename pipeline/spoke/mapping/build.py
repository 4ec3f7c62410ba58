"""The mapping table: the files a build reads (:class:`MappingSources`), the two ways to find the
SPOKE nodes, and ``write_mapping``.

* :func:`build_mapping` -- one loop over every SPOKE node (a dump's, or a scan of Neo4j) and the
  routes (:mod:`.routes`);
* :func:`build_mapping_by_lookup` -- against SPOKE's own Neo4j: each route names the identifiers
  its files can use, the MRCONSO key pass adds the codes of the direct vocabularies, and only those
  are looked up (:class:`.nodes.Neo4jNodes`); the identity labels' few nodes (SideEffect) are read
  by an index range seek over their CUI-shaped identifiers. The nodes
  found go through the same routes, so the rows are those :func:`build_mapping` gives for the
  same nodes.

Every row is one (cui, node, method, source); one CUI may map to several nodes and one node to
several CUIs, and all rows are kept. Vocabulary codes found on the way wait for one MRCONSO scan
(English, unsuppressed rows); retired CUIs are carried through MRCUI last, one hop both ways
(the relations ``mrcui_relations``: SY by default). Nodes marked obsolete (SPOKE's ``vestige``)
are skipped and counted.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from pipeline.builds.layout import MappingFolder
from pipeline.runtime.progress import Progress
from pipeline.spoke.mapping.nodes import Neo4jNodes
from pipeline.spoke.mapping.routes import (
    Candidates,
    Direct,
    DiseaseOntology,
    Findings,
    GeneInfo,
    Identity,
    NcitSwissProt,
    OboXrefs,
    Route,
    Row,
    UnichemChembl,
    UnichemInchikey,
)
from pipeline.spoke.mapping.rules import (
    CUI,
    DIRECT_RULES,
    DO_XREF_ROUTES,
    IDENTITY_LABELS,
    MAPPABLE_LABELS,
    METHODS,
    MRCUI_RELATIONS,
    OBO_XREF_ROUTES,
    OBSOLETE_PROPERTY,
    ONTOLOGIES,
    Ontology,
    SpokeNode,
    VocabularyRule,
)
from pipeline.spoke.mapping.xrefs import read_mrconso_codes_and_names, read_mrconso_keys, read_mrcui

MAPPING = pa.schema(
    [
        pa.field("cui", pa.string(), nullable=False),
        pa.field("spoke_label", pa.string(), nullable=False),
        pa.field("spoke_identifier", pa.string(), nullable=False),
        pa.field("method", pa.string(), nullable=False),  # identity | direct | indirect
        pa.field("source", pa.string(), nullable=False),  # the route, e.g. "DO:MESH>MRCONSO:MSH"
    ]
)


@dataclass
class MappingSources:
    mrconso: str | Path | None = None
    mrcui: str | Path | None = None
    do_xrefs: str | Path | None = None
    gene_info: str | Path | None = None
    ncit_swissprot: str | Path | None = None
    unichem: list[str | Path] = field(default_factory=list)
    unichem_structure: str | Path | None = None  # UniChem STRUCTURE table dump (InChIKey -> UCI)
    unichem_reference: str | Path | None = None  # UniChem REFERENCE table dump (UCI -> DrugBank)
    uberon_obo: str | Path | None = None  # UBERON release (uberon.obo): Anatomy xrefs
    cl_obo: str | Path | None = None  # Cell Ontology release (cl.obo): CellType xrefs

    def ontology_files(self) -> list[tuple[Ontology, str | Path]]:
        """The given OBO files, each with the ontology (and so the SPOKE label) it maps."""
        given = {"uberon": self.uberon_obo, "cl": self.cl_obo}
        return [(ONTOLOGIES[key], path) for key, path in given.items() if path]

    def __post_init__(self) -> None:
        if (self.unichem_structure is None) != (self.unichem_reference is None):
            raise ValueError(
                "the UniChem InChIKey route needs both table dumps: structure (InChIKey -> UCI) "
                "and reference (UCI -> DrugBank)"
            )

    @classmethod
    def from_umls_dir(cls, umls_dir: str | Path | None, **others: Any) -> MappingSources:
        sources = cls(**others)
        if umls_dir is not None:
            if sources.mrconso is None:
                sources.mrconso = find_umls_file(umls_dir, "MRCONSO.RRF")
                if sources.mrconso is None:
                    raise FileNotFoundError(f"{umls_dir}: no MRCONSO.RRF in this UMLS folder")
            if sources.mrcui is None:
                sources.mrcui = find_umls_file(umls_dir, "MRCUI.RRF")
        return sources


_UMLS_RELEASE = re.compile(r"^20[0-9]{2}A[AB]$")


def umls_release(umls_dir: str | Path | None, mrconso: str | Path | None = None) -> str | None:
    """The UMLS release the files come from: ``umls.release.name`` of the distribution's
    ``release.dat`` (in the META folder or its parent), else a folder named like a release
    (``2024AA``) above MRCONSO; None when neither says."""
    folders = [Path(umls_dir)] if umls_dir else []
    if mrconso:
        folders.append(Path(mrconso).parent)
    for folder in folders:
        for candidate in (folder / "release.dat", folder.parent / "release.dat"):
            if candidate.is_file():
                for line in candidate.read_text(errors="replace").splitlines():
                    key, _, value = line.partition("=")
                    if key.strip() == "umls.release.name" and value.strip():
                        return f"{value.strip()} ({candidate.name})"
        for part in reversed(folder.resolve().parts):
            if _UMLS_RELEASE.match(part):
                return f"{part} (folder name)"
    return None


def find_umls_file(umls_dir: str | Path, name: str) -> Path | None:
    """The file ``name`` (``MRCONSO.RRF``), or ``name.gz``, in a UMLS META folder, or None."""
    for candidate in (Path(umls_dir) / name, Path(umls_dir) / f"{name}.gz"):
        if candidate.exists():
            return candidate
    return None


@dataclass
class MappingResult:
    table: pa.Table
    nodes: Counter  # SPOKE nodes per label: those seen (a scan), or all in Neo4j (a lookup)
    stats: dict[str, Any]


@dataclass(frozen=True)
class MappingOptions:
    """The choices of a mapping (config ``mapping``): which routes and relations count.

    ``literature_cuis`` (the concept keys of the literature graph), when given, limits MRCUI
    retired->successor rows to retired CUIs the literature uses (a full MRCUI would otherwise add
    every retired CUI of UMLS), and adds identity rows for its ``GENE:<entrez>`` keys (SemMedDB
    gene arguments without a CUI, see ``pipeline.builds.tables``) whose Entrez id is a SPOKE Gene,
    unless ``gene_identity`` is off. ``mrcui_relations``: the MRCUI relations that carry a retired
    CUI to its successor (SY; RB, RN and RO, broader, narrower and other, are opt-in).
    """

    identity_labels: tuple[str, ...] = IDENTITY_LABELS
    direct_rules: tuple[VocabularyRule, ...] = DIRECT_RULES
    do_routes: dict[str, str | None] = field(default_factory=lambda: dict(DO_XREF_ROUTES))
    obo_routes: dict[str, str | None] = field(default_factory=lambda: dict(OBO_XREF_ROUTES))
    mrcui_relations: tuple[str, ...] = MRCUI_RELATIONS
    literature_cuis: frozenset[str] | None = None
    gene_identity: bool = True
    obsolete_property: str | None = OBSOLETE_PROPERTY

    def routes(self, sources: MappingSources) -> list[Route]:
        return [
            Identity(set(self.identity_labels), None if self.literature_cuis is None else set(self.literature_cuis),
                     self.gene_identity),
            Direct(self.direct_rules),
            *_cross_reference_routes(sources, self.do_routes, self.obo_routes),
        ]  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {
            "mrcui_relations": list(self.mrcui_relations),
            "gene_identity": self.gene_identity,
            "obsolete_property": self.obsolete_property,
        }


def build_mapping(
    nodes: Iterable[SpokeNode],
    sources: MappingSources,
    *,
    literature_cuis: set[str] | None = None,
    options: MappingOptions | None = None,
    **choices: Any,
) -> MappingResult:
    """Build the mapping table from every SPOKE node (a dump, or a scan of Neo4j).

    ``options`` (or its fields as keywords: ``mrcui_relations=("SY", "RO")``) say which routes and
    relations count (:class:`MappingOptions`).
    """
    options = _options(options, literature_cuis, choices)
    routes = options.routes(sources)
    findings = Findings()
    seen: Counter[str] = Counter()
    obsolete: Counter[str] = Counter()
    for node in nodes:
        if node.is_obsolete(options.obsolete_property):
            obsolete[node.label] += 1
            continue
        seen[node.label] += 1
        for route in routes:
            route.see(node, findings)
    stats: dict[str, Any] = {"obsolete_skipped": dict(sorted(obsolete.items()))} if obsolete else {}
    return _finish(routes, findings, sources, options, None, seen, stats)


def build_mapping_by_lookup(
    spoke: Neo4jNodes,
    sources: MappingSources,
    *,
    literature_cuis: set[str] | None = None,
    options: MappingOptions | None = None,
    progress: Progress | None = None,
    **choices: Any,
) -> MappingResult:
    """Build the mapping table against SPOKE's own Neo4j, looking up only the identifiers a route
    can use (see the module docstring); the same rows as :func:`build_mapping` over the same nodes.

    The identifiers come from the routes' files (read whole: DOIDs of the Disease Ontology xrefs,
    Entrez ids of gene_info, UniProt accessions of NCIt-SwissProt, ChEMBL ids of UniChem, InChIKeys
    of the UniChem dumps, UBERON and CL terms), the literature's GENE:<entrez> keys, and one pass
    over MRCONSO (the codes of the direct vocabularies). The identity labels (SideEffect) are read
    in one index range seek over their CUI-shaped identifiers. A node no route can reach this way
    maps to nothing by any route either, with one exception stated in docs/design.md §6.7: a node
    whose property code (``Disease.mesh_list``, ``Anatomy.mesh_id``) is its only way in, when its
    identifier is in no file and the property has no index.
    """
    options = _options(options, literature_cuis, choices)
    routes = options.routes(sources)
    findings = Findings()
    spoke.obsolete_property = options.obsolete_property
    if options.obsolete_property and options.obsolete_property not in spoke.properties:
        spoke.properties.append(options.obsolete_property)
    totals = Counter({label: spoke.count(label) for label in MAPPABLE_LABELS})
    wanted = Candidates()
    for route in routes:
        route.candidates(findings, wanted)
    retired = _read_retired(findings, sources, options)
    finder = _NodeFinder(spoke, routes, findings, progress)
    # The identity labels (SideEffect: 6k nodes) carry CUIs, of which UMLS has millions: their
    # CUI-shaped identifiers are read in one index range seek instead of looked up one by one.
    for label in options.identity_labels:
        finder.see_nodes(node for node in spoke.find_prefixed(label, "C") if CUI.match(node.identifier))
        wanted.identifiers.pop(label, None)
    finder.look_up(wanted)
    if sources.mrconso:
        finder.look_up_mrconso(sources.mrconso, options.direct_rules)
    stats = {"lookup": spoke.stats.as_dict(), "nodes_found": dict(sorted(finder.seen.items()))}
    return _finish(routes, findings, sources, options, retired, totals, stats)


def _options(
    options: MappingOptions | None, literature_cuis: set[str] | None, choices: dict[str, Any]
) -> MappingOptions:
    from dataclasses import replace

    options = options or MappingOptions()
    if literature_cuis is not None:
        choices["literature_cuis"] = frozenset(literature_cuis)
    for key in ("identity_labels", "direct_rules", "mrcui_relations"):
        if key in choices:
            choices[key] = tuple(choices[key])
    return replace(options, **choices) if choices else options


def _read_retired(
    findings: Findings, sources: MappingSources, options: MappingOptions
) -> dict[str, list[tuple[str, str]]] | None:
    if not sources.mrcui:
        return None
    return read_mrcui(sources.mrcui, findings.file("mrcui", sources.mrcui), options.mrcui_relations)


def _finish(
    routes: list[Route],
    findings: Findings,
    sources: MappingSources,
    options: MappingOptions,
    retired: dict[str, list[tuple[str, str]]] | None,
    nodes: Counter,
    extra: dict[str, Any],
) -> MappingResult:
    """Follow the routes' files, then the one MRCONSO scan, then MRCUI: the table and its stats."""
    for route in routes:
        route.follow(findings)
    looked_up = _look_up_in_mrconso(findings, sources.mrconso)
    if retired is None:
        retired = _read_retired(findings, sources, options)
    if retired is not None:
        _add_retired(
            findings, retired, None if options.literature_cuis is None else set(options.literature_cuis)
        )

    table = _to_table(findings.rows)
    per_method = Counter(table.column("method").to_pylist())
    stats = {
        "files": {name: fs.as_dict() for name, fs in findings.files.items()},
        **looked_up,
        "rows": table.num_rows,
        "rows_per_method": {method: per_method.get(method, 0) for method in METHODS},
        "options": options.as_dict(),
        **extra,
    }
    return MappingResult(table, nodes, stats)


class _NodeFinder:
    """Looks nodes up in batches and passes each one found once to every route's ``see``."""

    def __init__(self, spoke: Neo4jNodes, routes: list[Route], findings: Findings, progress: Progress | None):
        self.spoke, self.routes, self.findings, self.progress = spoke, routes, findings, progress
        self.seen: Counter[str] = Counter()  # nodes found per label
        self._found: set[tuple[str, str]] = set()
        # (label, property or None for the identifier) -> values waiting for their batch
        self._waiting: dict[tuple[str, str | None], set[str]] = defaultdict(set)

    def see_nodes(self, nodes: Iterable[SpokeNode]) -> None:
        for node in nodes:
            key = (node.label, node.identifier)
            if key in self._found:
                continue
            self._found.add(key)
            self.seen[node.label] += 1
            for route in self.routes:
                route.see(node, self.findings)

    def _flush(self, where: tuple[str, str | None]) -> None:
        values = sorted(self._waiting.pop(where, ()))
        if not values:
            return
        label, prop = where
        found = (
            self.spoke.find(label, values)
            if prop is None
            else self.spoke.find_by_property(label, prop, values)
        )
        self.see_nodes(found)
        if self.progress is not None:
            self.progress.advance(len(values))

    def add(self, label: str, value: str, prop: str | None = None) -> None:
        where = (label, prop)
        waiting = self._waiting[where]
        waiting.add(value)
        if len(waiting) >= self.spoke.batch_size:
            self._flush(where)

    def flush_all(self) -> None:
        for where in list(self._waiting):
            self._flush(where)

    def look_up(self, wanted: Candidates) -> None:
        """The identifiers and property values the routes' files named."""
        if self.progress is not None:
            self.progress.stage("looking up the identifiers of the cross-reference files")
        for label, values in sorted(wanted.identifiers.items()):
            for value in sorted(values):
                self.add(label, value)
        for (label, prop), values in sorted(wanted.properties.items()):
            for value in sorted(values):
                self.add(label, value, prop)
        self.flush_all()

    def look_up_mrconso(self, path: str | Path, rules: Iterable[VocabularyRule]) -> None:
        """One pass over MRCONSO: each code of a direct vocabulary that a rule's pattern accepts is
        looked up as the rule's identifier (or as its property, when Neo4j indexes it)."""
        by_sab: dict[str, list[VocabularyRule]] = defaultdict(list)
        for rule in rules:
            if rule.field == "identifier" or self.spoke.indexed(rule.label, rule.field):
                by_sab[rule.sab].append(rule)
        patterns = {rule: re.compile(rule.pattern) for rules_of in by_sab.values() for rule in rules_of}
        if self.progress is not None:
            self.progress.stage("looking up MRCONSO's codes")
        for _, sab, code in read_mrconso_keys(path, by_sab, self.findings.file("mrconso_keys", path)):
            for rule in by_sab.get(sab, ()):
                if patterns[rule].match(code):
                    if rule.field == "identifier":
                        self.add(rule.label, code)
                    else:  # a property as stored: with its prefix, and without
                        self.add(rule.label, code, rule.field)
                        if rule.strip_prefix:
                            self.add(rule.label, rule.strip_prefix + code, rule.field)
        self.flush_all()


def _cross_reference_routes(
    sources: MappingSources, do_routes: dict[str, str | None], obo_routes: dict[str, str | None]
) -> list[Route]:
    """A route for each cross-reference file given, in the order the files are read (and listed
    in the statistics)."""
    routes: list[Route] = []
    if sources.do_xrefs:
        routes.append(DiseaseOntology(sources.do_xrefs, do_routes))
    if sources.gene_info:
        routes.append(GeneInfo(sources.gene_info))
    if sources.ncit_swissprot:
        routes.append(NcitSwissProt(sources.ncit_swissprot))
    if sources.unichem:
        routes.append(UnichemChembl(sources.unichem))
    routes += [OboXrefs(ontology, path, obo_routes) for ontology, path in sources.ontology_files()]
    if sources.unichem_structure and sources.unichem_reference:
        routes.append(UnichemInchikey(sources.unichem_structure, sources.unichem_reference))
    return routes


def _look_up_in_mrconso(findings: Findings, mrconso: str | Path | None) -> dict[str, Any]:
    """Turn the codes and names waiting for MRCONSO into rows, in one scan; the counts for the stats."""
    waiting = len(findings.codes) + len(findings.names)
    if waiting and mrconso:
        wanted_codes: dict[str, set[str]] = defaultdict(set)
        for sab, code in findings.codes:
            wanted_codes[sab].add(code)
        wanted_names: dict[str, set[str]] = defaultdict(set)
        for sab, name in findings.names:
            wanted_names[sab].add(name)
        by_code, by_name = read_mrconso_codes_and_names(
            mrconso, wanted_codes, wanted_names, findings.file("mrconso", mrconso)
        )
        for cuis_of, targets_of in ((by_code, findings.codes), (by_name, findings.names)):
            for key, targets in targets_of.items():
                for cui in cuis_of.get(key, ()):
                    for node, method, source in targets:
                        findings.row(cui, node, method, source)
    counts: dict[str, Any] = {"codes_looked_up": len(findings.codes)}
    if findings.names:
        counts["names_looked_up"] = len(findings.names)
    if waiting and not mrconso:
        counts["warning"] = f"no MRCONSO given: {waiting} vocabulary codes and names could not be looked up"
    return counts


def _add_retired(
    findings: Findings, retired: dict[str, list[tuple[str, str]]], restrict: set[str] | None
) -> None:
    """Carry mappings across MRCUI retirements, one hop, in both directions."""
    base = list(findings.rows)
    by_cui: dict[str, list[Row]] = defaultdict(list)
    for row in base:
        by_cui[row[0]].append(row)
    # successor -> [(rel, retired)]
    successors_of_retired: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for old, successors in retired.items():
        for rel, new in successors:
            successors_of_retired[new].append((rel, old))
    mapped_pairs = {(r[0], r[1], r[2]) for r in base}
    for cui, cui_rows in by_cui.items():
        # a retired CUI (in the literature) reaches the nodes its successor maps to
        for rel, old in successors_of_retired.get(cui, ()):
            if restrict is not None and old not in restrict:
                continue
            for _, label, identifier, _, source in cui_rows:
                if (old, label, identifier) not in mapped_pairs:
                    findings.row(old, (label, identifier), "indirect", f"MRCUI:{rel}:{cui}>{source}")
        # a node keyed by a retired CUI (SIDER side effects, old DO xrefs) is reached from the successor
        for rel, new in retired.get(cui, ()):
            for _, label, identifier, _, source in cui_rows:
                if (new, label, identifier) not in mapped_pairs:
                    findings.row(new, (label, identifier), "indirect", f"MRCUI:{rel}:{cui}<{source}")


def _to_table(rows: Iterable[Row]) -> pa.Table:
    ordered = sorted(rows, key=lambda r: (r[0], r[1], r[2], METHODS.index(r[3]), r[4]))
    columns = list(zip(*ordered, strict=True)) if ordered else [[] for _ in MAPPING.names]
    return pa.table(
        {
            name: pa.array(list(values), pa.string())
            for name, values in zip(MAPPING.names, columns, strict=True)
        },
        schema=MAPPING,
    )


def write_mapping(table: pa.Table, out_dir: str | Path) -> dict[str, Path]:
    """``cui_spoke_mapping.parquet`` and ``.csv`` under ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"parquet": MappingFolder(out).table, "csv": MappingFolder(out).csv}
    pq.write_table(table, paths["parquet"])
    pacsv.write_csv(table, paths["csv"])
    return paths


__all__ = [
    "MAPPING", "MappingOptions", "MappingResult", "MappingSources", "build_mapping", "build_mapping_by_lookup",
    "find_umls_file", "umls_release", "write_mapping",
]  # fmt: skip

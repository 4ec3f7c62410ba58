"""The mapping table: the files a build reads (:class:`MappingSources`), ``build_mapping`` as
one loop over the SPOKE nodes and the routes (:mod:`.routes`), and ``write_mapping``.

Every row is one (cui, node, method, source); one CUI may map to several nodes and one node to
several CUIs, and all rows are kept. Vocabulary codes found on the way wait for one MRCONSO scan
(English, unsuppressed rows); retired CUIs are carried through MRCUI last, one hop both ways.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from pipeline.builds.layout import MappingFolder
from pipeline.spoke.mapping.routes import (
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
    DIRECT_RULES,
    DO_XREF_ROUTES,
    IDENTITY_LABELS,
    METHODS,
    MRCUI_RELATIONS,
    OBO_XREF_ROUTES,
    ONTOLOGIES,
    Ontology,
    SpokeNode,
    VocabularyRule,
)
from pipeline.spoke.mapping.xrefs import read_mrconso_codes_and_names, read_mrcui

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


def find_umls_file(umls_dir: str | Path, name: str) -> Path | None:
    """The file ``name`` (``MRCONSO.RRF``), or ``name.gz``, in a UMLS META folder, or None."""
    for candidate in (Path(umls_dir) / name, Path(umls_dir) / f"{name}.gz"):
        if candidate.exists():
            return candidate
    return None


@dataclass
class MappingResult:
    table: pa.Table
    nodes: Counter  # SPOKE nodes seen per label
    stats: dict[str, Any]


def build_mapping(
    nodes: Iterable[SpokeNode],
    sources: MappingSources,
    *,
    identity_labels: Iterable[str] = IDENTITY_LABELS,
    direct_rules: Iterable[VocabularyRule] = DIRECT_RULES,
    do_routes: dict[str, str | None] = DO_XREF_ROUTES,
    obo_routes: dict[str, str | None] = OBO_XREF_ROUTES,
    mrcui_relations: Iterable[str] = MRCUI_RELATIONS,
    literature_cuis: set[str] | None = None,
) -> MappingResult:
    """Build the mapping table.

    ``literature_cuis`` (the concept keys of the literature graph), when given, limits MRCUI
    retired->successor rows to retired CUIs the literature uses (a full MRCUI would otherwise add
    every retired CUI of UMLS), and adds identity rows for its ``GENE:<entrez>`` keys (SemMedDB
    gene arguments without a CUI, see ``pipeline.builds.tables``) whose Entrez id is a SPOKE Gene.
    """
    routes = [
        Identity(set(identity_labels), literature_cuis),
        Direct(direct_rules),
        *_cross_reference_routes(sources, do_routes, obo_routes),
    ]
    findings = Findings()
    seen: Counter[str] = Counter()
    for node in nodes:
        seen[node.label] += 1
        for route in routes:
            route.see(node, findings)
    for route in routes:
        route.follow(findings)
    looked_up = _look_up_in_mrconso(findings, sources.mrconso)
    if sources.mrcui:
        retired = read_mrcui(sources.mrcui, findings.file("mrcui", sources.mrcui), mrcui_relations)
        _add_retired(findings, retired, literature_cuis)

    table = _to_table(findings.rows)
    per_method = Counter(table.column("method").to_pylist())
    stats = {
        "files": {name: fs.as_dict() for name, fs in findings.files.items()},
        **looked_up,
        "rows": table.num_rows,
        "rows_per_method": {method: per_method.get(method, 0) for method in METHODS},
    }
    return MappingResult(table, seen, stats)


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
    "MAPPING", "MappingResult", "MappingSources", "build_mapping", "find_umls_file", "write_mapping",
]  # fmt: skip

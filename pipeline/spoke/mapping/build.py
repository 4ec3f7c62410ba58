"""The mapping table: the files a build reads (:class:`MappingSources`), ``build_mapping`` over
the SPOKE nodes and the routes of :mod:`.rules`, and ``write_mapping``.

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
from pipeline.spoke.mapping.rules import (
    COMPOUND_INCHIKEY_PROPERTY,
    CUI,
    DIRECT_RULES,
    DO_XREF_ROUTES,
    IDENTITY_LABELS,
    INCHIKEY,
    METHODS,
    MRCUI_RELATIONS,
    OBO_XREF_ROUTES,
    ONTOLOGIES,
    Ontology,
    SpokeNode,
    VocabularyRule,
)
from pipeline.spoke.mapping.xrefs import (
    FileStats,
    read_do_xrefs,
    read_gene_info,
    read_mrconso_codes_and_names,
    read_mrcui,
    read_ncit_swissprot,
    read_obo_xrefs,
    read_unichem,
    read_unichem_references,
    read_unichem_structures,
)

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
    """``MRCONSO.RRF`` (or ``.gz``) in a UMLS META folder, or None."""
    for candidate in (Path(umls_dir) / name, Path(umls_dir) / f"{name}.gz"):
        if candidate.exists():
            return candidate
    return None


@dataclass
class MappingResult:
    table: pa.Table
    nodes: Counter  # SPOKE nodes seen per label
    stats: dict[str, Any]


class _Rows:
    def __init__(self) -> None:
        self.rows: set[tuple[str, str, str, str, str]] = set()

    def add(self, cui: str, node: tuple[str, str], method: str, source: str) -> None:
        self.rows.add((cui, node[0], node[1], method, source))


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
    identity_labels = set(identity_labels)
    direct_rules = list(direct_rules)
    rows = _Rows()
    seen: Counter[str] = Counter()
    # (SAB, code) -> [(node, source)] waiting for the MRCONSO scan.
    pending: dict[tuple[str, str], list[tuple[tuple[str, str], str, str]]] = defaultdict(list)
    # (SAB, upper-cased name) -> the same, for names looked up as MRCONSO strings (RxNorm).
    pending_names: dict[tuple[str, str], list[tuple[tuple[str, str], str, str]]] = defaultdict(list)
    diseases: set[str] = set()
    genes: set[str] = set()
    proteins: set[str] = set()
    compounds: set[str] = set()
    ontology_labels = {ontology.label for ontology in ONTOLOGIES.values()}
    ontology_terms: dict[str, set[str]] = defaultdict(set)  # SPOKE label -> its nodes' term ids
    # InChIKey -> [(compound identifier, route label)]
    compound_inchikeys: dict[str, list[tuple[str, str]]] = defaultdict(list)

    for node in nodes:
        seen[node.label] += 1
        key = (node.label, node.identifier)
        if node.label in identity_labels and CUI.match(node.identifier):
            rows.add(node.identifier, key, "identity", f"identity:{node.label}.identifier")
        for rule in direct_rules:
            if rule.label == node.label:
                for code in rule.codes(node):
                    pending[(rule.sab, code)].append((key, "direct", rule.source))
        if node.label == "Disease":
            diseases.add(node.identifier)
        elif node.label == "Gene":
            genes.add(node.identifier)
            gene_key = f"GENE:{node.identifier}"
            if literature_cuis is not None and gene_key in literature_cuis:
                rows.add(gene_key, key, "identity", "identity:Gene.identifier(Entrez)")
        elif node.label == "Protein":
            proteins.add(node.identifier)
        elif node.label == "Compound":
            if node.identifier.startswith("CHEMBL"):
                compounds.add(node.identifier)
            for key, where in _inchikeys_of(node):
                compound_inchikeys[key].append((node.identifier, where))
        if node.label in ontology_labels:
            ontology_terms[node.label].add(node.identifier)

    stats: dict[str, Any] = {"files": {}}

    def file_stats(name: str, path: str | Path) -> FileStats:
        fs = FileStats(str(path))
        stats["files"][name] = fs
        return fs

    def disease_lookup(path: str | Path) -> None:
        xrefs = read_do_xrefs(path, diseases, file_stats("do_xrefs", path))
        for doid, values in xrefs.items():
            for xref in values:
                prefix, _, code = xref.partition(":")
                if prefix not in do_routes or not code:
                    continue
                sab = do_routes[prefix]
                if sab is None:
                    if CUI.match(code):
                        rows.add(code, ("Disease", doid), "indirect", f"DO:{prefix}")
                else:
                    pending[(sab, code)].append((("Disease", doid), "indirect", f"DO:{prefix}>MRCONSO:{sab}"))

    if sources.do_xrefs:
        disease_lookup(sources.do_xrefs)
    if sources.gene_info:
        hgnc = read_gene_info(sources.gene_info, genes, file_stats("gene_info", sources.gene_info))
        for gene_id, codes in hgnc.items():
            for code in codes:
                pending[("HGNC", code)].append((("Gene", gene_id), "indirect", "gene_info:HGNC>MRCONSO:HGNC"))
    if sources.ncit_swissprot:
        ncit = read_ncit_swissprot(
            sources.ncit_swissprot, proteins, file_stats("ncit_swissprot", sources.ncit_swissprot)
        )
        for accession, codes in ncit.items():
            for code in codes:
                pending[("NCI", code)].append(
                    (("Protein", accession), "indirect", "NCIt-SwissProt>MRCONSO:NCI")
                )
    for index, path in enumerate(sources.unichem):
        found = read_unichem(path, compounds, file_stats(f"unichem[{index}]", path))
        target = found.target
        for chembl, target_ids in found.ids.items():
            node = ("Compound", chembl)
            for target_id in target_ids:
                if target.sab == "RXNORM" and not target_id.isdigit():
                    # UniChem's RxNorm "ids" are drug names (e.g. PIRFENIDONE), not RXCUIs:
                    # looked up as MRCONSO RXNORM strings; an RXCUI, if given, as a code.
                    route = "UniChem:ChEMBL>RxNorm(name)>MRCONSO:RXNORM"
                    pending_names[("RXNORM", target_id.upper())].append((node, "indirect", route))
                else:
                    route = f"UniChem:ChEMBL>{target.name}>MRCONSO:{target.sab}"
                    pending[(target.sab, target_id)].append((node, "indirect", route))

    for ontology, path in sources.ontology_files():
        stats_name = f"{ontology.prefix.lower()}_obo"
        xrefs = read_obo_xrefs(path, ontology_terms[ontology.label], file_stats(stats_name, path))
        for term, values in xrefs.items():
            node = (ontology.label, term)
            for xref in values:
                prefix, _, code = xref.partition(":")
                prefix = prefix.upper()
                if prefix not in obo_routes:
                    continue
                sab = obo_routes[prefix]
                where = f"{ontology.file}:{prefix}"
                if sab is None:
                    if CUI.match(code):
                        rows.add(code, node, "indirect", where)
                else:
                    pending[(sab, code)].append((node, "indirect", f"{where}>MRCONSO:{sab}"))

    if sources.unichem_structure and sources.unichem_reference and compound_inchikeys:
        structure_stats = file_stats("unichem_structure", sources.unichem_structure)
        ucis = read_unichem_structures(sources.unichem_structure, set(compound_inchikeys), structure_stats)
        reference_stats = file_stats("unichem_reference", sources.unichem_reference)
        wanted_ucis = {uci for found in ucis.values() for uci in found}
        drugbank_of = read_unichem_references(sources.unichem_reference, wanted_ucis, reference_stats)
        for key, found in ucis.items():
            for uci in found:
                for code in drugbank_of.get(uci, ()):
                    for identifier, where in compound_inchikeys[key]:
                        pending[("DRUGBANK", code)].append(
                            (
                                ("Compound", identifier),
                                "indirect",
                                f"UniChem:InChIKey{where}>DrugBank>MRCONSO:DRUGBANK",
                            )
                        )

    if (pending or pending_names) and sources.mrconso:
        wanted_codes: dict[str, set[str]] = defaultdict(set)
        for sab, code in pending:
            wanted_codes[sab].add(code)
        wanted_names: dict[str, set[str]] = defaultdict(set)
        for sab, name in pending_names:
            wanted_names[sab].add(name)
        by_code, by_name = read_mrconso_codes_and_names(
            sources.mrconso, wanted_codes, wanted_names, file_stats("mrconso", sources.mrconso)
        )
        for found, waiting in ((by_code, pending), (by_name, pending_names)):
            for key, targets in waiting.items():
                for cui in found.get(key, ()):
                    for node, method, source in targets:
                        rows.add(cui, node, method, source)
    stats["codes_looked_up"] = len(pending)
    if pending_names:
        stats["names_looked_up"] = len(pending_names)
    if (pending or pending_names) and not sources.mrconso:
        stats["warning"] = (
            f"no MRCONSO given: {len(pending) + len(pending_names)} vocabulary codes and names "
            "could not be looked up"
        )

    if sources.mrcui:
        retired = read_mrcui(sources.mrcui, file_stats("mrcui", sources.mrcui), mrcui_relations)
        _add_retired(rows, retired, literature_cuis)

    table = _to_table(rows.rows)
    stats["rows"] = table.num_rows
    per_method = Counter(table.column("method").to_pylist())
    stats["rows_per_method"] = {method: per_method.get(method, 0) for method in METHODS}
    stats["files"] = {name: fs.as_dict() for name, fs in stats["files"].items()}
    return MappingResult(table, seen, stats)


def _inchikeys_of(node: SpokeNode) -> list[tuple[str, str]]:
    """A Compound node's standard InChIKeys, each with where it was found (for the route label)."""
    found = []
    if INCHIKEY.match(node.identifier):
        found.append((node.identifier, ""))
    for value in node.values_of(COMPOUND_INCHIKEY_PROPERTY):
        key = str(value).strip().removeprefix("InChIKey=")
        if INCHIKEY.match(key):
            found.append((key, f"(Compound.{COMPOUND_INCHIKEY_PROPERTY})"))
    return found


def _add_retired(rows: _Rows, retired: dict[str, list[tuple[str, str]]], restrict: set[str] | None) -> None:
    """Carry mappings across MRCUI retirements, one hop, in both directions."""
    base = list(rows.rows)
    by_cui: dict[str, list[tuple[str, str, str, str, str]]] = defaultdict(list)
    for row in base:
        by_cui[row[0]].append(row)
    successors_of_retired: dict[str, list[tuple[str, str]]] = defaultdict(
        list
    )  # successor -> [(rel, retired)]
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
                    rows.add(old, (label, identifier), "indirect", f"MRCUI:{rel}:{cui}>{source}")
        # a node keyed by a retired CUI (SIDER side effects, old DO xrefs) is reached from the successor
        for rel, new in retired.get(cui, ()):
            for _, label, identifier, _, source in cui_rows:
                if (new, label, identifier) not in mapped_pairs:
                    rows.add(new, (label, identifier), "indirect", f"MRCUI:{rel}:{cui}<{source}")


def _to_table(rows: Iterable[tuple[str, str, str, str, str]]) -> pa.Table:
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

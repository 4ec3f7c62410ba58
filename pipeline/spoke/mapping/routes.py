"""The routes from SPOKE nodes to CUIs, one class each (the methods and routes: the package's
docstring). :func:`pipeline.spoke.mapping.build.build_mapping` runs them in two passes:

* ``see(node, findings)`` -- over the SPOKE nodes, streamed once: a route takes the keys it
  needs of each node (a row that needs no file, like an identity, is added at once);
* ``follow(findings)`` -- a route reads its cross-reference files (:mod:`.xrefs`) for those
  keys only, and adds a row for a cross-reference that is a CUI, or a lookup for a vocabulary
  code or name, which waits for the one MRCONSO scan that ends the build.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.spoke.mapping.rules import (
    COMPOUND_INCHIKEY_PROPERTY,
    CUI,
    INCHIKEY,
    Ontology,
    SpokeNode,
    VocabularyRule,
)
from pipeline.spoke.mapping.xrefs import (
    FileStats,
    read_do_xrefs,
    read_gene_info,
    read_ncit_swissprot,
    read_obo_xrefs,
    read_unichem,
    read_unichem_references,
    read_unichem_structures,
)

Node = tuple[str, str]  # (SPOKE label, identifier)
Row = tuple[str, str, str, str, str]  # cui, SPOKE label, identifier, method, source (the route)
Target = tuple[Node, str, str]  # a node, with the method and route that reach it


class Findings:
    """What a build has found: mapping rows; vocabulary codes and names waiting for the MRCONSO
    scan, each with the nodes a CUI of it maps to; and the statistics of every file read."""

    def __init__(self) -> None:
        self.rows: set[Row] = set()
        self.codes: dict[tuple[str, str], list[Target]] = defaultdict(list)  # (SAB, CODE) -> targets
        # (SAB, upper-cased STR) -> targets, for ids that are names (UniChem's RxNorm ids)
        self.names: dict[tuple[str, str], list[Target]] = defaultdict(list)
        self.files: dict[str, FileStats] = {}  # in the order the files were read

    def row(self, cui: str, node: Node, method: str, source: str) -> None:
        self.rows.add((cui, node[0], node[1], method, source))

    def code(self, sab: str, code: str, node: Node, method: str, source: str) -> None:
        self.codes[(sab, code)].append((node, method, source))

    def name(self, sab: str, name: str, node: Node, method: str, source: str) -> None:
        self.names[(sab, name)].append((node, method, source))

    def file(self, name: str, path: str | Path) -> FileStats:
        """The statistics of a file about to be read, under ``name`` in ``mapping_stats.json``."""
        self.files[name] = FileStats(str(path))
        return self.files[name]

    def cross_reference(self, node: Node, code: str, sab: str | None, where: str) -> None:
        """An xref of ``node``: a CUI itself (``sab`` None) is a row; a code of vocabulary ``sab``
        waits for MRCONSO."""
        if sab is None:
            if CUI.match(code):
                self.row(code, node, "indirect", where)
        else:
            self.code(sab, code, node, "indirect", f"{where}>MRCONSO:{sab}")


class Route:
    """One way from SPOKE nodes to CUIs."""

    def see(self, node: SpokeNode, findings: Findings) -> None:
        """Take what this route needs of a SPOKE node."""

    def follow(self, findings: Findings) -> None:
        """Read this route's files for what it took of the nodes, and add what they give."""


@dataclass
class Identity(Route):
    """SPOKE nodes whose identifiers are CUIs; and, when the literature's concept keys are given,
    Gene nodes for its ``GENE:<entrez>`` keys (SemMedDB gene arguments without a CUI)."""

    labels: set[str]
    literature_cuis: set[str] | None = None

    def see(self, node: SpokeNode, findings: Findings) -> None:
        key = (node.label, node.identifier)
        if node.label in self.labels and CUI.match(node.identifier):
            findings.row(node.identifier, key, "identity", f"identity:{node.label}.identifier")
        if node.label == "Gene" and self.literature_cuis is not None:
            gene_key = f"GENE:{node.identifier}"
            if gene_key in self.literature_cuis:
                findings.row(gene_key, key, "identity", "identity:Gene.identifier(Entrez)")


@dataclass
class Direct(Route):
    """SPOKE identifiers or properties that are codes of an MRCONSO vocabulary (the rules)."""

    rules: Iterable[VocabularyRule]
    rules_of: dict[str, list[VocabularyRule]] = field(default_factory=lambda: defaultdict(list), init=False)

    def __post_init__(self) -> None:
        for rule in self.rules:
            self.rules_of[rule.label].append(rule)

    def see(self, node: SpokeNode, findings: Findings) -> None:
        for rule in self.rules_of.get(node.label, ()):
            for code in rule.codes(node):
                findings.code(rule.sab, code, (node.label, node.identifier), "direct", rule.source)


@dataclass
class DiseaseOntology(Route):
    """Disease -> its Disease Ontology xrefs (``allXREFinDO.tsv``), by prefix (the route table)."""

    path: str | Path
    prefixes: dict[str, str | None]  # xref prefix -> MRCONSO SAB; None: the xref is a CUI
    doids: set[str] = field(default_factory=set, init=False)

    def see(self, node: SpokeNode, findings: Findings) -> None:
        if node.label == "Disease":
            self.doids.add(node.identifier)

    def follow(self, findings: Findings) -> None:
        xrefs = read_do_xrefs(self.path, self.doids, findings.file("do_xrefs", self.path))
        for doid, values in xrefs.items():
            for xref in values:
                prefix, _, code = xref.partition(":")
                if prefix in self.prefixes and code:
                    findings.cross_reference(("Disease", doid), code, self.prefixes[prefix], f"DO:{prefix}")


@dataclass
class GeneInfo(Route):
    """Gene (Entrez GeneID) -> ``HGNC:`` in NCBI gene_info's dbXrefs -> MRCONSO SAB=HGNC."""

    path: str | Path
    genes: set[str] = field(default_factory=set, init=False)

    def see(self, node: SpokeNode, findings: Findings) -> None:
        if node.label == "Gene":
            self.genes.add(node.identifier)

    def follow(self, findings: Findings) -> None:
        hgnc = read_gene_info(self.path, self.genes, findings.file("gene_info", self.path))
        for gene_id, codes in hgnc.items():
            for code in codes:
                findings.code("HGNC", code, ("Gene", gene_id), "indirect", "gene_info:HGNC>MRCONSO:HGNC")


@dataclass
class NcitSwissProt(Route):
    """Protein (UniProt accession) -> NCIt code (NCIt-SwissProt) -> MRCONSO SAB=NCI."""

    path: str | Path
    accessions: set[str] = field(default_factory=set, init=False)

    def see(self, node: SpokeNode, findings: Findings) -> None:
        if node.label == "Protein":
            self.accessions.add(node.identifier)

    def follow(self, findings: Findings) -> None:
        ncit = read_ncit_swissprot(self.path, self.accessions, findings.file("ncit_swissprot", self.path))
        for accession, codes in ncit.items():
            for code in codes:
                findings.code("NCI", code, ("Protein", accession), "indirect", "NCIt-SwissProt>MRCONSO:NCI")


@dataclass
class UnichemChembl(Route):
    """Compound (ChEMBL id) -> DrugBank or RxNorm, from UniChem whole-source mappings -> MRCONSO."""

    paths: list[str | Path]
    chembl_ids: set[str] = field(default_factory=set, init=False)

    def see(self, node: SpokeNode, findings: Findings) -> None:
        if node.label == "Compound" and node.identifier.startswith("CHEMBL"):
            self.chembl_ids.add(node.identifier)

    def follow(self, findings: Findings) -> None:
        for index, path in enumerate(self.paths):
            found = read_unichem(path, self.chembl_ids, findings.file(f"unichem[{index}]", path))
            target = found.target
            for chembl, target_ids in found.ids.items():
                node = ("Compound", chembl)
                for target_id in target_ids:
                    if target.sab == "RXNORM" and not target_id.isdigit():
                        # UniChem's RxNorm "ids" are drug names (e.g. PIRFENIDONE), not RXCUIs:
                        # looked up as MRCONSO RXNORM strings; an RXCUI, if given, as a code.
                        route = "UniChem:ChEMBL>RxNorm(name)>MRCONSO:RXNORM"
                        findings.name("RXNORM", target_id.upper(), node, "indirect", route)
                    else:
                        route = f"UniChem:ChEMBL>{target.name}>MRCONSO:{target.sab}"
                        findings.code(target.sab, target_id, node, "indirect", route)


@dataclass
class OboXrefs(Route):
    """A term of an OBO ontology (UBERON, CL) -> its xrefs in the release file, by prefix."""

    ontology: Ontology
    path: str | Path
    prefixes: dict[str, str | None]  # upper-cased xref prefix -> MRCONSO SAB; None: a CUI
    terms: set[str] = field(default_factory=set, init=False)

    def see(self, node: SpokeNode, findings: Findings) -> None:
        if node.label == self.ontology.label:
            self.terms.add(node.identifier)

    def follow(self, findings: Findings) -> None:
        stats = findings.file(f"{self.ontology.prefix.lower()}_obo", self.path)
        for term, values in read_obo_xrefs(self.path, self.terms, stats).items():
            for xref in values:
                prefix, _, code = xref.partition(":")
                prefix = prefix.upper()
                if prefix in self.prefixes:
                    where = f"{self.ontology.file}:{prefix}"
                    findings.cross_reference((self.ontology.label, term), code, self.prefixes[prefix], where)


@dataclass
class UnichemInchikey(Route):
    """Compound (an InChIKey, as identifier or property) -> UniChem UCI (STRUCTURE table dump)
    -> DrugBank id (REFERENCE table dump) -> MRCONSO SAB=DRUGBANK."""

    structure: str | Path
    reference: str | Path
    # InChIKey -> [(compound identifier, where on the node it was found)]
    compounds: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: defaultdict(list), init=False)

    def see(self, node: SpokeNode, findings: Findings) -> None:
        if node.label == "Compound":
            for key, where in inchikeys_of(node):
                self.compounds[key].append((node.identifier, where))

    def follow(self, findings: Findings) -> None:
        if not self.compounds:
            return
        structure_stats = findings.file("unichem_structure", self.structure)
        ucis = read_unichem_structures(self.structure, set(self.compounds), structure_stats)
        reference_stats = findings.file("unichem_reference", self.reference)
        wanted_ucis = {uci for found in ucis.values() for uci in found}
        drugbank_of = read_unichem_references(self.reference, wanted_ucis, reference_stats)
        for key, found in ucis.items():
            for uci in found:
                for code in drugbank_of.get(uci, ()):
                    for identifier, where in self.compounds[key]:
                        route = f"UniChem:InChIKey{where}>DrugBank>MRCONSO:DRUGBANK"
                        findings.code("DRUGBANK", code, ("Compound", identifier), "indirect", route)


def inchikeys_of(node: SpokeNode) -> list[tuple[str, str]]:
    """A Compound node's standard InChIKeys, each with where it was found (for the route label)."""
    found = []
    if INCHIKEY.match(node.identifier):
        found.append((node.identifier, ""))
    for value in node.values_of(COMPOUND_INCHIKEY_PROPERTY):
        key = str(value).strip().removeprefix("InChIKey=")
        if INCHIKEY.match(key):
            found.append((key, f"(Compound.{COMPOUND_INCHIKEY_PROPERTY})"))
    return found


__all__ = [
    "Direct", "DiseaseOntology", "Findings", "GeneInfo", "Identity", "NcitSwissProt", "OboXrefs", "Route",
    "UnichemChembl", "UnichemInchikey", "inchikeys_of",
]  # fmt: skip

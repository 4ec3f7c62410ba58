"""The routes from SPOKE nodes to CUIs, one class each (the methods and routes: the package's
docstring). :mod:`pipeline.spoke.mapping.build` runs them in two passes:

* ``see(node, findings)`` -- over the SPOKE nodes, each once: a route takes the keys it needs of
  each node (a row that needs no file, like an identity, is added at once);
* ``follow(findings)`` -- a route reads its cross-reference files (:mod:`.xrefs`) for those
  keys only, and adds a row for a cross-reference that is a CUI, or a lookup for a vocabulary
  code or name, which waits for the one MRCONSO scan that ends the build.

Against SPOKE's own Neo4j the nodes are not streamed (tens of millions of Protein nodes): the
build asks each route first for the identifiers it can use (``candidates(findings, wanted)``),
reading its files whole -- they are small next to SPOKE -- and keeping them for ``follow``, and
looks only those up (:class:`pipeline.spoke.mapping.nodes.Neo4jNodes`). The nodes found then
pass through ``see`` and ``follow`` as above, so both ways give the same rows for the same nodes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.spoke.mapping.rules import (
    CHEMBL_XREF_PREFIX,
    COMPOUND_INCHIKEY_PROPERTY,
    COMPOUND_XREFS_PROPERTY,
    CUI,
    INCHIKEY,
    INCHIKEY_IDENTIFIER_PREFIX,
    Ontology,
    SpokeNode,
    VocabularyRule,
)
from pipeline.spoke.mapping.xrefs import (
    FileStats,
    UnichemMapping,
    UnichemTarget,
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


class Candidates:
    """The identifiers (and node property values) the routes can use, per SPOKE label: what a
    mapping against SPOKE's own Neo4j looks up instead of reading every node."""

    def __init__(self) -> None:
        self.identifiers: dict[str, set[str]] = defaultdict(set)
        self.properties: dict[tuple[str, str], set[str]] = defaultdict(set)  # (label, property) -> values

    def identifier(self, label: str, value: str) -> None:
        self.identifiers[label].add(value)

    def property(self, label: str, name: str, value: str) -> None:
        self.properties[(label, name)].add(value)

    def __len__(self) -> int:
        return sum(map(len, self.identifiers.values())) + sum(map(len, self.properties.values()))


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

    def candidates(self, findings: Findings, wanted: Candidates) -> None:
        """Add the SPOKE identifiers this route can use, from its files (kept for ``follow``)."""

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
    gene_identity: bool = True  # the GENE:<entrez> route (mapping.gene_identity)

    def candidates(self, findings: Findings, wanted: Candidates) -> None:
        """The literature's CUIs for the identity labels, its GENE:<entrez> keys for Gene (the CUIs
        MRCONSO and MRCUI know are added by the build as it reads them)."""
        for key in self.literature_cuis or ():
            if CUI.match(key):
                for label in self.labels:
                    wanted.identifier(label, key)
            elif self.gene_identity and key.startswith("GENE:"):
                wanted.identifier("Gene", key[len("GENE:") :])

    def see(self, node: SpokeNode, findings: Findings) -> None:
        key = (node.label, node.identifier)
        if node.label in self.labels and CUI.match(node.identifier):
            findings.row(node.identifier, key, "identity", f"identity:{node.label}.identifier")
        if node.label == "Gene" and self.gene_identity and self.literature_cuis is not None:
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
    table: dict[str, list[str]] | None = field(default=None, init=False)  # the file, when read whole

    def candidates(self, findings: Findings, wanted: Candidates) -> None:
        self.table = read_do_xrefs(self.path, None, findings.file("do_xrefs", self.path))
        for doid in self.table:
            wanted.identifier("Disease", doid)

    def see(self, node: SpokeNode, findings: Findings) -> None:
        if node.label == "Disease":
            self.doids.add(node.identifier)

    def follow(self, findings: Findings) -> None:
        xrefs = _kept(self.table, self.doids)
        if xrefs is None:  # scanned nodes: the file is read now, for their keys only
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
    table: dict[str, list[str]] | None = field(default=None, init=False)

    def candidates(self, findings: Findings, wanted: Candidates) -> None:
        self.table = read_gene_info(self.path, None, findings.file("gene_info", self.path))
        for gene_id in self.table:
            wanted.identifier("Gene", gene_id)

    def see(self, node: SpokeNode, findings: Findings) -> None:
        if node.label == "Gene":
            self.genes.add(node.identifier)

    def follow(self, findings: Findings) -> None:
        hgnc = _kept(self.table, self.genes)
        if hgnc is None:  # scanned nodes: the file is read now, for their keys only
            hgnc = read_gene_info(self.path, self.genes, findings.file("gene_info", self.path))
        for gene_id, codes in hgnc.items():
            for code in codes:
                findings.code("HGNC", code, ("Gene", gene_id), "indirect", "gene_info:HGNC>MRCONSO:HGNC")


@dataclass
class NcitSwissProt(Route):
    """Protein (UniProt accession) -> NCIt code (NCIt-SwissProt) -> MRCONSO SAB=NCI."""

    path: str | Path
    accessions: set[str] = field(default_factory=set, init=False)
    table: dict[str, list[str]] | None = field(default=None, init=False)

    def candidates(self, findings: Findings, wanted: Candidates) -> None:
        self.table = read_ncit_swissprot(self.path, None, findings.file("ncit_swissprot", self.path))
        for accession in self.table:
            wanted.identifier("Protein", accession)

    def see(self, node: SpokeNode, findings: Findings) -> None:
        if node.label == "Protein":
            self.accessions.add(node.identifier)

    def follow(self, findings: Findings) -> None:
        ncit = _kept(self.table, self.accessions)
        if ncit is None:  # scanned nodes: the file is read now, for their keys only
            ncit = read_ncit_swissprot(self.path, self.accessions, findings.file("ncit_swissprot", self.path))
        for accession, codes in ncit.items():
            for code in codes:
                findings.code("NCI", code, ("Protein", accession), "indirect", "NCIt-SwissProt>MRCONSO:NCI")


@dataclass
class UnichemChembl(Route):
    """Compound (a ChEMBL id: its identifier on SPOKE v3, a ``chembl.compound:`` xref on today's
    SPOKE) -> DrugBank or RxNorm, from UniChem whole-source mappings -> MRCONSO."""

    paths: list[str | Path]
    # ChEMBL id -> the Compound nodes carrying it (as identifier or as an xref)
    compounds: dict[str, set[Node]] = field(default_factory=lambda: defaultdict(set), init=False)
    tables: list[UnichemMapping] | None = field(default=None, init=False)

    def candidates(self, findings: Findings, wanted: Candidates) -> None:
        self.tables = [
            read_unichem(path, None, findings.file(f"unichem[{index}]", path))
            for index, path in enumerate(self.paths)
        ]
        for table in self.tables:
            for chembl in table.ids:
                wanted.identifier("Compound", chembl)

    def see(self, node: SpokeNode, findings: Findings) -> None:
        if node.label != "Compound":
            return
        key = (node.label, node.identifier)
        if node.identifier.startswith("CHEMBL"):
            self.compounds[node.identifier].add(key)
        for xref in node.values_of(COMPOUND_XREFS_PROPERTY):
            text = str(xref).strip()
            if text.startswith(CHEMBL_XREF_PREFIX):
                self.compounds[text[len(CHEMBL_XREF_PREFIX) :]].add(key)

    def follow(self, findings: Findings) -> None:
        wanted = set(self.compounds)
        for index, path in enumerate(self.paths):
            if self.tables is not None:
                found = self.tables[index]
                found = UnichemMapping(found.target, _kept(found.ids, wanted))
            else:
                found = read_unichem(path, wanted, findings.file(f"unichem[{index}]", path))
            target = found.target
            for chembl, target_ids in found.ids.items():
                for node in sorted(self.compounds[chembl]):
                    self._add(findings, node, target, target_ids)

    @staticmethod
    def _add(findings: Findings, node: Node, target: UnichemTarget, target_ids: list[str]) -> None:
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
    table: dict[str, list[str]] | None = field(default=None, init=False)

    def candidates(self, findings: Findings, wanted: Candidates) -> None:
        stats = findings.file(f"{self.ontology.prefix.lower()}_obo", self.path)
        self.table = read_obo_xrefs(self.path, None, stats)
        for term in self.table:  # every term with an xref (its node may also carry a MeSH id)
            wanted.identifier(self.ontology.label, term)

    def see(self, node: SpokeNode, findings: Findings) -> None:
        if node.label == self.ontology.label:
            self.terms.add(node.identifier)

    def follow(self, findings: Findings) -> None:
        table = _kept(self.table, self.terms)
        if table is None:
            stats = findings.file(f"{self.ontology.prefix.lower()}_obo", self.path)
            table = read_obo_xrefs(self.path, self.terms, stats)
        for term, values in table.items():
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
    # read whole for the candidates: InChIKey -> UCIs, UCI -> DrugBank ids
    tables: tuple[dict[str, list[str]], dict[str, list[str]]] | None = field(default=None, init=False)

    def candidates(self, findings: Findings, wanted: Candidates) -> None:
        """The InChIKeys of every compound UniChem gives a DrugBank id: the REFERENCE dump first
        (UCIs with a DrugBank id), then the STRUCTURE dump for those UCIs only. Each is looked up as
        an identifier (bare, and ``inchikey:``-prefixed) and as the ``inchikey`` property."""
        reference_stats = findings.file("unichem_reference", self.reference)
        drugbank_of = read_unichem_references(self.reference, None, reference_stats)
        structure_stats = findings.file("unichem_structure", self.structure)
        ucis = read_unichem_structures(self.structure, None, structure_stats, ucis=set(drugbank_of))
        self.tables = (ucis, drugbank_of)
        for key in ucis:
            wanted.identifier("Compound", key)
            wanted.identifier("Compound", INCHIKEY_IDENTIFIER_PREFIX + key)
            wanted.property("Compound", COMPOUND_INCHIKEY_PROPERTY, key)

    def see(self, node: SpokeNode, findings: Findings) -> None:
        if node.label == "Compound":
            for key, where in inchikeys_of(node):
                self.compounds[key].append((node.identifier, where))

    def follow(self, findings: Findings) -> None:
        if not self.compounds:
            return
        if self.tables is not None:
            ucis, drugbank_of = _kept(self.tables[0], set(self.compounds)), self.tables[1]
        else:
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


def _kept(table: dict[str, list] | None, keys: set[str]) -> dict[str, list] | None:
    """The rows of a file read whole (``table``) for the keys some SPOKE node has; None when the
    file was not read whole (the route then reads it for those keys)."""
    if table is None:
        return None
    return {key: table[key] for key in sorted(keys) if key in table}


def inchikeys_of(node: SpokeNode) -> list[tuple[str, str]]:
    """A Compound node's standard InChIKeys, each with where it was found (for the route label):
    its identifier (SPOKE v3 or an ``inchikey:`` identifier of today's SPOKE), or its ``inchikey``
    property."""
    found = []
    identifier = node.identifier.removeprefix(INCHIKEY_IDENTIFIER_PREFIX)
    if INCHIKEY.match(identifier):
        found.append((identifier, ""))
    for value in node.values_of(COMPOUND_INCHIKEY_PROPERTY):
        key = str(value).strip().removeprefix("InChIKey=")
        if INCHIKEY.match(key):
            found.append((key, f"(Compound.{COMPOUND_INCHIKEY_PROPERTY})"))
    return found


__all__ = [
    "Candidates", "Direct", "DiseaseOntology", "Findings", "GeneInfo", "Identity", "NcitSwissProt", "OboXrefs", "Route",
    "UnichemChembl", "UnichemInchikey", "inchikeys_of",
]  # fmt: skip

"""What of a SPOKE node maps to which vocabulary: the node as the mapping reads it, the three
methods, the direct vocabulary rules and the cross-reference route tables.

Nothing here reads a file: :mod:`.xrefs` reads the cross-reference files, :mod:`.routes` follows
each route through them and :mod:`.build` runs the routes.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

METHODS = ("identity", "direct", "indirect")

CUI = re.compile(r"^C[0-9]{7}\Z")  # ASCII digits: \d would take any Unicode digit


@dataclass(frozen=True)
class SpokeNode:
    label: str
    identifier: str
    name: str | None = None
    properties: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def values_of(self, name: str) -> list[Any]:
        """A property's values: a list property as it is, a scalar as one value, absent as none.
        A list some export wrote as a string (``"['D003924', 'D001']"``, a Python repr, or JSON)
        is read back as that list (:func:`decoded_list`)."""
        raw = self.properties.get(name)
        if isinstance(raw, str):
            listed = decoded_list(raw)
            if listed is not None:
                return listed
        return raw if isinstance(raw, list) else [] if raw is None else [raw]

    def is_obsolete(self, obsolete_property: str | None = None) -> bool:
        """Whether the node is marked obsolete (SPOKE's ``vestige``: True, or the string "True")."""
        return bool(obsolete_property) and is_true(self.properties.get(obsolete_property))


def decoded_list(text: str) -> list[Any] | None:
    """The list a string holds when it is a list's text (``"['a', 'b']"`` or ``'["a"]'``), else None.

    Some SPOKE exports store list properties as the Python repr of the list (public notes on
    today's SPOKE server: ``sources: "['Entrez Gene']"``); only literals are read (never code:
    :func:`ast.literal_eval`), and only a list of strings or numbers counts.
    """
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, list) and all(isinstance(v, str | int | float) for v in value):
            return value
    return None


def is_true(value: Any) -> bool:
    """A flag as SPOKE stores it: the boolean True, or a string "true" in any case."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


@dataclass(frozen=True)
class VocabularyRule:
    """A SPOKE field whose values are codes of an MRCONSO source vocabulary (SAB)."""

    label: str
    field: str  # "identifier" or a node property (a string or a list of strings)
    sab: str
    pattern: str  # the code after ``strip_prefix`` must match
    strip_prefix: str = ""

    def codes(self, node: SpokeNode) -> list[str]:
        values = [node.identifier] if self.field == "identifier" else node.values_of(self.field)
        matcher = re.compile(self.pattern)
        out = []
        for value in values:
            code = str(value).strip()
            if self.strip_prefix and code.startswith(self.strip_prefix):
                code = code[len(self.strip_prefix) :]
            if matcher.match(code):
                out.append(code)
        return out

    @property
    def source(self) -> str:
        where = "" if self.field == "identifier" else f"({self.label}.{self.field})"
        return f"MRCONSO:{self.sab}{where}"


IDENTITY_LABELS = ("SideEffect",)
MESH = r"^[CD]\d{6,9}$"
DIRECT_RULES: tuple[VocabularyRule, ...] = (
    VocabularyRule("Symptom", "identifier", "MSH", MESH),
    VocabularyRule("Disease", "mesh_list", "MSH", MESH, "MESH:"),
    VocabularyRule("Anatomy", "mesh_id", "MSH", MESH, "MESH:"),
    VocabularyRule("BiologicalProcess", "identifier", "GO", r"^GO:\d{7}$"),
    VocabularyRule("MolecularFunction", "identifier", "GO", r"^GO:\d{7}$"),
    VocabularyRule("CellularComponent", "identifier", "GO", r"^GO:\d{7}$"),
    VocabularyRule("Organism", "identifier", "NCBI", r"^\d+$"),
    VocabularyRule("Compound", "identifier", "DRUGBANK", r"^DB\d{5}$"),
    # today's SPOKE: Compound identifiers are InChIKeys, DrugBank ids are in the xrefs list
    VocabularyRule("Compound", "xrefs", "DRUGBANK", r"^DB\d{5}$", "drugbank:"),
    VocabularyRule("PharmacologicClass", "identifier", "NDFRT", r"^N\d{10}$"),
    VocabularyRule("PharmacologicClass", "identifier", "MED-RT", r"^N\d{10}$"),
    VocabularyRule("PharmacologicClass", "identifier", "MSH", MESH),
)
# Disease Ontology xref prefixes: None = the xref is a CUI; otherwise the MRCONSO SAB it names.
DO_XREF_ROUTES: dict[str, str | None] = {"UMLS_CUI": None, "MESH": "MSH", "NCI": "NCI"}


@dataclass(frozen=True)
class Ontology:
    """An OBO ontology whose term ids identify the nodes of one SPOKE label."""

    prefix: str  # of its term ids, e.g. "UBERON" in UBERON:0002048
    label: str  # the SPOKE label identified by its terms
    file: str  # the release file's usual name, used in route labels


# The ontologies the paper maps through the Ontology Lookup Service (SC22, appendix E), by config key.
ONTOLOGIES: dict[str, Ontology] = {
    "uberon": Ontology("UBERON", "Anatomy", "uberon.obo"),
    "cl": Ontology("CL", "CellType", "cl.obo"),
}
# OBO xref prefixes (compared upper-cased): None = the xref is a CUI; otherwise the MRCONSO SAB
# whose CODE it is (NCIt codes like C12468, FMA ids like 7195).
OBO_XREF_ROUTES: dict[str, str | None] = {"UMLS": None, "UMLS_CUI": None, "NCIT": "NCI", "FMA": "FMA"}
# MRCUI relations that carry a retired CUI to a current one (DEL has no successor). SY (synonymous)
# is a successor by default; RB, RN and RO (broader, narrower, other) name a *different* concept,
# so they are opt-in (``mapping.mrcui_relations``).
ALL_MRCUI_RELATIONS = ("SY", "RB", "RN", "RO")
MRCUI_RELATIONS = ("SY",)
# Standard InChIKey: blocks of 14, 10 and 1 upper-case letters.
INCHIKEY = re.compile(r"^[A-Z]{14}-[A-Z]{10}-[A-Z]$")
COMPOUND_INCHIKEY_PROPERTY = "inchikey"
# Today's SPOKE (public notes, 2026): a Compound's identifier is ``inchikey:<InChIKey>``, and its
# ``xrefs`` list holds ``drugbank:DB00331``, ``chembl.compound:CHEMBL1431``, ...; SPOKE v3 (the
# paper's) used DrugBank or ChEMBL ids as identifiers. Both are read.
INCHIKEY_IDENTIFIER_PREFIX = "inchikey:"
COMPOUND_XREFS_PROPERTY = "xrefs"
CHEMBL_XREF_PREFIX = "chembl.compound:"
# The property marking obsolete nodes on SPOKE (``vestige``: True or "True"); such nodes are skipped.
OBSOLETE_PROPERTY = "vestige"
# The node properties a mapping reads, for the Neo4j readers.
NODE_PROPERTIES = tuple(
    sorted(
        {r.field for r in DIRECT_RULES if r.field != "identifier"}
        | {COMPOUND_INCHIKEY_PROPERTY, COMPOUND_XREFS_PROPERTY, OBSOLETE_PROPERTY}
    )
)
MAPPABLE_LABELS = tuple(
    sorted(
        set(IDENTITY_LABELS)
        | {r.label for r in DIRECT_RULES}
        | {"Disease", "Gene", "Protein", "Compound"}
        | {o.label for o in ONTOLOGIES.values()}
    )
)

__all__ = [
    "ALL_MRCUI_RELATIONS", "CHEMBL_XREF_PREFIX", "COMPOUND_INCHIKEY_PROPERTY", "COMPOUND_XREFS_PROPERTY", "CUI",
    "DIRECT_RULES", "DO_XREF_ROUTES", "IDENTITY_LABELS", "INCHIKEY", "INCHIKEY_IDENTIFIER_PREFIX",
    "MAPPABLE_LABELS", "METHODS", "MRCUI_RELATIONS", "NODE_PROPERTIES", "OBO_XREF_ROUTES", "OBSOLETE_PROPERTY",
    "ONTOLOGIES", "Ontology", "SpokeNode", "VocabularyRule", "decoded_list", "is_true",
]  # fmt: skip

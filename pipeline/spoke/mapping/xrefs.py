"""The CUI <-> SPOKE mapping, built the way the seed paper describes (SC22, appendix E).

Three methods, every route recorded in ``source``:

* **identity** -- SPOKE nodes whose identifiers are CUIs (``SideEffect``).
* **direct** -- SPOKE identifiers (or node properties) in a vocabulary that UMLS holds, looked
  up in MRCONSO: MeSH (``Symptom`` ids, ``Disease.mesh_list``, ``Anatomy.mesh_id``), GO
  (``BiologicalProcess``/``MolecularFunction``/``CellularComponent``), NCBI Taxonomy
  (``Organism``), DrugBank (``Compound``), NDF-RT/MED-RT/MeSH (``PharmacologicClass``).
* **indirect** -- cross-references to such a vocabulary first: Disease Ontology xrefs
  (``UMLS_CUI:`` straight to a CUI; ``MESH:``/``NCI:`` through MRCONSO), NCBI ``gene_info``
  (Entrez GeneID -> ``HGNC:`` in dbXrefs -> MRCONSO SAB=HGNC), NCIt-SwissProt (UniProt ->
  NCIt code -> MRCONSO SAB=NCI), UniChem (ChEMBL -> DrugBank -> MRCONSO SAB=DRUGBANK, from a
  ``src1src2`` whole-source mapping, or ChEMBL -> RxNorm -> MRCONSO SAB=RXNORM, from a
  ``src1src47`` one; and InChIKey -> DrugBank, from UniChem's STRUCTURE and
  REFERENCE table dumps, for Compound nodes identified by an InChIKey or carrying one in an
  ``inchikey`` property), the UBERON and Cell Ontology release files (``uberon.obo``,
  ``cl.obo``: the cross-references the Ontology Lookup Service serves, read from the files
  themselves) for Anatomy and CellType nodes (``UMLS:`` straight to a CUI; ``NCIT:``/``FMA:``
  through MRCONSO), and retired CUIs carried through MRCUI (both ways: a retired CUI in
  the literature reaches the nodes of its successor, and a node keyed by a retired CUI is reached from the successor).

One CUI may map to several nodes and one node to several CUIs; all rows are kept, one per
(cui, node, method, source). MRCONSO rows count only when LAT=ENG and not suppressed
(SUPPRESS O, E or Y). Lines of the cross-reference files that cannot be read (a wrong number of
fields, a value that is not what the column holds, bytes that are not UTF-8) are counted in the
statistics (with the first one named), never dropped silently: every line a reader counts is
either accepted or malformed (``lines == accepted + malformed``).

The real files are large (MRCONSO ~ 16M rows): each is streamed once, keeping only the rows
whose keys some SPOKE node needs.
"""

from __future__ import annotations

import csv
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from pipeline.builds.layout import MappingFolder
from pipeline.spoke.dump import NodeRow, open_text, read_nodes, undecodable

MAPPING = pa.schema(
    [
        pa.field("cui", pa.string(), nullable=False),
        pa.field("spoke_label", pa.string(), nullable=False),
        pa.field("spoke_identifier", pa.string(), nullable=False),
        pa.field("method", pa.string(), nullable=False),  # identity | direct | indirect
        pa.field("source", pa.string(), nullable=False),  # the route, e.g. "DO:MESH>MRCONSO:MSH"
    ]
)
METHODS = ("identity", "direct", "indirect")

CUI = re.compile(r"^C[0-9]{7}\Z")  # ASCII digits: \d would take any Unicode digit
SUPPRESSED = frozenset("OEY")


@dataclass(frozen=True)
class SpokeNode:
    label: str
    identifier: str
    name: str | None = None
    properties: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def _property_values(node: SpokeNode, name: str) -> list[Any]:
    """A node property's values: a list property as it is, a scalar as one value, absent as none."""
    raw = node.properties.get(name)
    return raw if isinstance(raw, list) else [] if raw is None else [raw]


@dataclass(frozen=True)
class VocabularyRule:
    """A SPOKE field whose values are codes of an MRCONSO source vocabulary (SAB)."""

    label: str
    field: str  # "identifier" or a node property (a string or a list of strings)
    sab: str
    pattern: str  # the code after ``strip_prefix`` must match
    strip_prefix: str = ""

    def codes(self, node: SpokeNode) -> list[str]:
        values = [node.identifier] if self.field == "identifier" else _property_values(node, self.field)
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
# MRCUI relations that carry a retired CUI to a current one (DEL has no successor).
MRCUI_RELATIONS = ("SY", "RB", "RN", "RO")
# Standard InChIKey: blocks of 14, 10 and 1 upper-case letters.
INCHIKEY = re.compile(r"^[A-Z]{14}-[A-Z]{10}-[A-Z]$")
COMPOUND_INCHIKEY_PROPERTY = "inchikey"
# The node properties a mapping reads, for the Neo4j reader.
NODE_PROPERTIES = tuple(
    sorted({r.field for r in DIRECT_RULES if r.field != "identifier"} | {COMPOUND_INCHIKEY_PROPERTY})
)
MAPPABLE_LABELS = tuple(
    sorted(
        set(IDENTITY_LABELS)
        | {r.label for r in DIRECT_RULES}
        | {"Disease", "Gene", "Protein", "Compound"}
        | {o.label for o in ONTOLOGIES.values()}
    )
)


@dataclass
class FileStats:
    path: str
    lines: int = 0  # lines (records) read; each is accepted or malformed
    accepted: int = 0  # well formed, whether or not a SPOKE node needed them
    used: int = 0  # rows that some SPOKE node needed
    malformed: int = 0
    first_malformed: str | None = None
    dropped: dict[str, int] = field(default_factory=dict)  # reason -> rows (e.g. non-English)

    def bad(self, line: int, reason: str) -> None:
        self.malformed += 1
        if self.first_malformed is None:
            self.first_malformed = f"{self.path}:{line}: {reason}"

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# ------------------------------------------------------------------------------- SPOKE nodes


def spoke_nodes_from_dump(path: str | Path, fmt: str = "hetionet") -> Iterator[SpokeNode]:
    """SPOKE nodes from a dump's nodes file; unreadable rows are skipped (the loader names them)."""
    for item in read_nodes(path, fmt):
        if isinstance(item, NodeRow):
            yield SpokeNode(item.label, item.identifier, item.name, item.properties)


def spoke_nodes_from_neo4j(
    driver: Any,
    *,
    database: str | None = None,
    naming: Any = None,
    labels: Iterable[str] = MAPPABLE_LABELS,
    properties: Iterable[str] = NODE_PROPERTIES,
) -> Iterator[SpokeNode]:
    """SPOKE nodes of the mappable labels from Neo4j, read-only (identifiers as strings). Each
    label's query runs with the driver's query timeout; past it, Neo4jTimeout names the setting."""
    import neo4j
    from neo4j.exceptions import Neo4jError

    from pipeline.store.neo4j import GraphNaming, is_timeout, query_timeout_of, quote, timeout_error

    naming = naming or GraphNaming()
    ident, name = quote(naming.identifier_property), quote(naming.name_property)
    wanted = list(properties)
    timeout = query_timeout_of(driver)
    with driver.session(database=database, default_access_mode="READ") as session:
        for label in labels:
            neo_label = naming.label_of(label)
            query = (
                f"MATCH (n:{quote(neo_label)}) WHERE n.{ident} IS NOT NULL "
                f"RETURN toString(n.{ident}) AS identifier, n.{name} AS name, "
                f"[p IN $props | n[p]] AS values"
            )
            try:
                for record in session.run(neo4j.Query(query, timeout=timeout), props=wanted):
                    props = {p: v for p, v in zip(wanted, record["values"], strict=True) if v is not None}
                    yield SpokeNode(label, record["identifier"], record["name"], props)
            except Neo4jError as exc:
                if is_timeout(exc):
                    raise timeout_error(f"reading the SPOKE {label} nodes from Neo4j", timeout) from None
                raise


# ---------------------------------------------------------------------------- cross-references


def read_do_xrefs(path: str | Path, doids: set[str], stats: FileStats) -> dict[str, list[str]]:
    """DOID -> xrefs (``UMLS_CUI:C..``, ``MESH:D..``) from ``allXREFinDO.tsv`` (id, label, xref; quoted)."""
    out: dict[str, list[str]] = defaultdict(list)
    with open_text(path, errors="surrogateescape") as handle:
        reader = csv.reader(handle, delimiter="\t")
        try:
            header = next(reader, None)
        except csv.Error:
            header = None
        if not header or [h.strip().lower() for h in header[:3]] != ["id", "label", "xref"]:
            raise ValueError(f"{path}:1: expected header id, label, xref (Disease Ontology allXREFinDO.tsv)")
        while True:
            try:
                row = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:  # a field beyond the csv module's size limit
                stats.lines += 1
                stats.bad(reader.line_num, f"unreadable ({exc})")
                continue
            stats.lines += 1
            if len(row) != 3:
                stats.bad(reader.line_num, f"expected 3 fields, found {len(row)}")
                continue
            if undecodable(*row):
                stats.bad(reader.line_num, "bytes that are not valid UTF-8")
                continue
            stats.accepted += 1
            doid, _, xref = (value.strip() for value in row)
            if doid in doids:
                out[doid].append(xref)
                stats.used += 1
    return out


def read_gene_info(path: str | Path, gene_ids: set[str], stats: FileStats) -> dict[str, list[str]]:
    """Entrez GeneID -> HGNC ids (``HGNC:5``) from an NCBI ``gene_info`` file's dbXrefs."""
    out: dict[str, list[str]] = {}
    with open_text(path, errors="surrogateescape") as handle:
        header = handle.readline().rstrip("\r\n").lstrip("#").split("\t")
        try:
            gene_col, xref_col = header.index("GeneID"), header.index("dbXrefs")
        except ValueError:
            raise ValueError(f"{path}:1: not an NCBI gene_info header (needs GeneID and dbXrefs)") from None
        for number, line in enumerate(handle, start=2):
            stats.lines += 1
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != len(header):
                stats.bad(number, f"expected {len(header)} fields, found {len(fields)}")
                continue
            if undecodable(line):
                stats.bad(number, "bytes that are not valid UTF-8")
                continue
            stats.accepted += 1
            gene_id = fields[gene_col]
            if gene_id not in gene_ids:
                continue
            hgnc = [x[len("HGNC:") :] for x in fields[xref_col].split("|") if x.startswith("HGNC:")]
            if hgnc:
                out[gene_id] = hgnc
                stats.used += 1
    return out


def _tab_rows(handle: Iterable[str], stats: FileStats) -> Iterator[tuple[int, list[str]]]:
    """(line number, tab-separated fields) of each non-empty line after the header, counted in
    ``stats.lines``; a line with bytes that are not UTF-8 is counted malformed instead."""
    for number, line in enumerate(handle, start=2):
        text = line.rstrip("\r\n")
        if not text:
            continue
        stats.lines += 1
        if undecodable(text):
            stats.bad(number, "bytes that are not valid UTF-8")
            continue
        yield number, text.split("\t")


def read_ncit_swissprot(path: str | Path, accessions: set[str], stats: FileStats) -> dict[str, list[str]]:
    """UniProt accession -> NCIt codes from ``NCIt-SwissProt_Mapping.txt``.

    Layout: header ``NCIt Code  SwissProt ID  NCIt Preferred Name`` (tab, CRLF); the SwissProt
    column may hold several accessions joined by ``|`` -- each is kept (one-to-many).
    """
    out: dict[str, list[str]] = defaultdict(list)
    with open_text(path, errors="surrogateescape") as handle:
        header = [h.strip() for h in handle.readline().rstrip("\r\n").split("\t")]
        if header[:2] != ["NCIt Code", "SwissProt ID"]:
            raise ValueError(
                f"{path}:1: expected header 'NCIt Code<TAB>SwissProt ID<TAB>...', found {header!r}"
            )
        for number, fields in _tab_rows(handle, stats):
            if len(fields) < 2 or not fields[0].startswith("C"):
                stats.bad(number, "expected an NCIt code and a SwissProt accession")
                continue
            stats.accepted += 1
            for accession in fields[1].split("|"):
                accession = accession.strip()
                if accession in accessions:
                    out[accession].append(fields[0].strip())
                    stats.used += 1
    return out


UNICHEM_CHEMBL, UNICHEM_DRUGBANK, UNICHEM_RXNORM = "1", "2", "47"


@dataclass(frozen=True)
class UnichemTarget:
    """A UniChem source that ChEMBL ids are mapped to, and the MRCONSO vocabulary (SAB) of its ids."""

    name: str  # as in the route labels
    sab: str


# UniChem's source ids (its list of sources, https://www.ebi.ac.uk/unichem/sources).
UNICHEM_TARGETS: dict[str, UnichemTarget] = {
    UNICHEM_DRUGBANK: UnichemTarget("DrugBank", "DRUGBANK"),
    UNICHEM_RXNORM: UnichemTarget("RxNorm", "RXNORM"),
}
_UNICHEM_HEADER = re.compile(r"^From src:'(\d+)'\s+To src:'(\d+)'$")
_UNICHEM_FILE_NAME = re.compile(r"^src(\d+)src(\d+)\b")


@dataclass
class UnichemMapping:
    target: UnichemTarget
    ids: dict[str, list[str]]  # ChEMBL id -> ids in the target source


def read_unichem(path: str | Path, chembl_ids: set[str], stats: FileStats) -> UnichemMapping:
    """ChEMBL id -> DrugBank or RxNorm ids from a UniChem ``wholeSourceMapping`` file
    (``src1src2.txt[.gz]`` for DrugBank, ``src1src47.txt[.gz]`` for RxNorm).

    Layout: header ``From src:'1'<TAB>To src:'2'`` then one tab-separated pair per line. The
    target is read from the header (``src2src1`` works too); a file named ``srcNsrcM...`` must
    name the same two sources. Any source other than ChEMBL -> DrugBank / RxNorm is refused.
    """
    understood = ", ".join(f"{src} ({target.name})" for src, target in UNICHEM_TARGETS.items())
    out: dict[str, list[str]] = defaultdict(list)
    with open_text(path, errors="surrogateescape") as handle:
        first = handle.readline().strip()
        header = _UNICHEM_HEADER.match(first)
        if not header:
            raise ValueError(
                f"{path}:1: expected a UniChem mapping header \"From src:'1'<TAB>To src:'2'\", found {first!r}"
            )
        source, target = header.groups()
        named = _UNICHEM_FILE_NAME.match(Path(path).name)
        if named and set(named.groups()) != {source, target}:
            raise ValueError(
                f"{path}:1: the file name says UniChem sources {named.group(1)} and {named.group(2)}, "
                f"the header {source} and {target}"
            )
        other = target if source == UNICHEM_CHEMBL else source
        if UNICHEM_CHEMBL not in (source, target) or other not in UNICHEM_TARGETS:
            raise ValueError(
                f"{path}:1: maps UniChem source {source} to {target}; understood: ChEMBL (1) to {understood}"
            )
        chembl_first = source == UNICHEM_CHEMBL
        for number, line in enumerate(handle, start=2):
            text = line.rstrip("\r\n")
            if not text.strip():
                continue
            stats.lines += 1
            # tab-separated: UniChem's RxNorm ids are drug names, which may hold spaces
            fields = [value.strip() for value in text.split("\t")]
            if len(fields) != 2 or not all(fields):
                stats.bad(number, f"expected 2 tab-separated ids, found {text!r}")
                continue
            if undecodable(text):
                stats.bad(number, "bytes that are not valid UTF-8")
                continue
            stats.accepted += 1
            chembl, other_id = fields if chembl_first else fields[::-1]
            if chembl in chembl_ids:
                out[chembl].append(other_id)
                stats.used += 1
    return UnichemMapping(UNICHEM_TARGETS[other], dict(out))


def _table_dump_columns(
    path: str | Path, header_line: str, wanted: tuple[str, ...], what: str, optional: tuple[str, ...] = ()
) -> list[int]:
    """Positions of the ``wanted`` then the ``optional`` columns (-1 when absent) in a
    tab-separated header (case-insensitive)."""
    header = [h.strip().upper() for h in header_line.rstrip("\r\n").split("\t")]
    missing = [name for name in wanted if name not in header]
    if missing:
        raise ValueError(
            f"{path}:1: not a UniChem {what} table dump: no column {', '.join(missing)} in {header!r}"
        )
    return [header.index(name) for name in wanted] + [
        header.index(name) if name in header else -1 for name in optional
    ]


def read_unichem_structures(path: str | Path, inchikeys: set[str], stats: FileStats) -> dict[str, list[str]]:
    """Standard InChIKey -> UniChem UCIs, from the STRUCTURE table dump (``structure.tsv[.gz]``:
    ``UCI, STANDARDINCHI, STANDARDINCHIKEY``, tab-separated, with a header)."""
    out: dict[str, list[str]] = defaultdict(list)
    with open_text(path, errors="surrogateescape") as handle:
        uci_col, key_col = _table_dump_columns(
            path, handle.readline(), ("UCI", "STANDARDINCHIKEY"), "STRUCTURE"
        )
        for number, fields in _tab_rows(handle, stats):
            if len(fields) <= max(uci_col, key_col) or not fields[uci_col].strip().isdigit():
                stats.bad(number, "expected a numeric UCI and an InChIKey")
                continue
            stats.accepted += 1
            key = fields[key_col].strip()
            if key in inchikeys:
                out[key].append(fields[uci_col].strip())
                stats.used += 1
    return out


def read_unichem_references(
    path: str | Path, ucis: set[str], stats: FileStats, src_id: str = UNICHEM_DRUGBANK
) -> dict[str, list[str]]:
    """UniChem UCI -> compound ids of source ``src_id`` (2 = DrugBank), from the REFERENCE table
    dump (``reference.tsv[.gz]``: ``UCI, SRC_ID, SRC_COMPOUND_ID, ASSIGNMENT``). Only current
    assignments (ASSIGNMENT 1) count; obsolete ones are counted as dropped."""
    out: dict[str, list[str]] = defaultdict(list)
    with open_text(path, errors="surrogateescape") as handle:
        uci_col, src_col, id_col, assignment_col = _table_dump_columns(
            path,
            handle.readline(),
            ("UCI", "SRC_ID", "SRC_COMPOUND_ID"),
            "REFERENCE",
            optional=("ASSIGNMENT",),
        )
        needed = max(uci_col, src_col, id_col, assignment_col) + 1
        for number, fields in _tab_rows(handle, stats):
            if len(fields) < needed:
                stats.bad(number, f"expected at least {needed} fields, found {len(fields)}")
                continue
            stats.accepted += 1
            uci = fields[uci_col].strip()
            if fields[src_col].strip() != src_id or uci not in ucis:
                continue
            if assignment_col >= 0 and fields[assignment_col].strip() != "1":
                reason = f"ASSIGNMENT={fields[assignment_col].strip()}"
                stats.dropped[reason] = stats.dropped.get(reason, 0) + 1
                continue
            out[uci].append(fields[id_col].strip())
            stats.used += 1
    return out


# In an OBO tag-value line, "!" starts a comment unless escaped with a backslash.
_OBO_COMMENT = re.compile(r"(?<!\\)!")
_OBO_TAG = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def _obo_value(text: str) -> str:
    """An OBO tag's value without its trailing ``! comment`` and ``{modifiers}``
    (``UMLS:C0024109 {source="ncithesaurus:Lung"}`` -> ``UMLS:C0024109``)."""
    comment = _OBO_COMMENT.search(text)
    if comment:
        text = text[: comment.start()]
    text = text.strip()
    if text.endswith("}") and "{" in text:
        text = text[: text.rindex("{")].strip()
    return text


@dataclass
class _OboTerm:
    line: int  # of its [Term] header
    id: str | None = None
    xrefs: list[str] = field(default_factory=list)
    obsolete: bool = False


def read_obo_xrefs(path: str | Path, term_ids: set[str], stats: FileStats) -> dict[str, list[str]]:
    """Term id -> xrefs (``UMLS:C0024109``, ``NCIT:C12468``, ``FMA:7195``) of the wanted terms
    of an OBO release file (``uberon.obo``, ``uberon-basic.obo``, ``cl.obo``, ``cl-basic.obo``;
    ``.gz`` too).

    Only ``[Term]`` stanzas count (``[Typedef]`` and the header are skipped); of each, its
    ``id:`` and ``xref:`` lines, without trailing ``{...}`` modifiers, ``! comments`` or a
    quoted description. Terms marked ``is_obsolete: true`` are skipped and counted as dropped;
    a line that is not ``tag: value``, an xref that is not ``PREFIX:ID`` and a term without an
    id are counted as malformed, with file and line.
    """
    out: dict[str, list[str]] = defaultdict(list)

    def finish(term: _OboTerm | None) -> None:
        if term is None:
            return
        if term.id is None:
            stats.accepted -= 1  # its [Term] line, counted as accepted when it was read
            stats.bad(term.line, "[Term] without an id")
        elif term.obsolete:
            stats.dropped["obsolete term"] = stats.dropped.get("obsolete term", 0) + 1
        elif term.id in term_ids and term.xrefs:
            out[term.id].extend(term.xrefs)
            stats.used += len(term.xrefs)

    term: _OboTerm | None = None  # the [Term] being read; None in the header or another stanza
    with open_text(path, errors="surrogateescape") as handle:
        for number, line in enumerate(handle, start=1):
            stats.lines += 1
            text = line.strip()
            if undecodable(text):
                stats.bad(number, "bytes that are not valid UTF-8")
                continue
            if not text or text.startswith("!"):
                stats.accepted += 1
                continue
            if text.startswith("[") and text.endswith("]"):
                finish(term)
                term = _OboTerm(number) if text == "[Term]" else None
                stats.accepted += 1
                continue
            if term is None:
                stats.accepted += 1
                continue
            tag, colon, value = text.partition(":")
            if not colon or not _OBO_TAG.match(tag):
                stats.bad(number, f"expected 'tag: value', found {text!r}")
                continue
            value = _obo_value(value)
            if tag == "id":
                term.id = value
            elif tag == "is_obsolete":
                term.obsolete = value == "true"
            elif tag == "xref":
                xref = value.split()[0] if value else ""  # drops a quoted description
                prefix, colon, local = xref.partition(":")
                if not (prefix and colon and local):
                    stats.bad(number, f"xref {value!r} is not PREFIX:ID")
                    continue
                term.xrefs.append(xref)
            stats.accepted += 1
        finish(term)
    return dict(out)


def read_mrcui(
    path: str | Path, stats: FileStats, relations: Iterable[str] = MRCUI_RELATIONS
) -> dict[str, list[tuple[str, str]]]:
    """Retired CUI -> [(REL, successor CUI)] from MRCUI.RRF (CUI1|VER|REL|RELA|MAPREASON|CUI2|MAPIN|)."""
    keep = set(relations)
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    with open_text(path, errors="surrogateescape") as handle:
        for number, line in enumerate(handle, start=1):
            stats.lines += 1
            fields = line.rstrip("\r\n").split("|")
            if len(fields) < 7:
                stats.bad(number, f"expected 7 '|'-separated fields, found {len(fields)}")
                continue
            if undecodable(line):
                stats.bad(number, "bytes that are not valid UTF-8")
                continue
            cui1, rel, cui2 = fields[0], fields[2], fields[5]
            if rel not in keep or not cui2:
                stats.accepted += 1
                stats.dropped[rel or "(empty)"] = stats.dropped.get(rel or "(empty)", 0) + 1
                continue
            if not (CUI.fullmatch(cui1) and CUI.fullmatch(cui2)):
                stats.bad(number, "CUI1/CUI2 are not CUIs")
                continue
            stats.accepted += 1
            out[cui1].append((rel, cui2))
            stats.used += 1
    return out


def read_mrconso(
    path: str | Path, wanted: dict[str, set[str]], stats: FileStats
) -> dict[tuple[str, str], set[str]]:
    """(SAB, CODE) -> CUIs for the wanted codes; English, unsuppressed rows only."""
    by_code, _ = read_mrconso_codes_and_names(path, wanted, {}, stats)
    return by_code


def read_mrconso_codes_and_names(
    path: str | Path, codes: dict[str, set[str]], names: dict[str, set[str]], stats: FileStats
) -> tuple[dict[tuple[str, str], set[str]], dict[tuple[str, str], set[str]]]:
    """(SAB, CODE) -> CUIs for the wanted codes, and (SAB, upper-cased STR) -> CUIs for the
    wanted names (compared upper-cased), in one pass; English, unsuppressed rows only.

    MRCONSO.RRF columns: CUI|LAT|TS|LUI|STT|SUI|ISPREF|AUI|SAUI|SCUI|SDUI|SAB|TTY|CODE|STR|SRL|SUPPRESS|CVF|
    """
    by_code: dict[tuple[str, str], set[str]] = defaultdict(set)
    by_name: dict[tuple[str, str], set[str]] = defaultdict(set)
    dropped: Counter[str] = Counter()
    with open_text(path, errors="surrogateescape") as handle:
        for number, line in enumerate(handle, start=1):
            stats.lines += 1
            fields = line.rstrip("\r\n").split("|")
            if len(fields) < 18:
                stats.bad(number, f"expected 18 '|'-separated fields, found {len(fields)}")
                continue
            if undecodable(line):
                stats.bad(number, "bytes that are not valid UTF-8")
                continue
            stats.accepted += 1
            sab, code = fields[11], fields[13]
            code_wanted = code in codes.get(sab, ())
            name = fields[14].upper() if sab in names else ""  # upper-cased only where wanted
            name_wanted = name in names.get(sab, ())
            if not (code_wanted or name_wanted):
                continue
            if fields[1] != "ENG":
                dropped["LAT not ENG"] += 1
                continue
            if fields[16] in SUPPRESSED:
                dropped[f"SUPPRESS={fields[16]}"] += 1
                continue
            if code_wanted:
                by_code[(sab, code)].add(fields[0])
            if name_wanted:
                by_name[(sab, name)].add(fields[0])
            stats.used += 1
    stats.dropped = dict(dropped)
    return by_code, by_name


def find_umls_file(umls_dir: str | Path, name: str) -> Path | None:
    """``MRCONSO.RRF`` (or ``.gz``) in a UMLS META folder, or None."""
    for candidate in (Path(umls_dir) / name, Path(umls_dir) / f"{name}.gz"):
        if candidate.exists():
            return candidate
    return None


# ---------------------------------------------------------------------------------- builder


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
    for value in _property_values(node, COMPOUND_INCHIKEY_PROPERTY):
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
    "DIRECT_RULES", "MAPPING", "ONTOLOGIES", "MappingResult", "MappingSources", "Ontology", "SpokeNode",
    "UnichemMapping", "VocabularyRule", "build_mapping", "read_do_xrefs", "read_gene_info",
    "read_mrconso", "read_mrconso_codes_and_names", "read_mrcui", "read_ncit_swissprot", "read_obo_xrefs",
    "read_unichem", "spoke_nodes_from_dump", "spoke_nodes_from_neo4j", "write_mapping",
]  # fmt: skip

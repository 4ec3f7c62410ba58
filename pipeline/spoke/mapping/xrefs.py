"""Readers of the cross-reference files of the CUI <-> SPOKE mapping: the Disease Ontology
xrefs, NCBI ``gene_info``, NCIt-SwissProt, UniChem (whole-source mappings and the STRUCTURE and
REFERENCE table dumps), OBO release files (UBERON, Cell Ontology), and UMLS's MRCUI and MRCONSO.

The real files are large (MRCONSO ~ 16M rows): each is streamed once, keeping only the rows whose
keys some SPOKE node needs (the ``set`` a reader is given; ``None``: every usable row, which is
how a mapping against SPOKE's own Neo4j learns which identifiers to look up). Lines that cannot be read (a wrong
number of fields, a value that is not what the column holds, bytes that are not UTF-8) are counted
in the reader's :class:`FileStats` (with the first one named), never dropped silently: every line
a reader counts is either accepted or malformed (``lines == accepted + malformed``). A file whose
header is not that of its layout stops its reader with a ``ValueError`` naming file and line.
"""

from __future__ import annotations

import csv
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.spoke.dump import open_text, undecodable
from pipeline.spoke.mapping.rules import CUI, MRCUI_RELATIONS

SUPPRESSED = frozenset("OEY")  # MRCONSO SUPPRESS values of rows that do not count


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


def read_do_xrefs(path: str | Path, doids: set[str] | None, stats: FileStats) -> dict[str, list[str]]:
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
            if doids is None or doid in doids:
                out[doid].append(xref)
                stats.used += 1
    return out


def read_gene_info(path: str | Path, gene_ids: set[str] | None, stats: FileStats) -> dict[str, list[str]]:
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
            if gene_ids is not None and gene_id not in gene_ids:
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


def read_ncit_swissprot(
    path: str | Path, accessions: set[str] | None, stats: FileStats
) -> dict[str, list[str]]:
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
                if accession and (accessions is None or accession in accessions):
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


def read_unichem(path: str | Path, chembl_ids: set[str] | None, stats: FileStats) -> UnichemMapping:
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
            if chembl_ids is None or chembl in chembl_ids:
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


def read_unichem_structures(
    path: str | Path, inchikeys: set[str] | None, stats: FileStats, ucis: set[str] | None = None
) -> dict[str, list[str]]:
    """Standard InChIKey -> UniChem UCIs, from the STRUCTURE table dump (``structure.tsv[.gz]``:
    ``UCI, STANDARDINCHI, STANDARDINCHIKEY``, tab-separated, with a header): the rows of the
    wanted InChIKeys (``None``: any) and of the wanted UCIs (``None``: any)."""
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
            key, uci = fields[key_col].strip(), fields[uci_col].strip()
            if (inchikeys is None or key in inchikeys) and (ucis is None or uci in ucis):
                out[key].append(uci)
                stats.used += 1
    return out


def read_unichem_references(
    path: str | Path, ucis: set[str] | None, stats: FileStats, src_id: str = UNICHEM_DRUGBANK
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
            if fields[src_col].strip() != src_id or (ucis is not None and uci not in ucis):
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


def read_obo_xrefs(path: str | Path, term_ids: set[str] | None, stats: FileStats) -> dict[str, list[str]]:
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
        elif (term_ids is None or term.id in term_ids) and term.xrefs:
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


def _rrf_rows(handle: Iterable[str], stats: FileStats, width: int) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each line of a UMLS ``.RRF`` file (``|``-separated, no header),
    counted in ``stats.lines``; a line of fewer than ``width`` fields or with bytes that are not
    UTF-8 is counted malformed instead."""
    for number, line in enumerate(handle, start=1):
        stats.lines += 1
        fields = line.rstrip("\r\n").split("|")
        if len(fields) < width:
            stats.bad(number, f"expected {width} '|'-separated fields, found {len(fields)}")
            continue
        if undecodable(line):
            stats.bad(number, "bytes that are not valid UTF-8")
            continue
        yield number, fields


def read_mrcui(
    path: str | Path, stats: FileStats, relations: Iterable[str] = MRCUI_RELATIONS
) -> dict[str, list[tuple[str, str]]]:
    """Retired CUI -> [(REL, successor CUI)] from MRCUI.RRF (CUI1|VER|REL|RELA|MAPREASON|CUI2|MAPIN|)."""
    keep = set(relations)
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    with open_text(path, errors="surrogateescape") as handle:
        for number, fields in _rrf_rows(handle, stats, 7):
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


def read_mrconso_keys(
    path: str | Path, sabs: Iterable[str], stats: FileStats
) -> Iterator[tuple[str, str, str]]:
    """``(CUI, SAB, CODE)`` of every MRCONSO row of the given vocabularies: the codes a mapping
    against SPOKE's own Neo4j looks up as identifiers of the direct vocabularies. Rows of every
    language and suppression count here: a code looked up for nothing costs one lookup, and
    :func:`read_mrconso_codes_and_names` applies the rules when the rows are made."""
    wanted = set(sabs)
    with open_text(path, errors="surrogateescape") as handle:
        for _, fields in _rrf_rows(handle, stats, 18):
            stats.accepted += 1
            if fields[11] in wanted:
                stats.used += 1
                yield fields[0], fields[11], fields[13]


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
        for _, fields in _rrf_rows(handle, stats, 18):
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


__all__ = [
    "FileStats", "UnichemMapping", "UnichemTarget", "read_do_xrefs", "read_gene_info", "read_mrconso",
    "read_mrconso_codes_and_names", "read_mrconso_keys", "read_mrcui", "read_ncit_swissprot", "read_obo_xrefs", "read_unichem",
    "read_unichem_references", "read_unichem_structures",
]  # fmt: skip

"""Bad-input fuzzing of every reader of the CUI <-> SPOKE mapping (``pipeline.spoke.mapping.xrefs``).

Each reader gets files of its own real-format lines (tests/data/umls and tests/data/spoke/xrefs),
mutated (tests/support/fuzzing.py), and asks for every key (so that no row is skipped as unneeded).
Whatever the input, a reader either

* reads it: every line it counts is accepted or malformed (``lines == accepted + malformed``),
  the lines it counts are those of the file, the first malformed one is named with file and
  line, and what it returns is clean text (no byte that was not UTF-8 gets through); or
* refuses a file whose header is not that of its format, with a ValueError naming the file
  and line 1: never any other exception.
"""

from __future__ import annotations

import io
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.data import SPOKE, UMLS
from support.fuzzing import FUZZ, joined, mutated_line, mutated_lines, seed_lines

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

pytestmark = pytest.mark.fuzz  # many generated inputs: the full tier only (make test)

XREFS = SPOKE / "xrefs"
TSV_TOKENS = (
    b"\t\t",
    b"HGNC:",
    b"HGNC:HGNC:6018",
    b"MESH:D003371",
    b"UMLS_CUI:C0010200",
    b"CHEMBL635",
    b"DB00635",
)
RRF_TOKENS = (b"||", b"ENG", b"FRE", b"MSH", b"SY", b"DEL", b"O", b"C0010200")
OBO_TOKENS = (
    b"[Term]",
    b"[Typedef]",
    b"id: ",
    b"xref: ",
    b"is_obsolete: true",
    b"\\!",
    b"UMLS:C0024109",
    b'"',
)


class Everything(frozenset):
    """A set that holds every key: each well-formed row is then "needed"."""

    def __contains__(self, item: object) -> bool:
        return True


class EveryVocabulary(dict):
    """(SAB -> wanted codes or names) wanting everything, for MRCONSO."""

    def get(self, key: Any, default: Any = None) -> Everything:
        return Everything()

    def __contains__(self, key: object) -> bool:
        return True


EVERYTHING = Everything()


def text_lines(data: bytes) -> list[str]:
    """The lines of ``data`` as the readers' text handles split them (newline="")."""
    return list(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape", newline=""))


def strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in strings_in(k) + strings_in(v)]
    if isinstance(value, list | tuple | set | frozenset):
        return [s for item in value for s in strings_in(item)]
    return strings_in(value.ids) if hasattr(value, "ids") else []


def read(
    reader: Callable[[Path, FileStats], Any], data: bytes, name: str, refusable: bool
) -> tuple[FileStats, Any] | None:
    """Run a reader on ``data`` (as a file called ``name``); check the promises of the module
    docstring; (stats, result), or None when the file was refused."""
    with tempfile.TemporaryDirectory(prefix="litpath-fuzz-") as work:
        path = Path(work) / name
        path.write_bytes(data)
        stats = FileStats(str(path))
        try:
            result = reader(path, stats)
        except ValueError as exc:
            assert refusable, f"a file with an intact header was refused: {exc}"
            assert str(exc).startswith(f"{path}:1: "), exc
            return None
    assert stats.lines == stats.accepted + stats.malformed, stats
    assert 0 <= stats.used
    if stats.malformed:
        assert stats.first_malformed and stats.first_malformed.startswith(f"{path}:"), stats
        line = int(stats.first_malformed[len(f"{path}:") :].split(":", 1)[0])
        assert 1 <= line <= len(text_lines(data)), stats.first_malformed
    for text in strings_in(result):
        text.encode("utf-8")  # raises on a lone surrogate: a byte that was not UTF-8
    return stats, result


@st.composite
def with_header(draw, fixture: Path, delimiter: bytes, tokens: tuple[bytes, ...]) -> tuple[bytes, bool]:
    """(file, header changed): the fixture's first line (mutated one time in ten) and mutated
    lines of the rest."""
    data = fixture.read_bytes()
    header = original = data.split(b"\n", 1)[0].rstrip(b"\r")
    if draw(st.integers(0, 9)) == 0:
        header = draw(mutated_line(header, delimiter, tokens))
    body = draw(joined(mutated_lines(seed_lines(data, skip=1), delimiter, tokens)))
    return header + b"\n" + body, header != original


def without_header(fixture: Path, delimiter: bytes, tokens: tuple[bytes, ...]) -> st.SearchStrategy[bytes]:
    return joined(mutated_lines(seed_lines(fixture.read_bytes()), delimiter, tokens, max_lines=12))


def body_lines(data: bytes) -> list[str]:
    return text_lines(data)[1:]


@FUZZ
@given(file=with_header(XREFS / "allXREFinDO.tsv", b"\t", TSV_TOKENS + (b'"',)))
def test_do_xrefs_survive_mutated_lines(file):
    data, header_changed = file
    found = read(lambda p, s: read_do_xrefs(p, EVERYTHING, s), data, "allXREFinDO.tsv", header_changed)
    if found:
        stats, _ = found
        assert stats.lines <= len(body_lines(data))  # quoted fields may join lines into one record
        assert stats.used == stats.accepted


@FUZZ
@given(file=with_header(XREFS / "Homo_sapiens.gene_info", b"\t", TSV_TOKENS))
def test_gene_info_survives_mutated_lines(file):
    data, header_changed = file
    found = read(
        lambda p, s: read_gene_info(p, EVERYTHING, s), data, "Homo_sapiens.gene_info", header_changed
    )
    if found:
        stats, _ = found
        assert stats.lines == len(body_lines(data))
        assert stats.used <= stats.accepted


def non_empty(lines: list[str]) -> int:
    return sum(1 for line in lines if line.rstrip("\r\n"))


@FUZZ
@given(file=with_header(XREFS / "NCIt-SwissProt_Mapping.txt", b"\t", TSV_TOKENS))
def test_ncit_swissprot_survives_mutated_lines(file):
    data, header_changed = file
    found = read(
        lambda p, s: read_ncit_swissprot(p, EVERYTHING, s), data, "NCIt-SwissProt.txt", header_changed
    )
    if found:
        stats, _ = found
        assert stats.lines == non_empty(body_lines(data))


@FUZZ
@given(
    file=st.one_of(
        with_header(XREFS / "src1src2.txt", b"\t", TSV_TOKENS),
        with_header(XREFS / "src1src47.txt", b"\t", TSV_TOKENS),
    ),
)
def test_unichem_mapping_survives_mutated_lines(file):
    data, header_changed = file
    target = "src1src47.txt" if b"To src:'47'" in data.split(b"\n", 1)[0] else "src1src2.txt"
    found = read(lambda p, s: read_unichem(p, EVERYTHING, s), data, target, header_changed)
    if found:
        stats, _ = found
        assert stats.lines == sum(1 for line in body_lines(data) if line.strip())
        assert stats.used == stats.accepted


@FUZZ
@given(file=with_header(XREFS / "unichem_structure.tsv", b"\t", TSV_TOKENS))
def test_unichem_structure_survives_mutated_lines(file):
    data, header_changed = file
    found = read(
        lambda p, s: read_unichem_structures(p, EVERYTHING, s), data, "structure.tsv", header_changed
    )
    if found:
        stats, _ = found
        assert stats.lines == non_empty(body_lines(data))
        assert stats.used == stats.accepted


@FUZZ
@given(file=with_header(XREFS / "unichem_reference.tsv", b"\t", TSV_TOKENS))
def test_unichem_reference_survives_mutated_lines(file):
    data, header_changed = file
    found = read(
        lambda p, s: read_unichem_references(p, EVERYTHING, s), data, "reference.tsv", header_changed
    )
    if found:
        stats, _ = found
        assert stats.lines == non_empty(body_lines(data))
        assert stats.used + sum(stats.dropped.values()) <= stats.accepted


@FUZZ
@given(
    data=st.one_of(
        without_header(XREFS / "uberon.obo", b":", OBO_TOKENS),
        without_header(XREFS / "cl.obo", b":", OBO_TOKENS),
    )
)
def test_obo_xrefs_survive_mutated_lines(data):
    stats, _ = read(lambda p, s: read_obo_xrefs(p, EVERYTHING, s), data, "uberon.obo", False)
    assert stats.lines == len(text_lines(data))


@FUZZ
@given(data=without_header(UMLS / "MRCUI.RRF", b"|", RRF_TOKENS))
def test_mrcui_survives_mutated_lines(data):
    stats, _ = read(read_mrcui, data, "MRCUI.RRF", False)
    assert stats.lines == len(text_lines(data))
    assert stats.used + sum(stats.dropped.values()) == stats.accepted


@FUZZ
@given(data=without_header(UMLS / "MRCONSO.RRF", b"|", RRF_TOKENS))
def test_mrconso_survives_mutated_lines(data):
    def reader(path: Path, stats: FileStats) -> Any:
        return read_mrconso_codes_and_names(path, EveryVocabulary(), EveryVocabulary(), stats)

    stats, (by_code, by_name) = read(reader, data, "MRCONSO.RRF", False)
    assert stats.lines == len(text_lines(data))
    assert stats.used + sum(stats.dropped.values()) == stats.accepted

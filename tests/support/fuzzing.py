"""Hypothesis strategies for the reader fuzz tests: real-format lines, mutated.

A fuzzed input file is a handful of lines drawn from a reader's real fixtures, each mutated
0 to 3 times: a token that means something to some format (a delimiter, a quote, an escape,
``\\N``, a NUL or CR byte, bytes that are not UTF-8, a digit run beyond int64, a Unicode
digit, ...) inserted or put in place of a span or a field, a span deleted or repeated, a field
dropped or doubled, the line cut short. Lines keep their order of drawing and are joined
with LF or CRLF, with or without a final line end.

The tests are bounded and reproducible: ``FUZZ`` derandomizes Hypothesis (the examples are a
function of the test's source, the same on every run) and keeps no example database, so a
failure on one machine is the same failure on every machine.
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Derandomized, no database (nothing written into the work tree), no per-example deadline
# (the readers start threads and Parquet writers), a fixed number of examples per test.
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=100,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# Tokens that some reader gives a meaning to, and values that break naive parsing.
COMMON_TOKENS: tuple[bytes, ...] = (
    b"",
    b" ",
    b"\t",
    b"\r",
    b"\n",
    b"\r\n",
    b"\x00",
    b"\xff",  # never valid UTF-8
    b"\xc3",  # a UTF-8 sequence cut short
    b"\xe9",  # latin-1 e-acute
    "é".encode(),
    b"\xef\xbb\xbf",  # a BOM in the middle of a line
    "²".encode(),  # isdigit() but not a decimal digit
    "٣".encode(),  # an Arabic-Indic decimal digit
    b"0",
    b"-1",
    b"+1",
    b"9" * 11,  # beyond int32
    b"9" * 20,  # beyond int64
    b"9" * 25,
    b"1e999",
    b"nan",
    b"inf",
    b"C0012345",
    b"C12345678",
    b"|",
    b",",
    b'"',
    b"'",
    b"\\",
    b"\\N",
    b":",
    b"!",
    b"#",
    b"%",
    b"{",
    b"}",
    b"[",
    b"]",
    b"x" * 300,
)


def _span(draw, length: int) -> tuple[int, int]:
    start = draw(st.integers(0, length))
    end = draw(st.integers(start, min(length, start + 40)))
    return start, end


@st.composite
def mutated_line(
    draw, line: bytes, delimiter: bytes, tokens: tuple[bytes, ...] = (), edits: tuple[int, int] = (0, 3)
) -> bytes:
    """``line`` after ``edits`` (at least, at most) random edits (see the module docstring)."""
    choices = COMMON_TOKENS + tokens
    token = st.one_of(st.sampled_from(choices), st.binary(min_size=1, max_size=3))
    for _ in range(draw(st.integers(*edits))):
        edit = draw(
            st.sampled_from(
                ("insert", "replace", "delete", "repeat", "field", "drop-field", "double-field", "cut")
            )
        )
        if edit in ("insert", "replace", "delete", "repeat", "cut"):
            start, end = _span(draw, len(line))
            if edit == "insert":
                line = line[:start] + draw(token) + line[start:]
            elif edit == "replace":
                line = line[:start] + draw(token) + line[end:]
            elif edit == "delete":
                line = line[:start] + line[end:]
            elif edit == "repeat":
                line = line[:end] + line[start:end] + line[end:]
            else:
                line = line[:start]
            continue
        fields = line.split(delimiter)
        at = draw(st.integers(0, len(fields) - 1))
        if edit == "field":
            fields[at] = draw(token)
        elif edit == "drop-field":
            del fields[at]
        else:
            fields.insert(at, fields[at])
        line = delimiter.join(fields)
    return line


@st.composite
def mutated_lines(
    draw, seeds: list[bytes], delimiter: bytes, tokens: tuple[bytes, ...] = (), max_lines: int = 8
) -> list[bytes]:
    """1 to ``max_lines`` lines drawn from ``seeds`` (real lines, without line ends), mutated."""
    picks = draw(st.lists(st.sampled_from(seeds), min_size=1, max_size=max_lines))
    return [draw(mutated_line(line, delimiter, tokens)) for line in picks]


@st.composite
def joined(draw, lines: st.SearchStrategy[list[bytes]]) -> bytes:
    """Lines joined into a file: LF or CRLF, with or without the last line end."""
    parts = draw(lines)
    end = draw(st.sampled_from((b"\n", b"\r\n")))
    text = end.join(parts)
    return text + end if draw(st.booleans()) else text


def seed_lines(data: bytes, skip: int = 0) -> list[bytes]:
    """The non-empty lines of a fixture, without line ends, after ``skip`` header lines."""
    return [line.rstrip(b"\r") for line in data.split(b"\n")[skip:] if line.strip()]


def physical_lines(data: bytes) -> int:
    """Lines as Python's text readers count them with ``newline=""`` (LF, CRLF or a lone CR
    ends a line; a last line without an end counts)."""
    ends = len(re.findall(rb"\r\n|\r|\n", data))
    return ends + (1 if data and not data.endswith((b"\n", b"\r")) else 0)

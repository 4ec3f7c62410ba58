"""Bad-input fuzzing of apsp-fw's Matrix Market reader, through apsp-fw on one rank.

Files built from the real test graphs (solver/tests/data/*.mtx): the banner, the size line
(its entry count set to the entries drawn) and entry lines, each mutated now and then
(tests/support/fuzzing.py). A .mtx file is read whole or not at all, so whatever the input apsp-fw

* solves it (exit 0) when every entry reads: the summary counts exactly the file's entry
  lines, and ``--validate`` (Dijkstra over the same reader's edges) agrees; or
* stops with exit 2 and one error naming the file and a line within it, or saying that the
  matrix does not fit the (small) memory limit given here;

never a crash, a hang or another exit status.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.fuzzing import FUZZ, mutated_line, physical_lines

pytestmark = [pytest.mark.mpi, pytest.mark.fuzz]

DATA = Path(__file__).resolve().parents[2] / "solver" / "tests" / "data"
GRAPHS = [DATA / "directed_97.mtx", DATA / "symmetric_pattern_61.mtx"]
MTX_TOKENS = (
    b"%", b"%%", b"-0", b"+2", b"1.5", b"1e999", b"1e-999", b"1e38", b"1e39", b"inf", b"nan", b"97", b"98", b"0x10",
    b"1.5e", b"4294967296", b"2147483647",
    b"pattern", b"integer", b"complex", b"symmetric", b"skew-symmetric", b"array",
)  # fmt: skip
# Edge cases of a cost and of a vertex index, put in place of one field of one entry.
VALUES = (
    b"1e999", b"-1e999", b"1e-999", b"inf", b"-inf", b"nan", b"-0", b"0", b"+2", b"1e38", b"3.5e38", b"-1",
    b"0x1p3", b"1.", b".5", b"1e", b"--1", b"4294967296", b"1,5",
)  # fmt: skip
INDICES = (b"0", b"-1", b"98", b"62", b"9" * 20, b"+1", b"1.0", b"1e1", b"01", b"x")
MEMORY_LIMIT = "4M"  # a mutated size line must not make the solve big


@st.composite
def mtx_files(draw) -> bytes:
    """A file of one test graph's banner, size line and some of its entries, one line of them
    edited once or twice (the first bad line ends the reading, so one is enough), or none."""
    lines = draw(st.sampled_from(GRAPHS)).read_bytes().split(b"\n")
    size_at = next(i for i, line in enumerate(lines) if i > 0 and line.strip() and not line.startswith(b"%"))
    n = lines[size_at].split()[0]
    entries = draw(
        st.lists(st.sampled_from([line for line in lines[size_at + 1 :] if line.strip()]), max_size=12)
    )
    comments = [b"% fuzzed"] if draw(st.booleans()) else []
    out = [lines[0], *comments, b"%s %s %d" % (n, n, len(entries)), *entries]
    edit = draw(st.sampled_from(("none", "line", "field", "field")))
    if edit == "line":
        at = draw(st.integers(0, len(out) - 1))
        out[at] = draw(mutated_line(out[at], b" ", MTX_TOKENS, edits=(1, 2)))
    elif edit == "field" and entries:
        at = draw(st.integers(len(out) - len(entries), len(out) - 1))
        fields = out[at].split()
        column = draw(st.integers(0, len(fields) - 1))
        fields[column] = draw(st.sampled_from(VALUES if column == 2 else INDICES))
        out[at] = b" ".join(fields)
    end = draw(st.sampled_from((b"\n", b"\r\n")))
    return end.join(out) + end


def entry_lines(data: bytes) -> int:
    """Lines after the size line that are neither blank nor comments (the reader's rule)."""
    lines = data.replace(b"\r\n", b"\n").split(b"\n")[1:]
    content = [line for line in lines if line.lstrip(b" \t\r") and not line.lstrip(b" \t\r").startswith(b"%")]
    return max(len(content) - 1, 0)


@settings(FUZZ, max_examples=40)  # about 0.5 s an example
@given(data=mtx_files())
# Found before: a cost beyond float threw std::out_of_range from std::stof (no file, no line);
# n = 2^32 wrapped the size arithmetic.
@example(data=b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1e999\n2 3 1e-999\n")
@example(data=b"%%MatrixMarket matrix coordinate real general\n4294967296 4294967296 1\n3 5 1\n")
@example(data=b"%%MatrixMarket matrix coordinate real general\n3 3 1\n99999999999999999999 1 1\n")
def test_mtx_reader_survives_mutated_lines(apsp_fw, data):
    with tempfile.TemporaryDirectory(prefix="litpath-fuzz-") as work:
        path = Path(work) / "graph.mtx"
        path.write_bytes(data)
        # One rank, started without a launcher (an MPI singleton): mpirun adds 2 s to every
        # failing run, and most runs here fail.
        command = [
            str(apsp_fw), "--input", str(path), "--tile", "16", "--threads", "1",
            "--memory-limit", MEMORY_LIMIT, "--validate", "20",
        ]  # fmt: skip
        env = {
            **os.environ,
            "OMP_NUM_THREADS": "1",
            "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        }
        try:
            run = subprocess.run(
                command, capture_output=True, text=True, errors="replace", timeout=60, env=env
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"apsp-fw hung on {data!r}")
    assert run.returncode in (0, 2), f"exit {run.returncode}: {run.stderr[-2000:]}"
    if run.returncode == 0:
        summary = json.loads(run.stdout)
        assert summary["input_entries"] == entry_lines(data)
        assert summary["validate"]["ok"], summary["validate"]
        return
    errors = [line for line in run.stderr.splitlines() if line.startswith("apsp-fw: error: ")]
    assert len(errors) == 1, run.stderr
    message = errors[0][len("apsp-fw: error: ") :]
    if message.startswith(f"{path}:"):
        line = int(message[len(f"{path}:") :].split(":", 1)[0])
        assert 1 <= line <= physical_lines(data), message
    else:
        assert " does not fit: " in message and "(--memory-limit)" in message, message

"""One source of each solver default: the config schema. The planner, the runner
(pipeline/solve/apsp_fw.py) and apsp-fw's own --help must agree with it."""

from __future__ import annotations

import inspect
import re
import subprocess

import pytest

from pipeline.config import default_of
from pipeline.solve.apsp_fw import find_solver, run_solver, solver_arguments
from pipeline.solve.plan.auto import resolve_auto
from pipeline.solve.plan.machine import DEFAULT_CHUNK_BYTES
from pipeline.solve.plan.model import SolverConfig

SCHEMA = {key: default_of(f"solver.{key}") for key in ("tile", "broadcast", "chunk_bytes", "lookahead")}


def parse_bytes(text: str) -> int:
    number, suffix = re.fullmatch(r"(\d+)([KMG]?)", text).groups()
    return int(number) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[suffix]


def test_apsp_fw_defaults_are_the_schemas():
    try:
        binary = find_solver()
    except Exception as exc:  # noqa: BLE001 - the solver is built by the set-up
        pytest.skip(f"apsp-fw not built: {exc}")
    text = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60).stdout
    said = {
        "tile": int(re.search(r"--tile B .*\(default (\d+)\)", text).group(1)),
        "broadcast": re.search(r"; default (\S+)\n", text).group(1),
        "chunk_bytes": parse_bytes(re.search(r"--chunk BYTES .*\(default (\w+);", text).group(1)),
        "lookahead": re.search(r"panel broadcast \(default (on|off)\)", text).group(1) == "on",
    }
    assert said == SCHEMA


def test_the_runner_and_the_planner_default_to_the_schema():
    for function in (run_solver, solver_arguments):
        parameters = inspect.signature(function).parameters
        assert parameters["tile"].default == SCHEMA["tile"], function
        assert parameters["broadcast"].default == SCHEMA["broadcast"], function
        assert parameters["lookahead"].default == SCHEMA["lookahead"], function
    config = SolverConfig(1, 1, SCHEMA["tile"])
    assert (config.broadcast, config.lookahead, config.chunk_bytes) == (
        SCHEMA["broadcast"], SCHEMA["lookahead"], SCHEMA["chunk_bytes"],
    )  # fmt: skip
    assert DEFAULT_CHUNK_BYTES == SCHEMA["chunk_bytes"]
    auto = inspect.signature(resolve_auto).parameters
    assert (auto["tile"].default, auto["broadcast"].default) == (SCHEMA["tile"], SCHEMA["broadcast"])

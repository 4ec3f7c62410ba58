"""Fault drill: the solver killed and resumed, servers stopped mid-load, damaged files."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "faults: fault drill (kills, server outages, damaged files)")


from solver.conftest import apsp_fw  # noqa: E402,F401  (the built solver, shared with tests/solver)

# tests/services/build_fixture.py (a module, not a package) builds the service's fixture builds.
sys.path.insert(0, str(Path(__file__).parents[1] / "services"))

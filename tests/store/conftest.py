"""Fixtures the store's test modules share."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A small synthetic corpus through ingest, merge and build-graph: (tables, graph) folders,
    built once per test module (a module may define its own ``built`` instead)."""
    from support.pipeline_runs import merged_and_graphed

    return merged_and_graphed(tmp_path_factory.mktemp("build"))

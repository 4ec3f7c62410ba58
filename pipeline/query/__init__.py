"""The read side of a build, what the comparison and the service use: a build and its graphs
(``build``, ``graph``), paths from stored distances or on demand (``paths``, ``sssp``: the
binding of liblitpath_sssp), and ``litpath describe``.

:func:`open_paths` (``client``) is the entry point for Python users: open a finished build, ask
it for paths, distances and neighbours (README, "Python")."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    # Loaded on first use: `import pipeline.query.x` (every stage that reads a build) need not
    # import the build reader and ADIOS2 along with it.
    if name in ("open_paths", "BuildPaths", "PathAnswer"):
        from pipeline.query import client

        return getattr(client, name)
    raise AttributeError(f"module 'pipeline.query' has no attribute {name!r}")

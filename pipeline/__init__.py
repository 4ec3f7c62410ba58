"""litpath's pipeline: ingest, graph, solve, loads, SPOKE mapping and comparison, behind the
``litpath`` command line (:mod:`pipeline.cli`).

``__version__`` is litpath's one version string: pyproject.toml reads it for the package,
the path service reports it as the API's version, and solver/CMakeLists.txt reads it for
``apsp-fw --version`` and the solve summaries. Change it here only.
"""

__version__ = "1.1.0"

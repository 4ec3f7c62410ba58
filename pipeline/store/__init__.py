"""Where a build's data is stored, and the one way to read and write each store.

Modules: :mod:`.adios` (graph.bp and distances.bp), :mod:`.mongo` (load a build into MongoDB),
:mod:`.evidence` (read a hop's supporting documents back, with the ``_id`` scheme both sides
use), :mod:`.neo4j` (settings and the one way to connect), :mod:`.commands` (``litpath
load-mongo``). A build folder as a whole is opened by :mod:`pipeline.query.build`.
"""

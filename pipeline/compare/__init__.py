"""Compare literature paths with SPOKE: classification (scenarios 1-4), evidence, reports.

Modules: :mod:`.spoke` (mapping lookups, batched read-only Neo4j queries), :mod:`.literature`
(paths of a build, evidence), :mod:`.classify` (the scenarios), :mod:`.run` (query sets, one
run), :mod:`.report` (tables, figure, HTML/Markdown), :mod:`.commands` (``litpath compare``).
"""

"""The input kinds litpath reads: every reader that a source module declares in its ``READERS``,
collected in one place. :data:`KINDS` (the CLI's ``--kind`` choices, the build's input kinds)
is derived from it, and a test holds it to the ``inputs`` keys of schemas/config.schema.yaml.

A new source is a module that declares ``READERS`` and is listed in :data:`SOURCES`.
"""

from __future__ import annotations

from types import ModuleType

from pipeline.ingest import citations, cord19, pubmed, semmeddb
from pipeline.ingest.base import Reader

SOURCES: tuple[ModuleType, ...] = (semmeddb, pubmed, cord19, citations)


def _collect(sources: tuple[ModuleType, ...]) -> dict[str, Reader]:
    readers: dict[str, Reader] = {}
    for module in sources:
        for reader in module.READERS:
            if reader.kind in readers:
                raise RuntimeError(f"input kind {reader.kind!r} declared twice (in {module.__name__})")
            readers[reader.kind] = reader
    return readers


READERS: dict[str, Reader] = _collect(SOURCES)
KINDS: tuple[str, ...] = tuple(READERS)


def reader_for(kind: str) -> Reader:
    """The reader of ``kind``; ValueError naming the known kinds for any other."""
    reader = READERS.get(kind)
    if reader is None:
        raise ValueError(f"unknown ingest kind {kind!r}; expected one of {', '.join(KINDS)}")
    return reader

"""Opening ADIOS2 BP files for reading without leaving files behind.

ADIOS2 2.12's BP5 reader writes ``/tmp/<file name>_<pid in hex>_profiling.json`` each time it
closes, whatever the engine's ``Profile`` parameter says (``BP5Reader::FlushProfiler``). Left
there, every litpath process that reads a BP file -- each stage, the service, every test -- adds
one to a shared /tmp. Every reader litpath opens goes through :func:`bp_reader` (or
:func:`close_bp_reader`), which removes it; ``apsp-fw``'s ``BpReader`` does the same in C++.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import adios2


def reader_profile_path(path: Path | str, pid: int | None = None) -> Path:
    """Where ADIOS2's BP5 reader leaves its profile when this process (or ``pid``) closes ``path``."""
    return Path("/tmp") / f"{Path(path).name}_{os.getpid() if pid is None else pid:x}_profiling.json"


def close_bp_reader(reader: adios2.FileReader, path: Path | str) -> None:
    """Close ``reader`` (of ``path``) and remove the profile ADIOS2 wrote for it in /tmp."""
    try:
        reader.close()
    finally:
        reader_profile_path(path).unlink(missing_ok=True)


@contextmanager
def bp_reader(path: Path | str) -> Iterator[adios2.FileReader]:
    """``adios2.FileReader(path)`` that leaves nothing behind in /tmp (:func:`reader_profile_path`)."""
    reader = adios2.FileReader(str(Path(path)))  # the name reader_profile_path expects
    try:
        yield reader
    finally:
        close_bp_reader(reader, path)

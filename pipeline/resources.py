"""What the build stages may use of this machine: the memory budget and where to spill.

``resources.memory_gib`` in the workflow config (0: the default) bounds the ingest, merge
and graph stages; a stage whose data do not fit works in partitions spilled to disk
(``resources.spill_dir``, default beside its output). The budget is not part of the build
id: the results do not depend on it, only the way they are computed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DEFAULT_CAP_BYTES = 8 << 30


def physical_memory_bytes() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return DEFAULT_CAP_BYTES


def memory_budget_bytes(config: dict[str, Any] | None) -> int:
    """``resources.memory_gib`` in bytes; by default min(8 GiB, half of this machine's memory)."""
    resources = ((config or {}).get("resources") or {}) if isinstance(config, dict) else {}
    gib = float(resources.get("memory_gib") or 0)
    if gib > 0:
        return int(gib * (1 << 30))
    return min(DEFAULT_CAP_BYTES, physical_memory_bytes() // 2)


def resident_bytes() -> int:
    """This process's resident memory now (0 where /proc is missing)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


def room_left(budget_bytes: int, floor_fraction: float = 0.25) -> int:
    """What a stage may still allocate within ``budget_bytes``, given what it already holds.

    A stage that works in partitions sizes them with this, not with the whole budget: what it
    holds for the whole run (per-vertex arrays, the vertex keys, the concept pairs) grows with
    the corpus. Never less than ``floor_fraction`` of the budget, so the partitions stay usable
    when those needs alone come near the budget (the peak then exceeds it, and the caller says so).
    """
    return max(int(floor_fraction * budget_bytes), budget_bytes - resident_bytes())


def spill_parent(config: dict[str, Any] | None, beside: Path) -> Path:
    """Where a stage creates its spill folder: ``resources.spill_dir``, else ``beside``."""
    resources = ((config or {}).get("resources") or {}) if isinstance(config, dict) else {}
    return Path(resources.get("spill_dir") or beside)


__all__ = ["memory_budget_bytes", "physical_memory_bytes", "resident_bytes", "room_left", "spill_parent"]

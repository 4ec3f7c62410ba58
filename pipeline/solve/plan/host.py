"""The machine file a plan may trust: one that describes the machine the plan runs on.

A machine file is measured on one machine. Planning with a file measured on another CPU is
silently wrong (the shipped file, measured on an Intel Xeon, under-predicted the solver by
54 % on an AMD EPYC), so before planning :func:`machine_for_planning` compares the file's
description (CPU model, cores, SIMD, memory) with this machine and, when they differ, uses
a file calibrated here instead: from ``$LITPATH_CACHE/machines/`` if one was made before,
else it calibrates now (about a minute, said before it starts) and keeps the result there.

An explicitly chosen file (``solver.machine`` or ``$LITPATH_MACHINE``) is used as it is: it
may describe a cluster the plan is made for. A mismatch is then reported, never hidden.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipeline.runtime.progress import format_bytes
from pipeline.solve.plan.machine import Machine, default_machine_path, describe_this_machine, load_machine

MEMORY_TOLERANCE = 0.10  # a machine file's memory may differ this much (kernel reservations)


def cache_dir() -> Path:
    return Path(os.environ.get("LITPATH_CACHE", Path.home() / ".cache" / "litpath")) / "machines"


def machine_mismatches(machine: Machine, here: dict[str, Any] | None = None) -> list[str]:
    """How the machine file's description differs from this machine (empty: it describes it)."""
    here = here or describe_this_machine()
    described = machine.description or {}
    differences = []
    for key, what in (("cpu_model", "CPU"), ("simd", "SIMD")):
        if described.get(key) and here.get(key) and str(described[key]) != str(here[key]):
            differences.append(f"{what} {described[key]!r} in the file, {here[key]!r} here")
    if int(described.get("cores") or machine.cores_per_node) != int(here.get("cores") or 0):
        differences.append(f"{described.get('cores') or machine.cores_per_node} cores in the file, {here.get('cores')} here")
    file_memory = int(described.get("memory_bytes") or machine.memory_per_node_bytes or 0)
    here_memory = int(here.get("memory_bytes") or 0)
    if file_memory and here_memory and abs(file_memory - here_memory) > MEMORY_TOLERANCE * here_memory:
        differences.append(f"{format_bytes(file_memory)} in the file, {format_bytes(here_memory)} here")
    return differences


def host_slug(here: dict[str, Any]) -> str:
    """A file name for this machine: readable CPU words plus a hash of what the model depends on."""
    words = re.sub(r"[^a-z0-9]+", "-", str(here.get("cpu_model", "cpu")).lower()).strip("-")[:40]
    key = f"{here.get('cpu_model')}|{here.get('cores')}|{here.get('simd')}|{int(here.get('memory_bytes') or 0) >> 30}"
    return f"{words}-{here.get('cores')}c-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def machine_for_planning(
    path: str | Path | None = None,
    *,
    calibrate_if_needed: bool = True,
    log: Callable[[str], None] = print,
    calibrate: Callable[..., Machine] | None = None,
) -> tuple[Machine, str]:
    """``(machine, note)``: the machine file to plan with and a sentence saying why it is that one."""
    explicit = path or os.environ.get("LITPATH_MACHINE")
    here = describe_this_machine()
    if explicit:
        machine = load_machine(explicit)
        differences = machine_mismatches(machine, here)
        if differences:
            note = f"{explicit} was chosen explicitly but does not describe this machine ({'; '.join(differences)})"
            log(f"litpath plan: warning: {note}")
            return machine, note
        return machine, f"{explicit} (chosen explicitly; describes this machine)"
    shipped_path = default_machine_path()
    shipped = load_machine(shipped_path)
    differences = machine_mismatches(shipped, here)
    if not differences:
        return shipped, f"{shipped_path.name} describes this machine"
    cached_path = cache_dir() / f"{host_slug(here)}.yaml"
    why = f"{shipped_path.name} was measured elsewhere ({'; '.join(differences)})"
    cached_path.parent.mkdir(parents=True, exist_ok=True)
    # One calibration per machine: a second planner (the other graph's solve) waits for it.
    with open(cached_path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cached_path.exists():
            cached = load_machine(cached_path)
            if not machine_mismatches(cached, here):
                return cached, f"{why}; using the file calibrated here earlier, {cached_path}"
        if not calibrate_if_needed:
            return shipped, f"{why}; not recalibrated (calibration disabled), predictions may be far off"
        if calibrate is None:
            from pipeline.solve.plan.calibrate import calibrate_quickly as calibrate
        log(f"litpath plan: {why}; calibrating this machine first (about a minute, once; kept in {cached_path})")
        machine = calibrate(host_slug(here), log=log)
        machine.save(cached_path)
        return load_machine(cached_path), f"{why}; calibrated here into {cached_path}"


__all__ = ["cache_dir", "host_slug", "machine_for_planning", "machine_mismatches"]

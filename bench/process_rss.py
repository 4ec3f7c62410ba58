"""Run a command and sample the resident memory of every process of the build, each on its own.

    .venv/bin/python bench/process_rss.py --out rss.json [--interval 0.5] -- <command ...>

``/usr/bin/time -v`` gives the largest process of a run but not which one it was, and
Snakemake's ``benchmark:`` sampling (every 30 s, per job's process tree) misses short peaks and
never sees the local servers, which run outside the job's tree. This samples, every
``--interval`` seconds, the RSS of each process of the command's tree and of every process whose
command line names the project's local servers (MongoDB-wire and Neo4j, started by
``services.local``), and writes each process's peak with its command line to ``--out`` (JSON,
largest first). The exit status is the command's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import psutil

# Command-line fragments of the local servers a build talks to (services/local): they are started
# once and outlive the run, so they are not in the command's process tree.
SERVER_MARKERS = ("litpath-mongo", "mongo-java-server", "services.local", "neo4j", "org.neo4j")


def _is_server(process: psutil.Process) -> bool:
    try:
        line = " ".join(process.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False
    return any(marker in line for marker in SERVER_MARKERS)


def _summary(process: psutil.Process) -> str:
    try:
        line = " ".join(process.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return "?"
    return line[:300]


def sample(command: list[str], interval: float) -> tuple[int, dict[int, dict]]:
    """Run ``command``; return (its exit status, {pid: {"peak_mib", "command", "server"}})."""
    child = subprocess.Popen(command)
    root = psutil.Process(child.pid)
    servers = [p for p in psutil.process_iter() if _is_server(p)]
    peaks: dict[int, dict] = {}
    samples = 0
    while True:
        samples += 1
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            tree = []
        for process in tree + servers:
            try:
                rss = process.memory_info().rss / 2**20
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            seen = peaks.get(process.pid)
            if seen is None:
                # the command line is read once: by the next sample a short process may be gone
                # a server by its command line: one that make run starts is in the command's tree
                # when first seen, before the next scan lists it among the servers
                seen = peaks[process.pid] = {"peak_mib": 0.0, "command": _summary(process),
                                             "server": process in servers or _is_server(process)}  # fmt: skip
            if rss > seen["peak_mib"]:
                # at its peak, the process's command line as it is then (an exec may have changed it:
                # make run's shell, whose line names services.local, ends as `litpath describe`)
                seen["peak_mib"], seen["command"] = round(rss, 1), _summary(process)
                seen["server"] = _is_server(process)
        if child.poll() is not None:
            return child.returncode, peaks
        # servers started by the command itself (make run's SERVERS=local) join the sampled set
        if samples % 20 == 0:
            servers = [p for p in psutil.process_iter() if _is_server(p)]
        time.sleep(interval)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="JSON file of each process's peak RSS")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between samples")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (put it after --)")
    status, peaks = sample(command, args.interval)
    rows = sorted(({"pid": pid, **row} for pid, row in peaks.items()), key=lambda r: -r["peak_mib"])
    Path(args.out).write_text(json.dumps({"interval_s": args.interval, "processes": rows}, indent=1) + "\n")
    largest = rows[0] if rows else None
    if largest:
        print(f"process_rss: {len(rows)} processes sampled; largest {largest['peak_mib']:,.0f} MiB: "
              f"{largest['command'][:120]}", file=sys.stderr)  # fmt: skip
    sys.exit(status)


if __name__ == "__main__":
    main()

"""Helpers of bench/gpu/run_device.sh: random graphs, the PyTorch peer, the run's decisions, results.

  python bench/gpu/device_bench.py graph N OUT.mtx [--degree D] [--seed S]
  python bench/gpu/device_bench.py torch-fw N [--device cuda]            -> one JSON line
  python bench/gpu/device_bench.py apsp-row SUMMARY.json NAME            -> one JSON line
  python bench/gpu/device_bench.py predict ROWS BACKEND N_FROM N_TO      -> seconds (solve)
  python bench/gpu/device_bench.py best-tile ROWS BACKEND N              -> tile
  python bench/gpu/device_bench.py pick-n ROWS BACKEND N TILE SECONDS DEVICE_FREE HOST_MEM -> n or nothing
  python bench/gpu/device_bench.py clocks SAMPLES.csv                    -> one JSON line
  python bench/gpu/device_bench.py ncu-rows NCU.log                      -> one JSON line per kernel launch
  python bench/gpu/device_bench.py report RESULTS_DIR                    -> results.md + results.json

Rates count 2 n^3 semiring operations (one add and one min per candidate), as apsp-fw's
summary and gpu-addmin-peak do, so every rate divides by the measured add+min peak directly.
The PyTorch peer is the textbook dense Floyd-Warshall, one broadcasted min per k:
D = torch.minimum(D, D[:, k, None] + D[None, k, :]).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import re
import statistics
import sys
import time
from pathlib import Path


def write_graph(n: int, out: Path, degree: int, seed: int) -> None:
    """A random directed graph in Matrix Market form: n * degree edges, uniform ends, costs in [0.1, 10)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    m = n * degree
    src = rng.integers(1, n + 1, m)
    dst = rng.integers(1, n + 1, m)
    cost = rng.uniform(0.1, 10.0, m).astype(np.float32)
    with out.open("w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n")
        f.write(f"{n} {n} {m}\n")
        np.savetxt(f, np.column_stack([src, dst, cost]), fmt=["%d", "%d", "%.6g"])


def torch_fw(n: int, device: str) -> dict:
    try:
        import torch
    except ImportError:
        return {"peer": "torch", "n": n, "skipped": "torch not installed"}
    if device == "cuda" and not torch.cuda.is_available():  # ROCm builds of torch also say "cuda"
        return {"peer": "torch", "n": n, "skipped": "torch has no GPU"}
    g = torch.Generator(device="cpu").manual_seed(n)
    d = torch.rand(n, n, generator=g) * 10
    d[torch.rand(n, n, generator=g) < 0.9] = float("inf")
    d.fill_diagonal_(0)
    d = d.to(device)

    def run(steps: int) -> float:
        x = d.clone()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for k in range(steps):
            x = torch.minimum(x, x[:, k, None] + x[None, k, :])
        torch.cuda.synchronize()
        return time.perf_counter() - t0

    run(min(n, 8))  # warm-up
    steps = min(n, 512)  # every k costs the same: time a prefix, scale to n
    seconds = run(steps) * n / steps
    return {
        "peer": "torch",
        "torch": torch.__version__,
        "n": n,
        "seconds": seconds,
        "rate": 2.0 * n**3 / seconds,
        "timed_k": steps,
    }


def apsp_row(summary_path: Path, name: str) -> dict:
    s = json.loads(summary_path.read_text())
    v = s.get("validate") or {}
    return {
        "what": "apsp-fw",
        "name": name,
        "backend": s["backend"],
        "isa": s.get("isa"),
        "n": s["n"],
        "tile": s["tile"],
        "threads": s["threads"],
        "residency": s.get("matrix_residency"),
        "seconds": s["seconds"]["solve"],
        "total_seconds": s["total_seconds"],
        "rate": s["semiring_rate"],
        "ok": bool(s["ok"]),
        "max_rel_error": v.get("max_rel_error"),
        "validated_rows": v.get("rows"),
        "checksum": s.get("distances_checksum"),
        "phases": s["seconds"],
    }


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip().startswith("{")]


def apsp_rows(path: Path, backend: str, n: int) -> list[dict]:
    return [
        r for r in read_rows(path) if r.get("what") == "apsp-fw" and r["backend"] == backend and r["n"] == n
    ]


def predict(path: Path, backend: str, n_from: int, n_to: int) -> str:
    """Solve seconds at n_to from the measured ones at n_from (the work grows as n^3)."""
    rows = apsp_rows(path, backend, n_from)
    if not rows:
        return ""
    return f"{min(r['seconds'] for r in rows) * (n_to / n_from) ** 3:.0f}"


def best_tile(path: Path, backend: str, n: int) -> int:
    rows = [r for r in apsp_rows(path, backend, n) if r["ok"]]
    return max(rows, key=lambda r: r["rate"])["tile"] if rows else 1024


def pick_n(
    path: Path, backend: str, n: int, tile: int, seconds: float, device_free: int, host_mem: int
) -> str:
    """The largest multiple of the tile whose validated solve should end within `seconds`.

    From the run at (n, tile): the solve grows as n^3, the rest (reading, filling the host
    matrix, copies, the validation's Dijkstra rows) as n^2; 20 % margin on both. Memory: the
    matrix (4 n^2 bytes) plus panels within 85 % of the device's free memory, and within 45 %
    of the host's (apsp-fw holds one host copy; the graph and the page cache need room too).
    """
    rows = [r for r in apsp_rows(path, backend, n) if r["tile"] == tile and r["ok"]]
    if not rows:
        return ""
    r = rows[0]
    solve, rest = r["seconds"], max(0.0, r["total_seconds"] - r["seconds"])
    best = ""
    m = n + tile
    while True:
        scale = m / n
        predicted = 1.2 * (solve * scale**3 + rest * scale**2) + 5
        matrix = 4 * m * m
        panels = 4 * 4 * m * tile  # two panel sets of a row and a column panel
        if predicted > seconds or matrix > 0.45 * host_mem:
            break
        if device_free > 0 and matrix + panels > 0.85 * device_free:
            break
        best = str(m)
        m += tile
    return best


def clock_summary(path: Path) -> dict:
    """nvidia-smi samples (timestamp, SM MHz, memory MHz, W, C, utilisation %): the busy ones' spread."""
    rows = []
    with path.open() as f:
        for rec in csv.reader(f):
            try:
                rows.append([float(x) for x in rec[1:6]])
            except (ValueError, IndexError):
                continue
    busy = [r for r in rows if r[4] >= 50]

    def spread(values: list[float]) -> dict:
        return {"min": min(values), "median": statistics.median(values), "max": max(values)} if values else {}

    return {
        "clock_samples": len(rows),
        "busy_samples": len(busy),
        "sm_mhz_busy": spread([r[0] for r in busy]),
        "mem_mhz_busy": spread([r[1] for r in busy]),
        "power_w_busy": spread([r[2] for r in busy]),
        "temperature_c_max": max((r[3] for r in rows), default=None),
    }


NCU_METRICS = {  # Nsight Compute metric -> the report's column
    "sm__inst_executed.avg.per_cycle_active": "IPC per SM (of 4)",
    "sm__issue_active.avg.pct_of_peak_sustained_active": "issue slots busy %",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active": "FMA pipe %",
    "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active": "ALU pipe %",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "warps active %",
}


def ncu_rows(path: Path) -> list[dict]:
    """Nsight Compute's --csv output (among the program's own lines): one row per profiled launch."""
    lines = path.read_text(errors="replace").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    launches: dict[str, dict] = {}
    table = [line for line in lines[start:] if line.startswith('"')]
    for rec in csv.DictReader(table):
        # "void ns::(anonymous namespace)::minplus_tiled<false>(int, ...)" -> "minplus_tiled<false>"
        name = re.search(r"([A-Za-z_]\w*(?:<[^()]*>)?)\((?!anonymous)", rec.get("Kernel Name", ""))
        row = launches.setdefault(
            rec["ID"], {"ncu": name.group(1) if name else "?", "launch": int(rec["ID"])}
        )
        try:
            row[rec["Metric Name"]] = float(rec["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
    return list(launches.values())


def _fmt_rate(rate: float | None) -> str:
    return f"{rate / 1e12:.2f}" if rate else ""


def report(results: Path) -> str:
    """results.md (for people) and results.json (every row) from the run's .jsonl files."""
    rows = [r for f in sorted(results.glob("*.jsonl")) for r in read_rows(f)]
    (results / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    machine = next((r["machine"] for r in rows if "machine" in r), {})
    states = [r for r in rows if "device_state" in r]
    peak_row = next((r for r in rows if "addmin_peak_rate" in r), None)
    peak = peak_row["addmin_peak_rate"] if peak_row else None
    clocks = next((r for r in rows if "clock_samples" in r), None)
    steps = [r for r in rows if "step" in r]
    build = next((r["build"] for r in rows if "build" in r), "?")
    ctest = next((r["ctest"] for r in rows if "ctest" in r), None)
    kernels = [r for r in rows if "kernel" in r]
    counters = [r for r in rows if "ncu" in r]
    apsp = [r for r in rows if r.get("what") == "apsp-fw"]
    torch_rate = {r["n"]: r["rate"] for r in rows if r.get("peer") == "torch" and "rate" in r}

    def of_peak(rate: float | None) -> str:
        return f"{rate / peak:.0%}" if rate and peak else ""

    name = states[0]["name"] if states else (peak_row or {}).get("device", machine.get("backend", "?"))
    lines = [f"# apsp-fw GPU backend on {name}: device results", ""]
    lines.append(
        f"Run {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC by bench/gpu/run_device.sh; "
        f"backend {machine.get('backend')}, arch {machine.get('arch')}, build: {build}; host CPU "
        f"{machine.get('cpu')} ({machine.get('cores')} cores, "
        f"{(machine.get('host_memory') or 0) / 2**30:.0f} GiB)."
    )
    lines.append("")
    if states:
        s0 = states[0]
        lines += [
            f"Driver {s0.get('driver_version')}, {s0.get('memory.total')} MiB; clocks as read by nvidia-smi "
            "(MHz; the card's settings were left as found):",
            "",
            "| when | SM clock | memory clock | max SM clock | temperature (C) | power (W) | perf state |",
            "|---|---|---|---|---|---|---|",
        ]
        for s in states:
            lines.append(
                f"| {s['device_state']} | {s.get('clocks.sm')} | {s.get('clocks.mem')} | "
                f"{s.get('clocks.max.sm')} | {s.get('temperature.gpu')} | {s.get('power.draw')} | "
                f"{s.get('pstate')} |"
            )
        lines.append("")
    if clocks and clocks.get("sm_mhz_busy"):
        c = clocks["sm_mhz_busy"]
        lines += [
            f"While busy ({clocks['busy_samples']} of {clocks['clock_samples']} samples every 0.5 s with "
            f"utilisation >= 50 %): SM clock {c['min']:.0f} / {c['median']:.0f} / {c['max']:.0f} MHz "
            f"(min / median / max), power up to {clocks['power_w_busy'].get('max', 0):.0f} W, "
            f"temperature up to {clocks['temperature_c_max']:.0f} C.",
            "",
        ]
    if ctest:
        lines += [
            f"**GPU tests** (`ctest -L gpu`: kernels against the reference kernels, the device store against "
            f"the host store, apsp-fw on 1, 4 and 6 ranks with --validate): {ctest}.",
            "",
        ]
    if peak_row:
        lines += [
            f"**add+min peak** (gpu-addmin-peak, {peak_row['threads']} threads x {peak_row['blocks_per_sm']} "
            f"blocks per SM, median of {peak_row['reps']}): **{peak / 1e12:.2f} T semiring ops/s** "
            f"({peak_row['pairs_per_clock_per_sm']:.1f} add+min pairs per clock per SM at the reported "
            f"{peak_row['clock_khz'] / 1e3:.0f} MHz, {peak_row['multiprocessors']} SMs).",
            "",
        ]
    if kernels:
        lines += [
            "## Kernels (test_gpu_kernels --bench; square n x n x n, mean of 5 after a warm-up)",
            "",
            "| kernel | n | seconds | T ops/s | of add+min peak |",
            "|---|---|---|---|---|",
        ]
        for r in kernels:
            lines.append(
                f"| {r['kernel']} | {r['n']} | {r['seconds']:.4g} | {_fmt_rate(r['rate'])} | "
                f"{of_peak(r['rate'])} |"
            )
        lines.append("")
    if counters:
        lines += [
            "## Hardware counters (Nsight Compute, --clock-control none)",
            "",
            "| kernel | launch | " + " | ".join(NCU_METRICS.values()) + " |",
            "|---|---|" + "---|" * len(NCU_METRICS),
        ]
        for r in counters:
            values = " | ".join(f"{r[m]:.3g}" if m in r else "" for m in NCU_METRICS)
            lines.append(f"| {r['ncu']} | {r['launch']} | {values} |")
        lines.append("")
    if apsp:
        cpu_rate = {r["n"]: r["rate"] for r in apsp if r["backend"] == "cpu"}
        cpu_sum = {(r["n"], r["tile"]): r["checksum"] for r in apsp if r["backend"] == "cpu"}
        lines += [
            "## apsp-fw end to end (one rank, random graph of degree 8, --validate 16 Dijkstra rows)",
            "",
            "| backend | n | tile | solve s | total s | T ops/s | of add+min peak | vs CPU backend | "
            "vs PyTorch FW | validated (max rel. error) | checksum (= CPU: bit for bit at this n and tile) |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in apsp:
            vs_cpu = (
                f"{r['rate'] / cpu_rate[r['n']]:.1f}x" if r["backend"] != "cpu" and r["n"] in cpu_rate else ""
            )
            vs_torch = f"{r['rate'] / torch_rate[r['n']]:.1f}x" if r["n"] in torch_rate else ""
            same = ""
            if r["backend"] != "cpu" and (r["n"], r["tile"]) in cpu_sum:  # equal bits need equal tiles
                same = (
                    " (= CPU)" if r["checksum"] == cpu_sum[r["n"], r["tile"]] else " (**differs from CPU**)"
                )
            valid = (
                (f"yes ({r['max_rel_error']:.1e})" if r["ok"] else "**FAILED**")
                if r["max_rel_error"] is not None
                else ("yes" if r["ok"] else "**FAILED**")
            )
            lines.append(
                f"| {r['backend']} | {r['n']} | {r['tile']} | {r['seconds']:.3g} | {r['total_seconds']:.3g} | "
                f"{_fmt_rate(r['rate'])} | {of_peak(r['rate']) if r['backend'] != 'cpu' else ''} | {vs_cpu} | "
                f"{vs_torch} | {valid} | `{r['checksum']}`{same} |"
            )
        lines.append("")
    for n, rate in sorted(torch_rate.items()):
        lines += [
            f"PyTorch Floyd-Warshall peer at n = {n}: {_fmt_rate(rate)} T ops/s ({of_peak(rate)} of peak).",
            "",
        ]
    if steps:
        failed = [s for s in steps if s["rc"] != 0]
        lines += ["## Steps", "", "| step | exit | seconds |", "|---|---|---|"]
        lines += [
            f"| {s['step']} | {s['rc']}{' **failed**' if s['rc'] else ''} | {s['seconds']} |" for s in steps
        ]
        lines += ["", f"{len(steps) - len(failed)} of {len(steps)} steps passed."]
    text = "\n".join(lines) + "\n"
    (results / "results.md").write_text(text)
    return text


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("graph")
    g.add_argument("n", type=int)
    g.add_argument("out", type=Path)
    g.add_argument("--degree", type=int, default=8)
    g.add_argument("--seed", type=int, default=1)
    t = sub.add_parser("torch-fw")
    t.add_argument("n", type=int)
    t.add_argument("--device", default="cuda")
    a = sub.add_parser("apsp-row")
    a.add_argument("summary", type=Path)
    a.add_argument("name")
    pr = sub.add_parser("predict")
    pr.add_argument("rows", type=Path)
    pr.add_argument("backend")
    pr.add_argument("n_from", type=int)
    pr.add_argument("n_to", type=int)
    bt = sub.add_parser("best-tile")
    bt.add_argument("rows", type=Path)
    bt.add_argument("backend")
    bt.add_argument("n", type=int)
    pn = sub.add_parser("pick-n")
    pn.add_argument("rows", type=Path)
    pn.add_argument("backend")
    pn.add_argument("n", type=int)
    pn.add_argument("tile", type=int)
    pn.add_argument("seconds", type=float)
    pn.add_argument("device_free", type=int)
    pn.add_argument("host_mem", type=int)
    c = sub.add_parser("clocks")
    c.add_argument("samples", type=Path)
    nc = sub.add_parser("ncu-rows")
    nc.add_argument("log", type=Path)
    r = sub.add_parser("report")
    r.add_argument("results", type=Path)
    a = p.parse_args(argv)
    if a.cmd == "graph":
        write_graph(a.n, a.out, a.degree, a.seed)
    elif a.cmd == "torch-fw":
        print(json.dumps(torch_fw(a.n, a.device)))
    elif a.cmd == "apsp-row":
        print(json.dumps(apsp_row(a.summary, a.name)))
    elif a.cmd == "predict":
        print(predict(a.rows, a.backend, a.n_from, a.n_to))
    elif a.cmd == "best-tile":
        print(best_tile(a.rows, a.backend, a.n))
    elif a.cmd == "pick-n":
        print(pick_n(a.rows, a.backend, a.n, a.tile, a.seconds, a.device_free, a.host_mem))
    elif a.cmd == "clocks":
        print(json.dumps(clock_summary(a.samples)))
    elif a.cmd == "ncu-rows":
        for row in ncu_rows(a.log):
            print(json.dumps(row))
    else:
        print(report(a.results), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Helpers of bench/gpu/run_device.sh: random graphs, the PyTorch Floyd-Warshall peer, results.

  python bench/gpu/device_bench.py graph N OUT.mtx [--degree D] [--seed S]
  python bench/gpu/device_bench.py torch-fw N [--device cuda]        -> one JSON line
  python bench/gpu/device_bench.py report RESULTS_DIR                -> results.md + results.json

The PyTorch peer is the textbook dense Floyd-Warshall, one broadcasted min per k:
D = torch.minimum(D, D[:, k, None] + D[None, k, :]); its rate is 2n^3 / seconds like apsp-fw's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def write_graph(n: int, out: Path, degree: int, seed: int) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    m = n * degree
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    cost = rng.uniform(0.1, 10.0, m).astype(np.float32)
    with out.open("w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n")
        f.write(f"{n} {n} {m}\n")
        for s, d, c in zip(src + 1, dst + 1, cost, strict=True):
            f.write(f"{s} {d} {c:.6g}\n")


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
    return {"peer": "torch", "torch": torch.__version__, "n": n, "seconds": seconds, "rate": 2.0 * n**3 / seconds,
            "timed_k": steps}


def report(results: Path) -> None:
    rows = [json.loads(line) for f in sorted(results.glob("*.jsonl")) for line in f.read_text().splitlines() if line.strip()]
    (results / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    peak = next((r["addmin_peak_rate"] for r in rows if "addmin_peak_rate" in r), None)
    lines = ["# apsp-fw GPU backend: device results", ""]
    dev = next((r for r in rows if "addmin_peak_rate" in r), {})
    if dev:
        lines += [f"Device: {dev['device']} ({dev['api']}, {dev['arch']}, warp {dev['warp_size']}, "
                  f"{dev['multiprocessors']} multiprocessors); add+min peak {peak / 1e12:.2f} T semiring ops/s.", ""]
    lines += ["| what | n | seconds | rate (T ops/s) | of add+min peak | note |", "|---|---|---|---|---|---|"]
    torch_rate = {r["n"]: r["rate"] for r in rows if r.get("peer") == "torch" and "rate" in r}
    for r in rows:
        if "addmin_peak_rate" in r:
            continue
        what = r.get("kernel") or r.get("peer") or r.get("what", "?")
        if "skipped" in r:
            lines.append(f"| {what} | {r.get('n', '')} | | | | skipped: {r['skipped']} |")
            continue
        rate = r.get("rate")
        frac = f"{rate / peak:.0%}" if rate and peak else ""
        note = ""
        if what == "apsp-fw" and r["n"] in torch_rate:
            note = f"{rate / torch_rate[r['n']]:.1f}x PyTorch FW"
        if "ok" in r:
            note = (note + " " if note else "") + ("validated" if r["ok"] else "VALIDATION FAILED")
        lines.append(f"| {what} | {r.get('n', '')} | {r.get('seconds', 0):.4g} | {rate / 1e12 if rate else 0:.3f} "
                     f"| {frac} | {note} |")
    (results / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


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
    r = sub.add_parser("report")
    r.add_argument("results", type=Path)
    a = p.parse_args(argv)
    if a.cmd == "graph":
        write_graph(a.n, a.out, a.degree, a.seed)
    elif a.cmd == "torch-fw":
        print(json.dumps(torch_fw(a.n, a.device)))
    else:
        report(a.results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

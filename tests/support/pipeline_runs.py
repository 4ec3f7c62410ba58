"""A small synthetic corpus through the real stages (ingest, merge, build-graph), for tests that
need a build's tables and graph rather than hand-made ones."""

from __future__ import annotations

from pathlib import Path

from pipeline.graph.build import build_graph
from pipeline.ingest.run import ingest_file
from pipeline.ingest.synth import generate_corpus
from pipeline.merge import merge_ingested


def ingested(root: Path, scale: int = 3000, seed: int = 7, n_update_files: int = 1, **synth) -> list[Path]:
    """The per-file ingest folders of a synthetic corpus written under ``root``, in input order."""
    manifest = generate_corpus(root / "corpus", scale, seed=seed, n_update_files=n_update_files, **synth)
    folders = []
    for i, entry in enumerate(manifest["files"]):
        folders.append(root / "ingest" / f"{i:03d}")
        ingest_file(entry["kind"], root / "corpus" / entry["path"], folders[-1])
    return folders


def ingested_in_input_order(root: Path, **synth) -> list[tuple[str, str, Path]]:
    """(kind, path in the corpus, ingest folder) of every file of a synthetic corpus written under
    ``root`` (:func:`pipeline.ingest.synth.generate_corpus`'s arguments), ingested, in the order a
    build lists its inputs (the kinds' order, then file names)."""
    from pipeline.builds.identity import INPUT_KINDS

    manifest = generate_corpus(root / "corpus", **synth)
    files = sorted(manifest["files"], key=lambda f: (INPUT_KINDS.index(f["kind"]), Path(f["path"]).name))
    out = []
    for i, entry in enumerate(files):
        ingest_file(entry["kind"], root / "corpus" / entry["path"], root / f"{i:02d}")
        out.append((entry["kind"], entry["path"], root / f"{i:02d}"))
    return out


def merged_and_graphed(root: Path, **corpus) -> tuple[Path, Path]:
    """(tables, graph) folders of a synthetic corpus built under ``root`` (see :func:`ingested`)."""
    merge_ingested(ingested(root, **corpus), root / "tables", {})
    build_graph(root / "tables", root / "graph", {})
    return root / "tables", root / "graph"

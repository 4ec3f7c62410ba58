"""A finished build folder made by the real stages (ingest, merge, build-graph), without the
workflow, the solver or the servers: its graphs answer on demand (no distances.bp), as a build
whose plan stored no distances would. For tests that read a build as a user would
(``pipeline.query.open_paths``, the time-slice validation)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.builds.identity import build_id, resolve_inputs
from pipeline.builds.layout import BuildLayout, ResultsLayout
from pipeline.builds.record import write_build_config
from pipeline.config import load_config, validate_config
from pipeline.graph.build import build_graph
from pipeline.ingest.run import ingest_file
from pipeline.merge import merge_ingested

REPO = Path(__file__).resolve().parents[2]
SAMPLE_CONFIG = REPO / "config" / "config.yaml"


def corpus_build(results_dir: Path, config: dict[str, Any], base: Path = REPO) -> Path:
    """The build folder of ``config``'s inputs (paths relative to ``base``) under ``results_dir``,
    ``results_dir/latest`` pointing at it; ``config`` is validated and completed first."""
    config = validate_config(config)
    inputs = resolve_inputs(_rooted(config, base))
    build = BuildLayout(ResultsLayout(results_dir).build(build_id(inputs, config)).root)
    write_build_config(build.config, config, [[f.kind, str(f.path), f.sha256] for f in inputs])
    ingested = []
    for position, entry in enumerate(inputs):
        folder = Path(results_dir) / "ingest" / f"{position:03d}-{entry.key}"
        ingest_file(entry.kind, entry.path, folder)
        ingested.append(folder)
    merge_ingested(ingested, build.tables.path, config["ingest"])
    build_graph(
        build.tables.path, build.graph("full").graph_dir, config, build.graph("cooccurrence").graph_dir
    )
    build.record.write_text(json.dumps({"build_id": build.build_id}) + "\n")
    latest = ResultsLayout(results_dir).latest
    if latest.is_symlink():
        latest.unlink()
    latest.symlink_to(build.root.relative_to(latest.parent))
    return build.root


def sample_build(results_dir: Path, **sections: dict[str, Any]) -> Path:
    """The bundled sample (config/config.yaml's inputs) as a build; ``sections`` override
    config sections (``ingest={"until_year": 2019}``)."""
    config = load_config(SAMPLE_CONFIG)
    for name, values in sections.items():
        config[name] = {**config.get(name, {}), **values}
    return corpus_build(results_dir, config)


def _rooted(config: dict[str, Any], base: Path) -> dict[str, Any]:
    inputs = {
        kind: [str(base / pattern) for pattern in patterns] for kind, patterns in config["inputs"].items()
    }
    return {**config, "inputs": inputs}

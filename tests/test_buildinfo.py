"""The build record and the `latest` pointer: no credentials, written whole, safe to race."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import yaml

from pipeline.buildinfo import finish_build, write_build_config

CONFIG = {
    "results_dir": "results",
    "mongo": {"enabled": True, "uri": "mongodb://litpath:pa&ss;word@db.example/?authSource=admin&tls=true"},
    "graph": {"min_support": 1},
}


def _build(results: Path, build_id: str) -> Path:
    build_dir = results / "builds" / build_id
    write_build_config(build_dir / "config.yaml", CONFIG, [["pubmed_xml", "a.xml.gz", "0" * 64]])
    return build_dir


def test_build_config_and_record_hold_no_credentials(tmp_path: Path) -> None:
    build_dir = _build(tmp_path, "b1")
    record = finish_build(build_dir)
    stored = yaml.safe_load((build_dir / "config.yaml").read_text())
    assert stored["mongo"]["uri"] == "mongodb://***@db.example/?authSource=admin&tls=true"
    assert record["config"]["mongo"]["uri"] == stored["mongo"]["uri"]
    for path in (build_dir / "config.yaml", build_dir / "build.json"):
        assert "pa&ss;word" not in path.read_text()
    assert json.loads((build_dir / "build.json").read_text())["build_id"] == "b1"
    assert (tmp_path / "latest").resolve() == build_dir.resolve()


def test_two_workflows_finishing_at_once_leave_a_whole_pointer(tmp_path: Path) -> None:
    """Each finish renames its own uniquely named symlink over `latest` (no shared temporary name)."""
    builds = [_build(tmp_path, f"b{i}") for i in range(2)]
    errors: list[BaseException] = []

    def finish_many(build_dir: Path) -> None:
        try:
            for _ in range(50):
                finish_build(build_dir)
        except BaseException as exc:  # noqa: BLE001 -- reported below
            errors.append(exc)

    threads = [threading.Thread(target=finish_many, args=(b,)) for b in builds]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert (tmp_path / "latest").resolve() in {b.resolve() for b in builds}
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".latest")]
    assert not [p.name for b in builds for p in b.iterdir() if p.name.endswith(".tmp")]

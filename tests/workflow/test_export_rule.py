"""``export.enabled`` adds the export stage to a run (workflow/rules/export.smk), and only then."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")

pytestmark = [pytest.mark.workflow]


def _dry_run(tmp_path: Path, export: bool) -> str:
    """The dry run of the sample's config, its files copied as one's own, with export on or off."""
    data = tmp_path / "data"
    if not data.exists():
        shutil.copytree(REPO / "config" / "sample", data)
    text = (REPO / "config" / "config.yaml").read_text().replace("config/sample/", f"{data}/")
    text = text.replace("export:\n  enabled: false\n", f"export:\n  enabled: {str(export).lower()}\n")
    config = tmp_path / f"export-{export}.yaml"
    config.write_text(text)
    command = [str(SNAKEMAKE), "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(tmp_path),
               "--configfile", str(config), "--cores", "1", "--dry-run"]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    return run.stdout


def test_export_stage_runs_only_when_enabled(tmp_path):
    assert "rule export:" in _dry_run(tmp_path, export=True)
    assert "rule export:" not in _dry_run(tmp_path, export=False)

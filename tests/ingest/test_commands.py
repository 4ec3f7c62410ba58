from __future__ import annotations

import json

from click.testing import CliRunner
from support.data import DATA

from pipeline.ingest.base import IngestError
from pipeline.ingest.commands import ingest, synth
from pipeline.merge.commands import merge


def test_synth_ingest_merge_commands(tmp_path):
    runner = CliRunner()
    result = runner.invoke(
        synth, ["--out", str(tmp_path / "corpus"), "--scale", "300", "--seed", "2", "--update-files", "1"]
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "corpus" / "manifest.json").read_text())
    dirs = []
    for i, entry in enumerate(manifest["files"]):
        out = tmp_path / "ingest" / f"{i:02d}"
        result = runner.invoke(
            ingest,
            [
                "--kind",
                entry["kind"],
                "--input",
                str(tmp_path / "corpus" / entry["path"]),
                "--out",
                str(out),
            ],
        )
        assert result.exit_code == 0, result.output
        assert json.loads((out / "counts.json").read_text())["rows_read"] > 0
        dirs.append(str(out))
    config = tmp_path / "config.yaml"
    config.write_text("ingest:\n  mention_source: predications\n")
    result = runner.invoke(merge, ["--out", str(tmp_path / "merged"), "--config", str(config), *dirs])
    assert result.exit_code == 0, result.output
    # One line on the terminal; the record is counts.json.
    assert result.stdout.startswith("litpath merge: ") and result.stdout.count("\n") == 1, result.stdout
    assert json.loads((tmp_path / "merged" / "counts.json").read_text())["tables"]["predications"] > 0


def test_ingest_command_reports_unreadable_file(tmp_path):
    bad = tmp_path / "pubmed25n0009.xml"
    bad.write_text((DATA / "pubmed" / "update_readd.xml").read_text()[:300])
    result = CliRunner().invoke(
        ingest, ["--kind", "pubmed_xml", "--input", str(bad), "--out", str(tmp_path / "out")]
    )
    # A domain error leaves the command as itself; `litpath` prints it as one line (tests/cli/test_cli.py).
    assert isinstance(result.exception, IngestError), result.output
    assert "pubmed25n0009.xml: broken XML at line" in str(result.exception)

"""A stage command given a config file that is not a YAML mapping says so in one line naming the
file, with exit status 2, as `litpath describe` does; `merge --config` and `bucket-records
--build-record` printed a YAML parser's traceback (found in review)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


@pytest.mark.parametrize("text, says", [
    ("ingest: [a\n", "not valid YAML: while parsing a flow sequence"),
    ("- a\n- b\n", "the top level must be a mapping of keys"),
])  # fmt: skip
def test_a_config_that_is_no_mapping_is_one_line(tmp_path, text, says):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    (tmp_path / "tables").mkdir()
    for command in (
        ["merge", "--out", str(tmp_path / "merged"), "--config", str(bad), str(tmp_path)],
        ["bucket-records", "--kind", "documents", "--tables-dir", str(tmp_path / "tables"),
         "--build-record", str(bad), "--out", str(tmp_path / "documents.buckets.arrow")],
    ):  # fmt: skip
        done = subprocess.run([str(BIN / "litpath"), *command], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, (command, done.stderr)
        assert done.stderr.startswith(f"litpath: error: {bad}: {says}"), (command, done.stderr)
        assert "Traceback" not in done.stderr

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


def test_options_are_checked_where_they_are_read(tmp_path):
    """Found in review: synth checked --config-base (for --config-out only) even without
    --config-out, so it failed outside a checkout; serve --port 0 was a pydantic dump not naming
    --port; solve --summary naming a folder failed after the whole solve."""
    done = subprocess.run([str(BIN / "litpath"), "synth", "--out", str(tmp_path / "corpus"), "--scale", "50"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    done = subprocess.run([str(BIN / "litpath"), "synth", "--out", str(tmp_path / "corpus2"), "--scale", "50",
                           "--config-out", str(tmp_path / "c.yaml")], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2 and "--config-base" in done.stderr and "is not a file" in done.stderr, done.stderr
    done = subprocess.run([str(BIN / "litpath"), "serve", "--port", "0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Invalid value for '--port'" in done.stderr, done.stderr
    graph_bp = tmp_path / "graph.bp"
    graph_bp.mkdir()
    done = subprocess.run([str(BIN / "litpath"), "solve", "--input", str(graph_bp), "--distances",
                           str(tmp_path / "d.bp"), "--summary", str(tmp_path)], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 2 and "--summary" in done.stderr and "is a directory" in done.stderr, done.stderr


def test_describe_quotes_the_results_folder_it_tells_to_serve(tmp_path):
    from support.build_fixture import make_build

    from pipeline.query.describe import describe_latest

    results = tmp_path / "my results"
    make_build(results, n_concepts=10, n_abstracts=5)
    text = describe_latest({"results_dir": str(results)})
    assert f"litpath serve --results-dir '{results}'" in text

"""A config of the user's own, as a new user writes one: it replaces the bundled sample's config
(never merged over it), so what it leaves out takes the schema's defaults and no file of the
sample enters the build; a copy of the sample's config that still names its files is refused
before the first job, naming each key.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")
SAMPLE = REPO / "config" / "sample"

pytestmark = [pytest.mark.workflow, pytest.mark.servers, pytest.mark.mpi]


def snakemake(workdir: Path, config: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess:
    command = [str(SNAKEMAKE), "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(workdir),
               "--configfile", str(config), "--cores", "2", *extra]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)


def user_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITPATH_")}
    if "LITPATH_CACHE" in os.environ:
        env["LITPATH_CACHE"] = os.environ["LITPATH_CACHE"]
    # The shipped machine file from the environment, so that the config stays the two keys and no
    # plan calibrates in the middle of a test.
    env["LITPATH_MACHINE"] = str(REPO / "config" / "machines" / "dev-vm-2core.yaml")
    env["PATH"] = f"{SNAKEMAKE.parent}:{env['PATH']}"
    return {**env, **extra}


def test_a_config_of_two_keys_builds_without_a_trace_of_the_sample(tmp_path, mongo_uri):
    dump = tmp_path / "dumps" / "semmedVER43_R_PREDICATION.csv.gz"
    dump.parent.mkdir()
    shutil.copy(SAMPLE / "semmeddb" / dump.name, dump)
    config = tmp_path / "my-config.yaml"
    config.write_text(yaml.safe_dump({"results_dir": str(tmp_path / "results"),
                                      "inputs": {"semmeddb_predication": [str(dump)]}}))  # fmt: skip
    run = snakemake(tmp_path, config, user_env(LITPATH_MONGO_URI=mongo_uri))
    assert run.returncode == 0, (run.stdout + run.stderr)[-5000:]
    assert "is extended by additional config" not in run.stderr  # replaced, not merged

    build = (tmp_path / "results" / "latest").resolve()
    ingested = sorted(p.name for p in (tmp_path / "results" / "ingest").iterdir())
    assert ingested == ["semmeddb_predication"], ingested
    record = yaml.safe_load((build / "config.yaml").read_text())
    assert [i["path"] for i in record["resolved_inputs"]] == [str(dump)]
    assert record["spoke"]["enabled"] is False and record["mapping"]["umls_dir"] == ""
    # Nothing in the build folder names a file of the sample (or the sample's folder at all).
    for path in build.rglob("*"):
        if path.is_file() and path.suffix in {".json", ".yaml", ".md", ".csv", ".txt", ".html"}:
            text = path.read_text(errors="replace")
            assert "config/sample" not in text and str(SAMPLE) not in text, path


def test_a_copy_of_the_sample_config_is_refused_naming_each_sample_file(tmp_path):
    """The README's first step is to copy config/config.yaml; a copy whose SPOKE and mapping lines
    were left as they are would build the user's dumps against the sample's SPOKE."""
    dump = tmp_path / "pred.csv.gz"
    shutil.copy(SAMPLE / "semmeddb" / "semmedVER43_R_PREDICATION.csv.gz", dump)
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["results_dir"] = str(tmp_path / "results")
    config["inputs"] = {"semmeddb_predication": [str(dump)]}
    path = tmp_path / "my-config.yaml"
    path.write_text(yaml.safe_dump(config))
    run = snakemake(REPO, path, user_env(), "--dry-run")
    assert run.returncode != 0
    output = run.stdout + run.stderr
    assert f"{path}: these settings still name files of the bundled sample" in output
    for key in ("spoke.nodes", "spoke.edges", "mapping.umls_dir", "mapping.unichem", "compare.queries"):
        assert f"  {key}: config/sample/" in output, key
    assert "inputs.semmeddb_predication" not in output  # the user's own dump is fine
    assert not (tmp_path / "results").exists()  # stopped before anything ran


def test_the_bundled_config_is_the_sample_and_may_name_its_files(tmp_path):
    run = snakemake(REPO, REPO / "config" / "config.yaml", user_env(), "--dry-run", "--config",
                    f"results_dir={tmp_path / 'results'}")  # fmt: skip
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]

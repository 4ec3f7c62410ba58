"""A MongoDB URI with a password in the config: the workflow runs with it, and the password is
nowhere it writes.

The review's exploit: ``mongo.uri`` was spliced unquoted into a shell command (``&`` sent half
of the command to the background, ``;`` ran the rest as another) and copied, password included,
into the build's config.yaml, build.json, logs, Snakemake's records and the MongoDB ``builds``
collection. Here the password itself holds ``&`` and ``;``, the URI's query an ``&``; the
smallest workflow that loads MongoDB runs (tiny corpus, no SPOKE, one rank), then every file
under the results and Snakemake's folder, Snakemake's output and every MongoDB document are
searched for the password. The run's folders are named with a space, ``;`` and ``$(...)`` as well:
every file name spliced into a shell command is quoted (review finding L7).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, quote_plus

import pymongo
import pytest
import yaml
from bson import encode

from pipeline.ingest.synth import generate_corpus
from pipeline.store.store_format import read_listing
from services.local.servers import MongoServer

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")

pytestmark = [pytest.mark.workflow, pytest.mark.servers, pytest.mark.mpi]


def write_config(workdir: Path, corpus: Path, uri: str, database: str) -> Path:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["results_dir"] = str(workdir / "results")
    config["inputs"] = {
        kind: [str(corpus / Path(p).relative_to("config/sample")) for p in patterns]
        for kind, patterns in config["inputs"].items()
    }
    config["inputs"]["pubmed_xml"] = [str(p) for p in sorted((corpus / "pubmed").rglob("*.xml.gz"))]
    config["spoke"]["enabled"] = False
    config["compare"]["enabled"] = False
    config["mongo"].update(enabled=True, uri=uri, database=database)
    config["solver"].update(ranks=1, tile=32, machine=str(REPO / "config" / "machines" / "dev-vm-2core.yaml"))
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "config.yaml"  # the user's own file: the one place the password may be
    path.write_text(yaml.safe_dump(config))
    return path


def test_config_mongo_uri_with_password_runs_and_leaves_no_trace(tmp_path: Path) -> None:
    password = f"pa&ss;{secrets.token_hex(6)}"
    server = MongoServer(tmp_path / "mongo", password=password)
    server.start(timeout=180)
    try:
        uri = f"mongodb://litpath:{password}@127.0.0.1:{server.port}/?authSource=admin&appname=litpath-secret-test"
        database = "litpath_secret_test"
        corpus = tmp_path / "corpus $(touch injected)"
        generate_corpus(corpus, scale=150, seed=5, n_update_files=0)
        run = tmp_path / "run dir; touch injected"
        config = write_config(run, corpus, uri, database)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LITPATH_MONGO", "LITPATH_NEO4J"))}
        env["PATH"] = f"{SNAKEMAKE.parent}:{env['PATH']}"
        command = [str(SNAKEMAKE), "-s", str(REPO / "workflow" / "Snakefile"), "--directory", str(run),
                   "--configfile", str(config), "--cores", "2", "--printshellcmds"]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        output = done.stdout + done.stderr
        assert done.returncode == 0, output[-5000:]

        # No file name was run as a command (the shells run in the run folder and in the build's).
        assert not [str(path) for path in tmp_path.rglob("injected")]

        # It ran: the load reached the server with those credentials and completed.
        build = (run / "results" / "latest").resolve()
        load = yaml.safe_load((build / "mongo_load.json").read_text())
        assert load["counts"]["documents_written"] > 0 and load["uri"].startswith("mongodb://***@127.0.0.1:")
        with pymongo.MongoClient(server.uri, serverSelectionTimeoutMS=5000) as client:
            assert client[database].builds.find_one({"_id": build.name})["status"] == "complete"
            # store format 2: the build's papers are the rows of the buckets its listing names
            listing = read_listing(client[database], build.name, "documents")
            assert listing.total_rows == load["counts"]["documents_in_build"] == load["counts"]["documents_written"]
            stored = b"".join(
                encode(document)
                for name in client.list_database_names()
                for collection in client[name].list_collection_names()
                for document in client[name][collection].find()
            )

        forms = {password, quote(password, safe=""), quote_plus(password), password.replace("&", "\\u0026")}
        needles = [form.encode() for form in forms]
        leaks = [
            str(path)
            for root in (run / "results", run / ".snakemake")
            for path in root.rglob("*")
            if path.is_file() and any(needle in path.read_bytes() for needle in needles)
        ]
        assert not leaks, f"the password is in {leaks}"
        assert not any(needle in output.encode() for needle in needles), (
            "the password is in Snakemake's output"
        )
        assert not any(needle in stored for needle in needles), "the password is in MongoDB"
        recorded = yaml.safe_load((build / "config.yaml").read_text())["mongo"]["uri"]
        assert (
            recorded == f"mongodb://***@127.0.0.1:{server.port}/?authSource=admin&appname=litpath-secret-test"
        )
    finally:
        server.stop()

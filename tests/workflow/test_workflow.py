"""The workflow end to end on a tiny synthetic corpus, through Snakemake itself.

A rerun after adding one PubMed update file must ingest only that file (the ingest folder
of every earlier file is keyed by its content hash) and rebuild what depends on it, in a
new build folder; the earlier build is left as it was. A rerun after changing only how the
solve runs (ranks, threads, tiles, the memory budget) rebuilds nothing. One finished build
(``finished_build``, made once for this module) also serves the distances check, the compare
rule without MongoDB and ``snakemake --report``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from pipeline.ingest.synth import generate_corpus

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).with_name("snakemake")

pytestmark = [pytest.mark.workflow, pytest.mark.servers, pytest.mark.mpi]


def job_stats(output: str) -> dict[str, int]:
    """Parse Snakemake's own 'Job stats' table: rule name -> number of jobs run."""
    match = re.search(r"Job stats:\njob\s+count\n[-\s]+\n(.*?)\n\s*total\s+(\d+)", output, re.S)
    assert match, f"no Job stats table in Snakemake's output:\n{output[-3000:]}"
    stats = {}
    for line in match.group(1).splitlines():
        name, count = line.split()
        stats[name] = int(count)
    return stats


def run_snakemake(workdir: Path, env: dict[str, str], *extra: str, config: str = "config.yaml") -> str:
    command = [
        str(SNAKEMAKE),
        "-s",
        str(REPO / "workflow" / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(workdir / config),
        "--cores",
        "2",
        "--printshellcmds",
        *extra,
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-5000:]
    return output


def write_config(workdir: Path, corpus: Path, pubmed_files: list[Path], name: str = "config.yaml", **changes) -> None:
    """The bundled sample's config on ``corpus``; ``changes`` ({section: {key: value}}) on top."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["results_dir"] = str(workdir / "results")
    inputs = config["inputs"]
    for kind, patterns in inputs.items():
        inputs[kind] = [str(corpus / Path(p).relative_to("config/sample")) for p in patterns]
    inputs["pubmed_xml"] = [str(p) for p in pubmed_files]
    # SPOKE, the mapping sources and the query set: copies of the bundled sample's, as a user's
    # own files (a config of one's own may not name the sample's: pipeline.config.refuse_sample_files).
    reference = workdir / "reference"
    if not reference.exists():
        for part in ("spoke", "umls", "xrefs"):
            shutil.copytree(REPO / "config" / "sample" / part, reference / part)
    for section, keys in (
        ("spoke", ("nodes", "edges")),
        ("mapping", ("umls_dir", "do_xrefs", "gene_info", "ncit_swissprot", "uberon_obo", "cl_obo")),
        ("compare", ("queries",)),
    ):
        for key in keys:
            config[section][key] = str(reference / Path(config[section][key]).relative_to("config/sample"))
    config["mapping"]["unichem"] = [str(reference / Path(p).relative_to("config/sample")) for p in config["mapping"]["unichem"]]
    # The shipped machine file, named explicitly: a plan never calibrates in the middle of a test.
    config["solver"].update(ranks=2, tile=32, machine=str(REPO / "config" / "machines" / "dev-vm-2core.yaml"))
    for section, values in changes.items():
        config[section].update(values)
    (workdir / name).write_text(yaml.safe_dump(config))


def test_rerun_with_new_update_file_runs_only_its_jobs(
    tmp_path: Path, mongo_uri: str, neo4j_env: dict[str, str]
) -> None:
    corpus = tmp_path / "corpus"
    generate_corpus(corpus, scale=400, seed=7, n_update_files=3)
    pubmed = sorted((corpus / "pubmed").rglob("*.xml.gz"), key=lambda p: p.name)
    assert len(pubmed) >= 3, pubmed
    env = dict(
        os.environ,
        LITPATH_MONGO_URI=mongo_uri,
        **neo4j_env,
        PATH=f"{SNAKEMAKE.parent}:{os.environ['PATH']}",
    )

    # Two files to an ingest job, so that PubMed's files take several jobs and the added one
    # joins the last job, which already holds a file.
    per_job = {"resources": {"ingest_files_per_job": 2}}
    write_config(tmp_path, corpus, pubmed[:-1], **per_job)
    said = run_snakemake(tmp_path, env)
    first = job_stats(said)
    assert "litpath: this run makes a first build from" in said  # its forecast (pipeline.builds.forecast)
    inputs = yaml.safe_load((tmp_path / "config.yaml").read_text())["inputs"]
    # every input is ingested but the ENTITY files, which the default mention source does not read
    assert inputs.get("semmeddb_entity")
    assert len(inputs["pubmed_xml"]) % 2 == 1, "the added file must join a job that holds one"
    assert first["ingest_batch"] == sum(-(-len(v) // 2) for kind, v in inputs.items() if kind != "semmeddb_entity")
    first_build = (tmp_path / "results" / "latest").resolve()
    first_record = (first_build / "build.json").read_text()

    write_config(tmp_path, corpus, pubmed, **per_job)
    said = run_snakemake(tmp_path, env)
    second = job_stats(said)
    assert f"this run makes a rerun on top of build {first_build.name} (the merge on the delta)" in said
    assert f"(forecast from this folder's first build {first_build.name}:" in said
    # Only the added update file is ingested: its job reads it and keeps the folder of the file
    # it shares the job with; everything downstream of it reruns.
    assert second["ingest_batch"] == 1
    reports = sorted((tmp_path / "results" / "ingest" / "pubmed_xml" / "jobs").glob("*.json"), key=os.path.getmtime)
    last_job = json.loads(reports[-1].read_text())["files"]
    assert [(f["source_file"], f["reused"]) for f in last_job] == [(pubmed[-2].name, True), (pubmed[-1].name, False)]
    for rule in (
        "merge_tables",
        "build_graph",
        "solve",
        "load_mongo",
        "build_mapping",
        "compare",
        "build_record",
    ):
        assert second[rule] == 1, second
    second_build = (tmp_path / "results" / "latest").resolve()
    assert second_build != first_build
    assert (first_build / "build.json").read_text() == first_record  # never overwritten
    _assert_as_from_scratch(tmp_path, first_build, second_build, env)

    # Nothing left to do: a third run is a no-op.
    third = subprocess.run(
        [
            str(SNAKEMAKE),
            "-s",
            str(REPO / "workflow" / "Snakefile"),
            "--directory",
            str(tmp_path),
            "--configfile",
            str(tmp_path / "config.yaml"),
            "--cores",
            "1",
            "--dry-run",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert third.returncode == 0 and "Nothing to be done" in third.stdout + third.stderr


def _assert_as_from_scratch(workdir: Path, first_build: Path, second_build: Path, env: dict[str, str]) -> None:
    """The rerun merged on top of the first build (pipeline.merge.delta), and its tables, graph
    digest and MongoDB contents are those of a merge, graph and load of every file from scratch
    (the store's buckets are named by their content: loading the scratch build writes none)."""
    import pyarrow.parquet as pq

    from pipeline.graph.build import build_graph
    from pipeline.merge import merge_ingested

    counts = json.loads((second_build / "tables" / "counts.json").read_text())
    assert counts["incremental"]["previous_tables"] == str(first_build / "tables"), counts["incremental"]
    # the corpus's second update file re-adds a paper and deletes others, none matched by DOI
    assert counts["incremental"]["used"], counts["incremental"]
    recorded = yaml.safe_load((second_build / "config.yaml").read_text())
    from pipeline.builds.identity import InputFile, unread_kinds

    ingested = [  # every input the build reads (not the ENTITY files, under the default mention source)
        workdir / "results" / "ingest" / f["kind"] / InputFile(f["kind"], Path(f["path"]), f["sha256"], 0).key
        for f in recorded["resolved_inputs"]
        if f["kind"] not in unread_kinds(recorded)
    ]
    assert all(folder.is_dir() for folder in ingested), ingested
    scratch = workdir / "scratch"
    merge_ingested(ingested, scratch / "tables", {})
    for table in sorted((scratch / "tables").glob("*.parquet")):
        assert pq.read_table(second_build / "tables" / table.name).equals(pq.read_table(table)), table.name
    build_graph(scratch / "tables", scratch / "graph", {})
    digest = json.loads((scratch / "graph" / "graph_counts.json").read_text())["graph_digest"]
    assert json.loads((second_build / "graph" / "graph_counts.json").read_text())["graph_digest"] == digest
    from pipeline.builds.layout import ResultsLayout
    from pipeline.store.mongo import connect
    from pipeline.store.retention import remove_builds

    database = yaml.safe_load((second_build / "config.yaml").read_text())["mongo"]["database"]
    scratch_id = f"{second_build.name}-scratch"
    loaded = subprocess.run(
        [str(SNAKEMAKE.parent / "litpath"), "load-mongo", "--mongo-database", database, "--build-id", scratch_id,
         "--tables-dir", str(scratch / "tables"), "--graph-dir", str(scratch / "graph"),
         "--build-record", str(second_build / "config.yaml"), "--report", str(scratch / "mongo_load.json")],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    counts = json.loads((scratch / "mongo_load.json").read_text())["counts"]
    # the rerun's evidence and papers buckets were mostly the first build's, reused
    # (pipeline.store.bucket_reuse): grouped from scratch they are the same buckets
    for kind in ("documents", "concepts", "evidence", "papers"):
        assert counts[f"{kind}_buckets"] > 0 and counts[f"{kind}_buckets_written"] == 0, counts
    with connect(env["LITPATH_MONGO_URI"]) as client:
        (scratch / "results" / "builds").mkdir(parents=True)
        remove_builds(ResultsLayout(scratch / "results"), client[database], [scratch_id], compact=False)


@pytest.fixture(scope="module")
def finished_build(tmp_path_factory: pytest.TempPathFactory, mongo_uri: str, neo4j_env: dict[str, str]):
    """A workflow run to the end on a small synthetic corpus: (workdir, environment, pubmed files)."""
    workdir = tmp_path_factory.mktemp("finished-build")
    corpus = workdir / "corpus"
    generate_corpus(corpus, scale=300, seed=3, n_update_files=1)
    pubmed = sorted((corpus / "pubmed").rglob("*.xml.gz"), key=lambda p: p.name)
    write_config(workdir, corpus, pubmed)
    env = dict(
        os.environ,
        LITPATH_MONGO_URI=mongo_uri,
        **neo4j_env,
        PATH=f"{SNAKEMAKE.parent}:{os.environ['PATH']}",
    )
    run_snakemake(workdir, env)
    return workdir, env, pubmed


def test_workflow_distances_match_scipy(finished_build) -> None:
    """The solver's distances.bp for a real pipeline build equals scipy's Dijkstra."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    from pipeline.store.adios import DistanceMatrix, read_graph_bp

    workdir = finished_build[0]
    build = (workdir / "results" / "latest").resolve()
    (n, row_ptr, col_idx, cost), attrs = read_graph_bp(build / "graph" / "graph.bp")
    graph = csr_matrix((cost.astype(np.float64), col_idx, row_ptr), shape=(n, n))
    expected = dijkstra(graph, directed=True)
    matrix = DistanceMatrix(build / "distances.bp")
    assert matrix.attributes["graph_digest"] == attrs["graph_digest"]
    for row in range(n):
        got = matrix.row(row)
        np.testing.assert_array_equal(np.isinf(got), np.isinf(expected[row]))
        finite = ~np.isinf(got)
        np.testing.assert_allclose(got[finite], expected[row][finite], rtol=1e-5, atol=1e-5)


def test_report_gathers_the_marked_outputs(finished_build, tmp_path: Path) -> None:
    """`snakemake --report` (README, "Where outputs land") on a finished build: one HTML file with
    the workflow's description and the outputs marked report(): the comparison report, its scenario
    figure and the mapping coverage."""
    workdir, env, _ = finished_build
    report = tmp_path / "report.html"
    output = run_snakemake(workdir, env, "--report", str(report))
    assert "Report created" in output, output[-3000:]
    html = report.read_text()
    assert "exact all-pairs shortest paths" in html  # workflow/report/workflow.rst
    for name in ("report.html", "scenarios.png", "coverage.md"):
        assert f"Adding {name}" in output and name in html, name
    assert html.count("SPOKE comparison") >= 1 and "SPOKE mapping" in html


def test_the_comparison_counts_both_readings_each_cause_and_the_releases(finished_build) -> None:
    """What `make run` reports of the comparison (issue 26): Fig. 10's counts under both readings of
    "found in the SPOKE shortest paths", scenario 4 and none split by cause under the paper's numbers,
    the totals of 2 and 3, and the releases of SPOKE, UMLS and SemMedDB."""
    workdir = finished_build[0]
    compare = (workdir / "results" / "latest").resolve() / "compare"
    record = json.loads((compare / "run.json").read_text())
    per_hop, strict, causes = record["counts"], record["counts_shortest_reading"], record["causes"]
    assert sum(per_hop.values()) == sum(strict.values()) > 0
    # The shortest-path reading only demotes: 1 -> 2a and 3a -> 3b; the other scenarios stay.
    assert strict["1"] <= per_hop["1"] and strict["3a"] <= per_hop["3a"]
    assert strict["1"] + strict["2a"] == per_hop["1"] + per_hop["2a"]
    assert strict["3a"] + strict["3b"] == per_hop["3a"] + per_hop["3b"]
    assert set(causes["4"]) == {"literature-disconnected", "literature-absent"}
    assert set(causes["none"]) == {"unmapped", "spoke-disconnected"}
    assert sum(causes["4"].values()) == per_hop["4"] and sum(causes["none"].values()) == per_hop["none"]
    totals = record["totals"]
    assert totals["2 (2a + 2b)"]["adjacency"] == per_hop["2a"] + per_hop["2b"]
    assert totals["3 (3a + 3b + 3c)"]["shortest"] == strict["3a"] + strict["3b"] + strict["3c"]
    releases = record["provenance"]["releases"]
    sample = yaml.safe_load((workdir / "config.yaml").read_text())["compare"]["releases"]
    assert releases["spoke"] == sample["spoke"] and releases["umls"] == sample["umls"]
    assert releases["semmeddb"].startswith("VER43_R (file semmedVER43_R_PREDICATION.csv.gz, sha256 ")
    report = (compare / "report.md").read_text()
    assert '"found in the SPOKE shortest paths"' in report
    assert "| pairs (per-hop reading) | pairs (shortest-path reading) |" in report
    total_2 = totals["2 (2a + 2b)"]["adjacency"]
    expected_lines = [
        "| ↳ 4: both ends in the literature graph | ", "| ↳ 4: an end not in the literature graph | ",
        "| ↳ none: an end unmapped | ", "| ↳ none: not connected in SPOKE | ",
        f"| **2 (2a + 2b)** | scenario 2 of the paper, all its cases | **{total_2}** |",
    ]  # fmt: skip
    for line in expected_lines:
        assert line in report, line
    assert f"Releases: SPOKE {sample['spoke']}; UMLS {sample['umls']}; SemMedDB VER43_R " in report
    # The compared graph beside the paper's counts (issue 27, item 2): the co-occurrence graph's, an
    # input of the comparison (the workflow builds the full graph beside it), whose counts saturate
    # at the paper's whole release; the full graph's are in its graph_counts.json and `describe`.
    build = (workdir / "results" / "latest").resolve()
    cooccurrence = json.loads((build / "cooccurrence" / "graph_counts.json").read_text())["counts"]
    full = json.loads((build / "graph" / "graph_counts.json").read_text())["paper_scaled"]
    scaled = record["provenance"]["paper_scaled"]
    assert record["provenance"]["paper_scaled_graph"] == "cooccurrence"
    assert scaled["predication_rows"] == full["predication_rows"] and "abstract_vertices" not in scaled
    assert scaled["edges_concept_concept"] == {"build": cooccurrence["edges_concept_concept"],
                                               "paper_full_release": 14_000_000}  # fmt: skip
    assert f"concept–concept relations {cooccurrence['edges_concept_concept']:,} (paper, whole release" in report
    from pipeline.query.describe import describe_latest

    row = full["edges_concept_abstract"]
    described = describe_latest({"results_dir": str(workdir / "results")})
    assert f"paper–concept relations {row['build']:,} (paper, scaled: {row['paper_scaled']:,}" in described


def test_how_the_solve_runs_rebuilds_nothing(finished_build) -> None:
    """Other solver ranks, threads, tiles and memory budget keep the build id and rerun nothing; a
    solve run again on purpose gets the new settings (run_config.yaml) and reruns only itself and
    the record. The build's config.yaml keeps the settings the build was made with."""
    workdir, env, pubmed = finished_build
    build = (workdir / "results" / "latest").resolve()
    stages = [
        build / "config.yaml", build / "tables" / "counts.json", build / "graph" / "graph_counts.json",
        build / "mongo_load.json", build / "cooccurrence" / "solve_summary.json", build / "mapping" / "coverage.md",
        build / "compare" / "report.html",
    ]  # fmt: skip
    before = {path: path.stat().st_mtime_ns for path in stages}
    corpus = workdir / "corpus"
    write_config(
        workdir, corpus, pubmed, "config-faster.yaml",
        solver={"ranks": 1, "threads": 2, "tile": 64, "broadcast": "ring"}, resources={"memory_gib": 1},
    )  # fmt: skip
    output = run_snakemake(workdir, env, config="config-faster.yaml")
    assert "Nothing to be done" in output, output[-3000:]

    # Forced to run again, the solve keeps the distances it stored for this graph (the reuse rule).
    stats = job_stats(run_snakemake(workdir, env, "--forcerun", "solve", config="config-faster.yaml"))
    assert stats == {"solve": 1, "build_record": 1, "all": 1}, stats
    kept = json.loads((build / "solve_summary.json").read_text())
    assert kept["reused"] is True and kept["solver"] is None
    assert kept["graph_digest"] == json.loads((build / "graph" / "graph_counts.json").read_text())["graph_digest"]
    assert json.loads((build / "build.json").read_text())["solve"]["graph_digest"] == kept["graph_digest"]
    # solver.reuse: false solves from the start, with the new settings.
    write_config(
        workdir, corpus, pubmed, "config-faster.yaml",
        solver={"ranks": 1, "threads": 2, "tile": 64, "broadcast": "ring", "reuse": False}, resources={"memory_gib": 1},
    )  # fmt: skip
    stats = job_stats(run_snakemake(workdir, env, "--forcerun", "solve", config="config-faster.yaml"))
    assert stats == {"solve": 1, "build_record": 1, "all": 1}, stats
    assert (workdir / "results" / "latest").resolve() == build
    assert {path: path.stat().st_mtime_ns for path in stages} == before
    solver = json.loads((build / "solve_summary.json").read_text())["solver"]
    assert (solver["ranks"], solver["threads"], solver["tile"], solver["broadcast"]) == (1, 2, 64, "ring")
    assert yaml.safe_load((build / "config.yaml").read_text())["solver"]["ranks"] == 2
    assert json.loads((build / "build.json").read_text())["config"]["solver"]["ranks"] == 1

    # What the graph holds is another build: every stage runs for it (planned only).
    write_config(workdir, corpus, pubmed, "config-other.yaml", graph={"edge_kinds": ["concept_concept"]})
    planned = job_stats(run_snakemake(workdir, env, "--dry-run", config="config-other.yaml"))
    for rule in ("build_config", "merge_tables", "build_graph", "solve", "load_mongo", "build_mapping", "compare"):
        assert planned[rule] == 1, planned


def test_compare_without_mongo_uses_no_evidence_store(finished_build) -> None:
    """mongo.enabled: false gives the compare rule --no-mongo, which wins over $LITPATH_MONGO_URI
    (set here, as `make run` sets it); no MongoDB load is planned."""
    workdir, env, pubmed = finished_build
    write_config(workdir, workdir / "corpus", pubmed, "config-no-mongo.yaml", mongo={"enabled": False})
    output = run_snakemake(workdir, env, "--dry-run", "--forcerun", "compare", config="config-no-mongo.yaml")
    (command,) = [line for line in output.splitlines() if line.startswith("Shell command: litpath compare ")]
    assert " --no-mongo " in command and "--mongo-database" not in command
    assert "load_mongo" not in job_stats(output)


def test_entity_files_are_ingested_only_for_a_mention_source_that_reads_them(finished_build) -> None:
    """The default mention source (predications) reads no ENTITY row: the finished build ingested
    none (its merge names none), and a config counting mentions by entities plans their ingest."""
    workdir, env, pubmed = finished_build
    build = (workdir / "results" / "latest").resolve()
    merged = json.loads((build / "tables" / "counts.json").read_text())
    assert {f["kind"] for f in merged["files"]} >= {"semmeddb_predication", "semmeddb_sentence"}
    assert "semmeddb_entity" not in {f["kind"] for f in merged["files"]}
    assert "ENTITY files are neither ingested nor read" in merged["mention_source_reason"]
    record = yaml.safe_load((build / "config.yaml").read_text())
    entity = [f for f in record["resolved_inputs"] if f["kind"] == "semmeddb_entity"]
    assert entity and all(len(f["sha256"]) == 64 for f in entity)  # still the build's inputs, checksummed
    write_config(workdir, workdir / "corpus", pubmed, "config-entities.yaml", ingest={"mention_source": "entities"})
    planned = job_stats(run_snakemake(workdir, env, "--dry-run", config="config-entities.yaml"))
    n_entity = len(yaml.safe_load((workdir / "config-entities.yaml").read_text())["inputs"]["semmeddb_entity"])
    per_job = yaml.safe_load((workdir / "config-entities.yaml").read_text())["resources"]["ingest_files_per_job"]
    # only the ENTITY files' jobs: the other files' ingest jobs are done
    assert planned["ingest_batch"] == -(-n_entity // per_job), planned


def test_a_store_that_lost_the_build_gets_it_loaded_again(finished_build) -> None:
    """The load reports are files, the store a server: when the store no longer holds the build
    (a new, dropped or restored server), the next run loads it again and writes the build record
    after it, instead of "Nothing to be done" over an empty store. The comparison reads the build's
    own evidence bucket file, not the store: it does not run again."""
    from pipeline.store.evidence import build_status
    from pipeline.store.mongo import connect

    workdir, env, _ = finished_build
    build = (workdir / "results" / "latest").resolve()
    database = yaml.safe_load((build / "config.yaml").read_text())["mongo"]["database"]
    client = connect(env["LITPATH_MONGO_URI"])
    try:
        client[database]["builds"].delete_one({"_id": build.name})
        output = run_snakemake(workdir, env)
        assert f"has no record of build {build.name}" in output, output[-3000:]
        stats = job_stats(output)
        # every kind but the concepts, which load_mongo sends itself (grouped last, after the graph)
        assert stats == {"load_mongo_kind": 3, "load_mongo": 1, "build_record": 1, "all": 1}, stats
        assert build_status(client[database], build.name) == "complete"
        assert (workdir / "results" / "latest").resolve() == build
        assert "Nothing to be done" in run_snakemake(workdir, env)  # held again: nothing is redone
    finally:
        client.close()


def test_an_emptied_neo4j_gets_spoke_loaded_again(finished_build, neo4j_env: dict[str, str]) -> None:
    """The same for SPOKE: a Neo4j that lost what results/spoke/load.json says was loaded gets it
    loaded again, and the comparison runs on it, instead of finding no mapped node in SPOKE."""
    import neo4j

    workdir, env, _ = finished_build
    driver = neo4j.GraphDatabase.driver(neo4j_env["LITPATH_NEO4J_URI"],
                                        auth=(neo4j_env["LITPATH_NEO4J_USER"], neo4j_env["LITPATH_NEO4J_PASSWORD"]))  # fmt: skip

    def nodes() -> int:
        with driver.session() as session:
            return session.run("MATCH (n) RETURN count(n) AS n").single()["n"]

    try:
        loaded = nodes()
        assert loaded > 0
        with driver.session() as session:
            session.run("MATCH (n) DETACH DELETE n").consume()
        output = run_snakemake(workdir, env)
        assert "holds fewer SPOKE nodes than" in output, output[-3000:]
        stats = job_stats(output)
        assert stats["load_spoke"] == 1 and stats["compare"] == 1, stats
        assert nodes() == loaded
        assert "Nothing to be done" in run_snakemake(workdir, env)
    finally:
        driver.close()


def test_a_lost_ingest_folder_is_ingested_again(finished_build) -> None:
    """An ingest job declares its report, not its files' folders: with a folder removed after the
    run (disk space made, a file's folder deleted by hand), the next build that reads the file
    ingests it again (rules/common.smk) instead of a merge that stops on the missing folder. Here
    a build of all but the last PubMed file, to its merge, after the CORD-19 file's folder went."""
    workdir, env, pubmed = finished_build
    build = (workdir / "results" / "latest").resolve()
    write_config(workdir, workdir / "corpus", pubmed[:-1], "config-fewer.yaml")
    # a file in the same ingest job in both builds (one that changed its files runs anyway)
    lost = next(p for p in (workdir / "results" / "ingest" / "cord19_metadata").iterdir() if p.name != "jobs")
    shutil.rmtree(lost)
    output = run_snakemake(workdir, env, "--until", "merge_tables", config="config-fewer.yaml")
    assert "no longer hold a whole ingest of their file" in output and str(lost) in output, output[-3000:]
    stats = job_stats(output)
    # the lost folder's job, and PubMed's, which with a file fewer is another job (its folder kept)
    assert stats["ingest_batch"] == 2 and stats["merge_tables"] == 1, stats
    assert (lost / "counts.json").exists()
    assert (workdir / "results" / "latest").resolve() == build  # the finished build is left as it was
    # (its merge is now older than the job report it read, so Snakemake would make it again, the
    # same build: the last test of this module, the others' plans stay as they were)

"""`litpath compare` end to end on the hand-built build, SPOKE and mapping; the report; the HTTP API."""

from __future__ import annotations

import html
import json
from html.parser import HTMLParser
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from support.comparison_world import C1, C2, C4, C5, C6, C7, C10, C14, mapping_folder

from pipeline.compare.commands import compare, query_set_command

pytestmark = pytest.mark.servers

EXPECTED_H1 = {  # every unordered pair of QUERY, classified by hand from the pictures in conftest
    (C1, C4): "1", (C1, C10): "2a", (C1, C2): "3c", (C1, C7): "3b", (C1, C5): "4",
    (C4, C10): "2b", (C4, C2): "3b", (C4, C7): "3b", (C4, C5): "4",
    (C10, C2): "3b", (C10, C7): "3b", (C10, C5): "4",
    (C2, C7): "3a", (C2, C5): "4", (C7, C5): "4",
}  # fmt: skip
# C5 is in no literature path of the co-occurrence graph; SPOKE joins it to C1 in 3 relationships,
# to C10 in 3, C2 in 4 and C7 in 5: scenario 4 under the default cap, "none" past a cap of 2.
EXPECTED_CAP2 = {**EXPECTED_H1, (C1, C5): "none", (C10, C5): "none", (C2, C5): "none", (C7, C5): "none"}
EXPECTED_H2 = {**EXPECTED_H1, (C1, C10): "1", (C4, C10): "1"}


def run_compare(results_dir, neo4j_env, out, *extra, queries=None):
    """`litpath compare` with the session's Neo4j: its URI as --neo4j-uri, its credentials (as ever)
    from the environment."""
    args = [
        "--build-dir", str(results_dir / "latest"), "--mapping", str(mapping_folder(results_dir).table),
        "--queries", str(queries or results_dir / "queries.txt"), "--out", str(out),
        "--neo4j-uri", neo4j_env["LITPATH_NEO4J_URI"], *extra,
    ]  # fmt: skip
    env = {**neo4j_env, "LITPATH_MONGO_URI": ""}
    return CliRunner().invoke(compare, args, catch_exceptions=False, env=env)


@pytest.fixture(scope="module")
def h1_run(spoke_driver, results_dir, neo4j_env):
    out = results_dir / "latest" / "compare"  # the served build's report: /v1/reports/latest
    result = run_compare(results_dir, neo4j_env, out)
    assert result.exit_code == 0, result.output
    # One line on the terminal; the summary is run.json.
    assert result.stdout.startswith("litpath compare: ") and result.stdout.count("\n") == 1, result.stdout
    run = json.loads((out / "run.json").read_text())
    return out, {"graph": run["provenance"]["graph"], "counts": run["counts"]}


@pytest.mark.parametrize("hops,expected", [(1, EXPECTED_H1), (2, EXPECTED_H2)], ids=["h1", "h2"])
def test_compare_all_pairs_scenarios(spoke_driver, results_dir, neo4j_env, tmp_path, h1_run, hops, expected):
    out = h1_run[0] if hops == 1 else tmp_path / "h2"
    if hops != 1:
        assert run_compare(results_dir, neo4j_env, out, "--hops", str(hops)).exit_code == 0
    table = pq.read_table(out / "paths.parquet").to_pylist()
    assert {(r["source"], r["target"]): r["scenario"] for r in table} == expected
    run = json.loads((out / "run.json").read_text())
    # all 15 pairs: one node lookup, one batched path query for the hops, one for scenario 4's pairs
    assert run["neo4j_round_trips"] == 3
    by_pair = {(r["source"], r["target"]): r for r in table}
    row = by_pair[(C1, C2)]
    assert row["literature_path"] == f"{C1} > C0000008 > {C2}" and row["unmapped"] == "C0000008"
    assert row["evidence_status"] == "no evidence store configured"
    assert by_pair[(C4, C5)]["literature_reachable"] is False
    assert (
        by_pair[(C4, C5)]["spoke_paths"]
        == "P00002 P2_HUMAN (Protein) <-[INTERACTS_PiP]- P00033 P3B_HUMAN (Protein)"
    )


def test_compare_ordered_pairs_doubles_each_scenario(spoke_driver, results_dir, neo4j_env, tmp_path):
    assert run_compare(results_dir, neo4j_env, tmp_path, "--pairs", "ordered").exit_code == 0
    table = pq.read_table(tmp_path / "paths.parquet").to_pylist()
    assert len(table) == 30
    for r in table:
        key = (
            (r["source"], r["target"])
            if (r["source"], r["target"]) in EXPECTED_H1
            else (r["target"], r["source"])
        )
        assert r["scenario"] == EXPECTED_H1[key]


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.images, self.counts, self._scenario, self.ids = [], {}, None, set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        self._scenario = attrs.get("data-scenario") if tag == "td" else None

    def handle_data(self, data):
        if self._scenario is not None and data.strip():
            self.counts[self._scenario] = int(data)
            self._scenario = None


def test_report_renders_with_counts_equal_to_the_table(h1_run):
    out, summary = h1_run
    parser = _Collect()
    parser.feed((out / "report.html").read_text())
    assert parser.images and parser.images[0].startswith("data:image/png;base64,iVBOR")
    table = pq.read_table(out / "paths.parquet").to_pylist()
    from collections import Counter

    found = Counter(r["scenario"] for r in table)
    assert parser.counts == {s: found.get(s, 0) for s in parser.counts} and sum(parser.counts.values()) == 15
    assert parser.counts == summary["counts"]
    assert {"provenance", "coverage", "scenario-counts"} <= parser.ids and "no-mapped" not in parser.ids
    assert (out / "scenarios.png").read_bytes()[:4] == b"\x89PNG"
    html = (out / "report.html").read_text()
    assert "cmp0001" in html and "http://" not in html and "https://" not in html  # offline
    md = (out / "report.md").read_text()
    assert "| 3b |" in md and "![scenario counts](scenarios.png)" in md
    hops = pq.read_table(out / "hops.parquet").to_pylist()
    assert sum(r["connected"] for r in hops) == sum(r["n_connected"] for r in table)
    cov = json.loads((out / "run.json").read_text())["coverage"]
    assert cov["query"]["concepts"] == 6 and cov["query"]["mapped"] == 6
    assert cov["paths"]["unmapped"] == 2  # C8 and C9


def test_served_report_names_files_relative_to_the_results_folder(h1_run, results_dir):
    """The report is served to API clients (/v1/reports/latest): its provenance names the build,
    the query file and the mapping relative to the results folder, never by absolute path."""
    out, _ = h1_run
    provenance = json.loads((out / "run.json").read_text())["provenance"]
    assert provenance["build_dir"] == "builds/cmp0001"
    assert provenance["query_file"] == "queries.txt"
    assert provenance["mapping_file"] == "builds/cmp0001/mapping/cui_spoke_mapping.parquet"
    for name in ("report.html", "report.md", "run.json"):
        text = (out / name).read_text()
        assert str(results_dir) not in text and str(results_dir.resolve()) not in text, name


def test_scenario4_cap_turns_long_spoke_paths_into_none(spoke_driver, results_dir, neo4j_env, tmp_path):
    assert run_compare(results_dir, neo4j_env, tmp_path, "--scenario4-max-hops", "2").exit_code == 0
    table = pq.read_table(tmp_path / "paths.parquet").to_pylist()
    assert {(r["source"], r["target"]): r["scenario"] for r in table} == EXPECTED_CAP2
    md = (tmp_path / "report.md").read_text()
    assert "scenario 4 searches SPOKE up to 2 relationships" in md and "not a scenario of the paper" in md


@pytest.mark.parametrize("cap,expected,length", [(None, "4", 3), ("3", "4", 3), ("2", "none", None)])
def test_disconnected_in_the_cooccurrence_graph_connected_in_spoke(
    spoke_driver, results_dir, neo4j_env, tmp_path, cap, expected, length
):
    """C1 and C14 are in different components of the co-occurrence graph; SPOKE joins their nodes
    through three relationships (DOID:1 -> P00001 -> P00002 <- P00009): scenario 4 ("path exists in
    SPOKE"), and "none" only past the cap."""
    queries = tmp_path / "q.txt"
    queries.write_text(f"{C1}\n{C14}\n")
    extra = () if cap is None else ("--scenario4-max-hops", cap)
    result = run_compare(results_dir, neo4j_env, tmp_path / "out", *extra, queries=queries)
    assert result.exit_code == 0, result.output
    (row,) = pq.read_table(tmp_path / "out" / "paths.parquet").to_pylist()
    assert row["scenario"] == expected and row["literature_reachable"] is False
    detail = json.loads(row["detail"])
    assert detail["literature"]["in_graph"] is True  # both are vertices, just not connected
    assert detail["pair_link"]["length"] == length
    if length:
        assert [n["identifier"] for n in detail["pair_link"]["nodes"]] == ["DOID:1", "P00001", "P00002", "P00009"]


def test_cooccurrence_graph_is_compared_by_default(h1_run, results_dir, neo4j_env, spoke_driver, tmp_path):
    out, summary = h1_run
    assert summary["graph"] == "cooccurrence"
    run = json.loads((out / "run.json").read_text())
    assert run["provenance"]["graph"] == "cooccurrence"
    assert run["provenance"]["graph_edge_kinds"] == ["concept_concept"]
    table = pq.read_table(out / "paths.parquet").to_pylist()
    reachable = [r for r in table if r["literature_reachable"]]
    assert reachable and not any("PMID:" in r["literature_path"] for r in reachable)
    assert "the co-occurrence graph" in (out / "report.html").read_text()
    # C5 and C6 meet only through an abstract: connected in the full graph, not vertices of the
    # co-occurrence graph (scenario 4 there: SPOKE joins Gene 6 and P00003 directly).
    queries = tmp_path / "q.txt"
    queries.write_text(f"{C5}\n{C6}\n")
    for graph, scenario, reachable in (("full", "1", True), ("cooccurrence", "4", False)):
        result = run_compare(results_dir, neo4j_env, tmp_path / graph, "--graph", graph, queries=queries)
        assert result.exit_code == 0, result.output
        (row,) = pq.read_table(tmp_path / graph / "paths.parquet").to_pylist()
        assert (row["scenario"], row["literature_reachable"]) == (scenario, reachable), graph
    (row,) = pq.read_table(tmp_path / "full" / "paths.parquet").to_pylist()
    assert row["literature_path"] == f"{C5} > PMID:1 > {C6}"
    (row,) = pq.read_table(tmp_path / "cooccurrence" / "paths.parquet").to_pylist()
    # the note names the ends that are not concepts of that graph, and only those (it named both)
    concepts = set(pq.read_table(results_dir / "latest" / "cooccurrence" / "vertices.parquet").column("key").to_pylist())
    assert C1 in concepts and C5 not in concepts
    queries.write_text(f"{C1}\n{C5}\n")
    assert run_compare(results_dir, neo4j_env, tmp_path / "one-absent", queries=queries).exit_code == 0
    (row,) = pq.read_table(tmp_path / "one-absent" / "paths.parquet").to_pylist()
    assert json.loads(row["detail"])["notes"][0] == f"not a vertex of the literature graph: {C5}"


def test_query_set_with_no_mapped_concept_says_so(spoke_driver, results_dir, neo4j_env, tmp_path):
    queries = tmp_path / "q.csv"
    queries.write_text("spoke_identifier,spoke_label\nDOID:404,Disease\n")
    (tmp_path / "q2.txt").write_text("C0000008\nC0000009\nNOT_A_NODE\n")
    for q in (queries, tmp_path / "q2.txt"):
        result = run_compare(results_dir, neo4j_env, tmp_path / q.stem, queries=q)
        assert result.exit_code == 0, result.output
        html = (tmp_path / q.stem / "report.html").read_text()
        assert 'id="no-mapped"' in html
    table = pq.read_table(tmp_path / "q2" / "paths.parquet").to_pylist()
    assert [r["scenario"] for r in table] == ["3c"]  # C8 - C9 through C2: nothing maps but C2


def test_spoke_identifiers_in_the_query_map_to_cuis(spoke_driver, results_dir, neo4j_env, tmp_path):
    queries = tmp_path / "q.txt"
    queries.write_text("DOID:1\nP00002\n")  # DOID:1 -> C1 and C12 (C12 not in the build)
    assert run_compare(results_dir, neo4j_env, tmp_path / "out", queries=queries).exit_code == 0
    table = {
        (r["source"], r["target"]): r["scenario"]
        for r in pq.read_table(tmp_path / "out" / "paths.parquet").to_pylist()
    }
    # C1 and C12 are one SPOKE node: trivially connected, listed apart, not classified.
    # C12 is not in the build: no literature path; SPOKE joins DOID:1 to P00002 -> scenario 4
    assert table == {(C1, C4): "1", ("C0000012", C4): "4"}
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["provenance"]["same_node_pairs"] == [[C1, "C0000012"]]


def test_unreachable_neo4j_is_a_cli_error(results_dir, tmp_path):
    result = CliRunner().invoke(
        compare,
        ["--build-dir", str(results_dir / "latest"), "--mapping", str(mapping_folder(results_dir).csv),
         "--queries", str(results_dir / "queries.txt"), "--out", str(tmp_path), "--neo4j-uri", "bolt://127.0.0.1:9"],
    )  # fmt: skip
    assert result.exit_code == 1 and "not reachable" in result.output


# One concept pair's evidence, with the sentence the report quotes for it.
_HOP_EVIDENCE = [{
    "cui_a": C1, "cui_b": "C0000003", "documents": ["PMID:11", "PMID:12"], "n_predications": 3,
    "predicates": [{"predicate": "TREATS", "count": 3}],
    "sentences": [{"sentence_id": 5, "pmid": 12, "year": 2019, "predicate": "TREATS", "subject": C1,
                   "text": "The drug treats the disease."}],
}]  # fmt: skip


@pytest.mark.parametrize("source", ["store", "bucket file"])
def test_hop_evidence_from_the_store_or_the_build_s_bucket_file(source, spoke_driver, results_dir, neo4j_env,
                                                                mongo_uri, tmp_path):  # fmt: skip
    """From the MongoDB store, or (--evidence-buckets, what the workflow passes) from the build's
    evidence bucket file with no MongoDB at all ($LITPATH_MONGO_URI points nowhere): the same hop
    evidence; a pair without a record is known to have none."""
    from pymongo import MongoClient
    from support.evidence_store import evidence_bucket_file, store_evidence

    from pipeline.builds.layout import bucket_file

    if source == "store":
        with MongoClient(mongo_uri) as client:
            client.drop_database("litpath_compare_test")
            # Evidence counts only from a build the store has loaded completely (store_evidence marks it).
            store_evidence(client["litpath_compare_test"], "cmp0001", _HOP_EVIDENCE)
        options, env = ["--mongo-uri", mongo_uri, "--mongo-database", "litpath_compare_test"], neo4j_env
    else:
        buckets = bucket_file(tmp_path / "store", "evidence")
        evidence_bucket_file(buckets, _HOP_EVIDENCE)
        options, env = ["--evidence-buckets", str(buckets)], {**neo4j_env, "LITPATH_MONGO_URI": "mongodb://127.0.0.1:9/"}
    queries = tmp_path / "q.txt"
    queries.write_text(f"{C1}\n{C4}\n")
    result = CliRunner().invoke(
        compare,
        ["--build-dir", str(results_dir / "latest"), "--mapping", str(mapping_folder(results_dir).table),
         "--queries", str(queries), "--out", str(tmp_path / "out"), "--neo4j-uri", neo4j_env["LITPATH_NEO4J_URI"],
         *options],
        env=env,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (row,) = pq.read_table(tmp_path / "out" / "paths.parquet").to_pylist()
    assert row["evidence_status"] == "ok"
    assert row["documents"] == f"{C1}-C0000003: PMID:11,PMID:12; C0000003-{C4}: -"
    hops = pq.read_table(tmp_path / "out" / "hops.parquet").to_pylist()
    assert [h["documents"] for h in hops] == ["PMID:11,PMID:12", ""]
    # the report's example shows the hop's predicates and its sentence
    quoted = f'{C1}-C0000003: TREATS \u00d73 \u2014 "The drug treats the disease." (PMID 12, 2019)'
    assert quoted in html.unescape((tmp_path / "out" / "report.html").read_text())
    assert quoted in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.parametrize("off", [["--no-mongo"], ["--mongo-uri", ""]], ids=["no-mongo", "empty-uri"])
def test_evidence_store_off_wins_over_the_environment(spoke_driver, results_dir, neo4j_env, mongo_uri, tmp_path, off):
    """--no-mongo (what the workflow passes when mongo.enabled is false) and an empty --mongo-uri
    both leave MongoDB alone although $LITPATH_MONGO_URI names a store that has the evidence."""
    from pymongo import MongoClient

    client = MongoClient(mongo_uri)
    db = client["litpath_compare_off"]
    from support.evidence_store import store_evidence

    store_evidence(db, "cmp0001", [{"cui_a": C1, "cui_b": "C0000003", "documents": ["PMID:11"], "n_predications": 1}])
    client.close()
    queries = tmp_path / "q.txt"
    queries.write_text(f"{C1}\n{C4}\n")
    result = CliRunner().invoke(
        compare,
        ["--build-dir", str(results_dir / "latest"), "--mapping", str(mapping_folder(results_dir).table),
         "--queries", str(queries), "--out", str(tmp_path / "out"), "--neo4j-uri", neo4j_env["LITPATH_NEO4J_URI"],
         "--mongo-database", "litpath_compare_off", *off],
        env={**neo4j_env, "LITPATH_MONGO_URI": mongo_uri},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (row,) = pq.read_table(tmp_path / "out" / "paths.parquet").to_pylist()
    assert row["evidence_status"] == "no evidence store configured"


# ------------------------------------------------------------------------------------------ HTTP


@pytest.fixture(scope="module")
def client(spoke_driver, results_dir, neo4j_env, h1_run):
    from fastapi.testclient import TestClient

    from services.api.main import create_app
    from services.api.settings import Settings

    app = create_app(
        Settings(
            results_dir=results_dir,
            neo4j_uri=neo4j_env["LITPATH_NEO4J_URI"],
            neo4j_user=neo4j_env["LITPATH_NEO4J_USER"],
            neo4j_password=neo4j_env["LITPATH_NEO4J_PASSWORD"],
        )
    )
    with TestClient(app) as test_client:
        yield test_client


def test_compare_pair_matches_the_cli(client, h1_run):
    table = pq.read_table(h1_run[0] / "paths.parquet").to_pylist()
    for row in table:
        response = client.get("/v1/compare/pair", params={"source": row["source"], "target": row["target"]})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["scenario"] == row["scenario"], (row["source"], row["target"])
        assert body["build_id"] == "cmp0001"
        assert body["spoke_hops"] == json.loads(row["detail"])["spoke_hops"]


def test_compare_pair_h2_and_unknown_concept(client):
    body = client.get("/v1/compare/pair", params={"source": C4, "target": C10, "hops": 2}).json()
    assert body["scenario"] == "1" and body["spoke_hops"][0]["length"] == 2
    body = client.get("/v1/compare/pair", params={"source": "C0000011", "target": C1}).json()
    assert body["scenario"] == "4" and body["literature"]["in_graph"] is False  # C11 is not in the build
    body = client.get("/v1/compare/pair", params={"source": "C0000099", "target": C1}).json()
    assert body["scenario"] == "none" and body["unmapped"] == ["C0000099"]


def test_compare_pair_causes_distances_and_both_readings(client, h1_run):
    """The answer carries what the tables carry: the cause of 4 and none, the ends' SPOKE distance,
    the scenario under the shortest-path reading; and the same as the CLI's row."""
    table = {(r["source"], r["target"]): r for r in pq.read_table(h1_run[0] / "paths.parquet").to_pylist()}
    body = client.get("/v1/compare/pair", params={"source": C1, "target": C5}).json()
    assert (body["scenario"], body["cause"], body["literature_cause"]) == ("4", "literature-absent", "absent")
    assert body["spoke_distance"] == 3 == table[(C1, C5)]["spoke_distance"]
    body = client.get("/v1/compare/pair", params={"source": C1, "target": C4}).json()
    assert (body["scenario"], body["scenario_strict"], body["walk_length"], body["shortest_in_spoke"]) == (
        "1", "1", 2, True
    )  # fmt: skip
    assert body["relationships"] == {"allow": [], "deny": []} and body["notes"] == []
    body = client.get("/v1/compare/pair", params={"source": "C0000099", "target": C1}).json()
    assert (body["cause"], body["spoke_distance"]) == ("unmapped", None)
    body = client.get("/v1/compare/pair", params={"source": C4, "target": C10, "hops": 2}).json()
    assert any(note.startswith("hop limit h = 2 with no relationship filter") for note in body["notes"])


def test_compare_follows_the_services_relationship_filter(results_dir, neo4j_env, spoke_driver, h1_run):
    from fastapi.testclient import TestClient

    from services.api.main import create_app
    from services.api.settings import Settings

    settings = Settings(
        results_dir=results_dir, neo4j_uri=neo4j_env["LITPATH_NEO4J_URI"], neo4j_user=neo4j_env["LITPATH_NEO4J_USER"],
        neo4j_password=neo4j_env["LITPATH_NEO4J_PASSWORD"], compare_deny_relationships="INTERACTS_PiP",
    )  # fmt: skip
    with TestClient(create_app(settings)) as denied:
        body = denied.get("/v1/compare/pair", params={"source": C1, "target": C5}).json()
        # DOID:1 -> P00001 -> P00002 <- P00033 ran through INTERACTS_PiP twice: no other way
        assert (body["scenario"], body["cause"], body["relationships"]["deny"]) == (
            "none", "spoke-disconnected", ["INTERACTS_PiP"]
        )  # fmt: skip
        body = denied.get("/v1/compare/pair", params={"source": C4, "target": C10, "hops": 2}).json()
        assert not any("no relationship filter" in note for note in body["notes"])
    both = settings.model_copy(update={"compare_allow_relationships": "TREATS_CtD"})
    with TestClient(create_app(both)) as refused:
        response = refused.get("/v1/compare/pair", params={"source": C1, "target": C5})
        assert response.status_code == 503 and "relationship filter" in response.json()["error"]["message"]


def test_compare_path_matches_the_classifier(client):
    response = client.post("/v1/compare/path", json={"concepts": [C1, "C0000003", C4, C10]})
    assert response.status_code == 200 and response.json()["scenario"] == "2a"
    body = client.post("/v1/compare/path", json={"concepts": [C1, "C0000003", C4, C10], "hops": 2}).json()
    assert body["scenario"] == "1" and body["neo4j_round_trips"] == 3  # lookup, hops, the ends
    body = client.post("/v1/compare/path", json={"concepts": [C1, "C0000099", "C0000003"]}).json()
    assert body["scenario"] == "3a" and body["unmapped"] == ["C0000099"]
    assert body["literature"]["evidence_status"] == "no evidence store configured"


def test_compare_path_bad_input(client):
    response = client.post("/v1/compare/path", json={"concepts": [C1]})
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_request"
    response = client.post("/v1/compare/path", json={"concepts": [C1, "DROP n"]})
    assert response.status_code == 422


def test_reports_latest_serves_the_served_builds_report(client, results_dir, h1_run):
    response = client.get("/v1/reports/latest")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/html")
    assert "data:image/png;base64," in response.text


def test_compare_without_neo4j_is_503(results_dir, tmp_path):
    from fastapi.testclient import TestClient

    from services.api.main import create_app
    from services.api.settings import Settings

    with TestClient(create_app(Settings(results_dir=results_dir, neo4j_uri="bolt://127.0.0.1:9"))) as c:
        response = c.post("/v1/compare/path", json={"concepts": [C1, C4]})
        assert response.status_code == 503 and response.json()["error"]["code"] == "spoke_unavailable"
        assert "127.0.0.1" not in response.text and ":9" not in response.text  # Neo4j's address stays in the log
    with TestClient(create_app(Settings(results_dir=tmp_path))) as c:
        assert c.get("/v1/compare/pair", params={"source": C1, "target": C4}).status_code == 503
        response = c.get("/v1/reports/latest")  # no build served, so no report of it
        assert response.status_code == 503 and response.json()["error"]["code"] == "build_unavailable"


# ---------------------------------------------------------------------- a SPOKE neighbourhood


def _query_set(results_dir, neo4j_env, out, *extra):
    args = ["--mapping", str(mapping_folder(results_dir).table), "--out", str(out),
            "--neo4j-uri", neo4j_env["LITPATH_NEO4J_URI"], *extra]  # fmt: skip
    return CliRunner().invoke(query_set_command, args, catch_exceptions=False, env=neo4j_env)


def test_query_set_from_a_spoke_neighbourhood(spoke_driver, results_dir, neo4j_env, tmp_path):
    """As the paper built its query set: the Disease and Protein nodes around a seed, mapped to CUIs."""
    result = _query_set(results_dir, neo4j_env, tmp_path, "--seed", "DOID:10", "--seed-label", "Disease")
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "query_set.json").read_text())
    nodes = record["neighbourhood"]["nodes"]
    # DOID:10's neighbours: DOID:2 (RESEMBLES_DrD) and P00009 (ASSOCIATES_DaP); itself at distance 0
    assert [(n["identifier"], n["label"], n["distance"]) for n in nodes] == [
        ("DOID:10", "Disease", 0), ("DOID:2", "Disease", 1), ("P00009", "Protein", 1)
    ]  # fmt: skip
    assert record["neighbourhood"]["nodes_by_label"] == {"Disease": 2, "Protein": 1}
    assert "3 nodes found, 3 kept: 3 SPOKE nodes → 3 CUIs" in result.output  # the paper's "54 -> 68"
    cut = _query_set(results_dir, neo4j_env, tmp_path / "cut", "--seed", "DOID:10", "--seed-limit", "2")
    assert cut.exit_code == 0 and "only the first 2 are kept" in cut.output
    assert record["concepts"] == [C10, C2, C14]
    assert (tmp_path / "query_concepts.txt").read_text().split() == [C10, C2, C14]
    # only Proteins, two relationships out: P00009 (1) and P00002 (2, through P00009); not the seed
    result = _query_set(results_dir, neo4j_env, tmp_path / "p", "--seed", "DOID:10", "--seed-hops", "2",
                        "--seed-labels", "Protein")  # fmt: skip
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "p" / "query_set.json").read_text())
    assert [n["identifier"] for n in record["neighbourhood"]["nodes"]] == ["P00009", "P00002"]
    assert record["concepts"] == [C14, C4]
    # an unknown seed is a clear error
    result = CliRunner().invoke(
        query_set_command,
        ["--mapping", str(mapping_folder(results_dir).table), "--out", str(tmp_path / "x"),
         "--neo4j-uri", neo4j_env["LITPATH_NEO4J_URI"], "--seed", "DOID:404"],
        env=neo4j_env,
    )  # fmt: skip
    assert result.exit_code == 2 and "no node with identifier 'DOID:404'" in result.output


def test_compare_runs_on_a_resolved_neighbourhood(spoke_driver, results_dir, neo4j_env, tmp_path):
    assert _query_set(results_dir, neo4j_env, tmp_path, "--seed", "DOID:10", "--seed-label", "Disease").exit_code == 0
    result = run_compare(results_dir, neo4j_env, tmp_path / "out", queries=tmp_path / "query_set.json")
    assert result.exit_code == 0, result.output
    table = {(r["source"], r["target"]): r["scenario"] for r in pq.read_table(tmp_path / "out" / "paths.parquet").to_pylist()}
    assert set(table) == {(C10, C2), (C10, C14), (C2, C14)}
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["provenance"]["query_neighbourhood"]["seed"]["identifier"] == "DOID:10"
    assert "SPOKE neighbourhood of DOID:10" in (tmp_path / "out" / "report.md").read_text()


# ------------------------------------------- the comparison from the query set's distance rows


@pytest.mark.mpi
def test_comparison_runs_from_query_rows_when_the_plan_rules_dense_out(
    spoke_driver, results_dir, neo4j_env, tmp_path
):
    """A co-occurrence graph whose dense solve does not fit the time budget: the plan stores the
    query set's rows (apsp-fw --sources), and the comparison reads its paths from them, with the
    same classification as from the dense matrix."""
    import shutil

    import yaml

    from pipeline.solve.commands import solve
    from pipeline.store.adios import DistanceMatrix

    results = tmp_path / "results"
    shutil.copytree(results_dir / "builds", results / "builds")
    (results / "latest").symlink_to(Path("builds") / "cmp0001")
    build = results / "builds" / "cmp0001"
    shutil.rmtree(build / "cooccurrence" / "distances.bp")
    config = tmp_path / "config.yaml"
    # 8 KiB per node: the dense matrix's 32 KiB tile set does not fit, the 5 rows (~1 KiB) do,
    # so auto must choose the query set's rows.
    machine = Path(__file__).resolve().parents[2] / "config" / "machines" / "dev-vm-2core.yaml"
    solver = {"ranks": 1, "memory_limit_gib": 8 / 2**20, "machine": str(machine)}
    config.write_text(yaml.safe_dump({"solver": solver}))
    queries = tmp_path / "query_concepts.txt"
    queries.write_text("\n".join([C1, C4, C10, C2, C7, C5]) + "\n")
    result = CliRunner().invoke(
        solve,
        ["--scope", "cooccurrence", "--input", str(build / "cooccurrence" / "graph.bp"),
         "--distances", str(build / "cooccurrence" / "distances.bp"), "--config", str(config),
         "--summary", str(build / "cooccurrence" / "solve_summary.json"), "--sources", str(queries)],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads((build / "cooccurrence" / "solve_summary.json").read_text())
    assert summary["method"] == "rows" and "dense does not fit in memory" in summary["plan"]["reason"]
    assert summary["sources"] == {"requested": 6, "in_graph": 5, "not_in_graph": [C5]}
    with DistanceMatrix(build / "cooccurrence" / "distances.bp") as stored:
        assert stored.layout == "rows" and len(stored.sources) == 5

    out = tmp_path / "out"
    result = run_compare(results, neo4j_env, out, queries=results_dir / "queries.txt")
    assert result.exit_code == 0, result.output
    run = json.loads((out / "run.json").read_text())
    assert run["provenance"]["graph_distances"] == "rows"
    assert run["provenance"]["paths_from"] == {"stored": 10, "on-demand": 0}  # every reachable pair
    table = pq.read_table(out / "paths.parquet").to_pylist()
    assert {(r["source"], r["target"]): r["scenario"] for r in table} == EXPECTED_H1


def test_an_unreadable_evidence_file_leaves_the_evidence_unknown(tmp_path):
    """A bucket file without its record (cut short) or of another kind: the evidence is unknown
    (None: the hops say the store failed), not "no documents"."""
    from support.evidence_store import evidence_bucket_file

    from pipeline.builds.layout import bucket_file, bucket_file_record
    from pipeline.store.evidence import evidence_from_bucket_file

    path = bucket_file(tmp_path, "evidence")
    evidence_bucket_file(path, [{"cui_a": "C1", "cui_b": "C2", "documents": ["PMID:1"], "n_predications": 1}])
    assert evidence_from_bucket_file(path, [("C2", "C1"), ("C1", "C3")]) == {
        ("C1", "C2"): {"documents": ["PMID:1"], "n_predications": 1, "predicates": None, "sentences": None},
        ("C1", "C3"): {"documents": [], "n_predications": 0, "predicates": [], "sentences": []},
    }
    bucket_file_record(path).unlink()
    assert evidence_from_bucket_file(path, [("C1", "C2")]) is None

"""Readers of the Hetionet and CSV dump layouts, and the metaedge table."""

from __future__ import annotations

import csv

import pytest
from support.data import SPOKE

from pipeline.spoke.dump import DumpError, EdgeRow, NodeRow, Rejection, read_edges, read_nodes
from pipeline.spoke.hetionet import hetionet_v1_metaedges, read_metaedges


def test_builtin_metaedges_match_the_hetionet_release_tables():
    builtin = hetionet_v1_metaedges()
    with open(SPOKE / "metaedges.tsv") as handle:
        abbreviations = {row["abbreviation"] for row in csv.DictReader(handle, delimiter="\t")}
    assert set(builtin) == abbreviations
    from_json = read_metaedges(SPOKE / "hetionet-v1.0-metagraph.json")
    from_tsv = read_metaedges(SPOKE / "metaedges.tsv")
    assert from_json == builtin == from_tsv
    assert builtin["DaG"].rel_type == "ASSOCIATES_DaG"
    assert builtin["CcSE"].rel_type == "CAUSES_CcSE"
    assert builtin["CcSE"].target_label == "SideEffect"
    assert builtin["Gr>G"].rel_type == "REGULATES_GrG"
    assert builtin["Gr>G"].direction == "forward"
    assert builtin["PCiC"].source_label == "PharmacologicClass"


def test_rel_types_equal_hetionet_neo4j_types_file():
    with open(SPOKE / "types.tsv") as handle:
        expected = {row["rel_type"] for row in csv.DictReader(handle, delimiter="\t")}
    assert {m.rel_type for m in hetionet_v1_metaedges().values()} == expected


def test_hetionet_sample_reads_clean():
    nodes = list(read_nodes(SPOKE / "nodes.tsv", "hetionet"))
    edges = list(read_edges(SPOKE / "edges.sif", "hetionet"))
    assert all(isinstance(n, NodeRow) for n in nodes) and len(nodes) == 29
    assert all(isinstance(e, EdgeRow) for e in edges) and len(edges) == 32
    side_effect = next(n for n in nodes if n.identifier == "C0003469")
    assert (side_effect.label, side_effect.name, side_effect.line) == ("SideEffect", "Anxiety disorder", 17)
    first = edges[0]
    assert (first.source_label, first.source_identifier, first.rel_type, first.target_identifier) == (
        "Gene", "7124", "INTERACTS_GiG", "3569",
    )  # fmt: skip


def test_hetionet_malformed_lines_are_named(tmp_path):
    nodes = tmp_path / "nodes.tsv"
    nodes.write_text(
        "id\tname\tkind\nGene::1\tA1BG\tGene\nGene::2\tonly two fields\nGene3\tX\tGene\nDisease::DOID:1\tx\tGene\n"
    )
    items = list(read_nodes(nodes, "hetionet"))
    assert isinstance(items[0], NodeRow)
    assert [str(r) for r in items[1:]] == [
        f"{nodes}:3: expected 3 tab-separated fields (id, name, kind), found 2",
        f"{nodes}:4: id 'Gene3' is not of the form Kind::identifier",
        f"{nodes}:5: id kind 'Disease' differs from kind column 'Gene'",
    ]
    edges = tmp_path / "edges.sif"
    edges.write_text("source\tmetaedge\ttarget\nGene::1\tXyZ\tGene::2\nGene::1\tDaG\tGene::2\n")
    rejected = list(read_edges(edges, "hetionet"))
    assert [r.line for r in rejected] == [2, 3]
    assert "unknown metaedge 'XyZ'" in rejected[0].reason
    assert "joins Disease to Gene, not Gene to Gene" in rejected[1].reason


def test_hetionet_wrong_header_stops(tmp_path):
    nodes = tmp_path / "nodes.tsv"
    nodes.write_text("identifier\tname\tkind\n")
    with pytest.raises(DumpError, match=r"nodes.tsv:1: expected header"):
        list(read_nodes(nodes, "hetionet"))


def test_csv_layout_with_properties(tmp_path):
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(
        "label,identifier,name,properties\n"
        'Disease,DOID:1,"a, quoted name","{""mesh_list"": [""D1"", ""D2""], ""source"": ""DO"", ""x"": null}"\n'
        "Gene,7,G7,\n"
        'Gene,8,G8,"{""nested"": {""a"": 1}}"\n'
        "Bad Label,9,G9,\n"
        "Gene,,G10,\n"
        "Gene,11\n"
    )
    items = list(read_nodes(nodes, "csv"))
    assert items[0] == NodeRow(
        "Disease", "DOID:1", "a, quoted name", 2, {"mesh_list": ["D1", "D2"], "source": "DO"}
    )
    assert items[1] == NodeRow("Gene", "7", "G7", 3, {})
    assert [(r.line, r.reason) for r in items[2:]] == [
        (4, "property 'nested': nested objects cannot be stored in Neo4j"),
        (5, "label 'Bad Label' is not a plain name (letters, digits, underscore)"),
        (6, "empty identifier"),
        (7, "expected 4 comma-separated fields, found 2"),
    ]
    edges = tmp_path / "edges.csv"
    edges.write_text(
        "source_label,source_identifier,type,target_label,target_identifier\n"
        "Disease,DOID:1,ASSOCIATES_DaG,Gene,7\n"
        "Disease,DOID:1,ASSOCIATES DaG,Gene,7\n"
    )
    parsed, bad = list(read_edges(edges, "csv"))
    assert parsed == EdgeRow("Disease", "DOID:1", "ASSOCIATES_DaG", "Gene", "7", 2, {})
    assert isinstance(bad, Rejection) and bad.line == 3 and "relationship type" in bad.reason


def test_csv_wrong_header_stops(tmp_path):
    edges = tmp_path / "edges.csv"
    edges.write_text("source,type,target\n")
    with pytest.raises(DumpError, match="edges.csv:1: expected header source_label,source_identifier"):
        list(read_edges(edges, "csv"))


def test_csv_node_properties_cannot_overwrite_identifier_or_name(tmp_path):
    """``SET n += row.p`` runs after the merge on the identifier: such a key would rename the node."""
    nodes = tmp_path / "nodes.csv"
    nodes.write_text(
        "label,identifier,name,properties\n"
        'Disease,DOID:1,fibrosis,"{""identifier"": ""DOID:X""}"\n'
        'Disease,DOID:2,asthma,"{""name"": ""renamed"", ""source"": ""DO""}"\n'
        'Disease,DOID:3,cough,"{""identifier"": null}"\n'
        'Disease,DOID:4,fever,"{""source"": ""DO"", ""label"": ""kept""}"\n'
    )
    items = list(read_nodes(nodes, "csv"))
    assert [(r.file, r.line, r.reason, r.label) for r in items[:3]] == [
        (str(nodes), 2, "property 'identifier' is reserved: the identifier column sets it", "Disease"),
        (str(nodes), 3, "property 'name' is reserved: the name column sets it", "Disease"),
        (str(nodes), 4, "property 'identifier' is reserved: the identifier column sets it", "Disease"),
    ]
    assert items[3] == NodeRow("Disease", "DOID:4", "fever", 5, {"source": "DO", "label": "kept"})
    # Edge properties set nothing the edge is matched on: no reserved keys there.
    edges = tmp_path / "edges.csv"
    edges.write_text(
        "source_label,source_identifier,type,target_label,target_identifier,properties\n"
        'Disease,DOID:4,RESEMBLES_DrD,Disease,DOID:1,"{""name"": ""similar""}"\n'
    )
    assert list(read_edges(edges, "csv"))[0].properties == {"name": "similar"}


def test_loader_refuses_properties_that_overwrite_configured_property_names(tmp_path):
    """With other property names configured the loader's check pass refuses those keys, counted
    and named; on_error="fail" stops before anything is written (so no server is needed here)."""
    from pipeline.spoke.load import SpokeLoader
    from pipeline.store.neo4j import GraphNaming

    nodes = tmp_path / "nodes.csv"
    nodes.write_text(
        "label,identifier,name,properties\n"
        'Gene,7,G7,"{""spoke_id"": ""8""}"\n'
        'Gene,8,G8,"{""source"": ""x""}"\n'
        'Gene,9,G9,"{""pref_name"": ""other"", ""spoke_id"": ""1""}"\n'
    )
    naming = GraphNaming(identifier_property="spoke_id", name_property="pref_name")
    loader = SpokeLoader(None, naming=naming)  # type: ignore[arg-type]  (never reached)
    with pytest.raises(DumpError) as error:
        loader.load(nodes, None, "csv")
    assert str(error.value) == (
        f"{nodes}:2: property 'spoke_id' would overwrite the node's identifier property 'spoke_id' "
        "(and 1 more problem)"
    )
    assert error.value.more == 1


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("fmt, fixture", [("hetionet", "nodes.tsv"), ("csv", "mapping_nodes.csv")])
def test_a_line_past_the_cap_stops_the_dump(tmp_path, monkeypatch, compress, fmt, fixture):
    """A physical line longer than pipeline.runtime.files.MAX_LINE_BYTES (patched small here) is a
    DumpError naming file, line and byte, not a line buffered whole."""
    import gzip

    from pipeline.runtime import files

    reference = list(read_nodes(SPOKE / fixture, fmt))
    monkeypatch.setattr(files, "MAX_LINE_BYTES", 1000)
    lines = (SPOKE / fixture).read_bytes().splitlines(keepends=True)
    data = b"".join(lines[:2]) + b"y" * 1001  # no line end: the rest of the file is one line
    path = tmp_path / (fixture + (".gz" if compress else ""))
    path.write_bytes(gzip.compress(data) if compress else data)
    with pytest.raises(DumpError) as error:
        list(read_nodes(path, fmt))
    start = len(b"".join(lines[:2]))
    assert str(error.value).startswith(f"{path}:3: the line from byte {start:,}")
    assert "runs past 1,000 bytes" in str(error.value) and "MAX_LINE_BYTES" in str(error.value)
    # Lines up to the cap read as before.
    monkeypatch.setattr(files, "MAX_LINE_BYTES", max(len(line.rstrip(b"\n")) for line in lines))
    assert list(read_nodes(SPOKE / fixture, fmt)) == reference

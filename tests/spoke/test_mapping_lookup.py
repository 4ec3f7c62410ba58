"""The mapping against a SPOKE that litpath did not load: identifiers looked up, never a label read.

The reference is the scan (:func:`spoke_nodes_from_neo4j` into :func:`build_mapping`): over the
same Neo4j, the lookups must give the same rows -- on the hand-checked fixture, on the foreign
SPOKE written by plain Cypher (tests/support/foreign_spoke.py), and on random graphs.
"""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner
from support.data import SPOKE, UMLS, XREFS, rows_of
from support.foreign_spoke import (
    EXPECTED_MAPPING,
    LITERATURE_CUIS,
    empty_foreign_spoke,
    write_foreign_spoke,
    write_sources,
)

from pipeline.spoke.commands import build_mapping as build_mapping_command
from pipeline.spoke.load import load_spoke
from pipeline.spoke.mapping.build import MappingSources, build_mapping, build_mapping_by_lookup
from pipeline.spoke.mapping.nodes import MappingLookupError, Neo4jNodes, spoke_nodes_from_neo4j

pytestmark = pytest.mark.servers


@pytest.fixture
def foreign(graph, tmp_path):
    write_foreign_spoke(graph)
    yield graph, write_sources(tmp_path / "xrefs")
    empty_foreign_spoke(graph)


def test_foreign_spoke_maps_to_the_hand_computed_rows_by_lookup_and_by_scan(foreign):
    driver, sources = foreign
    spoke = Neo4jNodes(driver)
    looked_up = build_mapping_by_lookup(spoke, sources, literature_cuis=LITERATURE_CUIS)
    assert rows_of(looked_up.table) == EXPECTED_MAPPING
    scanned = build_mapping(spoke_nodes_from_neo4j(driver), sources, literature_cuis=LITERATURE_CUIS)
    assert rows_of(scanned.table) == EXPECTED_MAPPING
    lookup = looked_up.stats["lookup"]
    assert lookup["obsolete_skipped"] == {"Disease": 1, "Protein": 1}  # DOID:0001816 ("True"), Q99999 (true)
    assert scanned.stats["obsolete_skipped"] == {"Disease": 1, "Protein": 1}
    assert lookup["string_encoded_lists"] == {"Compound.xrefs": 1, "Disease.mesh_list": 1}
    # the denominators are Neo4j's own counts (the obsolete nodes included)
    assert (
        looked_up.nodes["Protein"] == 3
        and looked_up.nodes["Gene"] == 2
        and looked_up.nodes["SideEffect"] == 0
    )
    assert looked_up.stats["nodes_found"]["Protein"] == 1  # P05231; Q99999 skipped; P13232 in no file


def test_integer_identifiers_are_found_and_named_as_strings(foreign):
    driver, _ = foreign
    spoke = Neo4jNodes(driver)
    found = list(spoke.find("Gene", ["3569", "03569", "3574", "9999"]))
    assert sorted(node.identifier for node in found) == ["3569", "3574"]  # "03569" is not 3569
    assert [node.identifier for node in spoke.find("Organism", ["9606"])] == ["9606"]


def test_lookups_seek_the_identifier_index_and_never_scan_a_label(foreign):
    driver, _ = foreign
    spoke = Neo4jNodes(driver)
    with driver.session() as session:
        plan = (
            session.run("EXPLAIN " + spoke.lookup_query("Protein", "identifier"), keys=["P05231"], props=[])
            .consume()
            .plan
        )
    operators = _operators(plan)
    assert any("IndexSeek" in op for op in operators), operators
    assert not any("Scan" in op for op in operators), operators
    # the identity label's CUI-shaped identifiers: one range seek on the same index
    with driver.session() as session:
        plan = session.run("EXPLAIN " + spoke.prefix_query("Disease"), prefix="C", props=[]).consume().plan
    operators = _operators(plan)
    assert any("IndexSeekByRange" in op for op in operators) and not any("Scan" in op for op in operators), (
        operators
    )


def _operators(plan) -> list[str]:
    found = [plan["operatorType"]]
    for child in plan.get("children", []):
        found += _operators(child)
    return found


def test_a_large_label_without_an_index_is_refused(graph):
    with graph.session() as session:
        session.run("UNWIND range(1, 30) AS i CREATE (:Protein {identifier: 'P' + toString(i)})").consume()
    small = Neo4jNodes(graph)
    assert [n.identifier for n in small.find("Protein", ["P7"])] == ["P7"]
    assert small.stats.warnings and "no index on Protein.identifier" in small.stats.warnings[0]
    large = Neo4jNodes(graph, large_label=20)
    with pytest.raises(MappingLookupError, match=r"no index on Protein\.identifier \(30 nodes\)"):
        list(large.find("Protein", ["P7"]))


def test_lookup_equals_scan_on_the_hand_checked_fixture(graph):
    """The hand-checked nodes loaded by litpath's loader: the lookups find every node a route can
    use, SideEffect C0015970 too, whose CUI is in no file (the identity label is read by its
    CUI-shaped identifiers)."""
    assert load_spoke(graph, SPOKE / "mapping_nodes.csv", None, "csv").verified
    sources = MappingSources.from_umls_dir(
        UMLS, do_xrefs=XREFS / "allXREFinDO.tsv", gene_info=XREFS / "Homo_sapiens.gene_info",
        ncit_swissprot=XREFS / "NCIt-SwissProt_Mapping.txt", unichem=[XREFS / "src1src2.txt"],
        uberon_obo=XREFS / "uberon.obo", unichem_structure=XREFS / "unichem_structure.tsv",
        unichem_reference=XREFS / "unichem_reference.tsv",
    )  # fmt: skip
    literature = {"C0010200", "C1234567", "C0012854", "GENE:3569"}
    scanned = rows_of(build_mapping(spoke_nodes_from_neo4j(graph), sources, literature_cuis=literature).table)
    looked_up = rows_of(build_mapping_by_lookup(Neo4jNodes(graph), sources, literature_cuis=literature).table)
    assert looked_up == scanned
    assert ("C0015970", "SideEffect", "C0015970", "identity", "identity:SideEffect.identifier") in looked_up


# ------------------------------------------------------------------------------ random graphs


def _random_world(rng: random.Random, folder):
    """Random SPOKE nodes (as plain Cypher parameters) and cross-reference files in which every node
    a route could map is named (so the lookups must find exactly what the scan reads)."""
    nodes, mrconso = [], []
    cui_counter = iter(range(1_000_000, 9_000_000, 7))

    def cui() -> str:
        return f"C{next(cui_counter):07d}"

    def flag():
        return rng.choice([None, None, None, True, "True", "false"])

    def listed(values):  # a list, native or as the text some exports write
        return values if rng.random() < 0.5 else repr(values)

    accessions = [f"P{i:05d}" for i in range(120)]
    ncit = {}
    for acc in rng.sample(accessions, 60):
        ncit[acc] = f"C{rng.randrange(10_000, 99_999)}"
        mrconso.append((cui(), "NCI", ncit[acc]))
    ncit["Q00000"] = "C11111"  # an accession SPOKE lacks
    for acc in accessions:
        nodes.append({"labels": ["Protein"], "id": acc, "props": {"vestige": flag()}})
    genes = rng.sample(range(1, 5000), 40)
    gene_info = {}
    for gene in genes:
        nodes.append({"labels": ["Gene"], "id": gene if rng.random() < 0.6 else str(gene), "props": {}})
        if rng.random() < 0.7:
            gene_info[str(gene)] = f"HGNC:{gene + 7}"
            mrconso.append((cui(), "HGNC", gene_info[str(gene)]))
    do_rows = []
    for i in range(30):
        doid = f"DOID:{i:07d}"
        mesh = f"D{rng.randrange(100_000, 999_999)}"
        mrconso.append((cui(), "MSH", mesh))
        props = {"mesh_list": listed([f"MESH:{mesh}"])} if rng.random() < 0.5 else {}
        nodes.append({"labels": ["Disease"], "id": doid, "props": {**props, "vestige": flag()}})
        route = rng.choice(["UMLS_CUI", "MESH", "GARD"])  # every DOID is in the file, some by no route
        code = cui() if route == "UMLS_CUI" else mesh if route == "MESH" else str(i)
        do_rows.append((doid, f"{route}:{code}"))
    for mesh_number in rng.sample(range(100_000, 999_999), 20):
        mesh = f"D{mesh_number}"
        if rng.random() < 0.8:
            mrconso.append((cui(), "MSH", mesh))
        labels = ["Symptom", "Disease"] if rng.random() < 0.2 else ["Symptom"]
        nodes.append({"labels": labels, "id": mesh, "props": {"vestige": flag()}})
    for i in range(15):
        side_effect = cui()
        mrconso.append((side_effect, "MDR", str(10_000_000 + i)))
        nodes.append({"labels": ["SideEffect"], "id": side_effect, "props": {}})
    for taxon in rng.sample(range(1, 100_000), 10):
        nodes.append({"labels": ["Organism"], "id": taxon, "props": {}})
        if rng.random() < 0.7:
            mrconso.append((cui(), "NCBI", str(taxon)))
    chembl_rows = []
    drugbank_ids = rng.sample(range(10_000, 99_999), 25)
    chembl_ids = rng.sample(range(1, 10**6), 25)
    for i in range(25):
        drugbank, chembl = f"DB{drugbank_ids[i]}", f"CHEMBL{chembl_ids[i]}"
        mrconso.append((cui(), "DRUGBANK", drugbank))
        style = rng.choice(["drugbank", "chembl", "today"])
        if style == "drugbank":
            nodes.append({"labels": ["Compound"], "id": drugbank, "props": {}})
        elif style == "chembl":
            nodes.append({"labels": ["Compound"], "id": chembl, "props": {}})
            chembl_rows.append((chembl, drugbank))
        else:  # found through UniChem's dumps (its InChIKey), mapped through its xrefs
            key = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(14)) + "-UHFFFAOYSA-N"
            xrefs = [f"drugbank:{drugbank}", f"chembl.compound:{chembl}"]
            nodes.append({"labels": ["Compound"], "id": f"inchikey:{key}", "props": {"xrefs": listed(xrefs)}})
            chembl_rows.append((chembl, drugbank))
            nodes[-1]["inchikey"] = key
            nodes[-1]["drugbank"] = drugbank
    # the files
    folder.mkdir(parents=True, exist_ok=True)
    mrconso.sort()
    with (folder / "MRCONSO.RRF").open("w") as out:
        for n, (c, sab, code) in enumerate(mrconso):
            lat, suppress = rng.choice([("ENG", "N")] * 8 + [("SPA", "N"), ("ENG", "O")])
            out.write(
                f"{c}|{lat}|P|L{n:07d}|PF|S{n:07d}|Y|A{n:08d}|||{code}|{sab}|PT|{code}|name {n}|0|{suppress}|256|\n"
            )
    (folder / "NCIt.txt").write_text(
        "NCIt Code\tSwissProt ID\tNCIt Preferred Name\n" + "".join(f"{c}\t{a}\tx\n" for a, c in ncit.items())
    )
    header = "#tax_id\tGeneID\tSymbol\tdbXrefs\n"
    (folder / "gene_info").write_text(
        header + "".join(f"9606\t{g}\tS{g}\tHGNC:{h}\n" for g, h in gene_info.items())
    )
    (folder / "do.tsv").write_text("id\tlabel\txref\n" + "".join(f'"{d}"\t"x"\t"{x}"\n' for d, x in do_rows))
    (folder / "src1src2.txt").write_text(
        "From src:'1'\tTo src:'2'\n" + "".join(f"{c}\t{d}\n" for c, d in chembl_rows)
    )
    today = [n for n in nodes if "inchikey" in n]
    (folder / "structure.tsv").write_text(
        "UCI\tSTANDARDINCHI\tSTANDARDINCHIKEY\n"
        + "".join(f"{i}\tInChI=x\t{n['inchikey']}\n" for i, n in enumerate(today))
    )
    (folder / "reference.tsv").write_text(
        "UCI\tSRC_ID\tSRC_COMPOUND_ID\tASSIGNMENT\n"
        + "".join(f"{i}\t2\t{n['drugbank']}\t1\n" for i, n in enumerate(today))
    )
    sources = MappingSources(
        mrconso=folder / "MRCONSO.RRF", ncit_swissprot=folder / "NCIt.txt", gene_info=folder / "gene_info",
        do_xrefs=folder / "do.tsv", unichem=[folder / "src1src2.txt"], unichem_structure=folder / "structure.tsv",
        unichem_reference=folder / "reference.tsv",
    )  # fmt: skip
    return nodes, sources


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_lookup_equals_scan_on_random_graphs(graph, tmp_path, seed):
    rng = random.Random(seed)
    nodes, sources = _random_world(rng, tmp_path / "files")
    with graph.session() as session:
        for label in ("Protein", "Gene", "Disease", "Symptom", "SideEffect", "Organism", "Compound"):
            session.run(
                f"CREATE CONSTRAINT rnd_{label} IF NOT EXISTS FOR (n:{label}) REQUIRE n.identifier IS UNIQUE"
            ).consume()
        for node in nodes:  # plain Cypher, one node at a time, labels as SPOKE's server has them
            labels = ":".join(node["labels"])
            props = {k: v for k, v in node["props"].items() if v is not None}
            session.run(
                f"CREATE (n:{labels} {{identifier: $id}}) SET n += $props", id=node["id"], props=props
            ).consume()
    try:
        literature = {f"GENE:{g}" for g in rng.sample([n["id"] for n in nodes if "Gene" in n["labels"]], 5)}
        scanned = build_mapping(spoke_nodes_from_neo4j(graph), sources, literature_cuis=literature)
        spoke = Neo4jNodes(graph, batch_size=7)  # many small batches
        looked_up = build_mapping_by_lookup(spoke, sources, literature_cuis=literature)
        assert rows_of(looked_up.table) == rows_of(scanned.table)
        assert looked_up.table.num_rows > 40  # every route gave rows
        assert set(looked_up.table.column("spoke_label").to_pylist()) == {
            "Protein", "Gene", "Disease", "Symptom", "SideEffect", "Organism", "Compound"
        }  # fmt: skip
        assert (
            looked_up.stats["lookup"]["obsolete_skipped"]
            and looked_up.stats["lookup"]["string_encoded_lists"]
        )
    finally:
        with graph.session() as session:
            for record in list(session.run("SHOW CONSTRAINTS YIELD name RETURN name")):
                if record["name"].startswith("rnd_"):
                    session.run(f"DROP CONSTRAINT `{record['name']}`").consume()


def test_cli_build_mapping_looks_up_and_records_what_it_asked(foreign, neo4j_uri, neo4j_env, tmp_path):
    driver, sources = foreign
    folder = tmp_path / "xrefs"
    concepts = tmp_path / "concepts.parquet"
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys = sorted(LITERATURE_CUIS)
    pq.write_table(pa.table({"cui": keys, "name": keys, "semtypes": [["aapp"]] * len(keys)}), concepts)
    args = [
        "--mrconso", str(folder / "MRCONSO.RRF"), "--do-xrefs", str(folder / "allXREFinDO.tsv"),
        "--gene-info", str(folder / "Homo_sapiens.gene_info"), "--ncit-swissprot", str(folder / "NCIt-SwissProt_Mapping.txt"),
        "--unichem", str(folder / "src1src2.txt"), "--unichem-structure", str(folder / "structure.tsv"),
        "--unichem-reference", str(folder / "reference.tsv"), "--concepts", str(concepts),
        "--spoke-release", "foreign SPOKE fixture", "--out", str(tmp_path / "out"), "--neo4j-uri", neo4j_uri,
    ]  # fmt: skip
    result = CliRunner().invoke(build_mapping_command, args, env=neo4j_env)
    assert result.exit_code == 0, result.output
    assert rows_of(pq.read_table(tmp_path / "out" / "cui_spoke_mapping.parquet")) == EXPECTED_MAPPING
    stats = json.loads((tmp_path / "out" / "mapping_stats.json").read_text())
    assert (
        stats["releases"]["spoke"] == "foreign SPOKE fixture"
        and "(lookup)" in stats["releases"]["spoke_source"]
    )
    assert stats["lookup"]["asked"]["Protein"] == 2 and stats["spoke_nodes"]["Protein"] == 3
    assert stats["options"] == {
        "mrcui_relations": ["SY"],
        "gene_identity": True,
        "obsolete_property": "vestige",
    }
    # --no-gene-identity drops the GENE: row
    result = CliRunner().invoke(build_mapping_command, [*args[:-4], "--no-gene-identity", "--out", str(tmp_path / "o2"),
                                                        "--neo4j-uri", neo4j_uri], env=neo4j_env)  # fmt: skip
    assert result.exit_code == 0, result.output
    got = rows_of(pq.read_table(tmp_path / "o2" / "cui_spoke_mapping.parquet"))
    assert EXPECTED_MAPPING - got == {
        ("GENE:3574", "Gene", "3574", "identity", "identity:Gene.identifier(Entrez)")
    }

"""The CUI -> SPOKE mapping on real-format files, against rows checked by hand.

Files: tests/data/spoke/mapping_nodes.csv (SPOKE nodes), tests/data/umls/MRCONSO.RRF and
MRCUI.RRF, tests/data/spoke/xrefs/ (DO xrefs, gene_info, NCIt-SwissProt, UniChem mappings and
table dumps, UBERON and Cell Ontology OBO excerpts).
"""

from __future__ import annotations

import gzip

import pyarrow.parquet as pq
import pytest
from support.data import SPOKE, UMLS, XREFS, rows_of

from pipeline.spoke.mapping.build import MappingSources, build_mapping, write_mapping
from pipeline.spoke.mapping.nodes import spoke_nodes_from_dump
from pipeline.spoke.mapping.rules import ALL_MRCUI_RELATIONS, SpokeNode
from pipeline.spoke.mapping.xrefs import (
    FileStats,
    read_mrconso,
    read_mrcui,
    read_ncit_swissprot,
    read_obo_xrefs,
    read_unichem,
    read_unichem_references,
    read_unichem_structures,
)

IDENTITY = {
    ("C0003469", "SideEffect", "C0003469", "identity", "identity:SideEffect.identifier"),
    ("C0015970", "SideEffect", "C0015970", "identity", "identity:SideEffect.identifier"),
    ("C2345678", "SideEffect", "C2345678", "identity", "identity:SideEffect.identifier"),
}
DIRECT = {
    # MeSH: Symptom ids; the suppressed (O) C0743973 and the Spanish C9999990 rows are dropped
    ("C0010200", "Symptom", "D003371", "direct", "MRCONSO:MSH"),
    ("C0015967", "Symptom", "D005334", "direct", "MRCONSO:MSH"),
    ("C0015672", "Symptom", "D005221", "direct", "MRCONSO:MSH"),
    # MeSH in node properties (Disease.mesh_list with a MESH: prefix, Anatomy.mesh_id)
    ("C1800706", "Disease", "DOID:0050156", "direct", "MRCONSO:MSH(Disease.mesh_list)"),
    ("C0024109", "Anatomy", "UBERON:0002048", "direct", "MRCONSO:MSH(Anatomy.mesh_id)"),
    ("C1155266", "BiologicalProcess", "GO:0006954", "direct", "MRCONSO:GO"),
    ("C5203676", "Organism", "2697049", "direct", "MRCONSO:NCBI"),
    ("C0011777", "Compound", "DB01234", "direct", "MRCONSO:DRUGBANK"),
    # N0000175533's NDFRT row is suppressed (E): no row; the MED-RT one maps
    ("C1373119", "PharmacologicClass", "N0000175576", "direct", "MRCONSO:MED-RT"),
}
INDIRECT = {
    # Disease Ontology: UMLS_CUI straight, MESH through MRCONSO (NCI:C35716 is not in MRCONSO)
    ("C1800706", "Disease", "DOID:0050156", "indirect", "DO:UMLS_CUI"),
    ("C1800706", "Disease", "DOID:0050156", "indirect", "DO:MESH>MRCONSO:MSH"),
    # one DOID -> two CUIs; one CUI -> two DOIDs
    ("C0018923", "Disease", "DOID:0001816", "indirect", "DO:UMLS_CUI"),
    ("C0854893", "Disease", "DOID:0001816", "indirect", "DO:UMLS_CUI"),
    ("C0013369", "Disease", "DOID:13250", "indirect", "DO:UMLS_CUI"),
    ("C0013369", "Disease", "DOID:12384", "indirect", "DO:UMLS_CUI"),
    # gene_info: Entrez 3569 -> HGNC:6018 -> two CUIs; 3574 -> HGNC:6023; TNF's HGNC:11892 not in MRCONSO
    ("C1415572", "Gene", "3569", "indirect", "gene_info:HGNC>MRCONSO:HGNC"),
    ("C1332186", "Gene", "3569", "indirect", "gene_info:HGNC>MRCONSO:HGNC"),
    ("C1415583", "Gene", "3574", "indirect", "gene_info:HGNC>MRCONSO:HGNC"),
    # NCIt-SwissProt: P05231 -> C20568; P0DP23 and P0DP24 share C16375 (a |-joined row)
    ("C0021760", "Protein", "P05231", "indirect", "NCIt-SwissProt>MRCONSO:NCI"),
    ("C0006803", "Protein", "P0DP23", "indirect", "NCIt-SwissProt>MRCONSO:NCI"),
    ("C0006803", "Protein", "P0DP24", "indirect", "NCIt-SwissProt>MRCONSO:NCI"),
    # UniChem: CHEMBL384467 -> DB01234; CHEMBL635 -> DB00635 (mapped) and DB14631 (not in MRCONSO)
    ("C0011777", "Compound", "CHEMBL384467", "indirect", "UniChem:ChEMBL>DrugBank>MRCONSO:DRUGBANK"),
    ("C0032952", "Compound", "CHEMBL635", "indirect", "UniChem:ChEMBL>DrugBank>MRCONSO:DRUGBANK"),
    # MRCUI, node keyed by a retired CUI: SideEffect C2345678 (SY -> C0015967) is reached from C0015967
    ("C0015967", "SideEffect", "C2345678", "indirect", "MRCUI:SY:C2345678<identity:SideEffect.identifier"),
}
# MRCUI, retired CUIs used by the literature: C1234567 (SY -> C0010200), C4567890 (RO -> two CUIs;
# RB, RN and RO name another concept, so they count only when asked for: mapping.mrcui_relations)
RETIRED_IN_LITERATURE = {
    ("C1234567", "Symptom", "D003371", "indirect", "MRCUI:SY:C0010200>MRCONSO:MSH"),
}
RETIRED_OTHER_IN_LITERATURE = {
    ("C4567890", "Symptom", "D005221", "indirect", "MRCUI:RO:C0015672>MRCONSO:MSH"),
    ("C4567890", "Disease", "DOID:0050156", "indirect", "MRCUI:RO:C1800706>MRCONSO:MSH(Disease.mesh_list)"),
    ("C4567890", "Disease", "DOID:0050156", "indirect", "MRCUI:RO:C1800706>DO:UMLS_CUI"),
    ("C4567890", "Disease", "DOID:0050156", "indirect", "MRCUI:RO:C1800706>DO:MESH>MRCONSO:MSH"),
}
LITERATURE = {"C0010200", "C1234567", "C4567890", "C0012854", "GENE:3569", "GENE:99999"}


def full_sources() -> MappingSources:
    return MappingSources.from_umls_dir(
        UMLS,
        do_xrefs=XREFS / "allXREFinDO.tsv",
        gene_info=XREFS / "Homo_sapiens.gene_info",
        ncit_swissprot=XREFS / "NCIt-SwissProt_Mapping.txt",
        unichem=[XREFS / "src1src2.txt"],
    )


@pytest.fixture(scope="module")
def result():
    nodes = spoke_nodes_from_dump(SPOKE / "mapping_nodes.csv", "csv")
    return build_mapping(nodes, full_sources(), literature_cuis=LITERATURE)


def test_every_method_gives_the_hand_checked_rows(result):
    gene_identity = {("GENE:3569", "Gene", "3569", "identity", "identity:Gene.identifier(Entrez)")}
    expected = IDENTITY | DIRECT | INDIRECT | RETIRED_IN_LITERATURE | gene_identity
    got = rows_of(result.table)
    assert got - expected == set(), "unexpected rows"
    assert expected - got == set(), "missing rows"
    assert result.table.num_rows == len(expected)


def test_mrcui_broader_narrower_and_other_relations_are_opt_in():
    nodes = list(spoke_nodes_from_dump(SPOKE / "mapping_nodes.csv", "csv"))
    default = rows_of(build_mapping(nodes, full_sources(), literature_cuis=LITERATURE).table)
    opted = rows_of(
        build_mapping(
            nodes, full_sources(), literature_cuis=LITERATURE, mrcui_relations=ALL_MRCUI_RELATIONS
        ).table
    )
    assert not any(":RO:" in row[4] or ":RB:" in row[4] or ":RN:" in row[4] for row in default)
    assert opted - default == RETIRED_OTHER_IN_LITERATURE


def test_gene_identity_route_can_be_turned_off():
    nodes = list(spoke_nodes_from_dump(SPOKE / "mapping_nodes.csv", "csv"))
    off = rows_of(build_mapping(nodes, full_sources(), literature_cuis=LITERATURE, gene_identity=False).table)
    on = rows_of(build_mapping(nodes, full_sources(), literature_cuis=LITERATURE).table)
    assert on - off == {("GENE:3569", "Gene", "3569", "identity", "identity:Gene.identifier(Entrez)")}


def test_one_to_many_both_ways_are_kept(result):
    frame = result.table.to_pandas()
    per_node = frame.groupby(["spoke_label", "spoke_identifier"])["cui"].nunique()
    per_cui = frame.groupby("cui")["spoke_identifier"].nunique()
    assert per_node[("Disease", "DOID:0001816")] == 2
    assert per_node[("Gene", "3569")] == 3  # two HGNC CUIs and the literature's GENE:3569
    assert per_cui["C0013369"] == 2  # diarrhea and dysentery
    assert per_cui["C0006803"] == 2  # two calmodulin accessions
    assert per_cui["C0011777"] == 2  # DrugBank and ChEMBL dexamethasone


def test_unmapped_nodes_stay_unmapped(result):
    mapped = set(result.table.column("spoke_identifier").to_pylist())
    for identifier in ("7124", "Q99999", "N0000175533", "C0015970x"):
        assert identifier not in mapped
    assert result.nodes["Protein"] == 4 and sum(result.nodes.values()) == 25


def test_stats_count_dropped_and_malformed_rows(result):
    files = result.stats["files"]
    assert files["mrconso"]["dropped"] == {
        "SUPPRESS=O": 1,
        "SUPPRESS=E": 1,
        "SUPPRESS=Y": 1,
        "LAT not ENG": 1,
    }
    assert files["gene_info"]["malformed"] == 1
    assert files["gene_info"]["first_malformed"].endswith(
        "Homo_sapiens.gene_info:5: expected 16 fields, found 5"
    )
    assert files["mrcui"]["dropped"] == {"DEL": 1, "RO": 2}  # RO is opt-in
    assert result.stats["rows_per_method"] == {"identity": 4, "direct": 9, "indirect": 16}


def test_retired_rows_without_a_literature_restriction_cover_every_retired_cui():
    nodes = spoke_nodes_from_dump(SPOKE / "mapping_nodes.csv", "csv")
    got = rows_of(build_mapping(nodes, full_sources()).table)
    assert RETIRED_IN_LITERATURE <= got
    # C2345678 is also a retired CUI the literature could use: it reaches Fever's Symptom node
    assert ("C2345678", "Symptom", "D005334", "indirect", "MRCUI:SY:C0015967>MRCONSO:MSH") in got
    assert not any(row[0].startswith("GENE:") for row in got)


def test_without_umls_only_identity_and_do_cuis_map():
    nodes = spoke_nodes_from_dump(SPOKE / "mapping_nodes.csv", "csv")
    out = build_mapping(nodes, MappingSources(do_xrefs=XREFS / "allXREFinDO.tsv"))
    assert set(out.table.column("source").to_pylist()) == {"identity:SideEffect.identifier", "DO:UMLS_CUI"}
    assert "no MRCONSO given" in out.stats["warning"]


def test_hetionet_sample_maps_side_effects_by_identity():
    nodes = spoke_nodes_from_dump(SPOKE / "nodes.tsv", "hetionet")
    out = build_mapping(nodes, MappingSources.from_umls_dir(UMLS, do_xrefs=XREFS / "allXREFinDO.tsv"))
    rows = rows_of(out.table)
    assert ("C0003469", "SideEffect", "C0003469", "identity", "identity:SideEffect.identifier") in rows
    assert ("C0010200", "Symptom", "D003371", "direct", "MRCONSO:MSH") in rows
    assert ("C0024530", "Disease", "DOID:12365", "indirect", "DO:UMLS_CUI") in rows  # malaria


def test_readers_of_each_format(tmp_path):
    stats = FileStats("x")
    assert read_ncit_swissprot(XREFS / "NCIt-SwissProt_Mapping.txt", {"P0DP25", "Q9C0C9"}, stats) == {
        "P0DP25": ["C16375"],
        "Q9C0C9": ["C150023"],
    }
    reversed_file = tmp_path / "src2src1.txt"
    reversed_file.write_text("From src:'2'\tTo src:'1'\nDB01234\tCHEMBL384467\n")
    found = read_unichem(reversed_file, {"CHEMBL384467"}, FileStats("y"))
    assert (found.target.name, found.ids) == ("DrugBank", {"CHEMBL384467": ["DB01234"]})
    mrcui = read_mrcui(UMLS / "MRCUI.RRF", FileStats("m"), ALL_MRCUI_RELATIONS)
    assert mrcui == {
        "C1234567": [("SY", "C0010200")],
        "C2345678": [("SY", "C0015967")],
        "C4567890": [("RO", "C0015672"), ("RO", "C1800706")],
    }
    only_merges = read_mrcui(UMLS / "MRCUI.RRF", FileStats("m"), relations=("SY",))
    assert set(only_merges) == {"C1234567", "C2345678"}
    conso = read_mrconso(UMLS / "MRCONSO.RRF", {"MSH": {"D005334", "D012711"}}, FileStats("c"))
    assert conso == {("MSH", "D005334"): {"C0015967"}, ("MSH", "D012711"): {"C0000005"}}


def test_written_parquet_and_csv_agree(result, tmp_path):
    paths = write_mapping(result.table, tmp_path)
    parquet = pq.read_table(paths["parquet"])
    assert parquet.column_names == ["cui", "spoke_label", "spoke_identifier", "method", "source"]
    assert rows_of(parquet) == rows_of(result.table)
    lines = paths["csv"].read_text().splitlines()
    assert lines[0] == '"cui","spoke_label","spoke_identifier","method","source"'
    assert len(lines) == result.table.num_rows + 1


# --- UniChem InChIKey -> DrugBank (STRUCTURE and REFERENCE table dumps) ----------------------

PREDNISOLONE_KEY, HYDROCORTISONE_KEY = "OIGNJSKKLXVSLS-VWUMJDOOSA-N", "JYGXADMDTFJGBT-VWUMJDOOSA-N"


def inchikey_sources(**others) -> MappingSources:
    return MappingSources.from_umls_dir(
        UMLS,
        unichem_structure=XREFS / "unichem_structure.tsv",
        unichem_reference=XREFS / "unichem_reference.tsv",
        **others,
    )


def test_inchikey_route_from_identifier_and_from_property():
    nodes = [
        SpokeNode("Compound", PREDNISOLONE_KEY, "prednisolone"),  # identified by its InChIKey
        SpokeNode(
            "Compound", "CHEMBL389621", "hydrocortisone", {"inchikey": f"InChIKey={HYDROCORTISONE_KEY}"}
        ),
        SpokeNode("Compound", "CHEMBL25", "aspirin", {"inchikey": "not-a-key"}),  # ignored
    ]
    out = build_mapping(nodes, inchikey_sources())
    assert rows_of(out.table) == {
        ("C0032950", "Compound", PREDNISOLONE_KEY, "indirect", "UniChem:InChIKey>DrugBank>MRCONSO:DRUGBANK"),
        (
            "C0020268",
            "Compound",
            "CHEMBL389621",
            "indirect",
            "UniChem:InChIKey(Compound.inchikey)>DrugBank>MRCONSO:DRUGBANK",
        ),
    }
    structure, reference = out.stats["files"]["unichem_structure"], out.stats["files"]["unichem_reference"]
    assert structure["used"] == 2 and structure["malformed"] == 1
    assert structure["first_malformed"].endswith(
        "unichem_structure.tsv:5: expected a numeric UCI and an InChIKey"
    )
    # the obsolete DB99999 assignment of hydrocortisone does not count; a short line is named
    assert reference["used"] == 2 and reference["dropped"] == {"ASSIGNMENT=0": 1}
    assert reference["first_malformed"].endswith(
        "unichem_reference.tsv:8: expected at least 4 fields, found 2"
    )


def test_inchikey_route_needs_both_table_dumps_with_their_columns(tmp_path):
    with pytest.raises(ValueError, match="needs both table dumps"):
        MappingSources(unichem_structure=XREFS / "unichem_structure.tsv")
    wrong = tmp_path / "structure.tsv"
    wrong.write_text("UCI\tSTANDARDINCHI\n1\tInChI=1S/x\n")
    with pytest.raises(
        ValueError, match=r"structure.tsv:1: not a UniChem STRUCTURE table dump: no column STANDARDINCHIKEY"
    ):
        read_unichem_structures(wrong, {PREDNISOLONE_KEY}, FileStats("s"))
    # a REFERENCE dump without ASSIGNMENT: every row counts as current
    no_assignment = tmp_path / "reference.tsv"
    no_assignment.write_text("UCI\tSRC_ID\tSRC_COMPOUND_ID\n7\t2\tDB00001\n7\t2\tDB00002\n7\t1\tCHEMBL7\n")
    assert read_unichem_references(no_assignment, {"7"}, FileStats("r")) == {"7": ["DB00001", "DB00002"]}


def test_cli_build_mapping_with_the_inchikey_route(tmp_path):
    from click.testing import CliRunner

    from pipeline.spoke.commands import build_mapping as build_mapping_command

    nodes = tmp_path / "nodes.csv"
    nodes.write_text(f"label,identifier,name,properties\nCompound,{PREDNISOLONE_KEY},prednisolone,\n")
    result = CliRunner().invoke(
        build_mapping_command,
        [
            "--umls-dir", str(UMLS), "--spoke-nodes", str(nodes), "--spoke-format", "csv",
            "--unichem-structure", str(XREFS / "unichem_structure.tsv"),
            "--unichem-reference", str(XREFS / "unichem_reference.tsv"),
            "--out", str(tmp_path / "out"),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert 'rows: 1 {"identity": 0, "direct": 0, "indirect": 1}' in result.output
    half = CliRunner().invoke(
        build_mapping_command,
        ["--spoke-nodes", str(nodes), "--spoke-format", "csv", "--out", str(tmp_path / "o2"),
         "--unichem-structure", str(XREFS / "unichem_structure.tsv")],
    )  # fmt: skip
    assert half.exit_code == 1 and "needs both table dumps" in half.output


# --- Anatomy and CellType: UBERON and Cell Ontology xrefs (OBO release files) ----------------

ONTOLOGY_NODES = [
    SpokeNode("Anatomy", "UBERON:0000178", "blood"),
    SpokeNode("Anatomy", "UBERON:0000948", "heart"),
    SpokeNode("Anatomy", "UBERON:0002048", "lung"),
    SpokeNode("Anatomy", "UBERON:9900001", "an obsolete term"),
    SpokeNode("CellType", "CL:0000084", "T cell"),
    SpokeNode("CellType", "CL:0000235", "macrophage"),
    SpokeNode("CellType", "CL:0000236", "B cell"),
]
ONTOLOGY_ROWS = {
    # UBERON -> UMLS: the xref is the CUI (blood's NCIT:C12434 and FMA:9670 are not in MRCONSO)
    ("C0005767", "Anatomy", "UBERON:0000178", "indirect", "uberon.obo:UMLS"),
    ("C0024109", "Anatomy", "UBERON:0002048", "indirect", "uberon.obo:UMLS"),
    # UBERON -> NCIT:C12468 -> MRCONSO SAB=NCI -> the same CUI, a second route
    ("C0024109", "Anatomy", "UBERON:0002048", "indirect", "uberon.obo:NCIT>MRCONSO:NCI"),
    # heart: FMA:7088 -> MRCONSO SAB=FMA; its NCIt line is malformed ("xref NCIT:C12727"), MESH no route
    ("C0018787", "Anatomy", "UBERON:0000948", "indirect", "uberon.obo:FMA>MRCONSO:FMA"),
    # CL -> FMA -> CUI (macrophage has only BTO and MESH xrefs: unmapped)
    ("C0039194", "CellType", "CL:0000084", "indirect", "cl.obo:FMA>MRCONSO:FMA"),
    ("C0004561", "CellType", "CL:0000236", "indirect", "cl.obo:FMA>MRCONSO:FMA"),
}


def test_ontology_routes_give_the_hand_checked_rows():
    sources = MappingSources.from_umls_dir(UMLS, uberon_obo=XREFS / "uberon.obo", cl_obo=XREFS / "cl.obo")
    out = build_mapping(ONTOLOGY_NODES, sources)
    assert rows_of(out.table) == ONTOLOGY_ROWS
    # the obsolete term's UMLS:C0225758 xref gives nothing
    assert "UBERON:9900001" not in out.table.column("spoke_identifier").to_pylist()
    uberon, cl = out.stats["files"]["uberon_obo"], out.stats["files"]["cl_obo"]
    assert uberon["dropped"] == {"obsolete term": 1}
    assert uberon["used"] == 10  # xrefs of the three current wanted terms
    assert uberon["malformed"] == 1
    assert uberon["first_malformed"].endswith(
        "uberon.obo:20: expected 'tag: value', found 'xref NCIT:C12727'"
    )
    assert (cl["used"], cl["malformed"]) == (7, 1)
    assert cl["first_malformed"].endswith("cl.obo:24: xref 'CALOHA' is not PREFIX:ID")


def test_obo_reader_reads_gzip_and_skips_other_stanzas(tmp_path):
    packed = tmp_path / "uberon-basic.obo.gz"
    packed.write_bytes(gzip.compress((XREFS / "uberon.obo").read_bytes()))
    wanted = {"UBERON:0002048", "part_of"}  # part_of is a [Typedef]: its xref is not read
    assert read_obo_xrefs(packed, wanted, FileStats("u")) == {
        "UBERON:0002048": ["FMA:7195", "NCIT:C12468", "UMLS:C0024109", "Wikipedia:Lung"]
    }
    no_id = tmp_path / "cl.obo"
    no_id.write_text(
        "format-version: 1.2\n\n[Term]\nname: nameless\nxref: FMA:1\n\n[Term]\nid: CL:1\nxref: FMA:2\n"
    )
    stats = FileStats(str(no_id))
    assert read_obo_xrefs(no_id, {"CL:1"}, stats) == {"CL:1": ["FMA:2"]}
    assert stats.first_malformed == f"{no_id}:3: [Term] without an id"


# --- Compound: UniChem ChEMBL -> RxNorm (src1src47) ------------------------------------------


def test_unichem_rxnorm_route_by_name_and_by_rxcui():
    nodes = [
        SpokeNode("Compound", "CHEMBL635", "PREDNISONE"),
        SpokeNode("Compound", "CHEMBL384467", "DEXAMETHASONE"),
        SpokeNode("Compound", "CHEMBL1384", "a name with spaces, not in MRCONSO"),
    ]
    sources = MappingSources.from_umls_dir(UMLS, unichem=[XREFS / "src1src47.txt", XREFS / "src1src2.txt"])
    out = build_mapping(nodes, sources)
    assert rows_of(out.table) == {
        # UniChem's RxNorm ids are drug names: PREDNISONE = MRCONSO RXNORM "prednisone" (8640)
        ("C0032952", "Compound", "CHEMBL635", "indirect", "UniChem:ChEMBL>RxNorm(name)>MRCONSO:RXNORM"),
        # an RXCUI (3264) is looked up as the RXNORM code
        ("C0011777", "Compound", "CHEMBL384467", "indirect", "UniChem:ChEMBL>RxNorm>MRCONSO:RXNORM"),
        # the DrugBank file in the same list keeps its own route
        ("C0032952", "Compound", "CHEMBL635", "indirect", "UniChem:ChEMBL>DrugBank>MRCONSO:DRUGBANK"),
        ("C0011777", "Compound", "CHEMBL384467", "indirect", "UniChem:ChEMBL>DrugBank>MRCONSO:DRUGBANK"),
    }
    rxnorm = out.stats["files"]["unichem[0]"]
    assert (rxnorm["lines"], rxnorm["used"], rxnorm["malformed"]) == (4, 3, 1)
    assert rxnorm["first_malformed"].endswith(
        "src1src47.txt:5: expected 2 tab-separated ids, found 'CHEMBL521'"
    )
    # the obsolete (SUPPRESS=O) RXNORM "PREDNISONE" synonym and DrugBank's suppressed "Prednisonum"
    assert out.stats["files"]["mrconso"]["dropped"] == {"SUPPRESS=O": 1, "SUPPRESS=Y": 1}
    assert read_unichem(XREFS / "src1src47.txt", {"CHEMBL1384"}, FileStats("k")).ids == {
        "CHEMBL1384": ["KANAMYCIN A SULFATE"]
    }


@pytest.mark.parametrize(
    ("name", "header", "message"),
    [
        ("src1src7.txt", "From src:'1'\tTo src:'7'", r"maps UniChem source 1 to 7; understood: "
         r"ChEMBL \(1\) to 2 \(DrugBank\), 47 \(RxNorm\)"),
        ("src2src47.txt", "From src:'2'\tTo src:'47'", "maps UniChem source 2 to 47; understood"),
        ("src1src47.txt", "From src:'1'\tTo src:'2'", "the file name says UniChem sources 1 and 47, the header 1 and 2"),
        ("mapping.txt", "ChEMBL\tRxNorm", r"expected a UniChem mapping header"),
    ],
)  # fmt: skip
def test_unknown_unichem_targets_are_refused(tmp_path, name, header, message):
    path = tmp_path / name
    path.write_text(f"{header}\nCHEMBL25\t1191\n")
    with pytest.raises(ValueError, match=f"{name}:1: {message}"):
        read_unichem(path, {"CHEMBL25"}, FileStats(str(path)))


def test_cli_build_mapping_with_ontologies_and_rxnorm(tmp_path):
    from click.testing import CliRunner

    from pipeline.spoke.commands import build_mapping as build_mapping_command

    nodes = tmp_path / "nodes.csv"
    nodes.write_text(
        "label,identifier,name,properties\n"
        + "".join(f"{n.label},{n.identifier},{n.name},\n" for n in ONTOLOGY_NODES)
        + "Compound,CHEMBL635,PREDNISONE,\n"
    )
    common = ["--umls-dir", str(UMLS), "--spoke-nodes", str(nodes), "--spoke-format", "csv"]
    result = CliRunner().invoke(
        build_mapping_command,
        [*common, "--uberon-obo", str(XREFS / "uberon.obo"), "--cl-obo", str(XREFS / "cl.obo"),
         "--unichem", str(XREFS / "src1src47.txt"), "--out", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert 'rows: 7 {"identity": 0, "direct": 0, "indirect": 7}' in result.output
    assert "uberon_obo: 1 unreadable lines, first: " in result.output
    coverage = (tmp_path / "out" / "coverage.md").read_text()
    assert "| CellType | 3 | 2 | 2 |" in coverage  # spoke_nodes, nodes_mapped, cuis_mapped
    assert "| Anatomy | indirect | uberon.obo:NCIT>MRCONSO:NCI | 1 | 1 | 1 |" in coverage
    assert "| Compound | indirect | UniChem:ChEMBL>RxNorm(name)>MRCONSO:RXNORM | 1 | 1 | 1 |" in coverage
    assert "| Organism | 0 | 0 | 0 |" in coverage  # every mappable label is listed

    wrong = tmp_path / "src1src7.txt"
    wrong.write_text("From src:'1'\tTo src:'7'\n")
    refused = CliRunner().invoke(
        build_mapping_command, [*common, "--unichem", str(wrong), "--out", str(tmp_path / "o2")]
    )
    assert refused.exit_code == 1
    assert (
        f"Error: {wrong}:1: maps UniChem source 1 to 7; understood: ChEMBL (1) to 2 (DrugBank)"
        in refused.output
    )


@pytest.mark.parametrize(
    "text,expected",
    [
        ("['MESH:D054990']", ["MESH:D054990"]),  # a Python repr, as some SPOKE exports write lists
        ('["a", "b"]', ["a", "b"]),  # JSON
        ("[1, 2.5]", [1, 2.5]),
        ("[]", []),
        ("D054990", None),  # a plain value
        ("[__import__('os')]", None),  # never code
        ("[['nested']]", None),  # only flat lists of strings and numbers
        ("[unclosed", None),
    ],
)
def test_lists_stored_as_text_are_read_back(text, expected):
    from pipeline.spoke.mapping.rules import decoded_list

    assert decoded_list(text) == expected


def test_node_values_and_obsolete_marks_whatever_the_export():
    node = SpokeNode("Disease", "DOID:1", None, {"mesh_list": "['MESH:D1', 'MESH:D2']", "vestige": "True"})
    assert node.values_of("mesh_list") == ["MESH:D1", "MESH:D2"]
    assert node.is_obsolete("vestige") and not node.is_obsolete(None)
    assert not SpokeNode("Disease", "DOID:2", None, {"vestige": "false"}).is_obsolete("vestige")
    assert SpokeNode("Disease", "DOID:3", None, {"vestige": True}).is_obsolete("vestige")


def test_typed_keys_add_the_integer_of_a_canonical_integer_only():
    from pipeline.spoke.mapping.nodes import typed_keys

    assert typed_keys(["3569", "03569", "P05231", "-7", "1e3"]) == [
        "3569",
        3569,
        "03569",
        "P05231",
        "-7",
        -7,
        "1e3",
    ]


def test_inchikeys_of_both_compound_generations():
    from pipeline.spoke.mapping.routes import inchikeys_of

    key = "XZWYZXLIPXDOLR-UHFFFAOYSA-N"
    assert inchikeys_of(SpokeNode("Compound", f"inchikey:{key}")) == [(key, "")]
    assert inchikeys_of(SpokeNode("Compound", key)) == [(key, "")]
    assert inchikeys_of(SpokeNode("Compound", "DB00331", None, {"inchikey": f"InChIKey={key}"})) == [
        (key, "(Compound.inchikey)")
    ]

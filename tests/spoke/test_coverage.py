"""Coverage counts on a small hand-made mapping and concepts table."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.builds.tables import CONCEPTS
from pipeline.spoke.coverage import compute_coverage, read_concepts, write_coverage
from pipeline.spoke.mapping.build import MAPPING
from pipeline.spoke.mapping.rules import MAPPABLE_LABELS

MAPPING_ROWS = [
    ("C0003469", "SideEffect", "C0003469", "identity", "identity:SideEffect.identifier"),
    ("C0010200", "Symptom", "D003371", "direct", "MRCONSO:MSH"),
    ("C1800706", "Disease", "DOID:0050156", "direct", "MRCONSO:MSH(Disease.mesh_list)"),
    ("C1800706", "Disease", "DOID:0050156", "indirect", "DO:UMLS_CUI"),
    ("C0013369", "Disease", "DOID:13250", "indirect", "DO:UMLS_CUI"),
    ("C0013369", "Disease", "DOID:12384", "indirect", "DO:UMLS_CUI"),
    ("C1415572", "Gene", "3569", "indirect", "gene_info:HGNC>MRCONSO:HGNC"),
    ("C1332186", "Gene", "3569", "indirect", "gene_info:HGNC>MRCONSO:HGNC"),
]
SPOKE_NODES = {"SideEffect": 3, "Symptom": 4, "Disease": 5, "Gene": 10, "Anatomy": 3}
CONCEPT_ROWS = [
    ("C0003469", "Anxiety Disorders", ["mobd"]),
    ("C0010200", "Coughing", ["sosy"]),
    ("C0013369", "Diarrhea", ["sosy", "dsyn"]),
    ("C0012854", "DNA", ["bacs", "nnon"]),
    ("C0032136", "Plasmids", ["nnon"]),
    ("C0007634", "Cells", ["cell"]),
    ("C9999999", None, []),
]


def mapping_table(rows: list[tuple[str, ...]] = MAPPING_ROWS) -> pa.Table:
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(MAPPING.names)}, schema=MAPPING)


def concepts_table() -> pa.Table:
    return pa.table({n: [r[i] for r in CONCEPT_ROWS] for i, n in enumerate(CONCEPTS.names)}, schema=CONCEPTS)


def test_counts_per_label_and_method():
    report = compute_coverage(mapping_table(), SPOKE_NODES, concepts_table())
    by = report.by_label.set_index(["label", "method"])
    assert by.loc[("Disease", "any")].tolist() == [5, 3, 2]  # spoke_nodes, nodes_mapped, cuis_mapped
    assert by.loc[("Disease", "direct")].tolist() == [5, 1, 1]
    assert by.loc[("Disease", "indirect")].tolist() == [5, 3, 2]
    assert by.loc[("Gene", "indirect")].tolist() == [10, 1, 2]
    assert by.loc[("Anatomy", "any")].tolist() == [3, 0, 0]
    assert by.loc[("SideEffect", "identity")].tolist() == [3, 1, 1]
    methods = report.by_method.set_index("method")
    assert methods.loc["any"].tolist() == [8, 6, 6]  # rows, nodes, CUIs
    assert methods.loc["indirect"].tolist() == [5, 4, 4]


def test_unmapped_concepts_counted_per_semantic_type():
    report = compute_coverage(mapping_table(), SPOKE_NODES, concepts_table())
    assert (report.concepts, report.concepts_mapped, report.concepts_unmapped) == (7, 3, 4)
    assert report.unmapped["cui"].tolist() == ["C0007634", "C0012854", "C0032136", "C9999999"]
    by = report.by_semtype.set_index("semtype")
    assert by.loc["nnon"].tolist() == [2, 0, 2]  # concepts, mapped, unmapped
    assert by.loc["sosy"].tolist() == [2, 2, 0]
    assert by.loc["dsyn"].tolist() == [1, 1, 0]
    assert by.loc["(none)"].tolist() == [1, 0, 1]
    assert report.by_semtype["semtype"].iloc[0] == "nnon"  # most unmapped first


def test_written_files(tmp_path):
    concepts_path = tmp_path / "concepts.parquet"
    pq.write_table(concepts_table(), concepts_path)
    report = compute_coverage(mapping_table(), SPOKE_NODES, read_concepts(concepts_path))
    paths = write_coverage(report, tmp_path / "out")
    text = paths["markdown"].read_text()
    assert "Literature concepts: **7**; mapped to SPOKE: **3** (42.9%); unmapped: **4**" in text
    assert "| nnon | 2 | 0 | 2 |" in text
    assert paths["unmapped"].read_text().splitlines()[1] == "C0007634,Cells,cell"
    assert (
        paths["by_label"].read_text().splitlines()[0] == "label,method,spoke_nodes,nodes_mapped,cuis_mapped"
    )


def test_without_concepts_only_spoke_side():
    report = compute_coverage(mapping_table(), SPOKE_NODES)
    assert report.concepts == 0 and report.unmapped.empty


ONTOLOGY_ROWS = [
    ("C0024109", "Anatomy", "UBERON:0002048", "indirect", "uberon.obo:UMLS"),
    ("C0024109", "Anatomy", "UBERON:0002048", "indirect", "uberon.obo:NCIT>MRCONSO:NCI"),
    ("C0018787", "Anatomy", "UBERON:0000948", "indirect", "uberon.obo:FMA>MRCONSO:FMA"),
    ("C0004561", "CellType", "CL:0000236", "indirect", "cl.obo:FMA>MRCONSO:FMA"),
]


def test_counts_per_route_and_every_mappable_label(tmp_path):
    spoke_nodes = {**SPOKE_NODES, "CellType": 2}
    report = compute_coverage(
        mapping_table(MAPPING_ROWS + ONTOLOGY_ROWS), spoke_nodes, labels=MAPPABLE_LABELS
    )
    routes = report.by_route.set_index(["label", "source"])
    # method, rows, nodes_mapped, cuis_mapped
    assert routes.loc[("Anatomy", "uberon.obo:UMLS")].tolist() == ["indirect", 1, 1, 1]
    assert routes.loc[("Anatomy", "uberon.obo:FMA>MRCONSO:FMA")].tolist() == ["indirect", 1, 1, 1]
    assert routes.loc[("CellType", "cl.obo:FMA>MRCONSO:FMA")].tolist() == ["indirect", 1, 1, 1]
    assert routes.loc[("Disease", "DO:UMLS_CUI")].tolist() == ["indirect", 3, 3, 2]
    assert routes.loc[("Gene", "gene_info:HGNC>MRCONSO:HGNC")].tolist() == ["indirect", 2, 1, 2]
    # ordered by label, then identity/direct/indirect, then route
    disease = report.by_route[report.by_route["label"] == "Disease"]
    assert disease["method"].tolist() == ["direct", "indirect"]

    by_label = report.by_label.set_index(["label", "method"])
    assert by_label.loc[("CellType", "any")].tolist() == [2, 1, 1]
    assert by_label.loc[("Anatomy", "any")].tolist() == [3, 2, 2]
    assert by_label.loc[("Organism", "any")].tolist() == [0, 0, 0]  # listed though SPOKE has none
    assert set(MAPPABLE_LABELS) <= set(report.by_label["label"]) and len(MAPPABLE_LABELS) == 13

    paths = write_coverage(report, tmp_path)
    text = paths["markdown"].read_text()
    assert "## Per SPOKE label and route" in text
    assert "| CellType | indirect | cl.obo:FMA>MRCONSO:FMA | 1 | 1 | 1 |" in text
    assert "| CellType | 2 | 1 | 1 |" in text  # per label, any method
    assert (
        paths["by_route"].read_text().splitlines()[0] == "label,method,source,rows,nodes_mapped,cuis_mapped"
    )

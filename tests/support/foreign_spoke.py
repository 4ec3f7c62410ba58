"""A "foreign SPOKE": a small graph written into Neo4j by plain Cypher, the way SPOKE's own server
holds it (2026 conventions, docs/design.md §6.6), not by litpath's loader. It has what litpath's
loader never writes:

* integer identifiers: Gene 3569 and 3574 (Entrez), Organism 9606 (NCBI Taxonomy);
* both generations of Compound identifiers: ``inchikey:...`` identifiers with an ``xrefs`` list
  (metformin: a native list; acetaminophen: the list stored as its Python text), and SPOKE v3's
  DrugBank (DB01234) and ChEMBL (CHEMBL635) identifiers;
* another list stored as a string (``Disease.mesh_list`` of idiopathic pulmonary fibrosis);
* a node with two labels (Fever, ``:Symptom:Disease``);
* obsolete nodes (``vestige``): Protein Q99999 (``true``) and Disease DOID:0001816 (``"True"``);
* a hub relationship (Organism 9606 ``ENCODES_OeP`` both proteins), as on today's SPOKE;
* uniqueness constraints on ``identifier`` (so indexes), named as SPOKE names its own.

SPOKE (``-`` one relationship; obsolete nodes in brackets)::

    DOID:0080600 COVID-19 -ASSOCIATES_DaG-> Gene 3569 -ENCODES_GeP-> P05231 <-ENCODES_OeP- Organism 9606
    Organism 9606 -ENCODES_OeP-> P13232 <-ENCODES_GeP- Gene 3574
    P05231 -INTERACTS_PiP- [Q99999] -INTERACTS_PiP- P13232
    COVID-19 -PRESENTS_DpS-> Fever (Symptom:Disease) <-TREATS_CtD- acetaminophen
    COVID-19 -RESEMBLES_DrD- DOID:0050156 IPF <-TREATS_CtD- metformin
    [DOID:0001816 angiosarcoma]

The cross-reference files (written by :func:`write_sources`) are hand-made excerpts in the real
layouts; the codes that link them are illustrative, and every row below follows from them by hand.

Literature (the co-occurrence graph; a forest, so every shortest path is unique)::

    C5203670 COVID-19 - C1415572 IL6 gene - C0021760 IL6 protein - C1415583 IL7 gene
    C5203670 COVID-19 - C0015967 Fever          C0025598 metformin - C1800706 IPF
"""

from __future__ import annotations

from pathlib import Path

import neo4j

from pipeline.spoke.mapping.build import MappingSources

METFORMIN_KEY = "XZWYZXLIPXDOLR-UHFFFAOYSA-N"
ACETAMINOPHEN_KEY = "RZVAJINKPMORJF-UHFFFAOYSA-N"
METFORMIN = f"inchikey:{METFORMIN_KEY}"
ACETAMINOPHEN = f"inchikey:{ACETAMINOPHEN_KEY}"
LABELS = ("Gene", "Protein", "Compound", "Disease", "Symptom", "Organism")

CYPHER = [
    *(
        f"CREATE CONSTRAINT spoke_{label.lower()}_identifier FOR (n:{label}) REQUIRE n.identifier IS UNIQUE"
        for label in LABELS
    ),  # fmt: skip
    """
    CREATE (covid:Disease {identifier: 'DOID:0080600', name: 'COVID-19'})
    CREATE (ipf:Disease {identifier: 'DOID:0050156', name: 'idiopathic pulmonary fibrosis',
                         mesh_list: "['MESH:D054990']"})
    CREATE (:Disease {identifier: 'DOID:0001816', name: 'angiosarcoma', vestige: 'True'})
    CREATE (fever:Symptom:Disease {identifier: 'D005334', name: 'Fever'})
    CREATE (il6:Gene {identifier: 3569, name: 'IL6'})
    CREATE (il7:Gene {identifier: 3574, name: 'IL7'})
    CREATE (p6:Protein {identifier: 'P05231', name: 'IL6_HUMAN'})
    CREATE (p7:Protein {identifier: 'P13232', name: 'IL7_HUMAN'})
    CREATE (old:Protein {identifier: 'Q99999', name: 'OLD_HUMAN', vestige: true})
    CREATE (human:Organism {identifier: 9606, name: 'Homo sapiens'})
    CREATE (metformin:Compound {identifier: $metformin, name: 'metformin',
            xrefs: ['drugbank:DB00331', 'chembl.compound:CHEMBL1431', 'pubchem.compound:4091']})
    CREATE (acetaminophen:Compound {identifier: $acetaminophen, name: 'acetaminophen',
            xrefs: "['drugbank:DB00316', 'pubchem.compound:1983']"})
    CREATE (:Compound {identifier: 'DB01234', name: 'dexamethasone'})
    CREATE (:Compound {identifier: 'CHEMBL635', name: 'PREDNISONE'})
    CREATE (covid)-[:ASSOCIATES_DaG]->(il6)
    CREATE (il6)-[:ENCODES_GeP]->(p6)
    CREATE (il7)-[:ENCODES_GeP]->(p7)
    CREATE (human)-[:ENCODES_OeP]->(p6)
    CREATE (human)-[:ENCODES_OeP]->(p7)
    CREATE (p6)-[:INTERACTS_PiP]->(old)
    CREATE (old)-[:INTERACTS_PiP]->(p7)
    CREATE (covid)-[:PRESENTS_DpS]->(fever)
    CREATE (acetaminophen)-[:TREATS_CtD]->(fever)
    CREATE (covid)-[:RESEMBLES_DrD]->(ipf)
    CREATE (metformin)-[:TREATS_CtD]->(ipf)
    """,
]


def write_foreign_spoke(driver: neo4j.Driver) -> None:
    """Empty the database, then write the graph above by plain Cypher."""
    empty_foreign_spoke(driver)
    with driver.session() as session:
        for statement in CYPHER:
            session.run(statement, metformin=METFORMIN, acetaminophen=ACETAMINOPHEN).consume()
        session.run("CALL db.awaitIndexes(60)").consume()


def empty_foreign_spoke(driver: neo4j.Driver) -> None:
    with driver.session() as session:
        session.run("MATCH (n) DETACH DELETE n").consume()
        for record in list(session.run("SHOW CONSTRAINTS YIELD name RETURN name")):
            if record["name"].startswith(("spoke_", "litpath_")):
                session.run(f"DROP CONSTRAINT `{record['name']}` IF EXISTS").consume()


def _mrconso(cui: str, sab: str, code: str, name: str, n: int) -> str:
    return f"{cui}|ENG|P|L{n:07d}|PF|S{n:07d}|Y|A{n:08d}|||{code}|{sab}|PT|{code}|{name}|0|N|256|\n"


MRCONSO_ROWS = [
    ("C0021760", "NCI", "C20568", "Interleukin-6"),
    ("C1415572", "HGNC", "HGNC:6018", "IL6 gene"),
    ("C1415583", "HGNC", "HGNC:6023", "IL7 gene"),
    ("C0025598", "DRUGBANK", "DB00331", "Metformin"),
    ("C0000970", "DRUGBANK", "DB00316", "Acetaminophen"),
    ("C0011777", "DRUGBANK", "DB01234", "Dexamethasone"),
    ("C0032952", "DRUGBANK", "DB00635", "Prednisone"),
    ("C1800706", "MSH", "D054990", "Idiopathic Pulmonary Fibrosis"),
    ("C0015967", "MSH", "D005334", "Fever"),
    ("C0086418", "NCBI", "9606", "Homo sapiens"),
    ("C9999999", "NCI", "C99999", "An obsolete protein's code"),
]


def write_sources(folder: Path) -> MappingSources:
    """The cross-reference files of the foreign SPOKE, in their real layouts."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "MRCONSO.RRF").write_text(
        "".join(_mrconso(*row, n) for n, row in enumerate(sorted(MRCONSO_ROWS)))
    )
    (folder / "allXREFinDO.tsv").write_text(
        'id\tlabel\txref\n"DOID:0080600"\t"COVID-19"\t"UMLS_CUI:C5203670"\n'
        '"DOID:0050156"\t"idiopathic pulmonary fibrosis"\t"MESH:D054990"\n'
        '"DOID:0001816"\t"angiosarcoma"\t"UMLS_CUI:C0018923"\n'
    )
    header = ("#tax_id\tGeneID\tSymbol\tLocusTag\tSynonyms\tdbXrefs\tchromosome\tmap_location\tdescription\t"
              "type_of_gene\tSymbol_from_nomenclature_authority\tFull_name_from_nomenclature_authority\t"
              "Nomenclature_status\tOther_designations\tModification_date\tFeature_type\n")  # fmt: skip
    genes = [("3569", "IL6", "HGNC:HGNC:6018"), ("3574", "IL7", "HGNC:HGNC:6023")]
    (folder / "Homo_sapiens.gene_info").write_text(
        header
        + "".join(
            f"9606\t{g}\t{s}\t-\t-\t{x}\t7\t-\t-\tprotein-coding\t{s}\t-\tO\t-\t20240101\t-\n"
            for g, s, x in genes
        )  # fmt: skip
    )
    (folder / "NCIt-SwissProt_Mapping.txt").write_text(
        "NCIt Code\tSwissProt ID\tNCIt Preferred Name\r\nC20568\tP05231\tInterleukin-6\r\n"
        "C99999\tQ99999\tAn obsolete protein\r\n"
    )
    (folder / "src1src2.txt").write_text(
        "From src:'1'\tTo src:'2'\nCHEMBL1431\tDB00331\nCHEMBL635\tDB00635\n"
    )
    (folder / "structure.tsv").write_text(
        f"UCI\tSTANDARDINCHI\tSTANDARDINCHIKEY\n101\tInChI=1S/metformin\t{METFORMIN_KEY}\n"
        f"102\tInChI=1S/acetaminophen\t{ACETAMINOPHEN_KEY}\n"
    )
    (folder / "reference.tsv").write_text(
        "UCI\tSRC_ID\tSRC_COMPOUND_ID\tASSIGNMENT\n101\t2\tDB00331\t1\n101\t1\tCHEMBL1431\t1\n102\t2\tDB00316\t1\n"
    )
    return MappingSources(
        mrconso=folder / "MRCONSO.RRF", do_xrefs=folder / "allXREFinDO.tsv",
        gene_info=folder / "Homo_sapiens.gene_info", ncit_swissprot=folder / "NCIt-SwissProt_Mapping.txt",
        unichem=[folder / "src1src2.txt"], unichem_structure=folder / "structure.tsv",
        unichem_reference=folder / "reference.tsv",
    )  # fmt: skip


LITERATURE_CUIS = {
    "C5203670",
    "C1415572",
    "C0021760",
    "C1415583",
    "C0015967",
    "C0025598",
    "C1800706",
    "GENE:3574",
}

# Every mapping row, by hand from the files above. None for Q99999 and DOID:0001816 (obsolete),
# though the NCIt-SwissProt file and the DO xrefs name them.
EXPECTED_MAPPING = {
    ("C0021760", "Protein", "P05231", "indirect", "NCIt-SwissProt>MRCONSO:NCI"),
    ("C1415572", "Gene", "3569", "indirect", "gene_info:HGNC>MRCONSO:HGNC"),  # an integer identifier
    ("C1415583", "Gene", "3574", "indirect", "gene_info:HGNC>MRCONSO:HGNC"),
    ("GENE:3574", "Gene", "3574", "identity", "identity:Gene.identifier(Entrez)"),
    ("C0086418", "Organism", "9606", "direct", "MRCONSO:NCBI"),  # an integer identifier
    # today's Compounds: DrugBank in the xrefs list (native, and stored as text), ChEMBL in it too
    ("C0025598", "Compound", METFORMIN, "direct", "MRCONSO:DRUGBANK(Compound.xrefs)"),
    ("C0025598", "Compound", METFORMIN, "indirect", "UniChem:ChEMBL>DrugBank>MRCONSO:DRUGBANK"),
    ("C0025598", "Compound", METFORMIN, "indirect", "UniChem:InChIKey>DrugBank>MRCONSO:DRUGBANK"),
    ("C0000970", "Compound", ACETAMINOPHEN, "direct", "MRCONSO:DRUGBANK(Compound.xrefs)"),
    ("C0000970", "Compound", ACETAMINOPHEN, "indirect", "UniChem:InChIKey>DrugBank>MRCONSO:DRUGBANK"),
    # SPOKE v3's Compounds
    ("C0011777", "Compound", "DB01234", "direct", "MRCONSO:DRUGBANK"),
    ("C0032952", "Compound", "CHEMBL635", "indirect", "UniChem:ChEMBL>DrugBank>MRCONSO:DRUGBANK"),
    # a mesh_list stored as text; the DO's own MeSH xref
    ("C1800706", "Disease", "DOID:0050156", "direct", "MRCONSO:MSH(Disease.mesh_list)"),
    ("C1800706", "Disease", "DOID:0050156", "indirect", "DO:MESH>MRCONSO:MSH"),
    ("C5203670", "Disease", "DOID:0080600", "indirect", "DO:UMLS_CUI"),
    # the node with two labels, reached as a Symptom (its MeSH id)
    ("C0015967", "Symptom", "D005334", "direct", "MRCONSO:MSH"),
}

COVID, IL6_GENE, IL6, IL7_GENE, FEVER = "C5203670", "C1415572", "C0021760", "C1415583", "C0015967"
METFORMIN_CUI, IPF, ANGIOSARCOMA, ACETAMINOPHEN_CUI = "C0025598", "C1800706", "C0018923", "C0000970"
LITERATURE_EDGES = [  # (a, b, weight) of the co-occurrence graph
    (COVID, IL6_GENE, 0.9), (IL6_GENE, IL6, 0.8), (IL6, IL7_GENE, 0.7), (COVID, FEVER, 0.6),
    (METFORMIN_CUI, IPF, 0.5),
]  # fmt: skip
QUERY = [COVID, IL6, IL7_GENE, METFORMIN_CUI, ANGIOSARCOMA, ACETAMINOPHEN_CUI]

# Every unordered pair of QUERY at h = 1, no relationship filter, cap 12, by hand from the pictures:
# (scenario, cause, SPOKE distance between the ends). The SPOKE distances go through the hub
# (Organism 9606), never through the obsolete Q99999; angiosarcoma's only node is obsolete.
EXPECTED_H1 = {
    (COVID, IL6): ("1", None, 2),  # DOID:0080600 -> Gene 3569 (an integer) -> P05231
    (COVID, IL7_GENE): ("2a", None, 5),  # P05231 - Gene 3574 not adjacent
    (COVID, METFORMIN_CUI): ("4", "literature-disconnected", 2),
    (COVID, ANGIOSARCOMA): ("none", "unmapped", None),
    (COVID, ACETAMINOPHEN_CUI): ("4", "literature-absent", 2),  # through Fever, a Symptom and a Disease
    (IL6, IL7_GENE): ("2b", None, 3),
    (IL6, METFORMIN_CUI): ("4", "literature-disconnected", 4),
    (IL6, ANGIOSARCOMA): ("none", "unmapped", None),
    (IL6, ACETAMINOPHEN_CUI): ("4", "literature-absent", 4),
    (IL7_GENE, METFORMIN_CUI): ("4", "literature-disconnected", 7),
    (IL7_GENE, ANGIOSARCOMA): ("none", "unmapped", None),
    (IL7_GENE, ACETAMINOPHEN_CUI): ("4", "literature-absent", 7),
    (METFORMIN_CUI, ANGIOSARCOMA): ("none", "unmapped", None),
    (METFORMIN_CUI, ACETAMINOPHEN_CUI): ("4", "literature-absent", 4),
    (ANGIOSARCOMA, ACETAMINOPHEN_CUI): ("none", "unmapped", None),
}
# h = 3: the hub joins P05231 and Gene 3574 in 3 relationships, so IL6 - IL7 gene connects; with
# ENCODES_OeP denied, only the path through the obsolete Q99999 is left, which does not count.
EXPECTED_H3_CHANGES = {(COVID, IL7_GENE): "1", (IL6, IL7_GENE): "1"}
# ... and the distances that ran through the hub: IL7 gene is cut off from everything else.
EXPECTED_DENY_HUB = {
    **{pair: value for pair, value in EXPECTED_H1.items()},
    (COVID, IL7_GENE): ("2a", None, None),
    (IL6, IL7_GENE): ("2b", None, None),
    (IL7_GENE, METFORMIN_CUI): ("none", "spoke-disconnected", None),
    (IL7_GENE, ACETAMINOPHEN_CUI): ("none", "spoke-disconnected", None),
}


def write_literature_build(results_dir: Path, build_id: str = "foreign01") -> Path:
    """A build whose two graphs are the literature forest above (scipy distances), and its
    concepts table; ``results_dir/latest`` points at it."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.builds.tables import CONCEPTS, EDGE_KINDS
    from support.comparison_world import write_graph

    build_dir = results_dir / "builds" / build_id
    (build_dir / "tables").mkdir(parents=True)
    keys = sorted({c for a, b, _ in LITERATURE_EDGES for c in (a, b)})
    write_graph(build_dir / "graph", build_dir / "distances.bp", keys, len(keys), LITERATURE_EDGES)
    write_graph(build_dir / "cooccurrence", build_dir / "cooccurrence" / "distances.bp", keys, len(keys),
                LITERATURE_EDGES)  # fmt: skip
    pq.write_table(
        pa.table(
            {"cui": keys, "name": [f"name of {k}" for k in keys], "semtypes": [["aapp"]] * len(keys)},
            schema=CONCEPTS,
        ),  # fmt: skip
        build_dir / "tables" / "concepts.parquet",
    )
    (build_dir / "build.json").write_text(
        json.dumps({"build_id": build_id, "config": {"graph": {"edge_kinds": list(EDGE_KINDS[:1])}}}) + "\n"
    )
    (results_dir / "latest").symlink_to(Path("builds") / build_id)
    return build_dir

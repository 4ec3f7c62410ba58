"""Table VI of the paper (SC22, section VIII) as a fixture: its own CUIs, its literature paths, and
the SPOKE facts its SPOKE column states.

The literature graph holds each of Table VI's Pubmed paths, as the one shortest path between its
ends (a forest)::

    C1448177 TNF - C5203670 COVID-19 - C1699239 IL7            (1)
                   C5203670 COVID-19 - G0000159 Expression - C1698754 IL6   (3a: IL7 -> IL6)
    C0027059 Myocarditis - C0042769 Virus Diseases - C0024312 Lymphopenia   (2a)
    C0021745 Interferon Type II - C0042774 Virus Replication - C0004364 Autoimmune Diseases
        - C0003469 Anxiety Disorders - C3887665 Thrombopoietin              (2b)
    C0004364 Autoimmune Diseases - C0012854 DNA - C0032136 Plasmids - C1447107 HGF   (3c: TPO -> HGF)
    C0035222 Respiratory Distress Syndrome - C0021400 Influenza - C0007634 Cells - C1171892 VEGF   (3b)

The mapping is the paper's, read off Table VI's SPOKE column (SPOKE v3 identifiers): TNF
P01375, COVID-19 DOID:0080600, IL7 P13232, IL6 P05231, myocarditis DOID:820, viral infectious
disease DOID:934, lymphopenia DOID:614, influenza DOID:8469, VEGF P15692; the rest of the mapped
concepts with the identifiers SPOKE gives them (IFNG P01579, viral genome replication GO:0019079,
autoimmune disease DOID:417, anxiety disorder DOID:2030, TPO P40225, ARDS DOID:11394, HGF
P14210). Unmapped, as in the paper: G0000159 Expression, C0007634 Cells, C0012854 DNA, C0032136
Plasmids.

SPOKE facts. From Table VI: DOID:820 - DOID:934 linked and DOID:934 - DOID:614 not (2a); none of
2b's hops linked; P13232 - DOID:0080600 - P05231 one path (3a); no edge between DOID:8469 and
P15692 (3b), while ARDS - influenza is the partial path; the collapsed 3c path not in SPOKE; and
scenario 1's path TNF - COVID-19 - IL7 in SPOKE ("Exact match"). Not from the paper (its text
extraction lost scenario 4's SPOKE path, and it names no relationship types): the types, and the
scenario 4 pair, myocarditis - COVID-19, joined by COVID-19 -ISA-> DOID:934 (standing for the
Disease Ontology's chain COVID-19 is_a coronavirus infectious disease is_a viral infectious disease).
"""

from __future__ import annotations

import neo4j

TNF, COVID, IL7, IL6, EXPRESSION = "C1448177", "C5203670", "C1699239", "C1698754", "G0000159"
MYOCARDITIS, VIRUS_DISEASES, LYMPHOPENIA = "C0027059", "C0042769", "C0024312"
IFNG, VIRUS_REPLICATION, AUTOIMMUNE, ANXIETY, TPO = "C0021745", "C0042774", "C0004364", "C0003469", "C3887665"
DNA, PLASMIDS, HGF = "C0012854", "C0032136", "C1447107"
ARDS, INFLUENZA, CELLS, VEGF = "C0035222", "C0021400", "C0007634", "C1171892"

LITERATURE_EDGES = [
    (TNF, COVID, 0.8), (COVID, IL7, 0.8), (COVID, EXPRESSION, 0.7), (EXPRESSION, IL6, 0.7),
    (MYOCARDITIS, VIRUS_DISEASES, 0.6), (VIRUS_DISEASES, LYMPHOPENIA, 0.6),
    (IFNG, VIRUS_REPLICATION, 0.5), (VIRUS_REPLICATION, AUTOIMMUNE, 0.5), (AUTOIMMUNE, ANXIETY, 0.5),
    (ANXIETY, TPO, 0.5), (AUTOIMMUNE, DNA, 0.4), (DNA, PLASMIDS, 0.4), (PLASMIDS, HGF, 0.4),
    (ARDS, INFLUENZA, 0.3), (INFLUENZA, CELLS, 0.3), (CELLS, VEGF, 0.3),
]  # fmt: skip

SPOKE_NODES = [
    ("Protein", "P01375", "TNFA_HUMAN"), ("Disease", "DOID:0080600", "COVID-19"), ("Protein", "P13232", "IL7_HUMAN"),
    ("Protein", "P05231", "IL6_HUMAN"), ("Disease", "DOID:820", "myocarditis"),
    ("Disease", "DOID:934", "viral infectious disease"), ("Disease", "DOID:614", "lymphopenia"),
    ("Protein", "P01579", "IFNG_HUMAN"), ("BiologicalProcess", "GO:0019079", "viral genome replication"),
    ("Disease", "DOID:417", "autoimmune disease"), ("Disease", "DOID:2030", "anxiety disorder"),
    ("Protein", "P40225", "TPO_HUMAN"), ("Disease", "DOID:11394", "adult respiratory distress syndrome"),
    ("Disease", "DOID:8469", "influenza"), ("Protein", "P15692", "VEGFA_HUMAN"), ("Protein", "P14210", "HGF_HUMAN"),
]  # fmt: skip
SPOKE_EDGES = [
    ("P01375", "ASSOCIATES_DaP", "DOID:0080600"),  # 1: TNF - COVID-19
    ("DOID:0080600", "ASSOCIATES_DaP", "P13232"),  # 1 and 3a: COVID-19 - IL7
    ("DOID:0080600", "ASSOCIATES_DaP", "P05231"),  # 3a: COVID-19 - IL6
    ("DOID:820", "RESEMBLES_DrD", "DOID:934"),  # 2a: the partial path
    ("DOID:11394", "RESEMBLES_DrD", "DOID:8469"),  # 3b: the partial path
    ("DOID:0080600", "ISA_DiD", "DOID:934"),  # 4 (not from the paper: see the module docstring)
]
MAPPING = [
    (TNF, "Protein", "P01375"), (COVID, "Disease", "DOID:0080600"), (IL7, "Protein", "P13232"),
    (IL6, "Protein", "P05231"), (MYOCARDITIS, "Disease", "DOID:820"), (VIRUS_DISEASES, "Disease", "DOID:934"),
    (LYMPHOPENIA, "Disease", "DOID:614"), (IFNG, "Protein", "P01579"),
    (VIRUS_REPLICATION, "BiologicalProcess", "GO:0019079"), (AUTOIMMUNE, "Disease", "DOID:417"),
    (ANXIETY, "Disease", "DOID:2030"), (TPO, "Protein", "P40225"), (ARDS, "Disease", "DOID:11394"),
    (INFLUENZA, "Disease", "DOID:8469"), (VEGF, "Protein", "P15692"), (HGF, "Protein", "P14210"),
]  # fmt: skip

# Table VI's rows: (scenario, the Pubmed path, what its SPOKE column says, as litpath writes it)
ROWS = [
    ("1", [TNF, COVID, IL7], [
        "P01375 TNFA_HUMAN (Protein) -[ASSOCIATES_DaP]-> DOID:0080600 COVID-19 (Disease)",
        "DOID:0080600 COVID-19 (Disease) -[ASSOCIATES_DaP]-> P13232 IL7_HUMAN (Protein)"]),
    ("2a", [MYOCARDITIS, VIRUS_DISEASES, LYMPHOPENIA], [
        "DOID:820 myocarditis (Disease) -[RESEMBLES_DrD]-> DOID:934 viral infectious disease (Disease)",
        f"no link between {VIRUS_DISEASES} and {LYMPHOPENIA} within 1 hop(s)"]),
    ("2b", [IFNG, VIRUS_REPLICATION, AUTOIMMUNE, ANXIETY, TPO], [
        f"no link between {IFNG} and {VIRUS_REPLICATION}", f"no link between {ANXIETY} and {TPO}"]),
    ("3a", [IL7, COVID, EXPRESSION, IL6], [
        f"after removing unmapped {EXPRESSION}:",
        "P13232 IL7_HUMAN (Protein) <-[ASSOCIATES_DaP]- DOID:0080600 COVID-19 (Disease)",
        "DOID:0080600 COVID-19 (Disease) -[ASSOCIATES_DaP]-> P05231 IL6_HUMAN (Protein)"]),
    ("3b", [ARDS, INFLUENZA, CELLS, VEGF], [
        f"after removing unmapped {CELLS}:",
        "DOID:11394 adult respiratory distress syndrome (Disease) -[RESEMBLES_DrD]-> DOID:8469 influenza (Disease)",
        f"no link between {INFLUENZA} and {VEGF} within 1 hop(s)"]),
    ("3c", [TPO, ANXIETY, AUTOIMMUNE, DNA, PLASMIDS, HGF], [
        f"after removing unmapped {DNA}, {PLASMIDS}:", f"no link between {AUTOIMMUNE} and {HGF}"]),
    ("4", [MYOCARDITIS, COVID], [
        "DOID:820 myocarditis (Disease) -[RESEMBLES_DrD]-> DOID:934 viral infectious disease (Disease) "
        "<-[ISA_DiD]- DOID:0080600 COVID-19 (Disease)"]),
]  # fmt: skip


def write_table_vi_spoke(driver: neo4j.Driver, extra_edges: list[tuple[str, str, str]] = ()) -> None:
    """Empty the database and write Table VI's SPOKE facts by plain Cypher (plus ``extra_edges``)."""
    with driver.session() as session:
        session.run("MATCH (n) DETACH DELETE n").consume()
        for label, identifier, name in SPOKE_NODES:
            session.run(
                f"CREATE (:{label} {{identifier: $id, name: $name}})", id=identifier, name=name
            ).consume()
        for a, rel, b in [*SPOKE_EDGES, *extra_edges]:
            session.run(
                f"MATCH (a {{identifier: $a}}), (b {{identifier: $b}}) CREATE (a)-[:{rel}]->(b)", a=a, b=b
            ).consume()

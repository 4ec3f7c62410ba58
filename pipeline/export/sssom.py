"""The CUI -> SPOKE mapping (``mapping/cui_spoke_mapping.parquet``) as an SSSOM TSV file.

SSSOM (Simple Standard for Sharing Ontological Mappings) TSV is a YAML metadata block, each line
commented with ``#``, then a tab-separated table with one mapping a row. What litpath writes:

metadata
    ``curie_map`` (every prefix used), ``mapping_set_id`` (a URN naming the build; litpath has
    no registered namespace), ``mapping_set_version`` (the build id), ``license`` (the UMLS
    licence: the mapping is derived from the Metathesaurus), ``mapping_date``, ``mapping_tool``.
rows
    ``subject_id`` (``UMLS:<CUI>``), ``subject_label`` (the concept's name), ``predicate_id``,
    ``object_id`` (the SPOKE node's identifier as a CURIE, :func:`object_curie`),
    ``object_category`` (its SPOKE label), ``mapping_justification``, ``comment`` (the route).

The predicate is ``skos:exactMatch`` except for a route through a retired CUI's successor that
is not a synonym (MRCUI ``RB``: ``skos:broadMatch``, ``RN``: ``skos:narrowMatch``, ``RO``:
``skos:relatedMatch``). The justification (semapv) is ``semapv:MappingChaining`` for the
indirect routes (a chain of cross-references) and ``semapv:UnspecifiedMatching`` for the
identity and direct ones (one cross-reference made by its database, by a method litpath does not
know; the SSSOM schema has no justification for a database cross-reference).
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from pathlib import Path

import pyarrow.parquet as pq

from pipeline import __version__
from pipeline.builds.layout import BuildLayout, ExportFolder
from pipeline.builds.tables import table_path

COLUMNS = (
    "subject_id", "subject_label", "predicate_id", "object_id", "object_category", "mapping_justification",
    "comment",
)  # fmt: skip
# Prefixes and their expansions (the Biolink model's prefix map, where it has them).
PREFIXES: dict[str, str] = {
    "UMLS": "http://identifiers.org/umls/",
    "DOID": "http://purl.obolibrary.org/obo/DOID_",
    "UBERON": "http://purl.obolibrary.org/obo/UBERON_",
    "CL": "http://purl.obolibrary.org/obo/CL_",
    "MESH": "http://id.nlm.nih.gov/mesh/",
    "NCBIGene": "http://identifiers.org/ncbigene/",
    "UniProtKB": "http://purl.uniprot.org/uniprot/",
    "DRUGBANK": "http://identifiers.org/drugbank/",
    "CHEMBL.COMPOUND": "http://identifiers.org/chembl.compound/",
    "INCHIKEY": "http://identifiers.org/inchikey/",
    "GO": "http://purl.obolibrary.org/obo/GO_",
    "NCBITaxon": "http://purl.obolibrary.org/obo/NCBITaxon_",
    "skos": "http://www.w3.org/2004/02/skos/core#",
    "semapv": "https://w3id.org/semapv/vocab/",
}
# How a SPOKE label's bare identifiers become CURIEs (identifiers with a prefix keep it).
LABEL_PREFIXES = {
    "Gene": "NCBIGene", "Protein": "UniProtKB", "SideEffect": "UMLS", "Symptom": "MESH", "Organism": "NCBITaxon",
}  # fmt: skip
SUCCESSOR_PREDICATES = {"RB": "skos:broadMatch", "RN": "skos:narrowMatch", "RO": "skos:relatedMatch"}
UMLS_LICENSE = (
    "https://www.nlm.nih.gov/research/umls/knowledge_sources/metathesaurus/release/license_agreement.html"
)


def object_curie(label: str, identifier: str) -> tuple[str, str, str | None]:
    """(CURIE, prefix, expansion of a prefix litpath makes up, or None) of a SPOKE node."""
    if identifier.lower().startswith("inchikey:"):
        return f"INCHIKEY:{identifier.split(':', 1)[1]}", "INCHIKEY", None
    if ":" in identifier:
        prefix = identifier.split(":", 1)[0]
        return identifier, prefix, None if prefix in PREFIXES else f"urn:litpath:spoke:{prefix}:"
    if label == "Compound":
        if re.fullmatch(r"DB\d+", identifier):
            return f"DRUGBANK:{identifier}", "DRUGBANK", None
        if re.fullmatch(r"CHEMBL\d+", identifier):
            return f"CHEMBL.COMPOUND:{identifier}", "CHEMBL.COMPOUND", None
    if label in LABEL_PREFIXES:
        prefix = LABEL_PREFIXES[label]
        return f"{prefix}:{identifier}", prefix, None
    # a label whose identifiers have no prefix we know: a local namespace of the label
    prefix = f"SPOKE.{label}"
    return f"{prefix}:{identifier}", prefix, f"urn:litpath:spoke:{label}:"


def predicate_of(route: str) -> str:
    """skos:exactMatch, or the match a retired CUI's successor relation (MRCUI RB/RN/RO) gives."""
    found = re.search(r"MRCUI:(RB|RN|RO)\b", route)
    return SUCCESSOR_PREDICATES[found.group(1)] if found else "skos:exactMatch"


def justification_of(method: str) -> str:
    # semapv has no "cross-reference" justification: a route that reuses one database
    # cross-reference (or SPOKE's use of the CUI itself) is a matching whose method we do not know
    return "semapv:MappingChaining" if method == "indirect" else "semapv:UnspecifiedMatching"


def write_sssom(build_dir: Path, folder: ExportFolder) -> int:
    """``cui_spoke_mapping.sssom.tsv`` from the build's mapping table; the mappings written.
    FileNotFoundError when the build has no mapping (``litpath build-mapping`` not run)."""
    build = BuildLayout(build_dir)
    mapping = pq.read_table(build.mapping.table).to_pylist()
    names = _concept_names(build_dir)
    rows, expansions = [], {"UMLS": PREFIXES["UMLS"], "skos": PREFIXES["skos"], "semapv": PREFIXES["semapv"]}
    for entry in sorted(
        mapping, key=lambda e: (e["cui"], e["spoke_label"], e["spoke_identifier"], e["source"])
    ):
        curie, prefix, made_up = object_curie(entry["spoke_label"], entry["spoke_identifier"])
        expansions[prefix] = PREFIXES.get(prefix, made_up)
        rows.append(
            (
                f"UMLS:{entry['cui']}",
                " ".join((names.get(entry["cui"]) or "").split()),  # one line: SSSOM/TSV is TSV
                predicate_of(entry["source"]),
                curie,
                entry["spoke_label"],
                justification_of(entry["method"]),
                f"route {entry['source']}",
            )  # fmt: skip
        )
    Path(folder.path).mkdir(parents=True, exist_ok=True)
    with folder.sssom.open("w", newline="", encoding="utf-8") as handle:
        for line in _metadata(build.build_id, expansions):
            handle.write(f"#{line}\n")
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    return len(rows)


def _metadata(build_id: str, expansions: dict[str, str]) -> list[str]:
    """The metadata block's lines (YAML, without the ``#``)."""
    import yaml

    metadata = {
        "curie_map": dict(sorted(expansions.items())),
        "mapping_set_id": f"urn:litpath:mapping:{build_id}:cui_spoke",
        "mapping_set_version": build_id,
        "mapping_set_description": f"UMLS concepts of litpath build {build_id} mapped to SPOKE nodes",
        "license": UMLS_LICENSE,
        "mapping_date": dt.date.today().isoformat(),
        "mapping_tool": f"litpath {__version__}",
    }
    return yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True, width=1000).splitlines()


def _concept_names(build_dir: Path) -> dict[str, str | None]:
    path = table_path(BuildLayout(build_dir).tables.path, "concepts")
    if path is None:
        return {}
    table = pq.read_table(path, columns=["cui", "name"])
    return dict(zip(table.column("cui").to_pylist(), table.column("name").to_pylist(), strict=True))


__all__ = ["COLUMNS", "PREFIXES", "justification_of", "object_curie", "predicate_of", "write_sssom"]

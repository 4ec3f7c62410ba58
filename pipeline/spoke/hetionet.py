"""Hetionet's metagraph: metaedge abbreviations (``GiG``, ``CtD``, ``Gr>G``) and the Neo4j names.

Hetionet (SPOKE's predecessor from the same lab) writes edges as ``source  metaedge  target``
with an abbreviation built from the kinds' and the verb's abbreviations; its Neo4j export
names each relationship type ``VERB_AbC`` (``ASSOCIATES_DaG``; the ``>`` of a directed
metaedge is dropped: ``Gr>G`` -> ``REGULATES_GrG``). A node kind's label is the kind
without spaces (``Side Effect`` -> ``SideEffect``).

The v1.0 metagraph is built in; another one can be read from a release's
``metagraph.json`` or ``metaedges.tsv`` (``describe/edges/metaedges.tsv``).
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Metaedge:
    abbreviation: str  # e.g. "DaG", "Gr>G"
    source_kind: str  # e.g. "Disease", "Side Effect"
    verb: str  # e.g. "associates"
    target_kind: str
    direction: str  # "both" or "forward"

    @property
    def rel_type(self) -> str:
        return f"{self.verb.upper()}_{self.abbreviation.replace('>', '')}"

    @property
    def source_label(self) -> str:
        return label_of_kind(self.source_kind)

    @property
    def target_label(self) -> str:
        return label_of_kind(self.target_kind)


def label_of_kind(kind: str) -> str:
    """``Side Effect`` -> ``SideEffect``: Hetionet's Neo4j labels are the kinds without spaces."""
    return kind.replace(" ", "")


# Hetionet v1.0 (hetio/hetionet hetnet/json/hetionet-v1.0-metagraph.json, CC0):
# (source kind, target kind, verb, direction) and the abbreviations of kinds and verbs.
_V1_TUPLES = [
    ("Anatomy", "Gene", "downregulates", "both"),
    ("Anatomy", "Gene", "expresses", "both"),
    ("Anatomy", "Gene", "upregulates", "both"),
    ("Compound", "Compound", "resembles", "both"),
    ("Compound", "Disease", "palliates", "both"),
    ("Compound", "Disease", "treats", "both"),
    ("Compound", "Gene", "binds", "both"),
    ("Compound", "Gene", "downregulates", "both"),
    ("Compound", "Gene", "upregulates", "both"),
    ("Compound", "Side Effect", "causes", "both"),
    ("Disease", "Anatomy", "localizes", "both"),
    ("Disease", "Disease", "resembles", "both"),
    ("Disease", "Gene", "associates", "both"),
    ("Disease", "Gene", "downregulates", "both"),
    ("Disease", "Gene", "upregulates", "both"),
    ("Disease", "Symptom", "presents", "both"),
    ("Gene", "Biological Process", "participates", "both"),
    ("Gene", "Cellular Component", "participates", "both"),
    ("Gene", "Gene", "covaries", "both"),
    ("Gene", "Gene", "interacts", "both"),
    ("Gene", "Gene", "regulates", "forward"),
    ("Gene", "Molecular Function", "participates", "both"),
    ("Gene", "Pathway", "participates", "both"),
    ("Pharmacologic Class", "Compound", "includes", "both"),
]
_V1_ABBREVIATIONS = {
    "Anatomy": "A", "Biological Process": "BP", "Cellular Component": "CC", "Compound": "C",
    "Disease": "D", "Gene": "G", "Molecular Function": "MF", "Pathway": "PW",
    "Pharmacologic Class": "PC", "Side Effect": "SE", "Symptom": "S",
    "associates": "a", "binds": "b", "causes": "c", "covaries": "c", "downregulates": "d",
    "expresses": "e", "includes": "i", "interacts": "i", "localizes": "l", "palliates": "p",
    "participates": "p", "presents": "p", "regulates": "r", "resembles": "r", "treats": "t",
    "upregulates": "u",
}  # fmt: skip


def _from_tuples(tuples: list, abbreviations: dict[str, str]) -> dict[str, Metaedge]:
    table: dict[str, Metaedge] = {}
    for source, target, verb, direction in tuples:
        arrow = ">" if direction == "forward" else ""
        abbreviation = f"{abbreviations[source]}{abbreviations[verb]}{arrow}{abbreviations[target]}"
        table[abbreviation] = Metaedge(abbreviation, source, verb, target, direction)
    return table


def hetionet_v1_metaedges() -> dict[str, Metaedge]:
    """The built-in Hetionet v1.0 metaedges, keyed by abbreviation."""
    return _from_tuples(_V1_TUPLES, _V1_ABBREVIATIONS)


def read_metagraph_json(path: str | Path) -> dict[str, Metaedge]:
    """Metaedges from a Hetionet ``metagraph.json`` (``metaedge_tuples`` + ``kind_to_abbrev``)."""
    data = json.loads(Path(path).read_text())
    try:
        return _from_tuples(data["metaedge_tuples"], data["kind_to_abbrev"])
    except (KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not a Hetionet metagraph JSON ({exc})") from None


_METAEDGE_NAME = re.compile(r"^(.+?) ([->]) (\w+) \2 (.+)$")


def read_metaedges_tsv(path: str | Path) -> dict[str, Metaedge]:
    """Metaedges from Hetionet's ``metaedges.tsv`` (``metaedge`` like ``Disease - associates - Gene``)."""
    table: dict[str, Metaedge] = {}
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        if not reader.fieldnames or not {"metaedge", "abbreviation"} <= set(reader.fieldnames):
            raise ValueError(f"{path}:1: expected columns 'metaedge' and 'abbreviation'")
        for row in reader:
            match = _METAEDGE_NAME.match(row["metaedge"] or "")
            if not match:
                raise ValueError(f"{path}:{reader.line_num}: cannot read metaedge {row['metaedge']!r}")
            source, arrow, verb, target = match.groups()
            direction = "forward" if arrow == ">" else "both"
            abbreviation = row["abbreviation"]
            table[abbreviation] = Metaedge(abbreviation, source, verb, target, direction)
    return table


def read_metaedges(path: str | Path | None) -> dict[str, Metaedge]:
    """The built-in v1.0 table when ``path`` is None, else a ``.json`` metagraph or a metaedges TSV."""
    if path is None:
        return hetionet_v1_metaedges()
    if str(path).endswith(".json"):
        return read_metagraph_json(path)
    return read_metaedges_tsv(path)

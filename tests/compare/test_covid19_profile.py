"""The documented COVID-19 profile (config/covid19.yaml): valid, a config of one's own, and the
paper's query set as the README describes it."""

from __future__ import annotations

from pathlib import Path

from pipeline.compare.spoke import EdgeCutoff, RelationshipFilter
from pipeline.config import load_config, refuse_sample_files

PROFILE = Path(__file__).resolve().parents[2] / "config" / "covid19.yaml"


def test_the_covid19_profile_is_the_papers_query_set_against_spokes_own_server():
    config = load_config(PROFILE)  # validated against the schema, defaults filled
    refuse_sample_files(config, [PROFILE])  # names no file of the bundled sample
    hood = config["compare"]["neighbourhood"]
    assert (hood["seed"], hood["seed_label"], hood["labels"]) == (
        "DOID:0080600",
        "Disease",
        ["Disease", "Protein"],
    )
    assert [EdgeCutoff.parse(c) for c in hood["cutoffs"]] == []
    assert (config["spoke"]["load"], config["spoke"]["read"], config["compare"]["graph"]) == (
        False,
        "lookup",
        "cooccurrence",
    )
    relationships = RelationshipFilter(**{k: tuple(v) for k, v in config["compare"]["relationships"].items()})
    assert "ENCODES_OeP" in relationships.deny and relationships.active
    assert config["mapping"]["mrcui_relations"] == ["SY"]

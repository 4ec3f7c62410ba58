"""The solve stage hands the plan the graph's path index record only when it is that graph's."""

from __future__ import annotations

import json
import shutil

from support.build_fixture import make_build

from pipeline.builds.layout import ResultsLayout
from pipeline.query.path_index import build_path_index
from pipeline.solve.stage import graph_size, path_index_record


def test_the_plan_gets_the_index_record_of_this_graph_only(tmp_path):
    make_build(tmp_path, n_concepts=40, n_abstracts=200, degree=6.0, distances=None, cooccurrence_distances=None)
    folder = ResultsLayout(tmp_path).build("fixture00001").graph("full").folder
    _, _, digest = graph_size(folder.graph_bp)
    assert path_index_record(folder.graph_bp, digest) is None  # no index, no record
    record = build_path_index(folder.graph_bp, folder.path_index, min_degree=6)
    assert path_index_record(folder.graph_bp, digest) is None  # an index, but no record of it
    folder.counts.write_text(json.dumps({"graph_digest": digest, "path_index": record}))
    assert path_index_record(folder.graph_bp, digest) == record
    assert path_index_record(folder.graph_bp, "0" * 16) is None  # the record is another graph's
    shutil.rmtree(folder.path_index)
    assert path_index_record(folder.graph_bp, digest) is None  # the record outlived its index
    folder.counts.write_text("{not json")
    assert path_index_record(folder.graph_bp, digest) is None

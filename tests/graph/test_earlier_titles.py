"""The titles of a patched graph's abstracts from the earlier graph (pipeline.graph.earlier.EarlierTitles)
against the documents table read whole (pipeline.graph.inputs.document_titles, the reference): the
same titles and the same count of documents off the graph, on random tables where abstracts join
the graph, leave it, have no documents row, or have a row without a title."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.builds.tables import DOCUMENTS
from pipeline.graph.earlier import EarlierTitles
from pipeline.graph.inputs import document_titles
from pipeline.graph.vertices import assign_vertex_ids, vertex_table


def _documents(tables_dir, doc_ids: list[str], rng: np.random.Generator) -> None:
    rows = len(doc_ids)
    titles = [None if rng.random() < 0.2 else f"title of {doc}" for doc in doc_ids]
    table = pa.table({
        "doc_id": doc_ids, "pmid": pa.nulls(rows, pa.int64()), "doi": pa.nulls(rows, pa.string()),
        "cord_uid": pa.nulls(rows, pa.string()), "title": titles, "abstract": pa.nulls(rows, pa.string()),
        "year": pa.nulls(rows, pa.int32()), "source": ["pubmed"] * rows, "mesh": pa.nulls(rows, pa.list_(pa.string())),
        "source_file": ["f"] * rows,
    }, schema=DOCUMENTS)  # fmt: skip
    pq.write_table(table, tables_dir / "documents.parquet", row_group_size=97)


def _earlier_graph(path, tables_dir, abstracts: list[str]) -> int:
    """A vertices file of two concepts and these abstracts, titled from the documents table as a
    build titles them; the number of documents not among them."""
    keys = pa.array(abstracts, pa.string())
    titles, isolated = document_titles(tables_dir, keys, 64)
    concepts = pa.array(["C0000002", "C0000001"])
    concept_vid, abstract_vid = assign_vertex_ids(concepts, keys)
    pq.write_table(vertex_table(concepts, pa.array(["b", "a"]), concept_vid, keys, titles, abstract_vid), path)
    return isolated


@pytest.mark.parametrize("seed", range(6))
def test_titles_from_the_earlier_graph_are_those_of_the_documents_table(tmp_path, seed):
    rng = np.random.default_rng(seed)
    universe = [f"PMID:{i}" for i in rng.choice(100_000, size=600, replace=False)]
    in_documents = [doc for doc in universe if rng.random() < 0.8]  # the others: cited, never a document
    rng.shuffle(in_documents)
    _documents(tmp_path, in_documents, rng)
    earlier = [doc for doc in universe if rng.random() < 0.6]
    now = set(earlier) if seed == 0 else set()  # seed 0: no abstract joins or leaves the graph
    if seed:
        now = {doc for doc in earlier if rng.random() < 0.9} | {doc for doc in universe if rng.random() < 0.1}
    keys = pa.array(sorted(now, key=lambda _: rng.random()), pa.string())  # any order
    isolated = _earlier_graph(tmp_path / "vertices.parquet", tmp_path, earlier)

    titles, not_vertices = EarlierTitles(tmp_path / "vertices.parquet", isolated)(tmp_path, keys)

    want_titles, want_not_vertices = document_titles(tmp_path, keys, 64)
    assert titles.to_pylist() == want_titles.to_pylist()
    assert not_vertices == want_not_vertices

"""Dense, deterministic vertex ids.

Contract (docs/design.md §5): vertex ids are ``0..n-1``; concepts first, sorted by CUI,
then abstracts, sorted by doc_id (plain code-point order of the strings, as Arrow and
Python sort them). The vertex set is every concept and every abstract that is an endpoint
of at least one edge of the selected kinds after all filters: a concept or paper without
any such edge would be an isolated vertex (infinite distance to everything) and is left
out of the graph, but counted by the build (``isolated_concepts``, ``isolated_documents``).
The same inputs and config therefore always give the same ids.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.builds.tables import VERTICES


def assign_vertex_ids(concept_keys: pa.Array, abstract_keys: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Vertex id of each concept and abstract key (unique strings, any order).

    Returns ``(concept_vid, abstract_vid)``: for each input key its vertex id, concepts in
    ``0..len(concepts)-1`` by CUI order, abstracts after them by doc_id order.
    """
    concept_keys, abstract_keys = pa.array(concept_keys, pa.string()), pa.array(abstract_keys, pa.string())
    concept_order = pc.sort_indices(concept_keys).to_numpy()
    abstract_order = pc.sort_indices(abstract_keys).to_numpy()
    concept_vid = np.empty(len(concept_keys), dtype=np.int64)
    concept_vid[concept_order] = np.arange(len(concept_keys), dtype=np.int64)
    abstract_vid = np.empty(len(abstract_keys), dtype=np.int64)
    abstract_vid[abstract_order] = np.arange(len(abstract_keys), dtype=np.int64) + len(concept_keys)
    return concept_vid, abstract_vid


def keys_in_vid_order(
    concept_keys: pa.Array, concept_vid: np.ndarray, abstract_keys: pa.Array, abstract_vid: np.ndarray
) -> pa.Array:
    """All vertex keys as one string array indexed by vid."""
    order = np.argsort(np.concatenate([concept_vid, abstract_vid]))
    keys = pa.concat_arrays([pa.array(concept_keys, pa.string()), pa.array(abstract_keys, pa.string())])
    return keys.take(pa.array(order))


def vertex_table(
    concept_keys: pa.Array,
    concept_names: pa.Array,
    concept_vid: np.ndarray,
    abstract_keys: pa.Array,
    abstract_names: pa.Array,
    abstract_vid: np.ndarray,
) -> pa.Table:
    """The ``vertices`` table (schema :data:`pipeline.builds.tables.VERTICES`) in vid order."""
    n_concepts, n_abstracts = len(concept_keys), len(abstract_keys)
    order = pa.array(np.argsort(np.concatenate([concept_vid, abstract_vid])))
    keys = pa.concat_arrays([pa.array(concept_keys, pa.string()), pa.array(abstract_keys, pa.string())]).take(
        order
    )
    names = pa.concat_arrays(
        [pa.array(concept_names, pa.string()), pa.array(abstract_names, pa.string())]
    ).take(order)
    kinds = pa.DictionaryArray.from_arrays(
        pa.array(np.r_[np.zeros(n_concepts, np.int8), np.ones(n_abstracts, np.int8)]),
        pa.array(["concept", "abstract"]),
    ).cast(pa.string())
    return pa.table(
        [pa.array(np.arange(n_concepts + n_abstracts, dtype=np.int64)), kinds, keys, names], schema=VERTICES
    )

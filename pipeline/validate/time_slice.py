"""Time-sliced validation: does a short path in the literature up to year Y foretell a connection
made after Y?

COAST motivates its shortest paths by literature-based discovery: "The paradigm for analysis is
based on examining paths in the graph and the distances between concepts [5]-[7]" (Kannan et
al., SC22, section I; [7] is MOLIERE, Sybrandt, Shtutman and Safro, KDD 2017), and "the
existence of paths in SPOKE and its non-existence in the co-occurrence graph of PubMed ...
supports the relevance of literature-based discovery" (section IX). The paper does not test
whether distances predict anything. The standard test of hypothesis-generation systems -- the
one MOLIERE and its successor AGATHA (Sybrandt et al., 2020) use, as we know them; neither is
in ../shared/papers -- cuts the literature at a year, predicts from what was published up to
it, and scores the predictions against the connections first published afterwards. litpath's
reading of that test, step by step (the functions below are named after the steps):

1. :func:`candidate_pairs` -- the concepts of the slice's graph (a build with
   ``ingest.until_year: Y``); the candidate pairs are the unordered pairs of them that are *not
   adjacent at Y* (no concept-concept edge: no predication joined them by Y). With more
   concepts than ``sources``, the pairs of ``sources`` concepts drawn at random (seeded) with
   every other concept.
2. :func:`became_adjacent` -- a candidate is *positive* when the later build (the same inputs
   and settings without the cut, or a later cut) has a concept-concept edge between the two:
   a paper after Y joined them. Every other candidate is negative. The later build must be cut
   after Y (or not at all) and have the same graph settings (:func:`check_comparable`): with
   another ``min_support``, say, "adjacent" would mean something else in the two builds.
3. :func:`slice_distances` -- each candidate's score is its shortest-path cost in the slice's
   graph (exact, Dijkstra from each source; unreachable = infinite): a shorter path is a
   stronger prediction.
4. :func:`roc_auc` -- the probability that a positive pair has a shorter path than a negative
   one, ties counting one half (the Mann-Whitney U statistic over the pairs, divided by the
   number of positive-negative pairs); 0.5 is chance.
   :func:`precision_at_k` -- the share of positives among the k candidates of smallest cost
   (ties broken by the pair's keys), beside the base rate, the share of positives among all
   candidates (what a random ranking has at every k).

The graph (``scope``) is the co-occurrence graph by default: concepts only, the graph the
comparison uses; the full graph (concepts, papers, citations) may be asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.builds.layout import BuildLayout, GraphFolder
from pipeline.config import validate_config
from pipeline.query.build import Build, open_build
from pipeline.query.graph import build_config
from pipeline.runtime.progress import Progress

PRECISION_KS = (10, 100, 1000)
DEFAULT_SOURCES = 500
# Memory for the rows of distances held at once in step 3 (sources searched together).
DISTANCE_ROWS_BYTES = 1 << 30


@dataclass(frozen=True)
class Candidates:
    """Candidate pairs as vertex ids of the slice's graph, ``first < second`` never repeated."""

    first: np.ndarray  # int64
    second: np.ndarray  # int64
    sources: np.ndarray  # the concepts whose pairs were taken (every concept when all were)
    n_concepts: int
    adjacent_pairs: int  # concept pairs already adjacent at Y among the pairs looked at


def concept_edges(graph_dir: Path) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(vertex keys by vid, src, dst) of the concept-concept edges of a graph folder."""
    folder = GraphFolder(graph_dir)
    keys = pq.read_table(folder.vertices, columns=["key"]).column("key").to_pylist()
    edges = pq.read_table(folder.edges, columns=["src", "dst", "kind"])
    concept = pc.equal(edges.column("kind"), "concept_concept")
    return (
        keys,
        pc.filter(edges.column("src"), concept).to_numpy().astype(np.int64),
        pc.filter(edges.column("dst"), concept).to_numpy().astype(np.int64),
    )


def _concept_adjacency(n: int, src: np.ndarray, dst: np.ndarray):
    """The concept-concept edges as a symmetric boolean CSR matrix (row u: u's co-occurring concepts)."""
    from scipy.sparse import csr_matrix

    rows, cols = np.concatenate([src, dst]), np.concatenate([dst, src])
    matrix = csr_matrix((np.ones(len(rows), dtype=bool), (rows, cols)), shape=(n, n))
    matrix.sort_indices()
    return matrix


def _adjacent(matrix, u: int, others: np.ndarray) -> np.ndarray:
    """True for each of ``others`` (sorted) adjacent to ``u`` in ``matrix``."""
    row = matrix.indices[matrix.indptr[u] : matrix.indptr[u + 1]]
    return np.isin(others, row, assume_unique=True)


def candidate_pairs(build: Build, scope: str, sources: int, seed: int) -> Candidates:
    """Step 1: the pairs of the slice's concepts that are not adjacent at Y."""
    graph = build.graph(scope)
    concepts = np.flatnonzero(graph.is_concept).astype(np.int64)
    if len(concepts) > sources:
        chosen = np.sort(np.random.default_rng(seed).choice(concepts, sources, replace=False))
    else:
        chosen = concepts
    _, src, dst = concept_edges(BuildLayout(build.build_dir).graph(scope).graph_dir)
    adjacency = _concept_adjacency(graph.n, src, dst)
    is_source = np.zeros(graph.n, dtype=bool)
    is_source[chosen] = True
    first, second, already = [], [], 0
    for s in chosen.tolist():
        # each unordered pair once: a pair of two sources is taken from its smaller end
        others = concepts[(concepts != s) & ~(is_source[concepts] & (concepts < s))]
        adjacent = _adjacent(adjacency, s, others)
        already += int(adjacent.sum())
        others = others[~adjacent]
        first.append(np.minimum(others, s))
        second.append(np.maximum(others, s))
    empty = np.zeros(0, np.int64)
    return Candidates(
        np.concatenate(first) if first else empty,
        np.concatenate(second) if second else empty,
        chosen,
        len(concepts),
        already,
    )


def became_adjacent(
    candidates: Candidates, slice_keys: list[str], later_build_dir: Path, scope: str
) -> np.ndarray:
    """Step 2: True for each candidate whose concepts are adjacent in the later build."""
    later_keys, src, dst = concept_edges(BuildLayout(later_build_dir).graph(scope).graph_dir)
    # each slice vertex's id in the later graph (-1: not a vertex of it, so adjacent to nothing)
    where = pc.index_in(pa.array(slice_keys, pa.string()), value_set=pa.array(later_keys, pa.string()))
    later_vid = pc.fill_null(where, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    a, b = later_vid[candidates.first], later_vid[candidates.second]
    known = (a >= 0) & (b >= 0)
    # a pair of later vertex ids as one number, smaller id first: membership by one sorted search
    n = max(len(later_keys), 1)
    edge_codes = np.minimum(src, dst) * n + np.maximum(src, dst)
    pair_codes = np.minimum(a, b) * n + np.maximum(a, b)
    return known & np.isin(pair_codes, edge_codes)


def slice_distances(
    build: Build, scope: str, candidates: Candidates, progress: Progress | None = None
) -> np.ndarray:
    """Step 3: each candidate's shortest-path cost in the slice's graph (inf when unreachable),
    by Dijkstra from each source over the graph's own costs, a few sources at a time: a row of
    distances is 8 bytes a vertex, and the full graph of a real dump has tens of millions."""
    from scipy.sparse.csgraph import dijkstra

    graph = build.graph(scope)
    cost = np.full(len(candidates.first), np.inf)
    if not len(cost):
        return cost
    matrix = graph.adjacency.to_scipy()
    position = np.full(graph.n, -1, dtype=np.int64)
    position[candidates.sources] = np.arange(len(candidates.sources))
    # one of the two ends is a source (undirected graph: d(a, b) = d(b, a))
    from_first = position[candidates.first] >= 0
    row = position[np.where(from_first, candidates.first, candidates.second)]
    target = np.where(from_first, candidates.second, candidates.first)
    by_row = np.argsort(row, kind="stable")
    bounds = np.searchsorted(row[by_row], np.arange(len(candidates.sources) + 1))
    chunk = max(1, min(64, DISTANCE_ROWS_BYTES // (8 * graph.n)))
    for start in range(0, len(candidates.sources), chunk):
        stop = min(start + chunk, len(candidates.sources))
        rows = dijkstra(matrix, directed=True, indices=candidates.sources[start:stop])
        chosen = by_row[bounds[start] : bounds[stop]]
        cost[chosen] = rows[row[chosen] - start, target[chosen]]
        if progress is not None:
            progress.advance(stop - start)
    return cost


def roc_auc(cost: np.ndarray, positive: np.ndarray) -> float | None:
    """Step 4: P(cost of a positive < cost of a negative), ties one half; None without both
    positives and negatives. From average ranks (Mann-Whitney U); infinities tie with each other."""
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    from scipy.stats import rankdata

    # a shorter path is a higher score; -inf for the unreachable, which all tie; equal scores
    # share their average rank
    ranks = rankdata(-cost, method="average")
    u = ranks[positive].sum() - n_pos * (n_pos + 1) / 2
    return float(u / (n_pos * n_neg))


def ranking(cost: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The candidates' order by cost, ties by the pair's keys: concepts' vertex ids follow their
    CUIs (vertices are numbered concepts first, by CUI), so by (first, second) vertex id."""
    return np.lexsort((second, first, cost))


def precision_at_k(order: np.ndarray, positive: np.ndarray, ks) -> dict[int, float]:
    """Step 4: the share of positives among the first k candidates of ``order``
    (:func:`ranking`); only the ks not beyond the number of candidates."""
    hits = np.cumsum(positive[order])
    return {k: float(hits[k - 1] / k) for k in ks if k <= len(order)}


def validate_slice(
    slice_build_dir: Path,
    later_build_dir: Path,
    *,
    scope: str = "cooccurrence",
    sources: int = DEFAULT_SOURCES,
    seed: int = 0,
    ks: tuple[int, ...] = PRECISION_KS,
) -> dict[str, Any]:
    """The record of the time-slice validation (steps 1-4 of the module docstring)."""
    build = open_build(slice_build_dir, on_mismatch="mark_stale", scopes=(scope,))
    try:
        until_year = _until_year(build)
        check_comparable(Path(slice_build_dir), Path(later_build_dir), until_year)
        graph = build.graph(scope)
        candidates = candidate_pairs(build, scope, sources, seed)
        positive = became_adjacent(candidates, graph.keys, Path(later_build_dir), scope)
        progress = Progress("litpath validate-slice", len(candidates.sources), "sources")
        progress.stage(f"shortest paths in the {scope} graph of {until_year}")
        cost = slice_distances(build, scope, candidates, progress)
        progress.finish(f"{len(cost):,} candidate pairs")
        reachable = np.isfinite(cost)
        auc = roc_auc(cost, positive)
        order = ranking(cost, candidates.first, candidates.second)
        precision = precision_at_k(order, positive, ks)
        top = order[:10].tolist()
        return {
            "until_year": until_year,
            "slice_build": build.build_id,
            "later_build": Path(later_build_dir).resolve().name,
            "later_until_year": _until_year_of(Path(later_build_dir)),
            "graph": scope,
            "method": {
                "candidates": "concept pairs of the slice's graph not adjacent at the cut year",
                "positive": "adjacent (a concept-concept edge) in the later build",
                "score": "shortest-path cost in the slice's graph; shorter ranks higher",
                "roc_auc": "Mann-Whitney U / (positives x negatives), ties one half",
                "precision_at_k": "positives among the k candidates of smallest cost, ties by keys",
                "sources": "all concepts"
                if len(candidates.sources) == candidates.n_concepts
                else f"{len(candidates.sources)} concepts drawn with seed {seed}, paired with every concept",
            },
            "concepts": candidates.n_concepts,
            "sources": len(candidates.sources),
            "adjacent_at_year": candidates.adjacent_pairs,
            "candidates": len(cost),
            "reachable_candidates": int(reachable.sum()),
            "positives": int(positive.sum()),
            "positives_reachable": int((positive & reachable).sum()),
            "base_rate": float(positive.mean()) if len(positive) else None,
            "roc_auc": auc,
            "precision_at_k": {str(k): v for k, v in precision.items()},
            "positive_cost_median": _median(cost[positive]),
            "negative_cost_median": _median(cost[~positive]),
            "top_candidates": [
                {
                    "source": graph.keys[int(candidates.first[i])],
                    "source_name": graph.names[int(candidates.first[i])],
                    "target": graph.keys[int(candidates.second[i])],
                    "target_name": graph.names[int(candidates.second[i])],
                    "cost": float(cost[i]),
                    "became_adjacent": bool(positive[i]),
                }
                for i in top
            ],
            "roc_curve": _roc_curve(cost, positive),
        }
    finally:
        build.close()


def _median(values: np.ndarray) -> float | None:
    finite = values[np.isfinite(values)]
    return float(np.median(finite)) if len(finite) else None


def _roc_curve(cost: np.ndarray, positive: np.ndarray, points: int = 101) -> dict[str, list[float]]:
    """(false positive rate, true positive rate) at up to ``points`` cost thresholds."""
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if not n_pos or not n_neg:
        return {"fpr": [], "tpr": []}
    finite = np.unique(cost[np.isfinite(cost)])
    thresholds = finite if len(finite) <= points else np.quantile(finite, np.linspace(0, 1, points))
    fpr, tpr = [0.0], [0.0]
    for threshold in thresholds:
        chosen = cost <= threshold
        fpr.append(float((chosen & ~positive).sum() / n_neg))
        tpr.append(float((chosen & positive).sum() / n_pos))
    fpr.append(1.0)
    tpr.append(1.0)
    return {"fpr": fpr, "tpr": tpr}


def _until_year(build: Build) -> int:
    year = _until_year_of(build.build_dir)
    if year is None:
        raise ValueError(
            f"build {build.build_id} is not a time slice: its config.yaml has no ingest.until_year "
            "(build it with ingest.until_year: <year>)"
        )
    return year


def _until_year_of(build_dir: Path) -> int | None:
    year = (build_config(build_dir).get("ingest") or {}).get("until_year")
    return None if year is None else int(year)


def check_comparable(slice_build_dir: Path, later_build_dir: Path, until_year: int) -> None:
    """ValueError unless the later build holds later literature built the same way: a cut after
    the slice's (or none), and the same graph settings (else adjacency means another thing)."""
    later_year = _until_year_of(later_build_dir)
    if later_year is not None and later_year <= until_year:
        raise ValueError(
            f"{later_build_dir}: the later build is cut at {later_year}, not after the slice's {until_year}"
        )
    # completed from the schema's defaults: a build recorded before a graph key existed has its default
    mine, theirs = (
        validate_config({"graph": build_config(folder).get("graph") or {}})["graph"]
        for folder in (slice_build_dir, later_build_dir)
    )
    differ = sorted(key for key in {*mine, *theirs} if mine.get(key) != theirs.get(key))
    if differ:
        raise ValueError(
            f"{later_build_dir}: its graph settings differ from the slice's ({', '.join(f'graph.{k}' for k in differ)}); "
            "build both with the same settings"
        )


__all__ = [
    "Candidates", "became_adjacent", "candidate_pairs", "concept_edges", "precision_at_k", "ranking", "roc_auc",
    "slice_distances", "validate_slice",
]  # fmt: skip

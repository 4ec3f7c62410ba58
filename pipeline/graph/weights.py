"""The three edge weights of the literature graph and the cost derived from them.

This module is the one place where the seed paper's formulas (COAST, SC22, section III-C
and appendix XI-D) are written down. Every function is vectorized over numpy arrays of
already-aggregated counts; the counting itself (what is a predication, what is a
citation relation) happens in :mod:`pipeline.graph.edges`, and its interpretation is
stated here, next to the formula that consumes it.

Weights lie in (0, 1]; the shortest-path cost is ``-log(weight) >= 0`` (float32), so a
strong relation is a short hop.
"""

from __future__ import annotations

import numpy as np

# Recorded in graph.bp and graph_counts.json: changing any formula below changes this name.
WEIGHT_SCHEME = (
    "coast-sc22-v1: concept_concept=jaccard over predications; "
    "concept_abstract=mentions(c,p)/mentions(p); abstract_abstract=1/(N(p1)+N(p2)); cost=-log(weight)"
)


def cooccurrence_weight(pair_predications, predications_a, predications_b) -> np.ndarray:
    """Concept--concept weight: Jaccard similarity of the two concepts' predication sets.

    ``|P(a) & P(b)| / |P(a) | P(b)| = together / (n(a) + n(b) - together)`` where

    * ``pair_predications`` -- number of distinct predications whose (subject, object)
      argument pair is {a, b}, in either direction ("appear together");
    * ``predications_a`` / ``predications_b`` -- number of distinct predications in which
      the concept appears as subject or object ("either appears").

    Predications whose subject equals their object carry no co-occurrence and are
    removed before counting (so they count in neither the numerator nor ``n(c)``), as are
    rows removed by the build filters (novelty, excluded semantic types). A weight of 1
    means the two concepts never appear in a predication without each other.
    """
    together = np.asarray(pair_predications, dtype=np.float64)
    union = (
        np.asarray(predications_a, dtype=np.float64) + np.asarray(predications_b, dtype=np.float64) - together
    )
    if np.any(together <= 0) or np.any(union < together):
        raise ValueError("co-occurrence counts must satisfy 0 < together <= n(a) + n(b) - together")
    return together / union


def occurrence_weight(mentions_in_abstract, all_mentions_in_abstract) -> np.ndarray:
    """Concept--abstract weight: share of the abstract's concept mentions that are concept c.

    ``mentions(c, p) / sum over c' of mentions(c', p)``, the denominator summed over all
    concepts kept in the graph (mentions of concepts dropped by ``exclude_semtypes`` are
    removed first, so the weights of one abstract sum to 1).
    """
    mentions = np.asarray(mentions_in_abstract, dtype=np.float64)
    total = np.asarray(all_mentions_in_abstract, dtype=np.float64)
    if np.any(mentions <= 0) or np.any(total < mentions):
        raise ValueError("occurrence counts must satisfy 0 < mentions(c, p) <= mentions(p)")
    return mentions / total


def citation_weight(citation_relations_a, citation_relations_b) -> np.ndarray:
    """Abstract--abstract weight: ``1 / (N(p1) + N(p2))``.

    Citations are undirected: "p1 cites p2" and "p2 cites p1" are one relation {p1, p2},
    and self-citations are dropped. ``N(p)`` is the number of distinct papers p shares a
    citation relation with (its degree in the undirected citation graph, citing and cited
    together), so each endpoint has ``N >= 1`` and the weight is at most 1/2.
    """
    n_a = np.asarray(citation_relations_a, dtype=np.float64)
    n_b = np.asarray(citation_relations_b, dtype=np.float64)
    if np.any(n_a < 1) or np.any(n_b < 1):
        raise ValueError("every endpoint of a citation relation has N(p) >= 1")
    return 1.0 / (n_a + n_b)


def cost_from_weight(weight) -> np.ndarray:
    """Shortest-path cost ``-log(weight)`` as float32, >= 0 (weight 1 gives cost 0, never -0)."""
    w = np.asarray(weight, dtype=np.float64)
    if np.any(~(w > 0)) or np.any(w > 1):
        raise ValueError("weights must lie in (0, 1]")
    cost = (-np.log(w)).astype(np.float32)
    np.maximum(cost, np.float32(0.0), out=cost)  # also turns -0.0 into 0.0
    return cost

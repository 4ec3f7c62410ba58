"""Request and response models of the /v1 API (separate from the domain objects)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints

from services.api.settings import MAX_BATCH_CAP

# A concept (UMLS CUI or GENE:<entrez>) or a document (PMID:<digits> or CORD:<cord_uid>).
# ASCII digits only ([0-9], not \d, which also matches other scripts' digits).
KEY_PATTERN = r"^(C[0-9]{7}|GENE:[0-9]{1,12}|PMID:[0-9]{1,12}|CORD:[A-Za-z0-9_-]{1,40})$"
CUI_PATTERN = r"^(C[0-9]{7}|GENE:[0-9]{1,12})$"
GraphName = Literal["full", "cooccurrence"]
DistancesSource = Literal["stored", "on-demand"]
GRAPH_DESCRIPTION = (
    "The build's graph to answer on: full (concepts, abstracts, citations) or cooccurrence "
    "(concepts and concept-concept edges only, the graph the SPOKE comparison uses)"
)
DISTANCES_DESCRIPTION = (
    "Where the distances came from: stored (the build's distances.bp, dense or rows covering the query) "
    "or on-demand (an exact bidirectional Dijkstra on the graph)"
)
VertexKey = Annotated[str, StringConstraints(pattern=KEY_PATTERN)]
ConceptKey = Annotated[str, StringConstraints(pattern=CUI_PATTERN)]


class ErrorInfo(BaseModel):
    code: str
    message: str
    detail: object | None = None


class ErrorOut(BaseModel):
    """The one error shape of every non-2xx response."""

    error: ErrorInfo


class HealthOut(BaseModel):
    status: Literal["ok"] = "ok"
    version: str


class Check(BaseModel):
    ok: bool
    message: str


class ReadyOut(BaseModel):
    ready: bool
    build_id: str | None
    checks: dict[str, Check]


class VertexOut(BaseModel):
    key: str
    kind: Literal["concept", "abstract"]
    name: str | None
    vid: int


class ConceptOut(BaseModel):
    cui: str
    name: str | None
    semtypes: list[str]
    vid: int | None = Field(
        description="Vertex id in this build's graph; null when the concept is not in the graph"
    )
    in_graph: bool


class ConceptPage(BaseModel):
    items: list[ConceptOut]
    total: int
    limit: int
    offset: int
    next_offset: int | None


class DistanceOut(BaseModel):
    build_id: str
    graph: GraphName = Field(description=GRAPH_DESCRIPTION)
    distances: DistancesSource = Field(description=DISTANCES_DESCRIPTION)
    source: VertexOut
    target: VertexOut
    reachable: bool
    distance: float | None = Field(
        description="Shortest-path cost (sum of -log weights); null when unreachable"
    )


class PredicateCountOut(BaseModel):
    predicate: str = Field(description="SemMedDB predicate; negations (NEG_TREATS) are their own")
    count: int = Field(description="Distinct predications with this predicate joining the hop's two concepts")


class SentenceOut(BaseModel):
    text: str | None = Field(description="The sentence, capped at 500 characters (an ellipsis marks a cut); "
                             "null when the build kept no text for it")  # fmt: skip
    pmid: int | None
    year: int | None = Field(description="The paper's publication year; null when unknown")
    predicate: str
    subject: str = Field(description="The concept that is the predication's subject (which way the predicate reads)")
    sentence_id: int = Field(description="SemMedDB SENTENCE_ID")


class HopOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    from_: str = Field(alias="from")
    to: str
    cost: float
    weight: float
    edge_kind: Literal["concept_concept", "concept_abstract", "abstract_abstract"]
    documents: list[str] | None = Field(
        description="Supporting document ids: the evidence store's documents for a concept-concept hop "
        "(null when the store is not configured or unavailable), the abstract for a concept-abstract hop, "
        "both papers for a citation hop"
    )
    n_predications: int | None = None
    predicates: list[PredicateCountOut] | None = Field(
        None,
        description="A concept-concept hop's predicates (TREATS, NEG_TREATS, ...; both directions) with the "
        "distinct predications of each, most first; a concept-abstract hop's, those of its paper naming the "
        "concept; null when the store is unavailable, and for a citation hop",
    )
    sentences: list[SentenceOut] | None = Field(
        None,
        description="Up to evidence.sentences_per_hop sentences the hop's predications were read from, most "
        "recent year first (then PMID, sentence id; a concept-abstract hop's paper's by sentence id); null as "
        "for predicates",
    )


class TiesOut(BaseModel):
    count: int = Field(description="Distinct loopless paths of the shortest cost; 0 when unreachable")
    saturated: bool = Field(
        description="True when count is a lower bound: it reached 2**63 - 1, or the enumeration of paths "
        "across zero-cost edges reached its work bound (solver/core/sssp_k_paths.hpp)"
    )


class AlternativeOut(BaseModel):
    rank: int = Field(description="1 for the cheapest")
    total_cost: float = Field(description="Sum of the hop costs (float64, in path order)")
    vertices: list[VertexOut]
    hops: list[HopOut]


class PathOut(BaseModel):
    build_id: str
    graph: GraphName = Field(description=GRAPH_DESCRIPTION)
    distances: DistancesSource = Field(description=DISTANCES_DESCRIPTION)
    source: str
    target: str
    reachable: bool
    vertices: list[VertexOut]
    hops: list[HopOut]
    total_cost: float | None = Field(description="Sum of the hop costs (float64)")
    stored_distance: float | None = Field(
        description="D[source, target]: from distances.bp when stored, else the distance the search found"
    )
    method: Literal["walk", "dijkstra", "bidirectional-dijkstra", "none"] = Field(
        description="walk: over tight edges of a stored row; dijkstra: exact search replacing a walk that drifted; "
        "bidirectional-dijkstra: on demand; none: unreachable"
    )
    ties: TiesOut | None = Field(
        None,
        description="How many distinct loopless paths share the shortest cost (on the filtered graph when "
        "include_types or exclude_types is given); null when counting took longer than LITPATH_TIE_COUNT_S",
    )
    alternatives: list[AlternativeOut] | None = Field(
        None,
        description="With k > 1 or a type filter: the k shortest loopless paths, cheapest first (Yen's "
        "algorithm, on demand); the top-level path is the first of them. Null otherwise",
    )


class PairIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: VertexKey
    target: VertexKey


class PathsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # max_length: the ceiling of LITPATH_BATCH_CAP, checked while parsing; the configured cap is
    # checked after, and is what the served OpenAPI document states as maxItems.
    pairs: list[PairIn] = Field(
        min_length=1, max_length=MAX_BATCH_CAP, description="At most LITPATH_BATCH_CAP pairs"
    )
    evidence: StrictBool = Field(True, description="Look up supporting documents for concept-concept hops")
    graph: GraphName = Field("full", description=GRAPH_DESCRIPTION)


class PathsItem(BaseModel):
    source: str
    target: str
    path: PathOut | None
    error: ErrorInfo | None


class PathsOut(BaseModel):
    build_id: str
    graph: GraphName = Field(description=GRAPH_DESCRIPTION)
    results: list[PathsItem]


class NeighborOut(BaseModel):
    key: str
    name: str | None
    vid: int
    distance: float


class NeighborsOut(BaseModel):
    build_id: str
    graph: GraphName = Field(description=GRAPH_DESCRIPTION)
    distances: DistancesSource = Field(description=DISTANCES_DESCRIPTION)
    key: str
    k: int
    neighbors: list[NeighborOut]


# ---------------------------------------------------------------------------------- comparison

MAX_PATH_CONCEPTS = 100
# The scenarios of pipeline.compare.classify (SCENARIOS), as the paper numbers them.
Scenario = Literal["1", "2a", "2b", "3a", "3b", "3c", "4", "none"]
# SPOKE identifiers are strings for most node types and integers for some (e.g. Entrez genes).
SpokeIdentifier = str | int
# Why a pair is scenario 4 or none (pipeline.compare.classify.CAUSES).
Cause = Literal["literature-disconnected", "literature-absent", "unmapped", "spoke-disconnected"]


class SpokeRelationshipFilterOut(BaseModel):
    allow: list[str] = Field(description="Only these relationship types (empty: see deny)")
    deny: list[str] = Field(description="Every type but these (empty with allow empty: every type)")


class ComparePathIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    concepts: list[ConceptKey] = Field(
        min_length=2, max_length=MAX_PATH_CONCEPTS, description="A path as CUIs, in order (repeats allowed)"
    )
    hops: int = Field(1, ge=1, le=4, description="SPOKE hop limit h")
    evidence: StrictBool = Field(True, description="Look up supporting documents of each hop")
    graph: GraphName = Field("cooccurrence", description=GRAPH_DESCRIPTION + "; its edges give the hops' costs")


class SpokeNodeOut(BaseModel):
    # Nodes come from Neo4j: one without a label or an identifier property gives null.
    label: str | None
    identifier: SpokeIdentifier | None
    name: str | None


class MappedNodeOut(SpokeNodeOut):
    method: str | None = Field(description="How the mapping joined the CUI to this node")


class SpokeRelationshipOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    type: str
    from_: SpokeIdentifier | None = Field(alias="from", description="Identifier of the relationship's start node")
    to: SpokeIdentifier | None = Field(description="Identifier of the relationship's end node")
    forward: bool = Field(description="Whether it points from the path's previous node to its next")


class SpokeHopOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    from_: str = Field(alias="from")
    to: str
    skipped: list[str] = Field(description="Unmapped concepts of the path collapsed out between from and to")
    connected: bool = Field(description="Whether SPOKE joins the two concepts within the hop limit")
    hops: int = Field(description="The hop limit the answer holds for")
    length: int | None = Field(description="Relationships on the SPOKE path found (0: one shared node)")
    nodes: list[SpokeNodeOut]
    relationships: list[SpokeRelationshipOut]


class SpokeLinkOut(BaseModel):
    connected: bool
    hops: int
    length: int | None
    nodes: list[SpokeNodeOut]
    relationships: list[SpokeRelationshipOut]


class LiteratureHopOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    from_: str = Field(alias="from")
    to: str
    cost: float | None = Field(description="Cost of the hop in the literature graph; null when it is no edge of it")
    via: list[str] = Field(description="Abstracts between the two concepts (full graph)")
    documents: list[str] | None = Field(description="Supporting documents; null when unknown")
    n_predications: int | None
    predicates: list[PredicateCountOut] | None = Field(
        None, description="A direct hop's predicates with their counts, as in /v1/path; null when unknown or via abstracts"
    )
    sentences: list[SentenceOut] | None = Field(
        None, description="A direct hop's quoted sentences, as in /v1/path; null when unknown or via abstracts"
    )


class LiteratureOut(BaseModel):
    reachable: bool
    in_graph: bool = Field(description="Whether both ends are vertices of the literature graph")
    vertices: list[str]
    total_cost: float | None
    consistent: bool
    hops: list[LiteratureHopOut]
    evidence_status: str = Field(description="ok, or why the hops' documents are unknown")
    shortest_paths: int | None = Field(
        None,
        description="Distinct shortest literature paths between the ends (more than 1: ties, of which one "
        "is classified); null when not counted (the service does not count them)",
    )


class CompareOut(BaseModel):
    build_id: str | None
    graph: GraphName = Field(description=GRAPH_DESCRIPTION)
    source: str
    target: str
    scenario: Scenario
    description: str
    hop_limit: int
    concepts: list[str]
    mapped: dict[str, list[MappedNodeOut]] = Field(description="Each mapped concept's SPOKE nodes present in Neo4j")
    unmapped: list[str]
    spoke_hops: list[SpokeHopOut]
    n_connected: int
    literature: LiteratureOut | None
    pair_link: SpokeLinkOut | None = Field(description="Scenario 4 and none: the pair's own SPOKE link")
    spoke_walk: list[SpokeNodeOut] | None = Field(
        description="Scenarios 1 and 3a: the one SPOKE node per mapped concept the path runs through"
    )
    cause: Cause | None = Field(
        None,
        description="Scenario 4: literature-disconnected (both ends in the literature graph) or "
        "literature-absent (an end is not); none: unmapped (an end maps to no SPOKE node) or spoke-disconnected",
    )
    literature_cause: Literal["disconnected", "absent"] | None = Field(
        None, description="Why the literature has no path: the graph does not connect the ends, or lacks one"
    )
    spoke_distance: int | None = Field(
        None, description="SPOKE relationships between the two ends (within the scenario-4 cap); null: not joined"
    )
    walk_length: int | None = Field(None, description="Scenarios 1 and 3a: relationships of the SPOKE walk")
    shortest_in_spoke: bool | None = Field(
        None, description="Whether the (collapsed) literature path is a shortest SPOKE path between its ends"
    )
    scenario_strict: Scenario | None = Field(
        None,
        description="The scenario under the shortest-path reading of 'found in the SPOKE shortest paths' "
        "(1 becomes 2a and 3a becomes 3b when SPOKE joins the ends more directly)",
    )
    relationships: SpokeRelationshipFilterOut | None = Field(
        None, description="The SPOKE relationship types the comparison followed"
    )
    notes: list[str]
    neo4j_round_trips: int

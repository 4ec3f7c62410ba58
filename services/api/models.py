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

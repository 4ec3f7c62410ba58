"""A build's graphs as KGX TSV: the interchange format of the Biolink knowledge-graph community.

KGX TSV (the ``kgx`` library's "tsv" format) is a pair of tab-separated files, ``*_nodes.tsv``
and ``*_edges.tsv``, with a header row; a multivalued field is written with ``|`` between its
values. What litpath writes:

nodes
    ``id`` (a CURIE: ``UMLS:<CUI>`` for a concept, ``NCBIGene:<id>`` for SemMedDB's gene
    arguments without a CUI (``GENE:<id>``), ``PMID:<n>`` for a PubMed paper, a CORD-19
    paper without a PubMed id keeps its ``CORD:<uid>``), ``category`` (Biolink classes: from the
    concept's UMLS semantic types by :data:`SEMTYPE_CATEGORIES`, ``biolink:NamedThing`` when none
    matches; ``biolink:Publication`` for a paper), ``name``, ``provided_by``.
edges
    ``id``, ``subject``, ``predicate``, ``object``, ``category``, ``knowledge_level``,
    ``agent_type``, ``primary_knowledge_source``, ``aggregator_knowledge_source`` (the slots
    Biolink 4 asks of every association), and litpath's own ``weight``, ``cost`` (= -ln weight,
    the edge's length in every path litpath reports) and counts:

    * concept-concept: ``biolink:occurs_together_in_literature_with`` (symmetric); counts
      ``n_predications`` (SemMedDB predications of the pair, either direction) and
      ``n_papers`` (the papers they come from); source ``infores:semmeddb``.
    * concept-abstract: ``<paper> biolink:mentions <concept>``; count ``n_mentions`` (the
      mentions behind the weight); source ``infores:semmeddb``.
    * abstract-abstract: a citation, ``biolink:related_to`` (Biolink has no citation predicate
      between publications that we could confirm, so the most general one, which is symmetric:
      the graph's edges are undirected, subject the lower vertex id, so which paper cites which
      is not kept); source ``infores:pubmed``.

    Knowledge level and agent type (Biolink 4's enumerations): ``text_co_occurrence`` by a
    ``text_mining_agent`` for concept-concept edges (SemRep's output counted by litpath);
    ``observation`` for a mention (``text_mining_agent``) and a citation (``not_provided``:
    the reference lists' makers are not recorded). Every edge has
    ``aggregator_knowledge_source: infores:litpath`` (litpath is not a registered information
    resource: the id names the aggregator, and is not in the infores registry).

Rows are written in vertex-id order, batch by batch; the counts of the pairs are computed from
the build's tables (``predications``, ``mentions``), which are read whole for it (a few columns).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.builds.layout import BuildLayout, ExportFolder
from pipeline.builds.tables import table_path
from pipeline.runtime.progress import Progress

# UMLS semantic type (SemMedDB's abbreviations) -> Biolink class. A concept takes the classes of
# all its semantic types; the order here is the order they are written in.
SEMTYPE_CATEGORIES: dict[str, str] = {
    "dsyn": "biolink:Disease", "neop": "biolink:Disease", "mobd": "biolink:Disease",
    "cgab": "biolink:Disease", "acab": "biolink:Disease", "anab": "biolink:Disease",
    "patf": "biolink:PathologicalProcess", "comd": "biolink:Disease", "emod": "biolink:Disease",
    "sosy": "biolink:PhenotypicFeature", "fndg": "biolink:PhenotypicFeature",
    "inpo": "biolink:Disease",
    "gngm": "biolink:Gene", "nusq": "biolink:NucleicAcidEntity",
    "aapp": "biolink:Protein", "enzy": "biolink:Protein", "rcpt": "biolink:Protein",
    "imft": "biolink:Protein", "bacs": "biolink:ChemicalEntity", "horm": "biolink:ChemicalEntity",
    "phsu": "biolink:Drug", "clnd": "biolink:Drug", "antb": "biolink:Drug", "vita": "biolink:ChemicalEntity",
    "orch": "biolink:ChemicalEntity", "inch": "biolink:ChemicalEntity", "chem": "biolink:ChemicalEntity",
    "chvf": "biolink:ChemicalEntity", "chvs": "biolink:ChemicalEntity", "elii": "biolink:ChemicalEntity",
    "hops": "biolink:ChemicalEntity", "nnon": "biolink:ChemicalEntity", "irda": "biolink:ChemicalEntity",
    "bpoc": "biolink:AnatomicalEntity", "blor": "biolink:AnatomicalEntity", "bsoj": "biolink:AnatomicalEntity",
    "tisu": "biolink:AnatomicalEntity", "bdsu": "biolink:AnatomicalEntity", "emst": "biolink:AnatomicalEntity",
    "anst": "biolink:AnatomicalEntity", "ffas": "biolink:AnatomicalEntity",
    "cell": "biolink:Cell", "celc": "biolink:CellularComponent",
    "celf": "biolink:BiologicalProcess", "biof": "biolink:BiologicalProcess",
    "phsf": "biolink:PhysiologicalProcess", "orgf": "biolink:PhysiologicalProcess",
    "ortf": "biolink:PhysiologicalProcess", "genf": "biolink:BiologicalProcess",
    "moft": "biolink:BiologicalProcess", "menp": "biolink:BiologicalProcess",
    "bact": "biolink:OrganismTaxon", "virs": "biolink:OrganismTaxon", "fngs": "biolink:OrganismTaxon",
    "euka": "biolink:OrganismTaxon", "orgm": "biolink:OrganismTaxon", "mamm": "biolink:OrganismTaxon",
    "humn": "biolink:OrganismTaxon", "anim": "biolink:OrganismTaxon", "plnt": "biolink:OrganismTaxon",
    "arch": "biolink:OrganismTaxon", "vtbt": "biolink:OrganismTaxon",
    "topp": "biolink:Procedure", "diap": "biolink:Procedure", "lbpr": "biolink:Procedure",
    "lbtr": "biolink:ClinicalFinding", "mbrt": "biolink:Procedure",
    "medd": "biolink:Device", "drdd": "biolink:Device",
}  # fmt: skip
NAMED_THING = "biolink:NamedThing"
PUBLICATION = "biolink:Publication"

NODE_COLUMNS = ("id", "category", "name", "provided_by")
EDGE_COLUMNS = (
    "id", "subject", "predicate", "object", "category", "knowledge_level", "agent_type",
    "primary_knowledge_source", "aggregator_knowledge_source", "weight", "cost",
    "n_predications", "n_papers", "n_mentions",
)  # fmt: skip
AGGREGATOR = "infores:litpath"
# Edge kind -> (predicate, knowledge level, agent type, primary knowledge source); concept_abstract
# edges are written paper first. Knowledge levels (Biolink's KnowledgeLevelEnum): two concepts
# whose mentions occur together in papers are "text_co_occurrence"; that a paper mentions a
# concept (SemRep's reading of it) or cites another is an "observation" of the record.
EDGE_KINDS: dict[str, tuple[str, str, str, str]] = {
    "concept_concept": (
        "biolink:occurs_together_in_literature_with", "text_co_occurrence", "text_mining_agent", "infores:semmeddb",
    ),
    "concept_abstract": ("biolink:mentions", "observation", "text_mining_agent", "infores:semmeddb"),
    "abstract_abstract": ("biolink:related_to", "observation", "not_provided", "infores:pubmed"),
}  # fmt: skip
BATCH_ROWS = 1 << 18


def node_id(key: str, cord_dois: dict[str, str] | None = None) -> str:
    """The CURIE of a vertex key: ``UMLS:C0011849``; SemMedDB's gene argument without a CUI,
    ``GENE:<Entrez id>``, is ``NCBIGene:<id>``; a paper's doc_id is a CURIE already, but a
    CORD-19 paper without a PMID (``CORD:<cord_uid>``) is ``doi:<doi>`` where ``cord_dois`` (see
    :func:`cord_dois`) has it: the Biolink model has no CORD prefix, so KGX's validator refused
    ``CORD:`` ids."""
    if key.startswith("GENE:"):
        return f"NCBIGene:{key[5:]}"
    if cord_dois and key.startswith("CORD:"):
        return cord_dois.get(key, key)
    return key if ":" in key else f"UMLS:{key}"


def cord_dois(build_dir: Path) -> dict[str, str]:
    """``{"CORD:<cord_uid>": "doi:<doi>"}`` for the CORD-19 papers without a PMID whose DOI
    (lower-cased by the ingest) no other such paper has and that fits a CURIE (no space or "|",
    which KGX splits lists at); the others keep their ``CORD:`` id. No PMID paper has such a DOI:
    the merge joins a CORD-19 paper to the PubMed paper of its DOI (rule 2)."""
    path = table_path(BuildLayout(build_dir).tables.path, "documents")
    if path is None:
        return {}
    table = pq.read_table(path, columns=["doc_id", "doi"])
    table = table.filter(pc.and_(pc.starts_with(table.column("doc_id"), "CORD:"), pc.is_valid(table.column("doi"))))
    doc_ids, dois = table.column("doc_id").to_pylist(), table.column("doi").to_pylist()
    seen: dict[str, int] = {}
    for doi in dois:
        seen[doi] = seen.get(doi, 0) + 1
    return {doc_id: f"doi:{doi}" for doc_id, doi in zip(doc_ids, dois, strict=True)
            if seen[doi] == 1 and doi and not any(c.isspace() or c == "|" for c in doi)}  # fmt: skip


def categories(semtypes: list[str] | None) -> str:
    """The Biolink classes of a concept's semantic types, ``|``-joined (NamedThing when none maps)."""
    found = list(dict.fromkeys(SEMTYPE_CATEGORIES[t] for t in (semtypes or []) if t in SEMTYPE_CATEGORIES))
    return "|".join(found or [NAMED_THING])


class _TsvRows:
    """KGX's TSV as KGX reads it: fields joined by tabs, never quoted (it reads with
    QUOTE_NONE, so a quoted name came back with its quotes doubled); every text value is
    :func:`_clean`, so no field holds a tab or a line end."""

    def __init__(self, handle) -> None:
        self.handle = handle

    def writerow(self, row) -> None:
        self.handle.write("\t".join(str(value) for value in row) + "\n")

    def writerows(self, rows) -> None:
        self.handle.writelines("\t".join(str(value) for value in row) + "\n" for row in rows)


def _writer(path: Path, columns: tuple[str, ...]):
    handle = path.open("w", newline="", encoding="utf-8")
    writer = _TsvRows(handle)
    writer.writerow(columns)
    return handle, writer


def _clean(text: str | None) -> str:
    """A single-valued field on one line (titles may hold tabs or line breaks), without ``|``:
    KGX reads a ``|`` in any value as a list separator, and has no escape for it."""
    return "" if text is None else " ".join(str(text).replace("|", "/").split())


def write_nodes(
    build_dir: Path, scope: str, path: Path, progress: Progress | None = None, dois: dict[str, str] | None = None
) -> int:
    """The graph's vertices as KGX nodes; the number written. ``dois``: :func:`cord_dois`, when
    the caller has read them already."""
    files = BuildLayout(build_dir).graph(scope)
    semtypes = _semtypes(build_dir)
    dois = cord_dois(build_dir) if dois is None else dois
    handle, writer = _writer(path, NODE_COLUMNS)
    written = 0
    with handle:
        for batch in pq.ParquetFile(files.vertices).iter_batches(BATCH_ROWS, columns=["kind", "key", "name"]):
            for kind, key, name in zip(
                *(batch.column(c).to_pylist() for c in ("kind", "key", "name")), strict=True
            ):
                category = categories(semtypes.get(key)) if kind == "concept" else PUBLICATION
                writer.writerow((node_id(key, dois), category, _clean(name), AGGREGATOR))
                written += 1
            if progress is not None:
                progress.advance(batch.num_rows)
    return written


def write_edges(
    build_dir: Path, scope: str, path: Path, progress: Progress | None = None, dois: dict[str, str] | None = None
) -> int:
    """The graph's edges as KGX edges, with their counts; the number written. ``dois``: as
    :func:`write_nodes` takes them."""
    files = BuildLayout(build_dir).graph(scope)
    keys = pq.read_table(files.vertices, columns=["key"]).column("key").to_pylist()
    dois = cord_dois(build_dir) if dois is None else dois
    ids = [node_id(key, dois) for key in keys]
    pair_counts = _predication_counts(build_dir)
    mention_counts = _mention_counts(build_dir) if scope == "full" else {}
    handle, writer = _writer(path, EDGE_COLUMNS)
    written = 0
    with handle:
        for rows in _edge_rows(files.folder.edges, keys, ids, pair_counts, mention_counts):
            writer.writerows(rows)
            written += len(rows)
            if progress is not None:
                progress.advance(len(rows))
    return written


def _edge_rows(
    edges: Path, keys: list[str], ids: list[str], pair_counts, mention_counts
) -> Iterator[list[tuple[Any, ...]]]:
    """The KGX rows of the edges, a Parquet batch at a time."""
    columns = ["src", "dst", "kind", "weight", "cost"]
    for batch in pq.ParquetFile(edges).iter_batches(BATCH_ROWS, columns=columns):
        rows = []
        for src, dst, kind, weight, cost in zip(*(batch.column(c).to_pylist() for c in columns), strict=True):
            predicate, knowledge_level, agent_type, source = EDGE_KINDS[kind]
            a, b = keys[src], keys[dst]
            subject, obj = ids[src], ids[dst]
            n_predications = n_papers = n_mentions = ""
            if kind == "concept_concept":
                n_predications, n_papers = pair_counts.get((a, b) if a < b else (b, a), (0, 0))
            elif kind == "concept_abstract":
                # vertices are concepts first, so src is the concept: the paper mentions it
                a, b, subject, obj = b, a, obj, subject
                n_mentions = mention_counts.get((a, b), "")
            rows.append(
                (
                    f"litpath:{kind}/{src}-{dst}", subject, predicate, obj, "biolink:Association",
                    knowledge_level, agent_type, source, AGGREGATOR, repr(float(weight)), repr(float(cost)),
                    n_predications, n_papers, n_mentions,
                )
            )  # fmt: skip
        yield rows


def _semtypes(build_dir: Path) -> dict[str, list[str]]:
    path = table_path(BuildLayout(build_dir).tables.path, "concepts")
    if path is None:
        return {}
    table = pq.read_table(path, columns=["cui", "semtypes"])
    return dict(zip(table.column("cui").to_pylist(), table.column("semtypes").to_pylist(), strict=True))


def _predication_counts(build_dir: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """(predications, distinct papers) of each unordered CUI pair, from the predications table."""
    path = table_path(BuildLayout(build_dir).tables.path, "predications")
    if path is None:
        return {}
    table = pq.read_table(path, columns=["predication_id", "doc_id", "subject_cui", "object_cui"])
    subject, obj = table.column("subject_cui"), table.column("object_cui")
    first = pc.if_else(pc.less(subject, obj), subject, obj)
    second = pc.if_else(pc.less(subject, obj), obj, subject)
    pairs = pa.table({"first": first, "second": second, "predication_id": table.column("predication_id"),
                      "doc_id": table.column("doc_id")})  # fmt: skip
    grouped = pairs.group_by(["first", "second"]).aggregate(
        [("predication_id", "count_distinct"), ("doc_id", "count_distinct")]
    )
    return {
        (a, b): (int(n), int(p))
        for a, b, n, p in zip(
            grouped.column("first").to_pylist(),
            grouped.column("second").to_pylist(),
            grouped.column("predication_id_count_distinct").to_pylist(),
            grouped.column("doc_id_count_distinct").to_pylist(),
            strict=True,
        )  # fmt: skip
    }


def _mention_counts(build_dir: Path) -> dict[tuple[str, str], int]:
    """Mentions of each (paper, concept), from the mentions table."""
    path = table_path(BuildLayout(build_dir).tables.path, "mentions")
    if path is None:
        return {}
    table = pq.read_table(path, columns=["doc_id", "cui", "count"])
    counts = table.column("count").to_numpy()
    return {
        (doc, cui): int(n)
        for doc, cui, n in zip(
            table.column("doc_id").to_pylist(), table.column("cui").to_pylist(), counts.tolist(), strict=True
        )
    }


def write_kgx(
    build_dir: Path, scope: str, folder: ExportFolder, progress: Progress | None = None
) -> dict[str, int]:
    """``<scope>_nodes.tsv`` and ``<scope>_edges.tsv`` of one graph; their row counts."""
    Path(folder.path).mkdir(parents=True, exist_ok=True)
    if progress is not None:
        progress.stage(f"{scope} nodes")
    dois = cord_dois(build_dir)  # read once for the nodes and the edges
    nodes = write_nodes(build_dir, scope, folder.kgx_nodes(scope), progress, dois)
    if progress is not None:
        progress.stage(f"{scope} edges")
    edges = write_edges(build_dir, scope, folder.kgx_edges(scope), progress, dois)
    return {"nodes": nodes, "edges": edges}


__all__ = [
    "EDGE_COLUMNS",
    "EDGE_KINDS",
    "NODE_COLUMNS",
    "SEMTYPE_CATEGORIES",
    "categories",
    "cord_dois",
    "node_id",
    "write_kgx",
]

"""Where every file of a results folder lives: the one place their names are spelled.

::

    <results>/                      ResultsLayout
    ├── .checksums.json             the inputs' hashes, by path, size and mtime
    ├── ingest/<kind>/<key>/        one input file's tables, quarantine.parquet, counts.json
    ├── spoke/load.json             the last SPOKE load (one Neo4j serves every build)
    ├── logs/                       <build>/<rule>.log|.benchmark.tsv, ingest/<kind>/<key>.*, spoke/load.*
    ├── latest -> builds/<id>       the newest complete build
    └── builds/<id>/                BuildLayout
        ├── config.yaml             the configuration the build was made from, inputs' checksums
        ├── run_config.yaml         the settings of the run now starting (the stages read it)
        ├── tables/                 documents, mentions, ... .parquet, quarantine.parquet, counts.json
        ├── graph/                  GraphFiles("full"): graph.bp, vertices/edges.parquet,
        │                           graph_counts.json, plan.json
        ├── distances.bp            the full graph's distances (dense or rows), when stored
        ├── solve_summary.json      the full graph's solve
        ├── cooccurrence/           GraphFiles("cooccurrence"): the same, distances and summary inside
        ├── store/<kind>.buckets.arrow  the store's record buckets of each kind, grouped ahead of
        │                           the load (+ .json, their record, written last; + .base.arrow,
        │                           the earlier build's file linked, where a rerun left its reused
        │                           buckets' bytes there)
        ├── store/<kind>.mongo_load.json  the record of that kind's load (`load-mongo --partial`)
        ├── mongo_load.json         the MongoDB load's record
        ├── mapping/                the CUI -> SPOKE mapping, its coverage report and statistics
        ├── compare/                the comparison: query set, paths, hops, report, run.json
        └── build.json              the build's record, written last

The workflow's rules, the stages, the service and the test fixtures ask these classes for paths;
they never join a file name of their own to a build folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SCOPES = ("full", "cooccurrence")


def bucket_file(folder: Path, kind: str) -> Path:
    """The file of ``kind``'s record buckets in a folder of bucket files (a build's ``store/``)."""
    return Path(folder) / f"{kind}.buckets.arrow"


def bucket_file_base(path: Path) -> Path:
    """The base file beside a bucket file that leaves the bytes of its reused buckets there
    (``papers.buckets.base.arrow`` beside ``papers.buckets.arrow``): a hard link to the complete
    bucket file of an earlier build (:func:`pipeline.store.record_buckets.write_bucket_file`)."""
    path = Path(path)
    return path.with_name(f"{path.stem}.base{path.suffix}")


def bucket_file_record(path: Path) -> Path:
    """The JSON record written beside a bucket file once it is complete."""
    path = Path(path)
    return path.with_name(path.name + ".json")


@dataclass(frozen=True)
class TableFolder:
    """A folder of Parquet tables with its quarantine and counts: one input file's ingest
    (``<results>/ingest/<kind>/<key>/``) or a build's merged tables (``<build>/tables/``)."""

    path: Path

    def table(self, name: str) -> Path:
        return Path(self.path) / f"{name}.parquet"

    @property
    def quarantine(self) -> Path:
        return self.table("quarantine")

    @property
    def counts(self) -> Path:
        return Path(self.path) / "counts.json"

    @property
    def changed_papers(self) -> Path:
        """A merge on the delta's list of the papers whose rows may differ from the earlier
        build's (doc_id, sorted); absent after a full merge."""
        return Path(self.path) / "changed_papers.parquet"

    @property
    def doi_matches(self) -> Path:
        """The merge's DOI match (rule 2): each CORD-19 paper merged into a PubMed paper
        (``doc_id`` -> ``target``), kept so that a merge on top of this build need not match again."""
        return Path(self.path) / "doi_matches.parquet"

    def removed_rows(self, name: str) -> Path:
        """The rows a merge on the delta removed from the earlier build's table ``name`` (those of
        the deleted papers), for a table it lists as ``tables_less_deleted``; absent otherwise."""
        return Path(self.path) / f"{name}.removed.parquet"


@dataclass(frozen=True)
class GraphFolder:
    """What ``litpath build-graph`` writes for one graph."""

    path: Path

    @property
    def graph_bp(self) -> Path:
        return Path(self.path) / "graph.bp"

    @property
    def vertices(self) -> Path:
        return Path(self.path) / "vertices.parquet"

    @property
    def edges(self) -> Path:
        return Path(self.path) / "edges.parquet"

    @property
    def counts(self) -> Path:
        return Path(self.path) / "graph_counts.json"

    @property
    def plan(self) -> Path:
        return Path(self.path) / "plan.json"

    @property
    def path_index(self) -> Path:
        """The path index (pipeline.query.path_index): hub rows sorted by cost, for on-demand searches."""
        return Path(self.path) / "path_index.bp"

    @property
    def concept_predications(self) -> Path:
        """The co-occurrence graph's count of each concept's predications (``cui``, ``predications``,
        in the count's code order), from which a later build counts on the delta."""
        return Path(self.path) / "concept_predications.parquet"

    @property
    def pair_predications(self) -> Path:
        """The co-occurrence graph's count of each concept pair's predications (``a``, ``b``: rows of
        :attr:`concept_predications`; ``predications``), below the minimum support too."""
        return Path(self.path) / "pair_predications.parquet"


@dataclass(frozen=True)
class GraphFiles:
    """The files of one graph of a build (``full`` or ``cooccurrence``): its folder, and its
    distances and solve summary, which for the full graph sit at the top of the build."""

    scope: str
    graph_dir: Path
    distances: Path  # distances.bp: dense, rows, or absent (on-demand)
    summary: Path  # solve_summary.json: the method used and the solver's summary

    @property
    def folder(self) -> GraphFolder:
        return GraphFolder(self.graph_dir)

    @property
    def graph_bp(self) -> Path:
        return self.folder.graph_bp

    @property
    def vertices(self) -> Path:
        return self.folder.vertices

    @property
    def edges(self) -> Path:
        return self.folder.edges

    @property
    def counts(self) -> Path:
        return self.folder.counts

    @property
    def plan(self) -> Path:
        return self.folder.plan

    @property
    def path_index(self) -> Path:
        return self.folder.path_index


@dataclass(frozen=True)
class MappingFolder:
    """What ``litpath build-mapping`` writes: the CUI -> SPOKE mapping and its coverage report."""

    path: Path

    @property
    def table(self) -> Path:
        return Path(self.path) / "cui_spoke_mapping.parquet"

    @property
    def csv(self) -> Path:
        return Path(self.path) / "cui_spoke_mapping.csv"

    @property
    def stats(self) -> Path:
        return Path(self.path) / "mapping_stats.json"

    @property
    def coverage(self) -> Path:
        return Path(self.path) / "coverage.md"

    def coverage_tables(self) -> dict[str, Path]:
        """The coverage report's CSV tables, by what they hold."""
        names = {"by_label": "coverage_by_label", "by_method": "coverage_by_method",
                 "by_route": "coverage_by_route", "by_semtype": "unmapped_by_semtype",
                 "unmapped": "unmapped_concepts"}  # fmt: skip
        return {key: Path(self.path) / f"{name}.csv" for key, name in names.items()}


@dataclass(frozen=True)
class CompareFolder:
    """What ``litpath query-set`` and ``litpath compare`` write."""

    path: Path

    @property
    def query_concepts(self) -> Path:
        return Path(self.path) / "query_concepts.txt"

    @property
    def query_set(self) -> Path:
        return Path(self.path) / "query_set.json"

    @property
    def report(self) -> Path:
        return Path(self.path) / "report.html"

    def outputs(self) -> dict[str, Path]:
        """Every file of the comparison, by what it holds."""
        base = Path(self.path)
        return {
            "paths_parquet": base / "paths.parquet", "paths_csv": base / "paths.csv",
            "hops_parquet": base / "hops.parquet", "hops_csv": base / "hops.csv",
            "figure": base / "scenarios.png", "html": self.report, "markdown": base / "report.md",
            "run": base / "run.json",
        }  # fmt: skip


@dataclass(frozen=True)
class ValidationFolder:
    """What ``litpath validate-slice`` writes (by default under the slice's build folder)."""

    path: Path

    @property
    def record(self) -> Path:
        return Path(self.path) / "validation.json"

    @property
    def report(self) -> Path:
        return Path(self.path) / "validation.md"

    @property
    def figure(self) -> Path:
        return Path(self.path) / "roc.png"


@dataclass(frozen=True)
class ExportFolder:
    """What ``litpath export`` writes: each graph as KGX TSV, the CUI mapping as SSSOM TSV."""

    path: Path

    def kgx_nodes(self, scope: str) -> Path:
        return Path(self.path) / f"{scope}_nodes.tsv"

    def kgx_edges(self, scope: str) -> Path:
        return Path(self.path) / f"{scope}_edges.tsv"

    @property
    def sssom(self) -> Path:
        return Path(self.path) / "cui_spoke_mapping.sssom.tsv"

    @property
    def record(self) -> Path:
        return Path(self.path) / "export.json"


@dataclass(frozen=True)
class BuildLayout:
    """The files of one build folder, ``<results>/builds/<id>/``."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def build_id(self) -> str:
        return self.root.name

    # -- records
    @property
    def config(self) -> Path:
        return self.root / "config.yaml"

    @property
    def run_config(self) -> Path:
        return self.root / "run_config.yaml"

    @property
    def record(self) -> Path:
        return self.root / "build.json"

    @property
    def mongo_load(self) -> Path:
        return self.root / "mongo_load.json"

    # -- the store's record buckets, grouped ahead of the load (pipeline.store.record_buckets)
    @property
    def store(self) -> Path:
        return self.root / "store"

    def bucket_file(self, kind: str) -> Path:
        return bucket_file(self.store, kind)

    def bucket_file_record(self, kind: str) -> Path:
        return bucket_file_record(self.bucket_file(kind))

    def mongo_load_of(self, kind: str) -> Path:
        """The record of one kind's load, sent as soon as its bucket file was written."""
        return self.store / f"{kind}.mongo_load.json"

    # -- the merged tables
    @property
    def tables(self) -> TableFolder:
        return TableFolder(self.root / "tables")

    # -- the graphs
    def graph(self, scope: str) -> GraphFiles:
        """The files of graph ``scope``: the full graph keeps its distances and solve summary at
        the top of the build folder, the co-occurrence graph everything under ``cooccurrence/``."""
        if scope == "full":
            return GraphFiles(scope, self.root / "graph", self.root / "distances.bp", self.root / "solve_summary.json")
        if scope == "cooccurrence":
            folder = self.root / "cooccurrence"
            return GraphFiles(scope, folder, folder / "distances.bp", folder / "solve_summary.json")
        raise ValueError(f"unknown graph {scope!r}: expected one of {', '.join(SCOPES)}")

    # -- the mapping and the comparison
    @property
    def mapping(self) -> MappingFolder:
        return MappingFolder(self.root / "mapping")

    @property
    def compare(self) -> CompareFolder:
        return CompareFolder(self.root / "compare")

    @property
    def validation(self) -> ValidationFolder:
        return ValidationFolder(self.root / "validation")

    @property
    def export(self) -> ExportFolder:
        return ExportFolder(self.root / "export")


@dataclass(frozen=True)
class ResultsLayout:
    """A results folder (``results_dir``): ingest caches, builds, ``latest``, logs."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def builds(self) -> Path:
        return self.root / "builds"

    def build(self, build_id: str) -> BuildLayout:
        return BuildLayout(self.builds / build_id)

    @property
    def latest(self) -> Path:
        """The link to the newest complete build (``builds/<id>``, relative)."""
        return self.root / "latest"

    @property
    def checksums(self) -> Path:
        return self.root / ".checksums.json"

    def ingest(self, kind: str, key: str) -> TableFolder:
        """The folder of one input file's ingest (``key``: :attr:`InputFile.key`)."""
        return TableFolder(self.root / "ingest" / kind / key)

    def ingest_report(self, kind: str, batch: str) -> Path:
        """What one ingest job did (``litpath ingest --report``): each of its files' counts, in
        order (``batch``: :attr:`IngestBatch.name`). Beside the files' folders, not in them: a job
        that gains a file writes a new report and keeps the folders it reuses."""
        return self.root / "ingest" / kind / "jobs" / f"{batch}.json"

    @property
    def spoke_load(self) -> Path:
        return self.root / "spoke" / "load.json"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def build_logs(self, build_id: str) -> Path:
        return self.logs / build_id

    def rule_log(self, build_id: str, rule: str, suffix: str = ".log") -> Path:
        """A build stage's log (``.log``) or Snakemake benchmark (``.benchmark.tsv``)."""
        return self.build_logs(build_id) / f"{rule}{suffix}"

    def ingest_log(self, kind: str, key: str, suffix: str = ".log") -> Path:
        return self.logs / "ingest" / kind / f"{key}{suffix}"

    def spoke_log(self, suffix: str = ".log") -> Path:
        return self.logs / "spoke" / f"load{suffix}"


def results_of(build_dir: str | Path) -> ResultsLayout:
    """The results folder a build folder belongs to (``<results>/builds/<id>`` -> ``<results>``)."""
    return ResultsLayout(Path(build_dir).parent.parent)


__all__ = [
    "SCOPES", "BuildLayout", "CompareFolder", "ExportFolder", "GraphFiles", "GraphFolder", "MappingFolder",
    "ResultsLayout", "TableFolder", "ValidationFolder", "results_of",
]  # fmt: skip

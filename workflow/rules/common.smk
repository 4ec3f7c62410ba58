# Shared wiring: which input files exist, the build id, and the targets `all` asks for.
# Every value spliced into a shell command is quoted ({x:q} or shlex.quote).
#
# The build id hashes the inputs and the settings that change what a build holds
# (pipeline/builds/record.py). Two files carry the configuration into a build folder:
# - config.yaml, the configuration the build was made from and its inputs' checksums, written
#   once by build_config (whose only params are the build id), so no stage reruns because of it;
# - run_config.yaml, the settings of the run now starting (the Snakefile's onstart writes it),
#   which the stages read: a setting that changes only how a stage runs (solver ranks and
#   threads, the memory budget) reaches a stage that runs, and reruns none.

import os
import shlex
from types import SimpleNamespace

from snakemake.logging import logger

from pipeline.builds.identity import (
    build_id,
    ingest_batches,
    resolve_inputs,
    unread_kinds,
)
from pipeline.builds.layout import ResultsLayout
from pipeline.config import refuse_sample_files
from pipeline.config.connections import export_connection_settings, redact_config
from pipeline.ingest.run import (
    export_quarantine_ceiling,
    forget_reports_of_lost_ingests,
)
from pipeline.solve.stage import FEW_ROWS, read_keys, solve_cores
from pipeline.store.record_buckets import NEEDS_GRAPH
from pipeline.store.store_format import KINDS

# Before anything is hashed or run: a config of one's own must not still name sample files.
refuse_sample_files(config, workflow.overwrite_configfiles)

# The config's server settings (mongo.uri, neo4j.*) reach the jobs through their environment,
# never a command line; build records get the config without credentials.
export_connection_settings(config)
RECORDED_CONFIG = redact_config(config)
# The quarantine ceiling reaches `litpath ingest` through its environment, not its command line:
# a changed ceiling must not make Snakemake ingest every file again (the merge checks each file's
# counts against it too).
export_quarantine_ceiling(config)

# Every path below comes from the layout (pipeline/builds/layout.py), the one place a results
# folder's file names are spelled.
RESULTS_LAYOUT = ResultsLayout(config["results_dir"])
INPUTS = resolve_inputs(config, cache_file=RESULTS_LAYOUT.checksums)
BUILD = build_id(INPUTS, config)
UNREAD = unread_kinds(config)
# The ingest jobs: each kind's files in input order, resources.ingest_files_per_job to a job,
# without the kinds no stage reads (UNREAD: ENTITY files unless mentions are counted by entities),
# which are neither ingested nor merged.
INGEST_BATCHES = ingest_batches(
    INPUTS, config["resources"]["ingest_files_per_job"], UNREAD
)
BATCH_BY_NAME = {(b.kind, b.name): b for b in INGEST_BATCHES}
# An ingest job's declared output is its report, not its files' folders: a job one of whose
# folders was removed (or cut short) runs again, instead of a merge that stops on the folder.
if workflow.is_main_process:
    _lost_ingests = forget_reports_of_lost_ingests(
        [
            (
                RESULTS_LAYOUT.ingest_report(b.kind, b.name),
                b.kind,
                [(f.path, RESULTS_LAYOUT.ingest(f.kind, f.key).path) for f in b.files],
            )
            for b in INGEST_BATCHES
        ]
    )
    if _lost_ingests:
        logger.warning(_lost_ingests)
LAYOUT = RESULTS_LAYOUT.build(BUILD)
BUILD_DIR = LAYOUT.root
BUILD_CONFIG = LAYOUT.config
RUN_CONFIG = LAYOUT.run_config

if not INPUTS:
    raise ValueError(
        "config inputs: no input files configured (see config/config.yaml, section inputs)"
    )

# The load reports say what the MongoDB store holds; a new, dropped or restored server does not
# hold it. Before planning, the store is asked once whether it still holds this build; if not,
# the reports go and the build is loaded again (a dry run's plan then shows those loads). Not in
# the jobs a cluster executor starts (they parse this file too).
if config["mongo"]["enabled"] and workflow.is_main_process:
    from pipeline.config.connections import MONGO_URI_ENV
    from pipeline.store.mongo import forget_loads_the_store_lacks

    _stale_loads = forget_loads_the_store_lacks(
        LAYOUT.mongo_load,
        [LAYOUT.mongo_load_of(kind) for kind in KINDS],
        os.environ.get(MONGO_URI_ENV),
        config["mongo"]["database"],
        BUILD,
    )
    if _stale_loads:
        logger.warning(_stale_loads)

# The same for the SPOKE load report and the Neo4j server it names (a new or emptied server).
if config["spoke"]["enabled"] and config["spoke"]["load"] and workflow.is_main_process:
    from pipeline.config.connections import Neo4jSettings
    from pipeline.spoke.load import forget_load_the_server_lacks

    _stale_spoke = forget_load_the_server_lacks(
        RESULTS_LAYOUT.spoke_load, Neo4jSettings.from_env()
    )
    if _stale_spoke:
        logger.warning(_stale_spoke)


def ingest_reports():
    """The report of every ingest job (``litpath ingest --report``), in input order."""
    return [RESULTS_LAYOUT.ingest_report(b.kind, b.name) for b in INGEST_BATCHES]


def ingest_folders():
    """Every ingested file's folder, in input order (what the merge reads)."""
    return [
        RESULTS_LAYOUT.ingest(f.kind, f.key).path
        for b in INGEST_BATCHES
        for f in b.files
    ]


def all_targets():
    targets = [
        LAYOUT.graph("full").graph_bp,
        LAYOUT.graph("full").summary,
        LAYOUT.graph("cooccurrence").summary,
        LAYOUT.record,
    ]
    if config["mongo"]["enabled"]:
        targets.append(LAYOUT.mongo_load)
    if config["spoke"]["enabled"]:
        targets.append(LAYOUT.mapping.coverage)
        if config["spoke"]["load"]:
            # a target of its own: Snakemake does not make a missing input of a job whose output
            # is up to date, so a report removed by the check above would not be made again
            targets.append(RESULTS_LAYOUT.spoke_load)
        if config["compare"]["enabled"]:
            # (compare.enabled without spoke.enabled is refused before: check_run_settings)
            targets.append(LAYOUT.compare.report)
    if config["export"]["enabled"]:
        targets.append(LAYOUT.export.record)
    return targets


def mapping_sources():
    """The configured cross-reference files, as named inputs and as command-line options."""
    mapping = config["mapping"]
    files = {
        k: mapping[k]
        for k in (
            "do_xrefs",
            "gene_info",
            "ncit_swissprot",
            "unichem_structure",
            "unichem_reference",
            "uberon_obo",
            "cl_obo",
        )
        if mapping.get(k)
    }
    if mapping["umls_dir"]:
        files["umls_dir"] = mapping["umls_dir"]
    for i, path in enumerate(mapping["unichem"]):
        files[f"unichem_mapping_{i}"] = path
    return files


def mapping_options(wildcards, input):
    options = []
    for name, path in mapping_sources().items():
        flag = (
            "--unichem"
            if name.startswith("unichem_mapping_")
            else f"--{name.replace('_', '-')}"
        )
        options.append(f"{flag} {shlex.quote(str(path))}")
    if config["spoke"]["nodes"]:
        options.append(
            f"--spoke-nodes {shlex.quote(config['spoke']['nodes'])} "
            f"--spoke-format {shlex.quote(config['spoke']['format'])}"
        )
    mapping = config["mapping"]
    options += [
        f"--spoke-read {shlex.quote(config['spoke']['read'])}",
        f"--obsolete-property {shlex.quote(config['spoke']['obsolete_property'])}",
        f"--mrcui-relations {shlex.quote(','.join(mapping['mrcui_relations']))}",
        "--gene-identity" if mapping["gene_identity"] else "--no-gene-identity",
    ]
    if config["compare"]["releases"]["spoke"]:
        options.append(
            f"--spoke-release {shlex.quote(config['compare']['releases']['spoke'])}"
        )
    return " ".join(options)


def query_set_outputs():
    """The comparison's resolved query set (CUIs, one per line), when there is a comparison."""
    if config["spoke"]["enabled"] and config["compare"]["enabled"]:
        return [LAYOUT.compare.query_concepts]
    return []


def solve_threads(scope):
    """The cores a solve job of ``scope`` asks for (pipeline.solve.stage.solve_cores): every core
    of the solver's ranks, or one for a solve that can only be small on this machine (run here:
    a cluster job always gets every core). Evaluated again once the job's inputs exist (Snakemake
    resets a ready job's resources), when the graph's record says.
    """

    def threads(wildcards, input):
        if not getattr(workflow, "local_exec", False):
            # a cluster's node may hold what this machine cannot: its plan is not known here
            return config["solver"]["ranks"] * config["solver"]["threads"]
        if scope == "full":
            sources = config["solver"]["row_sources"]
        else:
            sources = str(input.queries[0]) if getattr(input, "queries", None) else ""
        if not sources:
            count = 0
        elif Path(sources).exists():
            count = len(read_keys(Path(sources)))
        else:  # the query set is not written yet: as if it held many
            count = FEW_ROWS + 1
        return solve_cores(Path(input.graph).parent, scope, config["solver"], count)

    return threads


def solve_ranks_option(wildcards, threads):
    """--ranks for a solve given fewer cores than the solver's ranks x threads (solve_threads)."""
    every = config["solver"]["ranks"] * config["solver"]["threads"]
    return (
        f"--ranks {max(1, threads // config['solver']['threads'])}"
        if threads < every
        else ""
    )


def row_sources_option(wildcards):
    """--sources for the full graph's rows method, from solver.row_sources."""
    path = config["solver"]["row_sources"]
    return f"--sources {shlex.quote(path)}" if path else ""


def compared_graph_summary():
    """The solve summary of the graph the comparison reads (compare.graph)."""
    if config["compare"]["graph"] == "full":
        return LAYOUT.graph("full").summary
    return LAYOUT.graph("cooccurrence").summary


def neighbourhood_options(wildcards):
    """The SPOKE neighbourhood of the query set (compare.neighbourhood) as query-set options."""
    hood = config["compare"]["neighbourhood"]
    if not hood.get("seed"):
        return ""
    options = [
        f"--seed {shlex.quote(hood['seed'])}",
        f"--seed-hops {int(hood['hops'])}",
        f"--seed-limit {int(hood['limit'])}",
    ]
    if hood.get("seed_label"):
        options.append(f"--seed-label {shlex.quote(hood['seed_label'])}")
    options += [
        f"--seed-labels {shlex.quote(label)}" for label in hood.get("labels", [])
    ]
    options += [
        f"--seed-cutoff {shlex.quote(cutoff)}" for cutoff in hood.get("cutoffs", [])
    ]
    return " ".join(options)


def spoke_reading_options(wildcards=None):
    """How query-set and compare read SPOKE: the relationship filter, the obsolete-node property."""
    relationships = config["compare"]["relationships"]
    options = [
        f"--obsolete-property {shlex.quote(config['spoke']['obsolete_property'])}"
    ]
    if relationships["allow"]:
        options.append(
            f"--allow-relationships {shlex.quote(','.join(relationships['allow']))}"
        )
    if relationships["deny"]:
        options.append(
            f"--deny-relationships {shlex.quote(','.join(relationships['deny']))}"
        )
    return " ".join(options)


def release_options(wildcards=None):
    """The releases compare.releases states (the others come from the inputs' names)."""
    return " ".join(
        f"--release {shlex.quote(f'{key}={value}')}"
        for key, value in config["compare"]["releases"].items()
        if value
    )


def bucket_records_graph(wildcards):
    # concepts and evidence read a graph (vertex ids, concept-concept edges); documents and
    # papers only the tables, so their jobs run beside build_graph. The evidence is that of the
    # full graph's concept-concept edges, which are the co-occurrence graph's whenever the full
    # graph has that kind: then it reads the co-occurrence graph, which is ready long before.
    if (
        wildcards.kind == "evidence"
        and "concept_concept" in config["graph"]["edge_kinds"]
    ):
        return LAYOUT.graph("cooccurrence").counts
    if wildcards.kind in NEEDS_GRAPH:
        return LAYOUT.graph("full").counts
    return []


def kinds_loaded_last():
    """The kinds whose grouping waits for the full graph (bucket_records_graph), grouped last:
    load_mongo sends them itself as it completes the build, instead of a load_mongo_kind job
    each before it. At 10M predications the concepts' load job (1.2 s, a process start and a
    scheduling round for 277k small records) was one of the four jobs of a citation rerun's tail
    between the full graph and the build's completion."""
    full = LAYOUT.graph("full").counts
    return [k for k in KINDS if bucket_records_graph(SimpleNamespace(kind=k)) == full]


LOADED_LAST = kinds_loaded_last()


# Which ready job takes a core first (Snakemake's priorities; the greedy scheduler keeps them,
# config/profiles/local). Two chains follow the merge and the co-occurrence graph: the full graph
# (then the concepts and the build's completion) and the evidence's grouping (then the
# comparison). The groupings that need no graph fill the other core meanwhile, those whose load
# is long first, so that the load (the MongoDB server's work) travels beside the chains instead
# of after them: the papers' (a first build's longest grouping, 41 s at 10M predications, and a
# 15 s load) and the documents' (an update file's longest load, 5 s). The comparison's mapping,
# query set and solve come before the evidence is grouped, and the comparison before the loads
# that wait for a core. A 10M update rerun took 38.8-39.4 s in this order (the comparison's own
# place came after: no change in two runs) against 39.5-40.1 s with the documents grouped and
# loaded last; a first build the same, 180.7 and 180.6 s against 189.3 and 179.9 (alternate
# runs, docs/design.md §4).
PRIORITY = {
    "build_cooccurrence": 3,  # both chains start from it
    "bucket_records:papers": 2.6,
    "bucket_records:documents": 2.5,
    "build_graph": 2,
    "bucket_records:evidence": 1.9,
    "comparison": 1.8,  # build_mapping, query_set, solve_cooccurrence, compare
    "load_mongo_kind:papers": 1.6,
    "load_mongo_kind:documents": 1.6,
    "bucket_records": 1,  # the other kinds
    "solve": 1,
    "load_mongo_kind": 0,  # the other kinds
}


# A kind misspelt here would fall back to its rule's priority without a word.
_UNKNOWN_KINDS = sorted(
    key for key in PRIORITY if ":" in key and key.partition(":")[2] not in KINDS
)
if _UNKNOWN_KINDS:
    raise ValueError(
        f"PRIORITY names kinds the store has not ({', '.join(KINDS)}): {_UNKNOWN_KINDS}"
    )


def kind_priority(rule_name):
    """The priority of a job of ``rule_name`` with a {kind} wildcard (PRIORITY, by kind)."""
    return lambda wildcards: PRIORITY.get(
        f"{rule_name}:{wildcards.kind}", PRIORITY[rule_name]
    )

# The weighted concept-abstract graph, its MongoDB load and the build record.
# KINDS (the store's record kinds) comes from common.smk.


rule build_config:
    output:
        BUILD_CONFIG,
    log:
        RESULTS_LAYOUT.rule_log(BUILD, "build_config"),
    conda:
        "../envs/litpath.yaml"
    params:
        # The build id is the whole identity of the record: it is written once per build.
        build=BUILD,
        settings=RUN_CONFIG,
        checksums=RESULTS_LAYOUT.checksums,
    shell:
        "litpath write-build-config --config {params.settings:q} --checksums {params.checksums:q} "
        "--build-id {params.build:q} --config-out {output:q} > {log:q} 2>&1"


rule build_cooccurrence:
    # The co-occurrence graph (concepts and concept-concept edges only): the comparison's graph,
    # and the edges whose evidence is grouped. Its own job, from the predications and concepts
    # alone, so that the evidence's grouping (the longest job after the merge) and the
    # co-occurrence solve do not wait for the full graph; the full graph takes its edges
    # rather than count the co-occurrences again (at 30M calibrated predications 24 s of its
    # 135, at 10M 9 of 30).
    input:
        tables=LAYOUT.tables.counts,
        config=BUILD_CONFIG,
    output:
        graph=directory(LAYOUT.graph("cooccurrence").graph_bp),
        counts=LAYOUT.graph("cooccurrence").counts,
        path_index=directory(LAYOUT.graph("cooccurrence").path_index),
    log:
        RESULTS_LAYOUT.rule_log(BUILD, "build_cooccurrence"),
    benchmark:
        RESULTS_LAYOUT.rule_log(BUILD, "build_cooccurrence", ".benchmark.tsv")
    # First among the jobs the merge frees: the evidence's grouping waits for it (PRIORITY).
    priority: PRIORITY["build_cooccurrence"]
    conda:
        "../envs/litpath.yaml"
    resources:
        mem_mb=2000,
    params:
        tables=lambda wc, input: Path(input.tables).parent,
        out=lambda wc, output: Path(output.graph).parent,
        settings=RUN_CONFIG,
    shell:
        "litpath build-graph --scope cooccurrence --tables-dir {params.tables:q} --out {params.out:q} "
        "--config {params.settings:q} 2>&1 | tee {log:q} >&2"


rule build_graph:
    input:
        tables=LAYOUT.tables.counts,
        config=BUILD_CONFIG,
        # its concept-concept edges (pipeline.graph.earlier.cooccurrence_edges)
        cooccurrence=LAYOUT.graph("cooccurrence").counts,
    output:
        graph=directory(LAYOUT.graph("full").graph_bp),
        counts=LAYOUT.graph("full").counts,
        # Its path index (pipeline.graph.path_index), which the service loads beside it.
        path_index=directory(LAYOUT.graph("full").path_index),
    log:
        RESULTS_LAYOUT.rule_log(BUILD, "build_graph"),
    benchmark:
        RESULTS_LAYOUT.rule_log(BUILD, "build_graph", ".benchmark.tsv")
    # After the papers' and documents' groupings, before the evidence's (PRIORITY, common.smk).
    priority: PRIORITY["build_graph"]
    conda:
        "../envs/litpath.yaml"
    resources:
        mem_mb=4000,
    params:
        tables=lambda wc, input: Path(input.tables).parent,
        out=lambda wc, output: Path(output.graph).parent,
        cooccurrence=lambda wc, input: Path(input.cooccurrence).parent,
        settings=RUN_CONFIG,
    shell:
        "litpath build-graph --tables-dir {params.tables:q} --out {params.out:q} "
        "--cooccurrence-from {params.cooccurrence:q} --config {params.settings:q} 2>&1 | tee {log:q} >&2"


rule bucket_records:
    input:
        tables=LAYOUT.tables.counts,
        graph=bucket_records_graph,
        config=BUILD_CONFIG,
    output:
        buckets=LAYOUT.bucket_file("{kind}"),
        record=LAYOUT.bucket_file_record("{kind}"),
    log:
        RESULTS_LAYOUT.rule_log(BUILD, "bucket_records_{kind}"),
    benchmark:
        RESULTS_LAYOUT.rule_log(BUILD, "bucket_records_{kind}", ".benchmark.tsv")
    wildcard_constraints:
        kind="|".join(KINDS),
    priority: kind_priority("bucket_records")
    conda:
        "../envs/litpath.yaml"
    params:
        tables=lambda wc, input: Path(input.tables).parent,
        graph=lambda wc, input: (
            f"--graph-dir {shlex.quote(str(Path(input.graph).parent))}"
            if input.graph
            else ""
        ),
    shell:
        "litpath bucket-records --kind {wildcards.kind} --tables-dir {params.tables:q} {params.graph} "
        "--build-record {input.config:q} --out {output.buckets:q} 2>&1 | tee {log:q} >&2"


rule load_mongo_kind:
    # One kind's buckets, sent as soon as its bucket file is written: the documents and the
    # papers travel while the evidence is still being grouped (at 30M predications the papers'
    # 3.4 GB took 95 s of a 160 s load that had waited for the evidence). The build stays
    # "loading" until load_mongo has read every kind back and marks it complete. The kinds
    # grouped last, from the full graph (LOADED_LAST: the concepts), load_mongo sends itself.
    input:
        tables=LAYOUT.tables.counts,
        config=BUILD_CONFIG,
        buckets=LAYOUT.bucket_file_record("{kind}"),
    output:
        LAYOUT.mongo_load_of("{kind}"),
    log:
        RESULTS_LAYOUT.rule_log(BUILD, "load_mongo_{kind}"),
    benchmark:
        RESULTS_LAYOUT.rule_log(BUILD, "load_mongo_{kind}", ".benchmark.tsv")
    wildcard_constraints:
        kind="|".join(KINDS),
    priority: kind_priority("load_mongo_kind")
    conda:
        "../envs/litpath.yaml"
    params:
        # The URI (and its password) comes from $LITPATH_MONGO_URI, which mongo.uri of the
        # config sets (common.smk): never on the command line or in Snakemake's records.
        database=config["mongo"]["database"],
        build=BUILD,
        tables=lambda wc, input: Path(input.tables).parent,
        buckets=LAYOUT.store,
    shell:
        "litpath load-mongo --partial --kind {wildcards.kind} --mongo-database {params.database:q} "
        "--build-id {params.build:q} --tables-dir {params.tables:q} --buckets-dir {params.buckets:q} "
        "--build-record {input.config:q} --report {output:q} 2>&1 | tee {log:q} >&2"


rule load_mongo:
    input:
        tables=LAYOUT.tables.counts,
        graph=LAYOUT.graph("full").counts,
        config=BUILD_CONFIG,
        # Each kind sent by load_mongo_kind: this reads them back and marks the build complete.
        loaded=[LAYOUT.mongo_load_of(kind) for kind in KINDS if kind not in LOADED_LAST],
        # The kinds grouped last, sent here with the completion (kinds_loaded_last).
        last=[LAYOUT.bucket_file_record(kind) for kind in LOADED_LAST],
    output:
        LAYOUT.mongo_load,
    log:
        RESULTS_LAYOUT.rule_log(BUILD, "load_mongo"),
    benchmark:
        RESULTS_LAYOUT.rule_log(BUILD, "load_mongo", ".benchmark.tsv")
    conda:
        "../envs/litpath.yaml"
    params:
        database=config["mongo"]["database"],
        build=BUILD,
        tables=lambda wc, input: Path(input.tables).parent,
        graph=lambda wc, input: Path(input.graph).parent,
        loaded=lambda wc, input: " ".join(
            f"--loaded {shlex.quote(str(path))}" for path in input.loaded
        ),
        last=" ".join(f"--kind {kind}" for kind in LOADED_LAST),
        buckets=LAYOUT.store,
    shell:
        "litpath load-mongo --complete --mongo-database {params.database:q} --build-id {params.build:q} "
        "--tables-dir {params.tables:q} --graph-dir {params.graph:q} {params.loaded} "
        "{params.last} --buckets-dir {params.buckets:q} "
        "--build-record {input.config:q} --report {output:q} 2>&1 | tee {log:q} >&2"


rule build_record:
    input:
        graph=LAYOUT.graph("full").counts,
        solved=[
            LAYOUT.graph("full").summary,
            LAYOUT.graph("cooccurrence").summary,
        ],
        config=BUILD_CONFIG,
        # The record and the `latest` pointer come last, after every stage the config asks for.
        stages=[p for p in all_targets() if p != LAYOUT.record],
    output:
        LAYOUT.record,
    log:
        RESULTS_LAYOUT.rule_log(BUILD, "build_record"),
    conda:
        "../envs/litpath.yaml"
    params:
        build_dir=BUILD_DIR,
    shell:
        "litpath finish-build --build-dir {params.build_dir:q} > {log:q} 2>&1"

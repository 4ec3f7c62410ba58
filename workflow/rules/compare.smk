# The comparison's query set, the literature paths between its concepts classified against
# SPOKE, and the report. The paths come from the co-occurrence graph by default
# (compare.graph), as in the paper: "SPOKE does not have any paper-related information.
# Hence, we use only co-occurrences" (section VIII).


rule query_set:
    input:
        mapping=LAYOUT.mapping.table,
        queries=[config["compare"]["queries"]] if config["compare"]["queries"] else [],
        # A SPOKE neighbourhood is resolved in the Neo4j the SPOKE stage loaded.
        spoke=[RESULTS_LAYOUT.spoke_load] if config["spoke"]["load"] else [],
    output:
        concepts=LAYOUT.compare.query_concepts,
        record=LAYOUT.compare.query_set,
    log:
        RESULTS_LAYOUT.rule_log(BUILD, "query_set"),
    priority: PRIORITY["comparison"]
    conda:
        "../envs/litpath.yaml"
    params:
        queries=lambda wc, input: (
            f"--queries {shlex.quote(str(input.queries[0]))}" if input.queries else ""
        ),
        neighbourhood=neighbourhood_options,
        spoke=spoke_reading_options,
        out=lambda wc, output: Path(output.record).parent,
    shell:
        "litpath query-set --mapping {input.mapping:q} {params.queries} {params.neighbourhood} "
        "{params.spoke} --out {params.out:q} > {log:q} 2>&1"


rule compare:
    input:
        solved=compared_graph_summary(),
        mapping=LAYOUT.mapping.table,
        query_set=LAYOUT.compare.query_set,
        # Hop evidence comes from the build's evidence bucket file (the records its MongoDB load
        # stores) when the build has a store: the comparison need not wait for the full graph,
        # the concepts and the load, and runs beside them (at 10M predications its 7 s were the
        # last of a citation rerun's critical path).
        evidence=(
            [LAYOUT.bucket_file("evidence"), LAYOUT.bucket_file_record("evidence")]
            if config["mongo"]["enabled"]
            else []
        ),
    output:
        paths=LAYOUT.compare.outputs()["paths_parquet"],
        html=report(
            LAYOUT.compare.report,
            category="SPOKE comparison",
            caption="../report/compare_report.rst",
        ),
        figure=report(
            LAYOUT.compare.outputs()["figure"],
            category="SPOKE comparison",
            caption="../report/compare_scenarios.rst",
        ),
    log:
        RESULTS_LAYOUT.rule_log(BUILD, "compare"),
    benchmark:
        RESULTS_LAYOUT.rule_log(BUILD, "compare", ".benchmark.tsv")
    # The end of the evidence's chain: before the loads that wait for a core (PRIORITY).
    priority: PRIORITY["comparison"]
    conda:
        "../envs/litpath.yaml"
    params:
        evidence=lambda wc, input: (
            f"--evidence-buckets {shlex.quote(str(input.evidence[0]))}"
            if input.evidence
            else "--no-mongo"
        ),
        build_dir=BUILD_DIR,
        graph=config["compare"]["graph"],
        hops=config["compare"]["hops"],
        scenario4=config["compare"]["scenario4_max_hops"],
        pairs=config["compare"]["pairs"],
        spoke=spoke_reading_options,
        releases=release_options,
        out=lambda wc, output: Path(output.paths).parent,
    shell:
        "litpath compare --build-dir {params.build_dir:q} --graph {params.graph:q} --mapping {input.mapping:q} "
        "--queries {input.query_set:q} --hops {params.hops:q} --scenario4-max-hops {params.scenario4:q} "
        "--pairs {params.pairs:q} {params.evidence} {params.spoke} {params.releases} --out {params.out:q} "
        "2>&1 | tee {log:q} >&2"

# SPOKE in Neo4j and the UMLS CUI -> SPOKE mapping.


rule load_spoke:
    input:
        nodes=config["spoke"]["nodes"],
        edges=config["spoke"]["edges"],
    output:
        RESULTS_LAYOUT.spoke_load,
    log:
        RESULTS_LAYOUT.spoke_log(),
    benchmark:
        RESULTS_LAYOUT.spoke_log(".benchmark.tsv")
    conda:
        "../envs/litpath.yaml"
    params:
        metaedges=(
            f"--metaedges {shlex.quote(config['spoke']['metaedges'])}"
            if config["spoke"]["metaedges"]
            else ""
        ),
        format=config["spoke"]["format"],
    shell:
        "litpath load-spoke --nodes {input.nodes:q} --edges {input.edges:q} "
        "--format {params.format:q} {params.metaedges} --report {output:q} 2>&1 | tee {log:q} >&2"


rule build_mapping:
    input:
        unpack(lambda wc: mapping_sources()),
        concepts=LAYOUT.tables.counts,
        spoke=[RESULTS_LAYOUT.spoke_load] if config["spoke"]["load"] else [],
    output:
        mapping=LAYOUT.mapping.table,
        coverage=report(
            LAYOUT.mapping.coverage,
            category="SPOKE mapping",
            caption="../report/mapping_coverage.rst",
        ),
    log:
        RESULTS_LAYOUT.rule_log(BUILD, "build_mapping"),
    benchmark:
        RESULTS_LAYOUT.rule_log(BUILD, "build_mapping", ".benchmark.tsv")
    priority: PRIORITY["comparison"]
    conda:
        "../envs/litpath.yaml"
    # --reuse auto: from SPOKE's dump, another build's mapping of the very same inputs is linked
    # (a rerun on new literature keeps its concepts table; pipeline/spoke/mapping/reuse.py)
    params:
        options=mapping_options,
        concepts=lambda wc, input: LAYOUT.tables.table("concepts"),
        out=lambda wc, output: Path(output.mapping).parent,
    shell:
        "litpath build-mapping {params.options} --concepts {params.concepts:q} --reuse auto "
        "--out {params.out:q} > {log:q} 2>&1"

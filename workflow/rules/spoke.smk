# SPOKE in Neo4j and the UMLS CUI -> SPOKE mapping.


rule load_spoke:
    input:
        nodes=config["spoke"]["nodes"],
        edges=config["spoke"]["edges"],
    output:
        RESULTS / "spoke" / "load.json",
    log:
        LOGS / "spoke" / "load.log",
    benchmark:
        LOGS / "spoke" / "load.benchmark.tsv"
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
        concepts=BUILD_DIR / "tables" / "counts.json",
        spoke=[RESULTS / "spoke" / "load.json"] if config["spoke"]["load"] else [],
    output:
        mapping=BUILD_DIR / "mapping" / "cui_spoke_mapping.parquet",
        coverage=report(
            BUILD_DIR / "mapping" / "coverage.md",
            category="SPOKE mapping",
            caption="../report/mapping_coverage.rst",
        ),
    log:
        LOGS / BUILD / "build_mapping.log",
    benchmark:
        LOGS / BUILD / "build_mapping.benchmark.tsv"
    conda:
        "../envs/litpath.yaml"
    params:
        options=mapping_options,
        concepts=lambda wc, input: Path(input.concepts).parent / "concepts.parquet",
        out=lambda wc, output: Path(output.mapping).parent,
    shell:
        "litpath build-mapping {params.options} --concepts {params.concepts:q} "
        "--out {params.out:q} > {log:q} 2>&1"

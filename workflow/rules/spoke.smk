# SPOKE in Neo4j and the UMLS CUI -> SPOKE mapping.


rule load_spoke:
    input:
        nodes=config["spoke"]["nodes"],
        edges=config["spoke"]["edges"],
    output:
        RESULTS / "spoke" / "load.json",
    log:
        LOGS / "spoke" / "load.log",
    conda:
        "../envs/litpath.yaml"
    params:
        metaedges=(
            f"--metaedges {config['spoke']['metaedges']}"
            if config["spoke"]["metaedges"]
            else ""
        ),
        format=config["spoke"]["format"],
    shell:
        "litpath load-spoke --nodes {input.nodes} --edges {input.edges} "
        "--format {params.format} {params.metaedges} --report {output} 2>&1 | tee {log:q} >&2"


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
    conda:
        "../envs/litpath.yaml"
    params:
        options=mapping_options,
    shell:
        "litpath build-mapping {params.options} "
        "--concepts $(dirname {input.concepts})/concepts.parquet "
        "--out $(dirname {output.mapping}) > {log} 2>&1"

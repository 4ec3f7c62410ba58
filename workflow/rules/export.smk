# Optional (export.enabled): the build's graphs as KGX TSV and its CUI -> SPOKE mapping as SSSOM
# TSV, for the tools of the Biolink knowledge-graph community (pipeline/export/).


rule export:
    input:
        # the graph build's records, written with each graph's vertices and edges
        graphs=[LAYOUT.graph(scope).counts for scope in ("full", "cooccurrence")],
        mapping=[LAYOUT.mapping.table] if config["spoke"]["enabled"] else [],
    output:
        LAYOUT.export.record,
    log:
        RESULTS_LAYOUT.rule_log(BUILD, "export"),
    conda:
        "../envs/litpath.yaml"
    params:
        build_dir=BUILD_DIR,
    shell:
        "litpath export --build-dir {params.build_dir:q} > {log:q} 2>&1"

# SPOKE in Neo4j and the UMLS CUI -> SPOKE mapping.


rule load_spoke:
    input:
        nodes=config["spoke"]["nodes"],
        edges=config["spoke"]["edges"],
    output:
        RESULTS / "spoke" / "load.json",
    log:
        LOGS / "spoke" / "load.log",
    shell:
        "litpath load-spoke --nodes {input.nodes} --edges {input.edges} "
        "--format {config[spoke][format]} --report {output} > {log} 2>&1"

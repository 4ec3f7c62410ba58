# Literature paths between the query set's concepts, classified against SPOKE, and the report.


rule compare:
    input:
        distances=BUILD_DIR / "distances.bp",
        mapping=BUILD_DIR / "mapping" / "cui_spoke_mapping.parquet",
        queries=config["compare"]["queries"],
        # Hop evidence comes from the MongoDB load when there is one.
        mongo=[BUILD_DIR / "mongo_load.json"] if config["mongo"]["enabled"] else [],
    output:
        paths=BUILD_DIR / "compare" / "paths.parquet",
        html=report(
            BUILD_DIR / "compare" / "report.html",
            category="SPOKE comparison",
            caption="../report/compare_report.rst",
        ),
        figure=report(
            BUILD_DIR / "compare" / "scenarios.png",
            category="SPOKE comparison",
            caption="../report/compare_scenarios.rst",
        ),
    log:
        LOGS / BUILD / "compare.log",
    conda:
        "../envs/litpath.yaml"
    params:
        pair_hops=(
            f"--pair-hops {config['compare']['pair_hops']}"
            if config["compare"]["pair_hops"]
            else ""
        ),
        mongo=(
            f"--mongo-database {config['mongo']['database']}"
            if config["mongo"]["enabled"]
            else "--mongo-uri ''"
        ),
        build_dir=BUILD_DIR,
        hops=config["compare"]["hops"],
        pairs=config["compare"]["pairs"],
    shell:
        "litpath compare --build {params.build_dir} --mapping {input.mapping} --queries {input.queries} "
        "--hops {params.hops} {params.pair_hops} --pairs {params.pairs} "
        "{params.mongo} --out $(dirname {output.paths}) > {log} 2>&1"

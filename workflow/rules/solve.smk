# Exact all-pairs shortest paths with the distributed Floyd-Warshall solver (MPI).


rule solve:
    input:
        graph=BUILD_DIR / "graph" / "graph.bp",
        config=BUILD_DIR / "config.yaml",
    output:
        distances=directory(BUILD_DIR / "distances.bp"),
        summary=BUILD_DIR / "solve_summary.json",
    log:
        LOGS / BUILD / "solve.log",
    benchmark:
        LOGS / BUILD / "solve.benchmark.tsv"
    threads: config["solver"]["ranks"] * config["solver"]["threads"]
    resources:
        mpi="mpirun",
        tasks=config["solver"]["ranks"],
    shell:
        "litpath solve --input {input.graph} --output {output.distances} "
        "--config {input.config} --summary {output.summary} > {log} 2>&1"

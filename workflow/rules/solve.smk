# Exact all-pairs shortest paths with the distributed Floyd-Warshall solver (MPI).
#
# Fault tolerance lives in pipeline/solve.py: the solver checkpoints into
# <build>/distances.bp.checkpoints (not an output, so Snakemake keeps it when the job
# fails) and a rerun of this rule resumes from the newest valid checkpoint; apsp-fw writes
# distances.bp.partial and renames it only when complete, and the checkpoints are removed
# once distances.bp is in place.


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
    conda:
        "../envs/litpath.yaml"
    threads: config["solver"]["ranks"] * config["solver"]["threads"]
    resources:
        **({"mpi": "srun"} if config["solver"]["ranks"] > 1 else {}),
        # The Slurm executor runs this as one MPI job (one task per rank) whose command
        # starts the ranks itself with srun (pipeline/solve.py); `mpi` keeps the executor
        # from wrapping the command in an srun step of its own, which would leave the
        # inner srun waiting for CPUs forever. The executor refuses `mpi` on one task.
        tasks=config["solver"]["ranks"],
        cpus_per_task=config["solver"]["threads"],
    shell:
        "litpath solve --input {input.graph} --output {output.distances} "
        "--config {input.config} --summary {output.summary} > {log} 2>&1"

# A plan, then a solve, for each of the build's two graphs (pipeline/solve/stage.py).
#
# `litpath solve` predicts time and memory of each method on this machine, prints the plan
# (into the log and on the terminal) and records it in <graph>/plan.json, then stores the
# dense matrix, the rows of a source set, or nothing (exact paths on demand in the service).
# A method asked for that does not fit stops the run here, with the numbers and the ways out.
#
# Fault tolerance lives in pipeline/solve/apsp_fw.py: the solver checkpoints into
# <distances.bp>.checkpoints (not an output, so Snakemake keeps it when the job fails) and a
# rerun resumes from the newest valid checkpoint; apsp-fw writes distances.bp.partial and
# renames it only when complete. distances.bp is not a declared output because the plan
# decides at run time whether there is one; solve_summary.json says which.


rule solve:
    input:
        graph=LAYOUT.graph("full").graph_bp,
        config=BUILD_CONFIG,
    output:
        summary=LAYOUT.graph("full").summary,
        plan=LAYOUT.graph("full").plan,
    log:
        RESULTS_LAYOUT.rule_log(BUILD, "solve"),
    benchmark:
        RESULTS_LAYOUT.rule_log(BUILD, "solve", ".benchmark.tsv")
    # With the groupings, not after them and the loads: a solve takes every core its ranks ask
    # for, so at the end it waited for the last load and only then could the comparison start (at
    # 10M predications the mapping, query set and solves made a 20 s serial tail). The comparison's
    # own solve comes earlier still, with the mapping and the query set (PRIORITY, common.smk).
    priority: PRIORITY["solve"]
    conda:
        "../envs/litpath.yaml"
    # Every core of the ranks, or one where the plan can only store few rows or none
    # (solve_threads; the solve then runs on one rank, --ranks).
    threads: solve_threads("full")
    resources:
        **({"mpi": "srun"} if config["solver"]["ranks"] > 1 else {}),
        # The Slurm executor runs this as one MPI job (one task per rank) whose command
        # starts the ranks itself with srun (pipeline/solve/apsp_fw.py); `mpi` keeps the executor
        # from wrapping the command in an srun step of its own, which would leave the
        # inner srun waiting for CPUs forever. The executor refuses `mpi` on one task.
        tasks=config["solver"]["ranks"],
        cpus_per_task=config["solver"]["threads"],
    params:
        scope="full",
        distances=LAYOUT.graph("full").distances,
        sources=row_sources_option,
        settings=RUN_CONFIG,
        ranks=solve_ranks_option,
    shell:
        "litpath solve --scope {params.scope:q} --input {input.graph:q} --distances {params.distances:q} "
        "--config {params.settings:q} --summary {output.summary:q} --plan {output.plan:q} {params.sources} "
        "{params.ranks} 2>&1 | tee {log:q} >&2"


use rule solve as solve_cooccurrence with:
    input:
        graph=LAYOUT.graph("cooccurrence").graph_bp,
        config=BUILD_CONFIG,
        # The comparison's query set: the rows the plan stores when dense does not fit.
        queries=query_set_outputs(),
    output:
        summary=LAYOUT.graph("cooccurrence").summary,
        plan=LAYOUT.graph("cooccurrence").plan,
    log:
        RESULTS_LAYOUT.rule_log(BUILD, "solve_cooccurrence"),
    benchmark:
        RESULTS_LAYOUT.rule_log(BUILD, "solve_cooccurrence", ".benchmark.tsv")
    priority: PRIORITY["comparison"]
    threads: solve_threads("cooccurrence")
    params:
        scope="cooccurrence",
        distances=LAYOUT.graph("cooccurrence").distances,
        settings=RUN_CONFIG,
        sources=lambda wc, input: (
            f"--sources {shlex.quote(str(input.queries[0]))}" if input.queries else ""
        ),
        ranks=solve_ranks_option,

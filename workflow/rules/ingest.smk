# One job per input dump file: adding an update file to a rerun ingests only that file.


rule ingest_file:
    input:
        lambda wc: INPUT_BY_KEY[(wc.kind, wc.key)].path,
    output:
        RESULTS_LAYOUT.ingest("{kind}", "{key}").counts,
    log:
        RESULTS_LAYOUT.ingest_log("{kind}", "{key}"),
    benchmark:
        RESULTS_LAYOUT.ingest_log("{kind}", "{key}", ".benchmark.tsv")
    conda:
        "../envs/litpath.yaml"
    resources:
        mem_mb=2000,
    params:
        out_dir=lambda wc, output: Path(output[0]).parent,
    shell:
        "litpath ingest --kind {wildcards.kind:q} --input {input:q} "
        "--out {params.out_dir:q} 2>&1 | tee {log:q} >&2"


rule merge_tables:
    input:
        files=ingest_outputs(),
        config=BUILD_CONFIG,
    output:
        LAYOUT.tables.counts,
    log:
        RESULTS_LAYOUT.rule_log(BUILD, "merge_tables"),
    benchmark:
        RESULTS_LAYOUT.rule_log(BUILD, "merge_tables", ".benchmark.tsv")
    conda:
        "../envs/litpath.yaml"
    resources:
        mem_mb=4000,
    params:
        out_dir=lambda wc, output: Path(output[0]).parent,
        ingested=lambda wc, input: [Path(f).parent for f in input.files],
        settings=RUN_CONFIG,
    # --previous-build auto: on top of an earlier complete build of some of these files, the merge
    # redoes only what the new files change (ingest.incremental, read from the run's settings, so
    # turning it off or on reruns nothing; pipeline/merge/delta.py).
    shell:
        "litpath merge --out {params.out_dir:q} --config {params.settings:q} --previous-build auto "
        "{params.ingested:q} 2>&1 | tee {log:q} >&2"

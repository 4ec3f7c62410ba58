# Each kind's input files a few to a job (resources.ingest_files_per_job), each file into its own
# folder named after its content (results/ingest/<kind>/<file>-<sha12>/). The job's declared
# output is its report, not the folders: a job whose batch gained a file (the next PubMed update)
# is a new job, and `--reuse` keeps the folders it already holds instead of reading those files
# again, so adding an update file to a rerun ingests only that file. A job one of whose folders
# was removed since it ran has its report removed before planning (common.smk), so it runs again.


rule ingest_batch:
    input:
        lambda wc: [f.path for f in BATCH_BY_NAME[(wc.kind, wc.batch)].files],
    output:
        RESULTS_LAYOUT.ingest_report("{kind}", "{batch}"),
    log:
        RESULTS_LAYOUT.ingest_log("{kind}", "{batch}"),
    benchmark:
        RESULTS_LAYOUT.ingest_log("{kind}", "{batch}", ".benchmark.tsv")
    conda:
        "../envs/litpath.yaml"
    resources:
        mem_mb=2000,
    params:
        files=lambda wc: " ".join(
            f"--input {shlex.quote(str(f.path))} --out {shlex.quote(str(RESULTS_LAYOUT.ingest(f.kind, f.key).path))}"
            for f in BATCH_BY_NAME[(wc.kind, wc.batch)].files
        ),
    shell:
        "litpath ingest --kind {wildcards.kind:q} --reuse --report {output:q} {params.files} "
        "2>&1 | tee {log:q} >&2"


rule merge_tables:
    input:
        reports=ingest_reports(),
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
        ingested=ingest_folders(),
        settings=RUN_CONFIG,
    # --previous-build auto: on top of an earlier complete build of some of these files, the merge
    # redoes only what the new files change (ingest.incremental, read from the run's settings, so
    # turning it off or on reruns nothing; pipeline/merge/delta.py).
    shell:
        "litpath merge --out {params.out_dir:q} --config {params.settings:q} --previous-build auto "
        "{params.ingested:q} 2>&1 | tee {log:q} >&2"

from __future__ import annotations

import json

from click.testing import CliRunner
from support.data import DATA

from pipeline.ingest.base import IngestError
from pipeline.ingest.commands import ingest, synth
from pipeline.merge.commands import merge


def test_synth_ingest_merge_commands(tmp_path):
    runner = CliRunner()
    result = runner.invoke(
        synth, ["--out", str(tmp_path / "corpus"), "--scale", "300", "--seed", "2", "--update-files", "1"]
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "corpus" / "manifest.json").read_text())
    dirs = []
    for i, entry in enumerate(manifest["files"]):
        out = tmp_path / "ingest" / f"{i:02d}"
        result = runner.invoke(
            ingest,
            [
                "--kind",
                entry["kind"],
                "--input",
                str(tmp_path / "corpus" / entry["path"]),
                "--out",
                str(out),
            ],
        )
        assert result.exit_code == 0, result.output
        assert json.loads((out / "counts.json").read_text())["rows_read"] > 0
        dirs.append(str(out))
    config = tmp_path / "config.yaml"
    config.write_text("ingest:\n  mention_source: predications\n")
    result = runner.invoke(merge, ["--out", str(tmp_path / "merged"), "--config", str(config), *dirs])
    assert result.exit_code == 0, result.output
    # One line on the terminal; the record is counts.json.
    assert result.stdout.startswith("litpath merge: ") and result.stdout.count("\n") == 1, result.stdout
    assert json.loads((tmp_path / "merged" / "counts.json").read_text())["tables"]["predications"] > 0


def test_ingest_command_reports_unreadable_file(tmp_path):
    bad = tmp_path / "pubmed25n0009.xml"
    bad.write_text((DATA / "pubmed" / "update_readd.xml").read_text()[:300])
    result = CliRunner().invoke(
        ingest, ["--kind", "pubmed_xml", "--input", str(bad), "--out", str(tmp_path / "out")]
    )
    # A domain error leaves the command as itself; `litpath` prints it as one line (tests/cli/test_cli.py).
    assert isinstance(result.exception, IngestError), result.output
    assert "pubmed25n0009.xml: broken XML at line" in str(result.exception)


def _pubmed_files(tmp_path, count):
    from pipeline.ingest.synth import generate_corpus

    generate_corpus(tmp_path / "corpus", 300, seed=5, n_update_files=count - 1)
    files = sorted((tmp_path / "corpus" / "pubmed").rglob("*.xml.gz"), key=lambda p: p.name)
    assert len(files) >= count, files
    return files[:count]


def _ingest(files, folders, report, *extra):
    pairs = [arg for path, folder in zip(files, folders, strict=True) for arg in ("--input", str(path), "--out", str(folder))]
    return CliRunner().invoke(ingest, ["--kind", "pubmed_xml", *pairs, "--report", str(report), *extra])


def test_ingest_of_several_files_writes_each_folder_as_a_lone_ingest_and_reuse_reads_only_what_changed(tmp_path):
    """One `litpath ingest` over three files writes each folder as three single-file ingests do; with
    --reuse it keeps a finished folder of the same bytes, and reads again a folder without its
    counts.json (an ingest cut short) and one that holds another file's ingest."""
    import pyarrow.parquet as pq

    from pipeline.ingest.run import ingest_file

    files = _pubmed_files(tmp_path, 3)
    folders = [tmp_path / "batch" / f"f{i}" for i in range(3)]
    result = _ingest(files, folders, tmp_path / "jobs" / "one.json")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "jobs" / "one.json").read_text())
    assert [(f["source_file"], f["reused"], f["folder"]) for f in report["files"]] == [
        (path.name, False, str(folder)) for path, folder in zip(files, folders, strict=True)
    ]
    for path, folder in zip(files, folders, strict=True):
        alone = tmp_path / "alone" / path.name
        counts = ingest_file("pubmed_xml", path, alone)
        assert json.loads((folder / "counts.json").read_text())["sha256"] == counts.sha256
        for table in ("documents", "citations", "deletions", "quarantine"):
            assert pq.read_table(folder / f"{table}.parquet").equals(pq.read_table(alone / f"{table}.parquet")), table

    (folders[1] / "counts.json").unlink()  # as a job killed in the middle of this file leaves it
    written = {folder: (folder / "documents.parquet").stat().st_mtime_ns for folder in folders}
    # the third file's folder now holds the first file's ingest: same kind, other bytes
    result = _ingest([files[0], files[1], files[0]], [folders[0], folders[1], folders[2]], tmp_path / "jobs" / "two.json", "--reuse")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "jobs" / "two.json").read_text())
    assert [f["reused"] for f in report["files"]] == [True, False, False]
    assert (folders[0] / "documents.parquet").stat().st_mtime_ns == written[folders[0]]
    assert json.loads((folders[2] / "counts.json").read_text())["source_file"] == files[0].name
    assert "already ingested in" in result.output and "1 read" not in result.output


def test_a_reused_folder_is_held_to_todays_quarantine_ceiling(tmp_path):
    files = _pubmed_files(tmp_path, 1)
    folder = tmp_path / "f0"
    assert _ingest(files, [folder], tmp_path / "r.json").exit_code == 0
    counts = json.loads((folder / "counts.json").read_text())
    counts["rows_quarantined"] = counts["rows_read"]  # as if every row had been quarantined
    (folder / "counts.json").write_text(json.dumps(counts))
    result = _ingest(files, [folder], tmp_path / "r.json", "--reuse", "--max-quarantine-fraction", "0.01")
    assert isinstance(result.exception, IngestError), result.output
    assert "above the ceiling" in str(result.exception)


def test_ingest_wants_one_out_folder_per_input(tmp_path):
    files = _pubmed_files(tmp_path, 2)
    args = ["--kind", "pubmed_xml", "--input", str(files[0]), "--input", str(files[1]), "--out", str(tmp_path / "a")]
    result = CliRunner().invoke(ingest, args)
    assert result.exit_code == 2 and "one --out folder per input file" in result.output
    result = _ingest(files, [tmp_path / "a", tmp_path / "a"], tmp_path / "r.json")
    assert result.exit_code == 2 and "the same --out folder" in result.output


def test_a_job_whose_folder_was_lost_has_its_report_forgotten_so_that_it_runs_again(tmp_path):
    """The workflow's ingest job declares its report, not its folders: a folder removed or cut short
    after the job ran must make the job run again (rules/common.smk) instead of the merge stopping
    on it. Only the reports of jobs that lost a folder go; the line names the first folder."""
    import shutil

    from pipeline.ingest.run import forget_reports_of_lost_ingests

    files = _pubmed_files(tmp_path, 3)
    folders = [tmp_path / "ingest" / f"f{i}" for i in range(3)]
    reports = [tmp_path / "jobs" / "a.json", tmp_path / "jobs" / "b.json"]
    assert _ingest(files[:2], folders[:2], reports[0]).exit_code == 0
    assert _ingest(files[2:], folders[2:], reports[1]).exit_code == 0
    jobs = [
        (reports[0], "pubmed_xml", list(zip(files[:2], folders[:2], strict=True))),
        (reports[1], "pubmed_xml", list(zip(files[2:], folders[2:], strict=True))),
    ]
    assert forget_reports_of_lost_ingests(jobs) is None
    assert all(report.exists() for report in reports)

    shutil.rmtree(folders[1])
    said = forget_reports_of_lost_ingests(jobs)
    assert said is not None and str(folders[1]) in said and said.startswith("1 ingest folder(s)")
    assert not reports[0].exists() and reports[1].exists()
    assert forget_reports_of_lost_ingests(jobs) is None  # a job without its report is left to run

    (folders[2] / "documents.parquet").unlink()  # cut short: a table gone, counts.json still there
    assert str(folders[2]) in (forget_reports_of_lost_ingests(jobs) or "")
    assert not reports[1].exists()

    # the job run again with --reuse ingests only the lost file; the report is back and whole
    result = _ingest(files[:2], folders[:2], reports[0], "--reuse")
    assert result.exit_code == 0, result.output
    assert [f["reused"] for f in json.loads(reports[0].read_text())["files"]] == [True, False]
    assert forget_reports_of_lost_ingests(jobs[:1]) is None

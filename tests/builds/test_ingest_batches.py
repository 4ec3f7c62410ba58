"""pipeline/builds/identity.ingest_batches: which input files one ingest job reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.builds.identity import InputFile, ingest_batches


def _files(kind: str, count: int, start: int = 1) -> list[InputFile]:
    return [
        InputFile(kind, Path(f"/in/pubmed25n{n:04d}.xml.gz"), f"{n:064x}", n - start)
        for n in range(start, start + count)
    ]


def test_each_kinds_files_in_order_a_few_to_a_batch_without_the_kinds_left_out() -> None:
    inputs = [*_files("semmeddb_predication", 1), *_files("pubmed_xml", 7), *_files("semmeddb_entity", 2)]
    batches = ingest_batches(inputs, 3, frozenset({"semmeddb_entity"}))
    assert [(b.kind, [f.path.name for f in b.files]) for b in batches] == [
        ("semmeddb_predication", ["pubmed25n0001.xml.gz"]),
        ("pubmed_xml", ["pubmed25n0001.xml.gz", "pubmed25n0002.xml.gz", "pubmed25n0003.xml.gz"]),
        ("pubmed_xml", ["pubmed25n0004.xml.gz", "pubmed25n0005.xml.gz", "pubmed25n0006.xml.gz"]),
        ("pubmed_xml", ["pubmed25n0007.xml.gz"]),
    ]
    # a lone file's job is named after the file's folder; a batch's after its first and last file
    assert batches[0].name == inputs[0].key
    assert batches[1].name.startswith("pubmed25n0001.xml.gz..pubmed25n0003.xml.gz-")
    assert len({b.name for b in batches}) == len(batches)


def test_an_appended_file_renames_only_the_last_batch() -> None:
    before = ingest_batches(_files("pubmed_xml", 7), 3)
    after = ingest_batches(_files("pubmed_xml", 8), 3)
    assert [b.name for b in after[:2]] == [b.name for b in before[:2]]
    assert after[2].name != before[2].name
    assert [f.path.name for f in after[2].files] == ["pubmed25n0007.xml.gz", "pubmed25n0008.xml.gz"]


def test_a_changed_file_renames_its_batch() -> None:
    files = _files("pubmed_xml", 4)
    changed = [*files[:3], InputFile("pubmed_xml", files[3].path, "f" * 64, 3)]
    assert [b.name for b in ingest_batches(files, 2)][0] == [b.name for b in ingest_batches(changed, 2)][0]
    assert [b.name for b in ingest_batches(files, 2)][1] != [b.name for b in ingest_batches(changed, 2)][1]


def test_files_per_job_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="ingest_files_per_job"):
        ingest_batches(_files("pubmed_xml", 2), 0)
